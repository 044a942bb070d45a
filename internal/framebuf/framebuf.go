// Package framebuf recycles the buffers large request frames are read into.
//
// A SendMessages request's buffer does not die with the request: its bytes
// become the journaled prepare, the partition's cached batch and the
// spliced bytes of poll replies (docs/benchmarks.md, "Pooled request
// buffers"). So a buffer is reference counted: Get hands one out holding
// one reference, Pin takes one more for every reply that carries its bytes
// by reference (wire.Splice.Pin, dropped by the writer with Unpin), and the
// last Release or Unpin puts it back in the pool. A buffer whose holder
// never releases it is simply left to the garbage collector, so a path
// that does not take part in the counting costs a fresh allocation, never
// reused bytes under a reader: only a holder that took a reference may
// release one.
//
// Sizes are pooled in classes a sixteenth of a power of two apart, from
// 64 KiB to 128 MiB, so a buffer is at most 6.25 % larger than the frame
// read into it (the partitions' memory budget counts the batch bytes, not
// that slack); smaller and larger frames are plain allocations (the
// collector handles small ones cheaply; a frame over 128 MiB takes a
// max_message_size far above the default 64 MiB). The free buffers are
// in sync.Pools: the collector drops what stays unused over two cycles, so
// the pool never holds more than the frames in use at the last peak, which
// the edge's frame budget and the partitions' memory budget bound.
package framebuf

import (
	"math/bits"
	"sync"
	"sync/atomic"

	"iggynode/wire"
)

const (
	minShift        = 16 // 64 KiB
	maxShift        = 27 // 128 MiB
	stepsPerOctave  = 16
	classCount      = (maxShift - minShift) * stepsPerOctave
	smallestPooled  = 1 << minShift
	largestPooledSz = 1 << maxShift
)

var pools [classCount]sync.Pool

// Counters for telemetry: buffers handed out, how many of them came from
// the pool, and how many went back to it.
var gets, reused, recycled atomic.Uint64

// poison fills released buffers with PoisonByte (SetPoison).
var poison atomic.Bool

// PoisonByte is what a poisoned buffer holds once released.
const PoisonByte = 0xDB

// SetPoison makes every release fill the buffer with PoisonByte before it
// is pooled, so a reader that kept bytes past their release reads garbage
// at once instead of when the buffer happens to be reused: tests turn it
// on to catch a missed reference.
func SetPoison(on bool) { poison.Store(on) }

// Stats are the pool's counters since the process started.
type Stats struct {
	Gets, Reused, Recycled uint64
}

// ReadStats returns the counters.
func ReadStats() Stats {
	return Stats{Gets: gets.Load(), Reused: reused.Load(), Recycled: recycled.Load()}
}

// class returns the smallest class whose size is at least n, and its size.
func class(n int) (int, int, bool) {
	if n <= smallestPooled || n > largestPooledSz {
		return 0, 0, false
	}
	octave := bits.Len(uint(n-1)) - 1 // 2^octave < n <= 2^(octave+1)
	step := 1 << (octave - 4)         // a sixteenth of 2^octave
	k := (n - (1 << octave) + step - 1) / step
	size := 1<<octave + k*step
	c := (octave-minShift)*stepsPerOctave + k - 1
	return c, size, true
}

// SizeOf is the size of the buffer Get(n) returns (false: n is not
// pooled), for a budget that counts what is allocated.
func SizeOf(n int) (int, bool) {
	_, size, ok := class(n)
	return size, ok
}

// Buf is a pooled buffer and its reference count.
type Buf struct {
	data  []byte // the whole class-sized buffer
	class int
	refs  atomic.Int32
}

// Get returns a buffer whose Bytes are n long, holding one reference, or
// nil when n is not pooled (the caller allocates).
func Get(n int) *Buf {
	c, size, ok := class(n)
	if !ok {
		return nil
	}
	gets.Add(1)
	b, _ := pools[c].Get().(*Buf)
	if b == nil {
		b = &Buf{data: make([]byte, size), class: c}
	} else {
		reused.Add(1)
	}
	b.refs.Store(1)
	b.data = b.data[:n]
	return b
}

// Bytes is the buffer's frame, its capacity capped at its length so that
// an append elsewhere copies rather than writing into the pooled bytes.
func (b *Buf) Bytes() []byte { return b.data[:len(b.data):len(b.data)] }

// Memory is an empty view of the whole buffer, for wire.Aliases.
func (b *Buf) Memory() []byte { return b.data[:0] }

// Holds reports whether p lies within the buffer's bytes.
func (b *Buf) Holds(p []byte) bool { return wire.Aliases(b.Memory(), p) }

// Release drops a reference; the last one puts the buffer back in the
// pool. A release with none held is a bug that would hand reused bytes to
// a reader, so it panics.
func (b *Buf) Release() {
	switch n := b.refs.Add(-1); {
	case n == 0:
		recycled.Add(1)
		b.data = b.data[:cap(b.data)]
		if poison.Load() {
			for i := range b.data {
				b.data[i] = PoisonByte
			}
		}
		pools[b.class].Put(b)
	case n < 0:
		panic("framebuf: released more often than held")
	}
}

// Pin takes a reference for a reply or a replica-plane frame that carries
// the bytes by reference (wire.Splice.Pin, replicaplane.Node.SendPinned);
// the writer drops it with Unpin.
func (b *Buf) Pin() wire.Pin {
	if b.refs.Add(1) <= 1 {
		panic("framebuf: pinned after its last release")
	}
	return b
}

// Unpin is Release, for a pin.
func (b *Buf) Unpin() { b.Release() }
