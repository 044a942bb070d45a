package client

import (
	"bytes"
	"context"
	"testing"
	"time"

	"iggynode/wire"
)

// loopTransport is an in-memory Transport: it answers every request with a
// canned status-0 reply carrying the request's number and operation. It
// exercises the transport seam without sockets.
type loopTransport struct{ body []byte }

func (l *loopTransport) Name() string { return TransportTCP }

func (l *loopTransport) Dial(context.Context, string) (Conn, error) {
	return &loopConn{reply: replyFrame(0, 0, 0, l.body)}, nil
}

type loopConn struct {
	reply []byte
}

func (c *loopConn) WriteFrame(_ context.Context, _ time.Time, frame []byte) error {
	copy(c.reply[200:208], frame[168:176]) // request echo
	c.reply[208] = frame[176]              // operation echo
	return nil
}

func (c *loopConn) ReadFrame(context.Context, time.Time) ([]byte, error) { return c.reply, nil }
func (c *loopConn) Close() error                                         { return nil }

// DESIGN.md "No per-message allocation on the send and poll paths": the
// allocations of one SendMessages do not grow with the number of messages.
func TestSendMessagesAllocationsDoNotGrowPerMessage(t *testing.T) {
	c, err := New(Options{Address: "loop:1", Dialer: &loopTransport{body: confirmation(0, 0, 0, 0)}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.mu.Lock()
	if err := c.dial(t.Context(), "loop:1"); err != nil {
		t.Fatal(err)
	}
	c.session, c.userID = 1, 1 // a bound session without a login exchange
	c.mu.Unlock()
	measure := func(n, size int) float64 {
		msgs := make([]wire.Message, n)
		for i := range msgs {
			msgs[i] = helloMessage()
			msgs[i].Payload = bytes.Repeat([]byte{'m'}, size)
		}
		ctx := context.Background()
		send := func() {
			if _, err := c.SendMessages(ctx, wire.ID(0), wire.ID(0), wire.PartitionID(0), msgs); err != nil {
				t.Fatal(err)
			}
		}
		send() // grow the reused buffer once
		return testing.AllocsPerRun(50, send)
	}
	// One allocation is the returned SendConfirmations.
	one, many, large := measure(1, 5), measure(500, 5), measure(1000, 1000)
	if many > one || large > one || one > 1 {
		t.Fatalf("allocations per send: %.0f for 1 message, %.0f for 500, %.0f for 1000 x 1 KB", one, many, large)
	}
	t.Logf("allocations per send: %.0f, %.0f for 1000 x 1 KB", one, large)
}

// streamLoopConn is loopConn behind a frameReader: the reply is read from
// an in-memory stream as the TCP carriage reads it, so the zero-copy poll
// swaps real read buffers.
type streamLoopConn struct {
	reply  []byte
	src    bytes.Reader
	frames frameReader
}

func (c *streamLoopConn) WriteFrame(_ context.Context, _ time.Time, frame []byte) error {
	copy(c.reply[200:208], frame[168:176]) // request echo
	c.reply[208] = frame[176]              // operation echo
	c.src.Reset(c.reply)
	return nil
}

func (c *streamLoopConn) ReadFrame(context.Context, time.Time) ([]byte, error) {
	return c.frames.read(&c.src)
}

func (c *streamLoopConn) SwapReadBuffer(buf []byte) []byte { return c.frames.swap(buf) }
func (c *streamLoopConn) Close() error                     { return nil }

type streamLoopTransport struct{ body []byte }

func (l *streamLoopTransport) Name() string { return TransportTCP }

func (l *streamLoopTransport) Dial(context.Context, string) (Conn, error) {
	return &streamLoopConn{reply: replyFrame(0, 0, 0, l.body), frames: newFrameReader(0)}, nil
}

// polledBody is a PollMessages reply body (7.17) with n messages of size
// bytes in one record.
func polledBody(t *testing.T, n, size int) []byte {
	msgs := make([]wire.Message, n)
	payload := bytes.Repeat([]byte{'p'}, size)
	for i := range msgs {
		msgs[i] = wire.Message{ID: wire.U128{Lo: uint64(i) + 1}, OriginTimestamp: 1_700_000_000_000_000, Payload: payload}
	}
	body, err := wire.AppendBatch(wire.AppendPolledHeader(nil, 0, uint64(n-1), uint32(n)), msgs)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// boundClient is a client on t's transport with a bound session and no
// login exchange.
func boundClient(t *testing.T, tr Transport) *Client {
	c, err := New(Options{Address: "loop:1", Dialer: tr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.mu.Lock()
	if err := c.dial(t.Context(), "loop:1"); err != nil {
		t.Fatal(err)
	}
	c.session, c.userID = 1, 1
	c.mu.Unlock()
	return c
}

// DESIGN.md "No per-message allocation on the send and poll paths": a poll
// into a reused Polled allocates nothing, whatever the number of messages
// (the reply buffers swap between the connection and the Polled), and
// PollMessages allocates the same few values (one of them the copy of the
// body) for 1 message as for 1000.
func TestPollAllocationsDoNotGrowPerMessage(t *testing.T) {
	ctx := context.Background()
	for _, n := range []int{1, 1000} {
		c := boundClient(t, &streamLoopTransport{body: polledBody(t, n, 1000)})
		var p Polled
		into := func() {
			if err := c.PollMessagesInto(ctx, &p, wire.SingleConsumer(wire.ID(1)), wire.ID(1), wire.ID(1), wire.Partition(0),
				wire.OffsetStrategy(0), uint32(n), false); err != nil || p.MessagesCount != uint32(n) {
				t.Fatalf("poll into: %d messages, %v", p.MessagesCount, err)
			}
		}
		owned := func() {
			q, err := c.PollMessages(ctx, wire.SingleConsumer(wire.ID(1)), wire.ID(1), wire.ID(1), wire.Partition(0),
				wire.OffsetStrategy(0), uint32(n), false)
			if err != nil || q.MessagesCount != uint32(n) {
				t.Fatalf("poll: %v", err)
			}
		}
		into() // grow the buffers once
		into()
		if a := testing.AllocsPerRun(50, into); a != 0 {
			t.Errorf("%d messages: %.0f allocations per PollMessagesInto, want 0", n, a)
		}
		if a := testing.AllocsPerRun(50, owned); a > 2 {
			t.Errorf("%d messages: %.0f allocations per PollMessages, want <= 2 (the value and its records)", n, a)
		}
	}
}
