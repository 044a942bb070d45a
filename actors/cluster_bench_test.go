package actors

import (
	"context"
	"fmt"
	"testing"
	"time"

	"iggynode/client"
	"iggynode/wire"
)

// BenchmarkClusterSend1000x1KB sends 1000 x 1 KB batches to a partition of
// a three-replica cluster in one process (each send commits on a quorum of
// two).
func BenchmarkClusterSend1000x1KB(b *testing.B) { benchClusterSend(b, nil) }

// BenchmarkClusterSendEvicting1000x1KB is the same with a memory budget
// of 64 MiB, so the partitions' caches evict as they do in a node that
// runs longer than its cache holds: the primary's request buffers go back
// to the pool (actors/pooled.go).
func BenchmarkClusterSendEvicting1000x1KB(b *testing.B) {
	benchClusterSend(b, func(o *Options) { o.Config.Partition.MemoryBudget = 64 << 20 })
}

// BenchmarkClusterSendForwarded1000x1KB is the same with the partition's
// primary on replica 1: replica 0, the client's node, forwards every send
// and relays the reply (partition_forward.go).
func BenchmarkClusterSendForwarded1000x1KB(b *testing.B) {
	benchClusterSend(b, func(o *Options) { o.PartitionView = func(uint64) uint32 { return 1 } })
}

// BenchmarkClusterSendAmong2000Partitions is BenchmarkClusterSend1000x1KB
// with 2000 idle partitions in another topic (issue 16: idle partitions
// must not slow the busy one).
func BenchmarkClusterSendAmong2000Partitions(b *testing.B) { benchClusterSendAmong(b, 2000) }

// BenchmarkClusterSendAmong10000Partitions: the same with 10000.
func BenchmarkClusterSendAmong10000Partitions(b *testing.B) { benchClusterSendAmong(b, 10000) }

func benchClusterSend(b *testing.B, adjust func(*Options)) { benchClusterSendAmong(b, 0, adjust) }

func benchClusterSendAmong(b *testing.B, idle uint32, adjust ...func(*Options)) {
	var adj func(*Options)
	if len(adjust) > 0 {
		adj = adjust[0]
	}
	nodes := startClusterWith(b, 3, adj)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := client.Connect(ctx, client.Options{Address: nodes[0].TCPAddr(), Username: "iggy", Password: "iggy", StayOnNode: true})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	if _, err := c.CreateStream(ctx, "s", nil); err != nil {
		b.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, wire.ID(0), "t", 1, nil); err != nil {
		b.Fatal(err)
	}
	for i := uint32(0); i*1000 < idle; i++ { // at most 1000 per topic
		if _, err := c.CreateTopic(ctx, wire.ID(0), fmt.Sprintf("idle-%d", i), min(1000, idle-i*1000), nil); err != nil {
			b.Fatal(err)
		}
	}
	time.Sleep(3 * time.Second) // the groups boot and go quiet: the same start with and without idle ones
	msgs := make([]wire.Message, 1000)
	for i := range msgs {
		msgs[i] = client.NewMessage(make([]byte, 1000))
	}
	b.SetBytes(1000 * 1000)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.SendMessages(ctx, wire.ID(0), wire.ID(0), wire.PartitionID(0), msgs); err != nil {
			b.Fatal(err)
		}
	}
}
