package partition

import (
	"bytes"
	"testing"
	"unsafe"

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
				spliced, fromStore, slices := 0, 0, 0
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
							case !h.inCache(sp.Bytes):
								t.Fatalf("a spliced batch is not the cache's bytes")
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

// inCache reports whether b lies inside one of the cache's batches (a
// whole batch, or the frames of a slice): the cache's bytes, not a copy.
func (h *harness) inCache(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	p := uintptr(unsafe.Pointer(&b[0]))
	for _, c := range h.log.cache {
		if len(c) == 0 {
			continue
		}
		lo := uintptr(unsafe.Pointer(&c[0]))
		if p >= lo && p+uintptr(len(b)) <= lo+uintptr(len(c)) {
			return true
		}
	}
	return false
}
