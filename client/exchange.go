package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v5"

	"iggynode/wire"
)

// Replay pacing for transient results (client-plane.md 5.3; transports.md
// 1.3): 57 is replayed on the same connection with the same header every
// 50 ms until the request deadline; 58 is replayed with backoff for about
// 2 s, then reported.
const (
	replayPace        = 50 * time.Millisecond
	notAcceptedBudget = 2 * time.Second
	notAcceptedPause  = 400 * time.Millisecond
)

// call is one request ready to send: its frame (256 header bytes, then the
// body) lives in *buf and the header is stamped at send time.
type call struct {
	code wire.CommandCode
	op   wire.Operation
	buf  *[]byte
	// retry allows a reconnect and one resend after a dropped connection.
	retry bool
}

// reply is an accepted reply: its operation and its body with any result
// section stripped. body is valid until the next request.
type reply struct {
	op   wire.Operation
	body []byte
}

// DisconnectedError reports that the connection failed while a request was
// in flight (I/O error, peer close, deadline). The connection is dropped.
// It matches wire.ErrDisconnected and the underlying cause.
type DisconnectedError struct {
	// Written reports that the whole request frame had been handed to the
	// transport, so the server may have applied it.
	Written bool
	Err     error
}

func (e *DisconnectedError) Error() string {
	return fmt.Sprintf("client: connection lost (request written: %v): %v", e.Written, e.Err)
}

func (e *DisconnectedError) Unwrap() []error { return []error{wire.ErrDisconnected, e.Err} }

// ProtocolError reports a reply the SDK refuses (client-plane.md 4.4): a
// command other than Reply or Eviction, a request-number mismatch, an
// undefined operation byte, or a carriage violation (a WebSocket reply
// message whose length is not its frame size, bytes after the frame on a
// QUIC stream; transports.md 4.4, 6.3). It matches wire.ErrInvalidCommand.
// Dropped says whether the connection was torn down.
type ProtocolError struct {
	Reason  string
	Dropped bool
}

func (e *ProtocolError) Error() string {
	if e.Dropped {
		return "client: protocol violation, connection dropped: " + e.Reason
	}
	return "client: protocol violation: " + e.Reason
}

func (e *ProtocolError) Unwrap() error { return wire.ErrInvalidCommand }

// appender is the encoding half of wire.Body.
type appender interface{ AppendTo(b []byte) []byte }

// request is the encoding half of wire.Request: the wire request types
// encode with value receivers, so values are sent without a pointer.
type request interface {
	appender
	Code() wire.CommandCode
}

// frame resets *buf to a zero header followed by body's encoding.
func (c *Client) frame(buf *[]byte, body appender) *[]byte {
	*buf = body.AppendTo(append((*buf)[:0], zeroHeader[:]...))
	return buf
}

// needsSession reports the operations the server answers with
// Eviction(NoSession) on an unbound connection (client-plane.md 4.2 step 7);
// the client refuses them locally instead of losing the connection.
func needsSession(op wire.Operation) bool {
	return op.Partition() || (op.Metadata() && op != wire.OpRegister && op != wire.OpLogout)
}

// stampsChecksum: the Rust SDK stamps Register, Logout and every metadata
// operation 128..=149 (client-plane.md 12.3).
func stampsChecksum(op wire.Operation) bool {
	return op == wire.OpRegister || op == wire.OpLogout || (op >= wire.OpCreateStream && op <= wire.OpLeaveConsumerGroup)
}

// stamp writes the request header over the first 256 bytes of the frame
// and returns the request number it used (client-plane.md 5.3): Register
// sends 0 with session 0; Logout and metadata operations send the counter
// and advance it; partition and non-replicated requests send the counter
// without advancing it. Lock held.
func (c *Client) stamp(cl call) uint64 {
	frame := *cl.buf
	h := wire.RequestHeader{
		Size:      uint32(len(frame)),
		Client:    c.clientID,
		Operation: cl.op,
		Session:   c.session,
		UserID:    c.userID,
		Code:      cl.code,
	}
	switch {
	case cl.op == wire.OpRegister:
		h.Request, h.Session, h.UserID = 0, 0, 0
	case cl.op == wire.OpLogout || cl.op.Metadata():
		h.Request = c.nextRequest
		c.nextRequest++
	default:
		h.Request = c.nextRequest
	}
	if c.opts.StampRequestChecksums && stampsChecksum(cl.op) {
		h.RequestChecksum = wire.RequestChecksum(frame[wire.HeaderSize:])
	}
	h.Encode(wire.HeaderOf(frame))
	return h.Request
}

// exchange sends one request and returns its accepted reply. It dials (and
// logs in again) first when the connection is gone. With cl.retry set, a
// dropped connection is re-established and the request resent once when
// that is safe: reads and pings always, replicated requests and the
// cluster changes 9001..9003 only if they were not written. Lock held.
func (c *Client) exchange(ctx context.Context, cl call) (reply, error) {
	if c.closed {
		return reply{}, wire.ErrClientShutdown
	}
	now := time.Now()
	deadline := deadlineFrom(ctx, now, c.opts.RequestTimeout)
	if cl.op == wire.OpRegister {
		deadline = deadlineFrom(ctx, now, c.opts.LoginTimeout)
	}
	// reconnectBy: the login of a reconnect this request triggers may take
	// LoginTimeout (the request itself is not sent past deadline).
	reconnectBy := func() time.Time {
		if d := deadlineFrom(ctx, now, c.opts.LoginTimeout); d.After(deadline) {
			return d
		}
		return deadline
	}
	c.lastRequest.Store(now.UnixNano())
	if c.conn == nil {
		if !cl.retry {
			return reply{}, wire.ErrNotConnected
		}
		if err := c.reconnect(ctx, reconnectBy()); err != nil {
			return reply{}, err
		}
		if !time.Now().Before(deadline) {
			// Logged in again, past this request's time: the connection is
			// kept for the next one.
			return reply{}, &DisconnectedError{Written: false, Err: context.DeadlineExceeded}
		}
	}
	moved := false
	for retried := false; ; retried = true {
		if needsSession(cl.op) && c.session == 0 {
			return reply{}, fmt.Errorf("client: %v needs a logged-in session: %w", cl.code, wire.ErrUnauthenticated)
		}
		request := c.stamp(cl)
		rep, err := c.replay(ctx, deadline, *cl.buf, request)
		if err == nil {
			return rep, nil // before any errors.As target: those escape, and would allocate per request
		}
		if !moved && c.movesToLeader(ctx, cl, err) {
			moved = true
			continue // 58 and NodeRemoved: not accepted, so sending it again is safe
		}
		var d *DisconnectedError
		if !errors.As(err, &d) || retried || !cl.retry || c.opts.Reconnect.Retries == 0 ||
			ctx.Err() != nil || !time.Now().Before(deadline) {
			return rep, err
		}
		if d.Written && !resendsWritten(cl) {
			return rep, err
		}
		if rerr := c.reconnect(ctx, reconnectBy()); rerr != nil {
			return reply{}, fmt.Errorf("%w; reconnect failed: %w", err, rerr)
		}
		if !time.Now().Before(deadline) {
			return rep, err // reconnected for the next request
		}
	}
}

// movesToLeader is the Go SDK's answer to a request answered
// TransientNotAccepted (58) for the whole replay budget on a logged-in
// connection (client-plane.md 7.15): the node is not the one that can
// take it (the primary moved, as a reconfiguration's new epoch or a view
// change moves it), so the roster is read again and, when it names
// another leader, the client logs in there. NodeRemoved (a node that
// left the roster, docs/reconfiguration.md) is answered the same way. It
// reports whether it moved. Lock held.
func (c *Client) movesToLeader(ctx context.Context, cl call, err error) bool {
	code, _ := wire.CodeOf(err)
	if code != wire.ErrTransientNotAccepted && code != wire.ErrNodeRemoved || !transientChannel(err) ||
		c.opts.StayOnNode || c.session == 0 || cl.op == wire.OpRegister || cl.op == wire.OpLogout || !cl.retry {
		return false
	}
	leader, lerr := c.leaderAddress(ctx)
	if lerr != nil || leader == "" || sameAddress(leader, c.addr) {
		return false
	}
	creds := c.creds
	if c.dial(ctx, leader) != nil {
		return false
	}
	if _, rerr := c.register(ctx, creds); rerr != nil {
		c.dropConn()
		return false
	}
	return true
}

// resendsWritten reports whether a request whose frame was written before
// the connection dropped may be sent again: non-replicated ones, whose
// effect does not depend on how often they run, except the cluster
// changes 9001..9003 (adminWrite).
func resendsWritten(cl call) bool { return cl.op == wire.OpNonReplicated && !adminWrite(cl.code) }

// reconnect re-establishes the connection by deadline (the request's, or
// its login's when LoginTimeout is longer). Lock held.
func (c *Client) reconnect(ctx context.Context, deadline time.Time) error {
	rctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	return c.connect(rctx, true)
}

// replay writes the frame and reads its reply, replaying transient results
// on the same connection with the same header. Lock held.
func (c *Client) replay(ctx context.Context, deadline time.Time, frame []byte, request uint64) (reply, error) {
	notAcceptedUntil := time.Now().Add(notAcceptedBudget)
	// 58's pause: replayPace doubling to notAcceptedPause, no jitter (one
	// client's replays need no spreading; the budget bounds them).
	notAccepted := backoff.ExponentialBackOff{InitialInterval: replayPace, Multiplier: 2, MaxInterval: notAcceptedPause}
	notAccepted.Reset()
	for {
		if err := c.conn.WriteFrame(ctx, deadline, frame); err != nil {
			c.dropConn()
			return reply{}, &DisconnectedError{Written: false, Err: err}
		}
		in, err := c.conn.ReadFrame(ctx, deadline)
		if err != nil {
			c.dropConn()
			// A frame the transport refused (bad size, a WebSocket message
			// whose length is not its size) is a protocol violation, not a
			// lost connection: it is reported, not retried.
			var fe *FrameError
			var pe *ProtocolError
			if errors.As(err, &fe) || errors.As(err, &pe) {
				return reply{}, err
			}
			return reply{}, &DisconnectedError{Written: true, Err: err}
		}
		rep, err := readReply(in, request)
		if err == nil {
			return rep, nil
		}
		if endsConn(err) {
			c.dropConn()
		}
		switch code, _ := wire.CodeOf(err); {
		case code == wire.ErrTransientNotCommitted && transientChannel(err):
			if pause(ctx, deadline, replayPace) != nil {
				return rep, fmt.Errorf("client: still not committed at the deadline: %w", err)
			}
		case code == wire.ErrTransientNotAccepted && transientChannel(err):
			wait := notAccepted.NextBackOff()
			if time.Now().Add(wait).After(notAcceptedUntil) || pause(ctx, deadline, wait) != nil {
				return rep, err
			}
		default:
			return rep, err
		}
	}
}

// endsConn reports the reply errors after which the connection is
// dropped: an eviction, or a protocol violation that says so.
func endsConn(err error) bool {
	var pe *ProtocolError
	var ev *wire.EvictionError
	return errors.As(err, &ev) || (errors.As(err, &pe) && pe.Dropped)
}

// transientChannel reports whether a transient code came on a channel that
// carries it: a deny status or a result section, not an eviction.
func transientChannel(err error) bool {
	var s *wire.StatusError
	var r *wire.ResultError
	return errors.As(err, &s) || errors.As(err, &r)
}

// readReply applies the Go SDK's acceptance rules to one frame
// (client-plane.md 4.4, 16): an Eviction becomes *wire.EvictionError; any
// command other than Reply, or a Reply whose request differs from the one
// sent, is a ProtocolError that drops the connection; a nonzero status is
// *wire.StatusError; a status-0 reply must carry a defined operation, which
// decides whether the body starts with a result section
// (*wire.ResultError on a rejection).
func readReply(frame []byte, request uint64) (reply, error) {
	h := wire.HeaderOf(frame)
	switch h.Command() {
	case wire.CmdEviction:
		// The SDKs read the reason and window without validating the rest.
		return reply{}, wire.Evicted(h.Eviction())
	case wire.CmdReply:
	default:
		return reply{}, &ProtocolError{Reason: fmt.Sprintf("command %v is neither Reply nor Eviction", h.Command()), Dropped: true}
	}
	r := h.Reply()
	if r.Request != request {
		return reply{}, &ProtocolError{Reason: fmt.Sprintf("reply to request %d, expected %d", r.Request, request), Dropped: true}
	}
	if r.Status != 0 {
		return reply{}, &wire.StatusError{Code: wire.ErrorCode(r.Status)}
	}
	if !r.Operation.Defined() {
		return reply{}, &ProtocolError{Reason: fmt.Sprintf("undefined operation %d", uint8(r.Operation))}
	}
	body := frame[wire.HeaderSize:]
	if r.Operation.ResultFramed() {
		payload, err := wire.SplitResult(body)
		if err != nil {
			var re *wire.ResultError
			if errors.As(err, &re) {
				return reply{op: r.Operation}, err
			}
			return reply{op: r.Operation}, fmt.Errorf("client: result section of a %v reply: %w", r.Operation, err)
		}
		body = payload
	}
	return reply{op: r.Operation, body: body}, nil
}
