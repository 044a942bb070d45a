package actors

import (
	"github.com/asynkron/protoactor-go/actor"

	"iggynode/wire"
)

// peerActor is one replica-plane link's actor (DESIGN.md "Actors": one
// per link). It receives the link's frames in arrival order and routes
// each by group (replica-plane.md 4.2): the metadata group and the session
// forwarding commands to the metadata actor, a partition group to the
// partition actor that owns it, anything else dropped.
type peerActor struct {
	n          *Node
	id         uint8
	partitions routes
}

// routeUpdate tells the peer actors that a partition actor started (pid)
// or stopped (nil pid).
type routeUpdate struct {
	group uint64
	pid   *actor.PID
}

// routeTable is the full table, sent when a peer actor (re)starts.
type routeTable struct{ partitions map[uint64]*actor.PID }

// requestRoutes asks the metadata actor for the current table.
type requestRoutes struct{ peer *actor.PID }

// routes is an actor's copy of where each partition group lives, kept by
// the metadata actor's routeTable and routeUpdate messages.
type routes map[uint64]*actor.PID

// follow applies msg when it is a route message and reports whether it was.
func (r *routes) follow(msg any) bool {
	switch m := msg.(type) {
	case *routeTable:
		*r = m.partitions
	case *routeUpdate:
		if m.pid == nil {
			delete(*r, m.group)
		} else {
			(*r)[m.group] = m.pid
		}
	default:
		return false
	}
	return true
}

func (p *peerActor) Receive(ctx actor.Context) {
	if p.partitions.follow(ctx.Message()) {
		return
	}
	switch m := ctx.Message().(type) {
	case *actor.Started:
		p.partitions = routes{}
		ctx.Send(p.n.refs.metadata, &requestRoutes{peer: ctx.Self()})
	case *peerFrame:
		p.route(ctx, m)
	}
}

func (p *peerActor) route(ctx actor.Context, f *peerFrame) {
	h := wire.HeaderOf(f.frame)
	if h.Command() == wire.CmdNodeHeartbeat {
		if l := p.n.refs.liveness.Load(); l != nil {
			ctx.Send(l, f)
		}
		return
	}
	group, ok := wire.GroupOf(h)
	if !ok {
		p.n.log.Debug("replica frame without a group dropped", "peer", p.id, "command", h.Command())
		return
	}
	c := h.Command()
	if group == wire.MetadataGroup || (c >= wire.CmdForwardRegister && c <= wire.CmdForwardLogoutResult) {
		ctx.Send(p.n.refs.metadata, f)
		return
	}
	if pid := p.partitions[group]; pid != nil {
		ctx.Send(pid, f)
		return
	}
	if c == wire.CmdRequest {
		p.n.refuseRouted(f)
		return
	}
	// A partition this node does not host (yet): dropped; the primary's
	// retransmission or repair delivers it once the partition exists (4.2
	// rule 3).
	p.n.log.Debug("replica frame for a group not hosted here dropped", "peer", p.id, "group", group, "command", c)
}
