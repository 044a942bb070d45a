package vsr

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"

	"iggynode/wire"
)

// Reconfiguration (issue 22): changing a group's replicas while it runs.
//
// # The choice: VSR-revisited's epochs, not Raft's joint consensus
//
// Liskov and Cowling's "Viewstamped Replication Revisited" (2012, section
// 7) changes the group by committing a reconfiguration request in the old
// epoch e; the old group's primary accepts no op after it; the new epoch
// e+1 starts from that committed op with the new roster, new members get
// the state by transfer, the old members stay up until the new ones have
// the log, and every message carries its epoch, so a message of another
// epoch is never taken for one of this epoch. Raft's joint consensus
// (Ongaro's thesis, chapter 4) runs a transitional configuration whose
// every decision needs a majority of both the old and the new members.
//
// We take the epochs, for three reasons that come from this core:
//
//   - The core's quorums are counts over one bitmask (quorum.go): q_rep
//     PrepareOks, q_vc DoViewChanges, q_nack nacks over one replica count,
//     and the merge of 6.7 reasons about that one count. Joint consensus
//     would need a pair of quorums in every one of those places, in the
//     merge too, and a proof that the nack rule still holds over two
//     counts; epochs keep each view's quorum rules exactly as they are,
//     over the one roster of that view's epoch.
//   - The primary of a view is a function of the view (4.4, PrimaryIndex):
//     with epochs it stays one, of the view and its epoch's roster.
//     Across a joint configuration the primary must be a member of both,
//     an extra rule on every election.
//   - State transfer (7.6) and repair (7.2) already exist and are how VSR
//     brings a replica without the log up to date; epochs need nothing
//     else to bring a new member in.
//
// # How it fits the existing core
//
// Epoch in every message, without a new field: the epoch is the top
// EpochShift bits of the view (EpochOf). The views of epoch e are
// [e<<24, (e+1)<<24), so views of different epochs never share a number,
// and every replica-plane header already carries a view. Epoch 0 holds
// views 0..2^24-1: a cluster that never reconfigures behaves and encodes
// exactly as before.
//
// A Roster is (Epoch, Voters, Learners, Target): bitmasks over replica ids
// 0..31. Voters count toward quorums and may lead (the primary of view v
// is the (v mod n)-th voter in id order, n the number of voters: the
// spec's PrimaryIndex when the voters are 0..n-1). Learners get every
// prepare and heartbeat, journal, acknowledge and repair like backups, but
// their acknowledgements count toward no quorum and they never vote or
// lead. Target is the voter set the change heads for.
//
// The reconfiguration op is an ordinary op (wire.OpReconfigure, 120, in
// the server-internal range) whose body is the new roster (EncodeRoster).
// A change to target T from voters V takes at most two of them: R1 adds
// T \ V as learners (epoch e+1); once every learner has acknowledged the
// primary's commit point (it holds the log), the primary of e+1 commits R2
// on its own: voters T, no learners (epoch e+2), which removes V \ T.
// Replacing a host is the same with T = V minus the old id plus the new;
// a new address for the same id is the shell's business (the roster the
// metadata group keeps beside it; see "what is left" below).
//
// # The rules that keep it safe (each a test in reconfig_test.go)
//
//	S1 Stop. A primary that prepared R (at op k) in epoch e prepares
//	   nothing above k in e (Submit answers ErrBusy; requests queued behind
//	   R are cancelled when the epoch changes). A primary-elect whose merged
//	   log holds R likewise: every view's log of epoch e ends at R if it
//	   holds one, by induction over views (the merged log is a prefix of
//	   some earlier view's log). So nothing above k is ever committed in e:
//	   no op committed by a quorum of the old membership is lost, because
//	   every op the old epoch committed is at or below k and the new epoch
//	   starts from the log up to k.
//	S2 Rosters by epoch. A view's primary, chain, and quorums are those of
//	   its epoch's roster, and a replica knows an epoch's roster only by
//	   applying the R that opens it (or by installing a state transfer
//	   that applied it). Then two primaries of one view are impossible
//	   across old and new members: views of different epochs differ, and
//	   within an epoch every replica computes the view's primary from the
//	   same roster, so the usual q_vc argument holds.
//	S3 Fence. A replica takes part only in views of its own epoch: Prepare,
//	   PrepareOk, Commit, StartViewChange, DoViewChange, StartView and
//	   RequestStartView of an older epoch are dropped (and answered with a
//	   Commit heartbeat of the current view, so the laggard learns there is
//	   a newer epoch); of a newer epoch they mean this replica missed an R:
//	   it does not act on them (it does not know that epoch's roster) and
//	   asks the sender for a state transfer (NeedTransfer). Without the
//	   fence a laggard would count quorums of a new view with the old
//	   roster and could lead it beside the real primary.
//	S4 Opening. A replica applying R at k enters epoch e+1 at view
//	   FirstView(e+1) in Normal with log_view = that view and its log up to
//	   k, all committed. No view change is needed: every replica that
//	   applied R holds the same log up to k (hash chain), nothing above k
//	   was committed in e (S1), and only the primary of FirstView(e+1)
//	   prepares in it. The primary that committed R sends the old roster a
//	   last Commit heartbeat in the old view first, so backups that hold R
//	   apply it through the normal commit path (5.10) and follow at once;
//	   one that misses it is a laggard of S3. Removing the current primary
//	   is therefore a planned view change: R excludes it, and the first
//	   view of the next epoch has another primary the moment R applies.
//	S5 Learners count for nothing: their acknowledgements are never in
//	   a replication quorum, their StartViewChange, DoViewChange and
//	   probes are not counted, and a learner whose primary goes silent
//	   probes (RequestStartView) rather than elects. Promotion is R2, an
//	   op committed by the voters of the learner epoch.
//	S6 Removed. A replica applying (or installing) a roster without it is
//	   removed: it serves repair (RequestPrepares) and state transfer to
//	   the members still catching up, answers frames of older epochs with
//	   the hint of S3 (it may be the only replica that applied the R its
//	   old group needs), takes part in nothing else, answers Submit with
//	   ErrRemoved, and says so (Removed); its shell keeps it up until the
//	   new epoch's members hold the log (VSR-revisited's "the old group
//	   stays up"), then stops it.
//
// A replica that joins fresh (Config.Roster naming no voter it belongs
// to, epoch 0) is a joiner: it does nothing until a frame of a newer epoch
// reaches it (the primary of the learner epoch sends it prepares), then
// transfers state from that primary and installs the roster with it
// (InstalledEpoch), then probes for the current view like a restarted
// replica (6.12) and is a learner until R2 promotes it.
//
// Limits: 2^24 views per epoch and 2^8 epochs (a view change that would
// leave its epoch is not started; an R past epoch 255 is refused), ids
// below 32 (the bitmasks of 4.5 are u32).
//
// # The shell
//
// actors/reconfig.go runs it on the node (durable roster, joiners,
// links, transfers across epochs, the removed node's drain, the admin
// commands 9001-9004, partition groups following the metadata group's
// roster); docs/reconfiguration.md is the map of what is done and what
// is left. The metadata group's roster with addresses is
// metadata/roster.go (ReconfigureWith carries it).

// EpochShift splits a view into its epoch (high 8 bits) and the view
// within the epoch (low 24 bits).
const EpochShift = 24

// MaxEpoch is the last epoch a view can carry.
const MaxEpoch = 1<<(32-EpochShift) - 1

// MaxReplicas bounds replica ids (bitmasks are u32).
const MaxReplicas = 32

// EpochOf is the epoch a view belongs to.
func EpochOf(view uint32) uint32 { return view >> EpochShift }

// FirstView is the view an epoch starts in.
func FirstView(epoch uint32) uint32 { return epoch << EpochShift }

// Roster is a group's membership in one epoch (see above).
type Roster struct {
	Epoch    uint32
	Voters   uint32
	Learners uint32
	// Target is the voter set a change in progress heads for; Voters when
	// none is.
	Target uint32
}

// DefaultRoster is epoch 0 with voters 0..n-1, the fixed roster of a
// cluster configured with n replicas.
func DefaultRoster(n int) Roster {
	m := uint32(1)<<n - 1
	if n >= MaxReplicas {
		m = ^uint32(0)
	}
	return Roster{Voters: m, Target: m}
}

// Voter reports whether id votes in this epoch.
func (ro Roster) Voter(id uint8) bool { return id < MaxReplicas && ro.Voters&(1<<id) != 0 }

// Learner reports whether id is a learner in this epoch.
func (ro Roster) Learner(id uint8) bool { return id < MaxReplicas && ro.Learners&(1<<id) != 0 }

// Member reports whether id is a voter or a learner.
func (ro Roster) Member(id uint8) bool { return ro.Voter(id) || ro.Learner(id) }

// Members is the bitmask of voters and learners.
func (ro Roster) Members() uint32 { return ro.Voters | ro.Learners }

// N is the number of voters, the n of 4.5's quorums.
func (ro Roster) N() int { return bits.OnesCount32(ro.Voters) }

// Changing reports whether a change is in progress (Target not reached).
func (ro Roster) Changing() bool { return ro.Target != ro.Voters || ro.Learners != 0 }

// Primary is the primary of view v: the (v mod n)-th voter in id order
// (PrimaryIndex when the voters are 0..n-1).
func (ro Roster) Primary(view uint32) uint8 {
	n := ro.N()
	if n == 0 {
		return 0xff
	}
	return nthBit(ro.Voters, int(view%uint32(n)))
}

// next is the voter after id in the cyclic id order of the chain (4.6).
func (ro Roster) next(id uint8) uint8 {
	for i := 1; i <= MaxReplicas; i++ {
		c := uint8((int(id) + i) % MaxReplicas)
		if ro.Voter(c) {
			return c
		}
	}
	return id
}

func nthBit(m uint32, i int) uint8 {
	for ; i > 0; i-- {
		m &= m - 1
	}
	return uint8(bits.TrailingZeros32(m))
}

func (ro Roster) String() string {
	return fmt.Sprintf("epoch %d voters %s learners %s target %s", ro.Epoch, ids(ro.Voters), ids(ro.Learners), ids(ro.Target))
}

func ids(m uint32) string {
	s := "{"
	for i := 0; i < MaxReplicas; i++ {
		if m&(1<<i) != 0 {
			if len(s) > 1 {
				s += ","
			}
			s += fmt.Sprint(i)
		}
	}
	return s + "}"
}

// rosterMagic starts an OpReconfigure body ("RSTR").
const rosterMagic = 0x52545352

// RosterBodySize is the length of an encoded roster.
const RosterBodySize = 20

// EncodeRoster appends the body of an OpReconfigure prepare: magic, epoch,
// voters, learners, target, each u32 little-endian.
func EncodeRoster(dst []byte, ro Roster) []byte {
	for _, v := range []uint32{rosterMagic, ro.Epoch, ro.Voters, ro.Learners, ro.Target} {
		dst = binary.LittleEndian.AppendUint32(dst, v)
	}
	return dst
}

// DecodeRoster reads an OpReconfigure body.
func DecodeRoster(b []byte) (Roster, error) {
	if len(b) < RosterBodySize || binary.LittleEndian.Uint32(b) != rosterMagic {
		return Roster{}, errors.New("vsr: not a roster body")
	}
	u := func(i int) uint32 { return binary.LittleEndian.Uint32(b[4*i:]) }
	ro := Roster{Epoch: u(1), Voters: u(2), Learners: u(3), Target: u(4)}
	if ro.Voters == 0 || ro.Voters&ro.Learners != 0 || ro.Epoch > MaxEpoch {
		return Roster{}, errors.New("vsr: invalid roster")
	}
	return ro, nil
}

// RosterOf decodes the roster a committed OpReconfigure frame carries
// (ok false for any other op); RosterTrailer is the rest of its body.
func RosterOf(frame []byte) (Roster, bool) {
	if len(frame) < wire.HeaderSize || wire.HeaderOf(frame).Prepare().Operation != wire.OpReconfigure {
		return Roster{}, false
	}
	ro, err := DecodeRoster(frame[wire.HeaderSize:])
	return ro, err == nil
}

// RosterTrailer is the shell's part of an OpReconfigure body.
func RosterTrailer(frame []byte) []byte {
	if len(frame) < wire.HeaderSize+RosterBodySize {
		return nil
	}
	return frame[wire.HeaderSize+RosterBodySize:]
}

// ErrRemoved answers Submit and Reconfigure at a replica the roster no
// longer names (S6).
var ErrRemoved = errors.New("vsr: replica removed from the group")

// ErrReconfiguring answers Reconfigure while an R is already in the
// pipeline.
var ErrReconfiguring = errors.New("vsr: a reconfiguration is in flight")

// Roster is this replica's current roster.
func (r *Replica) Roster() Roster { return r.roster }

// Epoch is this replica's current epoch.
func (r *Replica) Epoch() uint32 { return r.roster.Epoch }

// EpochOp is the op of the R that opened the epoch (0 in epoch 0).
func (r *Replica) EpochOp() uint64 { return r.epochOp }

// LearnerAck is the highest op learner id acknowledged to this primary in
// the epoch (0: none, or not a learner).
func (r *Replica) LearnerAck(id uint8) uint64 {
	if id >= MaxReplicas || !r.roster.Learner(id) {
		return 0
	}
	return r.learnerAck[id]
}

// Removed reports whether this replica applied a roster without it (S6).
func (r *Replica) Removed() bool { return r.removed }

// Member reports whether this replica is a voter or learner of its epoch.
func (r *Replica) Member() bool { return !r.removed && r.roster.Member(r.cfg.Replica) }

// Learner reports whether this replica is a learner of its epoch.
func (r *Replica) Learner() bool { return r.roster.Learner(r.cfg.Replica) }

// voter reports whether this replica votes in its epoch.
func (r *Replica) voter() bool { return !r.removed && r.roster.Voter(r.cfg.Replica) }

// solo reports a group of one: this replica is its only member, and
// commits with a quorum of one and nobody to send to.
func (r *Replica) solo() bool { return r.roster.Members() == 1<<r.cfg.Replica }

// pendingReconfig is the op of an R in the log above commit_min (0 when
// none): S1's stop.
func (r *Replica) pendingReconfig() uint64 {
	for op := r.commitMin + 1; op <= r.sequencer; op++ {
		if e := r.log[op]; e != nil && e.hdr.Operation == wire.OpReconfigure {
			return op
		}
	}
	return 0
}

// Reconfigure starts a change toward voters target at the leading
// primary: R1 (target's new ids as learners) or, when target adds
// nobody, R2 at once. A change in progress is redirected to the new
// target. The op commits like any other; R2 follows on its own (S5).
func (r *Replica) Reconfigure(target uint32, nowUs uint64) error {
	return r.ReconfigureWith(target, nil, nowUs)
}

// ReconfigureWith is Reconfigure with the shell's part of the R body
// (trailer, appended after the roster): the metadata group puts every
// node's address there (metadata/roster.go). The core keeps the trailer
// of the last R it applied and sends it again with the R2 it proposes on
// its own, so the trailer must describe every node either step names.
func (r *Replica) ReconfigureWith(target uint32, trailer []byte, nowUs uint64) error {
	switch {
	case r.removed:
		return ErrRemoved
	case !r.Leading():
		return ErrNotPrimary
	case target == 0:
		return errors.New("vsr: an empty roster")
	case r.pendingReconfig() != 0:
		return ErrReconfiguring
	}
	next := Roster{Epoch: r.roster.Epoch + 1, Voters: r.roster.Voters, Learners: target &^ r.roster.Voters, Target: target}
	if next.Learners == 0 {
		next.Voters = target
	}
	if next == (Roster{Epoch: next.Epoch, Voters: r.roster.Voters, Learners: r.roster.Learners, Target: r.roster.Target}) {
		return nil // already there
	}
	if trailer == nil {
		trailer = r.rosterTrailer
	}
	return r.submitRoster(next, trailer, nowUs)
}

// ErrNotVoter answers HandOver to a replica that does not vote.
var ErrNotVoter = errors.New("vsr: not a voter of this epoch")

// HandOver is a planned view change (issue 23's leadership balance): the
// leading primary starts the view change to the first view after its own
// whose primary is to. It is a view change like any other (6.3): the
// primary-elect merges the DoViewChanges of a quorum and starts the view;
// requests in the pipeline are cancelled and re-issued by their clients;
// if to does not take the view, the usual escalation moves on to the
// next one. Nothing of the view change's safety argument depends on who
// starts it or why.
func (r *Replica) HandOver(to uint8) error {
	switch {
	case r.removed:
		return ErrRemoved
	case !r.Leading():
		return ErrNotPrimary
	case !r.roster.Voter(to):
		return ErrNotVoter
	case to == r.cfg.Replica:
		return nil
	}
	v := r.view + 1
	for r.roster.Primary(v) != to {
		v++
	}
	if EpochOf(v) != r.roster.Epoch {
		return errors.New("vsr: views of this epoch exhausted")
	}
	r.beginViewChange(v)
	return nil
}

// RenewEpoch proposes the next epoch with the same members and a new
// trailer: how the shell moves a replica id to a new address (the
// metadata roster's addresses change on every replica at one op). It is
// an R like any other (S1-S6 hold for any roster, this one included).
func (r *Replica) RenewEpoch(trailer []byte, nowUs uint64) error {
	switch {
	case r.removed:
		return ErrRemoved
	case !r.Leading():
		return ErrNotPrimary
	case r.pendingReconfig() != 0:
		return ErrReconfiguring
	}
	next := r.roster
	next.Epoch++
	return r.submitRoster(next, trailer, nowUs)
}

func (r *Replica) submitRoster(next Roster, trailer []byte, nowUs uint64) error {
	if next.Epoch > MaxEpoch {
		return errors.New("vsr: epochs exhausted")
	}
	frame := EncodeRoster(make([]byte, wire.HeaderSize, wire.HeaderSize+RosterBodySize+len(trailer)), next)
	frame = append(frame, trailer...)
	req := Request{Operation: wire.OpReconfigure, Frame: frame,
		Request: uint64(next.Epoch), Client: wire.U128{Lo: uint64(next.Epoch), Hi: 0x1994_ec0f}}
	r.wake()
	r.nowUs = max(r.nowUs, nowUs)
	if r.PipelineLen() >= r.cfg.PrepareQueueDepth {
		return ErrBusy
	}
	// R goes ahead of queued requests: they are cancelled at the epoch
	// change (S1), and re-issued by their clients.
	r.prepare(req)
	r.ReconfigsProposed++
	return nil
}

// maybePromote is R2 (S5): the primary of a learner epoch commits the
// target roster once every learner it promotes holds the log.
func (r *Replica) maybePromote() {
	ro := r.roster
	if !ro.Changing() || !r.Leading() || r.removed || r.commitMin < r.epochOp || r.pendingReconfig() != 0 ||
		r.commitMin != r.commitMax {
		return
	}
	for id := uint8(0); id < MaxReplicas; id++ {
		if ro.Learner(id) && ro.Target&(1<<id) != 0 && r.learnerAck[id] < max(r.commitMin, 1) {
			return
		}
	}
	_ = r.submitRoster(Roster{Epoch: ro.Epoch + 1, Voters: ro.Target, Target: ro.Target}, r.rosterTrailer, r.nowUs)
}

// nudgeLearners sends each learner not yet caught up the prepare at the
// commit point, which it acknowledges once it holds it (5.7, ackHeld):
// how an idle primary learns that its learners caught up.
func (r *Replica) nudgeLearners() {
	if !r.roster.Changing() || r.commitMin == 0 {
		return
	}
	f := r.frameAt(r.commitMin)
	if f == nil {
		return
	}
	e := &entry{frame: f, hdr: wire.HeaderOf(f).Prepare()}
	for id := uint8(0); id < MaxReplicas; id++ {
		if r.roster.Learner(id) && r.learnerAck[id] < r.commitMin {
			r.sendPrepare(id, e)
		}
	}
}

// enterEpoch is S4: R (roster ro) applied at op.
func (r *Replica) enterEpoch(ro Roster, op uint64, trailer []byte) {
	if ro.Epoch <= r.roster.Epoch {
		r.drop("reconfiguration to an epoch not ahead")
		return
	}
	if r.Leading() {
		r.finalHeartbeat(op)
	}
	old := r.roster.Members()
	for o := range r.log {
		if o > op {
			r.drop("ops above a committed reconfiguration")
			r.truncateFrom(op + 1)
			break
		}
	}
	r.switchRoster(ro, op)
	if r.cfg.Quiesce && ro.Member(r.cfg.Replica) {
		gone := old &^ ro.Members()
		r.departed |= gone
		for id := range r.departedHints {
			if gone&(1<<id) != 0 {
				r.departedHints[id] = 0
			}
		}
	}
	r.rosterTrailer = append([]byte(nil), trailer...)
	r.EpochsEntered++
	if !r.Member() {
		return
	}
	r.view, r.logView = FirstView(ro.Epoch), FirstView(ro.Epoch)
	r.status = StatusNormal
	r.enterNormal()
	r.maybePromote()
}

// switchRoster takes roster ro from op on: everything of the old epoch's
// views is forgotten (S3 makes it unreachable anyway).
func (r *Replica) switchRoster(ro Roster, op uint64) {
	r.leaveQuiet()
	r.resetViewChange()
	r.adopted, r.adoptedTop, r.adoptedSuffix, r.knownHead, r.faultyHead = nil, 0, nil, 0, 0
	r.recoveryBarrier, r.primaryBeat, r.ceded, r.observedNewerView = 0, 0, false, 0
	r.probeAttempts, r.probing, r.probingViewMax, r.escalations = 0, 0, 0, 0
	r.learnerAck = [MaxReplicas]uint64{}
	r.departed &^= ro.Members()
	wasMember := r.removed || r.roster.Member(r.cfg.Replica)
	r.roster, r.epochOp = ro, op
	r.removed = false
	r.svcTimer.stop()
	r.dvcTimer.stop()
	r.vcStatusTimer.stop()
	r.rsvTimer.stop()
	r.prepareTimer.stop()
	if !ro.Member(r.cfg.Replica) {
		// A joiner installing a state from before its epoch stays a
		// joiner; a member leaves for good (until a roster names it again).
		r.cancelFates(^uint64(0)) // no commit reaches it any more
		r.removed = wasMember
		r.departed = 0
		r.heartbeatTimer.stop()
		r.commitTimer.stop()
		r.view, r.logView = FirstView(ro.Epoch), FirstView(ro.Epoch)
	}
}

// finalHeartbeat is S4's last Commit of the old view, to every member of
// the old roster: backups holding R apply it and follow.
func (r *Replica) finalHeartbeat(op uint64) {
	r.heartbeat++
	for id := uint8(0); id < MaxReplicas; id++ {
		if id == r.cfg.Replica || !r.roster.Member(id) {
			continue
		}
		c := wire.CommitHeader{Cluster: r.cfg.Cluster, View: r.view, Replica: r.cfg.Replica,
			TimestampMonotonic: r.heartbeat, Commit: op, Group: r.cfg.Group}
		head := make([]byte, wire.HeaderSize)
		c.Encode(wire.HeaderOf(head))
		r.ready.Send = append(r.ready.Send, Envelope{To: id, Head: head})
	}
}

// fence is S3, run before a view-scoped frame is handled: it reports
// whether the frame is of this replica's epoch (and may be handled).
func (r *Replica) fence(h *wire.Header) bool {
	switch h.Command() {
	case wire.CmdPrepare, wire.CmdPrepareOk, wire.CmdCommit, wire.CmdStartViewChange,
		wire.CmdDoViewChange, wire.CmdStartView, wire.CmdRequestStartView:
	default:
		return !r.removed || h.Command() == wire.CmdRequestPrepares
	}
	from := h.Replica()
	switch e := EpochOf(h.View()); {
	case e < r.roster.Epoch:
		r.drop("frame of an older epoch")
		r.epochHint(from)
		return false
	case e > r.roster.Epoch:
		r.drop("frame of a newer epoch")
		if from < MaxReplicas && from != r.cfg.Replica && !r.transferring && r.NeedTransfer < 0 && !(r.removed && isHint(h)) {
			// A removed replica too: only members get frames of newer
			// epochs, so it has been named again. Not for a hint: the
			// primaries of later epochs still hint the replicas an R
			// removed (hintDeparted), and one that knows it is removed
			// would fetch a copy of the partition it no longer holds,
			// and keep it (docs/faults.md, grow-3-to-5-rebalance's stale
			// bytes).
			r.NeedTransfer = int(from) // S3: catch up by state transfer
			r.EpochTransfers++
		}
		return false
	}
	if r.removed && from != r.cfg.Replica && r.roster.Member(from) && isHint(h) {
		r.epochHint(from) // hintDeparted's answer: this replica knows it is removed
	}
	return r.Member()
}

// isHint reports whether h is the Commit of epochHint (counter 0).
func isHint(h *wire.Header) bool {
	if h.Command() != wire.CmdCommit {
		return false
	}
	c, err := wire.DecodeCommitHeader(h)
	return err == nil && c.TimestampMonotonic == 0
}

// hintDeparted is S4's last heartbeat again, under quiescence, for the
// replicas an R this replica applied removed: one that was away when the
// R committed (a paused process) missed the last heartbeat, and if it is
// a quiet backup of the old epoch nothing else ever reaches it (its
// primary's node is alive, and the new roster sends it nothing). The
// leading primary sends each live one the S3 hint at every commit
// heartbeat and is not idle meanwhile (quiesce.go); the replica
// transfers the newer state, is removed, and answers a hint of its own
// epoch with one of its own, which ends it. At most departedHintsMax
// hints per replica since its node was last found (PeerFound): a pause
// longer than the node-level timeout loses the node and finds it again,
// a shorter one ends while hints still come, and a replica whose shell
// dropped the group, which never answers, does not keep the group awake.
// Not durable: a restarted primary, or one that installed its epoch,
// hints nobody. Only when to send, never what anyone accepts: S3's
// fence decides what a hint does.
func (r *Replica) hintDeparted() {
	for id := uint8(0); id < MaxReplicas; id++ {
		if r.hinting(id) {
			r.departedHints[id]++
			r.epochHint(id)
		}
	}
}

// departedHintsMax bounds hintDeparted: twenty commit heartbeats (10 s
// by default) cover twice the node-level timeout.
const departedHintsMax = 20

// hinting reports whether hintDeparted still hints replica id.
func (r *Replica) hinting(id uint8) bool {
	return r.departed&(1<<id) != 0 && r.departedHints[id] < departedHintsMax && r.live(id)
}

// hintingDeparted reports whether a departed replica is still hinted.
func (r *Replica) hintingDeparted() bool {
	for id := uint8(0); id < MaxReplicas; id++ {
		if r.hinting(id) {
			return true
		}
	}
	return false
}

// epochHint answers a frame of an older epoch with a Commit heartbeat of
// the current view (TimestampMonotonic 0: never a heartbeat that resets
// anyone's timer), which the laggard reads as "a newer epoch exists".
//
// A removed replica answers too: it may be the only one left that applied
// the R its old group needs (the others missed the last heartbeat, and
// without it they cannot finish a view change of the old epoch), so it
// hints and serves the transfer (S6).
func (r *Replica) epochHint(to uint8) {
	if to >= MaxReplicas || to == r.cfg.Replica {
		return
	}
	c := wire.CommitHeader{Cluster: r.cfg.Cluster, View: r.view, Replica: r.cfg.Replica, Commit: r.commitMin, Group: r.cfg.Group}
	head := make([]byte, wire.HeaderSize)
	c.Encode(wire.HeaderOf(head))
	r.ready.Send = append(r.ready.Send, Envelope{To: to, Head: head})
}

// InstallAllowedEpoch is InstallAllowed for a state that applied roster
// ro: one of a newer epoch is installed whatever this replica's status,
// since this replica can take part in nothing until it has it (S3).
func (r *Replica) InstallAllowedEpoch(commitOp uint64, ro Roster) bool {
	if ro.Epoch > r.roster.Epoch {
		return commitOp > r.commitMin
	}
	return r.InstallAllowed(commitOp)
}

// InstalledEpoch is Installed for a state that applied roster ro. Of a
// newer epoch, the replica takes the roster, stands at FirstView of it
// with the installed log (all committed; it acknowledged nothing in that
// epoch, so its nacks there are true) and probes for the current view
// (6.12), or is removed (S6).
func (r *Replica) InstalledEpoch(snapshotOp, commitMax uint64, ro Roster) {
	if ro.Epoch <= r.roster.Epoch {
		r.Installed(snapshotOp, commitMax)
		return
	}
	r.transferring, r.NeedTransfer = false, -1
	clear(r.log)
	r.retained = retained{}
	r.cancelFates(snapshotOp)
	r.commitMin, r.sequencer = snapshotOp, snapshotOp
	r.commitMax = max(commitMax, snapshotOp)
	r.committedChecksum, r.lastChecksum = wire.U128{}, wire.U128{}
	r.repair = repairSession{}
	r.refusedInARow, r.repairBackoff = 0, 0
	r.switchRoster(ro, snapshotOp)
	if !r.Member() {
		return // removed, or a joiner not named yet: the next epoch's frames bring it on
	}
	r.view, r.logView = FirstView(ro.Epoch), FirstView(ro.Epoch)
	r.startProbe()
}

// SetRosterTrailer gives back the trailer of the last applied R after a
// restart or an install (the metadata state machine keeps it).
func (r *Replica) SetRosterTrailer(trailer []byte) { r.rosterTrailer = append([]byte(nil), trailer...) }
