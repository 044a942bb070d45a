package partition

import (
	"bytes"
	"testing"

	"iggynode/wire"
)

// A spliced poll reply is the very reply AppendPollReply builds, with
// cached batches (whole, or a slice's frames) referenced instead of copied: for every strategy
// and count, with part of the log evicted and a poll byte bound, the
// joined pieces equal the copied reply, and the spliced bytes are the
// cache's own (no copy).
func TestPollSplicedEqualsPoll(t *testing.T) {
	for _, cache := range []uint64{1 << 30, 3000} { // all cached; the older ones evicted
		for _, maxBytes := range []uint64{0, 2500} {
			for _, stored := range []bool{false, true} {
				h := newHarness(t, Config{CacheBytes: cache, MaxPollBytes: maxBytes})
				h.send(100, 3, 4, 5, 1, 6, 2, 7)
				strategies := []wire.PollingStrategy{wire.FirstStrategy(), wire.LastStrategy(), wire.NextStrategy(),
					wire.OffsetStrategy(0), wire.OffsetStrategy(3), wire.OffsetStrategy(5), wire.OffsetStrategy(12), wire.OffsetStrategy(27),
					wire.TimestampStrategy(0)}
				spliced, fromStore, slices, readBack := 0, 0, 0, 0
				for _, s := range strategies {
					for _, count := range []uint32{1, 2, 4, 7, 13, 100} {
						want, wp, werr := h.log.AppendPollReply([]byte("hdr"), 1, s, count, 4, true)
						built, splices, gp, gerr := h.log.AppendPollReplySpliced([]byte("hdr"), nil, stored, 1, s, count, 4, true)
						if (werr == nil) != (gerr == nil) || wp != gp {
							t.Fatalf("%v x %d: polled %+v %v, spliced %+v %v", s, count, wp, werr, gp, gerr)
						}
						if got, err := wire.JoinSpliced(nil, built, splices); err != nil || !bytes.Equal(got, want) {
							t.Fatalf("cache %d, bound %d, %v x %d: spliced reply differs from the copied one", cache, maxBytes, s, count)
						}
						if n := wire.SplicedLen(built, splices); n != len(want) {
							t.Fatalf("SplicedLen %d, want %d", n, len(want))
						}
						for _, sp := range splices {
							switch {
							case sp.From != nil && !stored:
								t.Fatalf("a stored source spliced into a reply that did not ask for them")
							case sp.From != nil:
								fromStore++
							case !h.inCache(sp.Bytes) && !h.inStore(sp.Bytes):
								t.Fatalf("a spliced batch is neither the cache's bytes nor a batch read back from the store")
							case !h.inCache(sp.Bytes):
								readBack++
							case !h.wholeBatch(sp.Bytes):
								slices++
							}
						}
						spliced += len(splices)
					}
				}
				if cache > 3000 && spliced == 0 {
					t.Fatalf("nothing was spliced from a log held in the cache")
				}
				if cache > 3000 && slices == 0 {
					t.Fatalf("no slice of a cached batch was spliced")
				}
				if cache == 3000 && readBack == 0 {
					t.Fatalf("no slice of an evicted batch was spliced from its read-back bytes")
				}
				if stored && cache == 3000 && fromStore == 0 {
					t.Fatalf("no evicted batch was spliced from the store")
				}
			}
		}
	}
}

// wholeBatch reports whether b is one of the cache's batches itself.
func (h *harness) wholeBatch(b []byte) bool {
	for _, c := range h.log.cache {
		if len(c) > 0 && len(b) == len(c) && &c[0] == &b[0] {
			return true
		}
	}
	return false
}

// inStore reports whether b lies inside one of the store's batches (the
// memStore's reads return them, not copies).
func (h *harness) inStore(b []byte) bool {
	for _, c := range h.store.batches {
		if wire.Aliases(c, b) {
			return true
		}
	}
	return false
}

// inCache reports whether b lies inside one of the cache's batches (a
// whole batch, or the frames of a slice): the cache's bytes, not a copy.
func (h *harness) inCache(b []byte) bool {
	for _, c := range h.log.cache {
		if wire.Aliases(c, b) {
			return true
		}
	}
	return false
}

// Spliced polls that slice evicted batches read each batch from the store
// once: the batch a poll ends in is kept (counted in CachedBytes) for the
// next poll, which starts in it. A shed to zero drops it too, and a
// copied poll (no splices) never keeps one.
func TestSlicedPollsReadEachEvictedBatchOnce(t *testing.T) {
	h := newHarness(t, Config{})
	h.send(100, 10, 10, 10, 10, 10)
	h.log.ShedCache(0)
	if h.log.CachedBytes() != 0 || len(h.log.cache) != 0 {
		t.Fatalf("%d bytes cached after ShedCache(0)", h.log.CachedBytes())
	}
	for from := uint64(5); from < 45; from += 10 {
		built, splices, p, err := h.log.AppendPollReplySpliced(nil, nil, false, 1, wire.OffsetStrategy(from), 10, 0, false)
		if err != nil {
			t.Fatal(err)
		}
		body, err := wire.JoinSpliced(nil, built, splices)
		if err != nil {
			t.Fatal(err)
		}
		checkMessages(t, body[16:], decodeRecords(t, body[16:], p.Count), from, from+9)
		checkCache(t, h.log)
	}
	if h.store.reads != 5 {
		t.Fatalf("4 polls across 5 evicted batches read the store %d times, want 5", h.store.reads)
	}
	if h.log.CachedBytes() != uint64(len(h.log.readBack)) || h.log.readBack == nil {
		t.Fatalf("read-back batch of %d bytes, CachedBytes %d", len(h.log.readBack), h.log.CachedBytes())
	}
	h.log.ShedCache(0)
	if h.log.CachedBytes() != 0 || h.log.readBack != nil {
		t.Fatalf("ShedCache(0) kept %d bytes", h.log.CachedBytes())
	}
	h.store.reads = 0
	for from := uint64(5); from < 45; from += 10 {
		if _, _, err := h.log.Poll(nil, wire.OffsetStrategy(from), 10, 0, false); err != nil {
			t.Fatal(err)
		}
	}
	if h.store.reads != 8 || h.log.readBack != nil {
		t.Fatalf("copied polls: %d store reads (want 8: two per poll), read-back kept %v", h.store.reads, h.log.readBack != nil)
	}
}

// Evicted batches that kept their frame table (from admission,
// ApplySendIndexed) are sliced from their stored bytes: each record's
// header is built from the kept header and table, its frames are a range
// of the stored batch (sent from the file), and nothing is read into
// memory. The tables are shed after the batches: once gone, the same
// polls read each batch back.
func TestStoredSlicesOfIndexedBatchesReadNothing(t *testing.T) {
	const batches, perBatch = 5, 10
	h := newHarness(t, Config{})
	for range batches {
		h.commitIndexed(h.stamp(perBatch, 100), true)
	}
	// Room for the tables (12 B a message) and headers, not for a batch.
	h.log.ShedCache(batches * (12*perBatch + wire.BatchHeaderSize))
	if len(h.log.cache) != 0 || len(h.log.tables) != batches {
		t.Fatalf("%d batches cached, %d tables kept; want 0 and %d", len(h.log.cache), len(h.log.tables), batches)
	}
	poll := func() (fromStore int) {
		t.Helper()
		for from := uint64(5); from < 45; from += 10 {
			built, splices, p, err := h.log.AppendPollReplySpliced(nil, nil, true, 1, wire.OffsetStrategy(from), 10, 0, false)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range splices {
				if s.From != nil {
					fromStore++
				}
			}
			body, err := wire.JoinSpliced(nil, built, splices)
			if err != nil {
				t.Fatal(err)
			}
			copied, _, err := h.log.AppendPollReply(nil, 1, wire.OffsetStrategy(from), 10, 0, false)
			if err != nil || !bytes.Equal(body, copied) {
				t.Fatalf("poll from %d: the stored slices differ from the copied reply (%v)", from, err)
			}
			checkMessages(t, body[16:], decodeRecords(t, body[16:], p.Count), from, from+9)
			checkCache(t, h.log)
			h.store.reads = 0 // the copied reply's
		}
		return fromStore
	}
	if n := poll(); n != 8 || h.store.sources != 8 || h.log.readBack != nil {
		t.Fatalf("4 polls of 2 slices: %d from the store, %d sources, read-back kept %v; want 8, 8, none", n, h.store.sources, h.log.readBack != nil)
	}
	h.log.ShedCache(0)
	if h.log.CachedBytes() != 0 || len(h.log.tables) != 0 {
		t.Fatalf("ShedCache(0) kept %d bytes, %d tables", h.log.CachedBytes(), len(h.log.tables))
	}
	h.store.sources = 0
	if n := poll(); n != 0 || h.store.sources != 0 {
		t.Fatalf("without tables: %d slices from the store, %d sources; want them read back", n, h.store.sources)
	}
}
