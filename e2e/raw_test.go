package e2e

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"iggynode/client"
	"iggynode/wire"
)

// raw is a client connection that writes hand-made frames.
type raw struct {
	t  testing.TB
	nc net.Conn
}

func dialRaw(t testing.TB, n *testNode) *raw {
	t.Helper()
	nc, err := net.DialTimeout("tcp", n.TCPAddr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	return &raw{t: t, nc: nc}
}

var rawClient = wire.U128{Lo: 0xfeed, Hi: 0xbeef}

func request(op wire.Operation, code wire.CommandCode, req, session uint64, body []byte) []byte {
	f := make([]byte, wire.HeaderSize+len(body))
	h := wire.RequestHeader{Size: uint32(len(f)), Client: rawClient, Request: req, Operation: op, Session: session, Code: code}
	h.Encode(wire.HeaderOf(f))
	copy(f[wire.HeaderSize:], body)
	return f
}

func (r *raw) send(frame []byte) {
	r.t.Helper()
	if _, err := r.nc.Write(frame); err != nil {
		r.t.Fatalf("write: %v", err)
	}
}

// read returns the next frame, or nil when the server closed the connection.
func (r *raw) read() []byte {
	r.t.Helper()
	_ = r.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	var h wire.Header
	if _, err := io.ReadFull(r.nc, h[:]); err != nil {
		if err == io.EOF || isReset(err) {
			return nil
		}
		r.t.Fatalf("read header: %v", err)
	}
	f := make([]byte, h.Size())
	copy(f, h[:])
	if _, err := io.ReadFull(r.nc, f[wire.HeaderSize:]); err != nil {
		r.t.Fatalf("read body: %v", err)
	}
	return f
}

func isReset(err error) bool {
	ne, ok := err.(*net.OpError)
	return ok && !ne.Timeout()
}

func (r *raw) login() uint64 {
	r.t.Helper()
	body := wire.LoginRegister{ClientInfo: wire.ClientVersionInfo{Version: wire.ProtocolVersion, SDKName: "raw", SDKVersion: "1"},
		Username: "iggy", Password: "iggy"}.AppendTo(nil)
	r.send(request(wire.OpRegister, 0, 0, 0, body))
	f := r.read()
	rh := wire.HeaderOf(f).Reply()
	if rh.Status != 0 || rh.Operation != wire.OpRegister {
		r.t.Fatalf("login reply %+v", rh)
	}
	if !bytes.Equal(f[wire.HeaderSize:wire.HeaderSize+4], []byte{0, 0, 0, 0}) {
		r.t.Fatalf("login reply body starts % x, want the result section 00 00 00 00 (19 item 5)", f[wire.HeaderSize:wire.HeaderSize+4])
	}
	var lr wire.LoginRegisterResponse
	if err := lr.Decode(f[wire.HeaderSize+4:]); err != nil || lr.Session == 0 {
		r.t.Fatalf("login payload: %+v %v", lr, err)
	}
	return lr.Session
}

// client-plane.md 4.2 / 8.1.2: before login only Ping is served; reads get
// status 40, replicated requests Eviction(NoSession), legacy logins
// Eviction(MalformedLogin), and Logout an empty success.
func TestBeforeLogin(t *testing.T) {
	n := startNode(t)
	r := dialRaw(t, n)
	r.send(request(wire.OpNonReplicated, wire.CodePing, 1, 0, nil))
	if h := wire.HeaderOf(r.read()).Reply(); h.Status != 0 || h.Request != 1 || h.Operation != wire.OpNonReplicated {
		t.Fatalf("ping: %+v", h)
	}
	r.send(request(wire.OpNonReplicated, wire.CodeGetStreams, 2, 0, nil))
	if h := wire.HeaderOf(r.read()).Reply(); h.Status != uint32(wire.ErrUnauthenticated) || h.Request != 2 {
		t.Fatalf("read before login: %+v", h)
	}
	r.send(request(wire.OpLogout, 0, 3, 5, nil))
	if h := wire.HeaderOf(r.read()).Reply(); h.Status != 0 || h.Operation != wire.OpLogout || h.Size != wire.HeaderSize {
		t.Fatalf("logout before login: %+v", h)
	}
	r.send(request(wire.OpCreateStream, 0, 4, 5, wire.CreateStream{Name: "x"}.AppendTo(nil)))
	f := r.read()
	if e := wire.HeaderOf(f).Eviction(); f[60] != byte(wire.CmdEviction) || e.Reason != wire.EvictNoSession {
		t.Fatalf("write before login: %v", e)
	}
	r.send(request(wire.OpNonReplicated, wire.CodeLoginUser, 5, 0, nil))
	if e := wire.HeaderOf(r.read()).Eviction(); e.Reason != wire.EvictMalformedLogin {
		t.Fatalf("legacy login: %v", e.Reason)
	}
	// The connection is still usable: log in.
	r.login()
}

// client-plane.md 5.5 and 19 item 15: a Logout is never evicted, even one
// with request or session 0 (which the reference drops without a reply).
func TestLogoutIsNeverEvicted(t *testing.T) {
	n := startNode(t)
	r := dialRaw(t, n)
	for _, tc := range []struct{ request, session uint64 }{{1, 0}, {0, 7}, {0, 0}} {
		r.send(request(wire.OpLogout, 0, tc.request, tc.session, nil))
		f := r.read()
		if f[60] != byte(wire.CmdReply) {
			t.Fatalf("unbound logout (request %d, session %d): command %v, want a reply", tc.request, tc.session, wire.HeaderOf(f).Command())
		}
		if h := wire.HeaderOf(f).Reply(); h.Status != 0 || h.Operation != wire.OpLogout || h.Op != 0 || h.Size != wire.HeaderSize {
			t.Fatalf("unbound logout (request %d, session %d): %+v, want class H with op 0", tc.request, tc.session, h)
		}
	}
	session := r.login()
	r.send(request(wire.OpLogout, 0, 0, session, nil))
	f := r.read()
	if h := wire.HeaderOf(f).Reply(); f[60] != byte(wire.CmdReply) || h.Status != uint32(wire.ErrInvalidFormat) || h.Operation != wire.OpLogout {
		t.Fatalf("bound logout with request 0: command %v %+v, want a deny with status 4", wire.HeaderOf(f).Command(), h)
	}
	r.send(request(wire.OpNonReplicated, wire.CodeGetStreams, 2, session, nil))
	if h := wire.HeaderOf(r.read()).Reply(); h.Status != 0 || h.Request != 2 {
		t.Fatalf("the session must survive a refused logout: %+v", h)
	}
}

// rawWithTopic starts a node with stream 0 holding topic 0 of one
// partition, and returns a raw connection logged in with its session.
func rawWithTopic(t *testing.T) (*testNode, *raw, uint64) {
	t.Helper()
	n := startNode(t)
	c := connect(t, n)
	ctx := ctxT(t)
	if _, err := c.CreateStream(ctx, "s", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, wire.ID(0), "t", 1, nil); err != nil {
		t.Fatal(err)
	}
	r := dialRaw(t, n)
	return n, r, r.login()
}

// client-plane.md 19 item 10: where the reference answers a missing
// stream, topic or partition of a poll or a consumer-offset read with a
// typed status, so does this node (and not with an empty body).
func TestPollAndOffsetReadsOfMissingResourcesAreTyped(t *testing.T) {
	_, r, session := rawWithTopic(t)
	poll := func(stream, topic, partition uint32) []byte {
		return request(wire.OpNonReplicated, wire.CodePollMessages, 1, session, wire.PollMessages{
			Consumer: wire.SingleConsumer(wire.ID(1)), Stream: wire.ID(stream), Topic: wire.ID(topic),
			Partition: wire.Partition(partition), Strategy: wire.FirstStrategy(), Count: 1}.AppendTo(nil))
	}
	offset := func(partition uint32) []byte {
		return request(wire.OpNonReplicated, wire.CodeGetConsumerOffset, 1, session, wire.GetConsumerOffset{
			Consumer: wire.SingleConsumer(wire.ID(1)), Stream: wire.ID(0), Topic: wire.ID(0), Partition: wire.Partition(partition)}.AppendTo(nil))
	}
	for _, tc := range []struct {
		name  string
		frame []byte
		want  wire.ErrorCode
	}{
		{"poll, missing stream", poll(9, 0, 0), wire.ErrStreamIdNotFound},
		{"poll, missing topic", poll(0, 9, 0), wire.ErrTopicIdNotFound},
		{"poll, missing partition", poll(0, 0, 9), wire.ErrPartitionNotFound},
		{"consumer offset, missing partition", offset(9), wire.ErrPartitionNotFound},
	} {
		r.send(tc.frame)
		f := r.read()
		if h := wire.HeaderOf(f).Reply(); f[60] != byte(wire.CmdReply) || h.Status != uint32(tc.want) || len(f) != wire.HeaderSize {
			t.Errorf("%s: status %d, %d body bytes; want status %d, no body", tc.name, h.Status, len(f)-wire.HeaderSize, tc.want)
		}
	}
}

// client-plane.md 5.2: the version gate and a body that is not a login.
func TestLoginGateEvictions(t *testing.T) {
	n := startNode(t)
	r := dialRaw(t, n)
	body := wire.LoginRegister{ClientInfo: wire.ClientVersionInfo{Version: wire.Pack(0, 12, 0), SDKName: "raw", SDKVersion: "1"},
		Username: "iggy", Password: "iggy"}.AppendTo(nil)
	r.send(request(wire.OpRegister, 0, 0, 0, body))
	e, err := wire.DecodeEvictionHeader(wire.HeaderOf(r.read()))
	if err != nil || e.Reason != wire.EvictIncompatibleProtocol || e.MinVersion != wire.MinProtocolVersion || e.MaxVersion != wire.ProtocolVersion {
		t.Fatalf("version gate: %+v %v", e, err)
	}
	r.send(request(wire.OpRegister, 0, 0, 0, []byte{1, 2}))
	if e := wire.HeaderOf(r.read()).Eviction(); e.Reason != wire.EvictMalformedLogin {
		t.Fatalf("malformed login: %v", e.Reason)
	}
}

// client-plane.md 4.1/4.2: invalid headers, unknown codes, replicated codes
// sent as reads, request checksum mismatch; the connection survives each.
func TestBadRequestsAnsweredAndConnectionKept(t *testing.T) {
	n := startNode(t)
	r := dialRaw(t, n)
	session := r.login()
	cases := []struct {
		name  string
		frame []byte
		check func(h *wire.Header) bool
	}{
		{"undefined operation", request(wire.Operation(200), 0, 1, session, nil),
			func(h *wire.Header) bool {
				return h.Command() == wire.CmdEviction && h.Eviction().Reason == wire.EvictInvalidRequestOperation
			}},
		{"internal operation 64", request(wire.OpCreateTopicWithAssignments, 0, 1, session, nil),
			func(h *wire.Header) bool { return h.Eviction().Reason == wire.EvictInvalidRequestOperation }},
		{"unknown code", request(wire.OpNonReplicated, 60000, 1, session, nil),
			func(h *wire.Header) bool { return h.Reply().Status == uint32(wire.ErrInvalidCommand) }},
		{"replicated code as read", request(wire.OpNonReplicated, wire.CodeCreateStream, 1, session, nil),
			func(h *wire.Header) bool { return h.Reply().Status == uint32(wire.ErrFeatureUnavailable) }},
		{"flush unsaved buffer", request(wire.OpNonReplicated, wire.CodeFlushUnsavedBuffer, 1, session, nil),
			func(h *wire.Header) bool { return h.Reply().Status == uint32(wire.ErrFeatureUnavailable) }},
		{"checksum mismatch", func() []byte {
			f := request(wire.OpCreateStream, 0, 1, session, wire.CreateStream{Name: "s"}.AppendTo(nil))
			binary.LittleEndian.PutUint64(f[144:], 12345)
			return f
		}(), func(h *wire.Header) bool { return h.Reply().Status == uint32(wire.ErrInvalidFormat) }},
		{"undecodable create stream", request(wire.OpCreateStream, 0, 1, session, []byte{0}),
			func(h *wire.Header) bool { return h.Reply().Status == uint32(wire.ErrInvalidCommand) }},
		{"send to a missing stream", request(wire.OpSendMessages, 0, 1, session, nil),
			func(h *wire.Header) bool { return h.Reply().Status == uint32(wire.ErrResourceNotFound) }},
	}
	for _, c := range cases {
		r.send(c.frame)
		f := r.read()
		if f == nil || !c.check(wire.HeaderOf(f)) {
			t.Fatalf("%s: unexpected answer %v", c.name, f)
		}
	}
	r.send(request(wire.OpNonReplicated, wire.CodePing, 1, session, nil))
	if h := wire.HeaderOf(r.read()).Reply(); h.Status != 0 {
		t.Fatalf("connection unusable after bad requests: %+v", h)
	}
}

// client-plane.md 3: a size outside 256..=max or a command byte above 29
// closes that connection only; other connections are unaffected.
func TestBadFramesCloseOnlyTheirConnection(t *testing.T) {
	n := startNode(t)
	good := connect(t, n)
	frames := map[string][]byte{
		"size below the header": func() []byte {
			f := request(wire.OpNonReplicated, wire.CodePing, 1, 0, nil)
			binary.LittleEndian.PutUint32(f[48:], 100)
			return f
		}(),
		"size above the limit": func() []byte {
			f := request(wire.OpNonReplicated, wire.CodePing, 1, 0, nil)
			binary.LittleEndian.PutUint32(f[48:], 65<<20)
			return f
		}(),
		"command byte 30": func() []byte {
			f := request(wire.OpNonReplicated, wire.CodePing, 1, 0, nil)
			f[60] = 30
			return f
		}(),
	}
	for name, f := range frames {
		r := dialRaw(t, n)
		r.send(f)
		if got := r.read(); got != nil {
			t.Fatalf("%s: got a reply instead of a close", name)
		}
		if err := good.Ping(ctxT(t)); err != nil {
			t.Fatalf("%s: another connection was affected: %v", name, err)
		}
	}
	// A valid command other than Request is ignored; the connection stays.
	r := dialRaw(t, n)
	f := request(wire.OpNonReplicated, wire.CodePing, 1, 0, nil)
	f[60] = byte(wire.CmdPrepare)
	r.send(f)
	r.send(request(wire.OpNonReplicated, wire.CodePing, 2, 0, nil))
	if h := wire.HeaderOf(r.read()).Reply(); h.Request != 2 {
		t.Fatalf("the ignored frame was answered: %+v", h)
	}
}

// 13.1: a batch with a bad checksum or nonzero reserved bytes is refused
// with the compatible codes and nothing is stored.
func TestBadBatchesStoreNothing(t *testing.T) {
	n, r, session := rawWithTopic(t)
	batch, err := wire.AppendBatch(nil, []wire.Message{client.NewMessage([]byte("hello"))})
	if err != nil {
		t.Fatal(err)
	}
	mutate := map[string]struct {
		fn   func(b []byte)
		code wire.ErrorCode
	}{
		"batch checksum":   {func(b []byte) { b[wire.BatchChecksumOffset] ^= 1 }, wire.ErrInvalidBatchChecksum},
		"message checksum": {func(b []byte) { b[wire.BatchHeaderSize] ^= 1 }, wire.ErrInvalidMessageChecksum},
		"reserved byte":    {func(b []byte) { b[100] = 1 }, wire.ErrInvalidCommand},
	}
	for name, m := range mutate {
		b := append([]byte(nil), batch...)
		m.fn(b)
		body := wire.AppendSendMessagesHeader(nil, wire.ID(0), wire.ID(0), wire.PartitionID(0), 1)
		body = append(body, b...)
		r.send(request(wire.OpSendMessages, 0, 1, session, body))
		h := wire.HeaderOf(r.read()).Reply()
		if h.Status != uint32(m.code) {
			t.Fatalf("%s: status %d, want %d", name, h.Status, m.code)
		}
	}
	p, err := connect(t, n).PollMessages(ctxT(t), wire.SingleConsumer(wire.ID(1)), wire.ID(0), wire.ID(0), wire.Partition(0), wire.FirstStrategy(), 10, false)
	if err != nil || p.MessagesCount != 0 {
		t.Fatalf("a rejected batch was stored: %+v %v", p, err)
	}
	// The batch is checked on the connection's turn, but the stream is
	// resolved first (13.1 step 2 before 3-6): a bad batch to a stream
	// that does not exist gets what a good one gets.
	toMissing := func(b []byte) uint32 {
		body := wire.AppendSendMessagesHeader(nil, wire.ID(77), wire.ID(0), wire.PartitionID(0), 1)
		r.send(request(wire.OpSendMessages, 0, 1, session, append(body, b...)))
		return wire.HeaderOf(r.read()).Reply().Status
	}
	bad := append([]byte(nil), batch...)
	bad[wire.BatchHeaderSize] ^= 1
	if good, got := toMissing(batch), toMissing(bad); got != good || good == 0 || got == uint32(wire.ErrInvalidMessageChecksum) {
		t.Fatalf("a bad batch to a missing stream: status %d, a good one %d", got, good)
	}
}

// client-plane.md 5.3: a retried metadata request gets the cached reply
// verbatim and is not applied twice; an old request number whose reply
// left the cache gets 59; a committed rejection is cached too.
func TestMetadataRetryGetsCachedReply(t *testing.T) {
	n := startNode(t)
	r := dialRaw(t, n)
	session := r.login()
	create := func(req uint64, name string) []byte {
		body := wire.CreateStream{Name: name}.AppendTo(nil)
		f := request(wire.OpCreateStream, 0, req, session, body)
		copy(f[144:], wire.AppendU128(nil, wire.RequestChecksum(body)))
		r.send(f)
		return r.read()
	}
	first := create(1, "once")
	if h := wire.HeaderOf(first).Reply(); h.Status != 0 || h.Operation != wire.OpCreateStream || h.Op == 0 {
		t.Fatalf("first: %+v", h)
	}
	again := create(1, "once")
	if string(again) != string(first) {
		t.Fatal("the retry did not get the cached reply bytes")
	}
	// Five more requests push request 1 out of the five-entry reply ring.
	for i := uint64(2); i <= 6; i++ {
		create(i, fmt.Sprintf("s%d", i))
	}
	old := create(1, "once")
	if payload, err := wire.SplitResult(old[wire.HeaderSize:]); payload != nil || !errors.Is(err, wire.ErrRequestAlreadyApplied) {
		t.Fatalf("aged-out retry: %v", err)
	}
	dup := create(7, "once") // a committed rejection (1012)
	if _, err := wire.SplitResult(dup[wire.HeaderSize:]); !errors.Is(err, wire.ErrStreamNameAlreadyExists) {
		t.Fatalf("duplicate name: %v", err)
	}
	if again := create(7, "once"); string(again) != string(dup) {
		t.Fatal("a cached rejection must be resent verbatim")
	}
	c := connect(t, n)
	streams, err := c.GetStreams(ctxT(t))
	if err != nil || len(streams) != 6 {
		t.Fatalf("streams: %d %v (a retry was applied twice?)", len(streams), err)
	}
}
