package e2e

import (
	"testing"

	"iggynode/client"
	"iggynode/wire"
)

// BenchmarkSend1000x1KB sends 1000-message batches of 1 KB payloads to one
// partition of an in-process node (fsync off) through the SDK.
func BenchmarkSend1000x1KB(b *testing.B) {
	n := startNode(b)
	c := connect(b, n)
	ctx := ctxT(b)
	if _, err := c.CreateStream(ctx, "bench", nil); err != nil {
		b.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, wire.ID(0), "t", 1, nil); err != nil {
		b.Fatal(err)
	}
	msgs := make([]wire.Message, 1000)
	for i := range msgs {
		msgs[i] = client.NewMessage(make([]byte, 1000))
	}
	b.SetBytes(1000 * 1000)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.SendMessages(ctx, wire.ID(0), wire.ID(0), wire.PartitionID(0), msgs); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPoll1000x1KB polls 1000-message batches back from the tail cache.
func BenchmarkPoll1000x1KB(b *testing.B) {
	n := startNode(b)
	c := connect(b, n)
	ctx := ctxT(b)
	if _, err := c.CreateStream(ctx, "bench", nil); err != nil {
		b.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, wire.ID(0), "t", 1, nil); err != nil {
		b.Fatal(err)
	}
	msgs := make([]wire.Message, 1000)
	for i := range msgs {
		msgs[i] = client.NewMessage(make([]byte, 1000))
	}
	for i := 0; i < 20; i++ {
		if _, err := c.SendMessages(ctx, wire.ID(0), wire.ID(0), wire.PartitionID(0), msgs); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(1000 * 1000)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		off := uint64(i%20) * 1000
		p, err := c.PollMessages(ctx, wire.SingleConsumer(wire.ID(1)), wire.ID(0), wire.ID(0), wire.Partition(0), wire.OffsetStrategy(off), 1000, false)
		if err != nil || p.MessagesCount != 1000 {
			b.Fatal(err)
		}
	}
}

// BenchmarkPollCold1000x1KB polls batches that left the 64 MiB tail cache,
// so every poll reads the partition's segment files.
func BenchmarkPollCold1000x1KB(b *testing.B) {
	n := startNode(b)
	c := connect(b, n)
	ctx := ctxT(b)
	if _, err := c.CreateStream(ctx, "bench", nil); err != nil {
		b.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, wire.ID(0), "t", 1, nil); err != nil {
		b.Fatal(err)
	}
	msgs := make([]wire.Message, 1000)
	for i := range msgs {
		msgs[i] = client.NewMessage(make([]byte, 1000))
	}
	const batches = 150
	for i := 0; i < batches; i++ {
		if _, err := c.SendMessages(ctx, wire.ID(0), wire.ID(0), wire.PartitionID(0), msgs); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(1000 * 1000)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		off := uint64(i%50) * 1000 // the oldest 50 batches: evicted
		p, err := c.PollMessages(ctx, wire.SingleConsumer(wire.ID(1)), wire.ID(0), wire.ID(0), wire.Partition(0), wire.OffsetStrategy(off), 1000, false)
		if err != nil || p.MessagesCount != 1000 {
			b.Fatal(err)
		}
	}
}
