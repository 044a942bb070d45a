package metadata

import (
	"bytes"
	"testing"

	"iggynode/wire"
)

// client-plane.md 7.1-7.5, 8.6, 8.7.1: reads, with statistics from
// SetPartitionStats and the not-found conventions.
func TestReads(t *testing.T) {
	h := newHarness(t)
	h.createStream("s")
	created := h.ts
	h.createTopic(wire.ID(0), "t", 2, nil)
	h.s.SetPartitionStats(partitionGroup(0, 0, 1), PartitionStats{SizeBytes: 100, MessagesCount: 3, CurrentOffset: 2, SegmentsCount: 2})
	h.s.SetPartitionStats(partitionGroup(0, 0, 7), PartitionStats{SizeBytes: 1}) // no such partition: ignored

	status, p, ok := h.s.Read(0, wire.CodeGetStream, wire.GetStream{Stream: wire.Named("s")}.AppendTo(nil))
	if !ok || status != 0 {
		t.Fatal("GetStream")
	}
	want := hx("00000000")
	want = append(want, u64le(created)...)
	want = append(want, hx("01000000  6400000000000000  0300000000000000  01 73  00000000")...)
	if !bytes.HasPrefix(p, want) {
		t.Fatalf("GetStream head\n got % x\nwant % x", p[:len(want)], want)
	}
	var sd wire.StreamDetails
	if err := sd.Decode(p); err != nil || len(sd.Topics) != 1 || sd.Topics[0].SizeBytes != 100 || sd.Topics[0].PartitionsCount != 2 {
		t.Fatalf("GetStream topics %+v %v", sd.Topics, err)
	}

	_, p, _ = h.s.Read(0, wire.CodeGetTopic, wire.GetTopic{Stream: wire.ID(0), Topic: wire.Named("t")}.AppendTo(nil))
	var td wire.TopicDetails
	if err := td.Decode(p); err != nil {
		t.Fatal(err)
	}
	// Reads report at least one segment per partition.
	if td.Partitions[0].SegmentsCount != 1 || td.Partitions[1].SegmentsCount != 2 || td.Partitions[1].CurrentOffset != 2 ||
		td.MessagesCount != 3 || td.Partitions[1].MessagesCount != 3 {
		t.Fatalf("GetTopic partitions %+v", td.Partitions)
	}

	_, p, _ = h.s.Read(0, wire.CodeGetStreams, nil)
	var ss wire.Streams
	if err := ss.Decode(p); err != nil || len(ss) != 1 || ss[0].TopicsCount != 1 {
		t.Fatalf("GetStreams %+v", ss)
	}
	_, p, _ = h.s.Read(0, wire.CodeGetTopics, wire.GetTopics{Stream: wire.ID(0)}.AppendTo(nil))
	var ts wire.Topics
	if err := ts.Decode(p); err != nil || len(ts) != 1 {
		t.Fatalf("GetTopics %+v", ts)
	}

	nothing := []struct {
		code wire.CommandCode
		body []byte
		want []byte
	}{
		{wire.CodeGetStream, wire.GetStream{Stream: wire.ID(4)}.AppendTo(nil), nil},
		{wire.CodeGetTopic, wire.GetTopic{Stream: wire.ID(4), Topic: wire.ID(0)}.AppendTo(nil), nil},
		{wire.CodeGetTopic, wire.GetTopic{Stream: wire.ID(0), Topic: wire.ID(4)}.AppendTo(nil), nil},
		{wire.CodeGetTopics, wire.GetTopics{Stream: wire.Named("x")}.AppendTo(nil), hx("00000000")},
		{wire.CodeGetUser, wire.GetUser{User: wire.Named("ghost")}.AppendTo(nil), nil},
		{wire.CodeDescribeOptions, []byte{2}, hx("00000000")},
		{wire.CodeDescribeOptions, []byte{3}, hx("00000000")},
	}
	for _, n := range nothing {
		status, p, _ := h.s.Read(0, n.code, n.body)
		if status != 0 || !bytes.Equal(p, n.want) || (n.want == nil) != (p == nil) {
			t.Errorf("%v: status %d payload % x, want % x", n.code, status, p, n.want)
		}
	}
	for _, u := range []struct {
		code wire.CommandCode
		body []byte
	}{
		{wire.CodeGetStream, hx("01 03 00")},
		{wire.CodeGetTopic, wire.GetStream{Stream: wire.ID(0)}.AppendTo(nil)},
		{wire.CodeGetTopics, nil},
		{wire.CodeGetUser, hx("02 00")},
		{wire.CodeDescribeOptions, []byte{4}},
		{wire.CodeDescribeOptions, nil},
	} {
		if status, p, _ := h.s.Read(0, u.code, u.body); status != wire.ErrInvalidCommand || p != nil {
			t.Errorf("%v % x: status %d, want S 3", u.code, u.body, status)
		}
	}
	if _, _, ok := h.s.Read(0, wire.CodeGetStats, nil); ok {
		t.Error("GetStats is the shell's")
	}
	_, p, _ = h.s.Read(0, wire.CodeDescribeOptions, []byte{1})
	if !bytes.Equal(p, wire.TopicOptionCatalog().AppendTo(nil)) {
		t.Error("DescribeOptions scope 1")
	}
	// Root: id 0, created_at 1, active, all ten global flags, no streams.
	_, p, _ = h.s.Read(0, wire.CodeGetUser, wire.GetUser{User: wire.ID(0)}.AppendTo(nil))
	wantRoot := hx("00000000 0100000000000000 01 04 69676779 00000000  01 0b000000 01010101010101010101 00")
	if !bytes.Equal(p, wantRoot) {
		t.Fatalf("root\n got % x\nwant % x", p, wantRoot)
	}
	_, p, _ = h.s.Read(0, wire.CodeGetUsers, nil)
	if !bytes.Equal(p, wantRoot[:22]) {
		t.Fatalf("GetUsers % x", p)
	}
	tot := h.s.Totals()
	if tot != (Totals{Streams: 1, Topics: 1, Partitions: 2, Segments: 3, Users: 1, MessagesCount: 3, SizeBytes: 100}) {
		t.Fatalf("totals %+v", tot)
	}
}

// replica-plane.md 4.1, 13.4; client-plane.md 14.2: resolution helpers.
func TestResolve(t *testing.T) {
	h := newHarness(t)
	h.createStream("a")
	h.createStream("s")
	h.createTopic(wire.ID(1), "empty", 0, nil)
	h.createTopic(wire.ID(1), "t", 3, nil)
	if sid, tid, code := h.s.ResolveTopic(wire.Named("s"), wire.Named("t")); code != 0 || sid != 1 || tid != 1 {
		t.Fatal("ResolveTopic")
	}
	if _, _, code := h.s.ResolveTopic(wire.Named("S"), wire.ID(0)); code != wire.ErrStreamIdNotFound {
		t.Fatal("names are case-sensitive")
	}
	ref, code := h.s.ResolvePartition(wire.ID(1), wire.ID(1), 2)
	if code != 0 || ref.Group != 0x1_0010_0002 || ref.CreationID != 3 {
		t.Fatalf("ResolvePartition %+v", ref)
	}
	for _, c := range []struct {
		s, t wire.Identifier
		p    uint32
		want wire.ErrorCode
	}{
		{wire.ID(5), wire.ID(0), 0, wire.ErrStreamIdNotFound},
		{wire.ID(1), wire.ID(5), 0, wire.ErrTopicIdNotFound},
		{wire.ID(1), wire.ID(1), 3, wire.ErrPartitionNotFound},
		{wire.ID(1), wire.ID(0), 0, wire.ErrPartitionNotFound},
	} {
		if _, code := h.s.ResolvePartition(c.s, c.t, c.p); code != c.want {
			t.Errorf("ResolvePartition(%v,%v,%d) = %d, want %d", c.s, c.t, c.p, code, c.want)
		}
	}
	// Balanced: a per-topic cursor from 0, modulo the partition count.
	for i, want := range []uint32{0, 1, 2, 0, 1} {
		ref, code := h.s.ResolveSend(wire.ID(1), wire.ID(1), wire.Balanced())
		if code != 0 || ref.Partition != want {
			t.Fatalf("balanced send %d went to %d", i, ref.Partition)
		}
	}
	key := []byte("user-42")
	ref, _ = h.s.ResolveSend(wire.ID(1), wire.ID(1), wire.MessagesKey(key))
	if ref.Partition != wire.PartitionIndexForKey(key, 3) {
		t.Fatal("messages key")
	}
	if ref, _ := h.s.ResolveSend(wire.ID(1), wire.ID(1), wire.PartitionID(2)); ref.Partition != 2 {
		t.Fatal("partition id")
	}
	for _, c := range []struct {
		s, t wire.Identifier
		p    wire.Partitioning
	}{
		{wire.ID(1), wire.ID(1), wire.PartitionID(3)},
		{wire.ID(1), wire.ID(0), wire.Balanced()},
		{wire.ID(1), wire.ID(9), wire.Balanced()},
		{wire.ID(9), wire.ID(1), wire.Balanced()},
	} {
		if _, code := h.s.ResolveSend(c.s, c.t, c.p); code != wire.ErrResourceNotFound {
			t.Errorf("send to %v/%v/%v: %d, want 20", c.s, c.t, c.p, code)
		}
	}
	all := h.s.Partitions()
	if len(all) != 3 || all[0].Group != 0x1_0010_0000 || all[2].Partition != 2 {
		t.Fatalf("Partitions %+v", all)
	}
	if got, ok := h.s.Partition(0x1_0010_0001); !ok || got.CreationID != 2 {
		t.Fatal("Partition by group")
	}
	if _, ok := h.s.Partition(wire.MetadataGroup); ok {
		t.Fatal("metadata group is no partition")
	}
}

// server-behaviour.md 7.3, 7.8.1: partition count changes and logouts
// fully rebalance the topic's groups.
func TestGroupRebalances(t *testing.T) {
	h := newHarness(t)
	h.createStream("s")
	h.createTopic(wire.ID(0), "t", 3, nil)
	topic := h.s.streams[0].topics[0]
	g := &ConsumerGroup{ID: 0, Name: "g", Members: []*GroupMember{{Slot: 0, Client: clientA}, {Slot: 2, Client: h.client}}}
	topic.addGroup(g)
	topic.NextGroupID = 1
	h.ok(wire.OpCreatePartitions, wire.CreatePartitions{Stream: wire.ID(0), Topic: wire.ID(0), PartitionsCount: 2}.AppendTo(nil))
	if g.Generation != 1 || !equalU32(g.Members[0].Partitions, 0, 2, 4) || !equalU32(g.Members[1].Partitions, 1, 3) {
		t.Fatalf("after add: gen %d %v %v", g.Generation, g.Members[0].Partitions, g.Members[1].Partitions)
	}
	if m := h.s.Memberships(h.client); len(m) != 1 || m[0] != (wire.ConsumerGroupInfo{}) {
		t.Fatalf("memberships %+v", m)
	}
	h.submit(0, wire.OpLogout, nil)
	if g.Generation != 2 || len(g.Members) != 1 || !equalU32(g.Members[0].Partitions, 0, 1, 2, 3, 4) {
		t.Fatalf("after logout: gen %d members %d", g.Generation, len(g.Members))
	}
	if len(h.s.Memberships(h.client)) != 0 {
		t.Fatal("still a member after logout")
	}
}

func equalU32(got []uint32, want ...uint32) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}
