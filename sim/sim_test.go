package sim

import (
	"flag"
	"strings"
	"testing"
	"time"
)

var (
	seeds    = flag.Int("sim.seeds", 200, "seeds TestSeeds runs")
	firstArg = flag.Uint64("sim.first", 1, "first seed of TestSeeds")
	clients  = flag.Int("sim.clients", 0, "clients per run in TestSeeds (0: the default)")
)

// TestSeeds runs many seeds with every fault of FaultsFor turned on; a
// failing seed prints the command that replays it alone.
func TestSeeds(t *testing.T) {
	start := time.Now()
	ops, viewChanged, transfers := uint64(0), 0, 0
	for s := *firstArg; s < *firstArg+uint64(*seeds); s++ {
		cfg := FaultsFor(s)
		cfg.Clients = *clients
		res := Run(cfg)
		ops += res.Committed
		if res.Failed() {
			t.Fatalf("seed %d: %s\nreplay: go run ./cmd/sim --seed %d --clients %d --timeline", s, res.Violations[0], s, cfg.Clients)
		}
		if res.Completed == 0 {
			t.Fatalf("seed %d: no request completed", s)
		}
		if res.ViewChanges > 0 {
			viewChanged++
		}
		transfers += res.Transfers
	}
	if transfers == 0 {
		t.Fatal("no seed needed a state transfer: the small rings no longer reach it")
	}
	// Primaries crash and get partitioned away: view changes must be part
	// of what these seeds exercise, not a rare accident.
	if viewChanged < *seeds/10 {
		t.Fatalf("only %d of %d seeds changed view", viewChanged, *seeds)
	}
	t.Logf("%d seeds, %d with a view change, %d state transfers, %d ops committed, in %v", *seeds, viewChanged, transfers, ops, time.Since(start))
}

// The same seed gives the same run, byte for byte (timeline and every
// replica's applied ops); another seed gives another.
func TestSameSeedSameRun(t *testing.T) {
	a, b := Run(FaultsFor(42)), Run(FaultsFor(42))
	if a.Digest != b.Digest || len(a.Timeline) != len(b.Timeline) || a.Net != b.Net {
		t.Fatalf("seed 42 ran twice differently: digest %x/%x, %d/%d events", a.Digest, b.Digest, len(a.Timeline), len(b.Timeline))
	}
	for i := range a.Timeline {
		if a.Timeline[i] != b.Timeline[i] {
			t.Fatalf("event %d differs: %v / %v", i, a.Timeline[i], b.Timeline[i])
		}
	}
	if c := Run(FaultsFor(43)); c.Digest == a.Digest {
		t.Fatal("seeds 42 and 43 gave the same run")
	}
}

// The checks can fail: a replica that applies a different op is caught.
func TestDivergenceIsCaught(t *testing.T) {
	cfg := FaultsFor(7)
	cfg.Corrupt = func(replica int, op uint64, frame []byte) {
		if replica == 2 && op == 5 {
			frame[len(frame)-1] ^= 1
		}
	}
	res := Run(cfg)
	if !res.Failed() {
		t.Fatal("a corrupted op 5 on replica 2 went unnoticed")
	}
	t.Log(res.Violations[0])
}

// With a partition ring of 2 retained ops, a backup down for a while
// cannot be repaired: it catches up by state transfer (7.7), and the run
// ends quiet. (The first seed whose crash takes a backup, not the
// primary.)
func TestStuckReplicaCatchesUpByTransfer(t *testing.T) {
	for seed := uint64(1); seed < 50; seed++ {
		cfg := Config{Seed: seed, PartitionPlane: true, RetainOps: 2, FaultTicks: 400, LivenessTicks: 600, CrashProbability: 1, RestartProbability: 0}
		res := Run(cfg)
		if len(res.Timeline) == 0 || res.Timeline[0].Replica == 0 {
			continue
		}
		if res.Failed() || res.Transfers == 0 {
			t.Fatalf("seed %d: %d transfers, violations %v", seed, res.Transfers, res.Violations)
		}
		return
	}
	t.Fatal("no seed crashed a backup first")
}

// The liveness check can fail: a backup that could be repaired but is not
// (here every RequestPrepares is lost, forever) fails the run.
func TestUnrepairedBackupFailsLiveness(t *testing.T) {
	cfg := Config{Seed: 5, FaultTicks: 300, LivenessTicks: 500, CrashProbability: 1, RestartProbability: 0.05}
	cfg.dropRepairRequests = true
	res := Run(cfg)
	if !res.Failed() {
		t.Fatal("an unrepaired backup passed")
	}
	t.Log(res.Violations[0])
}

func TestFaultsForIsInRange(t *testing.T) {
	for s := uint64(0); s < 64; s++ {
		c := FaultsFor(s)
		if c.Net.Loss < 0 || c.Net.Loss > 0.3 || c.Seed != s {
			t.Fatalf("seed %d: %+v", s, c)
		}
	}
}

// The high-watermark check can fail: a leader that admits consumer
// offsets past what it committed is caught at the apply.
func TestOffsetAboveTheHighWatermarkIsCaught(t *testing.T) {
	for seed := uint64(2); seed < 40; seed += 2 { // partition-plane seeds
		cfg := FaultsFor(seed)
		cfg.offsetAhead = true
		res := Run(cfg)
		if !res.Failed() {
			continue // no offset store met a lagging leader in this run
		}
		if !strings.Contains(res.Violations[0], "above its high watermark") {
			t.Fatalf("seed %d: violations %v", seed, res.Violations)
		}
		return
	}
	t.Fatal("no seed caught an offset above the high watermark")
}

// Seeds that once broke an invariant, each with the fault the simulator
// found. They stay here so the fix stays.
func TestRegressionSeeds(t *testing.T) {
	for _, c := range []struct {
		seed     uint64
		replicas int
		what     string
	}{
		// A primary-elect of view 1 re-proved a repaired op for its merged
		// log and so lost the proof for log_view 0, in which it had
		// acknowledged the op; its DVC for view 2 nacked it, the merge of
		// view 2 truncated a committed op, and a new one took its number.
		{9538, 5, "a failed view change took the proof of an acknowledged op"},
		// Whole-cluster crashes with memory lost: the merge deadlocked on
		// ops every replica had forgotten (vsr/merge.go, lostEverywhere).
		{2672, 3, "a replica restarted twice forgot the journal head it had recorded"},
		{2, 3, "whole-cluster crash of a partition group"},
		{11, 3, "whole-cluster crash of the metadata group"},
		// The primary of log_view 1 restarted without its memory journal,
		// so only a log_view 0 replica held committed op 20; its copy was
		// counted a nack, with the replica that never got op 20 a quorum
		// of nacks of a committed op, and every merge deadlocked.
		{114944, 3, "an older log_view's copy of a committed op counted as a nack"},
		// Op 8 reached its quorum with a backup's ack, the backup restarted
		// and lost it, the primary committed op 8 on that stale ack, and
		// after a whole-cluster crash a view without the primary reused
		// op 8 (vsr.forgetAcks).
		{129056, 3, "a commit counted an ack from before the acker's restart"},
		// A replica restarted twice recorded a lower journal head after its
		// first restart, forgot it had acknowledged committed op 12, and
		// nacked it: every merge deadlocked (vsr.JournalHeadAfter).
		{125576, 3, "a second restart forgot what the first incarnation acknowledged"},
		// A primary whose head came by state transfer builds on a zero
		// parent, the spec's unsealed link (the check accepts it now).
		{332384, 3, "a zero parent after a state transfer"},
		{405416, 5, "a zero parent after a state transfer, 5 replicas"},
	} {
		cfg := FaultsFor(c.seed)
		cfg.Replicas = c.replicas
		if res := Run(cfg); res.Failed() {
			t.Errorf("seed %d, %d replicas (%s): %v", c.seed, c.replicas, c.what, res.Violations)
		}
	}
}

// vsr/clock.go: advancing a core only when a timer is due (as the node's
// shell does) is the same run as ticking every core every tick, on both
// planes, with quiescence off and on.
func TestDeadlineTickingMatchesTicks(t *testing.T) {
	for seed := uint64(1); seed <= 80; seed++ {
		for _, quiesce := range []bool{false, true} {
			cfg := FaultsFor(seed)
			cfg.Quiesce = quiesce
			ticked := Run(cfg)
			cfg.Deadlines = true
			timed := Run(cfg)
			if ticked.Digest != timed.Digest || len(ticked.Timeline) != len(timed.Timeline) || ticked.Net != timed.Net {
				t.Fatalf("seed %d (quiesce %v): digest %x ticked, %x with deadlines; %d and %d events",
					seed, quiesce, ticked.Digest, timed.Digest, len(ticked.Timeline), len(timed.Timeline))
			}
			if ticked.Failed() {
				t.Fatalf("seed %d (quiesce %v): %v", seed, quiesce, ticked.Violations)
			}
		}
	}
}

// Many groups per node, most of them quiet, under every fault: the usual
// invariants, the quiescence invariants every tick, and at the end every
// group quiet at its primary's commit point on every replica.
func TestManyQuietGroups(t *testing.T) {
	// 3771: a primary's failed append emptied its pipeline under a running
	// Prepare timer, and it went quiet with the timer armed.
	for _, seed := range []uint64{1, 2, 3, 4, 5, 6, 3771} {
		cfg := ManyGroupsFaultsFor(seed)
		res := Run(cfg)
		if res.Failed() {
			t.Fatalf("seed %d: %v\n  replay: go run ./cmd/sim --groups %d --seed %d --timeline", seed, res.Violations, cfg.Groups, seed)
		}
		if res.Naps == 0 || res.Completed == 0 {
			t.Fatalf("seed %d: %d naps, %d requests answered", seed, res.Naps, res.Completed)
		}
	}
}

// Quiescence rule 5: when the node that leads every group dies, all of its
// quiet groups elect a new primary within the node-level heartbeat timeout
// and some ticks, and take writes again; nothing acknowledged is lost.
func TestDeadPrimaryNodesQuietGroupsAllElect(t *testing.T) {
	const crashAt, groups = 400, 64
	cfg := Config{Seed: 9, Groups: groups, FaultTicks: 3000, LivenessTicks: 3000, SubmitProbability: 0.3}
	var elected int
	cfg.atTick = func(r *run) {
		switch {
		case r.now == crashAt:
			r.crash(0)
		case r.now > crashAt && elected == 0:
			for _, g := range r.groups {
				if l := g.leader(); l <= 0 {
					return
				}
			}
			elected = r.now
		}
	}
	res := Run(cfg)
	if res.Failed() {
		t.Fatalf("%v", res.Violations)
	}
	// 500 ticks of node-level heartbeat timeout, then the view change.
	if elected == 0 || elected-crashAt > 500+300 {
		t.Fatalf("every group had a new primary %d ticks after the crash (0: never)", elected-crashAt)
	}
	t.Logf("all %d groups elected %d ticks after their primary's node died; %d requests answered", groups, elected-crashAt, res.Completed)
}

// Issue 22: membership changes under every fault (reconfig.go), each of
// the three plans over several seeds, end at the plan's roster agreed by
// every member with nothing committed lost.
func TestReconfigSeeds(t *testing.T) {
	for seed := uint64(1); seed <= 30; seed++ {
		cfg := FaultsFor(seed)
		cfg.Reconfig = true
		res := Run(cfg)
		if res.Failed() {
			t.Fatalf("seed %d: %s", seed, res.Violations[0])
		}
		if res.Epochs < 2 {
			t.Fatalf("seed %d: ended in epoch %d; every plan takes at least two", seed, res.Epochs)
		}
		if again := Run(cfg); again.Digest != res.Digest {
			t.Fatalf("seed %d: not deterministic", seed)
		}
	}
}

// The same plans on a partition group with quiescence and deadlines (the
// node's partition groups follow the metadata roster): seeds 88, 89 and
// 104 hung in a learner epoch when a quiet primary stopped nudging and
// promoting its learners (vsr/quiesce.go idle), and stay here.
func TestReconfigPartitionSeeds(t *testing.T) {
	for _, seed := range append([]uint64{88, 89, 104}, seq(1, 30)...) {
		cfg := FaultsFor(seed)
		cfg.Reconfig, cfg.ReconfigPartitions = true, true
		res := Run(cfg)
		if res.Failed() {
			t.Fatalf("seed %d: %s", seed, res.Violations[0])
		}
		if res.Epochs < 2 {
			t.Fatalf("seed %d: ended in epoch %d; every plan takes at least two", seed, res.Epochs)
		}
	}
}

// Planned hand-overs (vsr.Replica.HandOver, issue 23) under every fault,
// on one group of 3 and 5 replicas and on eight quiescing groups, and
// during membership changes of a partition group: every invariant holds.
// Seed 4249 (of --handover 0.01): a primary-elect repaired the merged
// log's op 8 into its journal, its view change failed, and after a
// restart it took that op for one of its log_view's, under the view
// headers of an older op 8 and ops 9 and 10; its DoViewChange did not
// decode (vsr/viewchange.go, reconcileRecovered).
// Hand-overs start only while a group has a leader, which a seed of
// whole-cluster crashes may seldom have: every kind of run must start
// several per seed on average, not every seed one.
func TestHandOverSeeds(t *testing.T) {
	seeds := append(seq(1, 20), 4249)
	for k, mk := range []func(seed uint64) Config{
		func(seed uint64) Config { return FaultsFor(seed) },
		func(seed uint64) Config { c := FaultsFor(seed); c.Replicas = 5; return c },
		func(seed uint64) Config { c := ManyGroupsFaultsFor(seed); c.Groups = 8; return c },
		func(seed uint64) Config {
			c := FaultsFor(seed)
			c.Reconfig, c.ReconfigPartitions = true, true
			return c
		},
	} {
		handOvers := 0
		for _, seed := range seeds {
			cfg := mk(seed)
			cfg.HandOverProbability = 0.01
			res := Run(cfg)
			if res.Failed() {
				t.Fatalf("seed %d (%d replicas, %d groups, reconfig %v): %s", seed, cfg.Replicas, cfg.Groups, cfg.Reconfig, res.Violations[0])
			}
			handOvers += res.HandOvers
		}
		if handOvers < 2*len(seeds) {
			t.Fatalf("kind %d of run: %d hand-overs started over %d seeds", k, handOvers, len(seeds))
		}
	}
}

func seq(from, to uint64) []uint64 {
	var s []uint64
	for i := from; i <= to; i++ {
		s = append(s, i)
	}
	return s
}

// The --reconfig seeds that found bugs (docs/benchmarks.md,
// "Reconfiguration (issue 22)"), each fixed: they must stay green.
func TestReconfigRegressionSeeds(t *testing.T) {
	for _, seed := range []uint64{23, 68, 82, 160, 175, 194, 209, 223, 230, 288, 742, 999, 3724, 19352} {
		cfg := FaultsFor(seed)
		cfg.Reconfig = true
		if res := Run(cfg); res.Failed() {
			t.Errorf("seed %d: %s", seed, res.Violations[0])
		}
	}
}

// Issue 23's scale-out (Config.Placement, reconfig.go): six partition
// groups, each on 3 of 5 nodes, moving replicas between nodes under
// every fault and planned hand-overs, with quiescence and the node-level
// heartbeat. Moves and hand-overs must happen, and every invariant hold
// per group. Seeds that found bugs: 1851, a quiet backup paused while a
// move removed it, stayed a member of the old epoch forever
// (vsr/reconfig.go, hintDeparted); 314, 839 and 1085, moves that
// whole-cluster crashes held up past the faults outran the liveness
// phase (moveTicks); 7019, a learner stuck below commit_max on a
// repaired op nothing could prove (vsr/repair.go, unprovable); 3515,
// every merge deadlocked on the zero parent of an op built after a
// state transfer (vsr/merge.go, linked).
func TestPlacementSeeds(t *testing.T) {
	moves, handOvers, epochs := 0, 0, 0
	for _, seed := range append(seq(1, 30), 314, 839, 1085, 1851, 7019, 3515) {
		cfg := PlacementFaultsFor(seed)
		cfg.HandOverProbability = 0.01
		res := Run(cfg)
		if res.Failed() {
			t.Fatalf("seed %d: %s\n  replay: go run ./cmd/sim --placement 3 --replicas 5 --groups 6 --handover 0.01 --seed %d --timeline", seed, res.Violations[0], seed)
		}
		if res.Epochs != 2*res.Moves {
			t.Fatalf("seed %d: %d epochs for %d moves (each move is R1 and R2)", seed, res.Epochs, res.Moves)
		}
		moves, handOvers, epochs = moves+res.Moves, handOvers+res.HandOvers, epochs+res.Epochs
	}
	if moves < 100 || handOvers < 100 {
		t.Fatalf("%d moves and %d hand-overs over 36 seeds", moves, handOvers)
	}
	cfg := PlacementFaultsFor(7)
	cfg.HandOverProbability = 0.01
	if a, b := Run(cfg), Run(cfg); a.Digest != b.Digest {
		t.Fatal("seed 7 ran twice differently")
	}
	t.Logf("%d moves, %d epochs, %d hand-overs", moves, epochs, handOvers)
}

// The placement check can fail: nodes outside group 0's set that believe
// they are voters (a roster naming them) act in it, and are caught.
func TestActingOutsideTheRosterIsCaught(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		cfg := PlacementFaultsFor(seed)
		cfg.misplace = true
		res := Run(cfg)
		if !res.Failed() || !strings.Contains(res.Violations[0], "does not name it") {
			t.Fatalf("seed %d: violations %v", seed, res.Violations)
		}
	}
}

// Partition groups keep no client table, so a request replayed after a
// cancelled prepare is applied twice when the next view kept the first;
// waiting for the fate of cancelled prepares (vsr.Config.AwaitFate)
// answers many of them instead. Over the same seeds with planned
// hand-overs, the wait must save at least a third of the requests
// applied twice (the rest are replays after a client's timeout; cmd/sim
// --groups 4 --handover 0.01: 3 111 without, 1 182 with, over 300 seeds;
// seeds 1-150 here: 1 654 and 895).
func TestAwaitFateSavesReplays(t *testing.T) {
	duplicates := map[bool]int{}
	for _, noAwait := range []bool{false, true} {
		for _, seed := range seq(1, 100) {
			cfg := ManyGroupsFaultsFor(seed)
			cfg.Groups, cfg.HandOverProbability, cfg.NoAwaitFate = 4, 0.01, noAwait
			res := Run(cfg)
			if res.Failed() {
				t.Fatalf("seed %d (no await %v): %s", seed, noAwait, res.Violations[0])
			}
			duplicates[noAwait] += res.Duplicates
		}
	}
	if with, without := duplicates[false], duplicates[true]; without == 0 || 3*with > 2*without {
		t.Fatalf("requests applied twice: %d waiting for the fate, %d without", with, without)
	}
}
