package httpplane

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	clientplane "iggynode/plane/client"
	"iggynode/wire"
)

// An HTTP request reaches the actors as a binary request on a virtual
// connection (vconn): the node's Handler opens it like any accepted
// connection, so the connection actor, the metadata actor and the
// partition actors see the frames a binary client would send, and answer
// through Conn.Send. A vconn carries the user the plane verified
// (AssertedUser: a JWT's subject, or the owner of a personal access token
// the actors just verified), which the connection actor binds on Register
// without a password, and uses for reads before any Register.

// vconn is a clientplane.Conn without a socket: replies arrive on a channel.
type vconn struct {
	remote     string
	user       uint32
	asserted   bool
	verifyOnly bool
	replies    chan []byte
	closed     chan struct{}
	closeOnce  sync.Once
	session    clientplane.Session
}

func (c *vconn) Send(frame []byte) {
	select {
	case c.replies <- frame:
	case <-c.closed:
	}
}

// SendPooled keeps the frame: the pool's owner is the edge, and a copy
// here would only cost (the frame is read once, then garbage).
func (c *vconn) SendPooled(frame []byte) { c.Send(append([]byte(nil), frame...)) }

// SendSpliced joins the pieces into the one reply the handler reads.
func (c *vconn) SendSpliced(built []byte, splices []wire.Splice) {
	frame, err := wire.JoinSpliced(make([]byte, 0, wire.SplicedLen(built, splices)), built, splices)
	wire.UnpinSplices(splices) // copied
	if err != nil {
		c.Close() // a stored batch that cannot be read: the reply cannot be sent whole
		return
	}
	c.Send(frame)
}
func (c *vconn) Done()              {}
func (c *vconn) SetLoggedIn(bool)   {}
func (c *vconn) RemoteAddr() string { return c.remote }
func (c *vconn) Transport() clientplane.Transport {
	return clientplane.TransportHTTP
}
func (c *vconn) Close() { c.closeOnce.Do(func() { close(c.closed) }) }

// AssertedUser is the user the HTTP plane verified for this connection.
func (c *vconn) AssertedUser() (uint32, bool) { return c.user, c.asserted }

// VerifyOnly asks the actors to check a Register's credentials and answer
// with the user id without binding a session (login routes, 3.2, 3.3).
func (c *vconn) VerifyOnly() bool { return c.verifyOnly }

// end tells the node the connection is gone (its session is logged out).
func (c *vconn) end() {
	c.Close()
	if c.session != nil {
		c.session.Closed()
	}
}

// outcome is one binary reply, classified.
type outcome struct {
	code  wire.ErrorCode      // deny status or result-section rejection
	evict wire.EvictionReason // eviction
	op    wire.Operation
	body  []byte // payload, result section stripped
}

func (o outcome) ok() bool { return o.code == 0 && o.evict == 0 }

// errNoReply: the actors did not answer in time (outcome unknown).
var errNoReply = errors.New("no reply from the node")

// session is a credential's binary session (http.md 3.8): one vconn, the
// client id and epoch of its Register, and the request counter. Requests
// run one at a time (lockstep, as on any binary connection).
type session struct {
	key      string
	userID   uint32
	expires  time.Time // zero: never
	conn     *vconn
	mu       sync.Mutex
	clientID wire.U128
	epoch    uint64
	next     uint64
	lastUsed atomic.Int64
	inflight atomic.Int32
	broken   bool
}

func newClientID() wire.U128 {
	var b [16]byte
	for {
		_, _ = rand.Read(b[:])
		if id := (wire.U128{Lo: binary.LittleEndian.Uint64(b[:]), Hi: binary.LittleEndian.Uint64(b[8:])}); !id.IsZero() {
			return id
		}
	}
}

// replayPace and replayBudget: transient results (57, 58) are replayed by
// the plane itself every 50 ms for up to 30 s (http.md 5 preamble).
const (
	replayPace   = 50 * time.Millisecond
	replayBudget = 30 * time.Second
	replyTimeout = 35 * time.Second
)

// exchange sends one request and waits for its reply. Lock held.
func (s *session) exchange(ctx context.Context, code wire.CommandCode, op wire.Operation, body []byte) (outcome, error) {
	frame := make([]byte, wire.HeaderSize+len(body))
	copy(frame[wire.HeaderSize:], body)
	h := wire.RequestHeader{Size: uint32(len(frame)), Client: s.clientID, Operation: op, Session: s.epoch,
		UserID: s.userID, Code: code}
	switch {
	case op == wire.OpRegister:
		h.Request, h.Session, h.UserID = 0, 0, 0
	case op == wire.OpLogout || op.Metadata():
		h.Request = s.next // the counter, then advanced (client-plane.md 5.3)
		s.next++
	default:
		h.Request = s.next
	}
	h.Encode(wire.HeaderOf(frame))
	deadline := time.Now().Add(replayBudget)
	if ctx.Value(relayedKey{}) != nil {
		deadline = time.Now() // a relayed request that missed the primary answers 58 at once (2.7.2)
	}
	for {
		o, err := s.roundTrip(ctx, frame, h.Request)
		if err != nil {
			s.broken = true
			return o, err
		}
		if (o.code == wire.ErrTransientNotCommitted || o.code == wire.ErrTransientNotAccepted) && time.Now().Add(replayPace).Before(deadline) {
			select {
			case <-time.After(replayPace):
				continue
			case <-ctx.Done():
				return o, nil
			}
		}
		return o, nil
	}
}

// roundTrip hands the frame to the connection actor and reads the reply
// to request number req (stale replies of a timed-out request are
// skipped).
func (s *session) roundTrip(ctx context.Context, frame []byte, req uint64) (outcome, error) {
	s.conn.session.Frame(append([]byte(nil), frame...), wire.SendVerdict{}, nil)
	timer := time.NewTimer(replyTimeout)
	defer timer.Stop()
	for {
		select {
		case in := <-s.conn.replies:
			o, match := classify(in, req)
			if match {
				return o, nil
			}
		case <-timer.C:
			return outcome{}, errNoReply
		case <-s.conn.closed:
			return outcome{}, errNoReply
		case <-ctx.Done():
			return outcome{}, ctx.Err()
		}
	}
}

// classify reads a reply frame as the Go SDK does (client-plane.md 4.4).
func classify(frame []byte, req uint64) (outcome, bool) {
	if len(frame) < wire.HeaderSize {
		return outcome{code: wire.ErrInvalidCommand}, true
	}
	h := wire.HeaderOf(frame)
	if h.Command() == wire.CmdEviction {
		return outcome{evict: h.Eviction().Reason}, true
	}
	r := h.Reply()
	if r.Request != req {
		return outcome{}, false
	}
	if r.Status != 0 {
		return outcome{code: wire.ErrorCode(r.Status), op: r.Operation}, true
	}
	body := frame[wire.HeaderSize:]
	if r.Operation.ResultFramed() {
		payload, err := wire.SplitResult(body)
		if err != nil {
			var re *wire.ResultError
			if errors.As(err, &re) {
				return outcome{code: re.Code, op: r.Operation}, true
			}
			return outcome{code: wire.ErrInvalidCommand, op: r.Operation}, true
		}
		body = payload
	}
	return outcome{op: r.Operation, body: body}, true
}

// register binds the session to its user (the Register of CP 5.2 with the
// user the plane asserts). Lock held.
func (s *session) register(ctx context.Context) (outcome, error) {
	s.clientID = newClientID()
	s.epoch, s.next = 0, 0
	body := wire.LoginRegister{ClientInfo: wire.ClientVersionInfo{Version: wire.ProtocolVersion, SDKName: "iggynode-http",
		SDKVersion: wire.ServerVersion}, Username: "http", Password: "asserted"}.AppendTo(nil)
	o, err := s.exchange(ctx, wire.CodeLoginRegister, wire.OpRegister, body)
	if err != nil || !o.ok() {
		return o, err
	}
	var resp wire.LoginRegisterResponse
	if resp.Decode(o.body) != nil || resp.Session == 0 {
		return outcome{code: wire.ErrCannotEstablishConnection}, nil
	}
	s.epoch, s.next = resp.Session, 1
	return o, nil
}

// needsRegister: metadata writes, partition writes and Logout need a
// bound session (client-plane.md 4.2 step 7).
func needsRegister(op wire.Operation) bool {
	return op.Partition() || (op.Metadata() && op != wire.OpRegister)
}

// call runs one command on the session: registering first when the
// command needs a session, and registering again once when the actors
// evicted it (3.8.4).
func (s *session) call(ctx context.Context, req interface {
	AppendTo([]byte) []byte
	Code() wire.CommandCode
}) (outcome, error) {
	code := req.Code()
	op := code.Operation()
	if !code.Replicated() {
		op = wire.OpNonReplicated
	}
	body := req.AppendTo(nil)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastUsed.Store(time.Now().UnixNano())
	for attempt := 0; ; attempt++ {
		if needsRegister(op) && s.epoch == 0 {
			if o, err := s.register(ctx); err != nil || !o.ok() {
				return o, err
			}
		}
		o, err := s.exchange(ctx, code, op, body)
		if err == nil && o.evict == wire.EvictNoSession && attempt == 0 && s.epoch != 0 {
			s.epoch = 0 // evicted cluster-side: a fresh Register, once
			continue
		}
		if o.evict != 0 {
			s.epoch = 0
		}
		return o, err
	}
}

// relayedKey marks the context of a request another node relayed here.
type relayedKey struct{}
