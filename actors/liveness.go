package actors

import (
	"crypto/rand"
	"encoding/binary"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"

	"iggynode/vsr"
	"iggynode/wire"
)

// livenessActor is the node's shell of vsr.Liveness, the node-level
// heartbeat (vsr/liveness.go, wire/nodeheartbeat.go): one per node, in
// cluster mode with cluster.quiescence on. It sends each peer one
// NodeHeartbeat per cluster.node_heartbeat_interval with the quiescence
// entries the partition actors posted, hands the entries peers send to
// the partition actors they name, and publishes which peers are live
// (Node.peerLive, read by every partition core's Config.Live).
//
// When a peer is lost or found it tells every partition actor, at most
// cluster.wake_batch of them per tick, so the view changes of thousands
// of groups whose primary died start over a few hundred milliseconds
// instead of in one burst that would overflow the peer queues (3.2) and
// the disk's superblock writes.
type livenessActor struct {
	n      *Node
	live   *vsr.Liveness
	time   timeKeeper // the core's tick and next wake-up (clock.go)
	routes routes
	// wakes are the peer changes still being announced; cursor is the
	// group list of the oldest.
	wakes  []peerChange
	cursor []*actor.PID
}

// quietPost carries a partition core's quiescence entries (Ready.Quiet).
type quietPost struct {
	group   uint64
	entries []vsr.QuietEntry
}

// quietIn is one entry a peer's node heartbeat carried for this group.
type quietIn struct{ vsr.ReceivedQuiet }

// postQuiet hands a group's quiescence entries to the node-level
// heartbeat.
func (n *Node) postQuiet(group uint64, entries []vsr.QuietEntry) {
	if len(entries) == 0 {
		return
	}
	if l := n.refs.liveness.Load(); l != nil {
		n.root().Send(l, &quietPost{group: group, entries: entries})
	}
}

// liveMembers gives the node-level heartbeat the peers of the roster.
type liveMembers struct{ mask uint32 }

// peerChange tells a partition actor that the node-level heartbeat lost
// or found a peer.
type peerChange struct {
	peer  uint8
	found bool
}

// peerLiveMask holds a bit per replica whose node is live, and for the
// cluster roster (clusterRoster) when each peer was last heard and whether
// a node-level heartbeat runs at all (without one, with
// cluster.quiescence off, nothing is known and every node counts as live).
type peerLiveMask struct {
	bits    atomic.Uint32
	tracked atomic.Bool
	heardUs [32]atomic.Uint64 // µs since the epoch; 0 = never
}

// heard records a frame from rep at nowUs.
func (m *peerLiveMask) heard(rep uint8, nowUs uint64) {
	if int(rep) < len(m.heardUs) {
		m.heardUs[rep].Store(nowUs)
	}
}

// lastHeard is when rep was last heard (0: never, or not tracked).
func (m *peerLiveMask) lastHeard(rep uint8) uint64 {
	if int(rep) >= len(m.heardUs) {
		return 0
	}
	return m.heardUs[rep].Load()
}

func (m *peerLiveMask) live(rep uint8) bool { return m.bits.Load()&(1<<rep) != 0 }

func (m *peerLiveMask) set(rep uint8, on bool) {
	for {
		old := m.bits.Load()
		next := old &^ (1 << rep)
		if on {
			next |= 1 << rep
		}
		if m.bits.CompareAndSwap(old, next) {
			return
		}
	}
}

func newLivenessActor(n *Node) *livenessActor {
	var inc [16]byte
	_, _ = rand.Read(inc[:])
	c := n.opts.Config.Cluster
	interval := c.NodeHeartbeatInterval
	if interval == 0 {
		interval = c.CommitBroadcastInterval
	}
	var members uint32
	for _, p := range n.roster() {
		members |= 1 << p.ID
	}
	// A table of every id: the roster may name any (reconfig.go's
	// followRoster sets the members).
	cfg := vsr.LivenessConfig{Cluster: n.cluster.id, Self: n.cluster.self, Replicas: vsr.MaxReplicas, Members: members &^ (1 << n.cluster.self),
		IntervalTicks: ticks(interval), TimeoutTicks: ticks(c.HeartbeatTimeout),
		Incarnation: wire.U128{Lo: binary.LittleEndian.Uint64(inc[:]) | 1, Hi: binary.LittleEndian.Uint64(inc[8:])}}
	return &livenessActor{n: n, live: vsr.NewLiveness(cfg), time: timeKeeper{lastTick: n.clock.now()}, routes: routes{}}
}

func (l *livenessActor) Receive(ctx actor.Context) {
	l.receive(ctx)
	k := l.live.IdleTicks()
	if len(l.wakes) > 0 {
		k = 1 // announcing, wake_batch groups per tick
	}
	l.time.arm(l.n.clock, livenessKey, ctx.Self(), k, true)
}

func (l *livenessActor) receive(ctx actor.Context) {
	if l.routes.follow(ctx.Message()) {
		return
	}
	switch m := ctx.Message().(type) {
	case *actor.Started:
		l.n.peerLive.tracked.Store(true)
		ctx.Send(l.n.refs.metadata, &requestRoutes{peer: ctx.Self()})
	case *tick:
		l.time.scheduled = 0
		for now := l.n.clock.now(); l.time.lastTick < now; l.time.lastTick++ {
			l.live.Tick()
		}
		l.drive(ctx)
		l.announce(ctx)
	case *peerFrame:
		if from, ok := l.live.Step(m.frame); ok {
			l.n.peerLive.heard(from, l.n.opts.Clock())
		}
		l.drive(ctx)
	case *quietPost:
		for _, e := range m.entries {
			l.live.Post(m.group, e)
		}
	case *liveMembers:
		if l.live.Members() != m.mask {
			l.live.SetMembers(m.mask)
			l.drive(ctx)
		}
	}
}

// drive carries out the core's outputs.
func (l *livenessActor) drive(ctx actor.Context) {
	for l.live.HasReady() {
		rd := l.live.Ready()
		for _, e := range rd.Send {
			// vsr.Liveness hands whole frames; the link takes header and body.
			l.n.cluster.links.Send(e.To, e.Head[:wire.HeaderSize], e.Head[wire.HeaderSize:])
		}
		for _, q := range rd.Entries {
			if pid := l.routes[q.Group]; pid != nil {
				ctx.Send(pid, &quietIn{q})
			}
		}
		for _, p := range rd.Lost {
			l.n.peerLive.set(p, false)
			l.n.log.Warn("node-level heartbeat lost a peer: the groups it leads elect", "peer", p)
			l.wakes = append(l.wakes, peerChange{peer: p})
		}
		for _, p := range rd.Found {
			l.n.peerLive.set(p, true)
			l.n.log.Info("node-level heartbeat hears a peer again", "peer", p)
			l.wakes = append(l.wakes, peerChange{peer: p, found: true})
		}
	}
	l.n.refs.tel.liveness(l.live)
}

// announce tells the next wake_batch partition actors of the oldest peer
// change still being announced.
func (l *livenessActor) announce(ctx actor.Context) {
	budget := int(max(l.n.opts.Config.Cluster.WakeBatch, 1))
	for budget > 0 && len(l.wakes) > 0 {
		if l.cursor == nil {
			l.cursor = make([]*actor.PID, 0, len(l.routes))
			for _, pid := range l.routes {
				l.cursor = append(l.cursor, pid)
			}
			if len(l.cursor) == 0 {
				l.cursor = []*actor.PID{} // nothing to tell: done at once
			}
		}
		change := l.wakes[0]
		msg := &change
		k := min(budget, len(l.cursor))
		for _, pid := range l.cursor[:k] {
			ctx.Send(pid, msg)
		}
		l.cursor = l.cursor[k:]
		budget -= k
		if len(l.cursor) == 0 {
			l.wakes, l.cursor = l.wakes[1:], nil
		}
	}
}
