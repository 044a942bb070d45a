package clientplane_test

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/quic-go/quic-go"

	clientplane "iggynode/plane/client"
	"iggynode/wire"
)

func quicTestConfig() clientplane.QUICConfig {
	q := clientplane.DefaultQUICConfig()
	q.ReplyBackstop = 5 * time.Second
	q.StreamReadTimeout = 5 * time.Second
	return q
}

func listenQUIC(t *testing.T, ss *clientplane.SelfSigned, q clientplane.QUICConfig, h clientplane.Handler) *clientplane.QUICListener {
	t.Helper()
	cfg := testConfig()
	cfg.TLS = ss.QUICConfig()
	l, err := clientplane.ListenQUIC("127.0.0.1:0", cfg, q, h)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// dialQUIC connects like the SDK: no ALPN, server name localhost,
// certificate verified against the generated one.
func dialQUIC(t *testing.T, ss *clientplane.SelfSigned, addr string) *quic.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	qc, err := quic.DialAddr(ctx, addr, &tls.Config{RootCAs: ss.CertPool(), ServerName: "localhost"},
		&quic.Config{MaxIdleTimeout: 10 * time.Second, KeepAlivePeriod: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return qc
}

// quicRequest carries one frame the SDK way (4.4): a new stream, the
// frame, FIN, then the stream read to its end. An abandoned stream reads
// empty.
func quicRequest(t *testing.T, qc *quic.Conn, frame []byte) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := qc.OpenStreamSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_ = st.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := st.Write(frame); err != nil {
		t.Fatal(err)
	}
	_ = st.Close()
	reply, err := io.ReadAll(st)
	if err != nil {
		t.Fatal(err)
	}
	return reply
}

func quicExchange(t *testing.T, qc *quic.Conn) func([]byte) []byte {
	return func(frame []byte) []byte { t.Helper(); return quicRequest(t, qc, frame) }
}

// transports.md 4.4: one stream per request, served one after another.
func TestQUICRoundTripInOrder(t *testing.T) {
	ss := generate(t)
	l := listenQUIC(t, ss, quicTestConfig(), newEcho())
	defer l.Close()
	qc := dialQUIC(t, ss, l.Addr().String())
	defer qc.CloseWithError(0, "")
	if p := qc.ConnectionState().TLS.NegotiatedProtocol; p != "" {
		t.Errorf("ALPN %q negotiated, want none", p)
	}
	if v := qc.ConnectionState().TLS.Version; v != tls.VersionTLS13 {
		t.Errorf("TLS version %x, want 1.3", v)
	}
	roundTrips(t, 8, quicExchange(t, qc))
}

// With a nil Config.TLS the listener serves a generated certificate (the
// shipped quic.certificate.self_signed = true).
func TestQUICDefaultSelfSigned(t *testing.T) {
	cfg := testConfig()
	l, err := clientplane.ListenQUIC("127.0.0.1:0", cfg, quicTestConfig(), newEcho())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	qc, err := quic.DialAddr(ctx, l.Addr().String(), &tls.Config{InsecureSkipVerify: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer qc.CloseWithError(0, "")
	roundTrips(t, 2, quicExchange(t, qc))
}

// transports.md 4.5: a framing error abandons only its stream (empty
// answer); the next stream on the same connection is served.
func TestQUICBadFrameAbandonsOnlyItsStream(t *testing.T) {
	ss := generate(t)
	h := newEcho()
	l := listenQUIC(t, ss, quicTestConfig(), h)
	defer l.Close()
	qc := dialQUIC(t, ss, l.Addr().String())
	defer qc.CloseWithError(0, "")
	cases := append(badFrames(), struct {
		name  string
		frame []byte
	}{"stream ends before size bytes", withSize(requestFrame(1, []byte("abc")), 400)})
	for i, tc := range cases {
		if reply := quicRequest(t, qc, tc.frame); len(reply) != 0 {
			t.Errorf("%s: %d reply bytes on an abandoned stream", tc.name, len(reply))
		}
		request := uint64(100 + i)
		checkReply(t, quicRequest(t, qc, requestFrame(request, []byte("next"))), request, []byte("next"))
	}
	if n := h.opened.Load(); n != 1 {
		t.Errorf("%d sessions, want the one connection kept", n)
	}
}

// transports.md 4.4 Go note: a client that never sends FIN still gets its
// reply, and its next stream opens (stream limit 1).
func TestQUICStreamWithoutFIN(t *testing.T) {
	ss := generate(t)
	l := listenQUIC(t, ss, quicTestConfig(), newEcho())
	defer l.Close()
	qc := dialQUIC(t, ss, l.Addr().String())
	defer qc.CloseWithError(0, "")
	for i := uint64(1); i <= 3; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		st, err := qc.OpenStreamSync(ctx)
		cancel()
		if err != nil {
			t.Fatalf("stream %d: %v", i, err)
		}
		_ = st.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := st.Write(requestFrame(i, []byte("no fin"))); err != nil {
			t.Fatal(err)
		}
		reply, err := io.ReadAll(st)
		if err != nil {
			t.Fatal(err)
		}
		checkReply(t, reply, i, []byte("no fin"))
	}
}

// A stream whose frame never completes holds only its own connection, and
// only until StreamReadTimeout; then it is abandoned and the connection
// serves its next stream.
func TestQUICStalledStreamDoesNotWedge(t *testing.T) {
	ss := generate(t)
	q := quicTestConfig()
	q.StreamReadTimeout = 500 * time.Millisecond
	l := listenQUIC(t, ss, q, newEcho())
	defer l.Close()
	stalled := dialQUIC(t, ss, l.Addr().String())
	defer stalled.CloseWithError(0, "")
	st, err := stalled.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Write(requestFrame(1, []byte("half"))[:100]); err != nil {
		t.Fatal(err)
	}
	// Another connection is served while the first one stalls.
	other := dialQUIC(t, ss, l.Addr().String())
	defer other.CloseWithError(0, "")
	start := time.Now()
	roundTrips(t, 3, quicExchange(t, other))
	if d := time.Since(start); d > 400*time.Millisecond {
		t.Errorf("other connection took %v", d)
	}
	// The stalled stream is abandoned: it ends with no reply data.
	_ = st.SetReadDeadline(time.Now().Add(5 * time.Second))
	if reply, err := io.ReadAll(st); err != nil || len(reply) != 0 {
		t.Fatalf("stalled stream: %d bytes, err %v; want an empty end", len(reply), err)
	}
	roundTrips(t, 2, quicExchange(t, stalled))
}

// transports.md 4.4: a stale Reply (another request number) is discarded;
// an Eviction answers whichever stream waits.
func TestQUICReplyMatching(t *testing.T) {
	ss := generate(t)
	h := newEcho()
	h.stale = map[uint64]bool{2: true}
	h.evict = map[uint64]bool{3: true}
	l := listenQUIC(t, ss, quicTestConfig(), h)
	defer l.Close()
	qc := dialQUIC(t, ss, l.Addr().String())
	defer qc.CloseWithError(0, "")
	checkReply(t, quicRequest(t, qc, requestFrame(2, []byte("x"))), 2, []byte("x"))
	ev := quicRequest(t, qc, requestFrame(3, nil))
	if len(ev) != wire.HeaderSize || wire.HeaderOf(ev).Command() != wire.CmdEviction {
		t.Fatalf("request 3: %d bytes, want the 256-byte Eviction", len(ev))
	}
	checkReply(t, quicRequest(t, qc, requestFrame(4, nil)), 4, nil)

	// An unsolicited Eviction sent while no stream waits answers the next
	// stream; that request's own late reply is then stale for the stream
	// after it.
	conn := <-h.conns
	if conn.Transport() != clientplane.TransportQUIC {
		t.Fatalf("transport %v", conn.Transport())
	}
	conn.Send(evictionFrame())
	ev = quicRequest(t, qc, requestFrame(5, nil))
	if len(ev) != wire.HeaderSize || wire.HeaderOf(ev).Command() != wire.CmdEviction {
		t.Fatalf("request 5: %d bytes, want the queued Eviction", len(ev))
	}
	checkReply(t, quicRequest(t, qc, requestFrame(6, []byte("six"))), 6, []byte("six"))
}

// transports.md 4.5: no reply within the backstop closes the connection
// with 0x1003.
func TestQUICReplyBackstopClosesConnection(t *testing.T) {
	ss := generate(t)
	h := newEcho()
	h.silent = map[uint64]bool{9: true}
	q := quicTestConfig()
	q.ReplyBackstop = 300 * time.Millisecond
	l := listenQUIC(t, ss, q, h)
	defer l.Close()
	qc := dialQUIC(t, ss, l.Addr().String())
	defer qc.CloseWithError(0, "")
	roundTrips(t, 1, quicExchange(t, qc))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := qc.OpenStreamSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = st.Write(requestFrame(9, nil))
	_ = st.Close()
	select {
	case <-qc.Context().Done():
	case <-time.After(5 * time.Second):
		t.Fatal("connection still open after the backstop")
	}
	var appErr *quic.ApplicationError
	if err := context.Cause(qc.Context()); !errors.As(err, &appErr) || appErr.ErrorCode != 0x1003 || !appErr.Remote {
		t.Fatalf("close cause %v, want remote application error 0x1003", err)
	}
	h.waitClosed(t, clientplane.TransportQUIC)
}

func TestQUICStopAcceptingAndCloseLeaveNoGoroutines(t *testing.T) {
	check := goroutineBaseline(t)
	ss := generate(t)
	h := newEcho()
	l := listenQUIC(t, ss, quicTestConfig(), h)
	addr := l.Addr().String()
	qc := dialQUIC(t, ss, addr)
	roundTrips(t, 2, quicExchange(t, qc))
	l.StopAccepting()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	if c, err := quic.DialAddr(ctx, addr, &tls.Config{RootCAs: ss.CertPool(), ServerName: "localhost"}, nil); err == nil {
		c.CloseWithError(0, "")
		t.Error("dial succeeded after StopAccepting")
	}
	cancel()
	roundTrips(t, 2, quicExchange(t, qc))
	l.Close()
	select {
	case <-qc.Context().Done():
	case <-time.After(5 * time.Second):
		t.Fatal("client connection still open after Close")
	}
	var appErr *quic.ApplicationError
	if err := context.Cause(qc.Context()); !errors.As(err, &appErr) || appErr.ErrorCode != 0x1003 {
		t.Errorf("close cause %v, want 0x1003 shutdown", err)
	}
	h.waitClosed(t, clientplane.TransportQUIC)
	check()
}
