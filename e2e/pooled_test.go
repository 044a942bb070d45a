package e2e

import (
	"fmt"
	"testing"
	"time"

	"iggynode/client"
	"iggynode/config"
	"iggynode/internal/framebuf"
	"iggynode/wire"
)

// Request buffers are recycled (internal/framebuf, actors/pooled.go) and
// a poll never serves bytes of a buffer handed out again: with a cache of
// a few batches, one client sends batches of 200 KB (pooled frames) while
// another polls right behind it, so polls carry cached batches by
// reference while the cache evicts and recycles the ones before; released
// buffers are poisoned at once, so a reply that read bytes after their
// release would carry the poison (payloads and their checks: hpPayload,
// hpCheck in pooled_hostile_test.go). Every payload polled, during the sends
// and afterwards from the files, is the one sent at its offset, and
// buffers went back to the pool and out again (over the binary
// transports: HTTP bodies are not read into pooled frames).
func TestPooledRequestBuffersNeverServeReusedBytes(t *testing.T) {
	framebuf.SetPoison(true)
	t.Cleanup(func() { framebuf.SetPoison(false) })
	n := startNodeWith(t, t.TempDir(), func(c *config.Config) { c.Partition.MemoryBudget = 1 << 20 }, nil)
	t.Cleanup(func() { _ = n.Close() })
	producer, consumer := connect(t, n), connect(t, n)
	ctx := ctxT(t)
	if _, err := producer.CreateStream(ctx, "pooled", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := producer.CreateTopic(ctx, wire.ID(0), "t", 1, nil); err != nil {
		t.Fatal(err)
	}
	const batches, perBatch = 40, 100
	const total = batches * perBatch
	before := framebuf.ReadStats()
	polled := make(chan error, 1)
	go func() {
		// Right behind the producer: next to poll is next.
		for next := uint64(0); next < total; {
			p, err := consumer.PollMessages(ctx, wire.SingleConsumer(wire.ID(1)), wire.ID(0), wire.ID(0), wire.Partition(0), wire.OffsetStrategy(next), perBatch, false)
			if err != nil {
				polled <- fmt.Errorf("poll at %d: %w", next, err)
				return
			}
			r, err := hpCheck(p, 0, true)
			if err == nil && r.n > 0 && r.first != next {
				err = fmt.Errorf("%d messages from %d", r.n, r.first)
			}
			if err != nil {
				polled <- fmt.Errorf("poll during the sends at %d: %w", next, err)
				return
			}
			next += uint64(r.n)
		}
		polled <- nil
	}()
	for b := range batches {
		if err := hpSend(ctx, producer, wire.ID(0), wire.ID(0), 0, 0, uint64(b*perBatch), perBatch); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-polled; err != nil {
		t.Fatal(err)
	}
	readAll(t, ctx, consumer, wire.ID(0), wire.ID(0), 0, 0, total, 250, 37)
	after := framebuf.ReadStats()
	if transportFor(t).kind == client.TransportHTTP {
		return
	}
	if after.Recycled-before.Recycled < batches/2 || after.Reused == before.Reused {
		t.Fatalf("of %d pooled frames %d were recycled and %d handed out again", after.Gets-before.Gets,
			after.Recycled-before.Recycled, after.Reused-before.Reused)
	}
	// Deleting the stream hands back what its partition still cached.
	if err := producer.DeleteStream(ctx, wire.ID(0)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for framebuf.ReadStats().Recycled == after.Recycled {
		if time.Now().After(deadline) {
			t.Fatal("the deleted partition's cached batches were not recycled")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
