package lean_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"testing"
	"time"

	"iggynode/actors"
	"iggynode/bench"
	"iggynode/bench/lean"
	"iggynode/client"
	"iggynode/config"
	"iggynode/wire"
)

// The tests use package client only to create a node's stream and topic
// (package lean has no metadata commands); package lean itself imports
// neither client nor wire, and package wire checks its bytes here.

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func startSink(t testing.TB, o bench.SinkOptions) *bench.Sink {
	t.Helper()
	s, err := bench.StartSinkWith("127.0.0.1:0", o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// startNode runs an in-process node on loopback port 0 with its data in a
// temporary directory, with stream 0 holding topic 0 of partitions
// partitions (enforce_fsync as asked).
func startNode(t testing.TB, partitions uint32, fsync bool) string {
	t.Helper()
	cfg := config.Default()
	cfg.System.Path = t.TempDir()
	cfg.TCP.Address = "127.0.0.1:0"
	cfg.HTTP.Enabled, cfg.QUIC.Enabled, cfg.WebSocket.Enabled = false, false, false
	n, err := actors.Start(actors.Options{Config: cfg, RootUsername: "iggy", RootPassword: "iggy",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close() })
	ctx := ctxT(t)
	c, err := client.Connect(ctx, client.Options{Address: n.TCPAddr(), Username: "iggy", Password: "iggy"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.CreateStream(ctx, "lean", nil); err != nil {
		t.Fatal(err)
	}
	var opts wire.Options
	if fsync {
		opts = wire.Options{{Key: wire.OptEnforceFsync, Kind: wire.KindBool, Value: []byte{1}}}
	}
	if _, err := c.CreateTopic(ctx, wire.ID(0), "lean", partitions, opts); err != nil {
		t.Fatal(err)
	}
	return n.TCPAddr()
}

func dial(t testing.TB, addr string) *lean.Conn {
	t.Helper()
	c, err := lean.Dial(ctxT(t), addr, "iggy", "iggy")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// The batch the lean client builds passes the node's own admission check
// (client-plane.md 13.1: layout, frame and batch checksums, counts).
func TestBatchPassesAdmission(t *testing.T) {
	b := lean.AppendBatch(nil, 17, 33, 9, 1234)
	if err := wire.ValidateBatch(b, 17); err != nil {
		t.Fatal(err)
	}
	it := wire.Batch(b).Frames()
	for i := 0; ; i++ {
		f, ok := it.Next()
		if !ok {
			if i != 17 {
				t.Fatalf("%d frames", i)
			}
			break
		}
		if f.OffsetDelta() != uint32(i) || len(f.Payload()) != 33 || f.ID() != (wire.U128{Lo: uint64(i) + 1, Hi: 9}) {
			t.Errorf("frame %d: delta %d, %d-byte payload, id %v", i, f.OffsetDelta(), len(f.Payload()), f.ID())
		}
	}
	b[BatchPayloadAt(0)] ^= 1
	if err := wire.ValidateBatch(b, 17); err == nil {
		t.Error("a flipped payload byte passed admission")
	}
}

// BatchPayloadAt is the byte offset of frame i's payload in a batch of
// 33-byte messages.
func BatchPayloadAt(i int) int {
	return lean.BatchHeaderSize + i*(lean.FrameHeaderSize+33) + lean.FrameHeaderSize
}

// Against the sink: login binds a session, sends are confirmed with base
// offsets growing by the batch's count, and polls walk the sink's canned
// records (offsets from the requested one, payload bytes exact).
func TestLeanAgainstSink(t *testing.T) {
	s := startSink(t, bench.SinkOptions{PollMessageSize: 100})
	c := dial(t, s.Addr())
	if c.Session() == 0 {
		t.Fatal("no session")
	}
	if err := c.PrepareSend(0, 0, 3, 10, 100); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		base, err := c.Send()
		if err != nil || base != uint64(10*i) {
			t.Fatalf("send %d: base %d, %v", i, base, err)
		}
	}
	p, err := c.Poll(1, 0, 0, 3, 7, 25)
	if err != nil {
		t.Fatal(err)
	}
	if p.Messages != 25 || p.PayloadBytes != 2500 || p.LastOffset != 7+24 {
		t.Errorf("poll %+v", p)
	}
	if st := s.Stats(); st.Logins != 1 || st.Sends != 3 || st.SentMessages != 30 || st.Polls != 1 {
		t.Errorf("sink stats %+v", st)
	}
}

// Against a storing sink, the file holds exactly the batches sent.
func TestLeanAgainstStoringSink(t *testing.T) {
	dir := t.TempDir()
	s := startSink(t, bench.SinkOptions{StoreDir: dir, StoreFsync: true})
	c := dial(t, s.Addr())
	if err := c.PrepareSend(2, 5, 1, 4, 50); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := c.Send(); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(bench.StoreFile(dir, 2, 5, 1))
	if err != nil {
		t.Fatal(err)
	}
	batch := got[:len(got)/2]
	if len(got) != 2*(256+4*(48+50)) || !bytes.Equal(got[len(got)/2:], batch) || wire.ValidateBatch(batch, 4) != nil {
		t.Errorf("stored %d bytes; valid batch: %v", len(got), wire.ValidateBatch(batch, 4))
	}
}

// Against a real node: what the lean client sends is admitted, stored and
// polled back, message for message, with the node's offsets; a send to a
// partition that does not exist is refused with the node's status.
func TestLeanAgainstNode(t *testing.T) {
	for _, fsync := range []bool{false, true} {
		addr := startNode(t, 2, fsync)
		c := dial(t, addr)
		if err := c.PrepareSend(0, 0, 1, 100, 64); err != nil {
			t.Fatal(err)
		}
		for i := range 5 {
			base, err := c.Send()
			if err != nil || base != uint64(100*i) {
				t.Fatalf("fsync %v, send %d: base %d, %v", fsync, i, base, err)
			}
		}
		var offset uint64
		for offset < 500 {
			p, err := c.Poll(1, 0, 0, 1, offset, 170)
			if err != nil {
				t.Fatal(err)
			}
			if p.Messages == 0 || p.LastOffset != offset+uint64(p.Messages)-1 || p.PayloadBytes != 64*uint64(p.Messages) {
				t.Fatalf("fsync %v, poll at %d: %+v", fsync, offset, p)
			}
			// The node serves the bytes sent: the first polled payload is the
			// lean pattern.
			if first := p.Body[16+256+48:][:3]; string(first) != "abc" {
				t.Fatalf("payload starts %q", first)
			}
			offset = p.LastOffset + 1
		}
		if p, err := c.Poll(1, 0, 0, 1, 500, 10); err != nil || p.Messages != 0 {
			t.Errorf("poll past the end: %+v, %v", p, err)
		}
		if err := c.PrepareSend(0, 0, 9, 1, 1); err != nil {
			t.Fatal(err)
		}
		var se *lean.StatusError
		if _, err := c.Send(); !errors.As(err, &se) || se.Code != uint32(wire.ErrResourceNotFound) {
			t.Errorf("send to a missing partition: %v, want status 20", err)
		}
	}
}

// A wrong password is an eviction (client-plane.md 5.2: InvalidCredentials 9).
func TestLeanLoginRefused(t *testing.T) {
	addr := startNode(t, 1, false)
	_, err := lean.Dial(ctxT(t), addr, "iggy", "wrong")
	var ev *lean.EvictionError
	if !errors.As(err, &ev) || ev.Reason != 9 {
		t.Errorf("login with a wrong password: %v", err)
	}
}

// cannedServer answers on loopback from replies built before it accepts:
// a login, a send confirmation and a poll of 100 x 1000 B, reading every
// request into one buffer, so it allocates nothing per request and an
// allocation count of the process is the client's alone.
func cannedServer(t *testing.T) string {
	t.Helper()
	reply := func(op byte, request uint64, body []byte) []byte {
		f := make([]byte, 256, 256+len(body))
		f = append(f, body...)
		binary.LittleEndian.PutUint32(f[48:], uint32(len(f)))
		f[60] = 8
		binary.LittleEndian.PutUint64(f[200:], request)
		f[208] = op
		return f
	}
	login := reply(1, 0, []byte{0, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0x2C, 0, 0, 1, 'x'})
	confirm := reply(160, 1, make([]byte, 24))
	confirm[256] = 1
	msgs := make([]wire.Message, 100)
	for i := range msgs {
		msgs[i] = wire.Message{Payload: make([]byte, 1000)}
	}
	polled, err := wire.AppendBatch(wire.AppendPolledHeader(nil, 0, 99, 100), msgs)
	if err != nil {
		t.Fatal(err)
	}
	poll := reply(2, 1, polled)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		buf := make([]byte, 4<<20)
		for {
			if _, err := io.ReadFull(nc, buf[:256]); err != nil {
				return
			}
			size := binary.LittleEndian.Uint32(buf[48:])
			if _, err := io.ReadFull(nc, buf[256:size]); err != nil {
				return
			}
			out := map[byte][]byte{1: login, 160: confirm, 2: poll}[buf[176]]
			if _, err := nc.Write(out); err != nil {
				return
			}
		}
	}()
	return ln.Addr().String()
}

// The send and poll loops allocate nothing (against a server that does
// not either: the count is the process's).
func TestLeanLoopsDoNotAllocate(t *testing.T) {
	c := dial(t, cannedServer(t))
	if err := c.PrepareSend(0, 0, 0, 100, 1000); err != nil {
		t.Fatal(err)
	}
	if p, err := c.Poll(1, 0, 0, 0, 0, 100); err != nil || p.Messages != 100 { // grows the reply buffer once
		t.Fatal(p, err)
	}
	allocs := testing.AllocsPerRun(50, func() {
		if _, err := c.Send(); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Poll(1, 0, 0, 0, 0, 100); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("%.1f allocations per send and poll, want 0", allocs)
	}
}

// The benchmarks run the server in the same process: their B/op and
// allocs/op are the server's (the client's loops allocate nothing, see
// TestLeanLoopsDoNotAllocate).

func benchSend(b *testing.B, addr string, stream, topic uint32) {
	c := dial(b, addr)
	if err := c.PrepareSend(stream, topic, 0, 1000, 1000); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(1000 * 1000)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Send(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLeanSendSink: 1000 x 1 KB batches to the plain sink (the
// transport ceiling of one lockstep connection).
func BenchmarkLeanSendSink(b *testing.B) {
	benchSend(b, startSink(b, bench.SinkOptions{}).Addr(), 0, 0)
}

// BenchmarkLeanSendStoringSink: the same to a storing sink (page cache).
func BenchmarkLeanSendStoringSink(b *testing.B) {
	benchSend(b, startSink(b, bench.SinkOptions{StoreDir: b.TempDir()}).Addr(), 0, 0)
}

// BenchmarkLeanSendStoringSinkFsync: a storing sink syncing every batch.
func BenchmarkLeanSendStoringSinkFsync(b *testing.B) {
	benchSend(b, startSink(b, bench.SinkOptions{StoreDir: b.TempDir(), StoreFsync: true}).Addr(), 0, 0)
}

// BenchmarkLeanSendNode: the same to an in-process node (fsync off).
func BenchmarkLeanSendNode(b *testing.B) { benchSend(b, startNode(b, 1, false), 0, 0) }

// BenchmarkLeanPollSink: 1000 x 1 KB polls of the sink's canned batch.
func BenchmarkLeanPollSink(b *testing.B) {
	c := dial(b, startSink(b, bench.SinkOptions{}).Addr())
	b.SetBytes(1000 * 1000)
	b.ReportAllocs()
	for b.Loop() {
		if p, err := c.Poll(1, 0, 0, 0, 0, 1000); err != nil || p.Messages != 1000 {
			b.Fatal(p.Messages, err)
		}
	}
}

// BenchmarkLeanPollNode: 1000 x 1 KB polls of an in-process node's tail.
func BenchmarkLeanPollNode(b *testing.B) {
	c := dial(b, startNode(b, 1, false))
	if err := c.PrepareSend(0, 0, 0, 1000, 1000); err != nil {
		b.Fatal(err)
	}
	for range 20 {
		if _, err := c.Send(); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(1000 * 1000)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		off := uint64(i%20) * 1000
		i++
		if p, err := c.Poll(1, 0, 0, 0, off, 1000); err != nil || p.Messages != 1000 {
			b.Fatal(p.Messages, err)
		}
	}
}

// A login the server never answers ends with the context: Dial is bounded
// by ctx whether it carries a deadline or is cancelled.
func TestLeanDialBoundedByContext(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			defer nc.Close() // accepts and never answers
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	if _, err := lean.Dial(ctx, ln.Addr().String(), "iggy", "iggy"); err == nil || time.Since(start) > 5*time.Second {
		t.Errorf("cancelled dial: %v after %v", err, time.Since(start))
	}
	ctx, cancel2 := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel2()
	if _, err := lean.Dial(ctx, ln.Addr().String(), "iggy", "iggy"); err == nil {
		t.Error("a dial past its deadline succeeded")
	}
}
