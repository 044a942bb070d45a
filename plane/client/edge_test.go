package clientplane_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"iggynode/internal/framebuf"
	clientplane "iggynode/plane/client"
	"iggynode/wire"
)

// testMaxFrame is the listeners' frame limit in these tests, small enough
// to send a frame just above it.
const testMaxFrame = 64 << 10

// echoHandler answers every request with a Reply carrying the same request
// number and the request's body. Request numbers listed in silent get no
// reply, in evict an Eviction instead, in stale a stale Reply (request+1000)
// before the real one.
type echoHandler struct {
	silent map[uint64]bool
	evict  map[uint64]bool
	stale  map[uint64]bool
	// hold: neither reply nor Done, so the request stays pending.
	hold map[uint64]bool
	// splice answers every request with SendSpliced: the echo's body
	// cut into a built part and spliced runs (spliceReply).
	splice bool
	// preLogin leaves a connection logged out until a Register request
	// (operation 1) and logs it out on Logout (3); otherwise every
	// connection is logged in from the start.
	preLogin bool
	// verdicts, when set, receives the edge's batch verdict of every frame.
	verdicts chan wire.SendVerdict
	opened   atomic.Int32
	closed   chan clientplane.Transport
	conns    chan clientplane.Conn // every opened Conn
}

func newEcho() *echoHandler {
	return &echoHandler{closed: make(chan clientplane.Transport, 256), conns: make(chan clientplane.Conn, 256)}
}

func (h *echoHandler) Open(c clientplane.Conn) clientplane.Session {
	h.opened.Add(1)
	select {
	case h.conns <- c:
	default:
	}
	if !h.preLogin {
		c.SetLoggedIn(true)
	}
	return &echoSession{h: h, c: c}
}

type echoSession struct {
	h *echoHandler
	c clientplane.Conn
}

func (s *echoSession) Frame(buf []byte, batch wire.SendVerdict, _ *framebuf.Buf) {
	if s.h.verdicts != nil {
		s.h.verdicts <- batch
	}
	req := wire.HeaderOf(buf).Request()
	if s.h.hold[req.Request] {
		return
	}
	defer s.c.Done()
	switch req.Operation {
	case wire.OpRegister:
		s.c.SetLoggedIn(true)
	case wire.OpLogout:
		s.c.SetLoggedIn(false)
	}
	switch {
	case s.h.silent[req.Request]:
		return
	case s.h.evict[req.Request]:
		s.c.Send(evictionFrame())
		return
	case s.h.stale[req.Request]:
		s.c.Send(replyFrame(req.Request+1000, nil))
	}
	if s.h.splice {
		built, splices := spliceReply(replyFrame(req.Request, buf[wire.HeaderSize:]))
		s.c.SendSpliced(built, splices)
		return
	}
	s.c.Send(replyFrame(req.Request, buf[wire.HeaderSize:]))
}

// spliceReply cuts a frame into a built part (from the pool) and splices
// that put it back together: every third run of 50 body bytes is spliced
// in, including one at the very end.
func spliceReply(frame []byte) ([]byte, []wire.Splice) {
	built := clientplane.GetFrame(len(frame))
	var splices []wire.Splice
	built = append(built, frame[:wire.HeaderSize]...)
	for i, at := 0, wire.HeaderSize; at < len(frame); i, at = i+1, at+50 {
		run := frame[at:min(at+50, len(frame))]
		if i%3 == 1 || at+50 >= len(frame) {
			splices = append(splices, wire.Splice{At: len(built), Bytes: run})
		} else {
			built = append(built, run...)
		}
	}
	return built, splices
}

func (s *echoSession) Closed() {
	select {
	case s.h.closed <- s.c.Transport():
	default:
	}
}

// waitClosed waits for one Session.Closed.
func (h *echoHandler) waitClosed(t *testing.T, want clientplane.Transport) {
	t.Helper()
	select {
	case got := <-h.closed:
		if got != want {
			t.Fatalf("Closed from transport %v, want %v", got, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Session.Closed not called within 5 s")
	}
}

func requestFrame(request uint64, body []byte) []byte {
	r := wire.RequestHeader{Size: uint32(wire.HeaderSize + len(body)), Client: wire.U128{Lo: 7},
		Request: request, Session: 1, Operation: wire.OpNonReplicated, Code: wire.CodePing}
	var h wire.Header
	r.Encode(&h)
	return append(h[:], body...)
}

func replyFrame(request uint64, body []byte) []byte {
	r := wire.ReplyHeader{Size: uint32(wire.HeaderSize + len(body)), Client: wire.U128{Lo: 7},
		Request: request, Operation: wire.OpNonReplicated}
	var h wire.Header
	r.Encode(&h)
	return append(h[:], body...)
}

func evictionFrame() []byte {
	e := wire.EvictionHeader{Client: wire.U128{Lo: 7}, Reason: wire.EvictStaleClient}
	var h wire.Header
	e.Encode(&h)
	return h[:]
}

// withSize and withCommand overwrite the header's size (offset 48) and
// command (offset 60) bytes.
func withSize(frame []byte, size uint32) []byte {
	binary.LittleEndian.PutUint32(frame[48:], size)
	return frame
}

func withCommand(frame []byte, cmd byte) []byte {
	frame[60] = cmd
	return frame
}

// badFrames are the framing errors of transports.md 1.2 that every
// transport refuses.
func badFrames() []struct {
	name  string
	frame []byte
} {
	return []struct {
		name  string
		frame []byte
	}{
		{"size below 256", withSize(requestFrame(1, nil), 255)},
		{"size above max", withSize(requestFrame(1, nil), testMaxFrame+1)},
		{"command 30", withCommand(requestFrame(1, nil), 30)},
	}
}

// checkReply asserts frame is the echo reply to request with body.
func checkReply(t *testing.T, frame []byte, request uint64, body []byte) {
	t.Helper()
	if len(frame) < wire.HeaderSize {
		t.Fatalf("reply of %d bytes, want at least 256", len(frame))
	}
	h := wire.HeaderOf(frame)
	if h.Command() != wire.CmdReply {
		t.Fatalf("reply command %v, want Reply", h.Command())
	}
	if int(h.Size()) != len(frame) {
		t.Fatalf("reply size field %d, frame %d bytes", h.Size(), len(frame))
	}
	// ReplyHeader offset 200: the request number (transports.md 4.4).
	if got := binary.LittleEndian.Uint64(frame[200:]); got != request {
		t.Fatalf("reply to request %d, want %d", got, request)
	}
	if !bytes.Equal(frame[wire.HeaderSize:], body) {
		t.Fatalf("reply body %d bytes differs from the request body (%d bytes)", len(frame)-wire.HeaderSize, len(body))
	}
}

func testConfig() clientplane.Config {
	return clientplane.Config{MaxFrameSize: testMaxFrame, HandshakeGrace: 2 * time.Second,
		CloseGrace: time.Second, Logger: slog.New(slog.DiscardHandler)}
}

// goroutineBaseline returns a check that every goroutine started after it
// has ended (bounded wait).
func goroutineBaseline(t *testing.T) func() {
	t.Helper()
	before := runtime.NumGoroutine()
	return func() {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > before {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				n := runtime.Stack(buf, true)
				t.Fatalf("%d goroutines left, %d before:\n%s", runtime.NumGoroutine(), before, buf[:n])
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// readStreamFrame reads one frame off a byte stream (TCP, TLS).
func readStreamFrame(r io.Reader) ([]byte, error) {
	hdr := make([]byte, wire.HeaderSize)
	if _, err := io.ReadFull(r, hdr); err != nil {
		return nil, err
	}
	size := binary.LittleEndian.Uint32(hdr[48:])
	if size < wire.HeaderSize || size > 1<<26 {
		return nil, fmt.Errorf("bad size %d", size)
	}
	frame := make([]byte, size)
	copy(frame, hdr)
	_, err := io.ReadFull(r, frame[wire.HeaderSize:])
	return frame, err
}

// roundTrips sends n requests in order on a lockstep connection and checks
// every reply.
func roundTrips(t *testing.T, n int, exchange func(frame []byte) []byte) {
	t.Helper()
	for i := 1; i <= n; i++ {
		body := bytes.Repeat([]byte{byte(i)}, i*37)
		checkReply(t, exchange(requestFrame(uint64(i), body)), uint64(i), body)
	}
}

// expectEOF asserts the server closed the stream connection.
func expectEOF(t *testing.T, nc net.Conn) {
	t.Helper()
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	var one [1]byte
	_, err := nc.Read(one[:])
	if err == nil || strings.Contains(err.Error(), "timeout") {
		t.Fatalf("connection still open (read err %v), want it closed", err)
	}
}

func dialTCP(t *testing.T, addr string) net.Conn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return nc
}

func tcpExchange(t *testing.T, nc net.Conn) func([]byte) []byte {
	return func(frame []byte) []byte {
		t.Helper()
		_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := nc.Write(frame); err != nil {
			t.Fatal(err)
		}
		reply, err := readStreamFrame(nc)
		if err != nil {
			t.Fatal(err)
		}
		return reply
	}
}

// transports.md 5.2: back-to-back frames, replies in request order.
func TestTCPRoundTripInOrder(t *testing.T) {
	h := newEcho()
	l, err := clientplane.ListenTCP("127.0.0.1:0", testConfig(), h)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	nc := dialTCP(t, l.Addr().String())
	defer nc.Close()
	roundTrips(t, 8, tcpExchange(t, nc))

	// Pipelined frames in one write are read one by one and answered in order.
	var batch []byte
	for i := uint64(20); i < 25; i++ {
		batch = append(batch, requestFrame(i, []byte{byte(i)})...)
	}
	if _, err := nc.Write(batch); err != nil {
		t.Fatal(err)
	}
	for i := uint64(20); i < 25; i++ {
		reply, err := readStreamFrame(nc)
		if err != nil {
			t.Fatal(err)
		}
		checkReply(t, reply, i, []byte{byte(i)})
	}
}

// transports.md 1.2, 5.4: a framing error closes the TCP connection; a
// valid non-Request command is ignored and the connection kept.
func TestTCPBadFramesCloseConnection(t *testing.T) {
	h := newEcho()
	l, err := clientplane.ListenTCP("127.0.0.1:0", testConfig(), h)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, tc := range badFrames() {
		t.Run(tc.name, func(t *testing.T) {
			nc := dialTCP(t, l.Addr().String())
			defer nc.Close()
			roundTrips(t, 1, tcpExchange(t, nc))
			if _, err := nc.Write(tc.frame); err != nil {
				t.Fatal(err)
			}
			expectEOF(t, nc)
			h.waitClosed(t, clientplane.TransportTCP)
		})
	}
	t.Run("non-request command ignored", func(t *testing.T) {
		nc := dialTCP(t, l.Addr().String())
		defer nc.Close()
		if _, err := nc.Write(withCommand(requestFrame(1, nil), byte(wire.CmdReply))); err != nil {
			t.Fatal(err)
		}
		roundTrips(t, 2, tcpExchange(t, nc))
	})
}

// StopAccepting keeps open connections; Close ends them and every
// goroutine of the listener.
func TestTCPStopAcceptingAndCloseLeaveNoGoroutines(t *testing.T) {
	check := goroutineBaseline(t)
	h := newEcho()
	l, err := clientplane.ListenTCP("127.0.0.1:0", testConfig(), h)
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	nc := dialTCP(t, addr)
	defer nc.Close()
	roundTrips(t, 2, tcpExchange(t, nc))
	l.StopAccepting()
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Fatal("dial succeeded after StopAccepting")
	}
	roundTrips(t, 2, tcpExchange(t, nc))
	l.Close()
	expectEOF(t, nc)
	h.waitClosed(t, clientplane.TransportTCP)
	nc.Close()
	check()
}
