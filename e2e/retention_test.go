package e2e

import (
	"sync/atomic"
	"testing"
	"time"

	"iggynode/client"
	"iggynode/config"
	"iggynode/wire"
)

// fakeClock is an injectable wall clock in µs.
type fakeClock struct{ us atomic.Uint64 }

func (c *fakeClock) now() uint64             { return c.us.Add(1) }
func (c *fakeClock) advance(d time.Duration) { c.us.Add(uint64(d.Microseconds())) }

func oldestOffset(t *testing.T, c *client.Client, topic uint32) (uint64, uint32) {
	t.Helper()
	p, err := c.PollMessages(ctxT(t), wire.SingleConsumer(wire.ID(1)), wire.ID(0), wire.ID(topic), wire.Partition(0), wire.FirstStrategy(), 1, false)
	if err != nil || len(client.Messages(p)) != 1 {
		t.Fatalf("poll first: %v", err)
	}
	tp, err := c.GetTopic(ctxT(t), wire.ID(0), wire.ID(topic))
	if err != nil {
		t.Fatal(err)
	}
	return client.Messages(p)[0].Offset, tp.Partitions[0].SegmentsCount
}

// server-behaviour.md 5.7: the segment cleaner removes expired sealed
// segments and keeps sealed bytes within max_topic_size's budget; the
// active segment stays; an UpdateTopic takes effect without a restart.
// Time comes from an injected clock.
func TestRetentionByExpiryAndSize(t *testing.T) {
	clock := &fakeClock{}
	clock.us.Store(uint64(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()))
	n := startNodeWith(t, t.TempDir(), func(c *config.Config) {
		c.MessageBus.MaxMessageSize = 1 << 20 // size budget floor: segment_size + 1 MiB
		c.DataMaintenance.Messages.CleanerEnabled = false
	}, clock.now)
	t.Cleanup(func() { _ = n.Close() })
	c := connect(t, n)
	ctx := ctxT(t)
	if _, err := c.CreateStream(ctx, "s", nil); err != nil {
		t.Fatal(err)
	}
	str := func(s string) []byte { return []byte(s) }
	if _, err := c.CreateTopic(ctx, wire.ID(0), "expiring", 1, wire.Options{
		{Key: wire.OptSegmentSize, Kind: wire.KindString, Value: str("1 MiB")},
		{Key: wire.OptMessageExpiry, Kind: wire.KindString, Value: str("1 hour")},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, wire.ID(0), "capped", 1, wire.Options{
		{Key: wire.OptSegmentSize, Kind: wire.KindString, Value: str("1 MiB")},
	}); err != nil {
		t.Fatal(err)
	}
	payload := make([]byte, 100_000)
	for topic := uint32(0); topic < 2; topic++ {
		for i := 0; i < 60; i++ { // ~6 MB: five sealed 1 MiB segments and the active one
			if _, err := c.SendMessages(ctx, wire.ID(0), wire.ID(topic), wire.PartitionID(0), []wire.Message{client.NewMessage(payload)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	_, segs := oldestOffset(t, c, 0)
	if segs < 5 {
		t.Fatalf("%d segments; the test needs several sealed ones", segs)
	}
	clock.advance(30 * time.Minute)
	n.Maintain()
	if first, _ := oldestOffset(t, c, 0); first != 0 {
		t.Fatalf("nothing is expired after 30 minutes, yet offset %d is the oldest", first)
	}
	clock.advance(31 * time.Minute)
	n.Maintain()
	first, left := oldestOffset(t, c, 0)
	if first == 0 || left != 1 {
		t.Fatalf("after expiry: oldest %d, %d segments (want only the active one)", first, left)
	}
	// Size cap via UpdateTopic, no restart: budget = 1 MiB + 1 MiB of sealed bytes.
	if first, _ := oldestOffset(t, c, 1); first != 0 {
		t.Fatalf("uncapped topic lost data")
	}
	if err := c.UpdateTopic(ctx, wire.ID(0), wire.ID(1), "capped", wire.Options{
		{Key: wire.OptMaxTopicSize, Kind: wire.KindString, Value: str("2 MiB")},
	}); err != nil {
		t.Fatal(err)
	}
	n.Maintain()
	tp, err := c.GetTopic(ctx, wire.ID(0), wire.ID(1))
	if err != nil {
		t.Fatal(err)
	}
	first, _ = oldestOffset(t, c, 1)
	if first == 0 || tp.Partitions[0].SizeBytes > 4<<20 {
		t.Fatalf("size cap: oldest %d, %d bytes retained", first, tp.Partitions[0].SizeBytes)
	}
}
