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
	// CrashProbability: each tick of the fault phase, one live backup goes
	// down (all its links cut, its timers stopped), never more than the
	// quorum allows. RestartProbability: each tick, a down backup comes back
	// with its state (see the package doc for why it is not wiped).
	CrashProbability   float64
	RestartProbability float64
	// CrashLosesMemory: a backup that comes back restarts from what it
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
	// dropRepairRequests loses every RequestPrepares (tests of the
	// liveness check).
	dropRepairRequests bool
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
	// JournalFailures counts injected journal append failures.
	JournalFailures int
	Net             NetStats
	Violations      []string
	// NeedsTransfer: the run ended with a replica that cannot be repaired
	// (the ring no longer holds what it lacks) and said so; state transfer
	// would take over. Not a violation, since the node has no transfer yet.
	NeedsTransfer bool
	Timeline      []Event
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
	core    *vsr.Replica
	down    bool
	journal map[uint64][]byte // the durable journal the shell keeps
	applied []applied
	commit  uint64 // last commit_min seen, for monotonicity
	view    uint32
	repairs uint64 // repair sessions seen, for the timeline
	// lastJournaled is the highest op handed to the journal: a partition
	// shell checks each batch against its next offset, so the journal
	// must never be handed an op above a hole.
	lastJournaled uint64
}

type call struct {
	client  int
	request uint64
	value   uint64
	callAt  int
	done    bool
	retAt   int
	index   uint64 // the primary's position of the op (its apply count)
	pending bool   // submitted to the core, waiting for the commit
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
}

// Run simulates one seed and returns what happened. It never panics on a
// violation: violations are collected, and the run stops at the first.
func Run(cfg Config) (res Result) {
	cfg.setDefaults()
	r := &run{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		canon: make(map[uint64][]byte)}
	r.res.Seed = cfg.Seed
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
		if r.stuckOnTransfer() {
			r.res.NeedsTransfer = true
			r.event(-1, "not quiet: %s", r.livenessReport())
		} else {
			r.violate(r.livenessReport())
		}
	}
	// 11.5 rule 7, at quiescence: no replica beyond the leader. (A restarted
	// metadata backup recovers its whole journal as committed, as the node
	// does, so it may run ahead of the primary until the primary commits
	// those same ops.)
	for i, rp := range r.reps {
		if c := rp.core.CommitMin(); !r.res.Failed() && c > r.reps[0].core.CommitMin() {
			r.violate(fmt.Sprintf("replica %d committed %d, beyond the primary's %d", i, c, r.reps[0].core.CommitMin()))
		}
	}
	if !r.res.Failed() {
		r.checkLinearizable()
	}
	return r.finish()
}

func (r *run) finish() Result {
	r.res.Ticks = r.now
	r.res.Net = r.net.stats
	r.res.Committed = r.reps[0].core.CommitMin()
	for _, rp := range r.reps {
		r.res.Repairs += rp.core.Repairs
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
		}
	}
	r.net.deliver(r.now, r.faults, func(i int) bool { return r.reps[i].down }, func(from, to int, frame []byte) {
		r.reps[to].core.Step(frame)
		r.drive(to)
	})
	r.checkTick()
}

func (r *run) crashOrRestart() {
	var live, down []int
	for i, rp := range r.reps {
		if i == 0 {
			continue // the primary of view 0: without view change it must stay
		}
		if rp.down {
			down = append(down, i)
		} else {
			live = append(live, i)
		}
	}
	maxDown := r.cfg.Replicas - vsr.QuorumReplication(r.cfg.Replicas)
	if len(live) > 0 && len(down) < maxDown && r.rng.Float64() < r.cfg.CrashProbability {
		i := live[r.rng.IntN(len(live))]
		r.reps[i].down = true
		r.res.Crashes++
		r.event(i, "down")
	}
	if len(down) > 0 && r.rng.Float64() < r.cfg.RestartProbability {
		r.bringUp(down[r.rng.IntN(len(down))])
	}
}

// bringUp returns a down backup to the network, restarted from its
// durable state when crashes lose memory.
func (r *run) bringUp(i int) {
	rp := r.reps[i]
	rp.down = false
	if !r.cfg.CrashLosesMemory {
		r.event(i, "up (commit %d, primary at %d)", rp.core.CommitMin(), r.reps[0].core.CommitMin())
		return
	}
	rp.core = vsr.New(r.coreConfig(i))
	if r.cfg.PartitionPlane {
		// The segments hold every applied batch; the journal was memory.
		rp.core.SetOffsetFrontier(uint64(len(rp.applied)))
		rp.journal, rp.lastJournaled = make(map[uint64][]byte), 0
	} else {
		// The metadata journal is durable: everything journaled is
		// recovered as committed (a cluster of one's recovery; without view
		// change the primary commits those same ops) and replayed.
		var head uint64
		for head = uint64(len(rp.applied)); rp.journal[head+1] != nil; head++ {
			r.apply(i, vsr.Committed{Op: head + 1, Frame: rp.journal[head+1]})
		}
		if head > 0 {
			ph := wire.HeaderOf(rp.journal[head]).Prepare()
			rp.core.Restore(0, 0, head, ph.Checksum, ph.Timestamp)
		}
		rp.lastJournaled = head
	}
	rp.commit = rp.core.CommitMin()
	r.event(i, "restarted from durable state (commit %d, primary at %d)", rp.core.CommitMin(), r.reps[0].core.CommitMin())
}

func (r *run) coreConfig(i int) vsr.Config {
	c := vsr.Config{Cluster: wire.U128{Lo: 0x51}, Group: r.group(), Replica: uint8(i),
		ReplicaCount: r.cfg.Replicas, Metadata: !r.cfg.PartitionPlane, Seed: r.cfg.Seed + uint64(i)*7919 + 1, RetainOps: r.cfg.RetainOps}
	if !r.cfg.PartitionPlane {
		// The metadata journal is durable and read back, as the node does.
		c.ReadJournal = func(op uint64) []byte { return r.reps[i].journal[op] }
		c.JournalFloor = func() uint64 { return 1 }
	}
	return c
}

// submit lets idle clients send their next request to the primary.
func (r *run) submit() {
	primary := r.reps[0]
	for ci, c := range r.clients {
		if c.inflight == nil {
			if !r.faults || r.rng.Float64() >= r.cfg.SubmitProbability {
				continue // the liveness phase drains what is in flight
			}
			c.inflight = &call{client: ci, request: c.next, value: uint64(ci)<<32 | c.next, callAt: r.now}
			c.next++
			r.calls = append(r.calls, c.inflight)
			r.res.Submitted++
		}
		cl := c.inflight
		if cl.pending || primary.down {
			continue
		}
		body := make([]byte, r.payloadAt()+16+r.rng.IntN(48))
		binary.LittleEndian.PutUint64(body[r.payloadAt():], cl.value)
		binary.LittleEndian.PutUint64(body[r.payloadAt()+8:], cl.request)
		frame := append(make([]byte, wire.HeaderSize), body...)
		err := primary.core.Submit(vsr.Request{Client: wire.U128{Lo: uint64(ci) + 1}, Request: cl.request,
			Operation: r.operation(), Frame: frame, Tag: cl}, uint64(r.now)*10_000)
		if err == nil {
			cl.pending = true
			r.drive(0)
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
		for _, f := range rd.Journal {
			op := wire.HeaderOf(f).Prepare().Op
			if r.cfg.PartitionPlane && rp.core.IsPrimary() {
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
	}
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
		if string(rp.applied[c.Op-1].frame) != string(frame) {
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
		if ph.Parent != prev.Checksum {
			r.violate(fmt.Sprintf("replica %d op %d breaks the hash chain", i, c.Op))
			return
		}
	}
	if canon, ok := r.canon[c.Op]; !ok {
		r.canon[c.Op] = frame
	} else if string(canon) != string(frame) {
		r.violate(fmt.Sprintf("replica %d applied a different op %d than another replica", i, c.Op))
		return
	}
	rp.applied = append(rp.applied, applied{op: c.Op, frame: frame})
	if r.cfg.PartitionPlane {
		rp.core.SetOffsetFrontier(uint64(len(rp.applied))) // one message per op, as the shell reports
	}
	if cl, ok := c.Tag.(*call); ok {
		if i != 0 {
			r.violate(fmt.Sprintf("replica %d answered a request it did not admit", i))
			return
		}
		if cl.done {
			r.violate(fmt.Sprintf("client %d request %d answered twice", cl.client, cl.request))
			return
		}
		value := binary.LittleEndian.Uint64(frame[wire.HeaderSize+r.payloadAt():])
		if value != cl.value {
			r.violate(fmt.Sprintf("client %d request %d answered with another client's op", cl.client, cl.request))
			return
		}
		cl.done, cl.pending, cl.retAt, cl.index = true, false, r.now, c.Op
		r.res.Completed++
		r.clients[cl.client].inflight = nil
	}
}

// checkTick: 11.5 rules 1, 2 and 7 (commit and view never go back, no
// replica beyond the primary), and one primary per view.
func (r *run) checkTick() {
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
		if rp.core.Repairs != rp.repairs {
			rp.repairs = rp.core.Repairs
			r.event(i, "repair session opened at commit %d of %d", c, rp.core.CommitMax())
		}
		if c > rp.core.CommitMax() {
			r.violate(fmt.Sprintf("replica %d commit_min %d above commit_max %d", i, c, rp.core.CommitMax()))
		}
		if rp.core.IsPrimary() && rp.core.Status() == vsr.StatusNormal {
			if other, ok := primaries[v]; ok && other != i {
				r.violate(fmt.Sprintf("replicas %d and %d both primary in view %d", other, i, v))
			}
			primaries[v] = i
		}
	}
}

// quiet: every request answered, every replica applied the primary's ops.
func (r *run) quiet() bool {
	for _, c := range r.clients {
		if c.inflight != nil {
			return false
		}
	}
	head := r.reps[0].core.CommitMin()
	for _, rp := range r.reps {
		if rp.core.CommitMin() != head {
			return false
		}
	}
	return true
}

// stuckOnTransfer: every request is answered, and every replica behind
// the primary lacks ops the primary can no longer serve (its ring starts
// above them, and the replica's stored batches end below that): only
// state transfer could bring it back.
func (r *run) stuckOnTransfer() bool {
	for _, c := range r.clients {
		if c.inflight != nil {
			return false
		}
	}
	primary := r.reps[0].core
	for _, rp := range r.reps[1:] {
		if c := rp.core.CommitMin(); c != primary.CommitMin() && primary.OldestServable() <= c+1 {
			return false
		}
	}
	return true
}

func (r *run) livenessReport() string {
	var b strings.Builder
	fmt.Fprintf(&b, "liveness: not quiet %d ticks after healing:", r.cfg.LivenessTicks)
	for i, rp := range r.reps {
		fmt.Fprintf(&b, " r%d commit %d/%d op %d;", i, rp.core.CommitMin(), rp.core.CommitMax(), rp.core.Op())
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
