package actors

import (
	"maps"
	"sync"

	"github.com/asynkron/protoactor-go/actor"

	"iggynode/metadata"
	"iggynode/wire"
)

// Partition traffic off the metadata actor (DESIGN.md: "routing of
// partition traffic does not queue behind metadata work"). A connection
// resolves, authorizes and hands a SendMessages or a consumer's
// PollMessages to its partition actor itself, from a routing view the
// metadata actor publishes (metadata.Routes and the partition actors),
// so a send never waits behind a login flood's commits, a snapshot or a
// topic create on the metadata actor's mailbox, and costs one actor hop
// less. Whatever the view does not route (a name it does not know, a
// permission it does not grant, a partition whose actor is not running,
// a consumer group's poll, HTTP) goes to the metadata actor as before,
// which answers with the spec's codes: the view only ever takes the path
// the metadata actor would have taken.
//
// Ordering: the metadata actor publishes the view after applying an op
// that changes routes and before replying to it (a revoked permission is
// not used after its reply), and closes a partition's route before it
// sends the actor its partitionDrop: a send put in the mailbox under the
// route's read lock is ahead of the drop, and one after the close goes to
// the metadata actor, so a deleted partition's actor never drops a
// request unanswered.

// partitionRoute is the way to one running partition actor.
type partitionRoute struct {
	mu     sync.RWMutex
	pid    *actor.PID
	closed bool
}

// send puts msg in the partition actor's mailbox unless the route is
// closed; it reports whether it did.
func (r *partitionRoute) send(ctx actor.SenderContext, msg any) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed {
		return false
	}
	ctx.Send(r.pid, msg)
	return true
}

// close ends the route: after it returns, nothing more reaches the actor
// through it.
func (r *partitionRoute) close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
}

// routeView is what connections route with; immutable once published.
type routeView struct {
	routes *metadata.Routes
	parts  map[uint64]*partitionRoute
}

// publishRoutes publishes the view when the metadata state's routes or
// the running partitions changed since the last one.
func (m *metadataActor) publishRoutes() {
	if m.state == nil {
		return
	}
	r := m.state.Routes()
	if r == m.publishedRoutes && !m.partsChanged {
		return
	}
	m.n.refs.routes.Store(&routeView{routes: r, parts: maps.Clone(m.routed)})
	m.publishedRoutes, m.partsChanged = r, false
}

// routeSend hands a decoded SendMessages to its partition actor when the
// view routes it (see above); false: the metadata actor is to.
func (c *connection) routeSend(ctx actor.Context, req *clientRequest, s *wire.SendMessages) bool {
	v := c.node.routes.Load()
	if v == nil || req.http != nil {
		return false
	}
	ref, ok := v.routes.SendAs(req.bound.userID, s.Stream, s.Topic, s.Partitioning)
	if !ok {
		return false
	}
	pr := v.parts[ref.Group]
	return pr != nil && pr.send(ctx, &partitionSend{req: req, batch: s.Batch, messagesCount: s.MessagesCount})
}

// routePoll hands a consumer's (not a group's) PollMessages to its
// partition actor when the view routes it; false: the metadata actor is
// to (metadataActor.routePoll).
func (c *connection) routePoll(ctx actor.Context, req *clientRequest) bool {
	v := c.node.routes.Load()
	if v == nil || req.http != nil {
		return false
	}
	var r wire.PollMessages
	if r.Decode(req.frame[wire.HeaderSize:]) != nil || r.Consumer.Kind == wire.ConsumerGroup {
		return false
	}
	ref, ok := v.routes.ResolvePartition(r.Stream, r.Topic, r.Partition.ID)
	if !ok || !v.routes.Allowed(req.bound.userID, metadata.RulePoll, ref.Stream, ref.Topic) {
		return false
	}
	pr := v.parts[ref.Group]
	return pr != nil && pr.send(ctx, consumerPoll(req, r, ref.Partition))
}

// consumerPoll is the partition's message for a consumer's poll.
func consumerPoll(req *clientRequest, r wire.PollMessages, partition uint32) *partitionPoll {
	return &partitionPoll{req: req, poll: r, kind: r.Consumer.Kind, key: wire.ConsumerKey(r.Consumer.ID), partition: partition}
}
