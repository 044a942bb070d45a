package clientplane

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"iggynode/internal/framebuf"
	"iggynode/internal/stages"
	"iggynode/wire"
)

// Transport is the client transport code reported by GetClients (7.9).
type Transport uint8

const (
	TransportTCP       Transport = 1 // also TCP+TLS
	TransportQUIC      Transport = 2
	TransportHTTP      Transport = 3 // plane/http's virtual connections
	TransportWebSocket Transport = 4 // also WSS
)

func (t Transport) String() string {
	switch t {
	case TransportTCP:
		return "tcp"
	case TransportQUIC:
		return "quic"
	case TransportHTTP:
		return "http"
	case TransportWebSocket:
		return "ws"
	}
	return "unknown"
}

// Conn is the reply side of one client connection.
type Conn interface {
	// Send queues one complete frame for writing; it never blocks on the
	// socket. The Conn owns frame after the call. A frame that does not fit
	// the outbound queue is dropped (transports.md 1.4).
	Send(frame []byte)
	// SendPooled is Send for a frame from GetFrame: the edge recycles it
	// once it is written. The caller must not touch it after the call.
	SendPooled(frame []byte)
	// SendSpliced is SendPooled for a frame whose built part (from
	// GetFrame) carries splices (wire.Splice): bytes written from where
	// they lie, with one writev where the carrier allows, not copied into
	// the frame. The splices' bytes must not change until the write.
	SendSpliced(built []byte, splices []wire.Splice)
	// Done tells the reader that one delivered request has been answered,
	// releasing a pending slot.
	Done()
	// Close closes the connection.
	Close()
	// SetLoggedIn tells the edge whether the connection holds a session:
	// until it does, frames are limited to PreLoginMaxFrameSize and the
	// login deadline runs; after, the idle timeout does. Call it before
	// sending the reply that logs in or out, so that the client's next
	// frame is judged by the new state.
	SetLoggedIn(bool)
	RemoteAddr() string
	Transport() Transport
}

// Session receives one connection's frames, in order.
type Session interface {
	// Frame delivers one frame (header + body) that passed the transport
	// checks, with the edge's verdict on its batch if it is a SendMessages
	// request (wire.SendCheck; the zero verdict: none). The session owns
	// buf. owner, when not nil, is the pooled buffer buf lies in, with
	// one reference the session takes over (internal/framebuf): released
	// by whoever last needs the bytes, or left to the collector. Every
	// Frame must eventually be matched by one Conn.Done call.
	Frame(buf []byte, batch wire.SendVerdict, owner *framebuf.Buf)
	// Closed reports that the connection ended (EOF, error or Close).
	Closed()
}

// Handler creates a Session per accepted connection.
type Handler interface {
	Open(c Conn) Session
}

// Config of a listener; every transport takes the same one.
type Config struct {
	MaxFrameSize uint32 // message_bus.max_message_size; default wire.DefaultMaxFrameSize
	MaxPending   int    // requests delivered but not answered; default 64
	// QueueCapacity bounds the outbound frames queued per connection
	// (message_bus.peer_queue_capacity); default 256.
	QueueCapacity int
	// TLS turns TCP into TCP+TLS and WebSocket into WSS; QUIC always needs
	// one (nil there means an ephemeral self-signed certificate).
	TLS *tls.Config
	// HandshakeGrace bounds the TLS accept, the WebSocket upgrade (TLS and
	// upgrade together for WSS) and the QUIC handshake
	// (message_bus.handshake_grace); default 10 s.
	HandshakeGrace time.Duration
	// CloseGrace bounds the close sequence: flushing queued replies, the
	// WebSocket Close frame, TLS close_notify (message_bus.close_grace);
	// default 2 s.
	CloseGrace time.Duration
	// Guard applies the node's Limits; every listener of a node shares
	// one. Nil: a guard of its own with DefaultLimits.
	Guard  *Guard
	Logger *slog.Logger
}

func (c *Config) defaults() {
	if c.MaxFrameSize == 0 {
		c.MaxFrameSize = wire.DefaultMaxFrameSize
	}
	if c.MaxPending == 0 {
		c.MaxPending = 64
	}
	if c.QueueCapacity == 0 {
		c.QueueCapacity = 256
	}
	if c.HandshakeGrace == 0 {
		c.HandshakeGrace = 10 * time.Second
	}
	if c.CloseGrace == 0 {
		c.CloseGrace = 2 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Guard == nil {
		c.Guard = NewGuard(DefaultLimits(), c.Logger)
	}
}

// errFraming marks a frame that fails the transport checks of
// transports.md 1.2: the connection is closed (QUIC: the stream abandoned).
var errFraming = errors.New("framing error")

// checkHeader applies transports.md 1.2 to a frame header before any body
// byte is read or buffered: 256 <= size <= max, command byte <= 29.
func checkHeader(h *wire.Header, limit uint32) error {
	if err := wire.CheckFrameSize(h.Size(), limit); err != nil {
		return fmt.Errorf("%w: %w", errFraming, err)
	}
	if !h.Command().Valid() {
		return fmt.Errorf("%w: invalid command byte %d", errFraming, uint8(h.Command()))
	}
	return nil
}

// carrier moves whole frames over one connection-oriented transport (TCP,
// TLS, WebSocket); frameConn adds the queues, ordering and lifecycle that
// every such transport shares.
type carrier interface {
	// readFrame reads the next header and hands it, with the reader of
	// the rest, to g.readFrame; a violation of transports.md 1.2 is an
	// errFraming error, of a limit a limitError.
	readFrame(g *connGuard, limit uint32) ([]byte, error)
	writeFrame(frame []byte) error
	// writeSpliced writes one frame given as its built part and splices
	// (Conn.SendSpliced).
	writeSpliced(built []byte, splices []wire.Splice) error
	// flush pushes written frames to the socket (once per batch).
	flush() error
	// interrupt makes a blocked readFrame return; it is called from
	// another goroutine.
	interrupt()
	// teardown runs the transport's close sequence within grace and
	// releases the socket. It may run while a write is blocked.
	teardown(grace time.Duration)
	remoteAddr() string
}

// frameConn is one client connection over a carrier: a reader goroutine
// that feeds the Session and a writer goroutine that drains the bounded
// outbound queue, so no actor ever blocks on a socket.
type frameConn struct {
	carrier   carrier
	transport Transport
	cfg       Config
	guard     *connGuard
	out       chan outFrame
	credits   chan struct{}
	answered  chan struct{} // a pending request was answered, for connGuard.settle
	closing   chan struct{}
	closeOnce sync.Once
	// ended is the limit that ended the connection (set by the watchdog).
	ended atomic.Pointer[limitError]
}

func newFrameConn(c carrier, t Transport, cfg Config) *frameConn {
	fc := &frameConn{carrier: c, transport: t, cfg: cfg, out: make(chan outFrame, cfg.QueueCapacity),
		credits: make(chan struct{}, cfg.MaxPending), answered: make(chan struct{}, 1), closing: make(chan struct{})}
	fc.guard = newConnGuard(cfg.Guard, t, c.remoteAddr(), fc.expire)
	fc.guard.pending = func() int { return len(fc.credits) }
	fc.guard.settle = fc.settleLogin
	return fc
}

// SetLoggedIn implements Conn.
func (c *frameConn) SetLoggedIn(v bool) { c.guard.setLoggedIn(v) }

// expire ends the connection at a deadline: the reader stops as if the
// peer had ended it, so replies already queued are still written within
// CloseGrace (an idle one is told StaleClient first, see readLoop).
func (c *frameConn) expire(r Reason) bool {
	c.cfg.Guard.hit(r, c.transport, c.RemoteAddr())
	c.ended.CompareAndSwap(nil, &limitError{reason: r})
	c.guard.stopWaits()
	c.carrier.interrupt()
	return true
}

// settleLogin waits until no request is in flight or the connection is
// logged in: a client that pipelines a large request right behind its
// Register must not be refused before the Register's reply.
func (c *frameConn) settleLogin() {
	for !c.guard.loggedIn.Load() && len(c.credits) > 0 {
		select {
		case <-c.answered:
		case <-c.guard.loginSig:
		case <-c.guard.stop:
			return
		}
	}
}

// ReadsSources reports whether conn takes frames whose splices have
// sources (wire.SpliceSource) and reads them itself: the edge's writer of
// TCP, TLS and WebSocket connections reads them into pooled buffers as it
// writes the frame, QUIC's joins them into the frame it sends. Either way
// the partition that built the reply does not read them.
func ReadsSources(conn Conn) bool {
	switch conn.(type) {
	case *frameConn, *quicConn:
		return true
	}
	return false
}

func (c *frameConn) RemoteAddr() string   { return c.carrier.remoteAddr() }
func (c *frameConn) Transport() Transport { return c.transport }

// Send queues frame without waiting; a full queue drops it (transports.md
// 1.4: logged as backpressure, never retransmitted).
// outFrame is a queued frame; pooled frames go back to the pool after the
// write.
type outFrame struct {
	b       []byte
	pooled  bool
	splices []wire.Splice // with pooled: b is the built part
}

func (c *frameConn) Send(frame []byte) { c.enqueue(outFrame{b: frame}) }

func (c *frameConn) SendPooled(frame []byte) { c.enqueue(outFrame{b: frame, pooled: true}) }

func (c *frameConn) SendSpliced(built []byte, splices []wire.Splice) {
	c.enqueue(outFrame{b: built, pooled: true, splices: splices})
}

func (c *frameConn) enqueue(frame outFrame) {
	select {
	case <-c.closing:
		return
	default:
	}
	select {
	case c.out <- frame:
	default:
		c.cfg.Logger.Warn("client outbound queue full, frame dropped", "transport", c.transport, "remote", c.RemoteAddr())
	}
}

func (c *frameConn) Done() {
	select {
	case <-c.credits:
	default:
	}
	select {
	case c.answered <- struct{}{}:
	default:
	}
}

// Close stops the connection: queued frames are dropped, the reader is
// interrupted and the serving goroutine runs the close sequence. It never
// blocks on the socket.
func (c *frameConn) Close() {
	c.closeOnce.Do(func() {
		close(c.closing)
		c.guard.stopWaits()
		c.carrier.interrupt()
	})
}

// serve runs the connection to its end; it returns after every goroutine
// of the connection has stopped and the socket is released.
func (c *frameConn) serve(h Handler) {
	s := h.Open(c)
	c.guard.start()
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		c.writeLoop()
	}()
	err := c.readLoop(s)
	c.guard.close()
	_, atLimit := reasonOf(err)
	switch {
	case atLimit:
		c.cfg.Logger.Debug("closing client connection at a limit", "transport", c.transport, "remote", c.RemoteAddr(), "err", err)
	case errors.Is(err, errFraming):
		c.cfg.Logger.Warn("closing client connection", "transport", c.transport, "remote", c.RemoteAddr(), "err", err)
	case err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed):
		c.cfg.Logger.Debug("client connection ended", "transport", c.transport, "remote", c.RemoteAddr(), "err", err)
	}
	s.Closed()
	select {
	case <-c.closing:
		// Closed locally: whatever is still queued is dropped (7.4).
	default:
		// The peer or a framing error ended the reader: write what is
		// already queued, bounded by the close grace (5.4).
		c.drain(writerDone)
	}
	c.Close()
	c.carrier.teardown(c.cfg.CloseGrace)
	<-writerDone
}

// drain hands the writer a nil sentinel (flush and stop after everything
// queued before it) and waits for it, at most CloseGrace.
func (c *frameConn) drain(writerDone <-chan struct{}) {
	grace := time.NewTimer(c.cfg.CloseGrace)
	defer grace.Stop()
	select {
	case c.out <- outFrame{}:
	case <-grace.C:
		return
	}
	select {
	case <-writerDone:
	case <-grace.C:
	}
}

func (c *frameConn) readLoop(s Session) error {
	var lastClient [16]byte // of the last request, for an idle eviction
	for {
		buf, err := c.carrier.readFrame(c.guard, c.cfg.MaxFrameSize)
		if err != nil {
			select {
			case <-c.closing:
				return net.ErrClosed
			default:
			}
			if e := c.ended.Load(); e != nil {
				if ev := staleEviction(lastClient); e.reason == ReasonIdleTimeout && ev != nil {
					c.enqueue(outFrame{b: ev})
				}
				return e
			}
			return err
		}
		if cmd := wire.HeaderOf(buf).Command(); cmd != wire.CmdRequest {
			// transports.md 1.2: a valid command that is not Request is
			// ignored and the connection kept.
			c.cfg.Logger.Warn("ignoring non-request frame from a client", "transport", c.transport, "remote", c.RemoteAddr(), "command", cmd)
			c.guard.delivered()
			continue
		}
		copy(lastClient[:], buf[128:144])
		select {
		case c.credits <- struct{}{}:
		case <-c.closing:
			return net.ErrClosed
		}
		s.Frame(buf, c.guard.takeVerdict(), c.guard.takeOwner())
		c.guard.delivered()
	}
}

// staleEviction is the Eviction(StaleClient) an idle logged-in connection
// gets before it is closed (client-plane.md 4.5: the reason for a client
// idle past its heartbeat); client is the RequestHeader client field of
// its last request. None without one: an eviction needs a nonzero client.
func staleEviction(client [16]byte) []byte {
	if client == [16]byte{} {
		return nil
	}
	var h wire.Header
	copy(h[128:144], client[:])
	e := h.Eviction()
	e.Reason = wire.EvictStaleClient
	e.Encode(&h)
	return h[:]
}

func (c *frameConn) writeLoop() {
	defer c.dropQueued()
	for {
		var frame outFrame
		select {
		case frame = <-c.out:
		case <-c.closing:
			return
		}
		stages.Mark(stages.WriterGot)
		if frame.b == nil {
			_ = c.carrier.flush()
			return
		}
		var err error
		if len(frame.splices) > 0 {
			err = c.carrier.writeSpliced(frame.b, frame.splices)
			wire.UnpinSplices(frame.splices) // written, or copied into the carrier's buffer
		} else {
			err = c.carrier.writeFrame(frame.b)
		}
		if frame.pooled {
			putFrame(frame.b) // written or copied into the carrier's buffer
		}
		if err != nil {
			c.Close()
			return
		}
		if len(c.out) == 0 {
			if err := c.carrier.flush(); err != nil {
				c.Close()
				return
			}
		}
		stages.Mark(stages.Flushed)
	}
}

// dropQueued gives back what the replies left unwritten when the writer
// stops hold: their pooled frames and the pins of their spliced batches
// (a reply dropped without that leaves them to the collector).
func (c *frameConn) dropQueued() {
	for {
		select {
		case frame := <-c.out:
			wire.UnpinSplices(frame.splices)
			if frame.pooled {
				putFrame(frame.b)
			}
		default:
			return
		}
	}
}

// connSet tracks a listener's live connections (and those still in their
// handshake) so that Close reaches every one, including a connection
// accepted while Close runs.
type connSet struct {
	mu     sync.Mutex
	conns  map[any]func()
	closed bool
}

// add registers key with the function that closes it; it reports false
// once the set is closed, and the caller then drops the connection.
func (s *connSet) add(key any, closeFn func()) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	if s.conns == nil {
		s.conns = make(map[any]func())
	}
	s.conns[key] = closeFn
	return true
}

func (s *connSet) remove(key any) {
	s.mu.Lock()
	delete(s.conns, key)
	s.mu.Unlock()
}

// closeAll closes every connection and refuses later additions.
func (s *connSet) closeAll() {
	s.mu.Lock()
	s.closed = true
	for _, closeFn := range s.conns {
		closeFn()
	}
	s.mu.Unlock()
}
