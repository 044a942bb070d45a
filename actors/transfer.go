package actors

import (
	"cmp"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"golang.org/x/time/rate"

	"iggynode/config"

	"iggynode/metadata"
	"iggynode/partition"
	"iggynode/storage"
	"iggynode/vsr"
	"iggynode/wire"
)

// State transfer (replica-plane.md 7.6-7.9), the shell's part: serving
// offers and chunks, running the receiver's vsr.TransferSession, and
// installing what it fetched. transferShell is the part the metadata and
// the partition actors share; each supplies how an offer is built and how
// a fetched one is installed.
//
// Choices where the spec leaves room:
//   - An offer is built from the state at the primary's commit point when
//     it is asked for, not from the last checkpoint file: for metadata a
//     snapshot payload and the ICT2 table with every reply ring, both with
//     frontier commit_op; for a partition its stored batches as
//     SEGMENT_LOG artifacts of at most 64 MiB (each a concatenation of
//     stamped batches, 13.3) and its ICO1 offsets. Offers are cached per
//     (requester, nonce) until idle for 10 repair retry intervals. A
//     partition's segments are not copied: the offer holds handles on its
//     batch files (storage.SegmentRanges) and reads each chunk from them
//     as it is asked for, so an offer costs memory only for its offsets;
//     building it reads the segments once, to hash them, on the partition
//     actor, in rounds of about 256 MiB (requests meanwhile are refused
//     transiently), and a range an earlier offer hashed is not read again
//     (the files are append-only). The bytes of the partition offers a
//     node holds are bounded node-wide by
//     partition.transfer_served_cache_bytes_max (7.7 rule 2, default
//     2176 MiB), which bounds that reading and the files held open: an
//     offer reserves its whole size before its build starts, one that
//     does not fit is refused transiently (the requester asks again once
//     others expire), and a partition larger than the whole bound
//     permanently (the operator raises the bound, up to 64 GiB).
//     An offer is dropped when its files are deleted by a purge or an
//     install, or by retention while the disk is below its soft reserve
//     (the handles would keep the deleted files' blocks until the offer
//     expired); its requester is refused at its next chunk and asks again.
//   - A node receives at most 4 partition transfers at once (7.7 rule 1);
//     a partition that needs one meanwhile waits, asking every tick, and
//     gives the request back to its core if the view changes first. A
//     transient refusal of its request keeps the transfer (and its slot):
//     it asks again a repair retry interval later (7.7 rule 5), and falls
//     back to repair only after more than 5 in a row (the stall rule). The
//     receiver stages the segments it fetches in files (storage.TransferStage,
//     13.3 rule 5) and holds only the offsets in memory. A transfer that
//     fails leaves the segments it staged whole to the group's next one
//     (7.7 rule 6), which takes those its offer names with the same
//     frontier, length and checksum from the stage instead of fetching
//     them; they are deleted after keptStageTicks retry intervals without
//     a transfer, with a purge, or when the group actor stops.
//   - A fetched state that is not ahead of this replica's commit point is
//     not installed (no table-only install): the replica goes back to
//     journal repair, which that commit point can reach.
//   - One transfer runs per group at a time.

// transferOffer is one served offer and how long it has been idle.
type transferOffer struct {
	*vsr.Offer
	idle   int
	served bool // the last artifact's tail went out
	// reserved is what the offer holds of the node's served-offer bound
	// (transferLimits), given back when it is dropped; release closes
	// the files it reads its segments from.
	reserved int64
	release  func()
}

// maxPartitionReceivers is 7.7 rule 1: partition transfers a node
// receives at once.
const maxPartitionReceivers = 4

// transferLimits are a node's bounds on state transfer (7.7 rules 1 and
// 2): the bytes of the partition offers it holds for serving, and the
// partition transfers it receives at once. Every partition actor shares
// them; the gauges iggy.cluster.transfer.offers.bytes and
// iggy.cluster.transfer.receiving read them.
type transferLimits struct {
	servedMax int64
	served    atomic.Int64
	receiving atomic.Int64
	// refused counts offers refused for the served bound; hashed the
	// segment bytes offer builds read to hash them.
	refused, hashed atomic.Int64
}

// reserve takes n bytes of the served bound, or reports that they do not
// fit (nothing taken).
func (l *transferLimits) reserve(n int64) bool {
	for {
		cur := l.served.Load()
		if cur+n > l.servedMax {
			return false
		}
		if l.served.CompareAndSwap(cur, cur+n) {
			return true
		}
	}
}

// release gives back n reserved bytes.
func (l *transferLimits) release(n int64) {
	if n != 0 {
		l.served.Add(-n)
	}
}

// startReceiving takes one of the receiving slots, or reports none free.
func (l *transferLimits) startReceiving() bool {
	for {
		cur := l.receiving.Load()
		if cur >= maxPartitionReceivers {
			return false
		}
		if l.receiving.CompareAndSwap(cur, cur+1) {
			return true
		}
	}
}

// stopReceiving gives a receiving slot back.
func (l *transferLimits) stopReceiving() { l.receiving.Add(-1) }

type offerKey struct {
	requester uint8
	nonce     wire.U128
}

// transferShell runs one group's state transfers on this node: it serves
// offers itself (they read the group actor's state) and receives through
// a child actor (transferActor) that owns the session, supervised by the
// group actor: a child that fails is restarted and begins a fresh session
// against the same peer; its outcome comes back as a message.
type transferShell struct {
	n      *Node
	log    *slog.Logger
	group  uint64
	core   *vsr.Replica
	offers map[offerKey]*transferOffer
	// child receives the running transfer, from peer; receiving: it holds
	// one of the node's partition receiving slots (transferLimits).
	child     *actor.PID
	peer      uint8
	receiving bool
	// waiting: the core asked for a transfer in view waitView and no
	// receiving slot was free (maybeStart).
	waiting  bool
	waitView uint32
	// build makes an offer and says what it reserved of the node's served
	// bound, or says why not (transient: retry later).
	// release (nil: nothing) closes what the offer reads its artifacts
	// from, once it is dropped.
	build func(ctx actor.Context) (o *vsr.Offer, reserved int64, release func(), transient bool)
	// building is a partition offer being hashed round by round
	// (offerBuild); the next request after its last round takes it.
	building *offerBuild
	// sums caches the hash of each batch-file range the last offer
	// served: the files are append-only, so the next build (a retry, the
	// next learner) hashes only what is new. Cleared when the group's
	// files are deleted (dropOffers), which may make a range's name and
	// place hold other bytes.
	sums map[sectionKey]uint64
	// rosterOf reads the roster a fetched state applied (nil: the group
	// keeps its roster, as partition groups do for now), so the core
	// installs across epochs (InstallAllowedEpoch, InstalledEpoch).
	rosterOf func(s *vsr.TransferSession) (*vsr.Roster, error)
	// install applies a complete session's state (partitions: with the
	// segments it staged), once verified.
	install func(s *vsr.TransferSession, stage *storage.TransferStage) error
	// kept is what a failed transfer staged whole, for the next one;
	// keptIdle counts the ticks since (keptStageTicks).
	kept     *keptStage
	keptIdle int
	// Installed counts installed transfers.
	Installed uint64
	tr        *groupTrace // spans (telemetry.go); set by the group actor
}

func newTransferShell(n *Node, log *slog.Logger, group uint64, core *vsr.Replica) *transferShell {
	return &transferShell{n: n, log: log, group: group, core: core, offers: map[offerKey]*transferOffer{}}
}

// Messages between a group actor and its transfer child.
type (
	// transferDone: every artifact arrived (the child stops after it).
	// The stage (partitions) is the receiver's now: deleted once the
	// session is installed or dropped.
	transferDone struct {
		child   *actor.PID
		session *vsr.TransferSession
		stage   *storage.TransferStage
	}
	// transferFailed: refused or stalled (the child stops after it).
	// A partition's stage comes with it when it holds segments staged
	// whole: the group's next transfer reuses those its offer names
	// again (7.7 rule 6).
	transferFailed struct {
		child *actor.PID
		err   error
		kept  *keptStage // nil: nothing staged whole
	}
	// keptStage is a stage a failed transfer left, holding the segments
	// it staged whole (completed) and nothing else.
	keptStage struct {
		stage     *storage.TransferStage
		completed []vsr.StagedSegment
	}
)

// keptStageTicks is how long, in repair retry intervals, a group keeps
// the segments a failed transfer staged for its next attempt (the core
// asks again within 64 intervals, its longest repair backoff).
const keptStageTicks = 128

// onFrame handles commands 22-25 of this group from peer `from`.
func (t *transferShell) onFrame(ctx actor.Context, from uint8, frame []byte) {
	h := wire.HeaderOf(frame)
	switch h.Command() {
	case wire.CmdRequestStateTransfer:
		if q, err := wire.DecodeRequestStateTransferHeader(h); err == nil && q.Replica == from && (t.offers[offerKey{q.Replica, q.Nonce}] != nil || t.serves(q)) {
			t.serveOffer(ctx, q)
		} else if err == nil && q.Replica == from {
			head, _ := t.server().Target(q.Nonce, nil, true) // not from here now: retry
			t.n.send([]vsr.Envelope{{To: q.Replica, Head: head}})
		}
	case wire.CmdRequestStateChunk:
		if q, err := wire.DecodeRequestStateChunkHeader(h); err == nil && q.Replica == from {
			t.serveChunk(q)
		}
	case wire.CmdStateTransferTarget, wire.CmdStateChunk:
		if t.child != nil && from == t.peer {
			ctx.Send(t.child, &peerFrame{from: from, frame: frame})
		}
	}
}

// onOutcome handles a child's report and reports whether the core
// changed (the caller drives it).
func (t *transferShell) onOutcome(ctx actor.Context, msg any) bool {
	switch m := msg.(type) {
	case *transferDone:
		defer t.discard(m.stage)
		if m.child != t.child {
			return false
		}
		ctx.Stop(t.child)
		t.childGone()
		s := m.session
		if !t.core.Transferring() {
			t.log.Info("state transfer outdated by a view change; dropped", "group", t.group, "commit_op", s.CommitOp)
			t.tr.endTransfer("outdated by a view change")
			return false
		}
		var ro *vsr.Roster
		if t.rosterOf != nil {
			var err error
			if ro, err = t.rosterOf(s); err != nil {
				t.abandon(err)
				return true
			}
		}
		allowed := t.core.InstallAllowed(s.CommitOp)
		if ro != nil {
			allowed = t.core.InstallAllowedEpoch(s.CommitOp, *ro)
		}
		if !allowed {
			t.abandon(fmt.Errorf("state at commit %d is not installable now (status %s, commit %d)", s.CommitOp, t.core.Status(), t.core.CommitMin()))
			return true
		}
		if err := t.install(s, m.stage); err != nil {
			t.abandon(err)
			return true
		}
		if ro != nil {
			t.core.InstalledEpoch(s.CommitOp, s.CommitMax, *ro)
		} else {
			t.core.Installed(s.CommitOp, s.CommitMax)
		}
		t.Installed++
		t.log.Info("state transfer installed", "group", t.group, "commit_op", s.CommitOp, "commit_max", s.CommitMax, "from", s.Peer,
			"refused_transiently", s.RefusedTransiently)
		t.tr.endTransfer("installed")
		return true
	case *transferFailed:
		if m.child != t.child {
			if m.kept != nil {
				t.discard(m.kept.stage)
			}
			return false
		}
		ctx.Stop(t.child)
		t.childGone()
		t.keep(m.kept)
		t.abandon(m.err)
		return true
	case *actor.Terminated:
		// A child that reported its outcome is gone already (t.child was
		// cleared); one that the supervisor gave up on is not.
		if t.child == nil || !m.Who.Equal(t.child) {
			return false
		}
		t.childGone()
		t.abandon(fmt.Errorf("the transfer actor stopped"))
		return true
	}
	return false
}

// serves reports whether this replica offers its state to q: a caught-up
// primary always (7.6), and, across epochs, any replica of a newer epoch
// than the requester's view that is normal or removed (S3: the
// laggard's own epoch may have no primary left; S6: a removed replica
// may hold the R its old group needs).
func (t *transferShell) serves(q wire.RequestStateTransferHeader) bool {
	if t.core.CaughtUpPrimary() {
		return true
	}
	return vsr.EpochOf(q.View) < t.core.Epoch() && t.core.CommitMin() > 0 &&
		(t.core.Status() == vsr.StatusNormal || t.core.Removed())
}

// server is this replica as the StateTransferTargets it sends name it.
func (t *transferShell) server() vsr.Server {
	return vsr.Server{Cluster: t.n.cluster.id, View: t.core.View(), Replica: t.n.cluster.self, Group: t.group, CommitMax: t.core.CommitMax()}
}

// serveOffer is 7.6 step 2 (7.7 rule 2 for partitions).
func (t *transferShell) serveOffer(ctx actor.Context, q wire.RequestStateTransferHeader) {
	key := offerKey{q.Replica, q.Nonce}
	o := t.offers[key]
	transient := true
	if o == nil {
		// A requester runs one transfer of a group at a time: a new nonce
		// ends its last session, whose offer would only hold the bound.
		for k, old := range t.offers {
			if k.requester == q.Replica {
				t.dropOffer(k, old)
			}
		}
		var built *vsr.Offer
		var reserved int64
		var release func()
		if built, reserved, release, transient = t.build(ctx); built != nil {
			o = &transferOffer{Offer: built, reserved: reserved, release: release}
			t.offers[key] = o
			t.log.Info("state transfer offered", "group", t.group, "to", q.Replica, "commit_op", o.CommitOp, "artifacts", o.Artifacts())
		}
	}
	var offer *vsr.Offer
	if o != nil {
		o.idle, offer = 0, o.Offer
	}
	head, body := t.server().Target(q.Nonce, offer, transient)
	t.n.send([]vsr.Envelope{{To: q.Replica, Head: head, Body: body}})
}

// serveChunk is 7.6 step 5; a chunk of an offer this node does not hold
// (expired, or served before a restart) is answered with a transient
// refusal.
func (t *transferShell) serveChunk(q wire.RequestStateChunkHeader) {
	o := t.offers[offerKey{q.Replica, q.Nonce}]
	if o == nil {
		head, _ := t.server().Target(q.Nonce, nil, true)
		t.n.send([]vsr.Envelope{{To: q.Replica, Head: head}})
		return
	}
	head, body, tail, err := t.server().Chunk(o.Offer, q, chunkMax(t.n))
	if errors.Is(err, vsr.ErrChunkOutside) {
		return
	}
	if err != nil {
		// Its segments cannot be read: refused for good (7.7 rule 3);
		// the requester moves on to another peer or repair.
		t.log.Warn("state transfer offer dropped: a segment could not be read", "group", t.group, "to", q.Replica, "err", err)
		t.dropOffer(offerKey{q.Replica, q.Nonce}, o)
		head, _ := t.server().Target(q.Nonce, nil, false)
		t.n.send([]vsr.Envelope{{To: q.Replica, Head: head}})
		return
	}
	o.idle, o.served = 0, o.served || tail
	env := []vsr.Envelope{{To: q.Replica, Head: head, Body: body}}
	t.n.refs.tel.transferBytes.Add(int64(len(body)))
	if b := t.n.transferBudget; b != nil {
		// Paced, not refused: the chunk goes when the budget has room
		// (a move throttled by cluster.transfer_bandwidth still ends).
		if wait := b.ReserveN(time.Now(), len(body)).Delay(); wait > 0 {
			time.AfterFunc(wait, func() { t.n.send(env) })
			return
		}
	}
	t.n.send(env)
}

// transferBudgetOf is the pacer of cluster.transfer_bandwidth (bytes per
// second; 0: none). Its burst holds the largest chunk, so every chunk
// can be reserved.
func transferBudgetOf(bw config.Size) *rate.Limiter {
	if bw == 0 {
		return nil
	}
	return rate.NewLimiter(rate.Limit(bw), max(int(bw), 256<<10+wire.HeaderSize))
}

// chunkMax is C of 7.6 step 4.
func chunkMax(n *Node) uint32 {
	return uint32(max(min(256<<10, int(n.opts.Config.MessageBus.MaxMessageSize)-wire.HeaderSize), 1))
}

// tick expires idle offers (7.6 step 9), passes the tick to a running
// transfer (its stall retry, step 7) and starts one the core asks for.
func (t *transferShell) tick(ctx actor.Context) {
	retry := ticks(t.n.opts.Config.Cluster.RepairRetryInterval)
	for k, o := range t.offers {
		limit := 10 * retry
		if o.served {
			limit = 3 * retry // 7.6 step 9
		}
		if o.idle++; o.idle > limit {
			t.dropOffer(k, o)
		}
	}
	if t.child != nil && !t.core.Transferring() {
		ctx.Stop(t.child) // the core left the view the transfer was for
		t.childGone()
	}
	if t.child != nil {
		ctx.Send(t.child, &tick{})
	}
	if b := t.building; b != nil {
		if b.idle++; b.idle > 10*retry { // nobody asked for it since
			t.abortBuild()
		}
	}
	if t.kept != nil && t.child == nil {
		if t.keptIdle++; t.keptIdle > keptStageTicks*retry {
			t.log.Info("staged segments of a failed state transfer deleted: no transfer reused them", "group", t.group)
			t.keep(nil)
		}
	}
	t.maybeStart(ctx)
}

// keep holds k (nil: none) for the group's next transfer, deleting what
// was kept before.
func (t *transferShell) keep(k *keptStage) {
	if t.kept != nil {
		t.discard(t.kept.stage)
	}
	t.kept, t.keptIdle = k, 0
	if k != nil {
		t.log.Info("state transfer keeps the segments it staged whole for its next attempt", "group", t.group,
			"segments", len(k.completed), "bytes", k.stage.Bytes())
	}
}

// busy reports whether tick has work every tick: offers to expire, a
// transfer running, or one the core asks for.
func (t *transferShell) busy() bool {
	return t != nil && (len(t.offers) > 0 || t.child != nil || t.core.NeedTransfer >= 0 || t.kept != nil || t.building != nil)
}

// maybeStart spawns a transfer child when the core found that repair
// cannot reach what it lacks (7.5); a partition waits for a receiving
// slot of the node (7.7 rule 1), asking again every tick.
func (t *transferShell) maybeStart(ctx actor.Context) {
	peer := t.core.NeedTransfer
	if peer < 0 || t.child != nil || t.core.Transferring() || !t.n.cluster.clustered() {
		return
	}
	if t.group != wire.MetadataGroup {
		if t.waiting && (t.core.View() != t.waitView || t.core.Leading()) {
			// Raised in a view this replica has left (it may lead now, or
			// the peer be stale): given back, the core goes back to
			// repair, whose refusal or the next frame of a newer epoch
			// asks again in the state of then.
			t.log.Info("state transfer request given back: the view changed while it waited for a receiving slot",
				"group", t.group, "from", peer, "asked_in_view", t.waitView, "view", t.core.View())
			t.waiting = false
			t.core.SetTransferring(false)
			return
		}
		if !t.n.transferLimits.startReceiving() {
			if !t.waiting {
				t.waiting, t.waitView = true, t.core.View()
				t.log.Debug("state transfer waits for a receiving slot", "group", t.group, "from", peer)
			}
			return // asked again every tick (busy)
		}
		t.waiting, t.receiving = false, true
	}
	t.peer = uint8(peer)
	handoff := t.kept // the child's now (nil: none)
	t.kept = nil
	props := t.n.props(func() actor.Actor {
		return &transferActor{n: t.n, log: t.log, group: t.group, peer: t.peer, partition: t.group != wire.MetadataGroup, view: t.core.View(),
			handoff: handoff}
	})
	t.child = ctx.Spawn(props)
	t.core.SetTransferring(true)
	t.tr.transferStarted(t.peer, t.core.CommitMin(), t.core.CommitMax())
	t.log.InfoContext(t.tr.transferContext(), "state transfer started", "group", t.group, "from", peer, "commit_min", t.core.CommitMin(), "commit_max", t.core.CommitMax())
}

// childGone forgets the transfer child and gives back its receiving slot.
func (t *transferShell) childGone() {
	t.child = nil
	if t.receiving {
		t.receiving = false
		t.n.transferLimits.stopReceiving()
	}
}

// dropOffer forgets a served offer and gives back what it reserved.
func (t *transferShell) dropOffer(k offerKey, o *transferOffer) {
	delete(t.offers, k)
	t.n.transferLimits.release(o.reserved)
	if o.release != nil {
		o.release()
	}
}

// dropOffers forgets every offer the group serves, closing the files
// they read: their requesters are refused at their next chunk and ask
// again, for the group as it is now. The group's files were deleted
// (purge, install) or retention freed space the disk is short of; an
// offer would keep the deleted files' blocks until it expired.
func (t *transferShell) dropOffers(why string) {
	if t == nil {
		return
	}
	t.abortBuild()
	t.sums = nil
	if len(t.offers) == 0 {
		return
	}
	for k, o := range t.offers {
		t.dropOffer(k, o)
	}
	t.log.Info("state transfer offers dropped", "group", t.group, "why", why)
}

// close gives back everything the shell holds of the node's transfer
// bounds, when its group actor stops or restarts (the child stops with
// it; a restarted actor starts a fresh shell).
func (t *transferShell) close() {
	if t == nil {
		return
	}
	for k, o := range t.offers {
		t.dropOffer(k, o)
	}
	if t.child != nil || t.receiving {
		t.childGone()
	}
	t.keep(nil)
	t.abortBuild()
}

// abortBuild gives up the offer being built (nil: none): what it
// reserved of the served bound and the files it reads.
func (t *transferShell) abortBuild() {
	if b := t.building; b != nil {
		t.building = nil
		t.n.transferLimits.release(b.reserved)
		b.release()
	}
}

// discard deletes a finished transfer's staged segments (after an
// install, only their emptied directory).
func (t *transferShell) discard(stage *storage.TransferStage) { discardStage(t.log, t.group, stage) }

func discardStage(log *slog.Logger, group uint64, stage *storage.TransferStage) {
	if err := stage.Discard(); err != nil {
		log.Warn("staged state transfer not deleted; the node's next boot deletes it", "group", group, "err", err)
	}
}

func (t *transferShell) abandon(err error) {
	t.log.Warn("state transfer abandoned; back to journal repair", "group", t.group, "err", err)
	t.tr.endTransfer("abandoned: " + err.Error())
	t.core.SetTransferring(false)
}

// transferActor receives one state transfer: it owns the session, sends
// its requests, takes the peer's frames and ticks from its parent, and
// reports the outcome. A partition's transfer stages its segments in
// files (storage.TransferStage), not in memory. A restart (after a panic)
// begins a fresh session, and a fresh stage deletes what the last one
// staged: nothing of a half-fetched transfer is kept.
type transferActor struct {
	n         *Node
	log       *slog.Logger
	group     uint64
	peer      uint8
	partition bool
	view      uint32 // the core's view when it asked
	session   *vsr.TransferSession
	stage     *storage.TransferStage // partitions; handed over with transferDone
	// handoff is the stage an earlier transfer of the group kept, taken
	// once: an incarnation that restarts after a panic begins afresh.
	handoff *keptStage
}

func (a *transferActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		var nonce [16]byte
		_, _ = rand.Read(nonce[:])
		a.session = vsr.NewTransferSession(a.n.cluster.id, a.n.cluster.self, a.group, a.peer, a.partition,
			int(a.n.opts.Config.MessageBus.MaxMessageSize), wire.U128{Lo: binary.LittleEndian.Uint64(nonce[:]), Hi: binary.LittleEndian.Uint64(nonce[8:])})
		a.session.RequesterView = a.view
		if a.partition {
			if h := a.handoff; h != nil && h.stage != nil {
				// Its first incarnation takes it (the field is shared by
				// the props' every incarnation).
				a.stage, a.session.Stage, a.session.Reusable = h.stage, h.stage, h.completed
				h.stage, h.completed = nil, nil
			} else {
				stage, err := a.n.store.StageTransfer(a.group)
				if err != nil {
					a.finish(ctx, &transferFailed{child: ctx.Self(), err: err})
					return
				}
				a.stage, a.session.Stage = stage, stage
			}
		}
		a.n.send([]vsr.Envelope{a.session.Request()})
	case *actor.Stopping, *actor.Restarting:
		a.dropStage() // stopped before it finished (a view change, its group's restart), or panicked
	case *peerFrame:
		if a.session == nil {
			return // finished; the parent stops this actor
		}
		if hook := transferFrameHook.Load(); hook != nil {
			(*hook)(m.frame)
		}
		var next *vsr.Envelope
		if wire.HeaderOf(m.frame).Command() == wire.CmdStateTransferTarget {
			var err error
			if next, err = a.session.OnTarget(m.frame); err != nil {
				a.finish(ctx, &transferFailed{child: ctx.Self(), err: err})
				return
			}
		} else {
			var err error
			if next, err = a.session.OnChunk(m.frame); err != nil {
				a.finish(ctx, &transferFailed{child: ctx.Self(), err: err})
				return
			}
		}
		if next != nil {
			a.n.send([]vsr.Envelope{*next})
		}
		if a.session.Complete() {
			stage := a.stage
			a.stage = nil
			a.finish(ctx, &transferDone{child: ctx.Self(), session: a.session, stage: stage})
		}
	case *tick:
		if a.session == nil {
			return
		}
		next, err := a.session.Tick(ticks(a.n.opts.Config.Cluster.RepairRetryInterval))
		switch {
		case err != nil:
			a.finish(ctx, &transferFailed{child: ctx.Self(), err: err})
		case next != nil:
			a.n.send([]vsr.Envelope{*next})
		}
	}
}

// transferFrameHook, when set (tests), sees every frame a transfer child
// takes, before it does: a test panics in it to prove the supervision.
var transferFrameHook atomic.Pointer[func(frame []byte)]

// finish reports the outcome to the group actor, which stops this actor
// when it has taken it (stopping here would let the Terminated system
// message overtake the outcome), and forgets the session.
func (a *transferActor) finish(ctx actor.Context, outcome any) {
	if f, ok := outcome.(*transferFailed); ok && a.stage != nil && a.session != nil {
		// What was staged whole goes to the group for its next attempt;
		// the rest of the stage is deleted now.
		if done := a.session.Completed(); len(done) > 0 {
			frontiers := make([]uint64, len(done))
			for i, d := range done {
				frontiers[i] = d.Frontier
			}
			if err := a.stage.Keep(frontiers); err == nil {
				f.kept, a.stage = &keptStage{stage: a.stage, completed: done}, nil
			}
		}
	}
	ctx.Send(ctx.Parent(), outcome)
	a.session = nil
	a.dropStage()
}

// dropStage deletes what this actor staged and still owns.
func (a *transferActor) dropStage() {
	discardStage(a.log, a.group, a.stage)
	a.stage = nil
}

// Metadata (7.6, 7.9.4).

// metadataOffer builds the metadata group's offer: only a caught-up
// primary offers.
func (m *metadataActor) metadataOffer(actor.Context) (*vsr.Offer, int64, func(), bool) {
	o := &vsr.Offer{CommitOp: m.core.CommitMin(), CommitMax: m.core.CommitMax()}
	o.Add(wire.ArtifactMetadataSnapshot, o.CommitOp, m.state.Snapshot())
	o.Add(wire.ArtifactClientTable, o.CommitOp, m.state.Clients().EncodeICT2(true))
	return o, 0, nil, false // the served bound is the partitions' (7.7 rule 2)
}

// installMetadata is 7.9.4 steps 1-3: verify, make the journal start above
// the snapshot, replace the state machine and its client table, start the
// partitions it names; the shell's caller hands the commit point to the
// core (steps 4-7).
func (m *metadataActor) installMetadata(ctx actor.Context, tr *vsr.TransferSession) error {
	snapshot, table, _, frontier, err := tr.Verify()
	if err != nil {
		return err
	}
	cfg := m.stateConfig()
	st, err := metadata.Restore(cfg, snapshot)
	if err != nil {
		return fmt.Errorf("transferred snapshot: %w", err)
	}
	if err := st.ReplaceClientTable(table); err != nil {
		return fmt.Errorf("transferred client table: %w", err)
	}
	op := st.AppliedOp()
	if op != frontier || op != tr.CommitOp {
		return fmt.Errorf("transferred snapshot at op %d, manifest says %d, offer commit %d", op, frontier, tr.CommitOp)
	}
	if op <= m.core.CommitMin() {
		return fmt.Errorf("transferred snapshot at op %d is not ahead of commit %d", op, m.core.CommitMin())
	}
	store := m.n.store
	if err := store.TruncatePrepares(wire.MetadataGroup, op+1); err != nil {
		return err
	}
	if err := store.SaveSnapshot(wire.MetadataGroup, snapshot); err != nil {
		return err
	}
	if err := store.CompactPrepares(wire.MetadataGroup, op+1); err != nil {
		m.log.Warn("compacting the journal below a transferred snapshot", "err", err)
	}
	// The ops the snapshot skipped may have deleted, recreated or purged
	// partitions: their actors and data follow the new state. A replaced
	// partition's actor is stopped (and waited for) before its data goes
	// and a new one boots on the same group.
	fresh := map[uint64]metadata.PartitionRef{}
	for _, ref := range st.Partitions() {
		fresh[ref.Group] = ref
	}
	for _, old := range m.state.Partitions() {
		pid := m.partitions[old.Group]
		ref, kept := fresh[old.Group]
		switch {
		case pid == nil:
		case !kept || ref.CreationID != old.CreationID:
			m.dropPartition(ctx, old.Group)
		case ref.PurgeGeneration != old.PurgeGeneration:
			ctx.Send(pid, &partitionPurge{})
		}
	}
	m.state, m.snapshotOp = st, op
	for _, ref := range m.state.Partitions() {
		if m.partitions[ref.Group] == nil {
			m.startPartitionWhenFree(ctx, ref)
		}
	}
	m.n.refs.commit.Store(op)
	m.followRoster()
	m.pushPlacements(ctx)
	m.followGroups(ctx)
	return nil
}

// metadataRoster is the roster a fetched metadata state applied (nil: it
// never reconfigured, epoch 0).
func (m *metadataActor) metadataRoster(tr *vsr.TransferSession) (*vsr.Roster, error) {
	snapshot, _, _, _, err := tr.Verify()
	if err != nil {
		return nil, err
	}
	st, err := metadata.Restore(m.stateConfig(), snapshot)
	if err != nil {
		return nil, fmt.Errorf("transferred snapshot: %w", err)
	}
	if r, ok := st.Roster(); ok {
		return &r.Roster, nil
	}
	return nil, nil
}

// Partitions (7.7).

// segmentArtifactMax bounds one SEGMENT_LOG artifact of an offer.
var segmentArtifactMax int64 = 64 << 20 // a test lowers it

// Why a partition offer was not built (partitionOffer).
var (
	errOfferTooLarge = errors.New("the partition holds more than partition.transfer_served_cache_bytes_max")
	errServedFull    = errors.New("the offers this node serves hold partition.transfer_served_cache_bytes_max")
)

// offerHashRound is what one round of a partition offer's build hashes
// on the partition actor (7.7 rule 2: about 256 MiB per round), at least
// one artifact; a test lowers it.
var offerHashRound int64 = 256 << 20

// offerBuild is a partition offer whose segments are hashed a round at a
// time (offerRound messages to the partition actor), so a large
// partition's build never holds the group's traffic for longer than one
// round; requests meanwhile are refused transiently (7.7 rule 3, build in
// progress). It is consistent as of its start: its ranges read through
// handles on the files as they were (storage.SegmentRanges), and its
// offsets artifact was encoded then.
type offerBuild struct {
	limits   *transferLimits
	o        *vsr.Offer
	ranges   []storage.SegmentRange
	sums     map[sectionKey]uint64 // the ones hashed by earlier builds, and this one's
	used     map[sectionKey]uint64 // this build's: what the shell caches once it is complete
	next     int                   // ranges hashed and added so far
	offsets  []byte                // the ICO1 artifact, added after the ranges
	roster   []byte                // the group roster artifact (nil: none), added last
	reserved int64                 // of the node's served bound: the whole offer
	release  func()
	buf      []byte
	idle     int // ticks since it was last asked for
}

// sectionKey names a range of a batch file.
type sectionKey struct {
	path      string
	off, size int64
}

func sectionKeyOf(r storage.SegmentRange) sectionKey {
	outer, off, n := r.Outer()
	k := sectionKey{off: off, size: n}
	if f, ok := outer.(interface{ Name() string }); ok {
		k.path = f.Name()
	}
	return k
}

// took hands a complete build over as the offer, keeping the hashes it
// used for the next build.
func (t *transferShell) took(b *offerBuild) (*vsr.Offer, int64, func(), bool) {
	t.sums = b.used
	return b.o, b.reserved, b.release, false
}

// offerRound asks the partition actor for the next round of b.
type offerRound struct{ b *offerBuild }

func (b *offerBuild) done() bool { return b.next == len(b.ranges) }

// round hashes the next ranges, at least one and about offerHashRound
// bytes, and completes the offer after the last.
func (b *offerBuild) round() error {
	for hashed := int64(0); !b.done() && (hashed == 0 || hashed < offerHashRound); b.next++ {
		r := b.ranges[b.next]
		k := sectionKeyOf(r)
		sum, known := b.sums[k]
		if !known || k.path == "" {
			h := wire.NewArtifactHash()
			if _, err := io.CopyBuffer(h, io.NewSectionReader(r, 0, r.Size()), b.buf); err != nil {
				return fmt.Errorf("read the segments to offer: %w", err)
			}
			sum = h.Sum64()
			hashed += r.Size()
			b.limits.hashed.Add(r.Size())
		}
		b.used[k] = sum
		b.o.AddSection(wire.ArtifactSegmentLog, r.Frontier, r.SectionReader, sum)
	}
	if b.done() {
		b.sums = nil
		b.o.Add(wire.ArtifactConsumerOffsets, b.o.CommitOp, b.offsets)
		if b.roster != nil {
			b.o.Add(wire.ArtifactGroupRoster, b.o.CommitOp, b.roster)
		}
		b.buf = nil
	}
	return nil
}

// onOfferRound runs the next round of the offer being built, and asks
// for another until it is complete.
func (p *partitionActor) onOfferRound(ctx actor.Context, m *offerRound) {
	t := p.transfers
	if t == nil || t.building != m.b || m.b.done() {
		return // given up meanwhile, or complete
	}
	if err := m.b.round(); err != nil {
		p.log.Warn("partition state transfer offer given up", "err", err)
		t.abortBuild()
		return
	}
	if !m.b.done() {
		ctx.Send(ctx.Self(), m)
		return
	}
	p.log.Info("partition state transfer offer hashed", "artifacts", m.b.o.Artifacts(), "bytes", m.b.reserved)
}

// partitionOffer builds a partition's offer (7.7 rule 2): only a caught-up
// primary that has committed something offers; its committed batches are
// all in the segments (they are written at commit). An offer of more
// than one round is built in rounds (offerBuild), and taken by the first
// request after its last.
func (p *partitionActor) partitionOffer(ctx actor.Context) (*vsr.Offer, int64, func(), bool) {
	if b := p.transfers.building; b != nil {
		b.idle = 0
		if !b.done() {
			return nil, 0, nil, true // build in progress (7.7 rule 3)
		}
		p.transfers.building = nil
		return p.transfers.took(b)
	}
	if p.core.CommitMax() == 0 {
		return nil, 0, nil, true
	}
	if p.drivePending || p.writing != nil || p.core.HasReady() {
		// A frame stepped since the last drive may have moved commit_min
		// past what the segments hold (the drive applies and stores it):
		// an offer now would name an op whose batch it lacks, one batch
		// short for the learner (found by deploy/faults
		// grow-3-to-5-rebalance). Transient: the requester asks again.
		return nil, 0, nil, true
	}
	limits := &p.node.transferLimits
	// refuse says why no offer is built; for the bound being held by
	// others' offers (they expire once served or idle) it is transient
	// and counted, and the requester asks again.
	refuse := func(err error) (*vsr.Offer, int64, func(), bool) {
		if errors.Is(err, errServedFull) {
			limits.refused.Add(1)
			p.log.Debug("partition state transfer refused for now", "err", err)
			return nil, 0, nil, true
		}
		p.log.Warn("partition state transfer refused", "err", err)
		return nil, 0, nil, false
	}
	if size := int64(p.plog.Stats().SizeBytes); size <= limits.servedMax && limits.served.Load()+size > limits.servedMax {
		// It would not fit now: refused before its files are opened.
		// One larger than the whole bound is found out below (the size
		// is the log's count).
		return refuse(errServedFull)
	}
	// The segments are served from the batch files, through handles the
	// offer holds (the files may be deleted meanwhile): hashing them is
	// the build's one read of them, into one reused buffer.
	ranges, closeFiles, err := p.node.store.SegmentRanges(p.ref.Group, segmentArtifactMax)
	if err != nil {
		return refuse(err)
	}
	offsets, err := p.offsetsArtifact()
	if err != nil {
		closeFiles()
		return refuse(err)
	}
	total := int64(len(offsets)) // served from memory
	for _, r := range ranges {
		total += r.Size()
	}
	if total > limits.servedMax {
		closeFiles()
		return refuse(errOfferTooLarge)
	}
	if !limits.reserve(total) {
		closeFiles()
		return refuse(errServedFull)
	}
	b := &offerBuild{o: &vsr.Offer{CommitOp: p.core.CommitMin(), CommitMax: p.core.CommitMax()}, ranges: ranges,
		limits: limits, sums: p.transfers.sums, used: map[sectionKey]uint64{},
		offsets: offsets, reserved: total, release: closeFiles, buf: make([]byte, 1<<20)}
	if p.core.Epoch() > 0 { // a joiner takes the group's roster with its state
		b.roster = vsr.EncodeGroupRoster(p.core.Roster(), p.core.EpochOp())
	}
	if err := b.round(); err != nil {
		limits.release(total)
		closeFiles()
		return refuse(err)
	}
	if b.done() {
		return p.transfers.took(b)
	}
	p.transfers.building = b
	ctx.Send(ctx.Self(), &offerRound{b})
	p.log.Info("partition state transfer offer hashed in rounds", "bytes", total, "round_bytes", offerHashRound)
	return nil, 0, nil, true
}

// offsetsArtifact is the partition's ICO1 encoding (7.8.3): its next
// offset and stored consumer and group offsets, ids ascending.
func (p *partitionActor) offsetsArtifact() ([]byte, error) {
	stored, err := p.node.store.LoadOffsets(p.ref.Group)
	if err != nil {
		return nil, err
	}
	a := wire.ConsumerOffsetsArtifact{NextOffset: p.plog.HighWatermark()}
	for k, v := range stored {
		e := wire.OffsetEntry{ID: k.Consumer, Offset: v}
		if wire.ConsumerKind(k.Kind) == wire.ConsumerGroup {
			a.Groups = append(a.Groups, e)
		} else {
			a.Consumers = append(a.Consumers, e)
		}
	}
	for _, s := range [][]wire.OffsetEntry{a.Consumers, a.Groups} {
		slices.SortFunc(s, func(x, y wire.OffsetEntry) int { return cmp.Compare(x.ID, y.ID) })
	}
	return a.AppendTo(nil), nil
}

// installPartition is 7.7 rule 7: the offer must not be stale nor rewind
// this replica's data; then the partition's batches, offsets and
// watermarks are replaced by the transferred ones and the log rebuilt.
// The batches are the staged segment files, renamed into place
// (storage.InstallStaged, replica-plane.md 13.3 rule 5).
func (p *partitionActor) installPartition(tr *vsr.TransferSession, stage *storage.TransferStage) error {
	offsets, err := tr.VerifyPartition()
	if err != nil {
		return err
	}
	if stage == nil {
		return errors.New("a partition transfer without its staged segments")
	}
	switch {
	case tr.View < p.core.View() || tr.CommitMax < p.core.CommitMax() && tr.CommitOp < p.core.CommitMax():
		return fmt.Errorf("offer of view %d commit %d is stale here (view %d, commit_max %d)", tr.View, tr.CommitOp, p.core.View(), p.core.CommitMax())
	case tr.CommitOp <= p.core.CommitMin():
		return fmt.Errorf("offer commit %d is not ahead of commit %d", tr.CommitOp, p.core.CommitMin())
	case offsets.NextOffset < p.plog.HighWatermark():
		return fmt.Errorf("offer ends at offset %d, below this replica's %d", offsets.NextOffset, p.plog.HighWatermark())
	}
	st, g := p.node.store, p.ref.Group
	p.transfers.dropOffers("the partition's state is replaced by a transfer")
	// From here until the marker goes, a crash leaves a partition whose
	// boot drops it all and starts empty (see installKey), never a
	// mixture of the old and the new state.
	if err := st.Put(installKey(g), []byte{1}, true); err != nil {
		return err
	}
	if err := st.DeletePartition(g); err != nil {
		return err
	}
	if err := st.InstallStaged(stage); err != nil {
		return err
	}
	walked := tr.Batches() // as they arrived: the files are not read back
	infos := make([]partition.BatchInfo, len(walked))
	for i, b := range walked {
		infos[i] = partition.BatchInfo{BaseOffset: b.BaseOffset, BaseTimestamp: b.BaseTimestamp, Count: b.Count, Size: b.Length}
	}
	var restored []partition.StoredOffset
	for kind, section := range map[wire.ConsumerKind][]wire.OffsetEntry{wire.ConsumerSingle: offsets.Consumers, wire.ConsumerGroup: offsets.Groups} {
		for _, e := range section {
			if err := st.StoreOffset(g, uint8(kind), e.ID, e.Offset, false); err != nil {
				return err
			}
			restored = append(restored, partition.StoredOffset{Kind: kind, Key: e.ID, Offset: e.Offset})
		}
	}
	next := make([]byte, 8)
	binary.LittleEndian.PutUint64(next, offsets.NextOffset)
	if err := st.Put(watermarkKey(g), next, false); err != nil {
		return err
	}
	// The superblock went with DeletePartition: write it again, then the
	// applied op (its identity did not travel).
	if err := st.SaveVsrState(g, storage.VsrState{Cluster: p.node.cluster.id, ReplicaID: p.node.cluster.self,
		ReplicaCount: uint8(p.node.cluster.n), View: p.core.View(), LogView: p.core.LogView(),
		CommitMax: max(p.core.CommitMax(), tr.CommitMax), OffsetFrontier: offsets.NextOffset}, true); err != nil {
		return err
	}
	p.tail, p.tailDirty = committedTail{}, false // its ops are not this log's any more
	if err := st.Delete(tailKey(g)); err != nil {
		return err
	}
	p.recordApplied(wire.PrepareHeader{Op: tr.CommitOp})
	if err := st.Sync(); err != nil { // the batches, offsets and keys above, before the marker goes
		return err
	}
	if err := st.Delete(installKey(g)); err != nil {
		return err
	}
	p.plog = partition.New(partition.Config{SegmentSize: p.settings.segmentSize, Cipher: p.node.atRest.cipher}, storeAdapter{st, g})
	if err := p.plog.Restore(infos, offsets.NextOffset, restored); err != nil {
		return err
	}
	p.core.SetOffsetFrontier(p.plog.HighWatermark())
	p.publishStats()
	return nil
}
