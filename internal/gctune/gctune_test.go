package gctune

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// The target is 25 % growth over the live heap, or 64 MiB when that is
// more, within [25, 1000] percent.
func TestGCPercentFor(t *testing.T) {
	for _, tc := range []struct {
		live uint64
		want int
	}{
		{0, maxPercent},
		{1 << 20, maxPercent},       // 6400 % capped
		{16 << 20, 400},             // 64 MiB over 16
		{100 << 20, 64},             // ceil(6400/100)
		{256 << 20, defaultPercent}, // 64 MiB is 25 % of 256
		{4 << 30, defaultPercent},
	} {
		if got := percentFor(tc.live); got != tc.want {
			t.Errorf("percentFor(%d MiB) = %d, want %d", tc.live>>20, got, tc.want)
		}
	}
}

// Without GOGC Start sets the target from the live heap, and sets it
// again after a collection (here after a test forced 100); GOGC, when
// set, wins.
func TestGCPercentFollowsTheLiveHeap(t *testing.T) {
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)
	Start([]string{"GOGC=80"})
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("GOGC in the environment was overridden: %d", got)
	}
	Start([]string{"HOME=/root"})
	if got := debug.SetGCPercent(100); got < defaultPercent || got == 100 {
		t.Fatalf("GC percent %d without GOGC, want the live heap's (>= %d)", got, defaultPercent)
	}
	// The tuner set 100 aside above; a collection makes it look again.
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
		got := debug.SetGCPercent(100)
		if got != 100 {
			if got < defaultPercent || got > maxPercent {
				t.Fatalf("GC percent %d after a collection", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the GC percent was not set again after collections")
		}
	}
}
