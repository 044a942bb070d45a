package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/netip"
	"strconv"
	"time"

	"github.com/quic-go/quic-go"

	"iggynode/wire"
)

// Defaults of the QUIC carriage where QUICOptions leaves a field empty
// (transports.md 8.3).
const (
	DefaultQUICServerName    = "localhost"
	DefaultQUICClientAddress = "127.0.0.1:0"
)

// quicNoIdleTimeout stands for a disabled idle timeout (max_idle_timeout=0,
// 8.3): quic-go reads 0 as its 30 s default, so the client advertises a year
// and the server's own timeout governs (4.3: the smaller one wins).
const quicNoIdleTimeout = 365 * 24 * time.Hour

// QUICTransport dials QUIC (transports.md 4): one UDP socket and one QUIC
// connection per Dial, one client-initiated bidirectional stream per
// request frame (4.4).
type QUICTransport struct {
	// TLS is the handshake configuration: TLS 1.3 (quic-go enforces it), no
	// ALPN (4.2), verification only when asked (3.3).
	TLS *tls.Config
	// Config carries the 8.3 options mapped onto quic-go.
	Config *quic.Config
	// LocalAddress is the UDP address the client binds (8.3: 127.0.0.1:0).
	LocalAddress string
	// MaxFrameSize bounds a reply frame; 0 means wire.DefaultMaxFrameSize.
	MaxFrameSize uint32
}

// NewQUICTransport builds the QUIC transport the options describe
// (transports.md 4.3, 8.3):
//
//   - validate_certificate (default false) turns verification on, against
//     QUIC.CAFile when given, else the system roots; the server name is
//     QUIC.ServerName, "localhost" when empty;
//   - keep_alive_interval is KeepAlivePeriod (0: none); max_idle_timeout is
//     MaxIdleTimeout (0: disabled, so the server's timeout applies);
//   - initial_mtu is InitialPacketSize (quic-go raises values below 1200);
//   - receive_window caps the connection receive window (initial and
//     maximum, so quic-go's auto-tuning stays inside it);
//   - max_concurrent_bidi_streams is MaxIncomingStreams (the server never
//     opens streams, so it costs nothing);
//   - response_buffer_size bounds a reply frame, below MaxFrameSize;
//   - send_window and datagram_send_buffer_size have no quic-go counterpart
//     (quic-go sends as far as the peer's window allows; datagrams are never
//     used) and are kept only as parsed values.
//
// A zero numeric field leaves quic-go's default.
func NewQUICTransport(o Options) (*QUICTransport, error) {
	q := o.QUIC
	name := q.ServerName
	if name == "" {
		name = DefaultQUICServerName
	}
	cfg, err := tlsConfig(name, q.CAFile, q.SkipCertificateVerification && !q.ValidateCertificate)
	if err != nil {
		return nil, err
	}
	cfg.MinVersion = tls.VersionTLS13
	qc := &quic.Config{
		KeepAlivePeriod:       q.KeepAliveInterval,
		MaxIdleTimeout:        q.MaxIdleTimeout,
		InitialPacketSize:     q.InitialMTU,
		MaxIncomingStreams:    int64(min(q.MaxConcurrentBidiStreams, math.MaxInt64)),
		MaxIncomingUniStreams: -1, // unidirectional streams are never used (4.3)
	}
	if qc.MaxIdleTimeout == 0 {
		qc.MaxIdleTimeout = quicNoIdleTimeout
	}
	if q.ReceiveWindow > 0 {
		qc.InitialConnectionReceiveWindow = q.ReceiveWindow
		qc.MaxConnectionReceiveWindow = q.ReceiveWindow
	}
	limit := o.MaxFrameSize
	if limit == 0 {
		limit = wire.DefaultMaxFrameSize
	}
	if q.ResponseBufferSize > 0 && q.ResponseBufferSize < uint64(limit) {
		limit = uint32(q.ResponseBufferSize)
	}
	local := q.ClientAddress
	if local == "" {
		local = DefaultQUICClientAddress
	}
	if _, err := netip.ParseAddrPort(local); err != nil {
		return nil, fmt.Errorf("client: quic client address %q: %w", local, wire.ErrInvalidConfiguration)
	}
	return &QUICTransport{TLS: cfg, Config: qc, LocalAddress: local, MaxFrameSize: limit}, nil
}

func (t *QUICTransport) Name() string { return TransportQUIC }

// Dial binds a UDP socket on LocalAddress and runs the QUIC handshake with
// addr; the server name comes from TLS.ServerName, never from addr (3.3).
func (t *QUICTransport) Dial(ctx context.Context, addr string) (Conn, error) {
	fail := func(err error) (Conn, error) {
		return nil, fmt.Errorf("client: quic dial %s: %w: %w", addr, wire.ErrCannotEstablishConnection, err)
	}
	local, err := netip.ParseAddrPort(t.LocalAddress)
	if err != nil {
		return fail(err)
	}
	remote, err := resolveUDP(ctx, addr, local.Addr())
	if err != nil {
		return fail(err)
	}
	udp, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(local))
	if err != nil {
		return fail(err)
	}
	tr := &quic.Transport{Conn: udp}
	qc, err := tr.Dial(ctx, remote, t.TLS, t.Config)
	if err != nil {
		_ = tr.Close()
		_ = udp.Close()
		return fail(err)
	}
	return &quicConn{tr: tr, udp: udp, qc: qc, frames: newFrameReader(t.MaxFrameSize)}, nil
}

// resolveUDP resolves host:port to one UDP address of the local socket's
// family (a client bound to 127.0.0.1 can reach only IPv4); IP literals
// need no lookup.
func resolveUDP(ctx context.Context, addr string, local netip.Addr) (*net.UDPAddr, error) {
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("port %q: %w", portText, err)
	}
	network := "ip" // an unspecified bind reaches either family; IPv4 first
	switch {
	case local.IsUnspecified():
	case local.Unmap().Is4():
		network = "ip4"
	default:
		network = "ip6"
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, network, host)
	if err != nil {
		return nil, err
	}
	pick := ips[0]
	for _, ip := range ips {
		if ip.Unmap().Is4() {
			pick = ip
			break
		}
	}
	return net.UDPAddrFromAddrPort(netip.AddrPortFrom(pick.Unmap(), uint16(port))), nil
}

// quicConn carries each request on a fresh bidirectional stream
// (transports.md 4.4): WriteFrame opens it, writes the frame and finishes
// the send side (FIN); ReadFrame reads exactly one frame from it, then the
// server's FIN. A replay opens a new stream, as the SDK does (1.3).
type quicConn struct {
	tr     *quic.Transport
	udp    *net.UDPConn
	qc     *quic.Conn
	stream *quic.Stream // the stream of the request in flight
	frames frameReader
	probe  [1]byte
}

func (c *quicConn) WriteFrame(ctx context.Context, deadline time.Time, frame []byte) error {
	c.abandon()
	s, err := c.qc.OpenStream()
	var limited *quic.StreamLimitReachedError
	if errors.As(err, &limited) {
		// The server grants one stream at a time (4.3): wait for the credit
		// of the previous one.
		octx, cancel := context.WithDeadline(ctx, deadline)
		s, err = c.qc.OpenStreamSync(octx)
		cancel()
	}
	if err != nil {
		return ioErr(ctx, err)
	}
	c.stream = s
	defer watchStream(ctx, deadline, s)()
	if _, err = s.Write(frame); err != nil {
		return ioErr(ctx, err)
	}
	// FIN: the request is complete (4.4 step 2). The server reads exactly
	// one frame and then cancels its read side (4.4 Go note); when its
	// STOP_SENDING beats our FIN, Close reports the cancelled stream
	// although the frame was received whole. Any real failure of the
	// connection shows up on the read of the reply.
	_ = s.Close()
	return nil
}

func (c *quicConn) SwapReadBuffer(buf []byte) []byte { return c.frames.swap(buf) }

func (c *quicConn) ReadFrame(ctx context.Context, deadline time.Time) ([]byte, error) {
	s := c.stream
	if s == nil {
		return nil, errors.New("client: quic read without a request stream")
	}
	defer watchStream(ctx, deadline, s)()
	frame, err := c.frames.read(s)
	if err != nil {
		return nil, quicReadErr(ctx, err)
	}
	// The bytes up to the server's FIN are exactly one frame (4.4 step 3).
	n, err := io.ReadFull(s, c.probe[:])
	switch {
	case n > 0:
		return nil, &ProtocolError{Reason: "bytes after the reply frame on a quic stream", Dropped: true}
	case err != io.EOF:
		return nil, ioErr(ctx, err)
	}
	c.stream = nil
	return frame, nil
}

// quicReadErr maps a failed frame read. Kept out of ReadFrame: the
// errors.As target escapes, and would cost an allocation per read.
func quicReadErr(ctx context.Context, err error) error {
	var fe *FrameError
	switch {
	case errors.As(err, &fe):
		return err
	case errors.Is(err, io.EOF):
		// The server finished the stream without a frame: it abandoned the
		// request (4.4 step 3, the SDK's EmptyResponse).
		return fmt.Errorf("client: quic stream ended without a reply frame: %w", io.ErrUnexpectedEOF)
	}
	return ioErr(ctx, err)
}

// abandon releases a stream whose exchange did not finish.
func (c *quicConn) abandon() {
	if c.stream != nil {
		c.stream.CancelRead(0)
		c.stream.CancelWrite(0)
		c.stream = nil
	}
}

// Close closes the connection with application code 0 and an empty reason,
// as the SDK does (4.5), then the socket.
func (c *quicConn) Close() error {
	err := c.qc.CloseWithError(0, "")
	_ = c.tr.Close()
	_ = c.udp.Close()
	return err
}

// watchStream applies the deadline to the stream and, for a cancellable
// ctx, expires it when ctx ends; the returned func undoes the hook.
func watchStream(ctx context.Context, deadline time.Time, s *quic.Stream) func() {
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = s.SetDeadline(deadline)
	if ctx.Done() == nil {
		return noop
	}
	stop := context.AfterFunc(ctx, func() { _ = s.SetDeadline(time.Unix(1, 0)) })
	return func() { stop() }
}
