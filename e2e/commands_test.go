package e2e

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"iggynode/client"
	"iggynode/wire"
)

func mustCode(t *testing.T, err error, code wire.ErrorCode, what string) {
	t.Helper()
	if !errors.Is(err, code) {
		t.Fatalf("%s: got %v, want %v", what, err, code)
	}
}

// Streams and topics: every command, ids 0-based with reuse of the lowest
// free id, name rules, and the committed rejections (client-plane.md 8.6-8.8).
func TestStreamsTopicsPartitions(t *testing.T) {
	n := startNode(t)
	c := connect(t, n)
	ctx := ctxT(t)
	for i := 0; i < 3; i++ {
		s, err := c.CreateStream(ctx, fmt.Sprintf("s%d", i), nil)
		if err != nil || s.ID != uint32(i) {
			t.Fatalf("stream %d: %+v %v", i, s, err)
		}
	}
	_, err := c.CreateStream(ctx, "s1", nil)
	mustCode(t, err, wire.ErrStreamNameAlreadyExists, "duplicate stream name")
	if err := c.DeleteStream(ctx, wire.ID(1)); err != nil {
		t.Fatal(err)
	}
	mustCode(t, c.DeleteStream(ctx, wire.ID(1)), wire.ErrStreamIdNotFound, "delete twice")
	if s, err := c.CreateStream(ctx, "again", nil); err != nil || s.ID != 1 {
		t.Fatalf("lowest free id must be reused: %+v %v", s, err)
	}
	if err := c.UpdateStream(ctx, wire.Named("again"), "renamed", nil); err != nil {
		t.Fatal(err)
	}
	if s, err := c.GetStream(ctx, wire.ID(1)); err != nil || s.Name != "renamed" {
		t.Fatalf("rename: %+v %v", s, err)
	}
	_, err = c.CreateStream(ctx, "x", wire.Options{{Key: "k", Kind: wire.KindString, Value: []byte("v")}})
	mustCode(t, err, wire.ErrUnsupportedOptionKey, "stream option key")

	tp, err := c.CreateTopic(ctx, wire.ID(0), "t", 2, wire.Options{
		{Key: wire.OptMessageExpiry, Kind: wire.KindString, Value: []byte("7 days")},
	})
	if err != nil || tp.MessageExpiry != 7*24*3600*1_000_000 || len(tp.DerivedOptions) != 7 || len(tp.ExplicitOptions) != 1 {
		t.Fatalf("create topic with options: %+v %v", tp, err)
	}
	_, err = c.CreateTopic(ctx, wire.ID(0), "bad", 1, wire.Options{{Key: "nope", Kind: wire.KindString, Value: []byte("1")}})
	mustCode(t, err, wire.ErrUnsupportedOptionKey, "unknown topic option")
	_, err = c.CreateTopic(ctx, wire.ID(0), "big", 1001, nil)
	mustCode(t, err, wire.ErrTooManyPartitions, "1001 partitions")
	_, err = c.CreateTopic(ctx, wire.ID(9), "t", 1, nil)
	mustCode(t, err, wire.ErrStreamIdNotFound, "topic in a missing stream")

	if err := c.CreatePartitions(ctx, wire.ID(0), wire.ID(0), 3); err != nil {
		t.Fatal(err)
	}
	if got, err := c.GetTopic(ctx, wire.ID(0), wire.ID(0)); err != nil || len(got.Partitions) != 5 || got.Partitions[4].ID != 4 {
		t.Fatalf("after CreatePartitions: %+v %v", got, err)
	}
	if err := c.DeletePartitions(ctx, wire.ID(0), wire.ID(0), 2); err != nil {
		t.Fatal(err)
	}
	mustCode(t, c.DeletePartitions(ctx, wire.ID(0), wire.ID(0), 4), wire.ErrInvalidPartitionsCount, "delete more than exist")
	if err := c.UpdateTopic(ctx, wire.ID(0), wire.ID(0), "t2", wire.Options{
		{Key: wire.OptMaxTopicSize, Kind: wire.KindString, Value: []byte("unlimited")},
	}); err != nil {
		t.Fatal(err)
	}
	topics, err := c.GetTopics(ctx, wire.ID(0))
	if err != nil || len(topics) != 1 || topics[0].Name != "t2" || topics[0].PartitionsCount != 3 {
		t.Fatalf("GetTopics: %+v %v", topics, err)
	}
	if err := c.DeleteTopic(ctx, wire.ID(0), wire.Named("t2")); err != nil {
		t.Fatal(err)
	}
	if topics, err := c.GetTopics(ctx, wire.ID(0)); err != nil || len(topics) != 0 {
		t.Fatalf("after delete: %+v %v", topics, err)
	}
	cat, err := c.DescribeOptions(ctx, 1)
	if err != nil || len(cat) != 8 {
		t.Fatalf("DescribeOptions: %d %v", len(cat), err)
	}
	st, err := c.GetStats(ctx)
	if err != nil || st.StreamsCount != 3 || st.ProcessID == 0 {
		t.Fatalf("stats: %+v %v", st, err)
	}
}

// Polling with every strategy, auto-commit and Next, purge and segments.
func TestPollStrategiesOffsetsAndPurge(t *testing.T) {
	n := startNode(t)
	c := connect(t, n)
	ctx := ctxT(t)
	if _, err := c.CreateStream(ctx, "s", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, wire.ID(0), "t", 1, nil); err != nil {
		t.Fatal(err)
	}
	for b := 0; b < 4; b++ {
		var msgs []wire.Message
		for i := 0; i < 5; i++ {
			msgs = append(msgs, client.NewMessage([]byte(fmt.Sprintf("%d", b*5+i))))
		}
		if _, err := c.SendMessages(ctx, wire.ID(0), wire.ID(0), wire.PartitionID(0), msgs); err != nil {
			t.Fatal(err)
		}
	}
	consumer := wire.SingleConsumer(wire.Named("c1"))
	poll := func(s wire.PollingStrategy, count uint32, auto bool) []wire.PolledMessage {
		t.Helper()
		p, err := c.PollMessages(ctx, consumer, wire.ID(0), wire.ID(0), wire.Partition(0), s, count, auto)
		if err != nil {
			t.Fatalf("poll %v: %v", s, err)
		}
		return client.Messages(p)
	}
	offsets := func(ms []wire.PolledMessage) []uint64 {
		var out []uint64
		for _, m := range ms {
			out = append(out, m.Offset)
		}
		return out
	}
	if got := offsets(poll(wire.OffsetStrategy(7), 4, false)); fmt.Sprint(got) != "[7 8 9 10]" {
		t.Fatalf("offset strategy (sliced across batches): %v", got)
	}
	if got := offsets(poll(wire.FirstStrategy(), 2, false)); fmt.Sprint(got) != "[0 1]" {
		t.Fatalf("first: %v", got)
	}
	if got := offsets(poll(wire.LastStrategy(), 3, false)); fmt.Sprint(got) != "[17 18 19]" {
		t.Fatalf("last: %v", got)
	}
	all := poll(wire.FirstStrategy(), 100, false)
	if got := offsets(poll(wire.TimestampStrategy(all[10].Timestamp), 1, false)); got[0] != 10 {
		t.Fatalf("timestamp: %v", got)
	}
	if got := offsets(poll(wire.NextStrategy(), 6, true)); fmt.Sprint(got) != "[0 1 2 3 4 5]" {
		t.Fatalf("next without a stored offset: %v", got)
	}
	if got := offsets(poll(wire.NextStrategy(), 3, true)); fmt.Sprint(got) != "[6 7 8]" {
		t.Fatalf("next after auto-commit: %v", got)
	}
	off, err := c.GetConsumerOffset(ctx, consumer, wire.ID(0), wire.ID(0), wire.Partition(0))
	if err != nil || off.StoredOffset != 8 || off.CurrentOffset != 19 {
		t.Fatalf("stored offset: %+v %v", off, err)
	}
	mustCode(t, c.StoreConsumerOffset(ctx, consumer, wire.ID(0), wire.ID(0), wire.Partition(0), 20, wire.AckQuorum),
		wire.ErrInvalidOffset, "offset past the newest")
	if err := c.StoreConsumerOffset(ctx, consumer, wire.ID(0), wire.ID(0), wire.Partition(0), 2, wire.AckNone); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteConsumerOffset(ctx, consumer, wire.ID(0), wire.ID(0), wire.Partition(0), wire.AckQuorum); err != nil {
		t.Fatal(err)
	}
	mustCode(t, c.DeleteConsumerOffset(ctx, consumer, wire.ID(0), wire.ID(0), wire.Partition(0), wire.AckQuorum),
		wire.ErrConsumerOffsetNotFound, "delete twice")
	if off, err := c.GetConsumerOffset(ctx, consumer, wire.ID(0), wire.ID(0), wire.Partition(0)); err != nil || off != nil {
		t.Fatalf("deleted offset still there: %+v %v", off, err)
	}
	if err := c.PurgeTopic(ctx, wire.ID(0), wire.ID(0)); err != nil {
		t.Fatal(err)
	}
	if got := poll(wire.FirstStrategy(), 10, false); len(got) != 0 {
		t.Fatalf("purge left %d messages", len(got))
	}
	conf, err := c.SendMessages(ctx, wire.ID(0), wire.ID(0), wire.PartitionID(0), []wire.Message{client.NewMessage([]byte("x"))})
	if err != nil || conf[0].BaseOffset != 0 {
		t.Fatalf("offsets restart at 0 after purge: %+v %v", conf, err)
	}
}

// Segments roll at segment_size; DeleteSegments removes the oldest sealed
// ones and never the active one (server-behaviour.md 5.6, 5.9).
func TestSegmentsRollAndDelete(t *testing.T) {
	n := startNode(t)
	c := connect(t, n)
	ctx := ctxT(t)
	if _, err := c.CreateStream(ctx, "s", nil); err != nil {
		t.Fatal(err)
	}
	_, err := c.CreateTopic(ctx, wire.ID(0), "t", 1, wire.Options{{Key: wire.OptSegmentSize, Kind: wire.KindString, Value: []byte("1 MiB")}})
	if err != nil {
		t.Fatal(err)
	}
	payload := make([]byte, 100_000)
	for i := 0; i < 30; i++ { // ~3 MB: at least two sealed segments
		if _, err := c.SendMessages(ctx, wire.ID(0), wire.ID(0), wire.PartitionID(0), []wire.Message{client.NewMessage(payload)}); err != nil {
			t.Fatal(err)
		}
	}
	tp, err := c.GetTopic(ctx, wire.ID(0), wire.ID(0))
	if err != nil || tp.Partitions[0].SegmentsCount < 3 {
		t.Fatalf("segments did not roll: %+v %v", tp, err)
	}
	before := tp.Partitions[0]
	if err := c.DeleteSegments(ctx, wire.ID(0), wire.ID(0), 0, 1); err != nil {
		t.Fatal(err)
	}
	// Polls reach the partition after the truncation (actor order): the
	// oldest retained message is no longer offset 0.
	p, err := c.PollMessages(ctx, wire.SingleConsumer(wire.ID(1)), wire.ID(0), wire.ID(0), wire.Partition(0), wire.FirstStrategy(), 1, false)
	if err != nil || len(client.Messages(p)) != 1 || client.Messages(p)[0].Offset == 0 {
		t.Fatalf("oldest retained after delete: %v", err)
	}
	// Statistics are kept outside consensus and may lag a moment (9.1).
	var after wire.PartitionResponse
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		tp, _ = c.GetTopic(ctx, wire.ID(0), wire.ID(0))
		if after = tp.Partitions[0]; after.SegmentsCount == before.SegmentsCount-1 {
			break
		}
	}
	if after.SegmentsCount != before.SegmentsCount-1 || after.MessagesCount >= before.MessagesCount {
		t.Fatalf("delete segments: before %+v after %+v", before, after)
	}
	mustCode(t, c.DeleteSegments(ctx, wire.ID(0), wire.ID(0), 7, 1), wire.ErrPartitionNotFound, "missing partition")
}

// Many clients at once on one node: every write lands exactly once.
func TestManyConcurrentClients(t *testing.T) {
	n := startNode(t)
	admin := connect(t, n)
	ctx := ctxT(t)
	if _, err := admin.CreateStream(ctx, "s", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CreateTopic(ctx, wire.ID(0), "t", 4, nil); err != nil {
		t.Fatal(err)
	}
	const clients, sends = 16, 25
	// Logged in one after another: the writes are what runs at once here
	// (16 Argon2id logins at once under -race on a loaded machine can
	// outlast the SDK's request timeout; login floods are
	// bench/loginflood's).
	conns := make([]*client.Client, clients)
	for i := range conns {
		conns[i] = connect(t, n)
	}
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c := conns[i]
			for j := 0; j < sends; j++ {
				msg := client.NewMessage([]byte(fmt.Sprintf("%d-%d", i, j)))
				if _, err := c.SendMessages(ctx, wire.ID(0), wire.ID(0), wire.PartitionID(uint32(i%4)), []wire.Message{msg}); err != nil {
					errs <- err
					return
				}
			}
			if _, err := c.CreateStream(ctx, fmt.Sprintf("c%d", i), nil); err != nil {
				errs <- err
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	total := 0
	for p := uint32(0); p < 4; p++ {
		polled, err := admin.PollMessages(ctx, wire.SingleConsumer(wire.ID(1)), wire.ID(0), wire.ID(0), wire.Partition(p), wire.FirstStrategy(), 1000, false)
		if err != nil {
			t.Fatal(err)
		}
		total += len(client.Messages(polled))
	}
	if total != clients*sends {
		t.Fatalf("stored %d messages, sent %d", total, clients*sends)
	}
	streams, err := admin.GetStreams(ctx)
	if err != nil || len(streams) != clients+1 {
		t.Fatalf("streams: %d %v", len(streams), err)
	}
}

// PurgeStream empties every partition of every topic of the stream and
// keeps the metadata (server-behaviour.md 5.8).
func TestPurgeStream(t *testing.T) {
	n := startNode(t)
	c := connect(t, n)
	ctx := ctxT(t)
	if _, err := c.CreateStream(ctx, "s", nil); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b"} {
		if _, err := c.CreateTopic(ctx, wire.ID(0), name, 2, nil); err != nil {
			t.Fatal(err)
		}
	}
	for topic := uint32(0); topic < 2; topic++ {
		for p := uint32(0); p < 2; p++ {
			if _, err := c.SendMessages(ctx, wire.ID(0), wire.ID(topic), wire.PartitionID(p), []wire.Message{client.NewMessage([]byte("x"))}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := c.StoreConsumerOffset(ctx, wire.SingleConsumer(wire.ID(1)), wire.ID(0), wire.ID(1), wire.Partition(1), 0, wire.AckQuorum); err != nil {
		t.Fatal(err)
	}
	if err := c.PurgeStream(ctx, wire.ID(0)); err != nil {
		t.Fatal(err)
	}
	for topic := uint32(0); topic < 2; topic++ {
		for p := uint32(0); p < 2; p++ {
			polled, err := c.PollMessages(ctx, wire.SingleConsumer(wire.ID(1)), wire.ID(0), wire.ID(topic), wire.Partition(p), wire.FirstStrategy(), 10, false)
			if err != nil || polled.MessagesCount != 0 {
				t.Fatalf("topic %d partition %d after purge: %+v %v", topic, p, polled, err)
			}
		}
	}
	if off, err := c.GetConsumerOffset(ctx, wire.SingleConsumer(wire.ID(1)), wire.ID(0), wire.ID(1), wire.Partition(1)); err != nil || off != nil {
		t.Fatalf("consumer offset survived the purge: %+v %v", off, err)
	}
	if topics, err := c.GetTopics(ctx, wire.ID(0)); err != nil || len(topics) != 2 {
		t.Fatalf("purge must keep the topics: %d %v", len(topics), err)
	}
	mustCode(t, c.PurgeStream(ctx, wire.ID(5)), wire.ErrStreamIdNotFound, "purge a missing stream")
}
