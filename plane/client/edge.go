package clientplane

import (
	"bufio"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"

	"iggynode/wire"
)

// Transport is the client transport code reported by GetClients (7.9).
type Transport uint8

const (
	TransportTCP       Transport = 1 // also TCP+TLS
	TransportQUIC      Transport = 2
	TransportWebSocket Transport = 4 // also WSS
)

func (t Transport) String() string {
	switch t {
	case TransportTCP:
		return "tcp"
	case TransportQUIC:
		return "quic"
	case TransportWebSocket:
		return "ws"
	}
	return "unknown"
}

// Conn is the reply side of one client connection.
type Conn interface {
	// Send queues one complete frame for writing; it never blocks on the
	// socket. The Conn owns frame after the call.
	Send(frame []byte)
	// Done tells the reader that one delivered request has been answered,
	// releasing a pending slot.
	Done()
	// Close closes the connection.
	Close()
	RemoteAddr() string
	Transport() Transport
}

// Session receives one connection's frames, in order.
type Session interface {
	// Frame delivers one frame (header + body) that passed the transport
	// checks. The session owns buf. Every Frame must eventually be matched
	// by one Conn.Done call.
	Frame(buf []byte)
	// Closed reports that the connection ended (EOF, error or Close).
	Closed()
}

// Handler creates a Session per accepted connection.
type Handler interface {
	Open(c Conn) Session
}

// Config of a listener.
type Config struct {
	MaxFrameSize uint32      // default wire.DefaultMaxFrameSize
	MaxPending   int         // requests delivered but not answered; default 64
	TLS          *tls.Config // TCP+TLS when set
	Logger       *slog.Logger
}

func (c *Config) defaults() {
	if c.MaxFrameSize == 0 {
		c.MaxFrameSize = wire.DefaultMaxFrameSize
	}
	if c.MaxPending == 0 {
		c.MaxPending = 64
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// TCPListener serves TCP (or TCP+TLS) clients.
type TCPListener struct {
	ln      net.Listener
	cfg     Config
	handler Handler
	wg      sync.WaitGroup
	mu      sync.Mutex
	conns   map[*streamConn]struct{}
	closed  atomic.Bool
}

// ListenTCP binds addr and starts accepting.
func ListenTCP(addr string, cfg Config, h Handler) (*TCPListener, error) {
	cfg.defaults()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	if cfg.TLS != nil {
		ln = tls.NewListener(ln, cfg.TLS)
	}
	l := &TCPListener{ln: ln, cfg: cfg, handler: h, conns: make(map[*streamConn]struct{})}
	l.wg.Add(1)
	go l.accept()
	return l, nil
}

// Addr is the bound address.
func (l *TCPListener) Addr() net.Addr { return l.ln.Addr() }

func (l *TCPListener) accept() {
	defer l.wg.Done()
	for {
		nc, err := l.ln.Accept()
		if err != nil {
			if !l.closed.Load() {
				l.cfg.Logger.Warn("tcp accept failed", "err", err)
			}
			return
		}
		if tc, ok := nc.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true)
		}
		c := newStreamConn(nc, TransportTCP, l.cfg)
		l.mu.Lock()
		l.conns[c] = struct{}{}
		l.mu.Unlock()
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			c.serve(l.handler)
			l.mu.Lock()
			delete(l.conns, c)
			l.mu.Unlock()
		}()
	}
}

// StopAccepting closes the listening socket; open connections continue.
func (l *TCPListener) StopAccepting() {
	if l.closed.CompareAndSwap(false, true) {
		_ = l.ln.Close()
	}
}

// Close stops accepting, closes every connection and waits for their
// goroutines.
func (l *TCPListener) Close() {
	l.StopAccepting()
	l.mu.Lock()
	for c := range l.conns {
		c.Close()
	}
	l.mu.Unlock()
	l.wg.Wait()
}

// streamConn carries frames over a byte stream (TCP, TLS).
type streamConn struct {
	nc        net.Conn
	transport Transport
	cfg       Config
	out       chan []byte
	credits   chan struct{}
	closing   chan struct{}
	closeOnce sync.Once
}

func newStreamConn(nc net.Conn, t Transport, cfg Config) *streamConn {
	return &streamConn{nc: nc, transport: t, cfg: cfg, out: make(chan []byte, cfg.MaxPending+8),
		credits: make(chan struct{}, cfg.MaxPending), closing: make(chan struct{})}
}

func (c *streamConn) RemoteAddr() string   { return c.nc.RemoteAddr().String() }
func (c *streamConn) Transport() Transport { return c.transport }

func (c *streamConn) Send(frame []byte) {
	select {
	case c.out <- frame:
	case <-c.closing:
	}
}

func (c *streamConn) Done() {
	select {
	case <-c.credits:
	default:
	}
}

func (c *streamConn) Close() {
	c.closeOnce.Do(func() {
		close(c.closing)
		_ = c.nc.Close()
	})
}

func (c *streamConn) serve(h Handler) {
	s := h.Open(c)
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		c.writeLoop()
	}()
	err := c.readLoop(s)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
		c.cfg.Logger.Debug("client connection ended", "remote", c.RemoteAddr(), "err", err)
	}
	s.Closed()
	// Let queued replies drain unless the connection was closed under us.
	select {
	case <-c.closing:
	default:
		c.flushAndClose()
	}
	<-writerDone
}

// flushAndClose waits for the writer to empty its queue, then closes.
func (c *streamConn) flushAndClose() {
	select {
	case c.out <- nil: // sentinel: the writer closes after everything before it
	case <-c.closing:
	}
}

func (c *streamConn) readLoop(s Session) error {
	br := bufio.NewReaderSize(c.nc, 64<<10)
	for {
		var hdr wire.Header
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			return err
		}
		size := hdr.Size()
		if err := wire.CheckFrameSize(size, c.cfg.MaxFrameSize); err != nil {
			c.cfg.Logger.Warn("closing client connection: bad frame size", "remote", c.RemoteAddr(), "err", err)
			return err
		}
		if !hdr.Command().Valid() {
			c.cfg.Logger.Warn("closing client connection: invalid command byte", "remote", c.RemoteAddr(), "command", uint8(hdr.Command()))
			return errors.New("invalid command byte")
		}
		buf := make([]byte, size)
		copy(buf, hdr[:])
		if _, err := io.ReadFull(br, buf[wire.HeaderSize:]); err != nil {
			return err
		}
		if hdr.Command() != wire.CmdRequest {
			c.cfg.Logger.Warn("ignoring non-request frame from a client", "remote", c.RemoteAddr(), "command", hdr.Command())
			continue
		}
		select {
		case c.credits <- struct{}{}:
		case <-c.closing:
			return net.ErrClosed
		}
		s.Frame(buf)
	}
}

func (c *streamConn) writeLoop() {
	bw := bufio.NewWriterSize(c.nc, 64<<10)
	for {
		var frame []byte
		select {
		case frame = <-c.out:
		case <-c.closing:
			return
		}
		if frame == nil {
			_ = bw.Flush()
			c.Close()
			return
		}
		if _, err := bw.Write(frame); err != nil {
			c.Close()
			return
		}
		if len(c.out) == 0 {
			if err := bw.Flush(); err != nil {
				c.Close()
				return
			}
		}
	}
}
