package e2e

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"iggynode/client"
	"iggynode/config"
	"iggynode/internal/framebuf"
	"iggynode/wire"
)

// pooledPayload is the payload of the message at offset off.
func pooledPayload(off uint64) []byte {
	p := make([]byte, 2000)
	binary.LittleEndian.PutUint64(p, off)
	for j := 8; j < len(p); j++ {
		p[j] = byte(off*7 + uint64(j))
	}
	return p
}

// Request buffers are recycled (internal/framebuf, actors/pooled.go) and
// a poll never serves bytes of a buffer handed out again: with a cache of
// a few batches, one client sends batches of 200 KB (pooled frames) while
// another polls right behind it, so polls carry cached batches by
// reference while the cache evicts and recycles the ones before; released
// buffers are poisoned at once, so a reply that read bytes after their
// release would carry the poison. Every payload polled, during the sends
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
	check := func(p *wire.PolledMessages, from uint64, what string) uint64 {
		t.Helper()
		off := from
		for _, m := range client.Messages(p) {
			if m.Offset != off {
				t.Fatalf("%s: offset %d where %d was due", what, m.Offset, off)
			}
			if !bytes.Equal(m.Payload, pooledPayload(off)) {
				poisoned := bytes.Count(m.Payload, []byte{framebuf.PoisonByte})
				t.Fatalf("%s: the payload at offset %d is not the one sent (%d poison bytes)", what, off, poisoned)
			}
			off++
		}
		return off
	}
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
			off := next
			for _, m := range client.Messages(p) {
				if m.Offset != off || !bytes.Equal(m.Payload, pooledPayload(off)) {
					polled <- fmt.Errorf("poll during the sends: the message at offset %d is not the one sent", off)
					return
				}
				off++
			}
			next = off
		}
		polled <- nil
	}()
	for b := range batches {
		msgs := make([]wire.Message, perBatch)
		for i := range msgs {
			msgs[i] = client.NewMessage(pooledPayload(uint64(b*perBatch + i)))
		}
		if _, err := producer.SendMessages(ctx, wire.ID(0), wire.ID(0), wire.PartitionID(0), msgs); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-polled; err != nil {
		t.Fatal(err)
	}
	for _, step := range []uint32{250, 37} {
		for off := uint64(0); off < total; {
			p, err := consumer.PollMessages(ctx, wire.SingleConsumer(wire.ID(1)), wire.ID(0), wire.ID(0), wire.Partition(0), wire.OffsetStrategy(off), step, false)
			if err != nil {
				t.Fatalf("poll %d at %d: %v", step, off, err)
			}
			next := check(p, off, fmt.Sprintf("poll of %d after the sends", step))
			if next == off {
				t.Fatalf("poll %d at %d: no messages", step, off)
			}
			off = next
		}
	}
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
