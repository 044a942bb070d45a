package client_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"

	"iggynode/bench"
	"iggynode/client"
	"iggynode/wire"
)

// The SDK against bench.Sink (a server that stores nothing), beside a raw
// loop that only frames (login, then one prebuilt request written and its
// reply read into a reused buffer per op), so the SDK/raw ratio shows in
// one run (issue 20: the SDK within 20 % of the transport ceiling):
//
//	go test -run x -bench 'SendSink|PollSink' -count 5 ./client/
//	go test -run x -bench 'SendSink|PollSink' -count 5 ./client/ -args -sinkproc
//
// One op is one batch of sinkBatch messages of sinkPayload bytes, sent or
// polled in lockstep over loopback TCP.
const (
	sinkBatch   = 1000
	sinkPayload = 1000
)

// sinkProcess runs the sink in a child process (this test binary again,
// see TestMain) so that its garbage (it reads each request into a fresh
// buffer) is not collected on the client's CPU time and its profile stays
// apart: go test -bench SendSink ./client/ -args -sinkproc
var sinkProcess = flag.Bool("sinkproc", false, "run the benchmarks' sink in a child process")

const sinkChildEnv = "IGGYNODE_CLIENT_BENCH_SINK"

func TestMain(m *testing.M) {
	if os.Getenv(sinkChildEnv) != "" {
		serveSinkChild()
		return
	}
	flag.Parse()
	os.Exit(m.Run())
}

// serveSinkChild starts a sink, prints its address and serves until stdin
// closes (the parent exited or is done).
func serveSinkChild() {
	s, err := bench.StartSinkWith("127.0.0.1:0", bench.SinkOptions{PollMessageSize: sinkPayload})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(s.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin)
	s.Close()
}

// startSink returns the address of a sink serving 1000-byte canned polls.
func startSink(b *testing.B) string {
	b.Helper()
	if !*sinkProcess {
		s, err := bench.StartSinkWith("127.0.0.1:0", bench.SinkOptions{PollMessageSize: sinkPayload})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(s.Close)
		return s.Addr()
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), sinkChildEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatalf("sink child: %v", err)
	}
	return strings.TrimSpace(addr)
}

func sinkClient(b *testing.B, addr string) *client.Client {
	b.Helper()
	c, err := client.Connect(context.Background(), client.Options{Address: addr, Username: "iggy", Password: "iggy",
		NoDelay: true, // as cmd/bench, and as the raw loop (Go's default)
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

func sinkMessages() []wire.Message {
	payload := make([]byte, sinkPayload)
	for i := range payload {
		payload[i] = byte('a' + i%26)
	}
	msgs := make([]wire.Message, sinkBatch)
	for i := range msgs {
		msgs[i] = client.NewMessage(payload)
	}
	return msgs
}

func BenchmarkSendSinkSDK(b *testing.B) {
	c := sinkClient(b, startSink(b))
	msgs := sinkMessages()
	ctx := context.Background()
	b.SetBytes(sinkBatch * sinkPayload)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.SendMessages(ctx, wire.ID(1), wire.ID(1), wire.PartitionID(0), msgs); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPollSinkSDK(b *testing.B) {
	c := sinkClient(b, startSink(b))
	ctx := context.Background()
	b.SetBytes(sinkBatch * sinkPayload)
	b.ReportAllocs()
	var offset uint64
	for b.Loop() {
		p, err := c.PollMessages(ctx, wire.SingleConsumer(wire.ID(1)), wire.ID(1), wire.ID(1), wire.Partition(0),
			wire.PollingStrategy{Kind: wire.PollOffset, Value: offset}, sinkBatch, false)
		if err != nil {
			b.Fatal(err)
		}
		if p.MessagesCount != sinkBatch {
			b.Fatalf("polled %d messages", p.MessagesCount)
		}
		offset += sinkBatch
	}
}

// BenchmarkPollSinkSDKInto is the zero-copy poll: one Polled reused.
func BenchmarkPollSinkSDKInto(b *testing.B) {
	c := sinkClient(b, startSink(b))
	ctx := context.Background()
	b.SetBytes(sinkBatch * sinkPayload)
	b.ReportAllocs()
	var p client.Polled
	var offset uint64
	for b.Loop() {
		err := c.PollMessagesInto(ctx, &p, wire.SingleConsumer(wire.ID(1)), wire.ID(1), wire.ID(1), wire.Partition(0),
			wire.PollingStrategy{Kind: wire.PollOffset, Value: offset}, sinkBatch, false)
		if err != nil {
			b.Fatal(err)
		}
		if p.MessagesCount != sinkBatch {
			b.Fatalf("polled %d messages", p.MessagesCount)
		}
		offset += sinkBatch
	}
}

// rawConn is the raw baseline: a TCP connection, a logged-in session and
// a reply buffer reused across requests.
type rawConn struct {
	nc      net.Conn
	client  wire.U128
	session uint64
	user    uint32
	rbuf    []byte
}

func rawLogin(b *testing.B, addr string) *rawConn {
	b.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { nc.Close() })
	r := &rawConn{nc: nc, client: wire.U128{Lo: 7, Hi: 9}, rbuf: make([]byte, 0, 4<<20)}
	body := wire.LoginRegister{ClientInfo: wire.ClientVersionInfo{Version: wire.ProtocolVersion, SDKName: "raw", SDKVersion: "0"},
		Username: "iggy", Password: "iggy"}
	frame := r.frame(wire.OpRegister, body.Code(), 0, body.AppendTo(make([]byte, wire.HeaderSize)))
	rep := r.roundTrip(b, frame)
	var login wire.LoginRegisterResponse
	result, err := wire.SplitResult(rep[wire.HeaderSize:])
	if err != nil {
		b.Fatal(err)
	}
	if err := login.Decode(result); err != nil {
		b.Fatal(err)
	}
	r.session, r.user = login.Session, login.UserID
	return r
}

// frame stamps a request header over the first 256 bytes of f.
func (r *rawConn) frame(op wire.Operation, code wire.CommandCode, request uint64, f []byte) []byte {
	h := wire.RequestHeader{Size: uint32(len(f)), Client: r.client, Operation: op, Session: r.session,
		UserID: r.user, Code: code, Request: request}
	h.Encode(wire.HeaderOf(f))
	return f
}

// roundTrip writes one frame and reads the reply into the reused buffer.
func (r *rawConn) roundTrip(b *testing.B, frame []byte) []byte {
	if _, err := r.nc.Write(frame); err != nil {
		b.Fatal(err)
	}
	head := r.rbuf[:wire.HeaderSize]
	if _, err := io.ReadFull(r.nc, head); err != nil {
		b.Fatal(err)
	}
	size := binary.LittleEndian.Uint32(head[wire.SizeOffset:])
	if int(size) > cap(r.rbuf) {
		b.Fatalf("reply of %d bytes", size)
	}
	rep := r.rbuf[:size]
	if _, err := io.ReadFull(r.nc, rep[wire.HeaderSize:]); err != nil {
		b.Fatal(err)
	}
	if st := wire.HeaderOf(rep).Reply().Status; st != 0 {
		b.Fatalf("status %d", st)
	}
	return rep
}

func BenchmarkSendSinkRaw(b *testing.B) {
	r := rawLogin(b, startSink(b))
	f := wire.AppendSendMessagesHeader(make([]byte, wire.HeaderSize), wire.ID(1), wire.ID(1), wire.PartitionID(0), sinkBatch)
	f, err := wire.AppendBatch(f, sinkMessages())
	if err != nil {
		b.Fatal(err)
	}
	frame := r.frame(wire.OpSendMessages, wire.CodeSendMessages, 1, f)
	b.SetBytes(sinkBatch * sinkPayload)
	b.ReportAllocs()
	for b.Loop() {
		r.roundTrip(b, frame)
	}
}

// BenchmarkSendSinkRawEncode is the raw loop doing a producer's share:
// each op encodes the batch (frame and batch checksums, client-plane.md
// 12.1, 12.2) into a reused buffer before writing it, as any client must.
func BenchmarkSendSinkRawEncode(b *testing.B) {
	r := rawLogin(b, startSink(b))
	msgs := sinkMessages()
	var f []byte
	b.SetBytes(sinkBatch * sinkPayload)
	b.ReportAllocs()
	for b.Loop() {
		f = wire.AppendSendMessagesHeader(append(f[:0], make([]byte, wire.HeaderSize)...), wire.ID(1), wire.ID(1), wire.PartitionID(0), sinkBatch)
		var err error
		if f, err = wire.AppendBatch(f, msgs); err != nil {
			b.Fatal(err)
		}
		r.roundTrip(b, r.frame(wire.OpSendMessages, wire.CodeSendMessages, 1, f))
	}
}

func BenchmarkPollSinkRaw(b *testing.B) {
	r := rawLogin(b, startSink(b))
	body := wire.PollMessages{Consumer: wire.SingleConsumer(wire.ID(1)), Stream: wire.ID(1), Topic: wire.ID(1), Partition: wire.Partition(0),
		Strategy: wire.PollingStrategy{Kind: wire.PollOffset}, Count: sinkBatch}
	frame := r.frame(wire.OpNonReplicated, wire.CodePollMessages, 1, body.AppendTo(make([]byte, wire.HeaderSize)))
	b.SetBytes(sinkBatch * sinkPayload)
	b.ReportAllocs()
	for b.Loop() {
		rep := r.roundTrip(b, frame)
		if n := binary.LittleEndian.Uint32(rep[wire.HeaderSize+12:]); n != sinkBatch {
			b.Fatalf("polled %d messages", n)
		}
	}
}
