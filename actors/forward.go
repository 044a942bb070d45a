package actors

import (
	"crypto/rand"
	"encoding/binary"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"iggynode/vsr"
	"iggynode/wire"
)

// Session forwarding (replica-plane.md 8): a client may log in on any node.
// The client's node verifies the credentials against its own applied users
// and forwards only the Register to the metadata primary, which commits it
// and answers with the epoch; the client's node then binds the connection
// and builds the login reply itself.

// forwardWait is a Register parked at the client's node (8.2).
type forwardWait struct {
	req    *clientRequest
	client wire.U128
	userID uint32
}

// forwardKey matches a result to its waiter: (nonce, client) (8.2 rule 5).
type forwardKey struct{ nonce, client wire.U128 }

// forwardTimeout unparks a forward that got no result in time (8.2 rule 4).
type forwardTimeout struct {
	key    forwardKey
	logout bool
}

// forwardedRegister tags a Register admitted for another node.
type forwardedRegister struct {
	from   uint8
	nonce  wire.U128
	client wire.U128
}

const forwardTimeoutAfter = 5 * time.Second

// nextNonce is (self << 64) | counter, the counter starting at a random
// value and skipping 0 (8.2 rule 1).
func (m *metadataActor) nextNonce() wire.U128 {
	if m.nonceCounter == 0 {
		var b [8]byte
		_, _ = rand.Read(b[:])
		m.nonceCounter = binary.LittleEndian.Uint64(b[:])
	}
	m.nonceCounter++
	if m.nonceCounter == 0 {
		m.nonceCounter++
	}
	return wire.U128{Hi: uint64(m.n.cluster.self), Lo: m.nonceCounter}
}

// shouldForward is the forwarding rule of 8.1.
func (m *metadataActor) shouldForward() bool {
	return m.n.cluster.clustered() && m.core.Status() == vsr.StatusNormal && !m.core.IsPrimary()
}

// forwardRegister parks the login and sends ForwardRegister to the primary.
func (m *metadataActor) forwardRegister(ctx actor.Context, req *clientRequest, userID uint32) {
	nonce := m.nextNonce()
	key := forwardKey{nonce, req.hdr.Client}
	var h wire.Header
	fr := wire.ForwardRegisterHeader{Cluster: m.n.cluster.id, View: m.core.View(), Replica: m.n.cluster.self,
		Client: req.hdr.Client, Nonce: nonce, UserID: userID}
	fr.Encode(&h)
	if m.n.cluster.links == nil || !m.n.cluster.links.Send(m.core.Primary(), h[:], nil) {
		// PrimaryUnreachable: not admitted anywhere, re-issue (5.2 step 8).
		m.reply(ctx, req, &replyOut{frame: rejectReply(&req.hdr, req.hdr.Client, m.commit(), wire.OpRegister, wire.ErrTransientNotAccepted)})
		return
	}
	if m.forwards == nil {
		m.forwards = map[forwardKey]*forwardWait{}
	}
	m.forwards[key] = &forwardWait{req: req, client: req.hdr.Client, userID: userID}
	self := ctx.Self()
	root := m.n.root()
	time.AfterFunc(forwardTimeoutAfter, func() { root.Send(self, &forwardTimeout{key: key}) })
}

// onForwardTimeout answers an unanswered forward with "outcome unknown".
func (m *metadataActor) onForwardTimeout(ctx actor.Context, t *forwardTimeout) {
	if t.logout {
		if req := m.logouts[t.key]; req != nil {
			delete(m.logouts, t.key)
			m.reply(ctx, req, &replyOut{frame: denyReply(&req.hdr, req.connID, m.commit(), wire.ErrTransientNotCommitted)})
		}
		return
	}
	w := m.forwards[t.key]
	if w == nil {
		return
	}
	delete(m.forwards, t.key)
	m.reply(ctx, w.req, &replyOut{frame: rejectReply(&w.req.hdr, w.client, m.commit(), wire.OpRegister, wire.ErrTransientNotCommitted)})
}

// onForwardFrame handles the session-forwarding commands 26..29.
func (m *metadataActor) onForwardFrame(ctx actor.Context, f *peerFrame) {
	h := wire.HeaderOf(f.frame)
	switch h.Command() {
	case wire.CmdForwardRegister:
		fr, err := wire.DecodeForwardRegisterHeader(h)
		if err != nil || int(fr.Replica) >= vsr.MaxReplicas {
			return
		}
		m.onForwardRegister(ctx, fr)
	case wire.CmdForwardRegisterResult:
		res, err := wire.DecodeForwardRegisterResultHeader(h)
		if err != nil {
			return
		}
		m.onForwardRegisterResult(ctx, res)
	case wire.CmdForwardLogout:
		fl, err := wire.DecodeForwardLogoutHeader(h)
		if err != nil || int(fl.Replica) >= vsr.MaxReplicas {
			return
		}
		m.onForwardLogout(ctx, fl)
	case wire.CmdForwardLogoutResult:
		res, err := wire.DecodeForwardLogoutResultHeader(h)
		if err != nil {
			return
		}
		m.onForwardLogoutResult(ctx, res)
	}
}

// onForwardRegister runs the in-process Register for another node (8.3).
func (m *metadataActor) onForwardRegister(ctx actor.Context, fr wire.ForwardRegisterHeader) {
	answer := func(o wire.ForwardRegisterOutcome, epoch, watermark uint64) {
		m.sendForwardResult(fr.Replica, fr.Nonce, fr.Client, o, epoch, watermark)
	}
	switch {
	case !m.core.Leading():
		answer(wire.ForwardRegisterNotPrimary, 0, 0)
		return
	case m.core.CaughtUpPrimary() && m.state.Clients().OwnedByOther(fr.Client, fr.UserID):
		answer(wire.ForwardRegisterClientIDOwnedByAnotherUser, 0, 0)
		return
	case m.inflight[fr.Client]:
		answer(wire.ForwardRegisterInProgress, 0, 0)
		return
	}
	frame := make([]byte, wire.HeaderSize)
	err := m.core.Submit(vsr.Request{Client: fr.Client, Operation: wire.OpRegister, UserID: fr.UserID, Frame: frame,
		Tag: &forwardedRegister{from: fr.Replica, nonce: fr.Nonce, client: fr.Client}}, m.n.opts.Clock())
	if err != nil {
		answer(wire.ForwardRegisterPipelineFull, 0, 0)
		return
	}
	m.inflight[fr.Client] = true
	m.drive(ctx)
}

// committedForward answers a forwarded Register after its commit (8.3
// rule 6).
func (m *metadataActor) committedForward(t *forwardedRegister, op uint64) {
	var watermark uint64
	if e, ok := m.state.Clients().Lookup(t.client); ok {
		watermark = e.Watermark
	}
	m.sendForwardResult(t.from, t.nonce, t.client, wire.ForwardRegisterOk, op, watermark)
}

func (m *metadataActor) sendForwardResult(to uint8, nonce, client wire.U128, o wire.ForwardRegisterOutcome, epoch, watermark uint64) {
	if m.n.cluster.links == nil {
		return
	}
	var h wire.Header
	r := wire.ForwardRegisterResultHeader{Cluster: m.n.cluster.id, View: m.core.View(), Replica: m.n.cluster.self,
		Nonce: nonce, Client: client, Epoch: epoch, Watermark: watermark, Outcome: o}
	r.Encode(&h)
	m.n.cluster.links.Send(to, h[:], nil)
}

// onForwardRegisterResult completes a parked login (8.3 table).
func (m *metadataActor) onForwardRegisterResult(ctx actor.Context, r wire.ForwardRegisterResultHeader) {
	key := forwardKey{r.Nonce, r.Client}
	w := m.forwards[key]
	if w == nil {
		return // late result for an unparked key (8.2 rule 4)
	}
	delete(m.forwards, key)
	hdr := &w.req.hdr
	switch r.Outcome {
	case wire.ForwardRegisterOk:
		m.reply(ctx, w.req, &replyOut{frame: loginReply(hdr, r.Epoch, max(m.commit(), r.Epoch), uint64(w.userID)),
			bind: &binding{client: w.client, epoch: r.Epoch, userID: w.userID}})
	case wire.ForwardRegisterClientIDOwnedByAnotherUser:
		m.reply(ctx, w.req, &replyOut{frame: eviction(w.client, wire.EvictSessionError)})
	case wire.ForwardRegisterInProgress, wire.ForwardRegisterCanceled:
		m.reply(ctx, w.req, &replyOut{frame: rejectReply(hdr, w.client, m.commit(), wire.OpRegister, wire.ErrTransientNotCommitted)})
	default:
		m.reply(ctx, w.req, &replyOut{frame: rejectReply(hdr, w.client, m.commit(), wire.OpRegister, wire.ErrTransientNotAccepted)})
	}
}

// forwardedLogout tags a Logout admitted for another node (8.4).
type forwardedLogout struct {
	from   uint8
	nonce  wire.U128
	client wire.U128
}

// forwardLogout sends a session's Logout to the primary (8.1). req is nil
// for a disconnect: nobody waits, the primary commits it (request u64::MAX).
func (m *metadataActor) forwardLogout(ctx actor.Context, req *clientRequest, client wire.U128, epoch, request uint64) bool {
	if m.n.cluster.links == nil {
		return false
	}
	nonce := m.nextNonce()
	var h wire.Header
	fl := wire.ForwardLogoutHeader{Cluster: m.n.cluster.id, View: m.core.View(), Replica: m.n.cluster.self,
		Client: client, Nonce: nonce, Session: epoch, Request: request}
	fl.Encode(&h)
	if !m.n.cluster.links.Send(m.core.Primary(), h[:], nil) {
		return false
	}
	if req != nil {
		key := forwardKey{nonce, client}
		if m.logouts == nil {
			m.logouts = map[forwardKey]*clientRequest{}
		}
		m.logouts[key] = req
		self, root := ctx.Self(), m.n.root()
		time.AfterFunc(forwardTimeoutAfter, func() { root.Send(self, &forwardTimeout{key: key, logout: true}) })
	}
	return true
}

// onForwardLogout runs the in-process Logout for another node (8.4).
func (m *metadataActor) onForwardLogout(ctx actor.Context, fl wire.ForwardLogoutHeader) {
	answer := func(o wire.ForwardLogoutOutcome, commit uint64) {
		m.sendLogoutResult(fl.Replica, fl.Nonce, fl.Client, o, commit)
	}
	if e, ok := m.state.Clients().Lookup(fl.Client); !ok || e.Epoch != fl.Session {
		answer(wire.ForwardLogoutOk, m.core.CommitMin()) // already gone or re-registered (rule 1)
		return
	}
	switch {
	case !m.core.Leading():
		answer(wire.ForwardLogoutNotPrimary, 0)
		return
	case m.inflight[fl.Client]:
		answer(wire.ForwardLogoutInProgress, 0)
		return
	}
	frame := make([]byte, wire.HeaderSize)
	err := m.core.Submit(vsr.Request{Client: fl.Client, Request: fl.Request, Operation: wire.OpLogout, Frame: frame,
		Tag: &forwardedLogout{from: fl.Replica, nonce: fl.Nonce, client: fl.Client}}, m.n.opts.Clock())
	if err != nil {
		answer(wire.ForwardLogoutPipelineFull, 0)
		return
	}
	m.inflight[fl.Client] = true
	m.drive(ctx)
}

func (m *metadataActor) sendLogoutResult(to uint8, nonce, client wire.U128, o wire.ForwardLogoutOutcome, commit uint64) {
	if m.n.cluster.links == nil {
		return
	}
	var h wire.Header
	r := wire.ForwardLogoutResultHeader{Cluster: m.n.cluster.id, View: m.core.View(), Replica: m.n.cluster.self,
		Nonce: nonce, Client: client, Commit: commit, Outcome: o}
	r.Encode(&h)
	m.n.cluster.links.Send(to, h[:], nil)
}

// onForwardLogoutResult answers a parked Logout: class H on Ok, else the
// status channel with 58 or 57 (client-plane.md 5.5).
func (m *metadataActor) onForwardLogoutResult(ctx actor.Context, r wire.ForwardLogoutResultHeader) {
	key := forwardKey{r.Nonce, r.Client}
	req := m.logouts[key]
	if req == nil {
		return
	}
	delete(m.logouts, key)
	hdr := &req.hdr
	switch r.Outcome {
	case wire.ForwardLogoutOk:
		m.reply(ctx, req, &replyOut{frame: logoutReply(hdr, r.Client, req.bound.epoch, r.Commit), unbind: true})
	case wire.ForwardLogoutInProgress, wire.ForwardLogoutCanceled:
		m.reply(ctx, req, &replyOut{frame: denyReply(hdr, req.connID, m.commit(), wire.ErrTransientNotCommitted)})
	default:
		m.reply(ctx, req, &replyOut{frame: denyReply(hdr, req.connID, m.commit(), wire.ErrTransientNotAccepted)})
	}
}
