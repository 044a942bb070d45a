package actors

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"iggynode/client"
	"iggynode/config"
	"iggynode/wire"
)

// BenchmarkPollDuringFsyncedSends measures a consumer's polls of a
// partition that four producers keep writing 1 MB batches to, on a topic
// with enforce_fsync, in the data directory's filesystem (TMPDIR: use a
// real disk): on a single node (a group of one, which writes its journal
// behind the mailbox) and on three replicas in one process (a group with
// backups, which writes its committed batches behind the mailbox). It
// reports the polls' median and p99 latency (what a poll waits for while
// the partition writes and syncs its segments) and the producers' MB/s
// meanwhile. Each poll asks for the first message; node-cold's 1 MiB
// memory budget keeps no batch in memory, so each of its polls reads the
// store (the group's batch files, while the partition appends to them).
//
//	go test -run '^$' -bench PollDuringFsyncedSends -benchtime 400x ./actors
func BenchmarkPollDuringFsyncedSends(b *testing.B) {
	b.Run("node", func(b *testing.B) { benchPollDuringFsyncedSends(b, startHeldNode(b, b.TempDir(), nil).TCPAddr()) })
	b.Run("node-cold", func(b *testing.B) { // a 1 MiB budget: every poll reads the store
		n := startHeldNode(b, b.TempDir(), nil, func(c *config.Config) { c.Partition.MemoryBudget = 1 << 20 })
		benchPollDuringFsyncedSends(b, n.TCPAddr())
	})
	b.Run("three-replicas", func(b *testing.B) {
		benchPollDuringFsyncedSends(b, startClusterB(b, 3)[0].TCPAddr())
	})
}

func benchPollDuringFsyncedSends(b *testing.B, addr string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	connect := func() *client.Client {
		c, err := client.Connect(ctx, client.Options{Address: addr, Username: "iggy", Password: "iggy"})
		if err != nil {
			b.Fatal(err)
		}
		return c
	}
	c := connect()
	defer c.Close()
	if _, err := c.CreateStream(ctx, "fs", nil); err != nil {
		b.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, wire.ID(0), "t", 1, wire.Options{{Key: wire.OptEnforceFsync, Kind: wire.KindBool, Value: []byte{1}}}); err != nil {
		b.Fatal(err)
	}
	batch := make([]wire.Message, 1000)
	for i := range batch {
		batch[i] = client.NewMessage(make([]byte, 1000))
	}
	if _, err := c.SendMessages(ctx, wire.ID(0), wire.ID(0), wire.PartitionID(0), batch[:1]); err != nil {
		b.Fatal(err)
	}
	stop := make(chan struct{})
	var sent atomic.Int64
	var producers sync.WaitGroup
	for range 4 {
		pc := connect()
		defer pc.Close()
		producers.Add(1)
		go func() {
			defer producers.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := pc.SendMessages(ctx, wire.ID(0), wire.ID(0), wire.PartitionID(0), batch); err != nil {
					return
				}
				sent.Add(1)
			}
		}()
	}
	time.Sleep(500 * time.Millisecond) // the producers are writing
	lat := make([]time.Duration, 0, b.N)
	sentBefore, began := sent.Load(), time.Now()
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		p, err := c.PollMessages(ctx, wire.SingleConsumer(wire.ID(1)), wire.ID(0), wire.ID(0), wire.Partition(0), wire.OffsetStrategy(0), 1, false)
		if err != nil || p.MessagesCount != 1 {
			b.Fatalf("poll: %v, %d messages", err, p.MessagesCount)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	sendMBs := float64(sent.Load()-sentBefore) / time.Since(began).Seconds() // 1 MB batches
	close(stop)
	producers.Wait()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(sendMBs, "send-MB/s")
}
