package partition

import (
	"bytes"
	"errors"
	"math"
	"testing"

	"iggynode/wire"
)

// pollFixture: batches of 3, 4 and 5 messages, offsets 0..2, 3..6, 7..11,
// base timestamps 1_001_000, 1_002_000, 1_003_000.
func pollFixture(t *testing.T, cfg Config) *harness {
	h := newHarness(t, cfg)
	h.send(24, 3, 4, 5)
	return h
}

// client-plane.md 8.4.1; server-behaviour.md 5.5.3-5.5.5.
func TestPollStrategies(t *testing.T) {
	const none = math.MaxUint64
	cases := []struct {
		name      string
		s         wire.PollingStrategy
		count     uint32
		stored    uint64 // none: no stored offset
		from, to  uint64 // expected offsets; from == none: nothing
		records   int
		wholeRecs int // records served byte-for-byte as stored
	}{
		{"offset all", wire.OffsetStrategy(0), 100, none, 0, 11, 3, 3},
		{"offset first frames", wire.OffsetStrategy(0), 2, none, 0, 1, 1, 0},
		{"offset middle of a batch", wire.OffsetStrategy(4), 2, none, 4, 5, 1, 0},
		{"offset across a boundary", wire.OffsetStrategy(5), 4, none, 5, 8, 2, 0},
		{"offset across two boundaries", wire.OffsetStrategy(1), 10, none, 1, 10, 3, 1},
		{"offset last frame", wire.OffsetStrategy(11), 5, none, 11, 11, 1, 0},
		{"offset batch start to end", wire.OffsetStrategy(3), 4, none, 3, 6, 1, 1},
		{"offset past newest", wire.OffsetStrategy(12), 5, none, none, 0, 0, 0},
		{"count 0", wire.OffsetStrategy(0), 0, none, none, 0, 0, 0},
		{"timestamp before all", wire.TimestampStrategy(0), 100, none, 0, 11, 3, 3},
		{"timestamp between batches", wire.TimestampStrategy(1_001_500), 100, none, 3, 11, 2, 2},
		{"timestamp equal to a batch", wire.TimestampStrategy(1_003_000), 2, none, 7, 8, 1, 0},
		{"timestamp after all", wire.TimestampStrategy(1_003_001), 100, none, none, 0, 0, 0},
		{"first", wire.FirstStrategy(), 2, none, 0, 1, 1, 0},
		{"first value ignored", wire.PollingStrategy{Kind: wire.PollFirst, Value: 9}, 3, none, 0, 2, 1, 1},
		{"last 3", wire.LastStrategy(), 3, none, 9, 11, 1, 0},
		{"last 5 is a whole batch", wire.LastStrategy(), 5, none, 7, 11, 1, 1},
		{"last more than held", wire.LastStrategy(), 100, none, 0, 11, 3, 3},
		{"last 12 exactly", wire.LastStrategy(), 12, none, 0, 11, 3, 3},
		{"next without stored offset", wire.NextStrategy(), 4, none, 0, 3, 2, 1},
		{"next after stored", wire.NextStrategy(), 3, 6, 7, 9, 1, 0},
		{"next caught up", wire.NextStrategy(), 3, 11, none, 0, 0, 0},
		{"next stored at u64 max", wire.NextStrategy(), 3, math.MaxUint64 - 1, none, 0, 0, 0},
		{"unknown strategy", wire.PollingStrategy{Kind: 9}, 3, none, none, 0, 0, 0},
	}
	h := pollFixture(t, Config{})
	stored := make(map[uint64][]byte)
	for _, b := range h.store.batches {
		stored[wire.Batch(b).BaseOffset()] = b
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			storedOffset, has := c.stored, c.stored != none
			if c.stored == math.MaxUint64-1 {
				storedOffset = math.MaxUint64
			}
			prefix := []byte("keep")
			out, p, err := h.log.Poll(prefix, c.s, c.count, storedOffset, has)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out[:4], []byte("keep")) {
				t.Fatal("Poll overwrote dst")
			}
			records := out[4:]
			if c.from == none {
				if p.Count != 0 || len(records) != 0 {
					t.Fatalf("served %d messages (%d bytes), want none", p.Count, len(records))
				}
				return
			}
			if p.First != c.from || p.Last != c.to || uint64(p.Count) != c.to-c.from+1 {
				t.Fatalf("Polled %+v, want %d..%d", p, c.from, c.to)
			}
			msgs := decodeRecords(t, records, p.Count)
			checkMessages(t, records, msgs, c.from, c.to)
			recs, whole := 0, 0
			it := wire.RecordsOf(records)
			for {
				rec, ok := it.Next()
				if !ok {
					break
				}
				recs++
				if bytes.Equal(rec, stored[rec.BaseOffset()]) {
					whole++
				} else if rec.BaseTimestamp() != wire.Batch(stored[rec.BaseOffset()]).BaseTimestamp() {
					t.Fatalf("sliced record lost its base_timestamp")
				}
			}
			if recs != c.records || whole != c.wholeRecs {
				t.Fatalf("%d records (%d whole), want %d (%d whole)", recs, whole, c.records, c.wholeRecs)
			}
			// Served messages carry their batch's server timestamp (13.3).
			for _, m := range msgs {
				want := uint64(1_001_000)
				if m.Offset >= 3 {
					want = 1_002_000
				}
				if m.Offset >= 7 {
					want = 1_003_000
				}
				if m.Timestamp != want {
					t.Fatalf("message %d: timestamp %d, want %d", m.Offset, m.Timestamp, want)
				}
			}
		})
	}
}

// server-behaviour.md 0.6: journaled but uncommitted batches are invisible.
func TestPollNeverPastFrontier(t *testing.T) {
	h := pollFixture(t, Config{})
	pending := h.stamp(4, 24) // 12..15, not committed
	for _, s := range []wire.PollingStrategy{wire.OffsetStrategy(0), wire.OffsetStrategy(12), wire.LastStrategy(), wire.TimestampStrategy(h.ts)} {
		out, p, err := h.log.Poll(nil, s, 100, 0, false)
		if err != nil {
			t.Fatal(err)
		}
		if p.Count > 0 && p.Last > 11 {
			t.Fatalf("%v served up to %d past the frontier 11", s.Kind, p.Last)
		}
		for _, m := range decodeRecords(t, out, p.Count) {
			if m.Offset > 11 {
				t.Fatalf("%v served offset %d", s.Kind, m.Offset)
			}
		}
	}
	h.commit(pending)
	out, p, _ := h.log.Poll(nil, wire.OffsetStrategy(12), 100, 0, false)
	checkMessages(t, out, decodeRecords(t, out, p.Count), 12, 15)
}

// server-behaviour.md 5.5.3 and 5.7.6: polls below the oldest retained
// message start at the oldest retained one.
func TestPollBelowOldestRetained(t *testing.T) {
	h := newHarness(t, Config{SegmentSize: 1}) // every batch seals its segment
	h.send(24, 3, 4, 5)                        // segments 0..2, 3..6, 7..11, active empty
	if tr := h.truncate(6); tr.Segments != 2 || tr.OldestRetained != 7 {
		t.Fatalf("truncate: %+v", tr)
	}
	for _, c := range []struct {
		s      wire.PollingStrategy
		stored uint64
		has    bool
	}{{wire.OffsetStrategy(0), 0, false}, {wire.OffsetStrategy(5), 0, false}, {wire.FirstStrategy(), 0, false},
		{wire.NextStrategy(), 0, false}, {wire.NextStrategy(), 2, true}, {wire.TimestampStrategy(0), 0, false}, {wire.LastStrategy(), 0, false}} {
		if start, ok := h.log.StartOffset(c.s, 100, c.stored, c.has); !ok || start != 7 {
			t.Fatalf("%v: start (%d, %v), want the oldest retained 7", c.s.Kind, start, ok)
		}
		out, p, err := h.log.Poll(nil, c.s, 100, c.stored, c.has)
		if err != nil {
			t.Fatal(err)
		}
		checkMessages(t, out, decodeRecords(t, out, p.Count), 7, 11)
	}
}

// Evicted batches are read back through the Store; failures are reported.
func TestPollThroughStore(t *testing.T) {
	h := newHarness(t, Config{CacheBytes: 1}) // keeps nothing once persisted
	h.send(24, 3, 4, 5)
	if len(h.log.cache) != 0 {
		t.Fatalf("%d batches cached past a 1-byte bound", len(h.log.cache))
	}
	out, p, err := h.log.Poll(nil, wire.OffsetStrategy(1), 10, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	checkMessages(t, out, decodeRecords(t, out, p.Count), 1, 10)
	if h.store.reads != 3 {
		t.Fatalf("%d store reads, want 3", h.store.reads)
	}

	// Read failure: the poll reply is the 16-byte empty poll with the
	// partition id (client-plane.md 8.4.1, last row).
	h.store.fail = errors.New("disk on fire")
	body, p, err := h.log.AppendPollReply([]byte{0xAA}, 3, wire.FirstStrategy(), 10, 0, false)
	if !errors.Is(err, ErrReadFailure) || p.Count != 0 {
		t.Fatalf("read failure: err %v, polled %+v", err, p)
	}
	if want := []byte{0xAA, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}; !bytes.Equal(body, want) {
		t.Fatalf("failure body % x", body)
	}

	// What the store returns must be the indexed batch.
	h.store.fail = nil
	h.store.batches[3] = h.store.batches[0]
	if _, _, err := h.log.Poll(nil, wire.OffsetStrategy(3), 10, 0, false); !errors.Is(err, ErrReadFailure) {
		t.Fatalf("wrong batch from the store: %v", err)
	}
}

// Batches not yet persisted are never evicted: the store could not serve them.
func TestCacheKeepsUnpersistedBatches(t *testing.T) {
	h := newHarness(t, Config{CacheBytes: 1})
	for _, n := range []int{3, 4} {
		if err := h.log.ApplySend(h.stamp(n, 24)); err != nil {
			t.Fatal(err)
		}
	}
	if len(h.log.cache) != 2 {
		t.Fatalf("%d cached, want both unpersisted batches", len(h.log.cache))
	}
	out, p, err := h.log.Poll(nil, wire.FirstStrategy(), 100, 0, false)
	if err != nil || h.store.reads != 0 {
		t.Fatalf("err %v, %d store reads", err, h.store.reads)
	}
	checkMessages(t, out, decodeRecords(t, out, p.Count), 0, 6)
	h.log.MarkPersisted(3)
	if len(h.log.cache) != 1 || h.log.cacheFirst != 1 {
		t.Fatalf("after persisting the first batch: %d cached from %d", len(h.log.cache), h.log.cacheFirst)
	}
	h.log.MarkPersisted(7)
	if len(h.log.cache) != 0 {
		t.Fatalf("%d cached after everything was persisted", len(h.log.cache))
	}
	// The cache restarts at the next committed batch.
	if err := h.log.ApplySend(h.stamp(2, 24)); err != nil {
		t.Fatal(err)
	}
	checkCache(t, h.log)
	out, p, err = h.log.Poll(nil, wire.OffsetStrategy(7), 100, 0, false)
	if err != nil || h.store.reads != 0 {
		t.Fatalf("err %v, %d store reads", err, h.store.reads)
	}
	checkMessages(t, out, decodeRecords(t, out, p.Count), 7, 8)
}

// 5.5.5 Recommended: records stop before the reply would pass the bound,
// and the first record is always served.
func TestPollMaxBytes(t *testing.T) {
	h := newHarness(t, Config{MaxPollBytes: 1})
	h.send(100, 2, 2, 2)
	out, p, _ := h.log.Poll(nil, wire.FirstStrategy(), 100, 0, false)
	checkMessages(t, out, decodeRecords(t, out, p.Count), 0, 1)

	size := len(h.store.batches[0])
	h = newHarness(t, Config{MaxPollBytes: uint64(2*size + 10)})
	h.send(100, 2, 2, 2)
	out, p, _ = h.log.Poll(nil, wire.FirstStrategy(), 100, 0, false)
	checkMessages(t, out, decodeRecords(t, out, p.Count), 0, 3)
}

func TestAppendPollReply(t *testing.T) {
	h := pollFixture(t, Config{})
	body, p, err := h.log.AppendPollReply(nil, 2, wire.OffsetStrategy(5), 4, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	var pm wire.PolledMessages
	if err := pm.Decode(body); err != nil {
		t.Fatal(err)
	}
	if pm.PartitionID != 2 || pm.CurrentOffset != 11 || pm.MessagesCount != 4 || p.Count != 4 {
		t.Fatalf("reply %d/%d/%d, polled %+v", pm.PartitionID, pm.CurrentOffset, pm.MessagesCount, p)
	}
	checkMessages(t, pm.Records, decodeRecords(t, pm.Records, 4), 5, 8)

	empty, _, _ := h.log.AppendPollReply(nil, 2, wire.OffsetStrategy(50), 4, 0, false)
	if want := []byte{2, 0, 0, 0, 11, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}; !bytes.Equal(empty, want) {
		t.Fatalf("poll past the end: % x", empty)
	}
	fresh := New(Config{}, nil)
	empty, _, _ = fresh.AppendPollReply(nil, 0, wire.FirstStrategy(), 4, 0, false)
	if len(empty) != 16 || !bytes.Equal(empty, make([]byte, 16)) {
		t.Fatalf("empty partition: % x", empty)
	}
}

// appendStore is a memStore that can also append a batch straight into a
// poll reply (AppendReader).
type appendStore struct {
	*memStore
	appends int
}

func (a *appendStore) AppendBatchTo(dst []byte, base uint64) ([]byte, error) {
	b, err := a.ReadBatch(base)
	if err != nil {
		return dst, err
	}
	a.appends++
	return append(dst, b...), nil
}

// Evicted batches served whole are appended by the Store directly; a batch
// that must be sliced still goes through ReadBatch; both give the same
// records as the general path.
func TestPollAppendsEvictedBatchesDirectly(t *testing.T) {
	h := newHarness(t, Config{CacheBytes: 1})
	as := &appendStore{memStore: h.store}
	h.log.store = as
	h.send(24, 3, 4, 5)
	out, p, err := h.log.Poll(nil, wire.OffsetStrategy(1), 10, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	checkMessages(t, out, decodeRecords(t, out, p.Count), 1, 10)
	// Batch 0..2 is sliced (starts at 1): ReadBatch; 3..6 whole: appended;
	// 7..11 sliced at the count: ReadBatch.
	if as.appends != 1 || h.store.reads != 3 {
		t.Fatalf("%d direct appends, %d reads; want 1 and 3 (two via ReadBatch, one via AppendBatchTo)", as.appends, h.store.reads)
	}
}
