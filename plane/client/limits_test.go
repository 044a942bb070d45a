package clientplane_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/quic-go/quic-go"

	"iggynode/internal/framebuf"
	clientplane "iggynode/plane/client"
	"iggynode/wire"
)

// The limits of the package doc ("Limits"), on every transport, with real
// sockets on loopback.

// limitWait bounds every wait of these tests for the server to act.
const limitWait = 5 * time.Second

// testClient is one client connection on any transport.
type testClient interface {
	// roundTrip sends a whole frame and returns the reply; an error if
	// the server closed the connection or (QUIC) abandoned the stream.
	roundTrip(frame []byte) ([]byte, error)
	// writePartial sends bytes of a frame in progress (QUIC: on one
	// stream, opened by the first call, never finished).
	writePartial(b []byte) error
	// send sends whole frames without reading a reply (stream transports
	// only: QUIC carries one request per stream).
	send(frames ...[]byte) error
	// refused waits for the server to give up on the frame in progress:
	// TCP, TLS and WebSocket close the connection, QUIC abandons the
	// stream. It returns the frames read before that.
	refused() ([][]byte, bool)
	// closed waits for the server to close the connection.
	closed() bool
	close()
}

type transportCase struct {
	name   string
	stream bool // TCP, TLS, WS, WSS: one frameConn per connection
	listen func(t *testing.T, cfg clientplane.Config, h clientplane.Handler) (addr string, stop func())
	// dial connects from the loopback address local ("": any); an error
	// means the server refused the connection during its handshake.
	dial func(t *testing.T, addr, local string) (testClient, error)
}

func (tc transportCase) mustDial(t *testing.T, addr, local string) testClient {
	t.Helper()
	c, err := tc.dial(t, addr, local)
	if err != nil {
		t.Fatalf("%s dial: %v", tc.name, err)
	}
	return c
}

// refusedAtDial reports whether a connection is refused: at the handshake
// or closed right after.
func (tc transportCase) refusedAtDial(t *testing.T, addr, local string) bool {
	t.Helper()
	c, err := tc.dial(t, addr, local)
	if err != nil {
		return true
	}
	defer c.close()
	return c.closed()
}

// limitTransports are TCP, TCP+TLS, WebSocket, WSS and QUIC.
func limitTransports(t *testing.T) []transportCase {
	ss := generate(t)
	clientTLS := &tls.Config{RootCAs: ss.CertPool(), ServerName: "localhost"}
	listenTCP := func(tlsConf *tls.Config) func(*testing.T, clientplane.Config, clientplane.Handler) (string, func()) {
		return func(t *testing.T, cfg clientplane.Config, h clientplane.Handler) (string, func()) {
			cfg.TLS = tlsConf
			l, err := clientplane.ListenTCP("127.0.0.1:0", cfg, h)
			if err != nil {
				t.Fatal(err)
			}
			return l.Addr().String(), l.Close
		}
	}
	listenWS := func(tlsConf *tls.Config) func(*testing.T, clientplane.Config, clientplane.Handler) (string, func()) {
		return func(t *testing.T, cfg clientplane.Config, h clientplane.Handler) (string, func()) {
			cfg.TLS = tlsConf
			l := listenWS(t, cfg, h)
			return l.Addr().String(), l.Close
		}
	}
	return []transportCase{
		{name: "tcp", stream: true, listen: listenTCP(nil), dial: func(t *testing.T, addr, local string) (testClient, error) {
			nc, err := localDialer(local).Dial("tcp", addr)
			if err != nil {
				t.Fatal(err) // the kernel accepts before the listener sees it
			}
			return &streamClient{nc: nc}, nil
		}},
		{name: "tls", stream: true, listen: listenTCP(ss.ServerConfig()), dial: func(t *testing.T, addr, local string) (testClient, error) {
			nc, err := tls.DialWithDialer(localDialer(local), "tcp", addr, clientTLS)
			if err != nil {
				return nil, err
			}
			return &streamClient{nc: nc}, nil
		}},
		{name: "ws", stream: true, listen: listenWS(nil), dial: func(t *testing.T, addr, local string) (testClient, error) {
			return dialWSFrom("ws://"+addr+"/", local, nil)
		}},
		{name: "wss", stream: true, listen: listenWS(ss.ServerConfig()), dial: func(t *testing.T, addr, local string) (testClient, error) {
			return dialWSFrom("wss://"+addr+"/", local, clientTLS)
		}},
		{name: "quic", listen: func(t *testing.T, cfg clientplane.Config, h clientplane.Handler) (string, func()) {
			cfg.TLS = ss.QUICConfig()
			l, err := clientplane.ListenQUIC("127.0.0.1:0", cfg, quicTestConfig(), h)
			if err != nil {
				t.Fatal(err)
			}
			return l.Addr().String(), l.Close
		}, dial: func(t *testing.T, addr, local string) (testClient, error) {
			return dialQUICFrom(t, addr, local, clientTLS)
		}},
	}
}

func localDialer(local string) *net.Dialer {
	d := &net.Dialer{Timeout: limitWait}
	if local != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(local)}
	}
	return d
}

// streamClient is a TCP or TLS connection.
type streamClient struct{ nc net.Conn }

func (c *streamClient) roundTrip(frame []byte) ([]byte, error) {
	_ = c.nc.SetDeadline(time.Now().Add(limitWait))
	if _, err := c.nc.Write(frame); err != nil {
		return nil, err
	}
	return readStreamFrame(c.nc)
}

func (c *streamClient) writePartial(b []byte) error {
	_ = c.nc.SetWriteDeadline(time.Now().Add(limitWait))
	_, err := c.nc.Write(b)
	return err
}

func (c *streamClient) refused() ([][]byte, bool) {
	_ = c.nc.SetReadDeadline(time.Now().Add(limitWait))
	var frames [][]byte
	for {
		f, err := readStreamFrame(c.nc)
		if err != nil {
			var ne net.Error
			return frames, !(errors.As(err, &ne) && ne.Timeout())
		}
		frames = append(frames, f)
	}
}

func (c *streamClient) send(frames ...[]byte) error { return c.writePartial(bytes.Join(frames, nil)) }

func (c *streamClient) closed() bool { _, ok := c.refused(); return ok }
func (c *streamClient) close()       { _ = c.nc.Close() }

// wsClient is a WebSocket connection; writePartial sends raw fragments of
// one binary message that never ends.
type wsClient struct {
	ws      *websocket.Conn
	started bool
}

func dialWSFrom(url, local string, tlsConf *tls.Config) (testClient, error) {
	d := websocket.Dialer{HandshakeTimeout: limitWait, TLSClientConfig: tlsConf, NetDial: localDialer(local).Dial}
	ws, _, err := d.Dial(url, nil)
	if err != nil {
		return nil, err
	}
	return &wsClient{ws: ws}, nil
}

func (c *wsClient) roundTrip(frame []byte) ([]byte, error) {
	_ = c.ws.SetWriteDeadline(time.Now().Add(limitWait))
	if err := c.ws.WriteMessage(websocket.BinaryMessage, frame); err != nil {
		return nil, err
	}
	_ = c.ws.SetReadDeadline(time.Now().Add(limitWait))
	_, reply, err := c.ws.ReadMessage()
	return reply, err
}

// writePartial writes b as one non-final fragment (RFC 6455 5.2, masked
// with a zero key, so the payload is sent as is).
func (c *wsClient) writePartial(b []byte) error {
	opcode := byte(websocket.BinaryMessage)
	if c.started {
		opcode = 0 // continuation
	}
	c.started = true
	frame := []byte{opcode}
	switch n := len(b); {
	case n < 126:
		frame = append(frame, 0x80|byte(n))
	case n <= 0xFFFF:
		frame = append(frame, 0x80|126, byte(n>>8), byte(n))
	default:
		frame = append(frame, 0x80|127)
		frame = binary.BigEndian.AppendUint64(frame, uint64(n))
	}
	frame = append(frame, 0, 0, 0, 0) // mask key
	frame = append(frame, b...)
	_, err := c.ws.UnderlyingConn().Write(frame)
	return err
}

func (c *wsClient) refused() ([][]byte, bool) {
	_ = c.ws.SetReadDeadline(time.Now().Add(limitWait))
	var frames [][]byte
	for {
		_, f, err := c.ws.ReadMessage()
		if err != nil {
			var ne net.Error
			return frames, !(errors.As(err, &ne) && ne.Timeout())
		}
		frames = append(frames, f)
	}
}

func (c *wsClient) send(frames ...[]byte) error {
	for _, f := range frames {
		if err := c.ws.WriteMessage(websocket.BinaryMessage, f); err != nil {
			return err
		}
	}
	return nil
}

func (c *wsClient) closed() bool { _, ok := c.refused(); return ok }
func (c *wsClient) close()       { _ = c.ws.Close() }

// quicClient is a QUIC connection, one stream per request.
type quicClient struct {
	qc      *quic.Conn
	udp     net.PacketConn
	partial *quic.Stream
}

func dialQUICFrom(t *testing.T, addr, local string, tlsConf *tls.Config) (testClient, error) {
	t.Helper()
	if local == "" {
		local = "127.0.0.1"
	}
	udp, err := net.ListenPacket("udp", net.JoinHostPort(local, "0"))
	if err != nil {
		t.Fatal(err)
	}
	raddr, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), limitWait)
	defer cancel()
	qc, err := quic.Dial(ctx, udp, raddr, tlsConf, &quic.Config{MaxIdleTimeout: 10 * time.Second, KeepAlivePeriod: 2 * time.Second})
	if err != nil {
		_ = udp.Close()
		return nil, err
	}
	return &quicClient{qc: qc, udp: udp}, nil
}

func (c *quicClient) roundTrip(frame []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limitWait)
	defer cancel()
	st, err := c.qc.OpenStreamSync(ctx)
	if err != nil {
		return nil, err
	}
	_ = st.SetDeadline(time.Now().Add(limitWait))
	if _, err := st.Write(frame); err != nil {
		return nil, err
	}
	_ = st.Close()
	reply, err := io.ReadAll(st)
	if err == nil && len(reply) == 0 {
		err = errors.New("stream abandoned")
	}
	return reply, err
}

func (c *quicClient) writePartial(b []byte) error {
	if c.partial == nil {
		ctx, cancel := context.WithTimeout(context.Background(), limitWait)
		defer cancel()
		st, err := c.qc.OpenStreamSync(ctx)
		if err != nil {
			return err
		}
		c.partial = st
	}
	_ = c.partial.SetWriteDeadline(time.Now().Add(limitWait))
	_, err := c.partial.Write(b)
	return err
}

// refused: the stream ends without a reply byte (4.5).
func (c *quicClient) refused() ([][]byte, bool) {
	st := c.partial
	c.partial = nil
	if st == nil {
		return nil, false
	}
	_ = st.SetReadDeadline(time.Now().Add(limitWait))
	b, err := io.ReadAll(st)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return nil, false
	}
	st.CancelWrite(0)
	return nil, len(b) == 0
}

func (c *quicClient) send(...[]byte) error { return errors.New("quic: one request per stream") }

func (c *quicClient) closed() bool {
	select {
	case <-c.qc.Context().Done():
		return true
	case <-time.After(limitWait):
		return false
	}
}

func (c *quicClient) close() {
	_ = c.qc.CloseWithError(0, "")
	_ = c.udp.Close()
}

// limitsConfig is testConfig with its own guard applying l.
func limitsConfig(l clientplane.Limits) (clientplane.Config, *clientplane.Guard) {
	cfg := testConfig()
	cfg.Guard = clientplane.NewGuard(l, slog.New(slog.DiscardHandler))
	return cfg, cfg.Guard
}

// opFrame is a request with operation op (Register, Logout) and body.
func opFrame(op wire.Operation, request uint64, body []byte) []byte {
	f := requestFrame(request, body)
	f[176] = byte(op)
	return f
}

func loginFrame() []byte { return opFrame(wire.OpRegister, 0, nil) }

// sizedFrame is a request of size bytes in all.
func sizedFrame(request uint64, size int) []byte {
	body := make([]byte, size-wire.HeaderSize)
	for i := range body {
		body[i] = byte(i * 7)
	}
	return requestFrame(request, body)
}

func mustRoundTrip(t *testing.T, c testClient, frame []byte) []byte {
	t.Helper()
	reply, err := c.roundTrip(frame)
	if err != nil {
		t.Fatalf("round trip: %v", err)
	}
	return reply
}

func wantCount(t *testing.T, g *clientplane.Guard, r clientplane.Reason, want int64) {
	t.Helper()
	if got := g.Count(r); got != want {
		t.Errorf("%v count %d, want %d", r, got, want)
	}
}

// eventually polls cond until it holds, at most limitWait.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limitWait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, limitWait)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A 256-byte header claiming a 64 MiB frame before login is refused from
// the header alone: nothing near 64 MiB is allocated or budgeted. A frame
// of exactly PreLoginMaxFrameSize is served; one byte more is refused.
func TestPreLoginHugeHeaderIsRefusedWithoutAllocating(t *testing.T) {
	for _, tc := range limitTransports(t) {
		t.Run(tc.name, func(t *testing.T) {
			cfg, g := limitsConfig(clientplane.Limits{})
			cfg.MaxFrameSize = wire.DefaultMaxFrameSize
			h := newEcho()
			h.preLogin = true
			addr, stop := tc.listen(t, cfg, h)
			defer stop()

			c := tc.mustDial(t, addr, "")
			defer c.close()
			full := sizedFrame(1, clientplane.PreLoginMaxFrameSize)
			checkReply(t, mustRoundTrip(t, c, full), 1, full[wire.HeaderSize:])

			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			if err := c.writePartial(withSize(requestFrame(2, nil), wire.DefaultMaxFrameSize)); err != nil {
				t.Fatal(err)
			}
			if _, ok := c.refused(); !ok {
				t.Fatal("a pre-login header claiming 64 MiB was not refused")
			}
			runtime.ReadMemStats(&after)
			if grown := after.TotalAlloc - before.TotalAlloc; grown > 16<<20 {
				t.Errorf("%d bytes allocated while refusing the header, want far below 64 MiB", grown)
			}
			wantCount(t, g, clientplane.ReasonPreLoginFrame, 1)

			c2 := tc.mustDial(t, addr, "")
			defer c2.close()
			if err := c2.writePartial(sizedFrame(3, clientplane.PreLoginMaxFrameSize+1)); err != nil {
				t.Fatal(err)
			}
			if _, ok := c2.refused(); !ok {
				t.Fatal("a pre-login frame one byte over the limit was not refused")
			}
			wantCount(t, g, clientplane.ReasonPreLoginFrame, 2)
			if n := g.PartialFrameBytes(); n != 0 {
				t.Errorf("%d budget bytes still held", n)
			}
		})
	}
}

// After login the same connection sends a large frame; after logout the
// pre-login limit is back.
func TestLoggedInClientSendsLargeFrame(t *testing.T) {
	for _, tc := range limitTransports(t) {
		t.Run(tc.name, func(t *testing.T) {
			cfg, g := limitsConfig(clientplane.Limits{})
			cfg.MaxFrameSize = 16 << 20
			h := newEcho()
			h.preLogin = true
			addr, stop := tc.listen(t, cfg, h)
			defer stop()
			c := tc.mustDial(t, addr, "")
			defer c.close()
			mustRoundTrip(t, c, loginFrame())
			big := sizedFrame(5, 8<<20+12345)
			checkReply(t, mustRoundTrip(t, c, big), 5, big[wire.HeaderSize:])
			eventually(t, "budget released", func() bool { return g.PartialFrameBytes() == 0 })

			mustRoundTrip(t, c, opFrame(wire.OpLogout, 6, nil))
			// The server may close while the frame is still being written.
			if err := c.writePartial(sizedFrame(7, 64<<10)); err == nil {
				if _, ok := c.refused(); !ok {
					t.Fatal("a large frame after logout was not refused")
				}
			}
			wantCount(t, g, clientplane.ReasonPreLoginFrame, 1)
		})
	}
}

// A client that pipelines a large request right behind its Register is
// judged after the Register's reply, not before (TCP; the session answers
// late, as the connection actor does).
func TestPipelinedLoginThenLargeFrame(t *testing.T) {
	cfg, g := limitsConfig(clientplane.Limits{})
	h := &lateHandler{echoHandler: newEcho(), delay: 100 * time.Millisecond}
	h.preLogin = true
	l, err := clientplane.ListenTCP("127.0.0.1:0", cfg, h)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	nc := dialTCP(t, l.Addr().String())
	defer nc.Close()
	big := sizedFrame(2, 32<<10)
	if _, err := nc.Write(append(loginFrame(), big...)); err != nil {
		t.Fatal(err)
	}
	_ = nc.SetReadDeadline(time.Now().Add(limitWait))
	for _, want := range []uint64{0, 2} {
		reply, err := readStreamFrame(nc)
		if err != nil {
			t.Fatalf("reply to request %d: %v", want, err)
		}
		if got := binary.LittleEndian.Uint64(reply[200:]); got != want {
			t.Fatalf("reply to %d, want %d", got, want)
		}
	}
	wantCount(t, g, clientplane.ReasonPreLoginFrame, 0)
}

// lateHandler answers each connection's frames in order on a goroutine of
// its own, delay after they arrive.
type lateHandler struct {
	*echoHandler
	delay time.Duration
}

func (h *lateHandler) Open(c clientplane.Conn) clientplane.Session {
	s := &lateSession{inner: h.echoHandler.Open(c), delay: h.delay, frames: make(chan []byte, 64)}
	go s.run()
	return s
}

type lateSession struct {
	inner  clientplane.Session
	delay  time.Duration
	frames chan []byte
}

func (s *lateSession) run() {
	for f := range s.frames {
		time.Sleep(s.delay)
		s.inner.Frame(f, wire.SendVerdict{}, nil)
	}
	s.inner.Closed()
}

func (s *lateSession) Frame(buf []byte, _ wire.SendVerdict, _ *framebuf.Buf) { s.frames <- buf }
func (s *lateSession) Closed()                                               { close(s.frames) }

// Per-address and per-node caps: the connection over a cap is closed at
// once (TCP, TLS, WS: before any handshake; QUIC: 0x1003), others from
// another address are not, and a freed slot is taken again.
func TestConnectionCaps(t *testing.T) {
	for _, tc := range limitTransports(t) {
		t.Run(tc.name+"/per address", func(t *testing.T) {
			cfg, g := limitsConfig(clientplane.Limits{MaxConnectionsPerAddress: 2})
			addr, stop := tc.listen(t, cfg, newEcho())
			defer stop()
			a, b := tc.mustDial(t, addr, "127.0.0.1"), tc.mustDial(t, addr, "127.0.0.1")
			defer b.close()
			roundTrips(t, 1, roundTripper(t, a))
			roundTrips(t, 1, roundTripper(t, b))
			if !tc.refusedAtDial(t, addr, "127.0.0.1") {
				t.Fatal("third connection from one address not closed")
			}
			wantCount(t, g, clientplane.ReasonAddressCap, 1)
			other := tc.mustDial(t, addr, "127.0.0.2")
			defer other.close()
			roundTrips(t, 1, roundTripper(t, other))
			a.close()
			eventually(t, "slot freed", func() bool { return g.Connections() == 2 })
			again := tc.mustDial(t, addr, "127.0.0.1")
			defer again.close()
			roundTrips(t, 1, roundTripper(t, again))
		})
		t.Run(tc.name+"/per node", func(t *testing.T) {
			cfg, g := limitsConfig(clientplane.Limits{MaxConnections: 2})
			addr, stop := tc.listen(t, cfg, newEcho())
			defer stop()
			a, b := tc.mustDial(t, addr, "127.0.0.1"), tc.mustDial(t, addr, "127.0.0.2")
			defer a.close()
			defer b.close()
			roundTrips(t, 1, roundTripper(t, a))
			roundTrips(t, 1, roundTripper(t, b))
			if !tc.refusedAtDial(t, addr, "127.0.0.3") {
				t.Fatal("connection over the node cap not closed")
			}
			wantCount(t, g, clientplane.ReasonNodeCap, 1)
		})
	}
}

// The node cap counts every transport of a node together.
func TestConnectionCapSharedAcrossTransports(t *testing.T) {
	cases := limitTransports(t)
	cfg, g := limitsConfig(clientplane.Limits{MaxConnections: 1})
	tcp, quicCase := cases[0], cases[len(cases)-1]
	tcpAddr, stopTCP := tcp.listen(t, cfg, newEcho())
	defer stopTCP()
	quicAddr, stopQUIC := quicCase.listen(t, cfg, newEcho())
	defer stopQUIC()
	a := tcp.mustDial(t, tcpAddr, "")
	defer a.close()
	roundTrips(t, 1, roundTripper(t, a))
	if !quicCase.refusedAtDial(t, quicAddr, "") {
		t.Fatal("QUIC connection over the node cap (held by TCP) not closed")
	}
	wantCount(t, g, clientplane.ReasonNodeCap, 1)
}

func roundTripper(t *testing.T, c testClient) func([]byte) []byte {
	return func(frame []byte) []byte { t.Helper(); return mustRoundTrip(t, c, frame) }
}

// A connection that does not log in within LoginTimeout is closed (pings
// do not count); one that logs in is not, until it logs out and the
// deadline runs again.
func TestLoginDeadline(t *testing.T) {
	for _, tc := range limitTransports(t) {
		t.Run(tc.name, func(t *testing.T) {
			cfg, g := limitsConfig(clientplane.Limits{LoginTimeout: 300 * time.Millisecond})
			h := newEcho()
			h.preLogin = true
			addr, stop := tc.listen(t, cfg, h)
			defer stop()
			lazy := tc.mustDial(t, addr, "")
			defer lazy.close()
			roundTrips(t, 1, roundTripper(t, lazy))
			if !lazy.closed() {
				t.Fatal("connection without login not closed")
			}
			wantCount(t, g, clientplane.ReasonLoginDeadline, 1)

			c := tc.mustDial(t, addr, "")
			defer c.close()
			mustRoundTrip(t, c, loginFrame())
			time.Sleep(600 * time.Millisecond) // twice the deadline
			roundTrips(t, 1, roundTripper(t, c))
			wantCount(t, g, clientplane.ReasonLoginDeadline, 1)
			mustRoundTrip(t, c, opFrame(wire.OpLogout, 9, nil))
			if !c.closed() {
				t.Fatal("connection logged out not closed at the login deadline")
			}
			wantCount(t, g, clientplane.ReasonLoginDeadline, 2)
		})
	}
}

// A logged-in connection that sends nothing for IdleTimeout is closed,
// told Eviction(StaleClient) first on TCP, TLS and WebSocket; one that
// pings is kept, and so is one waiting for a reply.
func TestIdleTimeout(t *testing.T) {
	const idle = 400 * time.Millisecond
	for _, tc := range limitTransports(t) {
		t.Run(tc.name, func(t *testing.T) {
			cfg, g := limitsConfig(clientplane.Limits{IdleTimeout: idle})
			h := newEcho()
			h.hold = map[uint64]bool{77: true}
			addr, stop := tc.listen(t, cfg, h)
			defer stop()

			quiet := tc.mustDial(t, addr, "")
			defer quiet.close()
			roundTrips(t, 1, roundTripper(t, quiet))
			if tc.stream {
				frames, ok := quiet.refused()
				if !ok {
					t.Fatal("idle connection not closed")
				}
				if len(frames) != 1 || wire.HeaderOf(frames[0]).Command() != wire.CmdEviction ||
					wire.HeaderOf(frames[0]).Eviction().Reason != wire.EvictStaleClient {
					t.Fatalf("frames before close %d, want one Eviction(StaleClient)", len(frames))
				}
				if e, err := wire.DecodeEvictionHeader(wire.HeaderOf(frames[0])); err != nil || e.Client != (wire.U128{Lo: 7}) {
					t.Errorf("eviction %+v (%v), want a valid one for client 7", e, err)
				}
			} else if !quiet.closed() {
				t.Fatal("idle connection not closed")
			}
			wantCount(t, g, clientplane.ReasonIdleTimeout, 1)

			busy := tc.mustDial(t, addr, "")
			defer busy.close()
			for end := time.Now().Add(3 * idle); time.Now().Before(end); time.Sleep(idle / 8) {
				roundTrips(t, 1, roundTripper(t, busy))
			}
			busy.close()
			wantCount(t, g, clientplane.ReasonIdleTimeout, 1)

			if !tc.stream {
				return // QUIC serves one request at a time: a held one blocks the loop
			}
			waiting := tc.mustDial(t, addr, "")
			defer waiting.close()
			if err := waiting.send(requestFrame(77, nil)); err != nil {
				t.Fatal(err)
			}
			time.Sleep(3 * idle)
			roundTrips(t, 1, roundTripper(t, waiting))
			wantCount(t, g, clientplane.ReasonIdleTimeout, 1)
		})
	}
}

// A frame whose header arrived but whose body stalls (slowloris) is given
// up at FrameTimeout: TCP, TLS and WS close, QUIC abandons the stream and
// keeps serving.
func TestSlowlorisFrameClosedAtDeadline(t *testing.T) {
	for _, tc := range limitTransports(t) {
		t.Run(tc.name, func(t *testing.T) {
			cfg, g := limitsConfig(clientplane.Limits{FrameTimeout: 300 * time.Millisecond})
			addr, stop := tc.listen(t, cfg, newEcho())
			defer stop()
			c := tc.mustDial(t, addr, "")
			defer c.close()
			roundTrips(t, 1, roundTripper(t, c))
			frame := sizedFrame(2, 2000)
			if err := c.writePartial(frame[:wire.HeaderSize+10]); err != nil {
				t.Fatal(err)
			}
			if _, ok := c.refused(); !ok {
				t.Fatal("stalled frame not given up")
			}
			wantCount(t, g, clientplane.ReasonFrameDeadline, 1)
			if !tc.stream {
				roundTrips(t, 2, roundTripper(t, c))
			}
		})
	}
}

// A frame that finds the budget held by others waits for it within its
// deadline: here the first frame stalls, is given up at its deadline, and
// the second then completes.
func TestFrameBudgetWaitsForRelease(t *testing.T) {
	for _, tc := range limitTransports(t) {
		t.Run(tc.name, func(t *testing.T) {
			cfg, g := limitsConfig(clientplane.Limits{FrameBudget: 1536 << 10, FrameTimeout: time.Second})
			cfg.MaxFrameSize = 4 << 20
			addr, stop := tc.listen(t, cfg, newEcho())
			defer stop()
			staller := tc.mustDial(t, addr, "")
			defer staller.close()
			stalled := sizedFrame(1, 2<<20)
			if err := staller.writePartial(stalled[:300<<10]); err != nil {
				t.Fatal(err)
			}
			eventually(t, "the stalled frame holds 1 MiB", func() bool { return g.PartialFrameBytes() >= 1<<20 })
			// Grown from what arrived (300 KiB), not from the 2 MiB claimed.
			if n := g.PartialFrameBytes(); n >= 2<<20 {
				t.Fatalf("a frame with 300 KiB of 2 MiB in holds %d bytes", n)
			}

			// The second frame's own deadline must come well after the
			// stalled one's, or both expire together and the test races.
			time.Sleep(400 * time.Millisecond)
			c := tc.mustDial(t, addr, "")
			defer c.close()
			frame := sizedFrame(2, 1<<20)
			checkReply(t, mustRoundTrip(t, c, frame), 2, frame[wire.HeaderSize:])
			if _, ok := staller.refused(); !ok {
				t.Fatal("stalled frame not given up")
			}
			wantCount(t, g, clientplane.ReasonFrameDeadline, 1)
			wantCount(t, g, clientplane.ReasonBudget, 0)
			eventually(t, "budget released", func() bool { return g.PartialFrameBytes() == 0 })
		})
	}
}

// A frame that cannot get budget before its deadline is refused
// (ReasonBudget); the node serves again once the holder goes. The budget
// is held by a complete frame waiting behind an unanswered request
// (MaxPending 1), which only the stream transports pipeline.
func TestFrameBudgetExhaustedRefusesAtDeadline(t *testing.T) {
	for _, tc := range limitTransports(t) {
		if !tc.stream {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			cfg, g := limitsConfig(clientplane.Limits{FrameBudget: 512 << 10, FrameTimeout: 500 * time.Millisecond})
			cfg.MaxFrameSize = 1 << 20
			cfg.MaxPending = 1
			h := newEcho()
			h.hold = map[uint64]bool{1: true}
			addr, stop := tc.listen(t, cfg, h)
			defer stop()
			holder := tc.mustDial(t, addr, "")
			defer holder.close()
			holderConn := <-h.conns
			if err := holder.send(requestFrame(1, nil), sizedFrame(2, 400<<10)); err != nil {
				t.Fatal(err)
			}
			eventually(t, "the waiting frame holds 400 KiB", func() bool { return g.PartialFrameBytes() >= 400<<10 })

			c := tc.mustDial(t, addr, "")
			defer c.close()
			if _, err := c.roundTrip(sizedFrame(3, 200<<10)); err == nil {
				t.Fatal("frame served without budget")
			}
			wantCount(t, g, clientplane.ReasonBudget, 1)

			holderConn.Done() // request 1 answered: request 2 is delivered
			eventually(t, "budget released", func() bool { return g.PartialFrameBytes() == 0 })
			after := tc.mustDial(t, addr, "")
			defer after.close()
			frame := sizedFrame(4, 200<<10)
			checkReply(t, mustRoundTrip(t, after, frame), 4, frame[wire.HeaderSize:])
		})
	}
}

// Reasons name themselves for metrics.
func TestReasonNames(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range clientplane.Reasons {
		name := r.String()
		if name == "unknown" || seen[name] || strings.ContainsAny(name, " -") {
			t.Errorf("reason %d named %q", r, name)
		}
		seen[name] = true
	}
}
