package client_test

import (
	"context"
	"testing"
	"time"

	"iggynode/bench"
	"iggynode/client"
	"iggynode/wire"
)

// The zero-copy poll over every binary carriage: one Polled reused across
// polls reads each reply whole (buffers swap between the connection and the
// Polled), while a PollMessages result keeps its records after later polls
// (it owns them).
func TestPollIntoEveryTransport(t *testing.T) {
	for _, tr := range []string{"tcp", "tls", "quic", "ws", "wss"} {
		t.Run(tr, func(t *testing.T) {
			s, err := bench.StartSinkWith("127.0.0.1:0", bench.SinkOptions{Transport: tr, PollMessageSize: 500})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			o := client.Options{Address: s.Addr(), Username: "iggy", Password: "iggy"}
			switch tr {
			case "tls":
				o.TLS = client.TLSOptions{Enabled: true, InsecureSkipVerify: true}
			case "quic":
				o.Transport = client.TransportQUIC
				o.QUIC.SkipCertificateVerification = true
			case "wss":
				o.TLS = client.TLSOptions{Enabled: true, InsecureSkipVerify: true}
				fallthrough
			case "ws":
				o.Transport = client.TransportWS
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			c, err := client.Connect(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			poll := func(dst *client.Polled, offset uint64, count uint32) {
				t.Helper()
				if err := c.PollMessagesInto(ctx, dst, wire.SingleConsumer(wire.ID(1)), wire.ID(1), wire.ID(1), wire.Partition(0),
					wire.OffsetStrategy(offset), count, false); err != nil {
					t.Fatal(err)
				}
				checkPolled(t, &dst.PolledMessages, offset, count)
			}
			owned, err := c.PollMessages(ctx, wire.SingleConsumer(wire.ID(1)), wire.ID(1), wire.ID(1), wire.Partition(0),
				wire.OffsetStrategy(7), 300, false)
			if err != nil {
				t.Fatal(err)
			}
			var p client.Polled
			for i, count := range []uint32{200, 300, 5, 200, 300} { // large and small replies, grown and shrunk
				poll(&p, uint64(i)*1000, count)
			}
			checkPolled(t, owned, 7, 300)
		})
	}
}

// checkPolled checks count messages from offset with the sink's payload.
func checkPolled(t *testing.T, p *wire.PolledMessages, offset uint64, count uint32) {
	t.Helper()
	if p.MessagesCount != count {
		t.Fatalf("polled %d messages, want %d", p.MessagesCount, count)
	}
	n := uint64(0)
	for it := p.Messages(); ; n++ {
		m, ok := it.Next()
		if !ok {
			break
		}
		if m.Offset != offset+n || len(m.Payload) != 500 || m.Payload[0] != 'a' || m.Payload[499] != byte('a'+499%26) {
			t.Fatalf("message %d: offset %d, %d-byte payload", n, m.Offset, len(m.Payload))
		}
	}
	if n != uint64(count) {
		t.Fatalf("iterated %d messages, want %d", n, count)
	}
}
