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
// QUIC and WebSocket plug in as further implementations without touching the
// commands.
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
	// *FrameError otherwise. The returned bytes are valid until the next call.
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

// ErrTransportNotSupported is returned by Connect for the schemes that parse
// but have no carriage yet (quic, ws, http) unless Options.Dialer is set.
var ErrTransportNotSupported = errors.New("client: transport not yet supported")

// TCPTransport dials TCP or, with TLS set, TCP+TLS (transports.md 5).
type TCPTransport struct {
	// TLS is nil for plain TCP.
	TLS *tls.Config
	// NoDelay sets TCP_NODELAY; the SDKs leave Nagle on by default (5.2).
	NoDelay bool
	// MaxFrameSize bounds a reply frame; 0 means wire.DefaultMaxFrameSize.
	MaxFrameSize uint32
}

// NewTCPTransport builds the TCP transport the options describe. With TLS
// enabled, certificates are verified unless InsecureSkipVerify is set; the
// server name is TLS.Domain, else the host part of addr (transports.md 3.3).
func NewTCPTransport(o Options) (*TCPTransport, error) {
	t := &TCPTransport{NoDelay: o.NoDelay, MaxFrameSize: o.MaxFrameSize}
	if !o.TLS.Enabled {
		return t, nil
	}
	cfg := &tls.Config{ServerName: o.TLS.Domain, InsecureSkipVerify: o.TLS.InsecureSkipVerify, MinVersion: tls.VersionTLS12}
	if o.TLS.CAFile != "" {
		pem, err := os.ReadFile(o.TLS.CAFile)
		if err != nil {
			return nil, fmt.Errorf("client: read tls ca file: %w: %w", wire.ErrInvalidTlsCertificatePath, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("client: %s holds no PEM certificate: %w", o.TLS.CAFile, wire.ErrInvalidTlsCertificate)
		}
		cfg.RootCAs = pool
	}
	t.TLS = cfg
	return t, nil
}

func (t *TCPTransport) Name() string { return "tcp" }

func (t *TCPTransport) Dial(ctx context.Context, addr string) (Conn, error) {
	var d net.Dialer
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
	limit := t.MaxFrameSize
	if limit == 0 {
		limit = wire.DefaultMaxFrameSize
	}
	return &streamConn{nc: nc, limit: limit, rbuf: make([]byte, wire.HeaderSize, 4096)}, nil
}

// streamConn frames a byte stream (TCP, TLS): read 256 bytes, take the size
// at 48, read the rest (client-plane.md 3).
type streamConn struct {
	nc    net.Conn
	limit uint32
	rbuf  []byte
}

// keepReadBuf is the largest read buffer kept between replies; a larger
// reply gets a buffer of its own so one big poll does not pin memory.
const keepReadBuf = 4 << 20

func (c *streamConn) WriteFrame(ctx context.Context, deadline time.Time, frame []byte) error {
	defer c.watch(ctx, deadline)()
	_, err := c.nc.Write(frame)
	return c.ioErr(ctx, err)
}

func (c *streamConn) ReadFrame(ctx context.Context, deadline time.Time) ([]byte, error) {
	defer c.watch(ctx, deadline)()
	head := c.rbuf[:wire.HeaderSize]
	if _, err := io.ReadFull(c.nc, head); err != nil {
		return nil, c.ioErr(ctx, err)
	}
	size, _ := wire.FrameSize(head)
	if err := wire.CheckFrameSize(size, c.limit); err != nil {
		return nil, &FrameError{Size: size}
	}
	frame := c.rbuf
	if int(size) > cap(frame) {
		frame = make([]byte, size)
		copy(frame, head)
		if size <= keepReadBuf {
			c.rbuf = frame
		}
	}
	frame = frame[:size]
	if _, err := io.ReadFull(c.nc, frame[wire.HeaderSize:]); err != nil {
		return nil, c.ioErr(ctx, err)
	}
	return frame, nil
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
func (c *streamConn) ioErr(ctx context.Context, err error) error {
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
