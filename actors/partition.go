package actors

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"iggynode/internal/framebuf"
	"iggynode/internal/stages"
	"iggynode/metadata"
	"iggynode/partition"
	clientplane "iggynode/plane/client"
	"iggynode/storage"
	"iggynode/vsr"
	"iggynode/wire"
)

// partitionActor owns one partition: its consensus group (a vsr.Replica,
// quorum of one on a single node), its committed log (partition.Log) and
// its durable batches and consumer offsets in storage. Every partition
// write takes the consensus path: admit, prepare, journal, commit, apply,
// reply.
//
// Where a batch reaches its segment file depends on the group's size. With
// a quorum of one the journal append is the segment write, so a failed
// write is rolled back and nothing unstored is acknowledged. With backups
// the journal is in memory (replica-plane.md 5.13 rule 6, 9.4): a prepare
// is stamped or checked, forwarded and acknowledged without touching the
// disk, and every replica writes the batch to its segment when the op
// commits, the primary before it replies. This keeps the disk off the
// chain's critical path and keeps uncommitted batches (which a view change
// may discard) out of the segments.
//
// Group commit: a send (or a peer frame) defers its drive behind the
// mailbox (driveSoon), so the requests that queued meanwhile share one
// Ready, one AppendBatches (one writev; one fsync under enforce_fsync) and
// then their replies. A group of one writes that journal behind the
// mailbox (writeBehind): polls, offsets and the sends of the next group
// are taken in while the write and its fsync run, and the core's next
// Ready waits for it to return; what must not interleave with a write (a
// purge, a truncation, segment deletion, retention, a drop, a stop)
// settles it first. The hot path writes badger at most twice per Ready,
// not per op, and only in groups with backups: the journal head
// (journalHeadKey, unsynced: a restarted replica must not nack what it
// may have acknowledged) and the last applied op (appliedKey, synced like
// the segments). A single node writes none: its segments are its journal.
//
// What recovery reads (boot): the batch files (storage.ScanBatches: the
// committed log, its offsets and index), the watermark (watermarkKey: the
// first retained offset after a purge or expiry), the consumer offsets,
// and in a group with backups the superblock (view, log view, commit
// max), the view head, journalHeadKey, appliedKey (the op, checksum and
// timestamp the segments stand for) and the committed tail (tailKey,
// saved every tailSaveInterval and when the group goes quiet: the last
// ops' prepare headers, bodies from the segments), from which the core
// serves repair. Ops applied after the last appliedKey are repaired again
// and recognised as stored (alreadyStored), so the key may lag, never
// lead, the segments.
type partitionActor struct {
	// route is how connections reach this actor (routing.go), closed when
	// it stops for good.
	route *partitionRoute
	// startVoters are the voters the group was created on (0: the
	// configured roster's); a reconfigured group's own roster record wins.
	startVoters uint32
	startView   uint32
	// placed is where the metadata group placed the partition
	// (placement.go); reportedLeading what the metadata actor last heard
	// of this replica's leadership.
	placed          placedGroup
	leaveScheduled  bool
	reportedLeading bool
	reportedSeen    seenGroup
	// statsDirty: the statistics changed since statsSentAt, the last
	// time they went to the nodes without the partition (gossipStats).
	statsDirty  bool
	statsSentAt time.Time
	// followTarget are the voters the metadata roster wants the group on
	// (reconfig.go; 0: never told); followAsked: it is this group's turn;
	// wantsFollow: a turn was asked for; reportedEpoch and
	// reportedRemoved: what the metadata actor last heard.
	followTarget             uint32
	followAsked, wantsFollow bool
	reportedEpoch            uint32
	reportedRemoved          bool
	node                     *Node
	ref                      metadata.PartitionRef
	settings                 partitionSettings
	log                      *slog.Logger
	core                     *vsr.Replica
	plog                     *partition.Log
	parent                   *actor.PID // the metadata actor, which keeps the statistics
	// storeAtCommit: the group has backups, so batches are written to their
	// segment at apply, not at the journal append.
	storeAtCommit bool
	repairs       repairWatch
	tr            *groupTrace // spans and gauges (telemetry.go)
	transfers     *transferShell
	beh           *statusBehaviour
	// Writes forwarded to the group's primary, by nonce (partition_forward.go).
	nonce  uint64
	parked map[uint64]*forwarded
	// tail is the last committed ops, saved now and then (and at a stop)
	// so a restart can rebuild their prepares for repair (tail.go).
	tail        committedTail
	tailSavedAt time.Time
	tailDirty   bool
	// time is the core's tick and its next wake-up (clock.go).
	time     timeKeeper
	wasQuiet bool
	// mem is this partition's share of the node's memory budget
	// (membudget.go) and memUsed what it last reported.
	mem     *memAccount
	memUsed int64
	// Disk space (diskspace.go): waitingForDisk, the replica is out of its
	// group until a committed batch it could not store fits; cancelCode
	// answers the ops a journal failure cancels (CannotWriteToFile when
	// the disk is full, else 57); journalSpace logs such failures once.
	waitingForDisk bool
	cancelCode     wire.ErrorCode
	journalSpace   noSpaceLog
	// Group commit (drive): drivePending, a driveSends is in the mailbox,
	// so the sends queued before it are submitted first and share one
	// Ready; toStore and replies are that Ready's batches to write in one
	// AppendBatches and the replies that wait for the write (reused).
	drivePending bool
	// The badger keys the hot path writes once per Ready (built once:
	// formatting them per Ready was 2 % of a replica's CPU).
	keyJournalHead, keyApplied string
	toStore                    [][]byte
	replies                    []heldReply
	// pooled are the submitted prepares in pooled request buffers, and
	// deferred the evicted buffers the core or a write still read
	// (pooled.go).
	pooled     pooledPrepares
	deferred   []*framebuf.Buf
	deferredAt deferredCheck
	// writing is the segment write in flight (writeBehind: a group of
	// one's journal, or a group with backups' committed batches), nil if
	// none: drive takes no Ready until it has returned. spareWrite is the
	// last one, kept for its buffers; syncWrites makes drive write in
	// place (settle).
	writing, spareWrite *journalWrite
	syncWrites          bool
	// storeFailed: a committed batch could not be stored while a handler
	// settled the write (stopForStore); the actor stops after it.
	storeFailed string
}

// driveSends is the partition's note to itself that sends were submitted
// and wait for a drive (group commit, drive).
type driveSends struct{}

// heldReply is a committed op's reply held until its batch is stored:
// the reply may go once the first after batches of the Ready's toStore
// are (its own included, for a send).
type heldReply struct {
	req   *clientRequest
	frame []byte
	after int
}

// partitionSettings are the topic options a partition acts on.
type partitionSettings struct {
	enforceFsync    bool
	segmentSize     uint64
	messageExpiryUs uint64 // metadata.Never: never expire
	maxTopicSize    uint64 // metadata.Never: unlimited
	partitionsCount uint32 // of the topic, for the size budget
	maxMessageSize  uint64 // message_bus.max_message_size
}

// Messages to a partition actor; each carries the client request it
// answers. The metadata actor resolved and authorized it.
type (
	partitionSend struct {
		req           *clientRequest
		batch         []byte // the batch inside req.frame
		messagesCount uint32
	}
	partitionPoll struct {
		req       *clientRequest
		poll      wire.PollMessages
		kind      wire.ConsumerKind
		key       uint32
		partition uint32
	}
	partitionGetOffset struct {
		req  *clientRequest
		kind wire.ConsumerKind
		key  uint32
	}
	partitionOffsetWrite struct {
		req    *clientRequest
		delete bool
		kind   wire.ConsumerKind
		key    uint32
		offset uint64
		ack    wire.AckLevel
		body   []byte // the prepare body (client-plane.md 13.1: flag 1, numeric group id)
	}
	partitionTruncate struct{ upTo uint64 }
	// partitionDrop: the partition was deleted; the actor removes its
	// data and stops (its parent waits for the Terminated).
	partitionDrop struct {
		// left: the replica was moved out of its group (placement.go):
		// its data goes, its roster record (removed) stays, and the
		// partition starts again as a non-member.
		left bool
	}
	partitionPurge    struct{}
	partitionSegments struct {
		count uint32
		reply chan<- segmentsAnswer
	}
	segmentsAnswer struct {
		upTo uint64
		ok   bool
	}
	// partitionCrash makes the actor panic; tests use it to prove the
	// supervisor contains a failing partition.
	partitionCrash struct{}
	// partitionForgetConsumer drops a consumer's stored offset (a deleted
	// consumer group).
	partitionForgetConsumer struct {
		kind wire.ConsumerKind
		key  uint32
	}
	// partitionConfigure carries changed topic settings (UpdateTopic,
	// partition count changes).
	partitionConfigure struct{ settings partitionSettings }
	// partitionMaintain runs the segment cleaner once at nowUs
	// (server-behaviour.md 5.7); done is called when it finished.
	partitionMaintain struct {
		nowUs uint64
		done  func()
	}
)

// pending is the consensus tag of an admitted partition request.
type pending struct {
	req    *clientRequest
	write  *partitionOffsetWrite
	pooled *pooledPrepare // req's prepare, in its pooled buffer (pooled.go)
}

// voters are the ones the group started on (metadata.State.PartitionVoters;
// 0: the configured roster's); placed, ok: where the metadata group placed
// it (placement.go; ok false: on every voter).
func newPartitionActor(n *Node, ref metadata.PartitionRef, s partitionSettings, voters uint32, placed metadata.Placement, ok bool, route *partitionRoute) actor.Producer {
	return func() actor.Actor {
		p := &partitionActor{node: n, ref: ref, settings: s, startVoters: voters, log: n.log.With("partition", ref.Group), route: route}
		if ok {
			p.startView = placed.StartView
			p.onPlacement(&partitionPlacement{placement: placed})
		}
		return p
	}
}

// Receive is the partition actor's current behaviour (behaviour.go),
// with the core first advanced to the node's tick and, after the
// message, the next tick it needs from the clock asked for.
func (p *partitionActor) Receive(ctx actor.Context) {
	if p.beh == nil {
		p.beh = newStatusBehaviour(p.receive, p.receiveUnsettled, p.receiveUnsettled)
	}
	if !p.node.metadataCaughtUp.Load() {
		// Out of consensus until the node's metadata has caught up (see
		// Node.metadataCaughtUp): no votes, no ticks, no writes; its time
		// does not pass either (the metadata actor ticks every partition
		// once it caught up).
		switch m := ctx.Message().(type) {
		case *peerFrame, *tick, *quietIn, *peerChange, *driveSends:
			p.time = timeKeeper{lastTick: p.node.clock.now()}
			return
		case *partitionSend:
			p.replyTo(ctx, m.req, denyReply(&m.req.hdr, m.req.connID, 0, wire.ErrTransientNotAccepted))
			return
		}
	}
	if p.waitingForDisk {
		// Out of its group (diskspace.go): its time stands still and
		// what it does not refuse is served without the core moving.
		if !p.whileWaitingForDisk(ctx) {
			p.time.lastTick = p.node.clock.now()
			p.beh.Receive(ctx)
		}
		return
	}
	p.catchUp(ctx)
	p.beh.Receive(ctx)
	p.afterTurn(ctx)
	p.releaseEvicted()
}

// catchUp advances the core by the ticks that passed since it last was
// (vsr.Replica.Elapse) and carries out what fired.
func (p *partitionActor) catchUp(ctx actor.Context) {
	if p.core == nil {
		return
	}
	if elapseTo(p.core, &p.time, p.node.clock.now()) && p.core.HasReady() {
		p.drive(ctx)
	}
}

// afterTurn asks the clock for the core's next due tick, keeps the
// memory budget informed, and saves the committed tail when the group
// goes quiet (the save a restart after a crash finds).
func (p *partitionActor) afterTurn(ctx actor.Context) {
	if p.core == nil {
		return
	}
	// Quiet once no committed write is in flight either: the tail saved
	// names batches the segments must hold (tail.go).
	if q := p.core.Quiet() && p.writing == nil; q != p.wasQuiet {
		p.wasQuiet = q
		if q {
			p.saveTail(true)
			if p.statsDirty {
				p.gossipStats(true)
			}
		}
	}
	p.reportMemory()
	p.reportLeading(ctx)
	p.scheduleLeave(ctx)
	k, armed := p.core.IdleTicks()
	if len(p.parked) > 0 || p.transfers.busy() {
		k, armed = 1, true // their counters run per tick
	}
	p.time.arm(p.node.clock, p.ref.Group, ctx.Self(), k, armed)
}

// reportMemory tells the memory budget what the partition holds in
// memory that storage holds too, and drops its own share when the
// partitions used less recently cannot cover the budget's excess.
func (p *partitionActor) reportMemory() {
	used := int64(max(p.plog.CachedBytes(), uint64(p.core.RetainedBytes())))
	if used == p.memUsed {
		return
	}
	p.memUsed = used
	if over := p.mem.set(used); over > 0 {
		p.shed(max(used-over, 0))
	}
}

// shed keeps at most keep bytes of cached batches and retained prepares.
func (p *partitionActor) shed(keep int64) {
	p.plog.ShedCache(uint64(keep))
	p.core.ShedRetained(int(keep))
	p.memUsed = int64(max(p.plog.CachedBytes(), uint64(p.core.RetainedBytes())))
	p.mem.set(p.memUsed)
}

// receiveUnsettled is the behaviour in a view change or a recovery: no
// primary can take a write now, so a send is answered TransientNotAccepted
// at once (the SDK retries it); the rest is handled as in Normal.
func (p *partitionActor) receiveUnsettled(ctx actor.Context) {
	if m, ok := ctx.Message().(*partitionSend); ok {
		p.replyTo(ctx, m.req, denyReply(&m.req.hdr, m.req.connID, 0, wire.ErrTransientNotAccepted))
		return
	}
	p.receive(ctx)
}

func (p *partitionActor) receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		p.parent = ctx.Parent()
		if err := p.boot(); err != nil {
			panic(fmt.Sprintf("partition %d boot: %v", p.ref.Group, err))
		}
		p.mem.close() // a restarted actor gives back what it held
		p.mem, p.memUsed = p.node.memory.open(ctx.Self()), 0
		if p.storeAtCommit {
			p.startDiskWait(ctx)
		}
	case *actor.Restarting:
		p.transfers.close()
		p.waitWrite() // the next incarnation boots from the segments
		if w := p.writing; w != nil && w.committed && !w.answered {
			// Its batches up to stored are in the segments: their
			// producers are answered (the rest replay).
			p.sendHeldReplies(ctx, w.replies[:storedReplies(w.replies, w.stored)])
		}
	case *actor.Stopping:
		p.settle(ctx)
		if p.plog != nil {
			// Its stored batches' buffers go back to the pool (pooled.go):
			// a deleted topic's memory serves the next one's sends.
			p.plog.ShedCache(0)
		}
		p.route.close()
		p.saveTail(true)
		p.tr.close()
		p.transfers.close()
		p.node.clock.cancel(p.ref.Group)
		p.mem.close()
		p.mem, p.memUsed = nil, 0
	case *actor.Stopped:
		// A transfer's outcome still queued when its child's Terminated
		// overtook it is never taken: the stage it handed over goes here
		// (the child, stopped first, deleted any it still held).
		if n, err := p.node.store.DiscardStaged(p.ref.Group); n > 0 || err != nil {
			p.log.Info("staged state transfer deleted with its stopped partition", "group", p.ref.Group, "stages", n, "err", err)
		}
	case *shedMemory:
		p.shed(0)
	case *quietIn:
		p.core.OnQuiet(m.From, m.Kind, m.View, m.Commit)
		p.drive(ctx)
	case *peerChange:
		if m.found {
			p.core.PeerFound(m.peer)
			if p.core.Leading() && p.plog.Stats().MessagesCount > 0 {
				p.gossipStats(true) // a node back from a restart has no figures
			}
		} else {
			p.core.PeerLost(m.peer)
			p.forwardsLost(ctx, m.peer)
		}
		p.drive(ctx)
	case *partitionSend:
		p.onSend(ctx, m)
	case *driveSends:
		p.drivePending = false
		p.drive(ctx)
	case *storeFailure:
		panic(m.why)
	case *batchesStored:
		if w := p.writing; w != nil && w.seq == m.seq && !w.answered {
			p.answerStored(ctx, w)
		}
	case *journalWritten:
		if w := p.writing; w != nil && w.seq == m.seq { // else settle finished it
			p.writeReturned(ctx, w)
			p.drive(ctx)
		}
	case *partitionPoll:
		if !p.servesLocally() {
			p.forwardRead(ctx, m.req, routedPollBody(m.req.hdr.Code, m), m)
			return
		}
		p.onPoll(ctx, m)
	case *partitionGetOffset:
		if !p.servesLocally() {
			p.forwardRead(ctx, m.req, routedGetOffsetBody(m.req.hdr.Code, m), nil)
			return
		}
		p.onGetOffset(ctx, m)
	case *partitionOffsetWrite:
		p.onOffsetWrite(ctx, m)
	case *partitionPlacement:
		p.onPlacement(m)
	case *handOverTo:
		p.onHandOver(ctx, m)
	case *partitionTruncate:
		p.settle(ctx)
		p.truncate(m.upTo)
	case *partitionPurge:
		p.settle(ctx)
		p.purge()
	case *partitionDrop:
		p.answerHeld(ctx)
		if m.left {
			p.node.dropGroupData(p.ref.Group, p.log) // its roster record (removed) stays
		} else {
			p.node.dropPartitionData(p.ref.Group, p.log)
		}
		p.tailDirty = false // the stop must not save the tail the drop deleted
		ctx.Stop(ctx.Self())
	case *partitionLeaveCheck:
		p.onLeaveCheck(ctx)
	case *offerRound:
		p.onOfferRound(ctx, m)
	case *partitionSegments:
		p.settle(ctx)
		upTo, ok := p.plog.DeleteSegmentsUpTo(m.count)
		m.reply <- segmentsAnswer{upTo, ok}
	case *peerFrame:
		if h := wire.HeaderOf(m.frame); h.Command() == wire.CmdRequest {
			if rh, err := wire.DecodeRequestHeader(h); err == nil && rh.Operation == wire.OpNonReplicated && rh.Code == partitionStatsCode {
				p.onStatsGossip(m)
				return
			}
			p.onRoutedFrame(ctx, m)
			return
		}
		if c := wire.HeaderOf(m.frame).Command(); c >= wire.CmdRequestStateTransfer && c <= wire.CmdStateChunk {
			p.transfers.onFrame(ctx, m.from, m.frame)
			return
		}
		before := dropCount(p.core.Dropped)
		p.tr.peerFrame(m.from, m.frame)
		p.core.Step(m.frame)
		p.adoptPeerBuffer(m)
		if dropCount(p.core.Dropped) != before && p.log.Enabled(context.Background(), slog.LevelDebug) {
			p.log.Debug("peer frame dropped by the core", "from", m.from, "command", wire.HeaderOf(m.frame).Command(), "drops", p.core.Dropped)
		}
		// Prepares and their acknowledgements queued behind this one are
		// stepped first: their journal writes and commits share one drive.
		// The rest (view change, recovery, repair) is driven at once, so a
		// storm of elections does not wait behind a mailbox it doubled.
		if c := wire.HeaderOf(m.frame).Command(); c == wire.CmdPrepare || c == wire.CmdPrepareOk || c == wire.CmdCommit {
			p.driveSoon(ctx)
		} else {
			p.drive(ctx)
		}
	case *tick:
		// catchUp advanced the core; this is the clock's wake-up.
		p.time.scheduled = 0
		for _, r := range p.expireForwarded() {
			p.replyTo(ctx, r, denyReply(&r.hdr, r.connID, 0, wire.ErrTransientNotAccepted))
		}
		p.drive(ctx)
		p.transfers.tick(ctx)
	case *transferDone, *transferFailed, *actor.Terminated:
		if _, done := m.(*transferDone); done {
			p.settle(ctx) // an install replaces the segments: never beside a write
		}
		if p.transfers != nil && p.transfers.onOutcome(ctx, m) {
			p.drive(ctx)
		}
	case *partitionCrash:
		panic("partition crash requested")
	case *partitionForgetConsumer:
		p.applyOffsetWrite(&partitionOffsetWrite{delete: true, kind: m.kind, key: m.key})
	case *partitionConfigure:
		p.settings = m.settings
	case *followVoters:
		p.onFollowVoters(ctx, m)
	case *inspectPartition:
		m.fn(p)
	case *partitionMaintain:
		p.settle(ctx)
		p.clean(m.nowUs)
		m.done()
	}
}

// inspectPartition runs fn on the actor (tests read its core and log).
type inspectPartition struct{ fn func(p *partitionActor) }

// storeAdapter gives the log read access to this partition's batches.
type storeAdapter struct {
	s     *storage.Store
	group uint64
}

func (a storeAdapter) ReadBatch(base uint64) ([]byte, error) { return a.s.ReadBatch(a.group, base) }

func (a storeAdapter) AppendBatchTo(dst []byte, base uint64) ([]byte, error) {
	return a.s.AppendBatchTo(dst, a.group, base)
}

func (a storeAdapter) BatchSource(base uint64) (wire.SpliceSource, error) {
	return a.s.BatchSource(a.group, base)
}

func watermarkKey(group uint64) string { return fmt.Sprintf("partition/%d/next", group) }

// dropPartitionData deletes everything a partition group keeps: its
// batches, offsets and superblock (storage.DeletePartition) and the keys
// this package keeps beside them.
func (n *Node) dropPartitionData(group uint64, log *slog.Logger) {
	n.dropGroupData(group, log)
	_ = n.store.Delete(creationKey(group))
	n.forgetRoster(group)
}

// dropGroupData deletes a partition group's batches, offsets, superblock
// and recovery keys; the creation key and roster record are the caller's
// (a moved-out replica keeps both, placement.go).
func (n *Node) dropGroupData(group uint64, log *slog.Logger) {
	if err := n.store.DeletePartition(group); err != nil {
		log.Error("delete partition data", "group", group, "err", err)
	}
	for _, k := range []string{watermarkKey(group), appliedKey(group), viewHeadKey(group), installKey(group), journalHeadKey(group), tailKey(group)} {
		_ = n.store.Delete(k)
	}
}

// journalHeadKey holds the highest op a cluster's partition replica
// journaled (in memory), for vsr.Recovery.JournalHead.
func journalHeadKey(group uint64) string { return fmt.Sprintf("partition/%d/journal_head", group) }

// creationKey holds the creation id of the partition whose data the group
// id's keys and files hold.
func creationKey(group uint64) string { return fmt.Sprintf("partition/%d/creation", group) }

// scanBatchInfos reads what the partition log keeps of each stored
// batch (boot; a state transfer's install takes them from its walk).
func (p *partitionActor) scanBatchInfos() ([]partition.BatchInfo, error) {
	var infos []partition.BatchInfo
	err := p.node.store.ScanBatches(p.ref.Group, 0, func(_ uint64, b []byte) error {
		info, err := partition.BatchInfoOf(b)
		infos = append(infos, info)
		return err
	})
	return infos, err
}

// installKey marks a partition state transfer being installed: a boot
// that finds it knows the partition's data is half replaced, drops it
// all and starts empty (it catches up by transfer again).
func installKey(group uint64) string { return fmt.Sprintf("partition/%d/installing", group) }

// appliedKey holds the op a partition replica of a cluster applied last,
// with its identity and timestamp (8 + 16 + 8 bytes): a restart recovers
// its commit point from it (vsr.Recovery), so its view-change vote
// carries what its segments hold instead of op 0.
func appliedKey(group uint64) string { return fmt.Sprintf("partition/%d/applied", group) }

// boot rebuilds the log from storage (its batches, the retained-offset
// watermark and the consumer offsets) and starts the consensus core.
func (p *partitionActor) boot() error {
	st := p.node.store
	p.keyJournalHead, p.keyApplied = journalHeadKey(p.ref.Group), appliedKey(p.ref.Group)
	if _, half, err := st.Get(installKey(p.ref.Group)); err != nil {
		return err
	} else if half {
		p.log.Warn("a state transfer install was cut short: dropping the partition's data to fetch it again")
		p.node.dropPartitionData(p.ref.Group, p.log)
	}
	// The data under this group id may be another incarnation's: a topic
	// deleted while this node was away and one created with the same ids
	// (replica-plane.md 4.1). Its consensus state must not vote for this
	// one, nor its batches be served as this one's.
	creation := binary.LittleEndian.AppendUint64(nil, p.ref.CreationID)
	if v, ok, err := st.Get(creationKey(p.ref.Group)); err != nil {
		return err
	} else if ok && !bytes.Equal(v, creation) {
		p.log.Warn("dropping the data of an earlier partition with the same ids", "creation_id", p.ref.CreationID,
			"stored_creation_id", binary.LittleEndian.Uint64(v))
		p.node.dropPartitionData(p.ref.Group, p.log)
	}
	// Not synced: any later synced write makes it durable with everything
	// before it (one log), and data of this creation is written after it;
	// a sync per partition made creating thousands of them take minutes.
	if err := st.Put(creationKey(p.ref.Group), creation, false); err != nil {
		return err
	}
	p.plog = partition.New(partition.Config{SegmentSize: p.settings.segmentSize, CacheBytes: uint64(p.node.memory.limit),
		Cipher: p.node.atRest.cipher}, storeAdapter{st, p.ref.Group})
	p.time = timeKeeper{lastTick: p.node.clock.now()}
	infos, err := p.scanBatchInfos()
	if err != nil {
		return err
	}
	var next uint64
	if v, ok, err := st.Get(watermarkKey(p.ref.Group)); err != nil {
		return err
	} else if ok && len(v) == 8 {
		next = binary.LittleEndian.Uint64(v)
	}
	stored, err := st.LoadOffsets(p.ref.Group)
	if err != nil {
		return err
	}
	var offsets []partition.StoredOffset
	for k, v := range stored {
		offsets = append(offsets, partition.StoredOffset{Kind: wire.ConsumerKind(k.Kind), Key: k.Consumer, Offset: v})
	}
	if err := p.plog.Restore(infos, next, offsets); err != nil {
		return err
	}
	cfg := p.node.coreConfig(p.ref.Group, false)
	if v := p.startVoters; v != 0 {
		cfg.Roster = &vsr.Roster{Voters: v, Target: v} // placed, or created after a reconfiguration
	}
	cfg.StartView = p.startView
	outside, err := p.outsideAtBoot(len(infos) > 0)
	if err != nil {
		return err
	}
	if rec, ok, err := p.node.loadRoster(p.ref.Group); err == nil && ok && outside {
		cfg.Roster, cfg.StartView, cfg.Removed = &rec.roster, 0, rec.removed // moved out: a non-member of the epoch it knew last
	}
	p.core = vsr.New(cfg)
	p.transfers = newTransferShell(p.node, p.log, p.ref.Group, p.core)
	p.tr.close() // a restarted actor boots again
	p.tr = p.node.refs.tel.group(p.ref.Group)
	p.transfers.tr = p.tr
	p.transfers.build = p.partitionOffer
	p.transfers.rosterOf = func(s *vsr.TransferSession) (*vsr.Roster, error) { return s.GroupRoster() }
	p.transfers.install = p.installPartition
	p.storeAtCommit = cfg.ReplicaCount > 1
	p.core.SetOffsetFrontier(p.plog.HighWatermark())
	sb, hasState, err := st.LoadVsrState(p.ref.Group)
	if err != nil {
		return fmt.Errorf("partition superblock: %w", err)
	}
	switch {
	case outside:
		// Not a replica of this group (placement.go): nothing to recover;
		// the core is a non-member of the roster it last knew.
	case cfg.ReplicaCount > 1 && (hasState || len(infos) > 0):
		// Prior life (9.4 rule 5): the journal was memory; the segments
		// stand in for the log below the commit point, repair and the
		// floor rule fetch the rest once the probe finds the view.
		viewHead, viewHeaders, err := p.node.loadViewHead(p.ref.Group)
		if err != nil {
			return err
		}
		rc := vsr.Recovery{View: sb.View, LogView: sb.LogView, CommitMax: sb.CommitMax, ViewHead: viewHead, ViewHeaders: viewHeaders}
		if v, ok, err := st.Get(journalHeadKey(p.ref.Group)); err != nil {
			return err
		} else if ok && len(v) == 8 {
			rc.JournalHead = binary.LittleEndian.Uint64(v)
		}
		if v, ok, err := st.Get(appliedKey(p.ref.Group)); err != nil {
			return err
		} else if ok && len(v) >= 32 { // longer: a tail stored with it by an earlier build
			rc.Commit = binary.LittleEndian.Uint64(v)
			rc.CommitChecksum = wire.U128{Lo: binary.LittleEndian.Uint64(v[8:]), Hi: binary.LittleEndian.Uint64(v[16:])}
			rc.CommitTimestamp = binary.LittleEndian.Uint64(v[24:])
			rc.CommitMax = max(rc.CommitMax, rc.Commit)
		}
		if v, ok, err := st.Get(tailKey(p.ref.Group)); err != nil {
			return err
		} else if ok {
			p.tail = decodeCommittedTail(v)
			rc.Retained = p.tail.frames(func(base uint64) ([]byte, error) { return st.ReadBatch(p.ref.Group, base) })
		}
		if rec, ok, err := p.node.loadRoster(p.ref.Group); err != nil {
			return err
		} else if ok && rc.Commit >= rec.epochOp {
			rc.Roster, rc.EpochOp, rc.Removed = &rec.roster, rec.epochOp, rec.removed
		} else if ok {
			// The record (written with the superblock) is ahead of what
			// the segments hold: a crash between them. Without the
			// roster this replica is a laggard of the new epoch and
			// catches up by state transfer (vsr/reconfig.go S3).
			p.log.Warn("roster record ahead of the applied op: catching up by transfer", "epoch_op", rec.epochOp, "applied", rc.Commit)
		}
		p.core.Recover(rc)
		p.log.Debug("partition rejoining the cluster", "view", sb.View, "commit", p.core.CommitMin(), "next_offset", p.plog.HighWatermark(),
			"servable_from", p.core.OldestServable(), "retained", len(rc.Retained))
	case p.node.opts.PartitionView != nil && len(infos) == 0:
		if v := p.node.opts.PartitionView(p.ref.Group); v > 0 {
			p.core.Restore(v, v, 0, wire.U128{}, 0)
		}
	}
	p.publishStats()
	p.tr.publish(p.core) // a new group starts quiet: its gauges say so before any drive
	return nil
}

func (p *partitionActor) publishStats() {
	if !p.servesLocally() {
		return // its figures come from the primary (gossipStats)
	}
	p.statsDirty = true
	p.gossipStats(false)
	s := p.plog.Stats()
	p.node.root().Send(p.parent, &partitionStats{group: p.ref.Group, stats: metadata.PartitionStats{
		SegmentsCount: s.SegmentsCount, CurrentOffset: s.CurrentOffset, SizeBytes: s.SizeBytes, MessagesCount: s.MessagesCount,
	}})
}

// onSend admits a SendMessages batch (client-plane.md 13.1 steps 3-7) and
// submits it to consensus.
func (p *partitionActor) onSend(ctx actor.Context, m *partitionSend) {
	stages.Mark(stages.PartitionIn)
	req := m.req
	if err := m.validate(); err != nil {
		code, _ := wire.CodeOf(err)
		p.replyTo(ctx, req, denyReply(&req.hdr, req.connID, 0, code))
		return
	}
	if !p.node.acceptsClientWrites() {
		// Refused before consensus (diskspace.go): nothing to take back.
		p.replyTo(ctx, req, denyReply(&req.hdr, req.connID, 0, p.node.refusedForSpace()))
		return
	}
	if !p.core.Leading() {
		if !p.forward(req, req.frame) {
			p.replyTo(ctx, req, denyReply(&req.hdr, req.connID, 0, wire.ErrTransientNotAccepted))
		}
		return
	}
	wire.Batch(m.batch).StampPartition(uint64(p.ref.Partition))
	if req.span != nil {
		req.span.setRef(p.ref.Stream, p.ref.Topic, p.ref.Partition)
	}
	p.tr.admit(req)
	// The prepare header goes into the 256 bytes in front of the batch:
	// the request header and send metadata, already decoded (no copy).
	at := len(req.frame) - len(m.batch) - wire.HeaderSize
	frame := req.frame[at:]
	if p.node.atRest.cipher != nil { // sealed into a new frame (encryption.go)
		var code wire.ErrorCode
		if frame, code = p.sealForPrepare(m.batch); code != 0 {
			p.replyTo(ctx, req, denyReply(&req.hdr, req.connID, 0, code))
			return
		}
	}
	pd := &pending{req: req}
	submission := vsr.Request{
		Client: req.hdr.Client, Request: req.hdr.Request, RequestChecksum: req.hdr.RequestChecksum,
		Operation: wire.OpSendMessages, UserID: req.bound.userID, Frame: frame, Tag: pd,
	}
	err := p.core.Submit(submission, p.node.opts.Clock())
	if errors.Is(err, vsr.ErrBusy) && (p.drivePending || p.writing != nil) {
		// The sends this turn deferred (or the write behind) fill the
		// pipeline: drive them now with their writes in place (a group of
		// one commits them at once) rather than refuse this one, which
		// the send-at-a-time design never did.
		p.driveInPlace(ctx)
		err = p.core.Submit(submission, p.node.opts.Clock())
	}
	if err != nil {
		p.replyTo(ctx, req, denyReply(&req.hdr, req.connID, 0, wire.ErrTransientNotAccepted))
		return
	}
	pd.pooled = p.registerPooled(req, frame) // before the drive that sends it
	p.driveSoon(ctx)
}

// driveSoon defers the drive of a submitted send (or a stepped peer
// frame) behind the messages already in the mailbox: the sends and frames
// among them are taken in first, so one Ready carries them all and drive
// stores their batches with one write (and one fsync under enforce_fsync)
// before any reply: the group commit that keeps many producers on one
// partition from serializing into one write each. Deferring a drive only
// delays the core's outputs, in order, as a slower disk would.
func (p *partitionActor) driveSoon(ctx actor.Context) {
	if !p.drivePending {
		p.drivePending = true
		ctx.Send(ctx.Self(), &driveSends{})
	}
}

// answerHeld answers every request the actor holds before it stops for
// good: the write in flight returns and the sends whose drive was
// deferred (driveSoon) are driven with their writes in place, so a group
// of one commits and answers them; what is left (a cluster's
// uncommitted ops, the queue behind them, requests forwarded to the
// primary) is answered as of unknown outcome or not accepted, as a view
// change would. Without it a send admitted just before the drop waited
// for its client's deadline.
func (p *partitionActor) answerHeld(ctx actor.Context) {
	if p.core == nil {
		return
	}
	p.driveInPlace(ctx)
	p.syncWrites = true // it stops for good: nothing is written behind from here on
	p.core.Abandon()
	p.drive(ctx)
	p.refuseForwarded(ctx, func(*forwarded) bool { return true })
}

// drive carries out the core's outputs until it is quiet: journal (stamp
// and store) before acknowledging, then apply commits and reply. While a
// segment write is in flight (writeBehind) it takes no Ready: the core's
// outputs wait for the write to return, as they would for a slow disk.
func (p *partitionActor) drive(ctx actor.Context) {
	for p.writing == nil && p.storeFailed == "" && p.core.HasReady() {
		rd := p.core.Ready()
		if rd.State != nil && !p.node.persistState(p.log, p.core, p.ref.Group, *rd.State, p.plog.HighWatermark()) {
			rd.Send = nil // 6.13
		}
		if rd.Truncate != 0 {
			p.tr.truncateFrom(rd.Truncate)
		}
		for _, f := range rd.Truncated {
			// Discarded uncommitted batches give their offsets back.
			if ph := wire.HeaderOf(f).Prepare(); ph.Operation == wire.OpSendMessages && len(f) >= wire.HeaderSize+wire.BatchHeaderSize {
				p.plog.RollbackJournal(wire.Batch(f[wire.HeaderSize:]).BaseOffset())
			}
		}
		leading := p.core.Leading()
		p.pooled.journal(rd.Journal)
		w := p.stampJournal(rd.Journal, leading)
		if len(w.toStore) > 0 && !p.storeAtCommit && !p.syncWrites {
			// A group of one: the segments are its journal. This Ready's
			// commits are of ops journaled before; they are applied and
			// answered now, and its journal is written behind the mailbox.
			p.applyReady(ctx, rd, leading)
			w.send, w.quiet = rd.Send, rd.Quiet
			p.writeBehind(ctx, w)
			break
		}
		w.stored, w.err = p.node.store.AppendBatches(p.ref.Group, w.toStore, p.settings.enforceFsync)
		head := p.journaled(w)
		if head != 0 && p.storeAtCommit {
			// The journal is memory (9.4 rule 1); its head is not: after a
			// restart the core must not nack what it may have acknowledged
			// (vsr.Recovery.JournalHead). Written before the sends of this
			// Ready, whose PrepareOks acknowledge these ops.
			head = p.core.JournalHeadAfter(head)
			if err := p.node.store.Put(p.keyJournalHead, binary.LittleEndian.AppendUint64(nil, head), false); err != nil {
				p.log.Error("recording the journal head", "op", head, "err", err)
			}
		}
		p.tr.sent(rd.Send)
		p.sendPrepares(rd.Send)
		p.node.postQuiet(p.ref.Group, rd.Quiet)
		p.applyReady(ctx, rd, leading)
	}
	p.cancelCode = 0
	p.repairs.observe(p.log, p.core, p.tr)
	p.transfers.maybeStart(ctx)
	p.beh.follow(p.core, p.log, p.ref.Group, p.tr)
	p.tr.publish(p.core)
	p.reportFollow(ctx)
}

// applyReady applies a Ready's commits, stores their batches where the
// group stores at commit, and answers its requests: the replies after the
// batches they follow are stored, the canceled and the rejected.
func (p *partitionActor) applyReady(ctx actor.Context, rd vsr.Ready, leading bool) {
	for _, c := range rd.Commit {
		_, replies := c.Tag.(*pending)
		p.tr.committed(c, leading)
		p.apply(ctx, c)
		p.tr.applied(c.Op, replies)
		if p.storeAtCommit { // a group of one has no one to repair
			p.tail.add(c.Frame, p.tailCap())
			p.tailDirty = true
		}
	}
	if p.storeAtCommit && len(p.toStore) > 0 && !p.syncWrites {
		p.commitBehind(ctx, wire.HeaderOf(rd.Commit[len(rd.Commit)-1].Frame).Prepare())
	} else {
		if n := len(rd.Commit); p.storeCommitted(ctx) && n > 0 {
			p.recordApplied(wire.HeaderOf(rd.Commit[n-1].Frame).Prepare()) // once per Ready, not per op
			p.saveTail(false)
		}
	}
	for _, t := range rd.Canceled {
		if pd, ok := t.(*pending); ok {
			p.forgetPooled(pd)
			code := wire.ErrTransientNotCommitted
			if p.cancelCode != 0 {
				code = p.node.refusedForSpace()
			}
			p.replyTo(ctx, pd.req, denyReply(&pd.req.hdr, pd.req.connID, 0, code))
		}
	}
	for _, t := range rd.Rejected {
		// Another prepare took its op: it never committed, so the client
		// may send it again anywhere.
		if pd, ok := t.(*pending); ok {
			p.forgetPooled(pd)
			p.replyTo(ctx, pd.req, denyReply(&pd.req.hdr, pd.req.connID, 0, wire.ErrTransientNotAccepted))
		}
	}
}

// journalWrite is one Ready's journal: its prepares, stamped, the batches
// to store and, once written, how many were stored. A group of one writes
// it behind the mailbox (writeBehind): then send and quiet are what of its
// Ready waits for the write, and done closes when it has returned. A group
// with backups writes a Ready's committed batches behind the mailbox the
// same way (commitBehind, committed set): replies wait for the write, and
// applied is the op the write records as applied after the batches.
type journalWrite struct {
	frames     [][]byte
	toStore    [][]byte
	storedFrom []int // the index in frames of each of toStore
	failed     int   // the first frame whose stamp failed (len(frames): none)
	failure    error
	leading    bool
	stored     int
	err        error
	send       []vsr.Envelope
	quiet      []vsr.QuietEntry
	done       chan struct{}
	seq        uint64 // which write behind (a journalWrite is reused)

	committed  bool
	answered   bool // its replies went out (answerStored)
	replies    []heldReply
	applied    wire.PrepareHeader
	persistTo  uint64 // the log's committed frontier the write makes readable from the Store
	appliedErr error
}

// writeSeqs numbers the writes behind mailboxes, process-wide.
var writeSeqs atomic.Uint64

// journalWritten is the write behind the mailbox numbered seq that
// returned.
type journalWritten struct{ seq uint64 }

// batchesStored is the write behind numbered seq, of committed batches,
// that stored them (its applied record follows).
type batchesStored struct{ seq uint64 }

// reset readies a recycled write for the next Ready.
func (w *journalWrite) reset() {
	w.toStore, w.storedFrom, w.replies = w.toStore[:0], w.storedFrom[:0], w.replies[:0]
	w.failed, w.failure, w.stored, w.err, w.done = 0, nil, 0, nil, nil
	w.committed, w.answered, w.applied, w.persistTo, w.appliedErr = false, false, wire.PrepareHeader{}, 0, nil
}

// takeWrite is the recycled write, or a new one.
func (p *partitionActor) takeWrite() *journalWrite {
	w := p.spareWrite
	if w == nil {
		w = &journalWrite{}
	}
	p.spareWrite = nil
	w.reset()
	return w
}

// recycleWrite keeps w's buffers for the next write, holding no batch.
func (p *partitionActor) recycleWrite(w *journalWrite) {
	clear(w.frames)
	clear(w.toStore)
	clear(w.replies)
	w.frames = nil
	p.spareWrite = w
}

// stampJournal stamps (at the primary) or checks the stamp of (at a
// backup) a Ready's prepares in order, up to the first that fails, and
// collects the batches the group keeps at journal time.
func (p *partitionActor) stampJournal(frames [][]byte, leading bool) *journalWrite {
	w := p.takeWrite()
	w.frames, w.leading, w.failed = frames, leading, len(frames)
	for i, f := range frames {
		ph := wire.HeaderOf(f).Prepare()
		store, err := p.stampForJournal(ph, f[wire.HeaderSize:])
		if err != nil {
			w.failed, w.failure = i, err
			break
		}
		if store {
			w.toStore, w.storedFrom = append(w.toStore, f[wire.HeaderSize:]), append(w.storedFrom, i)
		}
	}
	return w
}

// writeBehind stores w's batches off the actor (one AppendBatches: one
// writev, one fsync under enforce_fsync; DESIGN.md: never hold an actor on
// a sync): the mailbox goes on meanwhile (polls, offsets, the sends that
// form the next group), and drive takes the next Ready only once the write
// has returned (journalWritten, or settle).
func (p *partitionActor) writeBehind(ctx actor.Context, w *journalWrite) {
	stages.Mark(stages.WriteBehind)
	w.done = make(chan struct{})
	w.seq = writeSeqs.Add(1) // never reused by a later incarnation, whose mailbox may hold this one's messages
	p.writing = w
	self, root, store, group, fsync := ctx.Self(), p.node.root(), p.node.store, p.ref.Group, p.settings.enforceFsync
	hook := p.node.opts.beforeJournalWrite
	keyApplied := p.keyApplied
	go func() {
		var injected error
		if hook != nil {
			injected = hook(group)
		}
		stages.Mark(stages.WriteStart)
		if w.stored, w.err = 0, injected; injected == nil {
			w.stored, w.err = store.AppendBatches(group, w.toStore, fsync)
		}
		stages.Mark(stages.WriteDone)
		seq := w.seq
		if w.committed {
			// The replies go now, as they did before the applied record
			// when the write ran in the actor: they need not wait for its
			// sync (a badger fsync more under enforce_fsync).
			root.Send(self, &batchesStored{seq})
			if w.err == nil {
				w.appliedErr = store.Put(keyApplied, appliedValue(w.applied), fsync) // after the batches (recordApplied)
			}
		}
		close(w.done)
		root.Send(self, &journalWritten{seq})
	}()
}

// commitBehind writes the committed batches a Ready applied (a group with
// backups stores at commit) behind the mailbox, as writeBehind does a
// group of one's journal: their replies and the applied record (applied,
// the Ready's last op) wait for the write, the Ready's sends went out
// before it, and polls, offsets and the sends that form the next group go
// on meanwhile. Polls may see the applied batches before the write
// returns: they are committed on a quorum (the reference server also
// serves what it has not written yet); their producers are answered
// after it.
func (p *partitionActor) commitBehind(ctx actor.Context, applied wire.PrepareHeader) {
	w := p.takeWrite()
	w.committed, w.applied, w.persistTo = true, applied, p.plog.HighWatermark()
	w.toStore, p.toStore = p.toStore, w.toStore
	w.replies, p.replies = p.replies, w.replies
	p.writeBehind(ctx, w)
}

// writeReturned finishes the write in flight once it has returned: its
// prepares are reported journaled (or the core truncates from the first
// unstored one) and what of its Ready waited for it goes out; for
// committed batches, their replies.
func (p *partitionActor) writeReturned(ctx actor.Context, w *journalWrite) {
	<-w.done
	p.writing = nil
	if w.committed {
		if !w.answered {
			p.answerStored(ctx, w)
		}
		if w.appliedErr != nil {
			p.log.Error("recording the applied op", "op", w.applied.Op, "err", w.appliedErr)
		}
		p.saveTail(false)
		p.recycleWrite(w)
		return
	}
	p.journaled(w)
	p.tr.sent(w.send)
	p.sendPrepares(w.send)
	p.node.postQuiet(p.ref.Group, w.quiet)
	w.send, w.quiet = nil, nil
}

// answerStored carries out what storing w's committed batches decided:
// their replies, or the stop (committedStored); the log may then evict
// them.
func (p *partitionActor) answerStored(ctx actor.Context, w *journalWrite) {
	w.answered = true
	if p.committedStored(ctx, w.toStore, w.replies, w.stored, w.err) {
		p.plog.MarkPersisted(w.persistTo)
	}
}

// settle finishes the write in flight, if any (driveInPlace): a purge, a
// truncation, a drop or a stop must not interleave with a write, and
// starts from the state a drive without writes behind leaves.
func (p *partitionActor) settle(ctx actor.Context) {
	if p.writing != nil {
		p.driveInPlace(ctx)
	}
}

// driveInPlace waits for the write in flight and drives the core until it
// is quiet, writing in place (no write behind).
func (p *partitionActor) driveInPlace(ctx actor.Context) {
	p.syncWrites = true
	defer func() { p.syncWrites = false }()
	if p.writing != nil {
		p.writeReturned(ctx, p.writing)
	}
	p.drive(ctx)
}

// waitWrite waits for the write in flight to return, leaving its
// outcome unreported (an actor that restarts boots from the segments).
func (p *partitionActor) waitWrite() {
	if w := p.writing; w != nil {
		<-w.done
	}
}

// journaled reports a written journal to the core: each prepare up to the
// first that failed (its stamp, or the store) is journaled; on that one
// the core truncates it and every later one, so the rest are not
// reported. It returns the last op journaled, 0 if none, and recycles w.
func (p *partitionActor) journaled(w *journalWrite) (head uint64) {
	defer p.recycleWrite(w)
	stored, err := w.stored, w.err
	if err != nil {
		p.plog.RollbackJournal(wire.Batch(w.toStore[stored]).BaseOffset())
		if storage.IsNoSpace(err) {
			p.journalSpace.failed(p.log, "journal append", err)
		} else {
			p.log.Error("journal append failed", "err", err)
		}
	} else if len(w.toStore) > 0 {
		p.journalSpace.succeeded(p.log, "journal append")
	}
	p.countStored(stored)
	frames := w.frames
	for i, f := range frames[:min(w.failed+1, len(frames))] {
		ph := wire.HeaderOf(f).Prepare()
		opErr := error(nil)
		if i == w.failed {
			opErr = w.failure
		}
		if stored < len(w.toStore) && i == w.storedFrom[stored] {
			opErr = err // the first batch the store did not take
		}
		if opErr == nil {
			head = ph.Op
			p.tr.journaled(ph, w.leading)
		}
		p.core.Journaled(ph.Op, opErr)
		if opErr != nil {
			if storage.IsNoSpace(opErr) {
				// A group of one: the ops this cancels were never
				// journaled nor committed, so the producer may be told
				// plainly (diskspace.go), not to replay (57).
				p.cancelCode = errNoSpace
			}
			break // the core truncated this op and every later one
		}
	}
	return head
}

// stampForJournal prepares one prepare's body for the journal: a
// SendMessages batch is stamped (at the primary) or its stamp checked (at
// a backup); store says whether it is to be written now (not when the
// group stores at commit, nor for an offset write, which journals nothing
// durable until it commits).
func (p *partitionActor) stampForJournal(ph wire.PrepareHeader, body []byte) (store bool, err error) {
	if ph.Operation != wire.OpSendMessages {
		return false, nil
	}
	if !p.core.Leading() && p.alreadyStored(body) {
		return false, nil // a repaired op this backup stored before a restart (7.4 rule 2)
	}
	if p.core.Leading() {
		p.plog.StampNext(body, ph.Timestamp)
	} else if err := p.plog.VerifyStamp(body, ph.Timestamp); err != nil {
		// A backup journals the primary's stamped bytes verbatim after
		// checking the stamp is its own next offset and the prepare's
		// timestamp (replica-plane.md 5.13 rule 4).
		p.log.Warn("refusing a prepare whose batch stamp does not match", "op", ph.Op, "err", err)
		return false, err
	}
	return !p.storeAtCommit, nil
}

func (p *partitionActor) apply(ctx actor.Context, c vsr.Committed) {
	h := wire.HeaderOf(c.Frame)
	ph := h.Prepare()
	pd, _ := c.Tag.(*pending)
	switch ph.Operation {
	case wire.OpSendMessages:
		batch := c.Frame[wire.HeaderSize:]
		if pd == nil && p.alreadyStored(batch) {
			break // repaired past a restart: these offsets are in the segments
		}
		var table wire.FrameTable // the connection's (checkBatch); none for a backup's or a repaired op
		if pd != nil {
			table = pd.req.batch.table
		}
		var owner partition.Owner
		if pd != nil {
			owner = p.pooledOwner(pd.req, batch)
		}
		if owner == nil { // a peer's prepare (a backup's, or one a fate waits for)
			owner = p.pooled.takeAdopted(batch)
		}
		if err := p.plog.ApplySendIndexed(batch, table, owner); err != nil {
			p.log.Error("apply send", "err", err)
		} else if p.storeAtCommit {
			p.toStore = append(p.toStore, batch) // with the Ready's others (storeCommitted)
		}
		p.core.SetOffsetFrontier(p.plog.HighWatermark())
		if pd != nil {
			conf := wire.SendConfirmations{{StreamID: p.ref.Stream, TopicID: p.ref.Topic,
				PartitionID: p.ref.Partition, BaseOffset: wire.Batch(batch).BaseOffset()}}
			// Held until the Ready's batches are stored (drive).
			p.replies = append(p.replies, heldReply{pd.req, p.committedReply(ph, pd.req, conf.AppendTo(nil)), len(p.toStore)})
		}
	case wire.OpStoreConsumerOffset, wire.OpDeleteConsumerOffset:
		// Every replica applies the committed body (replica-plane.md 13.1:
		// the client body with flag 1 and a group named by its id).
		if w, ok := offsetWriteOf(ph.Operation, c.Frame[wire.HeaderSize:]); ok {
			p.applyOffsetWrite(w)
		}
		if pd != nil { // after the Ready's batches before it (drive)
			p.replies = append(p.replies, heldReply{pd.req, p.committedReply(ph, pd.req, wire.AppendResultOK(nil)), len(p.toStore)})
		}
	}
	p.publishStats()
}

// recordApplied stores the last op a cluster's partition replica applied
// (appliedKey), after the batches reached the segments; synced like them,
// only when the topic enforces fsync.
func (p *partitionActor) recordApplied(ph wire.PrepareHeader) {
	if !p.storeAtCommit {
		return
	}
	if err := p.node.store.Put(p.keyApplied, appliedValue(ph), p.settings.enforceFsync); err != nil {
		p.log.Error("recording the applied op", "op", ph.Op, "err", err)
	}
}

// appliedValue is appliedKey's value: the op, its checksum and timestamp.
func appliedValue(ph wire.PrepareHeader) []byte {
	v := make([]byte, 32)
	binary.LittleEndian.PutUint64(v, ph.Op)
	binary.LittleEndian.PutUint64(v[8:], ph.Checksum.Lo)
	binary.LittleEndian.PutUint64(v[16:], ph.Checksum.Hi)
	binary.LittleEndian.PutUint64(v[24:], ph.Timestamp)
	return v
}

// alreadyStored reports whether the segments already hold this very batch
// (same base offset, same batch checksum) below the committed frontier: an
// op repaired after a restart (the core's floor rule lets such a window
// connect). Never for a batch the primary is about to stamp, and never
// for a different batch at those offsets (a purge this replica has not
// applied yet restarts the primary's offsets at 0): that one goes on to
// the stamp check and is refused.
func (p *partitionActor) alreadyStored(batch []byte) bool {
	if !p.storeAtCommit || len(batch) < wire.BatchHeaderSize {
		return false
	}
	b := wire.Batch(batch)
	if b.MessageCount() == 0 || b.BaseOffset()+uint64(b.MessageCount()) > p.plog.HighWatermark() {
		return false
	}
	stored, err := p.node.store.ReadBatch(p.ref.Group, b.BaseOffset())
	return err == nil && len(stored) == len(batch) && wire.Batch(stored).Checksum() == b.Checksum()
}

// storeCommitted writes the committed batches a Ready applied to their
// segments in one AppendBatches (groups with backups store at commit),
// and marks the log persisted. The ops are committed on a quorum and
// cannot be taken back, so a replica that fails to store one cannot go on
// consistently: as 5.5 step 3 does for an unreclaimable op, it stops, here
// the partition actor, whose supervisor restarts it from its durable
// state. When the disk is full, the restarted replica first waits out of
// its group until the batch fits (diskspace.go), so the stop happens once
// per episode, not per repair.
func (p *partitionActor) storeCommitted(ctx actor.Context) bool {
	batches := p.toStore
	defer func() { clear(batches); p.toStore = batches[:0] }()
	defer func() { clear(p.replies); p.replies = p.replies[:0] }()
	if len(batches) == 0 {
		p.sendHeldReplies(ctx, p.replies)
	} else {
		stored, err := p.node.store.AppendBatches(p.ref.Group, batches, p.settings.enforceFsync)
		if !p.committedStored(ctx, batches, p.replies, stored, err) {
			return false
		}
	}
	p.plog.MarkPersisted(p.plog.HighWatermark())
	return true
}

// committedStored carries out the outcome of storing committed batches
// (in place or behind the mailbox): replies, which wait for the batches
// before them, go out, and it reports true; a failure stops the actor
// (stopForStore) after the replies of what was stored, and it reports
// false.
func (p *partitionActor) committedStored(ctx actor.Context, batches [][]byte, replies []heldReply, stored int, err error) bool {
	if err != nil {
		// The ops whose batches (and those before) are stored get
		// their replies before the stop; the rest are told to replay.
		n := storedReplies(replies, stored)
		p.sendHeldReplies(ctx, replies[:n])
		for _, r := range replies[n:] {
			// Committed, not stored here: of unknown outcome to the
			// producer, who may replay it, rather than left to time out.
			p.replyTo(ctx, r.req, denyReply(&r.req.hdr, r.req.connID, 0, wire.ErrTransientNotCommitted))
		}
		failed := batches[min(stored, len(batches)-1)]
		if storage.IsNoSpace(err) {
			var need int64 // the group's batches it could not store
			for _, b := range batches[min(stored, len(batches)-1):] {
				need += int64(len(b))
			}
			p.node.diskWaits.park(p.ref.Group, need)
		}
		p.stopForStore(ctx, fmt.Sprintf("partition %d: storing committed batch at offset %d: %v", p.ref.Group, wire.Batch(failed).BaseOffset(), err))
		return false
	}
	if p.node.diskWaits.clear(p.ref.Group) {
		p.log.Info("partition replica stores committed batches again")
	}
	p.countStored(stored)
	p.sendHeldReplies(ctx, replies)
	return true
}

// stopForStore stops the actor after a committed batch could not be
// stored (storeCommitted): at once, or, while a handler settles the write
// in flight (a drop, a purge, a stop), once that handler is done, so its
// work is not lost to the restart; meanwhile drive takes no Ready.
func (p *partitionActor) stopForStore(ctx actor.Context, why string) {
	if !p.syncWrites {
		panic(why)
	}
	if p.storeFailed == "" {
		p.storeFailed = why
		ctx.Send(ctx.Self(), &storeFailure{why})
	}
}

// storeFailure is stopForStore's deferred stop.
type storeFailure struct{ why string }

// storedReplies is how many of replies, from the first, wait only for
// batches among the first stored.
func storedReplies(replies []heldReply, stored int) int {
	n := 0
	for n < len(replies) && replies[n].after <= stored {
		n++
	}
	return n
}

// sendHeldReplies sends replies.
func (p *partitionActor) sendHeldReplies(ctx actor.Context, replies []heldReply) {
	for _, r := range replies {
		p.replyTo(ctx, r.req, r.frame)
	}
}

// countStored counts one segment write of n batches (telemetry.go).
func (p *partitionActor) countStored(n int) {
	if n > 0 {
		p.node.refs.tel.storeWrites.Add(1)
		p.node.refs.tel.storedBatches.Add(int64(n))
	}
}

// committedReply is class E of client-plane.md 4.4.
func (p *partitionActor) committedReply(ph wire.PrepareHeader, req *clientRequest, body []byte) []byte {
	return replyFrame(wire.ReplyHeader{
		Cluster: ph.Cluster, View: ph.View, Release: req.hdr.Release, Replica: ph.Replica,
		RequestChecksum: req.hdr.RequestChecksum, Client: wire.U128{Lo: uint64(req.connID)},
		Op: ph.Op, Commit: ph.Op, Timestamp: ph.Timestamp, Request: req.hdr.Request, Operation: ph.Operation,
	}, body)
}

func (p *partitionActor) replyTo(ctx actor.Context, req *clientRequest, frame []byte) {
	stages.Mark(stages.Reply)
	if req.relay != nil {
		p.node.sendRelayed(req.relay, frame)
		return
	}
	ctx.Send(req.conn, &replyOut{frame: frame})
}

// onPoll serves a poll from the committed log (client-plane.md 8.4.1). The
// reply frame is built in one buffer: header space, then the records
// appended in place, then the header written over the front (no copy of
// the records).
func (p *partitionActor) onPoll(ctx actor.Context, m *partitionPoll) {
	p.mem.touch()
	if p.refusePoll(ctx, m, nil) {
		return
	}
	stored, has := p.plog.GetOffset(m.kind, m.key)
	frame := clientplane.GetFrame(wire.HeaderSize + wire.PolledMessagesHeaderSize + p.pollHint(m.poll.Count))
	// Whole cached batches ride by reference (wire.Splice): the edge
	// writes them from the cache, so a poll copies only what it builds.
	// Evicted batches, whole or sliced by their kept frame tables, ride
	// as sources the connection reads from their files when it writes
	// the reply (clientplane.ReadsSources), not this actor; a relay joins
	// the reply here, so it reads them here.
	fromFiles := m.req.readsSources && m.req.relay == nil
	frame, splices, polled, err := p.plog.AppendPollReplySpliced(frame[:wire.HeaderSize], nil, fromFiles, m.partition, m.poll.Strategy, m.poll.Count, stored, has)
	if err != nil {
		p.log.Error("poll read failure", "err", err)
		if p.refusePoll(ctx, m, err) {
			return
		}
	}
	if m.poll.AutoCommit && polled.Count > 0 {
		// Best effort, not acknowledged (8.4.1): applied and persisted
		// locally like a NoAck store.
		p.applyOffsetWrite(&partitionOffsetWrite{kind: m.kind, key: m.key, offset: polled.Last})
	}
	if m.kind == wire.ConsumerGroup && polled.Count > 0 {
		p.node.root().Send(p.parent, &groupProgress{ref: metadata.GroupRef{Stream: p.ref.Stream, Topic: p.ref.Topic, Group: m.key},
			partition: p.ref.Partition, polled: polled.Last, hasPolled: true})
	}
	h := echo(&m.req.hdr)
	h.Client, h.Op, h.Commit, h.Operation = m.req.hdr.Client, m.req.hdr.Session, p.node.refs.commit.Load(), wire.OpNonReplicated
	h.Size = uint32(wire.SplicedLen(frame, splices))
	h.Encode(wire.HeaderOf(frame))
	if m.req.relay != nil { // a non-member forwarded it (placement.go)
		p.node.relayPoll(m.req.relay, frame, splices, polled.Last, polled.Count > 0)
		return
	}
	ctx.Send(m.req.conn, &replyOut{frame: frame, pooled: true, splices: splices})
}

// pollHint guesses a poll reply's record bytes from the partition's mean
// message size, so the reply buffer rarely grows.
func (p *partitionActor) pollHint(count uint32) int {
	s := p.plog.Stats()
	if s.MessagesCount == 0 || count == 0 {
		return 0
	}
	per := s.SizeBytes/s.MessagesCount + 1
	return int(min(uint64(count)*per+wire.BatchHeaderSize, 64<<20))
}

// onGetOffset answers GetConsumerOffset (8.5.1): Z when nothing is stored.
func (p *partitionActor) onGetOffset(ctx actor.Context, m *partitionGetOffset) {
	var body []byte
	if off, ok := p.plog.GetOffset(m.kind, m.key); ok {
		body = (&wire.ConsumerOffset{PartitionID: p.ref.Partition, CurrentOffset: p.plog.CurrentOffset(), StoredOffset: off}).AppendTo(nil)
	}
	p.replyTo(ctx, m.req, readReply(&m.req.hdr, p.node.refs.commit.Load(), 0, body))
}

// onOffsetWrite handles Store/DeleteConsumerOffset (8.5.2, 8.5.3): checks
// at the primary, then NoAck applies locally (class F) and Quorum goes
// through consensus (class E).
func (p *partitionActor) onOffsetWrite(ctx actor.Context, m *partitionOffsetWrite) {
	req := m.req
	if m.ack != wire.AckNone && !m.delete && !p.node.acceptsClientWrites() {
		p.replyTo(ctx, req, denyReply(&req.hdr, req.connID, 0, p.node.refusedForSpace()))
		return
	}
	if m.ack != wire.AckNone && !p.core.Leading() {
		// The primary checks the offset against its log: a backup's may
		// not have applied the latest sends yet.
		frame := make([]byte, wire.HeaderSize+len(m.body))
		copy(frame, req.frame[:wire.HeaderSize])
		copy(frame[wire.HeaderSize:], m.body)
		if !p.forward(req, frame) {
			p.replyTo(ctx, req, denyReply(&req.hdr, req.connID, 0, wire.ErrTransientNotAccepted))
		}
		return
	}
	code := p.plog.CheckStore(m.offset)
	if m.delete {
		code = p.plog.CheckDelete(m.kind, m.key)
	}
	if code != 0 {
		p.replyTo(ctx, req, denyReply(&req.hdr, req.connID, 0, code))
		return
	}
	if m.ack == wire.AckNone {
		p.applyOffsetWrite(m)
		p.replyTo(ctx, req, replyFrame(wire.ReplyHeader{
			Client: wire.U128{Lo: uint64(req.connID)}, Op: p.core.CommitMax(), Commit: p.core.CommitMax(),
			Timestamp: req.hdr.Timestamp, Request: req.hdr.Request, Operation: req.hdr.Operation,
			RequestChecksum: req.hdr.RequestChecksum,
		}, wire.AppendResultOK(nil)))
		return
	}
	op := wire.OpStoreConsumerOffset
	if m.delete {
		op = wire.OpDeleteConsumerOffset
	}
	frame := make([]byte, wire.HeaderSize+len(m.body))
	copy(frame[wire.HeaderSize:], m.body)
	err := p.core.Submit(vsr.Request{Client: req.hdr.Client, Request: req.hdr.Request,
		RequestChecksum: req.hdr.RequestChecksum, Operation: op, UserID: req.bound.userID,
		Frame: frame, Tag: &pending{req: req, write: m}}, p.node.opts.Clock())
	if err != nil {
		p.replyTo(ctx, req, denyReply(&req.hdr, req.connID, 0, wire.ErrTransientNotAccepted))
		return
	}
	p.drive(ctx)
}

// applyOffsetWrite applies and persists a consumer-offset write.
func (p *partitionActor) applyOffsetWrite(m *partitionOffsetWrite) {
	var err error
	if m.delete {
		if p.plog.ApplyDeleteOffset(m.kind, m.key) {
			err = p.node.store.DeleteOffset(p.ref.Group, uint8(m.kind), m.key)
		}
	} else if p.plog.ApplyStoreOffset(m.kind, m.key, m.offset) {
		off, _ := p.plog.GetOffset(m.kind, m.key)
		err = p.node.store.StoreOffset(p.ref.Group, uint8(m.kind), m.key, off, p.settings.enforceFsync)
		if m.kind == wire.ConsumerGroup && p.parent != nil {
			p.node.root().Send(p.parent, &groupProgress{ref: metadata.GroupRef{Stream: p.ref.Stream, Topic: p.ref.Topic, Group: m.key},
				partition: p.ref.Partition, committed: off, hasCommitted: true})
		}
	}
	if err != nil {
		p.log.Error("persist consumer offset", "err", err)
	}
}

// truncate applies a committed TruncatePartition (DeleteSegments).
func (p *partitionActor) truncate(upTo uint64) {
	t := p.plog.Truncate(upTo)
	p.persistTruncation(t.OldestRetained)
}

func (p *partitionActor) persistTruncation(oldest uint64) {
	var v [8]byte
	binary.LittleEndian.PutUint64(v[:], oldest)
	err := errors.Join(
		p.node.store.Put(watermarkKey(p.ref.Group), v[:], true),
		p.node.store.DeleteBatchesBelow(p.ref.Group, oldest))
	if err != nil {
		p.log.Error("persist truncation", "err", err)
	}
	if !p.node.acceptsClientWrites() {
		p.transfers.dropOffers("segments deleted while the disk is below its soft reserve")
	}
	p.publishStats()
}

// purge empties the partition (server-behaviour.md 5.8): offsets restart
// at 0 and stored consumer offsets are cleared.
func (p *partitionActor) purge() {
	p.transfers.dropOffers("the partition was purged")
	p.transfers.keep(nil) // segments a failed transfer staged: of the data purged
	p.plog.Purge()
	if err := p.node.store.DeletePartition(p.ref.Group); err != nil {
		p.log.Error("purge partition", "err", err)
	}
	_ = p.node.store.Delete(watermarkKey(p.ref.Group))
	p.core.SetOffsetFrontier(p.plog.HighWatermark())
	p.publishStats()
}

// clean is one pass of the segment cleaner (server-behaviour.md 5.7):
// expired and over-budget sealed segments go, oldest first, never past the
// consumer barrier, at most 16 per pass. Retention is local to each
// replica's copy.
func (p *partitionActor) clean(nowUs uint64) {
	n, upTo := p.plog.RetentionCandidates(nowUs, partition.Retention{
		MessageExpiryUs: p.settings.messageExpiryUs, MaxTopicSize: p.settings.maxTopicSize,
		PartitionsCount: p.settings.partitionsCount, SegmentSize: p.settings.segmentSize,
		MaxMessageSize: p.settings.maxMessageSize,
	})
	if n == 0 {
		return
	}
	p.truncate(upTo)
	p.log.Info("segment cleaner removed sealed segments", "segments", n, "up_to_offset", upTo)
}

// offsetWriteOf decodes a committed consumer-offset prepare body.
func offsetWriteOf(op wire.Operation, body []byte) (*partitionOffsetWrite, bool) {
	if op == wire.OpStoreConsumerOffset {
		var r wire.StoreConsumerOffset
		if r.Decode(body) != nil {
			return nil, false
		}
		return &partitionOffsetWrite{kind: r.Consumer.Kind, key: wire.ConsumerKey(r.Consumer.ID), offset: r.Offset}, true
	}
	var r wire.DeleteConsumerOffset
	if r.Decode(body) != nil {
		return nil, false
	}
	return &partitionOffsetWrite{delete: true, kind: r.Consumer.Kind, key: wire.ConsumerKey(r.Consumer.ID)}, true
}

// repairWatch logs a group's journal repair as it happens: each session a
// lagging replica opens, and each refusal (the primary no longer holds
// what it lacks), so users can follow a replica catching up.
type repairWatch struct{ sessions, refused uint64 }

func (w *repairWatch) observe(log *slog.Logger, core *vsr.Replica, tr *groupTrace) {
	tr.repairProgress(core.CommitMin())
	if core.Repairs != w.sessions {
		w.sessions = core.Repairs
		tr.repairStarted(core.Primary(), core.CommitMin(), core.CommitMax())
		log.Info("journal repair started", "commit_min", core.CommitMin(), "commit_max", core.CommitMax(),
			"from", core.Primary(), "sessions", w.sessions)
	}
	if core.RepairsRefused != w.refused {
		w.refused = core.RepairsRefused
		tr.endRepair("refused")
		if core.NeedTransfer >= 0 {
			log.Info("journal repair refused: the primary compacted the ops this replica lacks; state transfer follows",
				"commit_min", core.CommitMin(), "commit_max", core.CommitMax())
		} else {
			log.Warn("journal repair refused: the primary no longer holds the ops this replica lacks; it stays behind (partition state transfer is not implemented)",
				"commit_min", core.CommitMin(), "commit_max", core.CommitMax())
		}
	}
}

func dropCount(d map[string]uint64) (n uint64) {
	for _, v := range d {
		n += v
	}
	return n
}
