package partition

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"iggynode/wire"
)

// restoreFrom rebuilds a log from what a live harness left in its store.
func restoreFrom(t *testing.T, h *harness, next uint64) *Log {
	t.Helper()
	r := New(h.log.Config(), h.store)
	if err := r.Restore(h.store.infos(t), next, h.log.ConsumerOffsets()); err != nil {
		t.Fatal(err)
	}
	return r
}

// sameLog compares everything observable of two logs.
func sameLog(t *testing.T, live, restored *Log) {
	t.Helper()
	if !slices.Equal(live.Segments(), restored.Segments()) {
		t.Fatalf("segments\n live     %v\n restored %v", live.Segments(), restored.Segments())
	}
	if live.Stats() != restored.Stats() || live.HighWatermark() != restored.HighWatermark() || live.JournalNext() != restored.JournalNext() {
		t.Fatalf("stats %+v / %+v, frontier %d / %d", live.Stats(), restored.Stats(), live.HighWatermark(), restored.HighWatermark())
	}
	if !slices.Equal(live.index.entries, restored.index.entries) {
		t.Fatalf("index\n live     %v\n restored %v", live.index.entries, restored.index.entries)
	}
	if !slices.Equal(live.ConsumerOffsets(), restored.ConsumerOffsets()) {
		t.Fatalf("offsets %v / %v", live.ConsumerOffsets(), restored.ConsumerOffsets())
	}
	for _, s := range []wire.PollingStrategy{wire.FirstStrategy(), wire.LastStrategy(), wire.OffsetStrategy(7), wire.TimestampStrategy(1_010_000)} {
		a, pa, errA := live.Poll(nil, s, 17, 0, false)
		b, pb, errB := restored.Poll(nil, s, 17, 0, false)
		if errA != nil || errB != nil || pa != pb || !bytes.Equal(a, b) {
			t.Fatalf("%v: polls differ: %+v %v / %+v %v", s.Kind, pa, errA, pb, errB)
		}
	}
}

// replica-plane.md 13.3: segments recomputed at boot from the same batches
// match the live ones, also after segments were deleted from the front.
func TestRestoreMatchesLive(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	h := newHarness(t, Config{SegmentSize: 2000, CacheBytes: 3000})
	for i := range 60 {
		h.send(1+rng.IntN(40), 1+rng.IntN(6))
		if i == 30 {
			h.log.ApplyStoreOffset(wire.ConsumerSingle, 5, h.log.CurrentOffset()-3)
			h.log.ApplyStoreOffset(wire.ConsumerGroup, 1, h.log.CurrentOffset())
		}
	}
	sameLog(t, h.log, restoreFrom(t, h, 0))

	upTo, ok := h.log.DeleteSegmentsUpTo(4)
	if !ok {
		t.Fatal("no sealed segment")
	}
	if tr := h.truncate(upTo); tr.Segments != 4 {
		t.Fatalf("truncated %+v", tr)
	}
	sameLog(t, h.log, restoreFrom(t, h, 0))
	h.send(30, 3, 1, 2)
	sameLog(t, h.log, restoreFrom(t, h, 0))
}

// A partition whose retained batches were all deleted keeps its numbering
// through the watermark the shell passes.
func TestRestoreEmptiedPartition(t *testing.T) {
	h := newHarness(t, Config{SegmentSize: 1})
	h.send(8, 3, 4)
	tr := h.truncate(100)
	if tr.OldestRetained != 7 || len(h.store.batches) != 0 {
		t.Fatalf("truncated %+v, %d stored", tr, len(h.store.batches))
	}
	r := restoreFrom(t, h, tr.OldestRetained)
	sameLog(t, h.log, r)
	if r.StampNext(batchOf(t, 7, 1, 8), 5) != 7 {
		t.Fatal("numbering restarted")
	}
}

func TestRestoreRefusesGapsAndClampsOffsets(t *testing.T) {
	infos := []BatchInfo{{BaseOffset: 0, Count: 2, Size: 300}, {BaseOffset: 3, Count: 1, Size: 300}}
	if err := New(Config{}, nil).Restore(infos, 0, nil); !errors.Is(err, ErrNotContiguous) {
		t.Fatalf("gap: %v", err)
	}
	if err := New(Config{}, nil).Restore(infos[:1], 9, nil); !errors.Is(err, ErrNotContiguous) {
		t.Fatalf("watermark past the batches: %v", err)
	}
	if err := New(Config{}, nil).Restore([]BatchInfo{{BaseOffset: 0, Size: 300}}, 0, nil); !errors.Is(err, ErrBadBatch) {
		t.Fatalf("empty batch: %v", err)
	}
	l := New(Config{}, nil)
	offs := []StoredOffset{{wire.ConsumerSingle, 1, 1}, {wire.ConsumerSingle, 2, 50}}
	if err := l.Restore(infos[:1], 0, offs); err != nil {
		t.Fatal(err)
	}
	want := []StoredOffset{{wire.ConsumerSingle, 1, 1}, {wire.ConsumerSingle, 2, 1}}
	if got := l.ConsumerOffsets(); !slices.Equal(got, want) {
		t.Fatalf("offsets %v", got)
	}
	empty := New(Config{}, nil)
	if err := empty.Restore(nil, 0, offs); err != nil || len(empty.ConsumerOffsets()) != 0 {
		t.Fatalf("offsets on an empty partition: %v %v", err, empty.ConsumerOffsets())
	}
}
