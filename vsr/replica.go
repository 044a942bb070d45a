package vsr

import (
	"cmp"
	"errors"
	"fmt"
	"math/bits"
	"slices"

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
	// View change timers (4.7): SVC/DVC resend, ViewChangeStatus, the
	// RequestStartView probe, and the probes before an election.
	ViewChangeRetransmitTicks int // default 50
	ViewChangeStatusTicks     int // default 500
	RequestStartViewTicks     int // default 100
	ViewProbeAttemptsMax      int // default 5
	// RepairChunk is cluster.repair_chunk_max (128), the ops served per
	// RequestPrepares.
	RepairChunk int
	// PeerQueueCapacity is the per-peer send queue (frames); repair asks
	// for at most half of it at a time. 0: no bound beyond RepairChunk.
	PeerQueueCapacity int
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
	// Quiesce lets the group go quiet when nothing is in flight
	// (quiesce.go); partition groups of a cluster enable it.
	Quiesce bool
	// Live reports whether a replica's node is heard by the node-level
	// heartbeat (Liveness); nil: every replica is live.
	Live func(replica uint8) bool
	// Roster is the group's membership at start (reconfig.go); nil:
	// epoch 0 with voters 0..ReplicaCount-1. A replica joining a running
	// group starts with a roster that does not name it.
	Roster *Roster
	// StartView is the view of the roster's epoch a fresh group starts in
	// (FirstView(epoch) + StartView), so that its first primary is the
	// voter the shell placed there (issue 23's leadership spread: the
	// primary of view v is the (v mod n)-th voter). Every replica of the
	// group must start with the same value; a fresh group in view k with
	// an empty log is the same as one in view 0 (nothing to merge).
	StartView uint32
	// AwaitFate keeps the requests of a primary's cancelled prepares
	// until their ops commit, for at most FateTicks (default 100: 1 s;
	// fate.go); partition groups enable it, having no client table.
	AwaitFate bool
	FateTicks int
	// Removed (S6) starts a replica its shell's durable record says was
	// removed from Roster and that holds nothing of the group (a
	// moved-out partition restarted without its data): it takes no part,
	// and a hint of a newer epoch does not bring it back (fence).
	Removed bool
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
	if c.FateTicks == 0 {
		c.FateTicks = 100
	}
	if c.ViewChangeRetransmitTicks == 0 {
		c.ViewChangeRetransmitTicks = 50
	}
	if c.ViewChangeStatusTicks == 0 {
		c.ViewChangeStatusTicks = 500
	}
	if c.RequestStartViewTicks == 0 {
		c.RequestStartViewTicks = 100
	}
	if c.ViewProbeAttemptsMax == 0 {
		c.ViewProbeAttemptsMax = 5
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
	// Rejected holds tags of admitted requests that did not commit and
	// never will: another prepare committed at their op (AwaitFate,
	// fate.go); TransientNotAccepted for the client.
	Rejected []any
	// State, when set, must be durable (the group's superblock, 9.2)
	// before anything in Send goes out (6.13) and before the shell takes
	// the next Ready (the core counts it durable from here on); if writing
	// it fails, the shell sends nothing of this Ready and reports
	// StateFailed before the next call.
	State *State
	// Truncate, when non-zero, is the lowest op to remove from the journal
	// (every entry at or above it), before appending Journal. Truncated
	// holds the removed frames that had been journaled, in op order (a
	// partition shell rolls its next offset back to the first batch).
	Truncate  uint64
	Truncated [][]byte
	// Quiet holds quiescence entries for the node-level heartbeat to carry
	// (quiesce.go); like Send, they wait for State to be durable.
	Quiet []QuietEntry
}

// State is a group's durable VSR state (9.2): written before a
// view-scoped send advertises it.
type State struct {
	View, LogView uint32
	CommitMax     uint64
	// ViewHead is the head of the log_view's log this replica adopted
	// (the StartView's op; 0 when it started the view itself or holds it
	// all). After a restart its DoViewChange must still announce it, or a
	// replica whose journal stops short of that head would report a
	// commit point capped below ops its view committed (6.5.1 caps commit
	// at op). ViewHeaders is that StartView's suffix (its body), the
	// headers of the view's log the replica may not hold: without them a
	// DoViewChange announcing the view's log would make every other
	// replica's copy of those ops look discarded (6.7 step 4's implicit
	// nack). The 9.2 record has no room for either: shells keep them
	// beside it.
	ViewHead    uint64
	ViewHeaders []byte
	// Roster is the replica's membership (reconfig.go): it changes with
	// the epoch, and a restart must recover the latest one written.
	// EpochOp is the op of the R that opened it (or the installed state
	// that applied it): a restart replays its journal to at least there,
	// since the epoch holds everything up to it committed (S4).
	Roster  Roster
	EpochOp uint64
	// Removed: a roster without this replica was applied after one with
	// it (S6). A joiner's roster names no voter it is, yet it is not
	// removed: only this flag tells them apart after a restart.
	Removed bool
}

// Recovery is what a restarted replica recovered from durable state
// (9.3, 9.4): its superblock's view, log_view and commit_max, its applied
// point and the identity and timestamp of that op, and the journaled
// prepares above it, in op order, hash-chained (metadata; a partition's
// journal is memory and comes back empty).
type Recovery struct {
	View, LogView   uint32
	CommitMax       uint64
	Commit          uint64
	CommitChecksum  wire.U128
	CommitTimestamp uint64
	Journal         [][]byte
	// ViewHead and ViewHeaders are State's as last persisted.
	ViewHead    uint64
	ViewHeaders []byte
	// JournalHead is the highest op a journal kept in memory (a partition
	// group's, 9.4 rule 1) had reached before the restart lost it: the
	// replica may have acknowledged any op up to it, so until it holds
	// them again or adopts a view it nacks none of them (6.7's nack is a
	// proof of absence, which it no longer has).
	JournalHead uint64
	// Roster is State.Roster as last persisted, or the roster the replay
	// of the journal applied when that is newer (nil: Config.Roster);
	// EpochOp is State.EpochOp, or the op of that replayed R. Commit must
	// be at least EpochOp.
	Roster  *Roster
	EpochOp uint64
	Removed bool // State.Removed (or the replayed R removed it)
	// Incarnation is this boot's random u128 (6.12 rule 2; metadata only,
	// its low bit is forced to 1): the shell draws it anew at every boot.
	Incarnation wire.U128
	// Retained are committed prepares up to Commit, in op order, that the
	// shell rebuilt after a restart (a partition group's last ops, from its
	// segments and stored headers): served to repair, never journaled.
	// Without them a replica whose memory journal died with it cannot hand
	// a primary-elect the ops only it had committed (a whole-cluster
	// restart), and the view changes round until it is the primary itself.
	// A set that is not a verified chain ending at Commit with identity
	// CommitChecksum is ignored: one saved before the last commit would
	// leave ops between its end and Commit that this replica neither
	// serves nor reports evicted (RangeEvicted answers only below the
	// oldest op held), and a primary-elect asking for them would wait on
	// it forever instead of turning to state transfer (cmd/sim found it).
	Retained [][]byte
}

type entry struct {
	frame     []byte
	hdr       wire.PrepareHeader
	journaled bool
	acks      uint32
	quorum    bool
	repaired  bool // arrived as a RepairPrepare: never acked or forwarded
	emitted   bool // a repaired entry handed to the shell's journal
	// proven: a repaired entry known to be the op of the log of view
	// provenView (see repair.go, proven); live entries are their view's
	// by construction.
	proven     bool
	provenView uint32
	// mergedProof: the same for the log a primary-elect merged for a view
	// it has not started. Kept apart so that a view change that fails does
	// not take the proof for log_view with it: the entry was acknowledged
	// in log_view, and the next DVC must still report it present.
	mergedProof     bool
	mergedProofView uint32
	tag             any
}

// Replica is one group's VSR state machine. It is not safe for concurrent
// use: its actor owns it.
type Replica struct {
	cfg    Config
	status Status
	fates  map[uint64]fate // AwaitFate: cancelled prepares by op (fate.go)

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
	svcTimer       timer
	dvcTimer       timer
	vcStatusTimer  timer
	rsvTimer       timer
	rng            uint64

	vc viewChange
	// adopted is the suffix of the StartView this backup adopted (6.10
	// step 6), adoptedTop its op; knownHead is the head of the current
	// view this backup knows of (from the StartView or a prepare it could
	// not journal yet), which repair fills up to.
	adopted       map[uint64]wire.Header
	adoptedTop    uint64
	adoptedSuffix []byte // the adopted StartView's body, for State
	knownHead     uint64
	// primaryBeat is the last heartbeat counter heard from this view's
	// primary (see the view change choices).
	primaryBeat   uint64
	ceded         bool
	incarnation   wire.U128
	probeAttempts int
	// probing: the other replicas heard probing (RSV) since this replica's
	// probe began, and the highest view they named.
	probing        uint32
	probingViewMax uint32
	// escalations counts view changes in a row escalated by the
	// ViewChangeStatus timeout (viewchange.go); Normal resets it.
	escalations int
	// durable is the (view, log_view) the shell was asked to persist;
	// persisted what it last confirmed. stateBackoff holds sends back
	// after a failed write (6.13 rule 3).
	durable, persisted                             State
	stateBackoff, stateFailures, stateFailingTicks int
	// transferring: a state transfer runs (the shell's TransferSession);
	// NeedTransfer is the peer a metadata repair found compacted past what
	// this replica lacks (7.5 metadata rule 2), -1 when none.
	transferring bool
	NeedTransfer int
	// faultyHead is Recovery.JournalHead while it matters (see there).
	faultyHead uint64
	// recoveryBarrier is the journal head a restart recovered above its
	// commit point (9.3 step 7).
	recoveryBarrier uint64

	repair   repairSession
	retained retained
	q        quiescence
	// repairBackoff counts down the ticks before a refused repair may
	// open again; refusedInARow doubles it.
	repairBackoff, refusedInARow int
	// offsetFrontier is a partition group's durable offset frontier
	// (SetOffsetFrontier).
	offsetFrontier uint64

	// roster is the membership of this replica's epoch; epochOp the op of
	// the R that opened it (reconfig.go). removed: a roster without this
	// replica was applied (S6). learnerAck is the highest op each learner
	// acknowledged to this primary in this epoch.
	roster  Roster
	epochOp uint64
	// rosterTrailer is the shell's part of the last applied R's body
	// (ReconfigureWith), sent again with the R2 the core proposes. A
	// restart or an install loses it: the shell passes it again
	// (SetRosterTrailer) from its state machine.
	rosterTrailer []byte
	removed       bool
	learnerAck    [MaxReplicas]uint64
	// departed: replicas an R this one applied removed, not yet heard
	// saying they know (reconfig.go, hintDeparted; quiescing groups);
	// departedHints the hints sent to each since it was last found.
	departed      uint32
	departedHints [MaxReplicas]uint8

	ready Ready
	// Dropped counts peer frames dropped, by reason (13.5).
	Dropped map[string]uint64
	// Repairs counts repair sessions opened; RepairsRefused those ended
	// because the server no longer holds what this replica lacks (state
	// transfer's case).
	Repairs, RepairsRefused uint64
	// ViewChangesStarted counts views this replica entered a view change
	// for; ViewsStarted those it started as primary, ViewsAdopted the
	// StartViews it adopted; Probes the view probes it began.
	ViewChangesStarted, ViewsStarted, ViewsAdopted, Probes uint64
	// ReconfigsProposed counts R ops this primary prepared, EpochsEntered
	// the epochs it entered by applying one, EpochTransfers the state
	// transfers a frame of a newer epoch asked for (reconfig.go).
	ReconfigsProposed, EpochsEntered, EpochTransfers uint64
}

// New returns a fresh replica in view 0, Normal (replica-plane.md 5.1).
func New(cfg Config) *Replica {
	cfg.setDefaults()
	r := &Replica{cfg: cfg, log: make(map[uint64]*entry), rng: cfg.Seed | 1, Dropped: make(map[string]uint64), NeedTransfer: -1}
	r.commitTimer.after = cfg.CommitBroadcastTicks
	r.heartbeatTimer.after = cfg.HeartbeatTimeoutTicks
	r.prepareTimer.after = cfg.PrepareRetransmitTicks
	r.svcTimer.after = cfg.ViewChangeRetransmitTicks
	r.dvcTimer.after = cfg.ViewChangeRetransmitTicks
	r.vcStatusTimer.after = cfg.ViewChangeStatusTicks
	r.rsvTimer.after = cfg.RequestStartViewTicks
	r.vc.dvcs = make([]*dvcRecord, MaxReplicas)
	r.roster = DefaultRoster(cfg.ReplicaCount)
	if cfg.Roster != nil {
		r.roster = *cfg.Roster
		r.view, r.logView = FirstView(r.roster.Epoch), FirstView(r.roster.Epoch)
	}
	if cfg.StartView > 0 && cfg.StartView < 1<<EpochShift {
		r.view += cfg.StartView
		r.logView = r.view
	}
	r.removed = cfg.Removed && !r.roster.Member(cfg.Replica)
	r.durable.Roster, r.persisted.Roster = r.roster, r.roster
	r.durable.Removed, r.persisted.Removed = r.removed, r.removed
	r.enterNormal()
	r.startQuiet()
	return r
}

// Recover boots a replica with prior life (6.12 rule 1, 9.3): it takes
// the recovered state and, in a cluster, rejoins as a ceded backup in
// Recovering and probes for the current view; it never resumes
// primaryship on its own. A cluster of one commits everything it
// journaled and is Normal at once (9.3 step 4).
func (r *Replica) Recover(rc Recovery) {
	assert(r.sequencer == 0 && len(r.log) == 0, "recover on a fresh replica")
	assert(rc.LogView <= rc.View, "view >= log_view")
	r.view, r.logView = rc.View, rc.LogView
	if rc.Roster != nil {
		r.roster, r.epochOp = *rc.Roster, rc.EpochOp
		assert(rc.Commit >= rc.EpochOp, "a restart replays at least to its epoch's R")
		if EpochOf(r.view) < r.roster.Epoch {
			// The replay applied an R the superblock had not recorded:
			// the epoch's first view (S4), its old-epoch view state gone.
			r.view, r.logView = FirstView(r.roster.Epoch), FirstView(r.roster.Epoch)
			rc.ViewHead, rc.ViewHeaders = 0, nil
		}
	}
	r.removed = rc.Removed && !r.roster.Member(r.cfg.Replica)
	r.durable = State{View: r.view, LogView: r.logView, ViewHead: rc.ViewHead, ViewHeaders: rc.ViewHeaders, Roster: r.roster, EpochOp: r.epochOp, Removed: r.removed}
	if rc.JournalHead > rc.Commit {
		r.faultyHead = rc.JournalHead
	}
	r.adoptSuffix(rc.ViewHead, rc.ViewHeaders)
	r.persisted = r.durable
	r.commitMin, r.sequencer = rc.Commit, rc.Commit
	r.commitMax = max(rc.CommitMax, rc.Commit)
	r.lastChecksum, r.committedChecksum, r.lastTimestamp = rc.CommitChecksum, rc.CommitChecksum, rc.CommitTimestamp
	if retainedChain(rc.Retained, rc.Commit, rc.CommitChecksum) {
		first := rc.Commit + 1 - uint64(len(rc.Retained))
		for i, f := range rc.Retained {
			r.retained.keep(first+uint64(i), f, r.cfg.RetainOps, r.cfg.RetainBytes)
		}
	}
	for _, f := range rc.Journal {
		ph := wire.HeaderOf(f).Prepare()
		// A zero parent is the unsealed link of 2.5 rule 3: a primary whose
		// head came by state transfer (which does not carry its identity)
		// builds on it; cmd/sim --reconfig seed 742 restarted over one.
		if ph.Op != r.sequencer+1 || ph.Parent != r.lastChecksum && !ph.Parent.IsZero() {
			assert(false, fmt.Sprintf("recovered journal is contiguous and chained: op %d after %d", ph.Op, r.sequencer))
		}
		r.log[ph.Op] = &entry{frame: f, hdr: ph, journaled: true}
		r.sequencer, r.lastChecksum = ph.Op, ph.Checksum
		r.lastTimestamp = max(r.lastTimestamp, ph.Timestamp)
	}
	r.reconcileRecovered() // viewchange.go: a restart forgets what a failed view change repaired
	if r.removed {
		return
	}
	if r.solo() {
		r.commitMax = r.sequencer
		r.commitJournal()
		r.enterNormal()
		return
	}
	if r.sequencer > r.commitMin {
		r.recoveryBarrier = r.sequencer
	}
	r.ceded = r.IsPrimary()
	if r.cfg.Metadata {
		r.incarnation = rc.Incarnation
		if r.incarnation.IsZero() {
			r.incarnation = wire.U128{Lo: r.random(), Hi: r.random()}
		}
		r.incarnation.Lo |= 1
	}
	r.startProbe()
}

// retainedChain reports whether frames are verified prepares of
// consecutive ops, each the parent of the next, the last being commit with
// checksum head.
func retainedChain(frames [][]byte, commit uint64, head wire.U128) bool {
	if len(frames) == 0 || uint64(len(frames)) > commit {
		return false
	}
	op := commit + 1 - uint64(len(frames))
	var prev wire.U128
	for i, f := range frames {
		if wire.VerifyPrepare(f) != nil {
			return false
		}
		ph := wire.HeaderOf(f).Prepare()
		if ph.Op != op+uint64(i) || (i > 0 && ph.Parent != prev) {
			return false
		}
		prev = ph.Checksum
	}
	return prev == head
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
	r.leaveQuiet()
	r.escalations = 0
	r.status = StatusNormal
	if r.IsPrimary() && !r.ceded {
		r.heartbeatTimer.stop()
		if !r.solo() {
			r.commitTimer.start()
		}
	} else {
		r.commitTimer.stop()
		r.heartbeatTimer.start()
	}
}

// Accessors.

func (r *Replica) Group() uint64         { return r.cfg.Group }
func (r *Replica) ReplicaCount() int     { return r.cfg.ReplicaCount }
func (r *Replica) View() uint32          { return r.view }
func (r *Replica) LogView() uint32       { return r.logView }
func (r *Replica) Status() Status        { return r.status }
func (r *Replica) Op() uint64            { return r.sequencer }
func (r *Replica) CommitMin() uint64     { return r.commitMin }
func (r *Replica) CommitMax() uint64     { return r.commitMax }
func (r *Replica) Primary() uint8        { return r.roster.Primary(r.view) }
func (r *Replica) IsPrimary() bool       { return r.Primary() == r.cfg.Replica }
func (r *Replica) PipelineLen() int      { return int(r.sequencer - r.commitMin) }
func (r *Replica) QueueLen() int         { return len(r.queue) }
func (r *Replica) LastTimestamp() uint64 { return r.lastTimestamp }

// Leading reports whether this replica is the primary of a settled view:
// it admits requests, and a partition shell stamps the batches it journals.
func (r *Replica) Leading() bool {
	return r.IsPrimary() && r.status == StatusNormal && !r.ceded
}

// CaughtUpPrimary is the admission gate of 5.3.1 step 2, with the
// recovery barrier of 9.3 step 7: a replica restarted with journaled ops
// above its commit point admits nothing until commit_max reaches its
// recovered head (or a view change discarded the ops above).
func (r *Replica) CaughtUpPrimary() bool {
	return r.Leading() && r.commitMin == r.commitMax && r.commitMax >= min(r.recoveryBarrier, r.sequencer)
}

// Ready returns and clears the pending outputs. When (view, log_view)
// moved since the shell last persisted them, the Ready carries State; while
// a failed write backs off, the view-scoped frames are held back (6.13).
func (r *Replica) Ready() Ready {
	rd := r.ready
	r.ready = Ready{}
	cur := State{View: r.view, LogView: r.logView, CommitMax: r.commitMax, ViewHead: r.adoptedTop, ViewHeaders: r.adoptedSuffix, Roster: r.roster, EpochOp: r.epochOp, Removed: r.removed}
	if r.stateChanged() {
		if r.stateBackoff == 0 {
			rd.State = &cur
			r.durable = cur
		} else {
			rd.Send, rd.Quiet = ungated(rd.Send), nil
		}
	}
	return rd
}

// StateFailed reports that persisting Ready.State failed: nothing of that
// Ready was sent, and the write is retried after 10 ms * 2^failures,
// capped at 1 s (6.13 rule 3).
func (r *Replica) StateFailed() {
	r.durable = r.persisted
	r.stateFailures++
	r.stateBackoff = min(1<<min(r.stateFailures, 8), 100)
}

// StatePersisted reports that Ready.State is durable.
func (r *Replica) StatePersisted() {
	r.persisted, r.stateFailures, r.stateFailingTicks = r.durable, 0, 0
}

// StateFailingFor is how many ticks the state write has been failing (0
// after a success): past cluster.superblock_wedged_fatal_timeout the
// process fail-stops (6.13 rule 4), which the shell does.
func (r *Replica) StateFailingFor() int { return r.stateFailingTicks }

// ungated keeps the frames 6.14 does not gate on durable view state.
func ungated(sends []Envelope) []Envelope {
	out := sends[:0]
	for _, e := range sends {
		switch wire.HeaderOf(e.Head).Command() {
		case wire.CmdStartViewChange, wire.CmdDoViewChange, wire.CmdStartView, wire.CmdCommit, wire.CmdPrepareOk:
			continue
		}
		out = append(out, e)
	}
	return out
}

// HasReady reports whether outputs are pending.
func (r *Replica) HasReady() bool {
	return len(r.ready.Journal)+len(r.ready.Send)+len(r.ready.Commit)+len(r.ready.Canceled)+len(r.ready.Rejected)+len(r.ready.Quiet) > 0 ||
		r.ready.Truncate != 0 || (r.stateBackoff == 0 && r.stateChanged())
}

// stateChanged: the durable state the shell last took differs from the
// replica's (commit_max alone does not count, 6.13 rule 2).
func (r *Replica) stateChanged() bool {
	return r.view != r.durable.View || r.logView != r.durable.LogView || r.adoptedTop != r.durable.ViewHead ||
		r.roster != r.durable.Roster || r.removed != r.durable.Removed
}

// Submit admits a request at the primary (5.2 rule 3): prepare it now if the
// prepare queue has room, else queue it, else refuse. nowUs is the wall
// clock in µs; the prepare timestamp is max(nowUs, last+1) (5.4).
func (r *Replica) Submit(req Request, nowUs uint64) error {
	if r.removed {
		return ErrRemoved
	}
	if !r.Leading() {
		return ErrNotPrimary
	}
	if r.pendingReconfig() != 0 {
		return ErrBusy // S1: nothing above R in its epoch
	}
	if len(req.Frame) < wire.HeaderSize {
		return fmt.Errorf("vsr: request frame shorter than a header")
	}
	r.wake()
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
	var truncated [][]byte
	for o := op; o <= r.sequencer; o++ {
		if e := r.log[o]; e != nil && e.journaled {
			truncated = append(truncated, e.frame)
		}
	}
	for o := r.sequencer; o >= op; o-- {
		if e := r.log[o]; e != nil && e.tag != nil {
			r.ready.Canceled = append(r.ready.Canceled, e.tag)
		}
		delete(r.log, o)
	}
	for o, e := range r.log {
		if o >= op {
			if e.journaled && o > r.sequencer {
				truncated = append(truncated, e.frame) // journaled above a hole: removed too
			}
			delete(r.log, o) // repaired entries held above a hole; they carry no tags
		}
	}
	// The shell removes the journal from op on, and appends nothing at or
	// above it that this Ready still holds.
	keep := r.ready.Journal[:0]
	for _, f := range r.ready.Journal {
		if wire.HeaderOf(f).Prepare().Op < op {
			keep = append(keep, f)
		}
	}
	r.ready.Journal = keep
	if r.ready.Truncate == 0 || op < r.ready.Truncate {
		r.ready.Truncate = op
	}
	slices.SortFunc(truncated, func(a, b []byte) int {
		return cmp.Compare(wire.HeaderOf(a).Prepare().Op, wire.HeaderOf(b).Prepare().Op)
	})
	r.ready.Truncated = append(r.ready.Truncated, truncated...)
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
	if r.solo() || e.hdr.Op <= r.commitMin || r.status != StatusNormal {
		return // outside Normal a forward would restamp it into a view that may have discarded it
	}
	if r.IsPrimary() {
		for id := uint8(0); id < MaxReplicas; id++ {
			if r.roster.Learner(id) {
				r.sendPrepare(id, e) // learners are off the chain: from the primary (S5)
			}
		}
	}
	if !r.voter() {
		return
	}
	next := r.roster.next(r.cfg.Replica)
	if next == r.cfg.Replica || next == r.roster.Primary(e.hdr.View) {
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
	if r.transferring {
		return // 7.6: no PrepareOk while a transfer runs
	}
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
	if r.q.quiet && !r.idleCommit(frame) {
		r.wake() // any input wakes a quiet group (quiesce.go rule 3)
	}
	h := wire.HeaderOf(frame)
	if !r.fence(h) {
		return
	}
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
	case wire.CmdStartViewChange:
		s, err := wire.DecodeStartViewChangeHeader(h)
		if err != nil || s.Group != r.cfg.Group {
			r.drop("bad start_view_change")
			return
		}
		r.onStartViewChange(s)
	case wire.CmdDoViewChange:
		r.onDoViewChange(frame)
	case wire.CmdStartView:
		r.onStartView(frame)
	case wire.CmdRequestStartView:
		q, err := wire.DecodeRequestStartViewHeader(h)
		if err != nil || q.Group != r.cfg.Group {
			r.drop("bad request_start_view")
			return
		}
		r.onRequestStartView(q)
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
	case r.transferring:
		r.drop("prepare while transferring")
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
		if e.hdr.Checksum == p.Checksum {
			e.proven, e.provenView = true, r.view // the primary of this view sent it live
			if e.journaled {
				r.forward(e)
				r.sendPrepareOk(e)
			}
		}
		return
	}
	if h, ok := r.adopted[p.Op]; ok && h.Prepare().Checksum != p.Checksum {
		r.drop("prepare differs from the adopted view")
		return
	}
	if prev := r.log[p.Op-1]; prev != nil && !p.Parent.IsZero() && !prev.hdr.Checksum.IsZero() && p.Parent != prev.hdr.Checksum {
		// The primary of this view names another op below: ours is not
		// this view's (never at or below commit_min, which is not held).
		r.drop("hash chain break: the op below is truncated")
		r.truncateFrom(p.Op - 1)
		r.maybeRepair()
		return
	}
	if p.Op != r.sequencer+1 {
		r.drop("prepare gap")
		if p.Op > r.sequencer+1 {
			r.knownHead = max(r.knownHead, p.Op-1)
		}
		r.maybeRepair()
		return
	}
	r.log[p.Op] = &entry{frame: frame, hdr: p}
	r.sequencer, r.lastChecksum = p.Op, p.Checksum
	r.lastTimestamp = max(r.lastTimestamp, p.Timestamp)
	r.ready.Journal = append(r.ready.Journal, frame)
}

// JournalHeadAfter is what a shell whose journal is memory records as its
// journal head (for Recovery.JournalHead) once it journaled op: op, or
// the head a previous incarnation's journal reached while that still
// matters (no view adopted since the restart). Recording op alone let a
// replica restarted twice forget ops its first incarnation acknowledged
// and nack one its primary had committed (simulator seed 125576).
func (r *Replica) JournalHeadAfter(op uint64) uint64 { return max(op, r.faultyHead) }

// ackHeld answers a prepare at or below commit_min. 5.6 step 3 drops it;
// here, when this replica still holds that op with the same identity, it
// acknowledges it again (5.7's condition holds: the journal contains it).
// A backup restarted from its journal recovers every journaled op as
// committed, so it can stand at or above ops the primary has not committed
// yet; dropping the primary's retransmissions would leave those ops
// without a quorum while the other backup is away.
func (r *Replica) ackHeld(p wire.PrepareHeader) {
	if r.Learner() && r.status == StatusNormal {
		// A learner's acknowledgement is in no quorum (S5): it only tells
		// the primary this learner has the state up to op, which it has
		// applied (or installed) even when the frame did not travel.
		r.ackPrepare(p)
		return
	}
	f := r.frameAt(p.Op)
	// The op at commit_min is applied here with a known identity even when
	// its frame is gone (a restart recovered the commit point from the
	// segments): acknowledging it promises nothing this replica lacks.
	atCommit := f == nil && p.Op == r.commitMin && p.Checksum == r.committedChecksum && !p.Checksum.IsZero()
	if !atCommit && (f == nil || wire.HeaderOf(f).Prepare().Checksum != p.Checksum) || r.status != StatusNormal {
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
	if !r.roster.Member(ok.Replica) {
		r.drop("prepare_ok from an unknown replica")
		return
	}
	if r.roster.Learner(ok.Replica) && ok.Op > r.learnerAck[ok.Replica] {
		r.learnerAck[ok.Replica] = ok.Op
		defer r.maybePromote()
	}
	r.learnCommit(ok.Commit)
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
	if e.quorum || !r.replicated(e.acks) {
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

// replicated reports whether acks (a bit per replica) are a replication
// quorum.
func (r *Replica) replicated(acks uint32) bool {
	return bits.OnesCount32(acks&r.roster.Voters) >= QuorumReplication(r.roster.N()) // S5: learners count for nothing
}

// learnCommit takes a backup's commit_max from its PrepareOk of this view
// (5.8 leaves it unread): the backup holds this view's log up to the op
// it acknowledged, and what it knows committed is committed in every
// later view, so it is this log's prefix. A new primary whose merge
// started below a backup's applied point (a backup restarted from its
// segments keeps no frames below it, so cannot acknowledge those ops)
// would otherwise wait for acknowledgements that never come.
func (r *Replica) learnCommit(commit uint64) {
	if commit <= r.commitMax || commit > r.sequencer {
		return
	}
	for op := r.commitMax + 1; op <= commit; op++ {
		if e := r.log[op]; e == nil || !e.journaled {
			return
		}
	}
	r.commitMax = commit
	if r.pendingReconfig() != 0 {
		// Entries above that reached their quorum before commit_max got
		// here would wait for the next quorum to rescan them; behind an R
		// no next op comes (S1), so rescan now (cmd/sim --reconfig seed
		// 3724). Without an R the next op's quorum does it, as before.
		for e := r.log[r.commitMax+1]; e != nil && e.quorum; e = r.log[r.commitMax+1] {
			r.commitMax++
		}
	}
	r.commitPipeline()
}

// commitPipeline commits the primary's pipeline prefix (5.9 primary form)
// and promotes queued requests into free slots (5.2 rule 5).
func (r *Replica) commitPipeline() {
	for op, epoch := r.commitMin+1, r.roster.Epoch; op <= r.commitMax && epoch == r.roster.Epoch; op++ {
		e := r.log[op]
		assert(e != nil && e.journaled, "committed op is journaled")
		r.emitCommit(op, e)
	}
	if r.PipelineLen() == 0 {
		r.prepareTimer.stop()
	} else {
		r.prepareTimer.start()
	}
	for len(r.queue) > 0 && r.PipelineLen() < r.cfg.PrepareQueueDepth && r.pendingReconfig() == 0 {
		req := r.queue[0]
		r.queue[0] = Request{}
		r.queue = r.queue[1:]
		r.prepare(req)
	}
}

func (r *Replica) emitCommit(op uint64, e *entry) {
	tag := e.tag
	if len(r.fates) > 0 {
		if waited := r.fateAtCommit(op, e); tag == nil {
			tag = waited
		} else if waited != nil {
			r.ready.Canceled = append(r.ready.Canceled, waited) // not reachable: a cancelled entry carries no tag
		}
	}
	r.ready.Commit = append(r.ready.Commit, Committed{Op: op, Frame: e.frame, Tag: tag})
	delete(r.log, op)
	if !r.solo() || r.roster.Epoch > 0 {
		r.retained.keep(op, e.frame, r.cfg.RetainOps, r.cfg.RetainBytes)
	}
	r.commitMin = op
	r.committedChecksum = e.hdr.Checksum
	assert(r.commitMin <= r.commitMax, "commit_min <= commit_max")
	if ro, ok := RosterOf(e.frame); ok {
		r.enterEpoch(ro, op, RosterTrailer(e.frame))
	}
}

// commitJournal is the backup form of 5.9: apply journaled ops up to
// commit_max, stopping at the first gap.
func (r *Replica) commitJournal() {
	if r.transferring {
		return
	}
	r.advanceSequencer() // over repaired entries journaled above a hole that is now filled
	for op, epoch := r.commitMin+1, r.roster.Epoch; op <= min(r.commitMax, r.sequencer) && epoch == r.roster.Epoch; op++ {
		e := r.log[op]
		if e == nil || !e.journaled {
			return
		}
		if !r.proven(op) {
			if r.refuted(op) {
				r.drop("repaired op refuted by the view's log")
				r.truncateFrom(op)
			}
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
	if c.TimestampMonotonic == 0 && !r.roster.Member(c.Replica) {
		r.departed &^= 1 << c.Replica // a departed replica's answer: it knows it is removed (reconfig.go)
		return
	}
	if r.IsPrimary() {
		switch {
		case c.View > r.view:
			r.observedNewerView = max(r.observedNewerView, c.View)
		case r.Leading() && c.View < r.view && c.Replica == r.roster.Primary(c.View) && c.Replica != r.cfg.Replica:
			// A stale primary still heartbeats: tell everyone the view
			// (5.10 rule 3).
			r.broadcast(r.startViewFrame(wire.U128{}))
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
	if c.TimestampMonotonic > r.primaryBeat {
		r.primaryBeat = c.TimestampMonotonic
		r.heartbeat = max(r.heartbeat, c.TimestampMonotonic)
		if !r.q.quiet {
			r.heartbeatTimer.start()
		}
	}
	r.commitMax = max(r.commitMax, c.Commit)
	r.commitJournal()
	if r.Learner() && c.Commit > 0 && r.commitMin >= c.Commit && r.roster.Learner(r.cfg.Replica) {
		// S5: tell the primary this learner holds its commit point, the
		// signal promotion waits for, even when the primary has no frame
		// there to resend (its own state came by transfer).
		r.ackPrepare(wire.PrepareHeader{Op: r.commitMin})
	}
	r.maybeRepair()
}

// Tick advances virtual time by one 10 ms tick (4.7).
func (r *Replica) Tick() {
	if !r.Member() {
		return // removed or not yet joined: nothing runs on time
	}
	if r.prepareTimer.tick() {
		r.onPrepareTimeout()
	}
	if r.commitTimer.tick() {
		r.onCommitTimeout()
	}
	if r.heartbeatTimer.tick() && r.status == StatusNormal && (!r.IsPrimary() || r.ceded) {
		if r.mayNapAgain() {
			r.nap() // its primary is quiet, not gone (quiesce.go rule 4)
		} else {
			r.primaryGone()
		}
	}
	r.tickViewChange()
	if !r.IsPrimary() || r.vc.merged != nil {
		r.tickRepair()
	}
	if len(r.fates) > 0 {
		r.tickFates()
	}
	if r.stateBackoff > 0 {
		r.stateBackoff--
	}
	if r.stateFailures > 0 {
		r.stateFailingTicks++
	}
}

// primaryGone is 6.2 rule 1: a silent primary.
func (r *Replica) primaryGone() {
	if r.observedNewerView > r.view || !r.voter() {
		r.startProbe()
	} else {
		r.beginViewChange(r.view + 1)
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
		for rep := 0; rep < MaxReplicas; rep++ {
			if e.acks&(1<<rep) != 0 || !r.roster.Member(uint8(rep)) {
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
	if !r.Leading() || r.solo() {
		return
	}
	if r.observedNewerView > r.view {
		r.startProbe() // 5.10 rule 1: a newer view exists; this primary is stale
		return
	}
	if r.idle() && r.quiesceOrNotify() {
		return // quiet: no heartbeat (quiesce.go rule 1)
	}
	r.commitTimer.start()
	r.heartbeat++
	r.nudgeLearners()
	r.hintDeparted()
	r.maybePromote()
	for rep := 0; rep < MaxReplicas; rep++ {
		if uint8(rep) == r.cfg.Replica || !r.roster.Member(uint8(rep)) {
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

func assert(ok bool, invariant string) {
	if !ok {
		panic("vsr: invariant violated: " + invariant)
	}
}
