package actors

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"iggynode/client"
	"iggynode/internal/framebuf"
	"iggynode/wire"
)

// pooledPayload is message i's payload: 1000 bytes that name it.
func pooledPayload(i int) []byte {
	p := bytes.Repeat([]byte{byte(i)}, 1000)
	copy(p, fmt.Sprintf("message-%d-", i))
	return p
}

// A group with backups recycles its primary's request buffers and the
// backups' prepare buffers, and replicates them intact: with released
// buffers poisoned, a cache of about ten batches, and a backup that is
// away for the first five batches (its partition already there) and then
// repaired from the prepares the primary retains, every replica ends with
// the same bytes, every message polled from each is the one sent, and
// more buffers went back to the pool than the primary alone has (its
// requests: one per batch), so the backups' did too. A buffer released
// while a core still held it (the primary's retained prepares, a
// backup's journal) or a segment write read it puts poison in a
// replica's segments; that a queued frame keeps its buffer (the writers
// drain too fast here to lose the race) is
// TestPooledPrepareSendsPinTheirBuffer's.
func TestPooledBuffersRecycleInAClusterAndReplicateIntact(t *testing.T) {
	framebuf.SetPoison(true)
	t.Cleanup(func() { framebuf.SetPoison(false) })
	nodes := startNodes(t, 3, func(o *Options) { o.Config.Partition.MemoryBudget = 1 << 20 })
	relink := unlinkReplica2(t, nodes)
	ctx, c := rootClient(t, nodes[0])
	stream, group := streamWithTopic(t, ctx, c, nodes[0], "pooled")
	relink()
	waitSameMetadata(t, nodes[0], nodes[2]) // its partition is there before it goes away again
	relink = unlinkReplica2(t, nodes)
	const batches, perBatch = 40, 100 // 100 KB batches: pooled frames
	const away = 5
	send := func(from, to int) {
		t.Helper()
		for b := from; b < to; b++ {
			msgs := make([]wire.Message, perBatch)
			for j := range msgs {
				msgs[j] = client.NewMessage(pooledPayload(b*perBatch + j))
			}
			if _, err := c.SendMessages(ctx, wire.ID(stream), wire.ID(0), wire.PartitionID(0), msgs); err != nil {
				t.Fatalf("send %d: %v", b, err)
			}
		}
	}
	before := framebuf.ReadStats()
	send(0, away)
	relink()
	send(away, batches)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		primary, n := storedBatches(nodes[0], group)
		b1, _ := storedBatches(nodes[1], group)
		b2, _ := storedBatches(nodes[2], group)
		if n == batches && bytes.Equal(primary, b1) && bytes.Equal(primary, b2) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("replicas differ: %d batches on the primary, bytes %d/%d/%d", n, len(primary), len(b1), len(b2))
		}
	}
	for i, n := range nodes {
		rc, err := client.Connect(ctx, client.Options{Address: n.TCPAddr(), Username: "iggy", Password: "iggy", StayOnNode: true})
		if err != nil {
			t.Fatalf("login on replica %d: %v", i, err)
		}
		for next := 0; next < batches*perBatch; {
			p, err := rc.PollMessages(ctx, wire.SingleConsumer(wire.ID(1)), wire.ID(stream), wire.ID(0), wire.Partition(0), wire.OffsetStrategy(uint64(next)), 250, false)
			if err != nil || p.MessagesCount == 0 {
				t.Fatalf("poll at %d on replica %d: %d messages, %v", next, i, p.MessagesCount, err)
			}
			for it := p.Messages(); ; {
				m, ok := it.Next()
				if !ok {
					break
				}
				if m.Offset != uint64(next) || !bytes.Equal(m.Payload, pooledPayload(next)) {
					t.Fatalf("replica %d, offset %d: message at %d with payload %.20q", i, next, m.Offset, m.Payload)
				}
				next++
			}
		}
		rc.Close()
	}
	after := framebuf.ReadStats()
	if after.Recycled-before.Recycled <= batches || after.Reused == before.Reused {
		t.Fatalf("of %d pooled frames %d were recycled and %d handed out again", after.Gets-before.Gets,
			after.Recycled-before.Recycled, after.Reused-before.Reused)
	}
	t.Logf("of %d pooled frames %d were recycled and %d handed out again", after.Gets-before.Gets,
		after.Recycled-before.Recycled, after.Reused-before.Reused)
}
