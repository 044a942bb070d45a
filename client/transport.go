package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"iggynode/wire"
)

// Transport is the seam between the SDK and a carriage (transports.md 1):
// it opens connections that carry whole frames. TCP and TCP+TLS live here;
// QUICTransport and WSTransport (quic.go, websocket.go) are the other two
// binary carriages; none of them touches the commands.
type Transport interface {
	// Name is the transport's connection-string token ("tcp", "quic", "ws",
	// "http"); it picks the port of a cluster roster entry (client-plane.md 7.15).
	Name() string
	// Dial opens a connection to addr (host:port).
	Dial(ctx context.Context, addr string) (Conn, error)
}

// Conn carries one request frame out and one frame back, lockstep
// (transports.md 1.3). The client never calls it concurrently. Each call
// must give up at deadline (the request's, transports.md 1.3) or when ctx
// is cancelled, whichever comes first; the deadline is passed explicitly so
// the common path needs no derived context.
type Conn interface {
	// WriteFrame sends one whole frame (header and body). A nil error means
	// the whole frame was handed to the transport; any error leaves the
	// connection unusable, and a frame that was not fully written was never
	// complete on the server's side.
	WriteFrame(ctx context.Context, deadline time.Time, frame []byte) error
	// ReadFrame receives one whole frame. It enforces 256 <= size <= the
	// frame limit before reading the body (client-plane.md 4.4) and returns a
	// *FrameError otherwise; a carriage that cannot delimit the frame (a
	// WebSocket message of the wrong length) returns a *ProtocolError. Either
	// is reported as is; any other error is a lost connection. The returned
	// bytes are valid until the next call.
	ReadFrame(ctx context.Context, deadline time.Time) ([]byte, error)
	// Close tears the connection down.
	Close() error
}

// FrameError reports a frame the transport refused to read (size outside the
// window); the connection is dropped.
type FrameError struct{ Size uint32 }

func (e *FrameError) Error() string {
	return fmt.Sprintf("client: reply frame size %d outside 256..=limit, connection dropped", e.Size)
}

// Unwrap maps the violation to InvalidCommand, the code the Go SDK reports
// for a frame it cannot accept.
func (e *FrameError) Unwrap() error { return wire.ErrInvalidCommand }

// ErrTransportNotSupported is kept for callers that test for it; every
// transport of connection strings has a carriage now (http: HTTPTransport).
var ErrTransportNotSupported = errors.New("client: transport not yet supported")

// TCPTransport dials TCP or, with TLS set, TCP+TLS (transports.md 5).
type TCPTransport struct {
	// TLS is nil for plain TCP.
	TLS *tls.Config
	// NoDelay sets TCP_NODELAY; the SDKs leave Nagle on by default (5.2).
	NoDelay bool
	// MaxFrameSize bounds a reply frame; 0 means wire.DefaultMaxFrameSize.
	MaxFrameSize uint32
	// LocalAddr, when set, is the local address to dial from (tests and
	// benchmarks that play several clients on 127.0.0.0/8).
	LocalAddr net.Addr
}

// NewTCPTransport builds the TCP transport the options describe. With TLS
// enabled, certificates are verified unless InsecureSkipVerify is set; the
// server name is TLS.Domain, else the host part of addr (transports.md 3.3).
func NewTCPTransport(o Options) (*TCPTransport, error) {
	t := &TCPTransport{NoDelay: o.NoDelay, MaxFrameSize: o.MaxFrameSize}
	if !o.TLS.Enabled {
		return t, nil
	}
	cfg, err := tlsConfig(o.TLS.Domain, o.TLS.CAFile, o.TLS.InsecureSkipVerify)
	if err != nil {
		return nil, err
	}
	t.TLS = cfg
	return t, nil
}

// tlsConfig builds a client TLS configuration (transports.md 3.3): the
// server name (empty lets the dialer use the host part of the address),
// verification unless skipVerify, and the CAs of a PEM file (empty: the
// system roots). No ALPN is offered (3.3, 4.2).
func tlsConfig(serverName, caFile string, skipVerify bool) (*tls.Config, error) {
	cfg := &tls.Config{ServerName: serverName, InsecureSkipVerify: skipVerify, MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("client: read tls ca file: %w: %w", wire.ErrInvalidTlsCertificatePath, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("client: %s holds no PEM certificate: %w", caFile, wire.ErrInvalidTlsCertificate)
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}

func (t *TCPTransport) Name() string { return "tcp" }

func (t *TCPTransport) Dial(ctx context.Context, addr string) (Conn, error) {
	d := net.Dialer{LocalAddr: t.LocalAddr}
	raw, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("client: dial %s: %w: %w", addr, wire.ErrCannotEstablishConnection, err)
	}
	if tc, ok := raw.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(t.NoDelay)
	}
	nc := raw
	if t.TLS != nil {
		cfg := t.TLS.Clone()
		if cfg.ServerName == "" {
			host, _, _ := net.SplitHostPort(addr)
			cfg.ServerName = host
		}
		tc := tls.Client(raw, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			raw.Close()
			return nil, fmt.Errorf("client: tls handshake with %s: %w: %w", addr, wire.ErrCannotEstablishConnection, err)
		}
		nc = tc
	}
	return &streamConn{nc: nc, frames: newFrameReader(t.MaxFrameSize)}, nil
}

// streamConn frames a byte stream (TCP, TLS): frames back to back
// (transports.md 5.2).
type streamConn struct {
	nc     net.Conn
	frames frameReader
}

func (c *streamConn) WriteFrame(ctx context.Context, deadline time.Time, frame []byte) error {
	defer c.watch(ctx, deadline)()
	_, err := c.nc.Write(frame)
	return ioErr(ctx, err)
}

func (c *streamConn) ReadFrame(ctx context.Context, deadline time.Time) ([]byte, error) {
	defer c.watch(ctx, deadline)()
	frame, err := c.frames.read(c.nc)
	if err == nil {
		return frame, nil // before the errors.As target, which escapes (an allocation per read)
	}
	var fe *FrameError
	if errors.As(err, &fe) {
		return nil, err
	}
	return frame, ioErr(ctx, err)
}

func (c *streamConn) Close() error { return c.nc.Close() }

// watch applies the deadline to the socket and, for a cancellable ctx,
// interrupts the socket when ctx ends; the returned func undoes the hook.
func (c *streamConn) watch(ctx context.Context, deadline time.Time) func() {
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = c.nc.SetDeadline(deadline)
	if ctx.Done() == nil {
		return noop
	}
	stop := context.AfterFunc(ctx, func() { _ = c.nc.SetDeadline(time.Unix(1, 0)) })
	return func() { stop() }
}

func noop() {}

// ioErr reports a socket failure, preferring the context's reason when the
// context ended it and reporting a passed deadline as
// context.DeadlineExceeded.
func ioErr(ctx context.Context, err error) error {
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, os.ErrDeadlineExceeded):
		return context.DeadlineExceeded
	}
	return err
}

// keepReadBuf is the largest read buffer kept between replies; a larger
// reply gets a buffer of its own so one big poll does not pin memory.
const keepReadBuf = 4 << 20

// frameReader reads one frame into a reused buffer: 256 header bytes, the
// size at offset 48 checked against the limit before any body byte is read
// (client-plane.md 3, 4.4; a *FrameError otherwise), then size-256 body
// bytes. Errors of the underlying reader come back unchanged.
type frameReader struct {
	limit uint32
	rbuf  []byte
	// last is the frame the last read returned: rbuf's start, or a buffer
	// of its own when it was larger than keepReadBuf.
	last []byte
}

// newFrameReader bounds frames by limit; 0 means wire.DefaultMaxFrameSize.
func newFrameReader(limit uint32) frameReader {
	if limit == 0 {
		limit = wire.DefaultMaxFrameSize
	}
	return frameReader{limit: limit, rbuf: make([]byte, wire.HeaderSize, 4096)}
}

func (r *frameReader) read(src io.Reader) ([]byte, error) {
	r.last = nil
	if cap(r.rbuf) < wire.HeaderSize {
		r.rbuf = make([]byte, wire.HeaderSize, 4096) // after a swap that left no buffer
	}
	head := r.rbuf[:wire.HeaderSize]
	if _, err := io.ReadFull(src, head); err != nil {
		return nil, err
	}
	size, _ := wire.FrameSize(head)
	if err := wire.CheckFrameSize(size, r.limit); err != nil {
		return nil, &FrameError{Size: size}
	}
	frame := r.rbuf
	if int(size) > cap(frame) {
		frame = make([]byte, size)
		copy(frame, head)
		if size <= keepReadBuf {
			r.rbuf = frame
		}
	}
	frame = frame[:size]
	if _, err := io.ReadFull(src, frame[wire.HeaderSize:]); err != nil {
		return nil, err
	}
	r.last = frame
	return frame, nil
}

// swap hands over the buffer that holds the frame the last read returned
// and takes buf as the next read buffer (nil: the next read allocates).
// The caller owns the returned bytes; the reader keeps no reference.
func (r *frameReader) swap(buf []byte) []byte {
	held := r.last
	r.rbuf, r.last = buf[:0], nil
	return held
}

// readBufferSwapper is the optional Conn extension behind the zero-copy
// poll (PollMessagesInto): SwapReadBuffer hands the caller the buffer that
// holds the frame the last ReadFrame returned, whole, and takes buf as the
// buffer of the next read. The binary carriages (TCP, TLS, QUIC,
// WebSocket) implement it; a Conn without it gets its reply copied.
type readBufferSwapper interface {
	SwapReadBuffer(buf []byte) []byte
}

func (c *streamConn) SwapReadBuffer(buf []byte) []byte { return c.frames.swap(buf) }
