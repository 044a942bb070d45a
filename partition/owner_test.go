package partition

import (
	"testing"

	"iggynode/wire"
)

// testOwner counts the pins polls take on its batch and their unpins.
type testOwner struct {
	t            *testing.T
	id           int
	pins, unpins int
}

func (o *testOwner) Pin() wire.Pin { o.pins++; return &testPin{o: o} }

type testPin struct {
	o    *testOwner
	done bool
}

func (p *testPin) Unpin() {
	if p.done {
		p.o.t.Fatalf("owner %d: a pin unpinned twice", p.o.id)
	}
	p.done = true
	p.o.unpins++
}

// The owners of cached batches (ApplySendIndexed) are reported once, in
// order, when the cache drops their batch (eviction, Truncate, Purge) and
// never while it holds it; every reply piece that carries a cached batch
// by reference is pinned by its owner, the pieces a poll drops (its byte
// bound) are unpinned by the poll, and the rest by UnpinSplices.
func TestOwnersOfCachedBatches(t *testing.T) {
	h := newHarness(t, Config{CacheBytes: 3 * 10 * 150, MaxPollBytes: 2500, SegmentSize: 3000})
	var owners []*testOwner
	var evicted []int
	drain := func() {
		h.log.DrainEvicted(func(o Owner) { evicted = append(evicted, o.(*testOwner).id) })
	}
	checkReported := func(when string) {
		t.Helper()
		cachedFrom := len(owners) - len(h.log.cache)
		if len(evicted) != cachedFrom {
			t.Fatalf("%s: %d owners reported, %d batches left the cache", when, len(evicted), cachedFrom)
		}
		for i, id := range evicted {
			if id != i {
				t.Fatalf("%s: reported %v, want owners 0..%d in order", when, evicted, cachedFrom-1)
			}
		}
	}
	for i := range 12 {
		o := &testOwner{t: t, id: i}
		owners = append(owners, o)
		b := h.stamp(10, 100)
		if err := h.log.ApplySendIndexed(b, wire.FrameTable{}, o); err != nil {
			t.Fatal(err)
		}
		h.store.put(b)
		h.log.MarkPersisted(h.log.HighWatermark())
		drain()
		checkReported("after a send")

		for _, s := range []wire.PollingStrategy{wire.OffsetStrategy(0), wire.OffsetStrategy(h.log.HighWatermark() - 25), wire.LastStrategy()} {
			for _, count := range []uint32{5, 10, 17, 100} {
				_, splices, _, err := h.log.AppendPollReplySpliced(nil, nil, false, 1, s, count, 0, false)
				if err != nil {
					t.Fatal(err)
				}
				for _, sp := range splices {
					if sp.Bytes != nil && h.inCache(sp.Bytes) && sp.Pin == nil {
						t.Fatal("a cached batch spliced without a pin")
					}
					if sp.Pin != nil && !h.inCache(sp.Bytes) {
						t.Fatal("a pin on bytes the cache does not hold")
					}
				}
				wire.UnpinSplices(splices)
			}
		}
		for _, o := range owners {
			if o.pins != o.unpins {
				t.Fatalf("owner %d: %d pins, %d unpins", o.id, o.pins, o.unpins)
			}
		}
	}
	if evicted == nil {
		t.Fatal("nothing was evicted: the test does not exercise eviction")
	}
	pinned := 0
	for _, o := range owners {
		pinned += o.pins
	}
	if pinned == 0 {
		t.Fatal("no poll pinned a batch")
	}
	h.truncate(h.log.HighWatermark() - 15)
	drain()
	checkReported("after Truncate")
	h.log.Purge()
	drain()
	if len(evicted) != len(owners) {
		t.Fatalf("after Purge %d of %d owners reported", len(evicted), len(owners))
	}
	checkReported("after Purge")
}
