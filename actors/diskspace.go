package actors

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel/metric"

	"iggynode/config"
	"iggynode/storage"
	"iggynode/wire"
)

// Disk full is an error, not a crash (DESIGN.md, "Scale and budgets":
// writes refused with a clear error before the store runs out, reads and
// logins still served). The store's guard (storage, "Disk space") says
// how full the disk is; this file is what the actors do about it.
//
// The error: CannotWriteToFile (10006), in the header status, for every
// write refused for lack of space. It is the closest code of the table
// (client-plane.md 15) to "this node cannot write now" for every kind of
// write (messages, offsets, metadata), is not transient in any SDK (they
// replay only 57 and 58), and the reference server never sends it on the
// client plane, so it means only this. Not TransientNotCommitted (57):
// that says the outcome is unknown and the request must be replayed,
// which is false (nothing was admitted) and is the retry loop a full disk
// caused. Not TransientNotAccepted (58): the SDK re-issues it at once and
// fails over, and a full disk does not pass in milliseconds. Not
// CannotAppendMessage (4010), which names messages, nor TopicFull (3009),
// which names the topic's max_topic_size, a cause the user fixes
// differently.
//
// What is refused, by the guard's state (storage.SpaceState):
//
//	state          refused (CannotWriteToFile)                 still served
//	ok             nothing
//	writes refused SendMessages, StoreConsumerOffset with      polls, reads, logins (Register), Logout,
//	(below soft)   ack quorum, metadata writes that create or  NoAck offsets and auto-commit, deletes
//	               change (CreateStream, UpdateTopic,           and purges (they free space), Join/Leave
//	               CreateUser, ChangePassword, ...)             consumer group, committed ops a backup stores
//	hard reserve   the same, and the store refuses batch       the same, but batches
//	(below hard)   appends
//
// A write is refused before it is admitted to consensus, so nothing
// refused was acknowledged. The checks run where the write is admitted:
// SendMessages and offset writes in the partition actor that receives
// them (the node a client is connected to, and the primary a forward
// reaches), metadata writes in the metadata primary, against each node's
// own disk. In a cluster a backup whose disk is full keeps storing what
// its group commits until the hard reserve; there a committed batch it
// cannot store stops its partition replica (storeCommitted panics, and
// the supervisor restarts it from durable state), which then waits for
// space out of consensus (diskWait below): the other replicas keep the
// quorum, and it catches up by repair or state transfer once space is
// back. A group of one journals to its segment at once: a journal append
// refused for space is answered CannotWriteToFile, not 57.
const errNoSpace = wire.ErrCannotWriteToFile

// diskRecheckMax bounds the back-off of a partition waiting for space.
const diskRecheckMax = 10 * time.Second

// spaceOptions are the store's guard options from system.disk.
func spaceOptions(d config.Disk) storage.SpaceOptions {
	return storage.SpaceOptions{ReserveSoft: int64(d.ReserveSoft), ReserveHard: int64(d.ReserveHard), CheckInterval: d.CheckInterval.D()}
}

// acceptsClientWrites reports whether this node's disk takes new client
// writes (above the soft reserve).
func (n *Node) acceptsClientWrites() bool { return n.store.Space().AcceptsClientWrites() }

// refusedForSpace counts one write refused for lack of space and returns
// its code.
func (n *Node) refusedForSpace() wire.ErrorCode {
	n.refs.tel.diskRefused.Add(1)
	return errNoSpace
}

// refusedOnLowDisk reports whether metadata operation op is refused below
// the soft reserve: what creates or changes state is; what frees space
// (deletes, purges), ends a session or is part of reading with a group
// (join, leave) is not. Register is not a metadata write here (onRegister).
func refusedOnLowDisk(op wire.Operation) bool {
	switch op {
	case wire.OpLogout, wire.OpDeleteStream, wire.OpPurgeStream, wire.OpDeleteTopic, wire.OpPurgeTopic,
		wire.OpDeletePartitions, wire.OpDeleteSegments, wire.OpDeleteConsumerGroup, wire.OpDeleteUser,
		wire.OpDeletePersonalAccessToken, wire.OpJoinConsumerGroup, wire.OpLeaveConsumerGroup:
		return false
	}
	return true
}

// noSpaceLog logs a run of writes failing for lack of space once when it
// starts and once when a write succeeds again, never per write.
type noSpaceLog struct{ failing bool }

func (l *noSpaceLog) failed(log *slog.Logger, what string, err error) {
	if !l.failing {
		l.failing = true
		log.Warn(what+" failed for lack of disk space; answering CannotWriteToFile until space returns", "err", err)
	}
}

func (l *noSpaceLog) succeeded(log *slog.Logger, what string) {
	if l.failing {
		l.failing = false
		log.Info(what + " succeeds again")
	}
}

// diskWaits are the partition groups of this node that could not store
// a committed batch for lack of space: their replica, restarted by its
// supervisor, waits out of consensus until the batch fits. Kept on the
// node because the restart makes a new actor.
type diskWaits struct {
	mu sync.Mutex
	m  map[uint64]*diskWait
	n  atomic.Int32 // len(m), so clear costs a backup's commit no lock
}

// diskWait is one group's wait: the batch size that did not fit and the
// back-off between two looks at the disk.
type diskWait struct {
	need    int64
	backoff time.Duration
}

// park records that group could not store need bytes (the back-off
// doubles from one wait to the next until a store succeeds).
func (w *diskWaits) park(group uint64, need int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[uint64]*diskWait{}
	}
	if d := w.m[group]; d != nil {
		d.need, d.backoff = need, min(2*d.backoff, diskRecheckMax)
		return
	}
	w.m[group] = &diskWait{need: need, backoff: time.Second}
	w.n.Store(int32(len(w.m)))
}

func (w *diskWaits) get(group uint64) (diskWait, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	d := w.m[group]
	if d == nil {
		return diskWait{}, false
	}
	return *d, true
}

// clear forgets group's wait; it reports whether there was one.
func (w *diskWaits) clear(group uint64) bool {
	if w.n.Load() == 0 {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.m[group]
	delete(w.m, group)
	w.n.Store(int32(len(w.m)))
	return ok
}

// diskRecheck wakes a partition waiting for space to look at the disk.
type diskRecheck struct{}

// startDiskWait puts a restarted partition replica that could not store
// a committed batch out of consensus until the batch fits (after boot).
func (p *partitionActor) startDiskWait(ctx actor.Context) {
	w, ok := p.node.diskWaits.get(p.ref.Group)
	if !ok {
		return
	}
	p.waitingForDisk = true
	p.log.Warn("partition replica out of its group until the disk has room for the committed batch it could not store",
		"need_bytes", w.need, "free_bytes", p.node.store.Space().Free(), "recheck", w.backoff)
	p.scheduleDiskRecheck(ctx, w.backoff)
}

func (p *partitionActor) scheduleDiskRecheck(ctx actor.Context, after time.Duration) {
	self, root := ctx.Self(), p.node.root()
	time.AfterFunc(after, func() { root.Send(self, &diskRecheck{}) })
}

// whileWaitingForDisk handles a message while the replica waits for
// space, and reports whether it did: consensus input is dropped (its
// time stands still, as before metadata caught up), writes are refused,
// everything else (polls, offsets reads, deletes, purges) goes on.
func (p *partitionActor) whileWaitingForDisk(ctx actor.Context) bool {
	switch m := ctx.Message().(type) {
	case *diskRecheck:
		w, _ := p.node.diskWaits.get(p.ref.Group)
		if !p.node.store.Space().Fits(w.need) {
			p.scheduleDiskRecheck(ctx, max(w.backoff, time.Second))
			return true
		}
		p.waitingForDisk = false
		p.time = timeKeeper{lastTick: p.node.clock.now()}
		p.log.Info("disk space is back: partition replica rejoins its group", "free_bytes", p.node.store.Space().Free())
		ctx.Send(ctx.Self(), &tick{})
		return true
	case *peerFrame, *tick, *quietIn, *peerChange, *driveSends:
		// A driveSends is a stale note of the incarnation that stopped.
		p.time = timeKeeper{lastTick: p.node.clock.now()}
		return true
	case *partitionSend:
		p.replyTo(ctx, m.req, denyReply(&m.req.hdr, m.req.connID, 0, p.node.refusedForSpace()))
		return true
	case *partitionOffsetWrite:
		if m.ack != wire.AckNone {
			p.replyTo(ctx, m.req, denyReply(&m.req.hdr, m.req.connID, 0, p.node.refusedForSpace()))
			return true
		}
	}
	return false
}

// diskMetrics: iggy.disk.free (bytes free on the data filesystem, as the
// guard last measured and charged it), iggy.disk.state (0 ok, 1 client
// writes refused, 2 below the hard reserve), iggy.disk.refused (writes
// answered CannotWriteToFile) and the batch files the store holds open
// and mapped.
func (t *nodeTelemetry) diskMetrics(m metric.Meter) {
	_, _ = m.Int64ObservableGauge("iggy.disk.free", metric.WithUnit("By"),
		metric.WithDescription("free bytes on the filesystem of system.path, as the disk space guard last measured them"),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			if g := t.disk.Load(); g != nil && g.Free() >= 0 {
				o.Observe(g.Free())
			}
			return nil
		}))
	_, _ = m.Int64ObservableGauge("iggy.disk.state",
		metric.WithDescription("disk space guard: 0 ok, 1 client writes refused (below system.disk.reserve_soft), 2 below reserve_hard"),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			if g := t.disk.Load(); g != nil {
				o.Observe(int64(g.State()))
			}
			return nil
		}))
	for _, g := range []struct {
		name, desc string
		read       func(storage.BatchFiles) int
	}{
		{"iggy.storage.batch_files.open", "batch-file handles open (bound: partition.max_open_files)", func(f storage.BatchFiles) int { return f.Open }},
		{"iggy.storage.batch_files.mapped", "batch files mapped for cold polls over plain TCP (bound: partition.max_open_files, beside the handles)", func(f storage.BatchFiles) int { return f.Mapped }},
	} {
		_, _ = m.Int64ObservableGauge(g.name, metric.WithDescription(g.desc),
			metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
				if s := t.store.Load(); s != nil {
					o.Observe(int64(g.read(s.BatchFiles())))
				}
				return nil
			}))
	}
	_, _ = m.Int64ObservableCounter("iggy.disk.refused",
		metric.WithDescription("client writes answered CannotWriteToFile (10006) for lack of disk space"),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(t.diskRefused.Load())
			return nil
		}))
}
