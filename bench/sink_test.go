package bench

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"iggynode/client"
	"iggynode/wire"
)

func startSink(t *testing.T, o SinkOptions) *Sink {
	t.Helper()
	s, err := StartSinkWith("127.0.0.1:0", o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func connectSink(t *testing.T, s *Sink) *client.Client {
	t.Helper()
	c, err := client.Connect(testContext(t), client.Options{Address: s.Addr(), Username: "iggy", Password: "iggy"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// The SDK logs in (register, then the roster read it does after every
// login), pings, and reads the roster again.
func TestSinkClientLoginAndPing(t *testing.T) {
	s := startSink(t, SinkOptions{})
	c := connectSink(t, s)
	ctx := testContext(t)
	if session, _ := c.Session(); session == 0 {
		t.Fatal("no session after login")
	}
	if err := c.Ping(ctx); err != nil {
		t.Fatalf("ping: %v", err)
	}
	roster, err := c.GetClusterMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(s.Addr())
	if len(roster.Nodes) != 1 || roster.Nodes[0].Role != wire.RoleLeader || roster.Nodes[0].Status != wire.NodeHealthy ||
		strconv.Itoa(int(roster.Nodes[0].TCPPort)) != port {
		t.Errorf("roster %+v, want one healthy leader on port %s", roster, port)
	}
	if st := s.Stats(); st.Logins != 1 || st.Requests != 4 { // register, roster, ping, roster
		t.Errorf("stats %+v, want 1 login and 4 requests", st)
	}
}

// requestFrame builds a request frame: header fields as client-plane.md 4.1
// places them, then body.
func requestFrame(op wire.Operation, code wire.CommandCode, request, session uint64, client uint64, body []byte) []byte {
	frame := make([]byte, wire.HeaderSize, wire.HeaderSize+len(body))
	frame = append(frame, body...)
	h := wire.RequestHeader{Size: uint32(len(frame)), Client: wire.U128{Lo: client}, Request: request,
		Operation: op, Session: session, Code: code}
	h.Encode(wire.HeaderOf(frame))
	return frame
}

func readFrame(t *testing.T, conn net.Conn) []byte {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	head := make([]byte, wire.HeaderSize)
	if _, err := io.ReadFull(conn, head); err != nil {
		t.Fatal(err)
	}
	frame := make([]byte, binary.LittleEndian.Uint32(head[48:]))
	copy(frame, head)
	if _, err := io.ReadFull(conn, frame[wire.HeaderSize:]); err != nil {
		t.Fatal(err)
	}
	return frame
}

// Reply fields checked at the offsets of client-plane.md 4.4: size 48,
// command 60, client 160, op 176, request 200, operation 208, status 216.
func TestSinkReplyBytes(t *testing.T) {
	s := startSink(t, SinkOptions{})
	conn, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	// An invalid header (client 0) gets no reply (4.3): the next reply read
	// must be the ping's.
	send := func(frame []byte) {
		t.Helper()
		if _, err := conn.Write(frame); err != nil {
			t.Fatal(err)
		}
	}
	send(requestFrame(wire.OpNonReplicated, wire.CodePing, 9, 0, 0, nil))
	send(requestFrame(wire.OpNonReplicated, wire.CodePing, 7, 0, 0xAB, nil))
	ping := readFrame(t, conn)
	want := map[string][2]int{"size": {48, 4}, "command": {60, 1}, "client": {160, 16}, "request": {200, 8}, "operation": {208, 1}, "status": {216, 4}}
	expect := func(frame []byte, field, hexWant string) {
		t.Helper()
		at := want[field]
		if got := hex.EncodeToString(frame[at[0] : at[0]+at[1]]); got != hexWant {
			t.Errorf("%s = %s, want %s", field, got, hexWant)
		}
	}
	expect(ping, "size", "00010000") // 256, no body
	expect(ping, "command", "08")
	expect(ping, "client", "ab000000000000000000000000000000")
	expect(ping, "request", "0700000000000000")
	expect(ping, "operation", "02")
	expect(ping, "status", "00000000")

	// Register: operation 1, request 0, body = result count 0 + user_id,
	// session (nonzero), protocol version, server version.
	send(requestFrame(wire.OpRegister, 0, 0, 0, 0xAB, []byte{1, 2, 3}))
	login := readFrame(t, conn)
	expect(login, "command", "08")
	expect(login, "request", "0000000000000000")
	expect(login, "operation", "01")
	expect(login, "status", "00000000")
	body := login[wire.HeaderSize:]
	if hex.EncodeToString(body[:4]) != "00000000" {
		t.Errorf("login result count % x, want 0", body[:4])
	}
	if session := binary.LittleEndian.Uint64(body[8:16]); session == 0 {
		t.Error("login session 0")
	}
	if v := binary.LittleEndian.Uint32(body[16:20]); v != 0x2C00 {
		t.Errorf("protocol version %#x, want 0x2c00", v)
	}

	// SendMessages: operation 160 echoed, [count 1][stream][topic][partition][base offset].
	sendBody := wire.AppendSendMessagesHeader(nil, wire.ID(3), wire.ID(4), wire.PartitionID(5), 10)
	send(requestFrame(wire.OpSendMessages, 0, 1, 1, 0xAB, sendBody))
	confirm := readFrame(t, conn)
	expect(confirm, "operation", "a0")
	expect(confirm, "request", "0100000000000000")
	if got := hex.EncodeToString(confirm[wire.HeaderSize:]); got != "01000000"+"03000000"+"04000000"+"05000000"+"0000000000000000" {
		t.Errorf("confirmation %s", got)
	}
	send(requestFrame(wire.OpSendMessages, 0, 1, 1, 0xAB, sendBody))
	confirm = readFrame(t, conn)
	if got := hex.EncodeToString(confirm[wire.HeaderSize+16:]); got != "0a00000000000000" {
		t.Errorf("second base offset %s, want 10", got)
	}
}

// The bench's setup path: streams and topics are "not found", created, and
// the SDK decodes the replies (CreateTopic under operation 64).
func TestSinkCreateStreamAndTopic(t *testing.T) {
	s := startSink(t, SinkOptions{})
	c := connectSink(t, s)
	ctx := testContext(t)
	if _, err := c.GetStream(ctx, wire.Named("bench-1")); err == nil {
		t.Fatal("GetStream found a stream in the sink")
	}
	st, err := c.CreateStream(ctx, "bench-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	tp, err := c.CreateTopic(ctx, wire.ID(st.ID), "bench", 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.Name != "bench-1" || tp.Name != "bench" || tp.PartitionsCount != 3 || len(tp.Partitions) != 3 || tp.Partitions[2].ID != 2 {
		t.Errorf("stream %+v topic %+v", st, tp)
	}
	if err := c.CreatePartitions(ctx, wire.ID(st.ID), wire.ID(tp.ID), 2); err != nil {
		t.Errorf("create partitions: %v", err)
	}
}

// A poll gets min(count, limit) canned messages of the configured size
// starting at the requested offset; EmptyPolls gives 16-byte empty polls.
func TestSinkPoll(t *testing.T) {
	s := startSink(t, SinkOptions{PollMessageSize: 37})
	c := connectSink(t, s)
	ctx := testContext(t)
	consumer := wire.SingleConsumer(wire.ID(1))
	for _, count := range []uint32{10, 10, 3} { // the second reuses the canned frame, the third rebuilds it
		p, err := c.PollMessages(ctx, consumer, wire.ID(0), wire.ID(0), wire.Partition(2), wire.OffsetStrategy(5), count, false)
		if err != nil {
			t.Fatal(err)
		}
		msgs := client.Messages(p)
		if p.PartitionID != 2 || p.MessagesCount != count || len(msgs) != int(count) {
			t.Fatalf("poll of %d: partition %d count %d, %d messages", count, p.PartitionID, p.MessagesCount, len(msgs))
		}
		for i, m := range msgs {
			if m.Offset != 5+uint64(i) || len(m.Payload) != 37 {
				t.Errorf("message %d: offset %d, %d-byte payload", i, m.Offset, len(m.Payload))
			}
		}
	}
	if st := s.Stats(); st.Polls != 3 || st.PolledMessages != 23 {
		t.Errorf("stats %+v", st)
	}

	empty := startSink(t, SinkOptions{EmptyPolls: true})
	ce := connectSink(t, empty)
	p, err := ce.PollMessages(ctx, consumer, wire.ID(0), wire.ID(0), wire.Partition(0), wire.OffsetStrategy(0), 10, false)
	if err != nil || p.MessagesCount != 0 || len(p.Records) != 0 {
		t.Errorf("empty poll %+v, %v", p, err)
	}
}

// sendFrame is a SendMessages request frame for a batch of count messages
// whose payloads all hold fill.
func sendFrame(t *testing.T, stream, topic, partition uint32, count int, fill byte) (frame, batch []byte) {
	t.Helper()
	payload := bytes.Repeat([]byte{fill}, 20+int(fill)%7)
	msgs := make([]wire.Message, count)
	for i := range msgs {
		msgs[i] = wire.Message{ID: wire.U128{Lo: uint64(i) + 1}, OriginTimestamp: 1, Payload: payload}
	}
	batch, err := wire.AppendBatch(nil, msgs)
	if err != nil {
		t.Fatal(err)
	}
	body := wire.AppendSendMessagesHeader(nil, wire.ID(stream), wire.ID(topic), wire.PartitionID(partition), uint32(count))
	return requestFrame(wire.OpSendMessages, 0, 1, 1, 0xAB, append(body, batch...)), batch
}

// A storing sink appends each batch, as sent, to its partition's file
// before it replies: right after each confirmation the file holds every
// batch confirmed so far, in order, and nothing else; two connections on
// two partitions keep apart. With StoreFsync the same holds.
func TestStoringSink(t *testing.T) {
	for _, fsync := range []bool{false, true} {
		dir := t.TempDir()
		s := startSink(t, SinkOptions{StoreDir: dir, StoreFsync: fsync})
		var want [2][]byte
		conns := [2]net.Conn{}
		for i := range conns {
			c, err := net.Dial("tcp", s.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			conns[i] = c
		}
		for round := range 3 {
			for i, conn := range conns {
				frame, batch := sendFrame(t, 3, 4, uint32(i), 5+round, byte('a'+4*round+i))
				if _, err := conn.Write(frame); err != nil {
					t.Fatal(err)
				}
				reply := readFrame(t, conn)
				if status := binary.LittleEndian.Uint32(reply[216:]); status != 0 {
					t.Fatalf("fsync %v: status %d", fsync, status)
				}
				want[i] = append(want[i], batch...)
				got, err := os.ReadFile(StoreFile(dir, 3, 4, uint32(i)))
				if err != nil || !bytes.Equal(got, want[i]) {
					t.Fatalf("fsync %v, round %d, partition %d: file (%v) holds %d bytes, want the %d sent", fsync, round, i, err, len(got), len(want[i]))
				}
			}
		}
		s.Close()
		for k, sf := range s.store.files {
			if sf.f != nil {
				t.Errorf("fsync %v: file of %+v still open after Close", fsync, k)
			}
		}
		entries, _ := os.ReadDir(dir)
		if len(entries) != 2 {
			t.Errorf("fsync %v: %d files in the store, want 2", fsync, len(entries))
		}
	}
}

// A batch the sink cannot store is not confirmed: the reply carries
// CannotAppendMessage (4010) and no success.
func TestStoringSinkRefusesWhatItCannotStore(t *testing.T) {
	s := startSink(t, SinkOptions{StoreDir: filepath.Join(t.TempDir(), "missing")})
	conn, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	frame, _ := sendFrame(t, 0, 0, 0, 3, 'x')
	if _, err := conn.Write(frame); err != nil {
		t.Fatal(err)
	}
	reply := readFrame(t, conn)
	if status := binary.LittleEndian.Uint32(reply[216:]); status != uint32(wire.ErrCannotAppendMessage) || len(reply) != wire.HeaderSize {
		t.Errorf("status %d with %d bytes, want 4010 and an empty body", status, len(reply))
	}
}
