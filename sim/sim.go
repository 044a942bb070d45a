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
	// JournalFailures counts injected journal append failures.
	JournalFailures int
	Net             NetStats
	Violations      []string
	Timeline        []Event
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
}

type call struct {
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
	reps    []*replica
	clients []*client
	calls   []*call
	now     int
	faults  bool
	res     Result
	// identity of each applied op, the first replica to apply it sets it
	canon map[uint64][]byte
	// position of each applied op's value in the deduplicated log (0: a
	// duplicate of an earlier op's request), and the op that first applied
	// each request
	position map[uint64]uint64
	firstOp  map[requestKey]uint64
	distinct uint64
	offers   map[offerKey]*simOffer
	trace    *tracer // nil unless Config.Trace
}

// Run simulates one seed and returns what happened. It never panics on a
// violation: violations are collected, and the run stops at the first.
func Run(cfg Config) (res Result) {
	cfg.setDefaults()
	r := &run{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		canon: make(map[uint64][]byte), position: make(map[uint64]uint64), firstOp: make(map[requestKey]uint64),
		offers: make(map[offerKey]*simOffer)}
	r.res.Seed = cfg.Seed
	r.trace = newTracer(r)
	r.net = newNetwork(cfg.Net, cfg.Replicas, r.rng)
	for i := 0; i < cfg.Replicas; i++ {
		r.reps = append(r.reps, &replica{core: vsr.New(r.coreConfig(i)), journal: make(map[uint64][]byte)})
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
	for _, rp := range r.reps {
		rp.down = false
	}
	end := cfg.FaultTicks + cfg.LivenessTicks
	for ; r.now <= end && !r.res.Failed(); r.now++ {
		r.step()
		if r.quiet() {
			break
		}
	}
	if !r.res.Failed() && !r.quiet() {
		r.violate(r.livenessReport())
	}
	// 11.5 rule 7, at quiescence: no replica beyond the leader. (A restarted
	// metadata backup recovers its whole journal as committed, as the node
	// does, so it may run ahead of the primary until the primary commits
	// those same ops.)
	if l := r.leader(); l >= 0 {
		for i, rp := range r.reps {
			if c := rp.core.CommitMin(); !r.res.Failed() && c > r.reps[l].core.CommitMin() {
				r.violate(fmt.Sprintf("replica %d committed %d, beyond the primary's %d", i, c, r.reps[l].core.CommitMin()))
			}
		}
	}
	if !r.res.Failed() {
		r.checkAcknowledgedKept()
	}
	if !r.res.Failed() {
		r.checkLinearizable()
	}
	return r.finish()
}

func (r *run) finish() Result {
	r.trace.close()
	r.res.Ticks = r.now
	r.res.Net = r.net.stats
	for _, rp := range r.reps {
		r.res.Committed = max(r.res.Committed, rp.core.CommitMin())
		r.res.Repairs += rp.core.Repairs
		r.res.ViewChanges = max(r.res.ViewChanges, uint64(rp.core.View()))
	}
	h := fnv.New64a()
	for _, e := range r.res.Timeline {
		fmt.Fprintln(h, e.String())
	}
	for _, rp := range r.reps {
		for _, a := range rp.applied {
			_ = binary.Write(h, binary.LittleEndian, a.op)
			h.Write(a.frame[:16])
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
		} else {
			r.event(-1, "partition healed")
		}
	}
	if r.faults {
		r.crashOrRestart()
	}
	r.submit()
	for i, rp := range r.reps {
		if !rp.down {
			rp.core.Tick()
			r.drive(i)
			r.tickTransfer(i)
		}
	}
	r.net.deliver(r.now, r.faults, func(i int) bool { return r.reps[i].down }, func(from, to int, frame []byte) {
		r.trace.delivered(from, to, frame)
		if c := wire.HeaderOf(frame).Command(); c >= wire.CmdRequestStateTransfer && c <= wire.CmdStateChunk {
			r.transferFrame(from, to, frame)
			return
		}
		r.reps[to].core.Step(frame)
		r.drive(to)
	})
	r.checkTick()
}

func (r *run) crashOrRestart() {
	var live, down []int
	faulty := 0
	for i, rp := range r.reps {
		if rp.amnesiac && !rp.down && rp.core.Status() == vsr.StatusNormal && rp.core.CommitMin() >= rp.catchUpTo &&
			rp.core.Op() >= rp.headAtCrash {
			rp.amnesiac = false
			r.event(i, "caught up after its restart")
		}
		switch {
		case rp.down:
			down = append(down, i)
			faulty++
		case rp.amnesiac:
			faulty++
		default:
			live = append(live, i)
		}
	}
	if r.cfg.ClusterCrashProbability > 0 && len(down) < len(r.reps) && r.rng.Float64() < r.cfg.ClusterCrashProbability {
		r.event(-1, "whole cluster down")
		for i, rp := range r.reps {
			if !rp.down {
				r.crash(i)
			}
		}
		return
	}
	maxFaulty := r.cfg.Replicas - vsr.QuorumReplication(r.cfg.Replicas)
	if len(live) > 0 && faulty < maxFaulty && r.rng.Float64() < r.cfg.CrashProbability {
		r.crash(live[r.rng.IntN(len(live))])
	}
	if len(down) > 0 && r.rng.Float64() < r.cfg.RestartProbability {
		r.bringUp(down[r.rng.IntN(len(down))])
	}
}

// crash takes replica i down.
func (r *run) crash(i int) {
	r.reps[i].down = true
	r.reps[i].headAtCrash = r.reps[i].core.Op()
	r.res.Crashes++
	r.event(i, "down (view %d, %s, commit %d)", r.reps[i].core.View(), r.reps[i].core.Status(), r.reps[i].core.CommitMin())
	if r.cfg.CrashLosesMemory {
		r.forgetPending(i)
	}
}

// forgetPending: the requests pending at replica i lost their subscriber
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

// bringUp returns a down replica to the network, restarted from its
// durable state when crashes lose memory.
func (r *run) bringUp(i int) {
	rp := r.reps[i]
	rp.down = false
	if !r.cfg.CrashLosesMemory {
		r.event(i, "up (view %d, commit %d)", rp.core.View(), rp.core.CommitMin())
		return
	}
	rp.core, rp.transfer = vsr.New(r.coreConfig(i)), nil
	rc := vsr.Recovery{View: rp.state.View, LogView: rp.state.LogView, CommitMax: rp.state.CommitMax, ViewHead: rp.state.ViewHead, ViewHeaders: rp.state.ViewHeaders,
		Incarnation: wire.U128{Lo: r.rng.Uint64(), Hi: r.rng.Uint64()}} // fresh at every boot (6.12 rule 2)
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
		rp.amnesiac = true
		for _, o := range r.reps {
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
		w = min(max(w, rp.snapshotOp), head)
		if uint64(len(rp.applied)) > w {
			rp.applied = rp.applied[:w] // the state machine is rebuilt from the journal
		}
		for op := uint64(len(rp.applied)) + 1; op <= w; op++ {
			r.apply(i, vsr.Committed{Op: op, Frame: rp.journal[op]})
		}
		rc.Commit = w
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
	r.drive(i)
	r.event(i, "restarted from durable state (view %d/%d, commit %d, head %d, serves repair from op %d)", rc.View, rc.LogView, rp.core.CommitMin(), rp.core.Op(), rp.core.OldestServable())
}

func (r *run) coreConfig(i int) vsr.Config {
	c := vsr.Config{Cluster: wire.U128{Lo: 0x51}, Group: r.group(), Replica: uint8(i),
		ReplicaCount: r.cfg.Replicas, Metadata: !r.cfg.PartitionPlane, PeerQueueCapacity: r.cfg.Net.Capacity, Seed: r.cfg.Seed + uint64(i)*7919 + 1, RetainOps: r.cfg.RetainOps}
	if !r.cfg.PartitionPlane {
		// The metadata journal is durable and read back, as the node does.
		c.ReadJournal = func(op uint64) []byte { return r.reps[i].journal[op] }
		c.JournalFloor = func() uint64 { return 1 }
	}
	return c
}

// leader is the live replica leading the highest view, or -1.
func (r *run) leader() int {
	best := -1
	for i, rp := range r.reps {
		if !rp.down && rp.core.Leading() && (best < 0 || rp.core.View() > r.reps[best].core.View()) {
			best = i
		}
	}
	return best
}

// requestTimeout is how long a client waits for an answer before it
// sends the request again (to whichever replica leads then).
const requestTimeout = 300

// submit lets idle clients send their next request to the leader, and
// clients whose request went unanswered send it again.
func (r *run) submit() {
	l := r.leader()
	for ci, c := range r.clients {
		if c.inflight == nil {
			if !r.faults || r.rng.Float64() >= r.cfg.SubmitProbability {
				continue // the liveness phase drains what is in flight
			}
			c.inflight = &call{client: ci, request: c.next, value: uint64(ci)<<32 | c.next, callAt: r.now,
				storeOffset: r.cfg.PartitionPlane && r.rng.Float64() < 0.2}
			c.next++
			r.calls = append(r.calls, c.inflight)
			r.res.Submitted++
		}
		cl := c.inflight
		if cl.pending && r.now-cl.sentAt > requestTimeout {
			cl.pending = false
		}
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
			off := sendsIn(r.reps[l].applied)
			if r.cfg.offsetAhead {
				off++
			}
			binary.LittleEndian.PutUint64(body[r.payloadAt()+16:], off)
		}
		frame := append(make([]byte, wire.HeaderSize), body...)
		err := r.reps[l].core.Submit(vsr.Request{Client: wire.U128{Lo: uint64(ci) + 1}, Request: cl.request,
			Operation: op, Frame: frame, Tag: cl}, uint64(r.now)*10_000)
		if err == nil {
			cl.pending, cl.at, cl.sentAt = true, l, r.now
			r.drive(l)
		}
	}
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

// group and operation are those of the simulated plane.
func (r *run) group() uint64 {
	if r.cfg.PartitionPlane {
		g, _ := wire.PartitionGroup(1, 2, 3)
		return g
	}
	return wire.MetadataGroup
}

func (r *run) operation() wire.Operation {
	if r.cfg.PartitionPlane {
		return wire.OpSendMessages
	}
	return wire.OpCreateStream
}

// drive is the shell: journal, send, apply, until the core is quiet.
func (r *run) drive(i int) {
	rp := r.reps[i]
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
			if r.cfg.PartitionPlane && rp.core.Leading() {
				binary.LittleEndian.PutUint64(f[wire.HeaderSize+wire.BatchBaseOffsetOffset:], op-1)
				binary.LittleEndian.PutUint32(f[wire.HeaderSize+wire.BatchMessageCountOffset:], 1)
			}
			if op > max(rp.lastJournaled, rp.core.CommitMin())+1 {
				r.violate(fmt.Sprintf("replica %d journal handed op %d above a hole (last %d, commit %d)", i, op, rp.lastJournaled, rp.core.CommitMin()))
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
			if r.cfg.dropRepairRequests && wire.HeaderOf(e.Head).Command() == wire.CmdRequestPrepares {
				continue
			}
			r.net.send(r.now, i, int(e.To), append(append([]byte(nil), e.Head...), e.Body...))
		}
		for _, c := range rd.Commit {
			r.apply(i, c)
		}
		for _, t := range rd.Canceled {
			if cl, ok := t.(*call); ok {
				cl.pending = false // resubmitted by the client loop
			}
		}
		r.trace.ready(i, rd)
	}
	r.maybeStartTransfer(i)
}

func (r *run) apply(i int, c vsr.Committed) {
	rp := r.reps[i]
	frame := c.Frame
	if r.cfg.Corrupt != nil {
		frame = append([]byte(nil), frame...)
		r.cfg.Corrupt(i, c.Op, frame)
	}
	if r.cfg.PartitionPlane && c.Op <= uint64(len(rp.applied)) {
		// Repaired past a restart: the segments hold it already (the
		// shell's alreadyStored); it must be the same op.
		if !sameOp(rp.applied[c.Op-1].frame, frame) {
			r.violate(fmt.Sprintf("replica %d repaired op %d differs from the one it stored", i, c.Op))
		}
		return
	}
	if want := uint64(len(rp.applied)) + 1; c.Op != want {
		r.violate(fmt.Sprintf("replica %d applied op %d after %d ops", i, c.Op, want-1))
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
			r.violate(fmt.Sprintf("replica %d op %d breaks the hash chain", i, c.Op))
			return
		}
	}
	if canon, ok := r.canon[c.Op]; !ok {
		r.canon[c.Op] = frame
	} else if !sameOp(canon, frame) {
		r.violate(fmt.Sprintf("replica %d applied a different op %d than another replica", i, c.Op))
		return
	}
	if ph.Operation == wire.OpStoreConsumerOffset {
		// 11.5: a stored consumer offset never passes the committed high
		// watermark of the replica that stores it.
		if off, hw := binary.LittleEndian.Uint64(frame[wire.HeaderSize+r.payloadAt()+16:]), sendsIn(rp.applied); off > hw {
			r.violate(fmt.Sprintf("replica %d stores offset %d above its high watermark %d at op %d", i, off, hw, c.Op))
			return
		}
	}
	rp.applied = append(rp.applied, applied{op: c.Op, frame: frame})
	if r.cfg.PartitionPlane {
		rp.core.SetOffsetFrontier(uint64(len(rp.applied))) // one message per op, as the shell reports
	}
	pos, seen := r.position[c.Op]
	if !seen {
		key := requestKey{client: ph.Client.Lo, request: ph.Request}
		if first, dup := r.firstOp[key]; dup {
			pos = r.position[first]
		} else {
			r.distinct++
			pos = r.distinct
			r.firstOp[key] = c.Op
		}
		r.position[c.Op] = pos
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
func (r *run) checkAcknowledgedKept() {
	for _, cl := range r.calls {
		if !cl.done {
			continue
		}
		op, ok := r.firstOp[requestKey{client: uint64(cl.client) + 1, request: cl.request}]
		if !ok || r.position[op] != cl.index {
			r.violate(fmt.Sprintf("client %d request %d was acknowledged at position %d and lost", cl.client, cl.request, cl.index))
			return
		}
		for i, rp := range r.reps {
			if uint64(len(rp.applied)) < op {
				r.violate(fmt.Sprintf("replica %d lacks acknowledged op %d", i, op))
				return
			}
		}
	}
}

// checkTick: 11.5 rules 1, 2 and 7 (commit and view never go back, no
// replica beyond the primary), and one primary per view.
func (r *run) checkTick() {
	r.trace.observe()
	primaries := map[uint32]int{}
	for i, rp := range r.reps {
		c, v := rp.core.CommitMin(), rp.core.View()
		if c < rp.commit {
			r.violate(fmt.Sprintf("replica %d commit went back from %d to %d", i, rp.commit, c))
		}
		if v < rp.view {
			r.violate(fmt.Sprintf("replica %d view went back from %d to %d", i, rp.view, v))
		}
		rp.commit, rp.view = c, v
		if n := rp.core.ViewsStarted + rp.core.ViewsAdopted; n != rp.viewChanges {
			rp.viewChanges = n
			r.event(i, "normal in view %d (%s, commit %d/%d, head %d)", v, map[bool]string{true: "primary", false: "backup"}[rp.core.IsPrimary()], c, rp.core.CommitMax(), rp.core.Op())
		}
		if rp.core.Repairs != rp.repairs {
			rp.repairs = rp.core.Repairs
			r.event(i, "repair session opened at commit %d of %d", c, rp.core.CommitMax())
		}
		if c > rp.core.CommitMax() {
			r.violate(fmt.Sprintf("replica %d commit_min %d above commit_max %d", i, c, rp.core.CommitMax()))
		}
		if rp.core.Leading() {
			if other, ok := primaries[v]; ok && other != i {
				r.violate(fmt.Sprintf("replicas %d and %d both primary in view %d", other, i, v))
			}
			primaries[v] = i
		}
	}
}

// quiet: every request answered, one leader, every replica normal in its
// view and at its commit point.
func (r *run) quiet() bool {
	for _, c := range r.clients {
		if c.inflight != nil {
			return false
		}
	}
	l := r.leader()
	if l < 0 {
		return false
	}
	lead := r.reps[l].core
	for _, rp := range r.reps {
		if rp.core.CommitMin() != lead.CommitMin() || rp.core.View() != lead.View() || rp.core.Status() != vsr.StatusNormal {
			return false
		}
	}
	return true
}

func (r *run) livenessReport() string {
	var b strings.Builder
	fmt.Fprintf(&b, "liveness: not quiet %d ticks after healing:", r.cfg.LivenessTicks)
	for i, rp := range r.reps {
		fmt.Fprintf(&b, " r%d %s view %d commit %d/%d op %d;", i, rp.core.Status(), rp.core.View(), rp.core.CommitMin(), rp.core.CommitMax(), rp.core.Op())
	}
	open := 0
	for _, c := range r.clients {
		if c.inflight != nil {
			open++
		}
	}
	fmt.Fprintf(&b, " %d requests open", open)
	for i, rp := range r.reps {
		if d := rp.core.Dropped; len(d) > 0 {
			fmt.Fprintf(&b, "; r%d drops %v", i, d)
		}
	}
	return b.String()
}
