package partition

import (
	"slices"
	"testing"

	"iggynode/wire"
)

// server-behaviour.md 6.3.2: 4100 on an empty partition or past the newest
// offset; the newest offset itself is allowed.
func TestCheckStore(t *testing.T) {
	l := New(Config{}, nil)
	if got := l.CheckStore(0); got != wire.ErrInvalidOffset {
		t.Fatalf("empty partition: %v", got)
	}
	h := newHarness(t, Config{})
	h.send(8, 3, 2) // newest 4
	h.stamp(5, 8)   // journaled, not committed: does not count
	for _, c := range []struct {
		offset uint64
		want   wire.ErrorCode
	}{{0, 0}, {3, 0}, {4, 0}, {5, wire.ErrInvalidOffset}, {9, wire.ErrInvalidOffset}, {1 << 63, wire.ErrInvalidOffset}} {
		if got := h.log.CheckStore(c.offset); got != c.want {
			t.Errorf("CheckStore(%d) = %d, want %d", c.offset, got, c.want)
		}
	}
}

// client-plane.md 2.3 and 8.5; server-behaviour.md 6.
func TestConsumerOffsets(t *testing.T) {
	// 17.1: the offset-table key of a consumer named my-consumer.
	named := wire.ConsumerNameKey("my-consumer")
	if named != 0x7E13444F {
		t.Fatalf("key of my-consumer %#x, want 0x7E13444F", named)
	}
	if wire.ConsumerKey(wire.Named("my-consumer")) != named || wire.ConsumerKey(wire.ID(0x7E13444F)) != named {
		t.Fatal("numeric and named consumers with the same key must share a slot")
	}
	h := newHarness(t, Config{})
	h.send(8, 10) // newest 9
	l := h.log

	if got := l.CheckDelete(wire.ConsumerSingle, named); got != wire.ErrConsumerOffsetNotFound {
		t.Fatalf("delete of nothing: %v", got)
	}
	if _, ok := l.GetOffset(wire.ConsumerSingle, named); ok {
		t.Fatal("offset before any store")
	}
	if !l.ApplyStoreOffset(wire.ConsumerSingle, named, 7) {
		t.Fatal("store 7 refused")
	}
	if o, ok := l.GetOffset(wire.ConsumerSingle, named); !ok || o != 7 {
		t.Fatalf("get %d %v", o, ok)
	}
	// Plain consumers and groups have separate slots (6.1).
	if _, ok := l.GetOffset(wire.ConsumerGroup, named); ok {
		t.Fatal("group slot sees the consumer's offset")
	}
	if !l.ApplyStoreOffset(wire.ConsumerGroup, named, 2) {
		t.Fatal("group store refused")
	}
	// Stores overwrite and may move backwards (6.3.4).
	l.ApplyStoreOffset(wire.ConsumerSingle, named, 3)
	if o, _ := l.GetOffset(wire.ConsumerSingle, named); o != 3 {
		t.Fatalf("backwards store: %d", o)
	}
	// Never past the commit frontier.
	if l.ApplyStoreOffset(wire.ConsumerSingle, named, 10) {
		t.Fatal("stored past the newest offset")
	}
	if o, _ := l.GetOffset(wire.ConsumerSingle, named); o != 3 {
		t.Fatalf("refused store changed the offset to %d", o)
	}
	want := []StoredOffset{{wire.ConsumerSingle, named, 3}, {wire.ConsumerGroup, named, 2}}
	if got := l.ConsumerOffsets(); !slices.Equal(got, want) {
		t.Fatalf("table %v", got)
	}
	if b, ok := l.ConsumerBarrier(); !ok || b != 2 {
		t.Fatalf("barrier %d %v", b, ok)
	}
	if l.CheckDelete(wire.ConsumerSingle, named) != 0 || !l.ApplyDeleteOffset(wire.ConsumerSingle, named) {
		t.Fatal("delete refused")
	}
	if l.ApplyDeleteOffset(wire.ConsumerSingle, named) || l.CheckDelete(wire.ConsumerSingle, named) != wire.ErrConsumerOffsetNotFound {
		t.Fatal("second delete found something")
	}

	// Next polls continue after the stored offset.
	o, ok := l.GetOffset(wire.ConsumerGroup, named)
	out, p, _ := l.Poll(nil, wire.NextStrategy(), 3, o, ok)
	checkMessages(t, out, decodeRecords(t, out, p.Count), 3, 5)
}
