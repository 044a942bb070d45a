package actors

import (
	"iggynode/internal/stages"
	"log/slog"

	"github.com/asynkron/protoactor-go/actor"

	clientplane "iggynode/plane/client"
	"iggynode/wire"
)

// connection is the actor behind one client connection: it owns the
// session (binding), applies the header and session rules of
// client-plane.md 4.1-4.2 in that order, answers what needs no other actor
// and hands the rest to the actor that owns the data. Requests are
// processed strictly one at a time in arrival order (server-behaviour.md
// 0.3): the next frame is looked at only after the current one's reply.
type connection struct {
	conn clientplane.Conn
	// readsSources: conn reads stored batches from their files as it
	// writes a reply (clientplane.ReadsSources; fixed per carrier).
	readsSources bool
	id           uint32
	node         *nodeRefs
	log          *slog.Logger
	bound        *binding
	pending      []*frameIn
	busy         bool
	seen         bool
	closed       bool
	self         *actor.PID
	// lastSeenUs is when the connection last sent a frame (every request
	// counts as a heartbeat, client-plane.md 5.6).
	lastSeenUs uint64
	clock      func() uint64
	// req is the request being served, for telemetry.
	req requestTrace
}

func (c *connection) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		c.self = ctx.Self()
	case *actor.Stopped:
		// Also reached when the supervisor stops a failed connection: the
		// client sees its transport close and reconnects.
		c.conn.Close()
		c.node.tel.endRequest(&c.req, nil, 0, c.conn.Transport())
		c.node.tel.connections[c.conn.Transport()].Add(-1)
	case *frameIn:
		stages.Mark(stages.ConnActor)
		c.lastSeenUs = c.clock()
		if !c.seen {
			c.seen = true
			// HTTP's virtual connections are not listed (http.md 5.1.6).
			if c.conn.Transport() != clientplane.TransportHTTP {
				ctx.Send(c.node.metadata, &connInfo{pid: ctx.Self(), id: c.id, address: c.conn.RemoteAddr(),
					transport: c.conn.Transport(), userID: noUser})
			}
		}
		c.pending = append(c.pending, m)
		c.next(ctx)
	case *replyOut:
		stages.Mark(stages.ConnReply)
		c.deliver(ctx, m)
		c.busy = false
		c.next(ctx)
	case *unbindClient:
		if c.bound != nil && c.bound.client == m.client {
			c.bound = nil
			c.conn.SetLoggedIn(false)
			ctx.Send(c.node.metadata, &connBound{id: c.id, userID: noUser})
		}
	case *staleCheck:
		c.checkStale(ctx, m)
	case *connCrash:
		panic("connection crash requested")
	case *connClosed:
		c.closed = true
		if c.bound != nil {
			// A closed transport triggers the same internal logout
			// (client-plane.md 5.5; replica-plane.md 5.12.3 rule 5).
			ctx.Send(c.node.metadata, &internalLogout{client: c.bound.client, epoch: c.bound.epoch})
		}
		ctx.Send(c.node.metadata, &connGone{id: c.id})
		ctx.Stop(ctx.Self())
	}
}

const noUser = 0xFFFFFFFF

// deliver sends a reply and applies its effect on the binding.
func (c *connection) deliver(ctx actor.Context, r *replyOut) {
	c.node.tel.endRequest(&c.req, r.frame, wire.SplicedLen(r.frame, r.splices), c.conn.Transport())
	// The edge sizes frames and deadlines by the login state: tell it
	// before the reply, so the client's next frame meets the new state.
	switch {
	case r.bind != nil:
		c.conn.SetLoggedIn(true)
	case r.unbind:
		c.conn.SetLoggedIn(false)
	}
	switch {
	case r.frame != nil && len(r.splices) > 0:
		c.conn.SendSpliced(r.frame, r.splices)
	case r.frame != nil && r.pooled:
		c.conn.SendPooled(r.frame)
	case r.frame != nil:
		c.conn.Send(r.frame)
	}
	c.conn.Done()
	switch {
	case r.bind != nil:
		c.bound = r.bind
		ctx.Send(c.node.metadata, &connBound{id: c.id, userID: r.bind.userID, client: r.bind.client})
	case r.unbind:
		c.bound = nil
		ctx.Send(c.node.metadata, &connBound{id: c.id, userID: noUser})
	}
	if r.close {
		c.conn.Close()
	}
}

func (c *connection) next(ctx actor.Context) {
	for !c.busy && !c.closed && len(c.pending) > 0 {
		in := c.pending[0]
		c.pending[0] = nil
		c.pending = c.pending[1:]
		if r := c.handle(ctx, in); r != nil {
			c.deliver(ctx, r)
		} else {
			c.busy = true
		}
	}
}

// handle applies client-plane.md 4.2 to one frame. It returns the reply when
// the connection answers itself, or nil after handing the request on.
func (c *connection) handle(ctx actor.Context, in *frameIn) *replyOut {
	buf, edgeVerdict := in.buf, in.batch
	h := wire.HeaderOf(buf)
	hdr, err := wire.DecodeRequestHeader(h)
	if err != nil && zeroFieldLogout(h) {
		// The reference drops a Logout with request or session 0; a
		// compatible server never evicts a Logout (client-plane.md 5.5, 19
		// item 15): unbound, it is the idempotent class H reply; bound, a
		// plain deny, since the session it names is not this one.
		if c.bound == nil {
			return &replyOut{frame: logoutReply(&hdr, hdr.Client, 0, c.node.commit.Load())}
		}
		return &replyOut{frame: denyReply(&hdr, c.id, c.node.commit.Load(), wire.ErrInvalidFormat)}
	}
	if err != nil {
		// The reference drops these silently; a compatible server answers
		// with InvalidRequestOperation so a lockstep client never hangs
		// (client-plane.md 4.1).
		client := hdr.Client
		if client.IsZero() {
			client = h.Request().Client
		}
		if client.IsZero() {
			client = wire.U128{Lo: uint64(c.id)}
		}
		c.log.Debug("invalid request header", "conn", c.id, "err", err)
		return &replyOut{frame: eviction(client, wire.EvictInvalidRequestOperation)}
	}
	c.req = c.node.tel.beginRequest(&hdr, len(buf), c.conn.Transport())
	body := buf[wire.HeaderSize:]
	commit := c.node.commit.Load()
	if !hdr.RequestChecksum.IsZero() && hdr.RequestChecksum != wire.RequestChecksum(body) {
		return &replyOut{frame: denyReply(&hdr, c.id, commit, wire.ErrInvalidFormat)}
	}
	if c.node.removed.Load() && !servedWhenRemoved(&hdr) {
		return &replyOut{frame: denyReply(&hdr, c.id, commit, wire.ErrNodeRemoved)}
	}
	req := &clientRequest{conn: ctx.Self(), connID: c.id, hdr: hdr, frame: buf, owner: in.owner, bound: c.bound, address: c.conn.RemoteAddr(), span: c.req.span,
		readsSources: c.readsSources}
	httpRequest(c.conn, req)
	switch op := hdr.Operation; {
	case op == wire.OpNonReplicated:
		return c.read(ctx, req)
	case op == wire.OpRegister:
		ctx.Send(c.node.metadata, req)
		return nil
	case op == wire.OpLogout:
		if c.bound == nil {
			return &replyOut{frame: logoutReply(&hdr, hdr.Client, 0, commit)}
		}
		ctx.Send(c.node.metadata, req)
		return nil
	case c.bound == nil:
		return &replyOut{frame: eviction(hdr.Client, wire.EvictNoSession)}
	case op.Internal():
		// 64..=67 are refused; a client-sent 68 is treated the same
		// (client-plane.md 4.1, compatible server).
		return &replyOut{frame: eviction(c.bound.client, wire.EvictInvalidRequestOperation)}
	case op.Partition():
		if op == wire.OpSendMessages {
			s, ok := req.checkBatch(&edgeVerdict)
			stages.Mark(stages.Checked)
			if ok && c.routeSend(ctx, req, &s) {
				return nil
			}
		}
		ctx.Send(c.node.metadata, req) // resolved by metadata, then routed to the partition
		return nil
	default:
		ctx.Send(c.node.metadata, req)
		return nil
	}
}

// servedWhenRemoved: what a node removed from the roster still answers
// (reconfig.go), so clients learn where the cluster went.
func servedWhenRemoved(hdr *wire.RequestHeader) bool {
	if hdr.Operation != wire.OpNonReplicated {
		return false
	}
	switch hdr.Code {
	case wire.CodePing, wire.CodeGetClusterMetadata, wire.CodeClusterStatus:
		return true
	}
	return false
}

// read dispatches a NonReplicated request (client-plane.md 4.2 step 4, 6).
func (c *connection) read(ctx actor.Context, req *clientRequest) *replyOut {
	hdr := &req.hdr
	commit := c.node.commit.Load()
	code := hdr.Code
	switch {
	case code == wire.CodeLoginUser || code == wire.CodeLoginWithPersonalAccessToken:
		return &replyOut{frame: eviction(hdr.Client, wire.EvictMalformedLogin)}
	case req.bound == nil && code != wire.CodePing:
		return &replyOut{frame: readReply(hdr, commit, wire.ErrUnauthenticated, nil)}
	case code == wire.CodePing:
		return &replyOut{frame: readReply(hdr, commit, 0, nil)}
	case code == wire.CodeFlushUnsavedBuffer || code.Replicated():
		return &replyOut{frame: readReply(hdr, commit, wire.ErrFeatureUnavailable, nil)}
	case code == wire.CodeLogoutUser || code == wire.CodeLoginRegister || code == wire.CodeLoginRegisterWithPAT:
		return &replyOut{frame: readReply(hdr, commit, 0, nil)}
	case !code.Known():
		return &replyOut{frame: readReply(hdr, commit, wire.ErrInvalidCommand, nil)}
	case code == wire.CodePollMessages && c.routePoll(ctx, req):
		return nil
	}
	ctx.Send(c.node.metadata, req)
	return nil
}

// checkStale evicts a bound connection idle for longer than the threshold
// (server-behaviour.md 8.5): a replicated logout releases its session and
// group memberships, and the client gets Eviction(StaleClient). The
// metadata actor only asks connections whose client is in a group.
func (c *connection) checkStale(ctx actor.Context, m *staleCheck) {
	if c.bound == nil || m.nowUs < c.lastSeenUs || m.nowUs-c.lastSeenUs <= m.idleUs {
		return
	}
	ctx.Send(c.node.metadata, &internalLogout{client: c.bound.client, epoch: c.bound.epoch})
	c.conn.Send(eviction(c.bound.client, wire.EvictStaleClient))
	c.bound = nil
	c.conn.SetLoggedIn(false)
	ctx.Send(c.node.metadata, &connBound{id: c.id, userID: noUser})
}

// zeroFieldLogout reports whether h is a Logout request whose only fault is
// a zero request number or session.
func zeroFieldLogout(h *wire.Header) bool {
	if h.Command() != wire.CmdRequest {
		return false
	}
	r := h.Request()
	if r.Operation != wire.OpLogout || (r.Request != 0 && r.Session != 0) {
		return false
	}
	r.Request, r.Session = max(r.Request, 1), max(r.Session, 1)
	return r.Validate() == nil
}
