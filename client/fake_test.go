package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/quic-go/quic-go"
)

// The fake server reads real request frames and answers with reply and
// eviction frames built by hand at the offsets of docs/framing.md and
// client-plane.md 4.4/4.5, never with wire's encoders, so a test fails if
// the client and the wire package agree on something the spec does not say.

// fakeRequest is a received request header, read at the framing.md offsets.
type fakeRequest struct {
	conn      int   // 1-based connection number on this fake
	stream    int64 // QUIC stream id; 0 on other carriages
	raw       []byte
	size      uint32
	command   uint8
	clientLo  uint64
	clientHi  uint64
	checksum  []byte // bytes 144..160
	timestamp uint64
	request   uint64
	operation uint8
	session   uint64
	userID    uint32
	code      uint32
	body      []byte
}

func parseFakeRequest(conn int, f []byte) fakeRequest {
	le := binary.LittleEndian
	return fakeRequest{
		conn: conn, raw: f,
		size:      le.Uint32(f[48:]),
		command:   f[60],
		clientLo:  le.Uint64(f[128:]),
		clientHi:  le.Uint64(f[136:]),
		checksum:  f[144:160],
		timestamp: le.Uint64(f[160:]),
		request:   le.Uint64(f[168:]),
		operation: f[176],
		session:   le.Uint64(f[184:]),
		userID:    le.Uint32(f[192:]),
		code:      le.Uint32(f[196:]),
		body:      f[256:],
	}
}

// fakeLink is the server end of one client connection on some carriage:
// it yields request frames and sends reply frames as the carriage frames
// them (transports.md 1.1).
type fakeLink interface {
	next() ([]byte, error)
	send(frame []byte)
	close()
	remote() string
}

// fakeConn is the server side of one accepted connection.
type fakeConn struct {
	id   int
	link fakeLink
}

func (c *fakeConn) send(frame []byte) { c.link.send(frame) }
func (c *fakeConn) close()            { c.link.close() }

// reply answers r with a class-A style reply: request echoed, the given
// operation, status and body.
func (c *fakeConn) reply(r fakeRequest, op uint8, status uint32, body []byte) {
	c.send(replyFrame(r.request, op, status, body))
}

// script handles a request; it returns false to fall back to the defaults.
type script func(c *fakeConn, r fakeRequest) bool

type fake struct {
	t    *testing.T
	kind string // the transport a client of this fake uses
	// address is where the fake listens; stop stops accepting.
	address string
	stop    func()

	mu      sync.Mutex
	reqs    []fakeRequest
	nconns  int
	peers   []string // the client address of each connection
	eofs    map[int]bool
	script  script
	roster  func() []byte // body for code 12; nil = one healthy leader (this fake)
	session uint64
	userID  uint32
}

// newFake serves plain TCP.
func newFake(t *testing.T) *fake { return newFakeOn(t, TransportTCP) }

// newFakeOn serves one carriage on 127.0.0.1:0: TCP, QUIC (with a
// self-signed certificate the client does not verify by default) or
// WebSocket.
func newFakeOn(t *testing.T, kind string) *fake {
	t.Helper()
	switch kind {
	case TransportQUIC:
		cert, _ := testCertificate(t)
		return startQUICFake(t, cert)
	case TransportWS:
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		return startWSFake(t, ln)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return startFake(t, ln)
}

func newFakeState(t *testing.T, kind, address string, stop func()) *fake {
	f := &fake{t: t, kind: kind, address: address, stop: stop, eofs: map[int]bool{}, session: 42, userID: 7}
	t.Cleanup(stop)
	return f
}

// startFake serves byte-stream frames (TCP, TLS) on ln.
func startFake(t *testing.T, ln net.Listener) *fake {
	f := newFakeState(t, TransportTCP, ln.Addr().String(), func() { ln.Close() })
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go f.serve(&streamLink{nc: nc})
		}
	}()
	return f
}

// startWSFake upgrades any path on ln (a TLS listener for WSS) with no
// subprotocol and no compression, the way transports.md 6.1 and its Go note
// describe the server.
func startWSFake(t *testing.T, ln net.Listener) *fake {
	up := websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}
	var f *fake
	srv := &http.Server{ErrorLog: log.New(io.Discard, "", 0), Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			t.Errorf("fake: websocket upgrade: %v", err)
			return
		}
		if p := ws.Subprotocol(); p != "" {
			t.Errorf("fake: client negotiated subprotocol %q", p)
		}
		ws.SetReadLimit(64 << 20)
		f.serve(&wsLink{t: t, ws: ws})
	})}
	f = newFakeState(t, TransportWS, ln.Addr().String(), func() { srv.Close() })
	go srv.Serve(ln)
	return f
}

// startQUICFake listens with the server settings of transports.md 4.3's Go
// note: one incoming bidirectional stream at a time, no unidirectional
// streams, no ALPN.
func startQUICFake(t *testing.T, cert tls.Certificate) *fake {
	ln, err := quic.ListenAddr("127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}}, &quic.Config{
		MaxIncomingStreams: 1, MaxIncomingUniStreams: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	f := newFakeState(t, TransportQUIC, ln.Addr().String(), func() { ln.Close() })
	go func() {
		for {
			qc, err := ln.Accept(context.Background())
			if err != nil {
				return
			}
			if p := qc.ConnectionState().TLS.NegotiatedProtocol; p != "" {
				t.Errorf("fake: client negotiated ALPN %q", p)
			}
			go f.serve(&quicLink{t: t, qc: qc})
		}
	}()
	return f
}

// streamLink: frames back to back on a byte stream.
type streamLink struct{ nc net.Conn }

func (l *streamLink) next() ([]byte, error) {
	head := make([]byte, 256)
	if _, err := io.ReadFull(l.nc, head); err != nil {
		return nil, err
	}
	size := binary.LittleEndian.Uint32(head[48:])
	if size < 256 || size > 64<<20 {
		return nil, fmt.Errorf("request size %d", size)
	}
	frame := append(head, make([]byte, size-256)...)
	_, err := io.ReadFull(l.nc, frame[256:])
	return frame, err
}

func (l *streamLink) send(frame []byte) { _, _ = l.nc.Write(frame) }
func (l *streamLink) close()            { _ = l.nc.Close() }
func (l *streamLink) remote() string    { return l.nc.RemoteAddr().String() }

// wsLink: one frame per binary message; the fake insists on exactly that
// (transports.md 6.3).
type wsLink struct {
	t  *testing.T
	ws *websocket.Conn
}

func (l *wsLink) next() ([]byte, error) {
	kind, msg, err := l.ws.ReadMessage()
	if err != nil {
		return nil, err
	}
	if kind != websocket.BinaryMessage || len(msg) < 256 || binary.LittleEndian.Uint32(msg[48:]) != uint32(len(msg)) {
		l.t.Errorf("fake: websocket request is not one binary message holding one frame (type %d, %d bytes)", kind, len(msg))
		return nil, errors.New("bad request message")
	}
	return msg, nil
}

func (l *wsLink) send(frame []byte) { _ = l.ws.WriteMessage(websocket.BinaryMessage, frame) }

// close drops the socket without a Close frame, like a crashed server.
func (l *wsLink) close() { _ = l.ws.NetConn().Close() }

func (l *wsLink) remote() string { return l.ws.RemoteAddr().String() }

// quicLink: one request and one reply per client-opened stream
// (transports.md 4.4). The fake reads the request to the client's FIN,
// so a client that never finishes its send side hangs and fails.
type quicLink struct {
	t      *testing.T
	qc     *quic.Conn
	stream *quic.Stream
}

func (l *quicLink) next() ([]byte, error) {
	s, err := l.qc.AcceptStream(context.Background())
	if err != nil {
		return nil, err
	}
	l.stream = s
	frame, err := io.ReadAll(s)
	if err != nil {
		return nil, err
	}
	if len(frame) < 256 || binary.LittleEndian.Uint32(frame[48:]) != uint32(len(frame)) {
		l.t.Errorf("fake: quic stream did not carry exactly one frame (%d bytes)", len(frame))
		return nil, errors.New("bad request stream")
	}
	return frame, nil
}

// send writes the stream's single answer and finishes it (FIN).
func (l *quicLink) send(frame []byte) {
	_, _ = l.stream.Write(frame)
	_ = l.stream.Close()
}

func (l *quicLink) close() { _ = l.qc.CloseWithError(0x1003, "shutdown") }

func (l *quicLink) remote() string { return l.qc.RemoteAddr().String() }

func (f *fake) addr() string { return f.address }

func (f *fake) port() uint16 {
	_, p, _ := net.SplitHostPort(f.addr())
	n, _ := strconv.Atoi(p)
	return uint16(n)
}

func (f *fake) setScript(s script) {
	f.mu.Lock()
	f.script = s
	f.mu.Unlock()
}

func (f *fake) requests() []fakeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeRequest(nil), f.reqs...)
}

// last returns the last request with the given operation (and code for
// operation 2).
func (f *fake) last(op uint8, code uint32) (fakeRequest, bool) {
	reqs := f.requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if reqs[i].operation == op && (op != 2 || reqs[i].code == code) {
			return reqs[i], true
		}
	}
	return fakeRequest{}, false
}

// remotes lists the client address of each connection so far.
func (f *fake) remotes() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.peers...)
}

func (f *fake) connections() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.nconns
}

// waitEOF waits until the client has closed connection id.
func (f *fake) waitEOF(id int) bool {
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		f.mu.Lock()
		done := f.eofs[id]
		f.mu.Unlock()
		if done {
			return true
		}
	}
	return false
}

// serve answers the requests of one connection in order, one at a time.
func (f *fake) serve(link fakeLink) {
	f.mu.Lock()
	f.nconns++
	f.peers = append(f.peers, link.remote())
	c := &fakeConn{id: f.nconns, link: link}
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.eofs[c.id] = true
		f.mu.Unlock()
		link.close()
	}()
	for {
		frame, err := link.next()
		if err != nil {
			return
		}
		r := parseFakeRequest(c.id, frame)
		if q, ok := link.(*quicLink); ok {
			r.stream = int64(q.stream.StreamID())
		}
		f.mu.Lock()
		f.reqs = append(f.reqs, r)
		s := f.script
		f.mu.Unlock()
		if s != nil && s(c, r) {
			continue
		}
		f.defaults(c, r)
	}
}

// defaults answers login, logout, ping and the roster; anything else gets
// a deny frame with status 3 and a test failure.
func (f *fake) defaults(c *fakeConn, r fakeRequest) {
	switch {
	case r.operation == 1:
		c.reply(r, 1, 0, loginReplyBody(f.userID, f.session))
	case r.operation == 3:
		c.reply(r, 3, 0, nil)
	case r.operation == 2 && r.code == 1:
		c.reply(r, 2, 0, nil)
	case r.operation == 2 && r.code == 12:
		body := rosterFor(f.kind, "single-node", node{"iggy-node", "127.0.0.1", f.port(), 0, 0})
		if f.roster != nil {
			body = f.roster()
		}
		c.reply(r, 2, 0, body)
	default:
		f.t.Errorf("fake: unscripted request operation %d code %d", r.operation, r.code)
		c.reply(r, r.operation, 3, nil)
	}
}

// Hand-built frames and bodies.

// replyFrame builds a ReplyHeader (client-plane.md 4.4 offsets): size 48,
// command 60 = 8, request 200, operation 208, status 216.
func replyFrame(request uint64, op uint8, status uint32, body []byte) []byte {
	f := make([]byte, 256+len(body))
	binary.LittleEndian.PutUint32(f[48:], uint32(len(f)))
	f[60] = 8
	binary.LittleEndian.PutUint64(f[200:], request)
	f[208] = op
	binary.LittleEndian.PutUint32(f[216:], status)
	copy(f[256:], body)
	return f
}

// evictionFrame builds an EvictionHeader (4.5): size 256, command 13,
// client 128, max version 144, min version 148, reason 255.
func evictionFrame(reason uint8, maxVersion, minVersion uint32) []byte {
	f := make([]byte, 256)
	binary.LittleEndian.PutUint32(f[48:], 256)
	f[60] = 13
	binary.LittleEndian.PutUint64(f[128:], 0xC11E)
	binary.LittleEndian.PutUint32(f[144:], maxVersion)
	binary.LittleEndian.PutUint32(f[148:], minVersion)
	f[255] = reason
	return f
}

// lb appends little-endian fields by hand.
type lb struct{ bytes.Buffer }

func (b *lb) u8(v uint8) *lb { b.WriteByte(v); return b }
func (b *lb) u16(v uint16) *lb {
	b.Write(binary.LittleEndian.AppendUint16(nil, v))
	return b
}
func (b *lb) u32(v uint32) *lb {
	b.Write(binary.LittleEndian.AppendUint32(nil, v))
	return b
}
func (b *lb) u64(v uint64) *lb {
	b.Write(binary.LittleEndian.AppendUint64(nil, v))
	return b
}
func (b *lb) name(s string) *lb  { b.u8(uint8(len(s))); b.WriteString(s); return b }
func (b *lb) str32(s string) *lb { b.u32(uint32(len(s))); b.WriteString(s); return b }
func (b *lb) raw(p []byte) *lb   { b.Write(p); return b }
func (b *lb) out() []byte        { return append([]byte(nil), b.Bytes()...) }

// loginReplyBody is [00 00 00 00] + LoginRegisterResponse (7.12).
func loginReplyBody(userID uint32, session uint64) []byte {
	var b lb
	return b.u32(0).u32(userID).u64(session).u32(0x2C00).name("fake-0.9").out()
}

type node struct {
	name, ip     string
	port         uint16
	role, status uint8
}

// rosterBody is ClusterMetadata (7.15) with TCP ports.
func rosterBody(cluster string, nodes ...node) []byte {
	return rosterFor(TransportTCP, cluster, nodes...)
}

// rosterFor is ClusterMetadata (7.15) with each node's port in the slot of
// the given transport: tcp_port, quic_port, http_port, websocket_port.
func rosterFor(transport, cluster string, nodes ...node) []byte {
	slot := map[string]int{TransportTCP: 0, TransportQUIC: 1, TransportHTTP: 2, TransportWS: 3}[transport]
	var b lb
	b.str32(cluster).u32(uint32(len(nodes)))
	for _, n := range nodes {
		b.str32(n.name).str32(n.ip)
		for i := range 4 {
			if i == slot {
				b.u16(n.port)
			} else {
				b.u16(0)
			}
		}
		b.u8(n.role).u8(n.status)
	}
	return b.out()
}

// rejection is the 12-byte result section [1][0][code].
func rejection(code uint32) []byte {
	var b lb
	return b.u32(1).u32(0).u32(code).out()
}

// ok is the 4-byte success result count followed by payload.
func ok(payload []byte) []byte {
	var b lb
	return b.u32(0).raw(payload).out()
}

// testOptions are options for a client of f: its transport, short
// deadline, no reconnect.
func testOptions(f *fake) Options {
	// The fake's QUIC side has a throwaway certificate the client cannot
	// verify.
	return Options{Transport: f.kind, Address: f.addr(), RequestTimeout: 3 * time.Second,
		QUIC: QUICOptions{SkipCertificateVerification: true}}
}

// carriages are the transports every scripted scenario of forEachTransport
// runs over.
var carriages = []string{TransportTCP, TransportQUIC, TransportWS}

// forEachTransport runs the same scenario once per carriage; the scenario
// builds its fakes with newFakeOn(t, transport).
func forEachTransport(t *testing.T, scenario func(t *testing.T, transport string)) {
	for _, transport := range carriages {
		t.Run(transport, func(t *testing.T) { scenario(t, transport) })
	}
}

// loggedIn connects a client to f and logs in as iggy/iggy.
func loggedIn(t *testing.T, f *fake, opts Options) *Client {
	t.Helper()
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Login(t.Context(), "iggy", "iggy"); err != nil {
		t.Fatalf("login: %v", err)
	}
	return c
}

func isErr(err error, target error) bool { return errors.Is(err, target) }
