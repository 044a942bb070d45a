package clientplane

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"

	"iggynode/wire"
)

// QUIC application close codes defined upstream (transports.md 4.5); only
// codeShutdown is ever sent here (0-RTT never reaches the application, see
// ListenQUIC).
const (
	codeShutdown quic.ApplicationErrorCode = 0x1003
)

// streamAbandoned is the error code of the STOP_SENDING that drops a
// stream's receive side; upstream sends 0 by dropping the receive half.
const streamAbandoned quic.StreamErrorCode = 0

// idleTimeoutDisabled stands for "no idle timeout": quic-go cannot advertise
// a zero max_idle_timeout, so a year is as close as it gets.
const idleTimeoutDisabled = 365 * 24 * time.Hour

// QUICConfig holds the `[quic]` keys (transports.md 4.3) and the reply
// timing of 4.4-4.5. Zero fields take the spec defaults, except
// KeepAliveInterval and MaxIdleTimeout, where zero means disabled as in
// the config file: start from DefaultQUICConfig.
type QUICConfig struct {
	MaxConcurrentBidiStreams int64  // incoming bidi stream limit; default 1
	InitialMTU               uint16 // 1200..65535; default 1200
	ReceiveWindow            uint64 // connection receive window; default 64 MiB
	StreamReceiveWindow      uint64 // per-stream receive window; default 64 MiB
	// KeepAliveInterval is the PING period (spec default 10 s); 0 disables.
	KeepAliveInterval time.Duration
	// MaxIdleTimeout is the advertised idle timeout (spec default 30 s;
	// the effective one is the smaller of the two peers'); 0 disables.
	MaxIdleTimeout time.Duration
	// ReplyBackstop bounds the wait for a stream's reply; past it the
	// connection is closed with 0x1003 (4.4); default 60 s.
	ReplyBackstop time.Duration
	// StreamReadTimeout bounds reading one request frame from a stream;
	// past it the stream is abandoned (upstream has none, 4.5; a stalled
	// stream would hold the connection's serial loop); default
	// ReplyBackstop.
	StreamReadTimeout time.Duration
}

// DefaultQUICConfig is the shipped `[quic]` section (transports.md 4.3).
func DefaultQUICConfig() QUICConfig {
	return QUICConfig{
		MaxConcurrentBidiStreams: 1,
		InitialMTU:               1200,
		ReceiveWindow:            64 << 20,
		StreamReceiveWindow:      64 << 20,
		KeepAliveInterval:        10 * time.Second,
		MaxIdleTimeout:           30 * time.Second,
		ReplyBackstop:            60 * time.Second,
		StreamReadTimeout:        60 * time.Second,
	}
}

func (q *QUICConfig) defaults() {
	d := DefaultQUICConfig()
	if q.MaxConcurrentBidiStreams <= 0 {
		q.MaxConcurrentBidiStreams = d.MaxConcurrentBidiStreams
	}
	if q.InitialMTU < 1200 {
		q.InitialMTU = d.InitialMTU
	}
	if q.ReceiveWindow == 0 {
		q.ReceiveWindow = d.ReceiveWindow
	}
	if q.StreamReceiveWindow == 0 {
		q.StreamReceiveWindow = d.StreamReceiveWindow
	}
	if q.ReplyBackstop <= 0 {
		q.ReplyBackstop = d.ReplyBackstop
	}
	if q.StreamReadTimeout <= 0 {
		q.StreamReadTimeout = q.ReplyBackstop
	}
}

// quicConfig is the quic-go server configuration (4.3 Go note).
func (q *QUICConfig) quicConfig(handshakeGrace time.Duration) *quic.Config {
	idle := q.MaxIdleTimeout
	if idle <= 0 {
		idle = idleTimeoutDisabled
	}
	return &quic.Config{
		// quic-go also aborts a handshake that takes twice its idle
		// timeout, so half the grace bounds the whole handshake by it.
		HandshakeIdleTimeout:           handshakeGrace / 2,
		MaxIdleTimeout:                 idle,
		KeepAlivePeriod:                max(q.KeepAliveInterval, 0),
		InitialStreamReceiveWindow:     q.StreamReceiveWindow,
		MaxStreamReceiveWindow:         q.StreamReceiveWindow,
		InitialConnectionReceiveWindow: q.ReceiveWindow,
		MaxConnectionReceiveWindow:     q.ReceiveWindow,
		MaxIncomingStreams:             q.MaxConcurrentBidiStreams,
		MaxIncomingUniStreams:          -1, // unidirectional streams are never used
		InitialPacketSize:              q.InitialMTU,
		Allow0RTT:                      false,
		EnableDatagrams:                false,
	}
}

// QUICListener serves QUIC clients (transports.md 4).
type QUICListener struct {
	udp     *net.UDPConn
	tr      *quic.Transport
	ln      *quic.Listener
	cfg     Config
	qcfg    QUICConfig
	handler Handler
	// StopAccepting refuses new connections and handshakes in flight;
	// open connections continue on the shared UDP socket.
	listening
}

// ListenQUIC binds UDP addr and starts accepting. cfg.TLS supplies the
// certificate (nil: an ephemeral self-signed one, the shipped default);
// it is cloned with TLS 1.3 and no ALPN (4.2). The listener is not an
// early one and refuses 0-RTT, so no stream ever arrives as 0-RTT.
func ListenQUIC(addr string, cfg Config, qcfg QUICConfig, h Handler) (*QUICListener, error) {
	cfg.defaults()
	qcfg.defaults()
	tlsConf := cfg.TLS
	if tlsConf == nil {
		var err error
		if tlsConf, err = QUICServerTLS(CertSource{SelfSigned: true}, cfg.Logger); err != nil {
			return nil, err
		}
	}
	tlsConf = tlsConf.Clone()
	tlsConf.NextProtos = nil // 4.2: any ALPN on one side only fails the handshake
	tlsConf.MinVersion = tls.VersionTLS13
	tlsConf.ClientAuth = tls.NoClientCert
	udpAddr, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, err
	}
	udp, err := net.ListenUDP("udp", udpAddr)
	if err != nil {
		return nil, err
	}
	tr := &quic.Transport{Conn: udp}
	ln, err := tr.Listen(tlsConf, qcfg.quicConfig(cfg.HandshakeGrace))
	if err != nil {
		_ = tr.Close()
		_ = udp.Close()
		return nil, err
	}
	l := &QUICListener{udp: udp, tr: tr, ln: ln, cfg: cfg, qcfg: qcfg, handler: h}
	l.stop = ln.Close
	l.wg.Add(1)
	go l.accept()
	return l, nil
}

// Addr is the bound UDP address.
func (l *QUICListener) Addr() net.Addr { return l.ln.Addr() }

func (l *QUICListener) accept() {
	defer l.wg.Done()
	for {
		// Handshakes run inside quic-go, one per connection, so a slow
		// one never holds this loop (4.1).
		qc, err := l.ln.Accept(context.Background())
		if err != nil {
			if !l.closed.Load() {
				l.cfg.Logger.Warn("quic accept failed", "err", err)
			}
			return
		}
		release, reason, ok := l.cfg.Guard.admit(qc.RemoteAddr())
		if !ok {
			l.cfg.Guard.hit(reason, TransportQUIC, qc.RemoteAddr().String())
			_ = qc.CloseWithError(codeShutdown, reason.String())
			continue
		}
		c := newQUICConn(qc, l.cfg, l.qcfg)
		if l.closed.Load() || !l.conns.add(c, c.Close) {
			release()
			c.Close()
			continue
		}
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			defer release()
			defer l.conns.remove(c)
			c.serve(l.handler)
		}()
	}
}

// Close stops accepting, closes every connection with 0x1003 "shutdown"
// (7.4), waits for their goroutines and releases the UDP socket.
func (l *QUICListener) Close() {
	l.drain()
	_ = l.tr.Close()
	_ = l.udp.Close()
}

// quicConn is one QUIC client connection: a serial loop that takes one
// bidirectional stream at a time, reads its request frame, hands it to the
// Session and writes the matching outbound frame back on that stream
// (transports.md 4.4).
type quicConn struct {
	qc        *quic.Conn
	cfg       Config
	qcfg      QUICConfig
	guard     *connGuard
	out       chan []byte
	closing   chan struct{}
	closeOnce sync.Once
	// reading is the stream whose request frame is being read, for the
	// watchdog to abandon at the frame deadline.
	reading atomic.Pointer[quic.Stream]
}

func newQUICConn(qc *quic.Conn, cfg Config, qcfg QUICConfig) *quicConn {
	c := &quicConn{qc: qc, cfg: cfg, qcfg: qcfg, out: make(chan []byte, cfg.QueueCapacity), closing: make(chan struct{})}
	c.guard = newConnGuard(cfg.Guard, TransportQUIC, qc.RemoteAddr().String(), c.expire)
	return c
}

// SetLoggedIn implements Conn.
func (c *quicConn) SetLoggedIn(v bool) { c.guard.setLoggedIn(v) }

// expire applies a deadline: a frame past its deadline abandons only its
// stream (4.5, like a stream that ends early); the login deadline and the
// idle timeout close the connection with 0x1003 and the reason.
func (c *quicConn) expire(r Reason) bool {
	c.cfg.Guard.hit(r, TransportQUIC, c.RemoteAddr())
	if r == ReasonFrameDeadline {
		if st := c.reading.Load(); st != nil {
			st.CancelRead(streamAbandoned)
		}
		return false
	}
	c.closeWith(r.String())
	return true
}

func (c *quicConn) RemoteAddr() string   { return c.qc.RemoteAddr().String() }
func (c *quicConn) Transport() Transport { return TransportQUIC }

// Send queues frame for the stream that waits (or the next one) without
// blocking; a full queue drops it (1.4).
func (c *quicConn) Send(frame []byte) {
	select {
	case <-c.closing:
		return
	default:
	}
	select {
	case c.out <- frame:
	default:
		c.cfg.Logger.Warn("client outbound queue full, frame dropped", "transport", TransportQUIC, "remote", c.RemoteAddr())
	}
}

// SendPooled sends without recycling: a QUIC stream may keep the bytes
// until they are acknowledged, so the frame is left to the collector.
func (c *quicConn) SendPooled(frame []byte) { c.Send(frame) }

// SendSpliced joins the pieces: the frame goes out as one stream write
// that QUIC may retransmit from, so it must own its bytes.
func (c *quicConn) SendSpliced(built []byte, splices []wire.Splice) {
	frame, err := wire.JoinSpliced(make([]byte, 0, wire.SplicedLen(built, splices)), built, splices)
	putFrame(built)
	wire.UnpinSplices(splices) // copied
	if err != nil {
		c.Close() // a stored batch that cannot be read: the reply cannot be sent whole
		return
	}
	c.Send(frame)
}

// Done releases nothing: the serial stream loop takes the next stream only
// after the current reply, which is QUIC's whole backpressure (1.4).
func (c *quicConn) Done() {}

// Close closes the connection with 0x1003 "shutdown" (4.5).
func (c *quicConn) Close() { c.closeWith("shutdown") }

// closeWith closes the connection with 0x1003 and reason.
func (c *quicConn) closeWith(reason string) {
	c.closeOnce.Do(func() {
		close(c.closing)
		c.guard.stopWaits()
		_ = c.qc.CloseWithError(codeShutdown, reason)
	})
}

func (c *quicConn) serve(h Handler) {
	s := h.Open(c)
	c.guard.start()
	defer c.guard.close()
	ctx := c.qc.Context()
	for {
		st, err := c.qc.AcceptStream(ctx)
		if err != nil {
			c.logEnd(err)
			break
		}
		if !c.serveStream(st, s) {
			break
		}
	}
	c.Close()
	s.Closed()
}

func (c *quicConn) logEnd(err error) {
	var appErr *quic.ApplicationError
	if errors.As(err, &appErr) && appErr.Remote && appErr.ErrorCode == 0 {
		return // the SDK's own close (4.5)
	}
	select {
	case <-c.closing:
	default:
		c.cfg.Logger.Debug("quic client connection ended", "remote", c.RemoteAddr(), "err", err)
	}
}

// serveStream carries one request and its answer. It reports false when the
// connection is finished.
func (c *quicConn) serveStream(st *quic.Stream, s Session) bool {
	frame, err := c.readFrame(st)
	if err != nil {
		// 4.5: a framing error (or a stream that ends or stalls before
		// size bytes) abandons only this stream: no reply data, send side
		// finished empty, receive side dropped.
		log := c.cfg.Logger.Warn
		var se *quic.StreamError
		if _, atLimit := reasonOf(err); atLimit || errors.As(err, &se) && !se.Remote {
			log = c.cfg.Logger.Debug // a limit, counted and rate-limited by the Guard
		}
		log("abandoning quic stream", "remote", c.RemoteAddr(), "stream", st.StreamID(), "err", err)
		st.CancelRead(streamAbandoned)
		_ = st.Close()
		return true
	}
	// Never wait for the client's FIN (4.4 Go note): with a stream limit of
	// 1 a client that never sends it could not open its next stream.
	st.CancelRead(streamAbandoned)
	h := wire.HeaderOf(frame)
	want := h.Request().Request // read before the Session owns frame
	if cmd := h.Command(); cmd != wire.CmdRequest {
		// 1.2: ignored, no reply; as upstream the stream then waits for
		// the backstop (4.5).
		c.cfg.Logger.Warn("ignoring non-request frame from a client", "transport", TransportQUIC, "remote", c.RemoteAddr(), "command", cmd)
	} else {
		s.Frame(frame, c.guard.takeVerdict(), c.guard.takeOwner())
	}
	c.guard.delivered()
	reply, ok := c.awaitReply(want)
	if !ok {
		return false
	}
	_ = st.SetWriteDeadline(time.Now().Add(c.qcfg.ReplyBackstop))
	if _, err := st.Write(reply); err != nil {
		c.cfg.Logger.Debug("quic reply write failed", "remote", c.RemoteAddr(), "stream", st.StreamID(), "err", err)
		st.CancelWrite(streamAbandoned)
		return true
	}
	_ = st.Close() // FIN: the reply is complete
	return true
}

// readFrame reads exactly one frame: header, checks of 1.2, then size-256
// body bytes; nothing after it is read (4.4).
func (c *quicConn) readFrame(st *quic.Stream) ([]byte, error) {
	_ = st.SetReadDeadline(time.Now().Add(c.qcfg.StreamReadTimeout))
	var hdr wire.Header
	if _, err := io.ReadFull(st, hdr[:]); err != nil {
		return nil, err
	}
	c.reading.Store(st)
	defer c.reading.Store(nil)
	return c.guard.readFrame(&hdr, st, c.cfg.MaxFrameSize)
}

// awaitReply waits for the outbound frame that answers request number want:
// a Reply with another number is a stale answer and is discarded; anything
// else (an Eviction) is delivered unconditionally (4.4). Past the backstop
// the connection is closed so a late reply can never answer a later
// stream.
func (c *quicConn) awaitReply(want uint64) ([]byte, bool) {
	backstop := time.NewTimer(c.qcfg.ReplyBackstop)
	defer backstop.Stop()
	for {
		select {
		case f := <-c.out:
			if len(f) < wire.HeaderSize {
				continue
			}
			h := wire.HeaderOf(f)
			if h.Command() == wire.CmdReply && h.Reply().Request != want {
				c.cfg.Logger.Debug("discarding stale quic reply", "remote", c.RemoteAddr(), "request", h.Reply().Request, "want", want)
				continue
			}
			return f, true
		case <-backstop.C:
			c.cfg.Logger.Warn("no reply within the backstop, closing quic connection", "remote", c.RemoteAddr(), "backstop", c.qcfg.ReplyBackstop)
			c.Close()
			return nil, false
		case <-c.closing:
			return nil, false
		case <-c.qc.Context().Done():
			return nil, false
		}
	}
}
