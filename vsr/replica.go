package vsr

import (
	"errors"
	"fmt"

	"iggynode/wire"
)

// Status is the replica's protocol status (replica-plane.md 6.1).
type Status uint8

const (
	StatusNormal Status = iota
	StatusViewChange
	StatusRecovering
)

func (s Status) String() string {
	switch s {
	case StatusNormal:
		return "normal"
	case StatusViewChange:
		return "view_change"
	case StatusRecovering:
		return "recovering"
	}
	return fmt.Sprintf("Status(%d)", uint8(s))
}

// Config configures one group's replica. Durations are in 10 ms ticks (4.7).
type Config struct {
	Cluster      wire.U128
	Group        uint64
	Replica      uint8
	ReplicaCount int
	// PrepareQueueDepth bounds uncommitted prepares (5.2); the request queue
	// holds twice as many. Default 32, at most 127.
	PrepareQueueDepth int
	// Metadata selects the metadata plane's body seal rule (2.3).
	Metadata               bool
	PrepareRetransmitTicks int // default 25
	CommitBroadcastTicks   int // default 50
	HeartbeatTimeoutTicks  int // default 500
	RepairRetryTicks       int // default 100 (cluster.repair_retry_interval)
	// RepairChunk is cluster.repair_chunk_max (128), the ops served per
	// RequestPrepares.
	RepairChunk int
	// RetainOps and RetainBytes bound the committed prepares kept for
	// serving repair (defaults 4096 and 16 MiB, 5.13 rule 6).
	RetainOps   int
	RetainBytes int
	// ReadJournal, if set, reads back a committed prepare the ring no
	// longer holds, for serving repair: the metadata plane serves from its
	// journal down to JournalFloor (snapshot_op + 1, 7.3 rules 3-6).
	ReadJournal  func(op uint64) []byte
	JournalFloor func() uint64
	// Seed makes the retransmission jitter deterministic.
	Seed uint64
}

func (c *Config) setDefaults() {
	if c.ReplicaCount == 0 {
		c.ReplicaCount = 1
	}
	if c.PrepareQueueDepth == 0 {
		c.PrepareQueueDepth = 32
	}
	if c.PrepareRetransmitTicks == 0 {
		c.PrepareRetransmitTicks = 25
	}
	if c.CommitBroadcastTicks == 0 {
		c.CommitBroadcastTicks = 50
	}
	if c.HeartbeatTimeoutTicks == 0 {
		c.HeartbeatTimeoutTicks = 500
	}
	if c.RepairRetryTicks == 0 {
		c.RepairRetryTicks = 100
	}
	if c.RepairChunk == 0 {
		c.RepairChunk = 128
	}
	if c.RetainOps == 0 {
		c.RetainOps = 4096
	}
	if c.RetainBytes == 0 {
		c.RetainBytes = 16 << 20
	}
}

// Errors returned by Submit. Both mean "not admitted; re-issue elsewhere or
// later" and map to TransientNotAccepted (58) for clients.
var (
	ErrNotPrimary = errors.New("vsr: not the primary in normal status")
	ErrBusy       = errors.New("vsr: prepare and request queues full")
)

// Request is what the shell admits at the primary. Frame holds 256 bytes of
// scratch space for the prepare header followed by the prepare body, so the
// body is never copied: the shell reads the client frame into one buffer and
// hands the core the tail of it.
type Request struct {
	Client          wire.U128
	Request         uint64
	RequestChecksum wire.U128
	Operation       wire.Operation
	Release         uint32
	UserID          uint32
	Frame           []byte
	// Tag is returned with the commit on this replica (a reply subscriber).
	Tag any
}

// Committed is one op to apply, in op order.
type Committed struct {
	Op    uint64
	Frame []byte // the journaled prepare frame: header + body
	Tag   any    // the Request.Tag on the primary that admitted it, else nil
}

// Envelope is a frame to send to one replica: Head is a fresh 256-byte
// header, Body the (shared, read-only) body bytes.
type Envelope struct {
	To   uint8
	Head []byte
	Body []byte
}

// Ready is what the shell must do after a call into the core.
type Ready struct {
	// Journal holds prepare frames to append, in op order; report each with
	// Journaled. The shell may stamp partition batches in place first.
	Journal [][]byte
	// Send holds frames for other replicas (never for this one).
	Send []Envelope
	// Commit holds ops to apply, in op order, each exactly once.
	Commit []Committed
	// Canceled holds tags of admitted requests whose outcome is unknown
	// (TransientNotCommitted for the client).
	Canceled []any
}

type entry struct {
	frame     []byte
	hdr       wire.PrepareHeader
	journaled bool
	acks      uint32
	quorum    bool
	repaired  bool // arrived as a RepairPrepare: never acked or forwarded
	emitted   bool // a repaired entry handed to the shell's journal
	tag       any
}

// Replica is one group's VSR state machine. It is not safe for concurrent
// use: its actor owns it.
type Replica struct {
	cfg    Config
	status Status

	view, logView     uint32
	sequencer         uint64
	commitMin         uint64
	commitMax         uint64
	lastChecksum      wire.U128
	lastTimestamp     uint64
	nowUs             uint64
	heartbeat         uint64
	observedNewerView uint32
	committedChecksum wire.U128

	log   map[uint64]*entry // uncommitted ops, commitMin < op <= sequencer
	queue []Request         // admitted requests waiting for a prepare slot

	prepareTimer   timer
	commitTimer    timer
	heartbeatTimer timer
	rng            uint64

	repair   repairSession
	retained retained
	// repairBackoff counts down the ticks before a refused repair may
	// open again; refusedInARow doubles it.
	repairBackoff, refusedInARow int
	// offsetFrontier is a partition group's durable offset frontier
	// (SetOffsetFrontier).
	offsetFrontier uint64

	ready Ready
	// Dropped counts peer frames dropped, by reason (13.5).
	Dropped map[string]uint64
	// Repairs counts repair sessions opened; RepairsRefused those ended
	// because the server no longer holds what this replica lacks (state
	// transfer's case).
	Repairs, RepairsRefused uint64
}

// New returns a fresh replica in view 0, Normal (replica-plane.md 5.1).
func New(cfg Config) *Replica {
	cfg.setDefaults()
	r := &Replica{cfg: cfg, log: make(map[uint64]*entry), rng: cfg.Seed | 1, Dropped: make(map[string]uint64)}
	r.commitTimer.after = cfg.CommitBroadcastTicks
	r.heartbeatTimer.after = cfg.HeartbeatTimeoutTicks
	r.prepareTimer.after = cfg.PrepareRetransmitTicks
	r.enterNormal()
	return r
}

// Restore sets the recovered durable state of a single-replica group (9.3
// steps 4-6 with replica_count 1): everything journaled is committed.
func (r *Replica) Restore(view, logView uint32, head uint64, headChecksum wire.U128, headTimestamp uint64) {
	assert(r.sequencer == 0 && len(r.log) == 0, "restore on a fresh replica")
	assert(logView <= view, "view >= log_view")
	r.view, r.logView = view, logView
	r.sequencer, r.commitMin, r.commitMax = head, head, head
	r.lastChecksum, r.lastTimestamp = headChecksum, headTimestamp
	r.committedChecksum = headChecksum
	r.enterNormal()
}

func (r *Replica) enterNormal() {
	r.status = StatusNormal
	if r.IsPrimary() {
		r.heartbeatTimer.stop()
		if r.cfg.ReplicaCount > 1 {
			r.commitTimer.start()
		}
	} else {
		r.commitTimer.stop()
		r.heartbeatTimer.start()
	}
}

// Accessors.

func (r *Replica) Group() uint64         { return r.cfg.Group }
func (r *Replica) View() uint32          { return r.view }
func (r *Replica) LogView() uint32       { return r.logView }
func (r *Replica) Status() Status        { return r.status }
func (r *Replica) Op() uint64            { return r.sequencer }
func (r *Replica) CommitMin() uint64     { return r.commitMin }
func (r *Replica) CommitMax() uint64     { return r.commitMax }
func (r *Replica) Primary() uint8        { return PrimaryIndex(r.view, r.cfg.ReplicaCount) }
func (r *Replica) IsPrimary() bool       { return r.Primary() == r.cfg.Replica }
func (r *Replica) PipelineLen() int      { return int(r.sequencer - r.commitMin) }
func (r *Replica) QueueLen() int         { return len(r.queue) }
func (r *Replica) LastTimestamp() uint64 { return r.lastTimestamp }

// CaughtUpPrimary is the admission gate of 5.3.1 step 2 (ceding and
// recovery barriers arrive with recovery).
func (r *Replica) CaughtUpPrimary() bool {
	return r.IsPrimary() && r.status == StatusNormal && r.commitMin == r.commitMax
}

// Ready returns and clears the pending outputs.
func (r *Replica) Ready() Ready {
	rd := r.ready
	r.ready = Ready{}
	return rd
}

// HasReady reports whether outputs are pending.
func (r *Replica) HasReady() bool {
	return len(r.ready.Journal)+len(r.ready.Send)+len(r.ready.Commit)+len(r.ready.Canceled) > 0
}

// Submit admits a request at the primary (5.2 rule 3): prepare it now if the
// prepare queue has room, else queue it, else refuse. nowUs is the wall
// clock in µs; the prepare timestamp is max(nowUs, last+1) (5.4).
func (r *Replica) Submit(req Request, nowUs uint64) error {
	if !r.IsPrimary() || r.status != StatusNormal {
		return ErrNotPrimary
	}
	if len(req.Frame) < wire.HeaderSize {
		return fmt.Errorf("vsr: request frame shorter than a header")
	}
	r.nowUs = max(r.nowUs, nowUs)
	switch {
	case r.PipelineLen() < r.cfg.PrepareQueueDepth && len(r.queue) == 0:
		r.prepare(req)
	case len(r.queue) < 2*r.cfg.PrepareQueueDepth:
		r.queue = append(r.queue, req)
	default:
		return ErrBusy
	}
	return nil
}

// prepare builds, seals and pipelines the next op (5.4, 5.5 step 1).
func (r *Replica) prepare(req Request) {
	op := r.sequencer + 1
	ts := max(r.nowUs, r.lastTimestamp+1)
	frame := req.Frame
	body := frame[wire.HeaderSize:]
	ph := wire.PrepareHeader{
		Cluster: r.cfg.Cluster, Size: uint32(len(frame)), View: r.view, Release: req.Release,
		Command: wire.CmdPrepare, Replica: r.cfg.Replica, Client: req.Client, Parent: r.lastChecksum,
		RequestChecksum: req.RequestChecksum, Op: op, Commit: r.commitMax, Timestamp: ts,
		Request: req.Request, Operation: req.Operation, Group: r.cfg.Group, UserID: req.UserID,
	}
	if r.cfg.Metadata {
		ph.ChecksumBody = wire.BodySeal(body)
	}
	h := wire.HeaderOf(frame)
	ph.Encode(h)
	ph.Checksum = wire.PrepareIdentity(h)
	h.SetChecksum(ph.Checksum)

	r.log[op] = &entry{frame: frame, hdr: ph, tag: req.Tag}
	r.sequencer, r.lastChecksum, r.lastTimestamp = op, ph.Checksum, ts
	if !r.prepareTimer.running {
		r.prepareTimer.start()
	}
	r.ready.Journal = append(r.ready.Journal, frame)
}

// Journaled reports the outcome of appending op's frame to the journal.
func (r *Replica) Journaled(op uint64, err error) {
	e := r.log[op]
	if e == nil || e.journaled {
		return
	}
	if err != nil {
		r.truncateFrom(op)
		return
	}
	e.journaled = true
	if e.repaired {
		r.repairedJournaled() // applied by the commit walk on RepairDone (7.4 rule 9)
		return
	}
	r.forward(e)
	r.sendPrepareOk(e)
	if !r.IsPrimary() {
		r.commitJournal()
	}
}

// truncateFrom drops op and everything after it after a failed append
// (5.5 step 3): those ops were never acknowledged by this replica.
func (r *Replica) truncateFrom(op uint64) {
	assert(op > r.commitMin, "never truncate at or below commit_min")
	for o := r.sequencer; o >= op; o-- {
		if e := r.log[o]; e != nil && e.tag != nil {
			r.ready.Canceled = append(r.ready.Canceled, e.tag)
		}
		delete(r.log, o)
	}
	for o := range r.log {
		if o >= op {
			delete(r.log, o) // repaired entries held above a hole; they carry no tags
		}
	}
	// Repaired entries handed to the journal from op on are gone: the stall
	// retry asks for them again.
	r.repair.pending, r.repair.done, r.repair.emitted = 0, false, 0
	r.sequencer = min(r.sequencer, op-1)
	if prev := r.log[op-1]; prev != nil {
		r.lastChecksum = prev.hdr.Checksum
	} else if op-1 == r.commitMin {
		// The parent is committed; keep the chain head the shell restored or
		// the last committed identity we handed out.
		r.lastChecksum = r.committedChecksum
	}
}

// forward sends a journaled prepare down the chain (4.6).
func (r *Replica) forward(e *entry) {
	n := r.cfg.ReplicaCount
	if n == 1 || e.hdr.Op <= r.commitMin {
		return
	}
	next := uint8((int(r.cfg.Replica) + 1) % n)
	if next == PrimaryIndex(e.hdr.View, n) {
		return
	}
	r.sendPrepare(next, e)
}

func (r *Replica) sendPrepare(to uint8, e *entry) {
	head := make([]byte, wire.HeaderSize)
	copy(head, e.frame[:wire.HeaderSize])
	wire.HeaderOf(head).SetView(r.view) // restamp; identity excludes view (2.2)
	r.ready.Send = append(r.ready.Send, Envelope{To: to, Head: head, Body: e.frame[wire.HeaderSize:]})
}

// sendPrepareOk acknowledges a journaled prepare to the primary of the
// current view (5.7); to itself through the loopback.
func (r *Replica) sendPrepareOk(e *entry) {
	if r.status != StatusNormal || !e.journaled || e.hdr.Op > r.sequencer {
		return
	}
	r.ackPrepare(e.hdr)
}

// ackPrepare sends the PrepareOk for prepare p (1.4.2) to the primary of
// the current view, through the loopback when that is this replica.
func (r *Replica) ackPrepare(p wire.PrepareHeader) {
	ok := wire.PrepareOkHeader{
		Cluster: r.cfg.Cluster, View: r.view, Replica: r.cfg.Replica, Parent: p.Parent,
		PrepareChecksum: p.Checksum, Op: p.Op, Commit: r.commitMax, Timestamp: p.Timestamp,
		Request: p.Request, Operation: p.Operation, Group: r.cfg.Group,
	}
	if r.IsPrimary() {
		r.onPrepareOk(ok)
		return
	}
	head := make([]byte, wire.HeaderSize)
	ok.Encode(wire.HeaderOf(head))
	r.ready.Send = append(r.ready.Send, Envelope{To: r.Primary(), Head: head})
}

// Step feeds one replica-plane frame (header + body) from a peer. The
// replica takes ownership of frame: a prepare is kept and journaled in
// place (no copy of a 1 MiB batch per backup), so the caller must hand over
// a buffer it will not reuse; the peer links read each frame into a fresh one.
func (r *Replica) Step(frame []byte) {
	if len(frame) < wire.HeaderSize {
		r.drop("short frame")
		return
	}
	h := wire.HeaderOf(frame)
	switch h.Command() {
	case wire.CmdPrepare:
		r.onPrepare(frame)
	case wire.CmdPrepareOk:
		ok, err := wire.DecodePrepareOkHeader(h)
		if err != nil {
			r.drop("bad prepare_ok")
			return
		}
		r.onPrepareOk(ok)
	case wire.CmdCommit:
		c, err := wire.DecodeCommitHeader(h)
		if err != nil {
			r.drop("bad commit")
			return
		}
		r.onCommit(c)
	case wire.CmdRequestPrepares:
		rp, err := wire.DecodeRequestPreparesHeader(h)
		if err != nil {
			r.drop("bad request_prepares")
			return
		}
		r.onRequestPrepares(rp)
	case wire.CmdRepairPrepare:
		p, err := wire.DecodePrepareHeader(h)
		if err != nil || wire.VerifyPrepare(frame) != nil || p.Group != r.cfg.Group || int(p.Size) != len(frame) {
			r.drop("bad repair_prepare")
			return
		}
		r.onRepairPrepare(frame, p)
	case wire.CmdRepairDone, wire.CmdRangeEvicted:
		rr, err := wire.DecodeRepairRangeReplyHeader(h)
		if err != nil {
			r.drop("bad repair reply")
			return
		}
		r.onRepairReply(rr)
	default:
		r.drop("unhandled command " + h.Command().String())
	}
}

func (r *Replica) drop(reason string) { r.Dropped[reason]++ }

// onPrepare is the backup's ingest of a live Prepare (5.6).
func (r *Replica) onPrepare(frame []byte) {
	h := wire.HeaderOf(frame)
	p, err := wire.DecodePrepareHeader(h)
	if err != nil || wire.VerifyPrepare(frame) != nil || p.Group != r.cfg.Group || int(p.Size) != len(frame) {
		r.drop("bad prepare")
		return
	}
	switch {
	case r.status != StatusNormal:
		r.drop("prepare while not normal")
		return
	case p.View > r.view:
		r.observedNewerView = max(r.observedNewerView, p.View)
		r.drop("prepare from a newer view")
		return
	case p.View < r.view:
		r.drop("prepare from an older view")
		return
	}
	if r.IsPrimary() {
		r.drop("prepare at the primary")
		return
	}
	r.commitMax = max(r.commitMax, p.Commit)
	if p.Op <= r.commitMin {
		r.ackHeld(p)
		r.commitJournal()
		return
	}
	if e := r.log[p.Op]; e != nil {
		if e.hdr.Checksum == p.Checksum && e.journaled {
			r.forward(e)
			r.sendPrepareOk(e)
		}
		return
	}
	if prev := r.log[p.Op-1]; prev != nil && prev.hdr.View == p.View && !p.Parent.IsZero() &&
		!prev.hdr.Checksum.IsZero() && p.Parent != prev.hdr.Checksum {
		r.drop("hash chain break")
		return
	}
	if p.Op != r.sequencer+1 {
		r.drop("prepare gap")
		r.maybeRepair()
		return
	}
	r.log[p.Op] = &entry{frame: frame, hdr: p}
	r.sequencer, r.lastChecksum = p.Op, p.Checksum
	r.lastTimestamp = max(r.lastTimestamp, p.Timestamp)
	r.ready.Journal = append(r.ready.Journal, frame)
}

// ackHeld answers a prepare at or below commit_min. 5.6 step 3 drops it;
// here, when this replica still holds that op with the same identity, it
// acknowledges it again (5.7's condition holds: the journal contains it).
// A backup restarted from its journal recovers every journaled op as
// committed, so it can stand at or above ops the primary has not committed
// yet; dropping the primary's retransmissions would leave those ops
// without a quorum while the other backup is away.
func (r *Replica) ackHeld(p wire.PrepareHeader) {
	f := r.frameAt(p.Op)
	if f == nil || r.status != StatusNormal || wire.HeaderOf(f).Prepare().Checksum != p.Checksum {
		r.drop("prepare already committed")
		return
	}
	r.ackPrepare(p)
}

// onPrepareOk is the primary's handling of an acknowledgement (5.8).
func (r *Replica) onPrepareOk(ok wire.PrepareOkHeader) {
	if !r.IsPrimary() || r.status != StatusNormal || ok.View != r.view || ok.Group != r.cfg.Group {
		r.drop("prepare_ok not for this primary, view or group")
		return
	}
	if int(ok.Replica) >= r.cfg.ReplicaCount {
		r.drop("prepare_ok from an unknown replica")
		return
	}
	e := r.log[ok.Op]
	switch {
	case e == nil:
		if ok.Op > r.commitMin {
			r.drop("prepare_ok for an op not in the pipeline")
		}
		return
	case e.hdr.Checksum != ok.PrepareChecksum:
		r.drop("prepare_ok for another prepare")
		return
	case e.acks&(1<<ok.Replica) != 0:
		return
	}
	e.acks |= 1 << ok.Replica
	if e.quorum || popcount(e.acks) < QuorumReplication(r.cfg.ReplicaCount) {
		return
	}
	e.quorum = true
	advanced := false
	for op := r.commitMax + 1; ; op++ {
		n := r.log[op]
		if n == nil || !n.quorum {
			break
		}
		r.commitMax, advanced = op, true
	}
	if advanced {
		r.commitPipeline()
	}
}

// commitPipeline commits the primary's pipeline prefix (5.9 primary form)
// and promotes queued requests into free slots (5.2 rule 5).
func (r *Replica) commitPipeline() {
	for op := r.commitMin + 1; op <= r.commitMax; op++ {
		e := r.log[op]
		assert(e != nil && e.journaled, "committed op is journaled")
		r.emitCommit(op, e)
	}
	if r.PipelineLen() == 0 {
		r.prepareTimer.stop()
	} else {
		r.prepareTimer.start()
	}
	for len(r.queue) > 0 && r.PipelineLen() < r.cfg.PrepareQueueDepth {
		req := r.queue[0]
		r.queue[0] = Request{}
		r.queue = r.queue[1:]
		r.prepare(req)
	}
}

func (r *Replica) emitCommit(op uint64, e *entry) {
	r.ready.Commit = append(r.ready.Commit, Committed{Op: op, Frame: e.frame, Tag: e.tag})
	delete(r.log, op)
	if r.cfg.ReplicaCount > 1 {
		r.retained.keep(op, e.frame, r.cfg.RetainOps, r.cfg.RetainBytes)
	}
	r.commitMin = op
	r.committedChecksum = e.hdr.Checksum
	assert(r.commitMin <= r.commitMax, "commit_min <= commit_max")
}

// commitJournal is the backup form of 5.9: apply journaled ops up to
// commit_max, stopping at the first gap.
func (r *Replica) commitJournal() {
	r.advanceSequencer() // over repaired entries journaled above a hole that is now filled
	for op := r.commitMin + 1; op <= min(r.commitMax, r.sequencer); op++ {
		e := r.log[op]
		if e == nil || !e.journaled {
			return
		}
		r.emitCommit(op, e)
	}
}

// onCommit is the backup's handling of the primary's heartbeat (5.10 rule 4).
func (r *Replica) onCommit(c wire.CommitHeader) {
	if c.Group != r.cfg.Group {
		return
	}
	if r.IsPrimary() {
		if c.View > r.view {
			r.observedNewerView = max(r.observedNewerView, c.View)
		}
		return
	}
	if r.status != StatusNormal {
		return
	}
	if c.View != r.view {
		if c.View > r.view {
			r.observedNewerView = max(r.observedNewerView, c.View)
		}
		return
	}
	if c.Replica != r.Primary() {
		return
	}
	if c.TimestampMonotonic > r.heartbeat {
		r.heartbeat = c.TimestampMonotonic
		r.heartbeatTimer.start()
	}
	r.commitMax = max(r.commitMax, c.Commit)
	r.commitJournal()
	r.maybeRepair()
}

// Tick advances virtual time by one 10 ms tick (4.7).
func (r *Replica) Tick() {
	if r.prepareTimer.tick() {
		r.onPrepareTimeout()
	}
	if r.commitTimer.tick() {
		r.onCommitTimeout()
	}
	if r.heartbeatTimer.tick() {
		// A silent primary. The election of section 6 arrives with view
		// change; until then the backup keeps waiting and counts it.
		r.drop("primary heartbeat timeout")
		r.heartbeatTimer.start()
	}
	if !r.IsPrimary() {
		r.tickRepair()
	}
}

// onPrepareTimeout retransmits unacknowledged prepares (5.11).
func (r *Replica) onPrepareTimeout() {
	if !r.IsPrimary() || r.status != StatusNormal || r.PipelineLen() == 0 {
		r.prepareTimer.stop()
		return
	}
	for op := r.commitMax + 1; op <= r.sequencer; op++ {
		e := r.log[op]
		if e == nil || e.quorum || !e.journaled {
			continue
		}
		for rep := 0; rep < r.cfg.ReplicaCount; rep++ {
			if e.acks&(1<<rep) != 0 {
				continue
			}
			if uint8(rep) == r.cfg.Replica {
				r.sendPrepareOk(e)
			} else {
				r.sendPrepare(uint8(rep), e)
			}
		}
	}
	r.prepareTimer.backoff(r.random)
}

// onCommitTimeout broadcasts the commit heartbeat (5.10 rules 1-2).
func (r *Replica) onCommitTimeout() {
	r.commitTimer.start()
	if !r.IsPrimary() || r.status != StatusNormal || r.cfg.ReplicaCount == 1 {
		return
	}
	r.heartbeat++
	for rep := 0; rep < r.cfg.ReplicaCount; rep++ {
		if uint8(rep) == r.cfg.Replica {
			continue
		}
		c := wire.CommitHeader{Cluster: r.cfg.Cluster, View: r.view, Replica: r.cfg.Replica,
			TimestampMonotonic: r.heartbeat, Commit: r.commitMin, Group: r.cfg.Group}
		head := make([]byte, wire.HeaderSize)
		c.Encode(wire.HeaderOf(head))
		r.ready.Send = append(r.ready.Send, Envelope{To: uint8(rep), Head: head})
	}
}

// random is a xorshift64 generator: deterministic jitter from the seed.
func (r *Replica) random() uint64 {
	r.rng ^= r.rng << 13
	r.rng ^= r.rng >> 7
	r.rng ^= r.rng << 17
	return r.rng
}

func popcount(x uint32) int {
	n := 0
	for ; x != 0; x &= x - 1 {
		n++
	}
	return n
}

func assert(ok bool, invariant string) {
	if !ok {
		panic("vsr: invariant violated: " + invariant)
	}
}
