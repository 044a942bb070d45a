package client

import (
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
	measure := func(n int) float64 {
		msgs := make([]wire.Message, n)
		for i := range msgs {
			msgs[i] = helloMessage()
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
	one, many := measure(1), measure(500)
	if many > one || one > 8 {
		t.Fatalf("allocations per send: %.0f for 1 message, %.0f for 500", one, many)
	}
	t.Logf("allocations per send: %.0f", one)
}
