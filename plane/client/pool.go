package clientplane

import (
	"math/bits"
	"sync"

	"iggynode/wire"
)

// Reply frames of polls are large (up to 64 MiB) and short-lived. Touching
// fresh memory is slow on small VMs (every page faults in), so the edge
// recycles the frames it was told it may: GetFrame hands one out and the
// writer puts it back once its bytes are on the socket (Conn.SendPooled).
// Frames are pooled by power-of-two capacity from 64 KiB to 64 MiB.

const (
	minPoolShift = 16 // 64 KiB
	maxPoolShift = 26 // 64 MiB
)

var framePools [maxPoolShift - minPoolShift + 1]sync.Pool

// poolClass is the class whose capacity 1<<shift is the smallest >= n.
func poolClass(n int) (int, bool) {
	shift := bits.Len(uint(n - 1))
	if n <= 1<<minPoolShift {
		shift = minPoolShift
	}
	if shift > maxPoolShift {
		return 0, false
	}
	return shift - minPoolShift, true
}

// GetFrame returns a zero-length slice with capacity at least n, recycled
// when possible. Send it with Conn.SendPooled to give it back after the
// write; a frame that is never sent is simply garbage.
func GetFrame(n int) []byte {
	c, ok := poolClass(n)
	if !ok {
		return make([]byte, 0, n)
	}
	if p, _ := framePools[c].Get().(*[]byte); p != nil {
		return (*p)[:0]
	}
	return make([]byte, 0, 1<<(c+minPoolShift))
}

// putFrame recycles a frame whose capacity is exactly a pool class (a frame
// that grew past its class is left to the garbage collector).
func putFrame(b []byte) {
	c, ok := poolClass(cap(b))
	if !ok || cap(b) != 1<<(c+minPoolShift) {
		return
	}
	b = b[:0]
	framePools[c].Put(&b)
}

// readSources is a writer's pieces of spliced frames: a frame's pieces in
// wire order (wire.AppendSplicePieces), each stored batch read into a
// pooled frame that goes back to the pool after the write, or mapped
// (wire.MappableSource) when the kernel makes the write's copy. Reused
// frame after frame; it keeps no batch alive past its write.
type readSources struct {
	list, read [][]byte
	mapped     []wire.Splice
	unpins     []func()
}

// pieces returns the frame's pieces; call release once they are written
// (also after an error). With kernelCopy (plain TCP's writev: no Go code
// reads the pieces) a source that can be mapped is mapped instead of
// read, and one whose mapping fails is read.
func (r *readSources) pieces(built []byte, splices []wire.Splice, kernelCopy bool) ([][]byte, error) {
	if kernelCopy {
		r.mapped = append(r.mapped[:0], splices...)
		for i, s := range r.mapped {
			m, ok := s.From.(wire.MappableSource)
			if !ok {
				continue
			}
			if b, unpin, err := m.Map(); err == nil {
				r.unpins = append(r.unpins, unpin)
				r.mapped[i] = wire.Splice{At: s.At, Bytes: b}
			}
		}
		splices = r.mapped
	}
	list, read, err := wire.AppendSplicePieces(r.list[:0], r.read[:0], built, splices, GetFrame)
	r.list, r.read = list, read
	return list, err
}

// release gives the buffers pieces read into back to the pool.
func (r *readSources) release() {
	for _, b := range r.read {
		putFrame(b)
	}
	for _, unpin := range r.unpins {
		unpin()
	}
	clear(r.unpins)
	clear(r.mapped)
	r.unpins, r.mapped = r.unpins[:0], r.mapped[:0]
	clear(r.list)
	clear(r.read)
	r.list, r.read = r.list[:0], r.read[:0]
}
