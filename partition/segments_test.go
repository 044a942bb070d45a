package partition

import (
	"math"
	"slices"
	"testing"

	"iggynode/wire"
)

// batchSize is the size of a batch of n messages with p-byte payloads.
func batchSize(n, p int) uint64 { return uint64(wire.BatchHeaderSize + n*(wire.FrameHeaderSize+p)) }

// server-behaviour.md 5.6.3-5.6.4: a segment seals once an append makes it
// reach segment_size, the crossing batch stays in it, and a new empty
// active segment starts at the next offset.
func TestSegmentRolling(t *testing.T) {
	one := batchSize(2, 52) // 256 + 2*100 = 456 bytes
	h := newHarness(t, Config{SegmentSize: 1000})
	if got := h.log.Segments(); len(got) != 1 || got[0].Sealed || got[0].Messages != 0 {
		t.Fatalf("fresh log segments %v", got)
	}
	if st := h.log.Stats(); st != (Stats{SegmentsCount: 1}) {
		t.Fatalf("fresh stats %+v", st)
	}
	h.send(52, 2, 2, 2) // 456, 912, 1368 >= 1000: sealed with the crossing batch
	h.send(52, 2, 2)    // 456, 912: active
	want := []Segment{
		{StartOffset: 0, EndOffset: 5, SizeBytes: 3 * one, Messages: 6, LastTimestamp: 1_003_000, Sealed: true},
		{StartOffset: 6, EndOffset: 9, SizeBytes: 2 * one, Messages: 4, LastTimestamp: 1_005_000},
	}
	if got := h.log.Segments(); !slices.Equal(got, want) {
		t.Fatalf("segments\n got %v\nwant %v", got, want)
	}
	h.send(52, 1) // 912 + 356 = 1268: seals; a new empty active segment at 11
	segs := h.log.Segments()
	if len(segs) != 3 || !segs[1].Sealed || segs[1].EndOffset != 10 || segs[2] != (Segment{StartOffset: 11}) {
		t.Fatalf("segments %v", segs)
	}
	st := h.log.Stats()
	if st.SegmentsCount != 3 || st.CurrentOffset != 10 || st.MessagesCount != 11 || st.SizeBytes != 5*one+batchSize(1, 52) {
		t.Fatalf("stats %+v", st)
	}
}

// client-plane.md 8.9; server-behaviour.md 5.9.1-5.9.2.
func TestDeleteSegmentsUpTo(t *testing.T) {
	h := newHarness(t, Config{SegmentSize: 1})
	if _, ok := h.log.DeleteSegmentsUpTo(3); ok {
		t.Fatal("fresh partition: something to delete")
	}
	h.send(8, 3, 4, 5) // sealed 0..2, 3..6, 7..11; active empty at 12
	cases := []struct {
		count uint32
		upTo  uint64
		ok    bool
	}{{0, 0, false}, {1, 2, true}, {2, 6, true}, {3, 11, true}, {4, 11, true}, {math.MaxUint32, 11, true}}
	for _, c := range cases {
		upTo, ok := h.log.DeleteSegmentsUpTo(c.count)
		if upTo != c.upTo || ok != c.ok {
			t.Errorf("count %d: (%d, %v), want (%d, %v)", c.count, upTo, ok, c.upTo, c.ok)
		}
	}
	// The active segment is never a candidate, even when it holds messages.
	h2 := newHarness(t, Config{SegmentSize: 1 << 20})
	h2.send(8, 3, 4)
	if _, ok := h2.log.DeleteSegmentsUpTo(5); ok {
		t.Fatal("the active segment was offered for deletion")
	}
	if tr := h2.truncate(math.MaxUint64 - 1); tr.Segments != 0 || h2.log.Stats().MessagesCount != 7 {
		t.Fatalf("truncate removed the active segment: %+v", tr)
	}
}

// server-behaviour.md 5.9.1, 5.9.3 and 5.7.6.
func TestTruncate(t *testing.T) {
	h := newHarness(t, Config{SegmentSize: batchSize(3, 8)}) // one 3-message batch per segment
	h.send(8, 3, 3, 3, 3)                                    // sealed 0..2, 3..5, 6..8, 9..11
	upTo, _ := h.log.DeleteSegmentsUpTo(2)
	tr := h.truncate(upTo)
	if tr != (Truncated{Segments: 2, Messages: 6, Bytes: 2 * batchSize(3, 8), OldestRetained: 6}) {
		t.Fatalf("truncated %+v", tr)
	}
	checkCache(t, h.log)
	if len(h.log.cache) != 2 {
		t.Fatalf("%d batches cached after truncation, want the 2 retained", len(h.log.cache))
	}
	st := h.log.Stats()
	if st.SegmentsCount != 3 || st.MessagesCount != 6 || st.CurrentOffset != 11 || st.SizeBytes != 2*batchSize(3, 8) {
		t.Fatalf("stats after truncate %+v", st)
	}
	if o, _ := h.log.OldestOffset(); o != 6 {
		t.Fatalf("oldest %d", o)
	}
	// A watermark in the middle of a segment removes nothing of it.
	if tr := h.truncate(7); tr.Segments != 0 || tr.OldestRetained != 6 {
		t.Fatalf("mid-segment watermark: %+v", tr)
	}
	// The watermark never moves back: 8 removes 6..8, and a later lower
	// one keeps 8 (9..11 ends above it).
	h.truncate(8)
	if h.log.Stats().MessagesCount != 3 {
		t.Fatalf("messages %d after watermark 8", h.log.Stats().MessagesCount)
	}
	h.send(8, 3)
	if tr := h.truncate(0); tr.Segments != 0 {
		t.Fatalf("a lower watermark removed %d segments", tr.Segments)
	}
	// Offsets are never renumbered (5.7.6).
	if h.log.CurrentOffset() != 14 || h.log.JournalNext() != 15 {
		t.Fatalf("current %d journal %d", h.log.CurrentOffset(), h.log.JournalNext())
	}
}

// A watermark that arrives before the partition sealed the segment it
// names takes effect when re-evaluated after the seal.
func TestTruncateWatermarkPending(t *testing.T) {
	h := newHarness(t, Config{SegmentSize: batchSize(3, 8)})
	h.send(8, 3)
	h.truncate(5) // 0..2 is sealed and goes; 3..5 is not committed yet
	if h.log.Stats().MessagesCount != 0 {
		t.Fatalf("0..2 not removed")
	}
	h.send(8, 3) // seals 3..5, which the pending watermark covers
	if tr := h.truncate(0); tr.Segments != 1 || tr.OldestRetained != 6 {
		t.Fatalf("re-evaluation: %+v", tr)
	}
}

// server-behaviour.md 5.7.4: no sealed segment whose last offset is above
// the smallest stored consumer offset is deleted.
func TestTruncateConsumerBarrier(t *testing.T) {
	h := newHarness(t, Config{SegmentSize: 1})
	h.send(8, 3, 3, 3, 3) // sealed 0..2, 3..5, 6..8, 9..11
	h.log.ApplyStoreOffset(wire.ConsumerSingle, 1, 10)
	h.log.ApplyStoreOffset(wire.ConsumerGroup, 1, 4) // the barrier
	if tr := h.truncate(11); tr.Segments != 1 || tr.OldestRetained != 3 {
		t.Fatalf("barrier 4: %+v", tr)
	}
	h.log.ApplyStoreOffset(wire.ConsumerGroup, 1, 8)
	if tr := h.truncate(0); tr.Segments != 2 || tr.OldestRetained != 9 {
		t.Fatalf("barrier 8, watermark 11 re-evaluated: %+v", tr)
	}
	h.log.ApplyDeleteOffset(wire.ConsumerGroup, 1) // barrier 10
	if tr := h.truncate(0); tr.Segments != 0 {
		t.Fatalf("barrier 10: %+v", tr)
	}
	h.log.ApplyDeleteOffset(wire.ConsumerSingle, 1) // no barrier
	if tr := h.truncate(0); tr.Segments != 1 || tr.OldestRetained != 12 {
		t.Fatalf("no barrier: %+v", tr)
	}
	if st := h.log.Stats(); st.SegmentsCount != 1 || st.MessagesCount != 0 || st.SizeBytes != 0 || st.CurrentOffset != 11 {
		t.Fatalf("stats %+v", st)
	}
	out, p, err := h.log.Poll(nil, wire.FirstStrategy(), 10, 0, false)
	if err != nil || p.Count != 0 || len(out) != 0 {
		t.Fatalf("poll of an emptied partition: %v %+v", err, p)
	}
	h.send(8, 1)
	if o, _ := h.log.OldestOffset(); o != 12 {
		t.Fatalf("numbering restarted at %d", o)
	}
}

// server-behaviour.md 5.8.
func TestPurge(t *testing.T) {
	h := newHarness(t, Config{SegmentSize: 1})
	h.send(8, 3, 4)
	h.log.ApplyStoreOffset(wire.ConsumerSingle, 7, 5)
	h.log.Truncate(2)
	inFlight := h.stamp(2, 8) // stamped 7..8 before the purge
	gen := h.log.Generation()
	h.log.Purge()
	st := h.log.Stats()
	if st != (Stats{SegmentsCount: 1}) || h.log.HighWatermark() != 0 || h.log.JournalNext() != 0 || h.log.HasMessages() {
		t.Fatalf("after purge: %+v frontier %d journal %d", st, h.log.HighWatermark(), h.log.JournalNext())
	}
	if segs := h.log.Segments(); len(segs) != 1 || segs[0] != (Segment{}) {
		t.Fatalf("segments %v", segs)
	}
	if _, ok := h.log.GetOffset(wire.ConsumerSingle, 7); ok || h.log.Generation() != gen+1 {
		t.Fatal("consumer offsets survived the purge")
	}
	if err := h.log.ApplySend(inFlight); err == nil {
		t.Fatal("a batch stamped before the purge committed after it")
	}
	// 5.8.3: a consumer-offset write in flight is discarded.
	if h.log.ApplyStoreOffset(wire.ConsumerSingle, 7, 5) {
		t.Fatal("offset stored on the purged, empty partition")
	}
	clear(h.store.batches) // the on-disk reset (5.8.2)
	h.send(8, 2)           // 0..1, sealed
	out, p, _ := h.log.Poll(nil, wire.FirstStrategy(), 10, 0, false)
	checkMessages(t, out, decodeRecords(t, out, p.Count), 0, 1)
	// The watermark 2 was wiped too (5.8.1): 0 covers nothing of 0..1.
	if tr := h.log.Truncate(0); tr.Segments != 0 {
		t.Fatalf("the pre-purge watermark survived: %+v", tr)
	}
}

// server-behaviour.md 5.7: the cleaner's choices, computed, not applied.
func TestRetention(t *testing.T) {
	seg := func(end, size, ts uint64, sealed bool) Segment {
		return Segment{EndOffset: end, SizeBytes: size, Messages: 1, LastTimestamp: ts, Sealed: sealed}
	}
	segs := []Segment{seg(9, 100, 1000, true), seg(19, 100, 2000, true), seg(29, 100, 3000, true), seg(39, 100, 9000, false)}
	expiry := []struct {
		now, expiry uint64
		want        int
	}{
		{1999, 1000, 0}, {2000, 1000, 1}, {3999, 1000, 2}, {4000, 1000, 3}, {1 << 40, 1000, 3},
		{1 << 40, 0, 0}, {1 << 40, math.MaxUint64, 0}, {1 << 40, math.MaxUint64 - 1000, 0},
	}
	for _, c := range expiry {
		if got := ExpiredSegments(segs, c.now, c.expiry); got != c.want {
			t.Errorf("ExpiredSegments(now %d, expiry %d) = %d, want %d", c.now, c.expiry, got, c.want)
		}
	}
	// Expiry stops at the first unexpired segment, even if later ones are older.
	odd := []Segment{seg(9, 1, 5000, true), seg(19, 1, 1000, true)}
	if got := ExpiredSegments(odd, 3000, 1000); got != 0 {
		t.Errorf("expired past an unexpired segment: %d", got)
	}

	budgets := []struct {
		max, seg, msg uint64
		parts         uint32
		want          uint64
		ok            bool
	}{
		{0, 100, 10, 1, 0, false}, {math.MaxUint64, 100, 10, 1, 0, false},
		{1000, 100, 10, 2, 500, true}, {1000, 100, 10, 20, 110, true}, {1000, 100, 10, 0, 1000, true},
		{1000, math.MaxUint64, 10, 1, math.MaxUint64, true},
	}
	for _, c := range budgets {
		got, ok := SizeBudget(c.max, c.parts, c.seg, c.msg)
		if got != c.want || ok != c.ok {
			t.Errorf("SizeBudget(%d, %d, %d, %d) = %d, %v", c.max, c.parts, c.seg, c.msg, got, ok)
		}
	}
	for _, c := range []struct {
		budget uint64
		want   int
	}{{300, 0}, {299, 1}, {200, 1}, {100, 2}, {0, 3}} {
		if got := OversizeSegments(segs, c.budget); got != c.want {
			t.Errorf("OversizeSegments(budget %d) = %d, want %d", c.budget, got, c.want)
		}
	}
}

func TestRetentionCandidates(t *testing.T) {
	h := newHarness(t, Config{SegmentSize: 1})
	counts := make([]int, 20)
	for i := range counts {
		counts[i] = 1
	}
	h.send(8, counts...) // 20 sealed one-message segments, timestamps 1_001_000.. step 1000
	r := Retention{MessageExpiryUs: 1000, MaxTopicSize: math.MaxUint64}
	if n, upTo := h.log.RetentionCandidates(1_004_000, r); n != 3 || upTo != 2 {
		t.Fatalf("expiry: (%d, %d)", n, upTo)
	}
	if n, upTo := h.log.RetentionCandidates(1<<40, r); n != MaxSegmentsPerPass || upTo != 15 {
		t.Fatalf("cap: (%d, %d)", n, upTo)
	}
	one := batchSize(1, 8)
	size := Retention{MaxTopicSize: 15 * one, PartitionsCount: 1, SegmentSize: 1, MaxMessageSize: 1}
	if n, upTo := h.log.RetentionCandidates(0, size); n != 5 || upTo != 4 {
		t.Fatalf("size: (%d, %d)", n, upTo)
	}
	h.log.ApplyStoreOffset(wire.ConsumerSingle, 1, 2)
	if n, upTo := h.log.RetentionCandidates(1<<40, r); n != 3 || upTo != 2 {
		t.Fatalf("barrier: (%d, %d)", n, upTo)
	}
	if n, _ := h.log.RetentionCandidates(0, Retention{}); n != 0 {
		t.Fatalf("defaults enforce nothing: %d", n)
	}
	if h.log.Stats().MessagesCount != 20 {
		t.Fatal("RetentionCandidates removed something")
	}
}
