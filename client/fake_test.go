package client

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"
)

// The fake server reads real request frames and answers with reply and
// eviction frames built by hand at the offsets of docs/framing.md and
// client-plane.md 4.4/4.5, never with wire's encoders, so a test fails if
// the client and the wire package agree on something the spec does not say.

// fakeRequest is a received request header, read at the framing.md offsets.
type fakeRequest struct {
	conn      int // 1-based connection number on this fake
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

// fakeConn is the server side of one accepted connection.
type fakeConn struct {
	id int
	nc net.Conn
}

func (c *fakeConn) send(frame []byte) { _, _ = c.nc.Write(frame) }
func (c *fakeConn) close()            { _ = c.nc.Close() }

// reply answers r with a class-A style reply: request echoed, the given
// operation, status and body.
func (c *fakeConn) reply(r fakeRequest, op uint8, status uint32, body []byte) {
	c.send(replyFrame(r.request, op, status, body))
}

// script handles a request; it returns false to fall back to the defaults.
type script func(c *fakeConn, r fakeRequest) bool

type fake struct {
	t  *testing.T
	ln net.Listener

	mu      sync.Mutex
	reqs    []fakeRequest
	nconns  int
	eofs    map[int]bool
	script  script
	roster  func() []byte // body for code 12; nil = one healthy leader (this fake)
	session uint64
	userID  uint32
}

func newFake(t *testing.T) *fake {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return startFake(t, ln)
}

func startFake(t *testing.T, ln net.Listener) *fake {
	f := &fake{t: t, ln: ln, eofs: map[int]bool{}, session: 42, userID: 7}
	t.Cleanup(func() { ln.Close() })
	go f.accept()
	return f
}

func (f *fake) addr() string { return f.ln.Addr().String() }

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

func (f *fake) accept() {
	for {
		nc, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.mu.Lock()
		f.nconns++
		c := &fakeConn{id: f.nconns, nc: nc}
		f.mu.Unlock()
		go f.serve(c)
	}
}

func (f *fake) serve(c *fakeConn) {
	defer func() {
		f.mu.Lock()
		f.eofs[c.id] = true
		f.mu.Unlock()
		c.nc.Close()
	}()
	for {
		head := make([]byte, 256)
		if _, err := io.ReadFull(c.nc, head); err != nil {
			return
		}
		size := binary.LittleEndian.Uint32(head[48:])
		if size < 256 || size > 64<<20 {
			f.t.Errorf("fake: request size %d", size)
			return
		}
		frame := append(head, make([]byte, size-256)...)
		if _, err := io.ReadFull(c.nc, frame[256:]); err != nil {
			return
		}
		r := parseFakeRequest(c.id, frame)
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
		body := rosterBody("single-node", node{"iggy-node", "127.0.0.1", f.port(), 0, 0})
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
	tcpPort      uint16
	role, status uint8
}

// rosterBody is ClusterMetadata (7.15).
func rosterBody(cluster string, nodes ...node) []byte {
	var b lb
	b.str32(cluster).u32(uint32(len(nodes)))
	for _, n := range nodes {
		b.str32(n.name).str32(n.ip).u16(n.tcpPort).u16(0).u16(0).u16(0).u8(n.role).u8(n.status)
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

// testOptions are options for a client of f: short deadline, no reconnect.
func testOptions(f *fake) Options {
	return Options{Address: f.addr(), RequestTimeout: 3 * time.Second}
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
