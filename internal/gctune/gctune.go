// Package gctune sets the garbage collector's target of a process whose
// heap is mostly message batches: the node, and the benchmark's sinks and
// clients, so a ceiling is not held down by a collector the node does not
// run under (docs/benchmarks.md, "Garbage collector target", "A headroom
// floor for the collector" and "The sinks' collector").
package gctune

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
)

// The heap is mostly message batches, pointer-free byte slices, so a
// collection costs little to mark; a heap held near the live set touches
// less fresh memory, which is what a burst of 1 MiB batches pays for. So
// the target is 25 % growth over the live heap, but never less than
// headroomFloor bytes: while the heap is small (a fresh node, a node
// whose streams were just deleted) 25 % is a collection every few
// batches, and the mark phase, which takes one of the two cores here,
// lands on the send path's tail latency. The floor costs at most 64 MiB
// of heap over 25 %.
const (
	defaultPercent = 25
	headroomFloor  = 64 << 20
	maxPercent     = 1000
)

// percentFor is the GC percent that gives a heap of live bytes its
// target: defaultPercent, or enough for headroomFloor of growth.
func percentFor(live uint64) int {
	if live == 0 {
		return maxPercent
	}
	p := int((headroomFloor*100 + live - 1) / live)
	return min(max(p, defaultPercent), maxPercent)
}

// Start applies the target unless GOGC is set (the runtime read it
// already), and keeps it after every collection.
func Start(environ []string) {
	for _, kv := range environ {
		if strings.HasPrefix(kv, "GOGC=") {
			return
		}
	}
	t := &gcTuner{sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	t.tune()
	t.arm()
}

// gcTuner sets the GC percent from the live heap once per collection: a
// finalizer on an unreachable sentinel runs after each cycle and arms
// the next (no goroutine, no timer).
type gcTuner struct {
	sample []metrics.Sample
}

func (t *gcTuner) arm() {
	sentinel := &struct{ _ [16]byte }{}
	runtime.SetFinalizer(sentinel, func(*struct{ _ [16]byte }) {
		t.tune()
		t.arm()
	})
}

func (t *gcTuner) tune() {
	metrics.Read(t.sample)
	var live uint64
	if t.sample[0].Value.Kind() == metrics.KindUint64 {
		live = t.sample[0].Value.Uint64()
	}
	debug.SetGCPercent(percentFor(live))
}
