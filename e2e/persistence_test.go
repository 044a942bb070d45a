package e2e

import (
	"bytes"
	"fmt"
	"testing"

	"iggynode/client"
	"iggynode/wire"
)

// Everything acknowledged survives a graceful restart: metadata, messages
// byte for byte, consumer offsets, and the id allocators.
func TestRestartKeepsEverything(t *testing.T) {
	dir := t.TempDir()
	n := startNodeIn(t, dir)
	c := connect(t, n)
	ctx := ctxT(t)
	if _, err := c.CreateStream(ctx, "s0", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, wire.ID(0), "t0", 2, nil); err != nil {
		t.Fatal(err)
	}
	var before []byte
	for i := 0; i < 20; i++ {
		msgs := []wire.Message{client.NewMessage([]byte(fmt.Sprintf("payload-%03d", i)))}
		if _, err := c.SendMessages(ctx, wire.ID(0), wire.ID(0), wire.PartitionID(uint32(i%2)), msgs); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.StoreConsumerOffset(ctx, wire.SingleConsumer(wire.Named("reader")), wire.ID(0), wire.ID(0), wire.Partition(0), 4, wire.AckQuorum); err != nil {
		t.Fatal(err)
	}
	p, err := c.PollMessages(ctx, wire.SingleConsumer(wire.ID(1)), wire.ID(0), wire.ID(0), wire.Partition(0), wire.FirstStrategy(), 100, false)
	if err != nil {
		t.Fatal(err)
	}
	before = append(before, p.Records...)
	_ = c.Close()
	if err := n.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}

	n2 := startNodeIn(t, dir)
	t.Cleanup(func() { _ = n2.Close() })
	c2 := connect(t, n2)
	streams, err := c2.GetStreams(ctx)
	if err != nil || len(streams) != 1 || streams[0].Name != "s0" || streams[0].TopicsCount != 1 {
		t.Fatalf("streams after restart: %+v %v", streams, err)
	}
	p2, err := c2.PollMessages(ctx, wire.SingleConsumer(wire.ID(1)), wire.ID(0), wire.ID(0), wire.Partition(0), wire.FirstStrategy(), 100, false)
	if err != nil || !bytes.Equal(p2.Records, before) || p2.MessagesCount != 10 {
		t.Fatalf("records after restart differ (count %d, err %v)", p2.MessagesCount, err)
	}
	off, err := c2.GetConsumerOffset(ctx, wire.SingleConsumer(wire.Named("reader")), wire.ID(0), wire.ID(0), wire.Partition(0))
	if err != nil || off == nil || off.StoredOffset != 4 || off.CurrentOffset != 9 {
		t.Fatalf("offset after restart: %+v %v", off, err)
	}
	// New writes continue the numbering.
	conf, err := c2.SendMessages(ctx, wire.ID(0), wire.ID(0), wire.PartitionID(0), []wire.Message{client.NewMessage([]byte("after"))})
	if err != nil || conf[0].BaseOffset != 10 {
		t.Fatalf("send after restart: %+v %v", conf, err)
	}
	s, err := c2.CreateStream(ctx, "s1", nil)
	if err != nil || s.ID != 1 {
		t.Fatalf("next stream id after restart: %+v %v", s, err)
	}
}

// The metadata journal is checkpointed into a snapshot and compacted; a
// restart recovers from the snapshot plus the journal above it.
func TestRestartAfterMetadataCheckpoint(t *testing.T) {
	dir := t.TempDir()
	n := startNodeIn(t, dir)
	c := connect(t, n)
	ctx := ctxT(t)
	const streams = 1100 // more ops than journal_slots (1024) allows
	for i := 0; i < streams; i++ {
		if _, err := c.CreateStream(ctx, fmt.Sprintf("s%04d", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	_ = c.Close()
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	n2 := startNodeIn(t, dir)
	t.Cleanup(func() { _ = n2.Close() })
	c2 := connect(t, n2)
	got, err := c2.GetStreams(ctx)
	if err != nil || len(got) != streams || got[streams-1].Name != fmt.Sprintf("s%04d", streams-1) {
		t.Fatalf("after restart: %d streams, %v", len(got), err)
	}
	if s, err := c2.CreateStream(ctx, "next", nil); err != nil || s.ID != streams {
		t.Fatalf("next stream: %+v %v", s, err)
	}
}
