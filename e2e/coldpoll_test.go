package e2e

import (
	"bytes"
	"fmt"
	"testing"

	"iggynode/client"
	"iggynode/config"
	"iggynode/wire"
)

// Polls of batches that left the partition cache (a 256 KiB memory
// budget, 3 MB sent) serve the stored bytes: whole batches (written from
// their files' mappings over plain TCP, read into memory elsewhere), sliced
// first and last batches, polls that mix evicted and cached batches, and
// every payload comes back in order whatever the transport.
func TestColdPollsServeTheStoredBatches(t *testing.T) {
	n := startNodeWith(t, t.TempDir(), func(c *config.Config) { c.Partition.MemoryBudget = 256 << 10 }, nil)
	t.Cleanup(func() { _ = n.Close() })
	c := connect(t, n)
	ctx := ctxT(t)
	if _, err := c.CreateStream(ctx, "cold", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, wire.ID(0), "t", 1, nil); err != nil {
		t.Fatal(err)
	}
	const batches, perBatch = 30, 100
	var sent [][]byte
	for b := 0; b < batches; b++ {
		msgs := make([]wire.Message, perBatch)
		for i := range msgs {
			p := bytes.Repeat([]byte{byte(b), byte(i)}, 500)
			p = append(p, fmt.Sprintf("%d-%d", b, i)...)
			sent = append(sent, p)
			msgs[i] = client.NewMessage(p)
		}
		if _, err := c.SendMessages(ctx, wire.ID(0), wire.ID(0), wire.PartitionID(0), msgs); err != nil {
			t.Fatal(err)
		}
	}
	for _, step := range []uint32{perBatch, 3 * perBatch, 250, 37, 1000} {
		for off := uint64(0); off < uint64(len(sent)); {
			p, err := c.PollMessages(ctx, wire.SingleConsumer(wire.ID(1)), wire.ID(0), wire.ID(0), wire.Partition(0), wire.OffsetStrategy(off), step, false)
			if err != nil {
				t.Fatalf("poll %d at %d: %v", step, off, err)
			}
			got := client.Messages(p)
			if len(got) == 0 {
				t.Fatalf("poll %d at %d: no messages", step, off)
			}
			for _, m := range got {
				if m.Offset != off || !bytes.Equal(m.Payload, sent[off]) {
					t.Fatalf("poll %d: message %d differs (offset %d)", step, off, m.Offset)
				}
				off++
			}
		}
	}
}
