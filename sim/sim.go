package sim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strings"

	"iggynode/vsr"
	"iggynode/wire"
)

// Config describes one simulated run.
type Config struct {
	Seed     uint64
	Replicas int // default 3
	Clients  int // default 4; each keeps at most one request in flight
	// PartitionPlane runs a partition group (SendMessages prepares, no body
	// seal, repair served up to commit_max) instead of the metadata group.
	PartitionPlane bool
	// NoAwaitFate turns the partition plane's vsr.Config.AwaitFate off
	// (to count the duplicates it saves).
	NoAwaitFate bool
	// FaultTicks is the length of the fault phase (default 2000); the
	// liveness phase that follows heals everything and has LivenessTicks
	// (default 3000) for every request to complete and every replica to
	// catch up.
	FaultTicks    int
	LivenessTicks int
	Net           NetConfig
	// CrashProbability: each tick of the fault phase, one live replica (the
	// primary too) goes down (all its links cut, its timers stopped), never
	// more than the quorum allows. RestartProbability: each tick, a down
	// replica comes back.
	CrashProbability   float64
	RestartProbability float64
	// ClusterCrashProbability: each tick of the fault phase, every replica
	// goes down at once (a power cut), beyond what the quorum allows; they
	// come back one by one at RestartProbability. With CrashLosesMemory a
	// partition group then loses the ops no replica applied (9.4 rule 6),
	// which must never include an acknowledged one.
	ClusterCrashProbability float64
	// CrashLosesMemory: a replica that comes back restarts from what it
	// kept durable (11.3 rule 2) instead of resuming with its memory: the
	// metadata journal, or a partition's applied (segment) ops; pipelines,
	// partition journals and repair sessions are lost.
	CrashLosesMemory bool
	// JournalFailProbability: during the fault phase, each journal append
	// fails with this probability (a disk error): the core truncates that
	// op and everything after it, and the shell stops appending that Ready.
	JournalFailProbability float64
	// SubmitProbability: each tick, an idle client submits (default 0.5).
	SubmitProbability float64
	// RetainOps bounds each replica's ring of committed prepares served to
	// repair (vsr.Config.RetainOps; default that of vsr).
	RetainOps int
	// Corrupt, if set, may change a replica's applied frame before the
	// checks see it; tests use it to prove the checks catch divergence.
	Corrupt func(replica int, op uint64, frame []byte)
	// Trace, if set, is where replica i's spans go (trace.go).
	Trace TraceWriters
	// dropRepairRequests loses every RequestPrepares (tests of the
	// liveness check).
	dropRepairRequests bool
	// offsetAhead makes the leader admit offsets one past what it
	// committed (tests of the high-watermark check).
	offsetAhead bool
	// misplace gives the nodes outside group 0's set, with Placement, a
	// roster that names them a learner, and no quiescence, so they probe
	// (tests of the "never acts outside its roster" check).
	misplace bool
	// Groups is how many partition groups every replica (node) hosts
	// (default 1). With more than one the run is on the partition plane,
	// with quiescence and the node-level heartbeat (vsr.Liveness) on, as
	// the node runs its partitions: clients write mostly to HotGroups of
	// them, now and then to any, so most groups are quiet most of the time.
	Groups    int
	HotGroups int // default 2
	// Quiesce turns quiescence and the node-level heartbeat on for a
	// single group too (implied by Groups > 1).
	Quiesce bool
	// Deadlines advances each core only when a timer is due
	// (vsr.Replica.IdleTicks), as the node's shell does, instead of a Tick
	// per replica per tick: the run must be the same either way
	// (implied by Groups > 1).
	Deadlines bool
	// Reconfig runs membership changes (reconfig.go): on the metadata
	// group alone, voters {0,1,2} at start on the nodes the seed's plan
	// needs (Replicas is ignored), moved through the plan's rosters.
	Reconfig bool
	// HandOverProbability: each tick of the fault phase, the leader of a
	// random group hands its primaryship to a random other voter
	// (vsr.Replica.HandOver, issue 23's leadership moves).
	HandOverProbability float64
	// ReconfigPartitions runs Reconfig's plans on a partition group with
	// quiescence and deadlines, as the node's partition groups follow the
	// metadata roster (actors/reconfig.go), instead of the metadata group.
	ReconfigPartitions bool
	// Placement, when above zero, runs every partition group on that many
	// of the Replicas nodes (issue 23, "Scale out"; reconfig.go): each
	// group's voters a subset drawn from the seed, its first primary
	// spread (vsr.Config.StartView), the other nodes hosting a joiner,
	// and at seed-drawn ticks a group moves one replica to a node outside
	// its set. It implies the partition plane with quiescence, the
	// node-level heartbeat and deadlines, as Groups > 1 does; Replicas
	// must be above it. Reconfig, if set, wins.
	Placement int
	// atTick, if set, runs at the start of every step (scripted faults in
	// tests).
	atTick func(r *run)
}

func (c *Config) setDefaults() {
	if c.Replicas == 0 {
		c.Replicas = 3
	}
	if c.Clients == 0 {
		c.Clients = 4
	}
	if c.FaultTicks == 0 {
		c.FaultTicks = 2000
	}
	if c.LivenessTicks == 0 {
		c.LivenessTicks = 3000
	}
	if c.SubmitProbability == 0 {
		c.SubmitProbability = 0.5
	}
	if c.Groups <= 0 {
		c.Groups = 1
	}
	if c.HotGroups <= 0 {
		c.HotGroups = 2
	}
	if c.Groups > 1 {
		c.PartitionPlane, c.Quiesce, c.Deadlines = true, true, true
	}
	c.Net.setDefaults()
}

// Result is what a run did and whether it broke an invariant.
type Result struct {
	Seed      uint64
	Ticks     int
	Submitted int
	Completed int
	Committed uint64 // the primary's commit point at the end
	Repairs   uint64 // repair sessions opened, over all replicas
	Crashes   int
	// ViewChanges is the highest view any replica reached.
	ViewChanges uint64
	// Transfers counts installed state transfers.
	Transfers int
	// HandOvers counts planned view changes started (HandOverProbability).
	HandOvers int
	// Moves counts the targets of plans reached (Reconfig's steps,
	// Placement's moves), over all groups.
	Moves int
	// Naps counts the times a replica of a group went quiet.
	Naps uint64
	// Duplicates counts ops that applied a request an earlier op had
	// applied already: a replay of a request whose outcome was unknown
	// (stored twice on the partition plane, which has no client table).
	Duplicates int
	// JournalFailures counts injected journal append failures.
	JournalFailures int
	// Epochs is the final epoch of a reconfiguring run, summed over its
	// groups (Placement); the faults that
	// met a change in progress: crashes of its primary, crashes of a
	// replica during its state transfer, and partitions that cut an old
	// voter from a new member.
	Epochs                                                 int
	PrimaryCrashesMidChange, TransferCrashes, OldNewSplits int
	Net                                                    NetStats
	Violations                                             []string
	Timeline                                               []Event
	// Digest is a hash of the timeline and every replica's applied ops:
	// the same seed must give the same digest.
	Digest uint64
}

// Failed reports whether any invariant was violated.
func (r *Result) Failed() bool { return len(r.Violations) > 0 }

var errInjected = errors.New("sim: injected journal failure")

// Event is one line of the run's timeline.
type Event struct {
	Tick    int
	Replica int // -1: the network or the harness
	What    string
}

func (e Event) String() string {
	who := "net"
	if e.Replica >= 0 {
		who = fmt.Sprintf("r%d", e.Replica)
	}
	return fmt.Sprintf("%6d %-4s %s", e.Tick, who, e.What)
}

type applied struct {
	op    uint64
	frame []byte
}

type replica struct {
	core *vsr.Replica
	down bool
	// state is the durable VSR state the shell persisted (Ready.State).
	state vsr.State
	// amnesiac: restarted without its partition journal (memory), and not
	// caught up yet. Until it is, it counts as faulty: VSR survives f
	// faulty replicas, and one that forgot prepares it acknowledged is one
	// (replica-plane.md 9.4 rule 6).
	amnesiac  bool
	catchUpTo uint64
	// headAtCrash is the journal head the replica had when it went down:
	// an amnesiac replica is caught up only once it holds as much again
	// (it may have acknowledged every op up to there).
	headAtCrash uint64
	// transfer is the state transfer this replica receives (transfer.go);
	// snapshotOp the commit point an installed one left (the metadata
	// journal starts above it).
	transfer    *vsr.TransferSession
	snapshotOp  uint64
	viewChanges uint64            // views started or adopted, for the timeline
	journal     map[uint64][]byte // the durable journal the shell keeps
	applied     []applied
	commit      uint64 // last commit_min seen, for monotonicity
	view        uint32
	repairs     uint64 // repair sessions seen, for the timeline
	// lastJournaled is the highest op handed to the journal: a partition
	// shell checks each batch against its next offset, so the journal
	// must never be handed an op above a hole.
	lastJournaled uint64
	// journalHead is the shell's durable record of its journal's head
	// (actors: journalHeadKey): the last op of each Ready that journaled
	// one, kept across restarts, for vsr.Recovery.JournalHead.
	journalHead uint64
	// lastTick is the tick the core was last advanced to, due the tick
	// its next timer fires (0: none armed), with Config.Deadlines.
	lastTick, due int
}

type call struct {
	group   int // index of the group written to
	client  int
	request uint64
	value   uint64
	callAt  int
	done    bool
	retAt   int
	index   uint64 // the position of the request's value in the deduplicated log
	pending bool   // submitted to a core, waiting for the commit
	at      int    // the replica it is pending at
	sentAt  int
	// storeOffset: on the partition plane, a StoreConsumerOffset instead
	// of a send, for the offset the leader has committed when it is sent.
	storeOffset bool
}

// requestKey names a request; the simulated state machine applies each
// once, as the client table does (replica-plane.md 5.12).
type requestKey struct {
	client  uint64
	request uint64
}

type client struct {
	next     uint64
	inflight *call
}

type run struct {
	cfg     Config
	rng     *rand.Rand
	net     *network
	nodes   []*node
	groups  []*group
	clients []*client
	calls   []*call
	now     int
	faults  bool
	res     Result
	trace   *tracer // nil unless Config.Trace; it follows group 0
	byID    map[uint64]*group
	planned bool // some group has a plan (Config.Reconfig, Config.Placement)
	// settleIn is the liveness phase's length: LivenessTicks, and more
	// for the moves plans still have when the faults end.
	settleIn int
}

// node is one simulated node: its replicas of every group share its fate
// and its node-level heartbeat.
type node struct {
	down bool
	live *vsr.Liveness // nil unless Config.Quiesce
}

// group is one consensus group, with a replica on every node.
type group struct {
	r    *run
	idx  int
	id   uint64
	reps []*replica
	// identity of each applied op, the first replica to apply it sets it
	canon map[uint64][]byte
	// position of each applied op's value in the deduplicated log (0: a
	// duplicate of an earlier op's request), and the op that first applied
	// each request
	position map[uint64]uint64
	firstOp  map[requestKey]uint64
	distinct uint64
	offers   map[offerKey]*simOffer
	plan     *reconfigPlan // Config.Reconfig, Config.Placement
}

// Run simulates one seed and returns what happened. It never panics on a
// violation: violations are collected, and the run stops at the first.
func Run(cfg Config) (res Result) {
	var plan *reconfigPlan
	switch {
	case cfg.Reconfig:
		plan = planFor(cfg.Seed)
		cfg.PartitionPlane, cfg.Groups, cfg.Quiesce, cfg.Deadlines, cfg.Replicas, cfg.Placement = false, 1, false, false, plan.nodes, 0
		if cfg.ReconfigPartitions {
			cfg.PartitionPlane, cfg.Quiesce, cfg.Deadlines = true, true, true
		}
	case cfg.Placement > 0:
		cfg.PartitionPlane, cfg.Quiesce, cfg.Deadlines = true, true, true
		if cfg.Replicas <= cfg.Placement {
			return Result{Seed: cfg.Seed, Violations: []string{fmt.Sprintf("config: placement on %d of %d nodes leaves none to move to", cfg.Placement, cfg.Replicas)}}
		}
	}
	cfg.setDefaults()
	r := &run{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)), byID: map[uint64]*group{}}
	r.res.Seed = cfg.Seed
	for k := range cfg.Groups {
		g := &group{r: r, idx: k, id: groupID(cfg, k), canon: make(map[uint64][]byte), position: make(map[uint64]uint64),
			firstOp: make(map[requestKey]uint64), offers: make(map[offerKey]*simOffer), plan: plan}
		if cfg.Placement > 0 {
			g.plan = placementPlan(cfg.Seed, k, cfg.Replicas, cfg.Placement)
		}
		r.planned = r.planned || g.plan != nil
		r.groups = append(r.groups, g)
		r.byID[g.id] = g
	}
	r.trace = newTracer(r)
	r.net = newNetwork(cfg.Net, cfg.Replicas, r.rng)
	for i := 0; i < cfg.Replicas; i++ {
		r.nodes = append(r.nodes, &node{})
		if cfg.Quiesce {
			r.nodes[i].live = r.newLiveness(i)
		}
	}
	for _, g := range r.groups {
		for i := 0; i < cfg.Replicas; i++ {
			g.reps = append(g.reps, &replica{core: vsr.New(g.coreConfig(i)), journal: make(map[uint64][]byte)})
			g.reschedule(i)
		}
	}
	for range cfg.Clients {
		r.clients = append(r.clients, &client{next: 1})
	}
	defer func() {
		if p := recover(); p != nil {
			r.violate(fmt.Sprintf("panic: %v", p))
			res = r.finish()
		}
	}()
	r.faults = true
	for r.now = 1; r.now <= cfg.FaultTicks && !r.res.Failed(); r.now++ {
		r.step()
	}
	r.faults = false
	r.event(-1, "faults off: links healed, every replica up")
	for i, n := range r.nodes {
		if n.down {
			r.bringUpNode(i, false)
		}
	}
	r.settleIn = cfg.LivenessTicks + r.movesLeft()*moveTicks
	end := cfg.FaultTicks + r.settleIn
	for ; r.now <= end && !r.res.Failed(); r.now++ {
		r.step()
		if r.quiet() {
			break
		}
	}
	if !r.res.Failed() && !r.quiet() {
		r.violate(r.livenessReport())
	}
	for _, g := range r.groups {
		// 11.5 rule 7, at quiescence: no replica beyond the leader. (A
		// restarted metadata backup recovers its whole journal as
		// committed, as the node does, so it may run ahead of the primary
		// until the primary commits those same ops.)
		if l := g.leader(); l >= 0 {
			for i, rp := range g.reps {
				if c := rp.core.CommitMin(); !r.res.Failed() && c > g.reps[l].core.CommitMin() {
					r.violate(fmt.Sprintf("%sreplica %d committed %d, beyond the primary's %d", g.name(), i, c, g.reps[l].core.CommitMin()))
				}
			}
		}
		if !r.res.Failed() {
			g.checkAcknowledgedKept()
		}
		if !r.res.Failed() {
			g.checkRosters()
		}
		if !r.res.Failed() {
			g.checkLinearizable()
		}
	}
	return r.finish()
}

// groupID is the id of group k: the plane's group for a single group, a
// partition group per k otherwise.
func groupID(cfg Config, k int) uint64 {
	if !cfg.PartitionPlane {
		return wire.MetadataGroup
	}
	g, _ := wire.PartitionGroup(1, 2, uint32(3+k))
	return g
}

// name prefixes a violation with the group when there are several.
func (g *group) name() string {
	if len(g.r.groups) == 1 {
		return ""
	}
	return fmt.Sprintf("group %d: ", g.idx)
}

func (r *run) newLiveness(i int) *vsr.Liveness {
	return vsr.NewLiveness(vsr.LivenessConfig{Cluster: wire.U128{Lo: 0x51}, Self: uint8(i), Replicas: r.cfg.Replicas,
		IntervalTicks: 50, TimeoutTicks: 500, Incarnation: wire.U128{Lo: r.rng.Uint64() | 1, Hi: uint64(i)}})
}

func (r *run) finish() Result {
	r.trace.close()
	r.res.Ticks = r.now
	r.res.Net = r.net.stats
	for _, g := range r.groups {
		for _, rp := range g.reps {
			r.res.Committed = max(r.res.Committed, rp.core.CommitMin())
			r.res.Repairs += rp.core.Repairs
			r.res.ViewChanges = max(r.res.ViewChanges, uint64(rp.core.View()))
			r.res.Naps += rp.core.Naps()
		}
	}
	h := fnv.New64a()
	for _, e := range r.res.Timeline {
		fmt.Fprintln(h, e.String())
	}
	for _, g := range r.groups {
		for _, rp := range g.reps {
			for _, a := range rp.applied {
				_ = binary.Write(h, binary.LittleEndian, a.op)
				h.Write(a.frame[:16])
			}
		}
	}
	r.res.Digest = h.Sum64()
	return r.res
}

func (r *run) event(replica int, format string, args ...any) {
	r.res.Timeline = append(r.res.Timeline, Event{Tick: r.now, Replica: replica, What: fmt.Sprintf(format, args...)})
}

func (r *run) violate(what string) {
	r.res.Violations = append(r.res.Violations, what)
	r.event(-1, "VIOLATION: %s", what)
}

// step is one simulator step (11.1): faults move, clients submit, every
// live replica ticks and runs to quiescence, the network delivers what is
// due, and the invariants are checked.
func (r *run) step() {
	split := r.net.split
	r.net.tick(r.now, r.faults)
	if r.net.split != split {
		if r.net.split {
			r.event(-1, "partition: %s", r.net.describe())
			r.countSplit()
		} else {
			r.event(-1, "partition healed")
		}
	}
	if r.cfg.atTick != nil {
		r.cfg.atTick(r)
	}
	if r.faults {
		r.crashOrRestart()
		if r.cfg.HandOverProbability > 0 && r.rng.Float64() < r.cfg.HandOverProbability {
			r.handOver()
		}
	}
	r.submit()
	for _, g := range r.groups {
		g.reconfigure()
	}
	for i, n := range r.nodes {
		if !n.down && n.live != nil {
			n.live.Tick()
			r.driveLiveness(i, r.now-1) // before this tick's group ticks
		}
	}
	for _, g := range r.groups {
		for i, rp := range g.reps {
			if rp.down {
				continue
			}
			if !r.cfg.Deadlines {
				rp.core.Tick()
			} else if rp.transfer == nil && (rp.due == 0 || rp.due > r.now) {
				continue // only counting down: nothing to do this tick
			} else {
				g.catchUp(i, r.now)
			}
			g.drive(i)
			g.tickTransfer(i)
		}
	}
	r.net.deliver(r.now, r.faults, func(i int) bool { return r.nodes[i].down }, func(from, to int, frame []byte) {
		h := wire.HeaderOf(frame)
		if h.Command() == wire.CmdNodeHeartbeat {
			if n := r.nodes[to]; n.live != nil {
				n.live.Step(frame)
				r.driveLiveness(to, r.now)
			}
			return
		}
		id, _ := wire.GroupOf(h)
		g := r.byID[id]
		if g == nil {
			g = r.groups[0] // a frame that names no group of the run: the core drops it
		}
		if g.idx == 0 {
			r.trace.delivered(from, to, frame)
		}
		g.catchUp(to, r.now)
		if c := h.Command(); c >= wire.CmdRequestStateTransfer && c <= wire.CmdStateChunk {
			g.transferFrame(from, to, frame)
			return
		}
		g.reps[to].core.Step(frame)
		g.drive(to)
	})
	r.checkTick()
}

// catchUp advances replica i's core to tick to (Config.Deadlines): the
// ticks since it was last advanced, of which none but the last may fire
// a timer (the schedule visits it when one is due).
func (g *group) catchUp(i int, to int) {
	rp := g.reps[i]
	if !g.r.cfg.Deadlines || rp.down {
		return
	}
	if to > rp.lastTick {
		rp.core.Elapse(to - rp.lastTick)
		rp.lastTick = to
	}
}

// reschedule records when replica i's next timer fires.
func (g *group) reschedule(i int) {
	rp := g.reps[i]
	if rp.lastTick < g.r.now-1 && !rp.down && g.r.cfg.Deadlines {
		// An input at tick now arrives before the tick phase when it is a
		// client's: the core stands at now-1 (catchUp before it).
		panic("sim: reschedule of a core behind the clock")
	}
	if k, ok := rp.core.IdleTicks(); ok {
		rp.due = rp.lastTick + k
	} else {
		rp.due = 0
	}
}

// driveLiveness carries out node i's Liveness outputs: its frames to the
// network, the entries its peers sent to the groups they name, and the
// loss or return of a peer to every group, whose cores stand at tick at.
func (r *run) driveLiveness(i int, at int) {
	live := r.nodes[i].live
	for live.HasReady() {
		rd := live.Ready()
		for _, e := range rd.Send {
			r.net.send(r.now, i, int(e.To), e.Head)
		}
		for _, q := range rd.Entries {
			if g := r.byID[q.Group]; g != nil {
				g.catchUp(i, at)
				g.reps[i].core.OnQuiet(q.From, q.Kind, q.View, q.Commit)
				g.drive(i)
			}
		}
		for _, p := range rd.Lost {
			r.event(i, "node-level heartbeat lost r%d", p)
			for _, g := range r.groups {
				g.catchUp(i, at)
				g.reps[i].core.PeerLost(p)
				g.drive(i)
			}
		}
		for _, p := range rd.Found {
			r.event(i, "node-level heartbeat found r%d", p)
			for _, g := range r.groups {
				g.catchUp(i, at)
				g.reps[i].core.PeerFound(p)
				g.drive(i)
			}
		}
	}
}

func (r *run) crashOrRestart() {
	var live, down []int
	faulty := 0
	for i, n := range r.nodes {
		amnesiac := false
		for _, g := range r.groups {
			rp := g.reps[i]
			if rp.amnesiac && !rp.down && rp.core.Status() == vsr.StatusNormal && rp.core.CommitMin() >= rp.catchUpTo &&
				rp.core.Op() >= rp.headAtCrash {
				rp.amnesiac = false
				r.event(i, "%scaught up after its restart", g.name())
			} else if rp.amnesiac && g.plan != nil && !rp.core.Member() {
				rp.amnesiac = false // removed since: what it forgot is no member's
				r.event(i, "%sremoved, no longer faulty", g.name())
			}
			amnesiac = amnesiac || rp.amnesiac
		}
		switch {
		case n.down:
			down = append(down, i)
			faulty++
		case amnesiac:
			faulty++
		default:
			live = append(live, i)
		}
	}
	if r.cfg.ClusterCrashProbability > 0 && len(down) < len(r.nodes) && r.rng.Float64() < r.cfg.ClusterCrashProbability {
		r.event(-1, "whole cluster down")
		for i, n := range r.nodes {
			if !n.down {
				r.crash(i)
			}
		}
		return
	}
	maxFaulty := r.cfg.Replicas - vsr.QuorumReplication(r.cfg.Replicas)
	if r.planned {
		// Any node may go down, a joiner mid-transfer too, as long as no
		// voter set in use loses its quorum.
		if len(live) > 0 && r.rng.Float64() < r.cfg.CrashProbability {
			if i := live[r.rng.IntN(len(live))]; r.mayCrash(i) {
				r.crash(i)
			}
		}
	} else if len(live) > 0 && faulty < maxFaulty && r.rng.Float64() < r.cfg.CrashProbability {
		r.crash(live[r.rng.IntN(len(live))])
	}
	if len(down) > 0 && r.rng.Float64() < r.cfg.RestartProbability {
		r.bringUp(down[r.rng.IntN(len(down))])
	}
}

// handOver moves a random group's primaryship to a random other voter.
func (r *run) handOver() {
	g := r.groups[r.rng.IntN(len(r.groups))]
	l := g.leader()
	if l < 0 {
		return
	}
	c := g.reps[l].core
	var voters []uint8
	for id := uint8(0); id < vsr.MaxReplicas; id++ {
		if c.Roster().Voter(id) && int(id) != l && int(id) < len(g.reps) {
			voters = append(voters, id)
		}
	}
	if len(voters) == 0 {
		return
	}
	to := voters[r.rng.IntN(len(voters))]
	g.catchUp(l, r.now-1)
	if err := c.HandOver(to); err == nil {
		r.res.HandOvers++
		r.event(l, "%shands over to %d (view %d)", g.name(), to, c.View())
	}
	g.drive(l)
}

// crash takes node i down, with its replica of every group.
func (r *run) crash(i int) {
	r.nodes[i].down = true
	for _, g := range r.groups {
		g.catchUp(i, r.now-1) // the last tick it lived
		rp := g.reps[i]
		rp.down = true
		rp.headAtCrash = rp.core.Op()
	}
	r.res.Crashes++
	r.countCrash(i)
	c := r.groups[0].reps[i].core
	r.event(i, "down (view %d, %s, commit %d)", c.View(), c.Status(), c.CommitMin())
	if r.cfg.CrashLosesMemory {
		r.forgetPending(i)
	}
}

// forgetPending: the requests pending at node i lost their subscriber
// with its memory; their clients time out and retry.
func (r *run) forgetPending(i int) {
	for _, c := range r.clients {
		if cl := c.inflight; cl != nil && cl.pending && cl.at == i {
			cl.pending = false
		}
	}
}

// retainedTail is how many committed ops a restarted partition replica
// rebuilds for repair: the node's default partition pipeline depth.
const retainedTail = 32

// bringUp returns a down node to the network, restarted from its durable
// state when crashes lose memory.
func (r *run) bringUp(i int) { r.bringUpNode(i, r.cfg.CrashLosesMemory) }

// bringUpNode returns node i, restarted or with its memory (a pause ends,
// or the liveness phase heals everything).
func (r *run) bringUpNode(i int, restart bool) {
	n := r.nodes[i]
	n.down = false
	if restart && n.live != nil {
		n.live = r.newLiveness(i) // a new incarnation, every peer heard at boot
	}
	for _, g := range r.groups {
		g.bringUp(i, restart)
	}
}

func (g *group) bringUp(i int, restart bool) {
	r := g.r
	rp := g.reps[i]
	rp.down = false
	rp.lastTick = r.now - 1 // its timers stood still while it was down
	if !restart {
		if r.faults { // the liveness phase heals silently
			r.event(i, "%sup (view %d, commit %d)", g.name(), rp.core.View(), rp.core.CommitMin())
		}
		g.reschedule(i)
		return
	}
	wasMember := rp.core.Member() // a joiner or a removed replica forgets nothing a member needs
	rp.core, rp.transfer = vsr.New(g.coreConfig(i)), nil
	rc := vsr.Recovery{View: rp.state.View, LogView: rp.state.LogView, CommitMax: rp.state.CommitMax, ViewHead: rp.state.ViewHead, ViewHeaders: rp.state.ViewHeaders,
		Incarnation: wire.U128{Lo: r.rng.Uint64(), Hi: r.rng.Uint64()}} // fresh at every boot (6.12 rule 2)
	if ro := rp.state.Roster; ro.Voters != 0 {
		rc.Roster, rc.EpochOp, rc.Removed = &ro, rp.state.EpochOp, rp.state.Removed // kept beside the superblock, as State says
	}
	if r.cfg.PartitionPlane {
		// The segments hold every applied batch, and the shell recorded
		// the op it applied last; the journal was memory.
		rp.core.SetOffsetFrontier(uint64(len(rp.applied)))
		rc.JournalHead = rp.journalHead // the shell records its journal's head, which the memory lost
		rp.journal, rp.lastJournaled = make(map[uint64][]byte), 0
		if n := len(rp.applied); n > 0 {
			ph := wire.HeaderOf(rp.applied[n-1].frame).Prepare()
			rc.Commit, rc.CommitChecksum, rc.CommitTimestamp = ph.Op, ph.Checksum, ph.Timestamp
			// The shell saves the last ops' headers now and then and
			// rebuilds their prepares from the segments (actors/tail.go): a
			// save may be a few ops behind the applied op.
			end := n - r.rng.IntN(min(n, 4))
			for _, a := range rp.applied[max(0, end-retainedTail):end] {
				rc.Retained = append(rc.Retained, a.frame)
			}
		}
		rp.amnesiac = g.plan == nil || wasMember
		for _, o := range g.reps {
			rp.catchUpTo = max(rp.catchUpTo, o.core.CommitMin())
		}
	} else {
		// The metadata journal is durable: replay it up to the highest
		// commit its headers name (9.3 step 4); the rest is journaled,
		// uncommitted, and settled by the view the probe finds.
		var head, w uint64
		for head = rp.snapshotOp; rp.journal[head+1] != nil; head++ {
			w = max(w, wire.HeaderOf(rp.journal[head+1]).Prepare().Commit)
		}
		w = min(max(w, rp.snapshotOp, rp.state.EpochOp), head)
		if uint64(len(rp.applied)) > w {
			rp.applied = rp.applied[:w] // the state machine is rebuilt from the journal
		}
		for op := uint64(len(rp.applied)) + 1; op <= w; op++ {
			g.apply(i, vsr.Committed{Op: op, Frame: rp.journal[op]})
		}
		rc.Commit = w
		if g.plan != nil {
			// The state machine holds the roster its replay applied: newer
			// than the superblock's when the R's commit was learned from
			// the journal's headers.
			for j := len(rp.applied) - 1; j >= 0; j-- {
				if ro, ok := vsr.RosterOf(rp.applied[j].frame); ok {
					if rc.Roster == nil || ro.Epoch > rc.Roster.Epoch {
						was := rc.Removed || rc.Roster != nil && rc.Roster.Member(uint8(i))
						rc.Roster, rc.EpochOp, rc.Removed = &ro, rp.applied[j].op, was && !ro.Member(uint8(i))
					}
					break
				}
			}
		}
		if w > 0 {
			f := rp.journal[w]
			if f == nil {
				f = rp.applied[w-1].frame // the op of an installed snapshot
			}
			ph := wire.HeaderOf(f).Prepare()
			rc.CommitChecksum, rc.CommitTimestamp = ph.Checksum, ph.Timestamp
		}
		for op := w + 1; op <= head; op++ {
			rc.Journal = append(rc.Journal, rp.journal[op])
		}
		rp.lastJournaled = head
	}
	rp.core.Recover(rc)
	rp.commit, rp.view, rp.viewChanges, rp.repairs = rp.core.CommitMin(), rp.core.View(), 0, 0
	g.drive(i)
	r.event(i, "%srestarted from durable state (view %d/%d, commit %d, head %d, serves repair from op %d)", g.name(), rc.View, rc.LogView, rp.core.CommitMin(), rp.core.Op(), rp.core.OldestServable())
}

func (g *group) coreConfig(i int) vsr.Config {
	r := g.r
	c := vsr.Config{Cluster: wire.U128{Lo: 0x51}, Group: g.id, Replica: uint8(i),
		ReplicaCount: r.cfg.Replicas, Metadata: !r.cfg.PartitionPlane, PeerQueueCapacity: r.cfg.Net.Capacity,
		Seed: r.cfg.Seed + uint64(i)*7919 + 1 + uint64(g.idx)*104729, RetainOps: r.cfg.RetainOps, Quiesce: r.cfg.Quiesce,
		AwaitFate: r.cfg.PartitionPlane && !r.cfg.NoAwaitFate}
	if p := g.plan; p != nil {
		ro := p.initial
		c.ReplicaCount, c.Roster = ro.N(), &ro
		if r.cfg.Placement > 0 {
			c.StartView = uint32(g.idx % r.cfg.Placement) // the first primaries spread over the voters
		}
		if r.cfg.misplace && g.idx == 0 && !ro.Member(uint8(i)) {
			ro.Learners |= 1 << i
			c.Quiesce = false
		}
	}
	if r.cfg.Quiesce {
		c.Live = func(rep uint8) bool { return r.nodes[i].live.Alive(rep) }
	}
	if !r.cfg.PartitionPlane {
		// The metadata journal is durable and read back, as the node does.
		c.ReadJournal = func(op uint64) []byte { return g.reps[i].journal[op] }
		c.JournalFloor = func() uint64 { return 1 }
		if g.plan != nil {
			// The node's floor (7.3 rules 3-6): snapshot_op + 1. Laggards
			// of an epoch install states and then lead; serving from a
			// floor of 1 they would answer a learner's repair with
			// nothing, never RangeEvicted, and it would wait forever
			// (seed 160 of --reconfig). Kept at 1 otherwise, so the runs
			// without --reconfig stay the runs they were.
			c.JournalFloor = func() uint64 { return g.reps[i].snapshotOp + 1 }
		}
	}
	return c
}

// leader is the live replica leading the highest view, or -1.
func (g *group) leader() int {
	best := -1
	for i, rp := range g.reps {
		if !rp.down && rp.core.Leading() && (best < 0 || rp.core.View() > g.reps[best].core.View()) {
			best = i
		}
	}
	return best
}

// requestTimeout is how long a client waits for an answer before it
// sends the request again (to whichever replica leads then).
const requestTimeout = 300

// submit lets idle clients send their next request to the leader of the
// group they write to, and clients whose request went unanswered send it
// again.
func (r *run) submit() {
	for ci, c := range r.clients {
		if c.inflight == nil {
			if !r.faults || r.rng.Float64() >= r.cfg.SubmitProbability {
				continue // the liveness phase drains what is in flight
			}
			c.inflight = &call{group: r.pickGroup(), client: ci, request: c.next, value: uint64(ci)<<32 | c.next, callAt: r.now,
				storeOffset: r.cfg.PartitionPlane && r.rng.Float64() < 0.2}
			c.next++
			r.calls = append(r.calls, c.inflight)
			r.res.Submitted++
		}
		cl := c.inflight
		if cl.pending && r.now-cl.sentAt > requestTimeout {
			cl.pending = false
		}
		g := r.groups[cl.group]
		l := g.leader()
		if cl.pending || l < 0 {
			continue
		}
		body := make([]byte, r.payloadAt()+24+r.rng.IntN(48))
		binary.LittleEndian.PutUint64(body[r.payloadAt():], cl.value)
		binary.LittleEndian.PutUint64(body[r.payloadAt()+8:], cl.request)
		op := r.operation()
		if cl.storeOffset {
			// The primary admits an offset only up to what it has committed
			// (server-behaviour.md 8.5.2); here, all of it.
			op = wire.OpStoreConsumerOffset
			off := sendsIn(g.reps[l].applied)
			if r.cfg.offsetAhead {
				off++
			}
			binary.LittleEndian.PutUint64(body[r.payloadAt()+16:], off)
		}
		frame := append(make([]byte, wire.HeaderSize), body...)
		g.catchUp(l, r.now-1) // a client's request comes before this tick
		err := g.reps[l].core.Submit(vsr.Request{Client: wire.U128{Lo: uint64(ci) + 1}, Request: cl.request,
			Operation: op, Frame: frame, Tag: cl}, uint64(r.now)*10_000)
		if err == nil {
			cl.pending, cl.at, cl.sentAt = true, l, r.now
		}
		g.drive(l)
	}
}

// pickGroup is the group a new request writes to: one of the hot groups
// mostly, any group now and then (no draw with a single group).
func (r *run) pickGroup() int {
	n := len(r.groups)
	if n == 1 {
		return 0
	}
	if r.rng.Float64() < 0.8 {
		return r.rng.IntN(min(r.cfg.HotGroups, n))
	}
	return r.rng.IntN(n)
}

// payloadAt is where a request's value starts in a prepare body: after
// the batch header on the partition plane, whose base offset the primary's
// journal append stamps (5.13 rule 3), one message per op.
func (r *run) payloadAt() int {
	if r.cfg.PartitionPlane {
		return wire.BatchHeaderSize
	}
	return 0
}

func (r *run) operation() wire.Operation {
	if r.cfg.PartitionPlane {
		return wire.OpSendMessages
	}
	return wire.OpCreateStream
}

// drive is the shell: journal, send, apply, until the core is quiet.
func (g *group) drive(i int) {
	r := g.r
	rp := g.reps[i]
	for rp.core.HasReady() {
		rd := rp.core.Ready()
		if rd.State != nil {
			rp.state = *rd.State // the superblock write, durable before any send
			rp.core.StatePersisted()
		}
		if rd.Truncate != 0 {
			for op := rd.Truncate; op <= rp.lastJournaled; op++ {
				delete(rp.journal, op)
			}
			rp.lastJournaled = min(rp.lastJournaled, rd.Truncate-1)
		}
		for _, f := range rd.Journal {
			op := wire.HeaderOf(f).Prepare().Op
			if r.cfg.PartitionPlane && rp.core.Leading() && wire.HeaderOf(f).Prepare().Operation != wire.OpReconfigure { // an R has no batch
				binary.LittleEndian.PutUint64(f[wire.HeaderSize+wire.BatchBaseOffsetOffset:], op-1)
				binary.LittleEndian.PutUint32(f[wire.HeaderSize+wire.BatchMessageCountOffset:], 1)
			}
			if op > max(rp.lastJournaled, rp.core.CommitMin())+1 {
				r.violate(fmt.Sprintf("%sreplica %d journal handed op %d above a hole (last %d, commit %d)", g.name(), i, op, rp.lastJournaled, rp.core.CommitMin()))
			}
			if r.faults && r.rng.Float64() < r.cfg.JournalFailProbability {
				rp.lastJournaled = op - 1
				rp.core.Journaled(op, errInjected)
				r.res.JournalFailures++
				break // as the node's shells do: the core truncated the rest
			}
			rp.lastJournaled = op
			rp.journal[op] = f
			rp.core.Journaled(op, nil)
			rp.journalHead = rp.core.JournalHeadAfter(op) // recorded before the sends below acknowledge it
		}
		for _, e := range rd.Send {
			g.checkActs(i, e.Head)
			if r.cfg.dropRepairRequests && wire.HeaderOf(e.Head).Command() == wire.CmdRequestPrepares {
				continue
			}
			r.net.send(r.now, i, int(e.To), append(append([]byte(nil), e.Head...), e.Body...))
		}
		for _, q := range rd.Quiet {
			r.nodes[i].live.Post(g.id, q)
		}
		for _, c := range rd.Commit {
			g.apply(i, c)
		}
		for _, t := range append(rd.Canceled, rd.Rejected...) {
			if cl, ok := t.(*call); ok {
				cl.pending = false // resubmitted by the client loop
			}
		}
		if g.idx == 0 {
			r.trace.ready(i, rd)
		}
	}
	g.maybeStartTransfer(i)
	g.reschedule(i)
}

func (g *group) apply(i int, c vsr.Committed) {
	r := g.r
	rp := g.reps[i]
	frame := c.Frame
	if r.cfg.Corrupt != nil {
		frame = append([]byte(nil), frame...)
		r.cfg.Corrupt(i, c.Op, frame)
	}
	if r.cfg.PartitionPlane && c.Op <= uint64(len(rp.applied)) {
		// Repaired past a restart: the segments hold it already (the
		// shell's alreadyStored); it must be the same op.
		if !sameOp(rp.applied[c.Op-1].frame, frame) {
			r.violate(fmt.Sprintf("%sreplica %d repaired op %d differs from the one it stored", g.name(), i, c.Op))
		}
		return
	}
	g.checkApplier(i, c.Op)
	if want := uint64(len(rp.applied)) + 1; c.Op != want {
		r.violate(fmt.Sprintf("%sreplica %d applied op %d after %d ops", g.name(), i, c.Op, want-1))
		return
	}
	ph := wire.HeaderOf(frame).Prepare()
	if n := len(rp.applied); n > 0 {
		prev := wire.HeaderOf(rp.applied[n-1].frame).Prepare()
		// A zero parent is the spec's unsealed link (replica-plane.md 2.5
		// rule 3: a zero identity suspends the check): a primary whose
		// head came by state transfer, which does not carry the head's
		// identity, with no DVC naming it either, builds the next op on a
		// zero parent (seeds 332384, 405416 with 5 replicas). The ops
		// themselves are still checked against every other replica's.
		if ph.Parent != prev.Checksum && !ph.Parent.IsZero() {
			r.violate(fmt.Sprintf("%sreplica %d op %d breaks the hash chain", g.name(), i, c.Op))
			return
		}
	}
	if canon, ok := g.canon[c.Op]; !ok {
		g.canon[c.Op] = frame
	} else if !sameOp(canon, frame) {
		r.violate(fmt.Sprintf("%sreplica %d applied a different op %d than another replica", g.name(), i, c.Op))
		return
	}
	if ph.Operation == wire.OpStoreConsumerOffset {
		// 11.5: a stored consumer offset never passes the committed high
		// watermark of the replica that stores it.
		if off, hw := binary.LittleEndian.Uint64(frame[wire.HeaderSize+r.payloadAt()+16:]), sendsIn(rp.applied); off > hw {
			r.violate(fmt.Sprintf("%sreplica %d stores offset %d above its high watermark %d at op %d", g.name(), i, off, hw, c.Op))
			return
		}
	}
	rp.applied = append(rp.applied, applied{op: c.Op, frame: frame})
	if g.appliedRoster(i, c.Op, frame) {
		return // a membership change, no client's request
	}
	if r.cfg.PartitionPlane {
		rp.core.SetOffsetFrontier(uint64(len(rp.applied))) // one message per op, as the shell reports
	}
	pos, seen := g.position[c.Op]
	if !seen {
		key := requestKey{client: ph.Client.Lo, request: ph.Request}
		if first, dup := g.firstOp[key]; dup {
			pos = g.position[first]
			r.res.Duplicates++
		} else {
			g.distinct++
			pos = g.distinct
			g.firstOp[key] = c.Op
		}
		g.position[c.Op] = pos
	}
	if cl, ok := c.Tag.(*call); ok {
		value := binary.LittleEndian.Uint64(frame[wire.HeaderSize+r.payloadAt():])
		switch {
		case value != cl.value:
			r.violate(fmt.Sprintf("client %d request %d answered with another client's op", cl.client, cl.request))
		case cl.done && cl.index != pos:
			r.violate(fmt.Sprintf("client %d request %d answered twice with different results (%d, %d)", cl.client, cl.request, cl.index, pos))
		case !cl.done:
			cl.done, cl.pending, cl.retAt, cl.index = true, false, r.now, pos
			r.res.Completed++
			r.clients[cl.client].inflight = nil
		}
	}
}

// sendsIn counts the messages (one per SendMessages op) in applied ops.
func sendsIn(ops []applied) uint64 {
	n := uint64(0)
	for _, a := range ops {
		if wire.HeaderOf(a.frame).Prepare().Operation == wire.OpSendMessages {
			n++
		}
	}
	return n
}

// sameOp: the same prepare, whichever view last carried it: the same
// identity (which covers every header field but view, 2.2) and body.
func sameOp(a, b []byte) bool {
	return wire.HeaderOf(a).Prepare().Checksum == wire.HeaderOf(b).Prepare().Checksum &&
		string(a[wire.HeaderSize:]) == string(b[wire.HeaderSize:])
}

// checkAcknowledgedKept is 11.5 rule 1 at the end: every answered
// request's value is in the log every replica applied, at the position it
// was answered with.
func (g *group) checkAcknowledgedKept() {
	r := g.r
	for _, cl := range r.calls {
		if !cl.done || cl.group != g.idx {
			continue
		}
		op, ok := g.firstOp[requestKey{client: uint64(cl.client) + 1, request: cl.request}]
		if !ok || g.position[op] != cl.index {
			r.violate(fmt.Sprintf("%sclient %d request %d was acknowledged at position %d and lost", g.name(), cl.client, cl.request, cl.index))
			return
		}
		for i, rp := range g.reps {
			if g.plan != nil && !rp.core.Member() {
				continue // removed (it applied up to its removal), or never a member
			}
			if uint64(len(rp.applied)) < op {
				r.violate(fmt.Sprintf("%sreplica %d lacks acknowledged op %d", g.name(), i, op))
				return
			}
		}
	}
}

// checkTick: 11.5 rules 1, 2 and 7 (commit and view never go back, no
// replica beyond the primary), one primary per view, and the invariants
// of quiescence.
func (r *run) checkTick() {
	r.trace.observe()
	for _, g := range r.groups {
		g.checkTick()
	}
}

func (g *group) checkTick() {
	r := g.r
	primaries := map[uint32]int{}
	for i, rp := range g.reps {
		c, v := rp.core.CommitMin(), rp.core.View()
		if c < rp.commit {
			r.violate(fmt.Sprintf("%sreplica %d commit went back from %d to %d", g.name(), i, rp.commit, c))
		}
		if v < rp.view {
			r.violate(fmt.Sprintf("%sreplica %d view went back from %d to %d", g.name(), i, rp.view, v))
		}
		rp.commit, rp.view = c, v
		if n := rp.core.ViewsStarted + rp.core.ViewsAdopted; n != rp.viewChanges {
			rp.viewChanges = n
			r.event(i, "%snormal in view %d (%s, commit %d/%d, head %d)", g.name(), v, map[bool]string{true: "primary", false: "backup"}[rp.core.IsPrimary()], c, rp.core.CommitMax(), rp.core.Op())
		}
		if rp.core.Repairs != rp.repairs {
			rp.repairs = rp.core.Repairs
			r.event(i, "%srepair session opened at commit %d of %d", g.name(), c, rp.core.CommitMax())
		}
		if c > rp.core.CommitMax() {
			r.violate(fmt.Sprintf("%sreplica %d commit_min %d above commit_max %d", g.name(), i, c, rp.core.CommitMax()))
		}
		if rp.core.Leading() {
			if other, ok := primaries[v]; ok && other != i {
				r.violate(fmt.Sprintf("%sreplicas %d and %d both primary in view %d", g.name(), other, i, v))
			}
			primaries[v] = i
		}
		if broken := rp.core.QuietCheck(); broken != "" {
			r.violate(fmt.Sprintf("%sreplica %d: %s", g.name(), i, broken))
		}
	}
	g.checkConfirmations()
}

// checkConfirmations: a quiet primary counts a backup's confirmation only
// of its own point, which that backup, in that view, has applied: a quiet
// group never misses a commit.
func (g *group) checkConfirmations() {
	for p, prim := range g.reps {
		if prim.down || !prim.core.Quiet() || !prim.core.Leading() {
			continue
		}
		for b, rp := range g.reps {
			if b == p || rp.down || !prim.core.QuietConfirmed(uint8(b)) || rp.core.View() != prim.core.View() || rp.core.Status() != vsr.StatusNormal {
				continue
			}
			if rp.core.CommitMin() != prim.core.CommitMin() {
				g.r.violate(fmt.Sprintf("%sreplica %d confirmed quiet at commit %d, the quiet primary %d stands at %d",
					g.name(), b, rp.core.CommitMin(), p, prim.core.CommitMin()))
			}
		}
	}
}

// quiet: every request answered, and in every group one leader with every
// replica normal in its view and at its commit point, and quiet where
// groups quiesce.
func (r *run) quiet() bool {
	for _, c := range r.clients {
		if c.inflight != nil {
			return false
		}
	}
	for _, g := range r.groups {
		if !g.settled() {
			return false
		}
	}
	return true
}

func (r *run) livenessReport() string {
	var b strings.Builder
	fmt.Fprintf(&b, "liveness: not quiet %d ticks after healing:", r.settleIn)
	for _, g := range r.groups {
		if len(r.groups) > 1 && g.settled() {
			continue
		}
		b.WriteString(" " + g.name())
		for i, rp := range g.reps {
			fmt.Fprintf(&b, " r%d %s view %d commit %d/%d op %d", i, rp.core.Status(), rp.core.View(), rp.core.CommitMin(), rp.core.CommitMax(), rp.core.Op())
			if g.plan != nil {
				fmt.Fprintf(&b, " %v removed %v", rp.core.Roster(), rp.core.Removed())
			}
			if r.cfg.Quiesce {
				fmt.Fprintf(&b, " quiet %v", rp.core.Quiet())
			}
			b.WriteString(";")
		}
		for i, rp := range g.reps {
			if d := rp.core.Dropped; len(d) > 0 {
				fmt.Fprintf(&b, " r%d drops %v;", i, d)
			}
		}
	}
	open := 0
	for _, c := range r.clients {
		if c.inflight != nil {
			open++
		}
	}
	fmt.Fprintf(&b, " %d requests open", open)
	return b.String()
}

// settled reports whether g meets quiet()'s per-group condition: one
// leader, and every replica normal in its view at its commit point, and
// quiet where groups quiesce (settledMembers with a plan).
func (g *group) settled() bool {
	l := g.leader()
	if l < 0 {
		return false
	}
	if g.plan != nil {
		return g.settledMembers(l)
	}
	lead := g.reps[l].core
	for _, rp := range g.reps {
		if rp.core.CommitMin() != lead.CommitMin() || rp.core.View() != lead.View() || rp.core.Status() != vsr.StatusNormal ||
			g.r.cfg.Quiesce && !rp.core.Quiet() {
			return false
		}
	}
	return true
}
