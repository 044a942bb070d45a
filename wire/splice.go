package wire

import (
	"fmt"
	"unsafe"
)

// Splice is a run of bytes a frame carries at offset At of its built part,
// written from where the bytes lie instead of copied in: a poll reply
// serves whole cached batches this way (zero copy, partition.PollSpliced),
// and the edge writes the pieces with one writev (plane/client). The
// bytes must not change until the frame is written.
//
// From, when set, holds the run instead of Bytes: a stored batch that is
// no longer in memory, read from its file by the connection's writer when
// the frame is written (not by the partition that built the reply).
//
// Pin, when set, is what keeps Bytes from being reused: the writer calls
// Unpin once it no longer reads them (after the write, after a copy into
// another buffer, after a failed write). A writer that drops the frame
// without unpinning leaves the bytes to the garbage collector, which is
// safe; only an Unpin hands them back to be reused.
type Splice struct {
	At    int
	Bytes []byte
	From  SpliceSource
	Pin   Pin
}

// Pin holds spliced bytes in memory until their frame is written.
type Pin interface{ Unpin() }

// UnpinSplices drops the pins of splices whose bytes are no longer read;
// each pin is dropped once, however often this is called.
func UnpinSplices(splices []Splice) {
	for i := range splices {
		if p := splices[i].Pin; p != nil {
			splices[i].Pin = nil
			p.Unpin()
		}
	}
}

// Aliases reports whether the bytes of b lie within those of a (up to
// a's capacity): b is a view of a's memory.
func Aliases(a, b []byte) bool {
	if cap(a) == 0 || len(b) == 0 {
		return false
	}
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(a)))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return p >= lo && p+uintptr(len(b)) <= lo+uintptr(cap(a))
}

// SpliceSource is spliced bytes kept outside memory. The bytes must not
// change until the frame is written; a source that can no longer produce
// them (its file is gone) fails the write, and the connection with it.
type SpliceSource interface {
	Len() int
	// AppendTo appends the Len bytes to dst.
	AppendTo(dst []byte) ([]byte, error)
}

// MappableSource is a SpliceSource whose bytes can be mapped into the
// address space instead of read into a buffer: for a write whose copy the
// kernel makes (writev on a plain socket), the stored bytes then go from
// the page cache to the socket with no read before. The mapping may fault
// if the file shrinks meanwhile, so only the kernel may touch it: the
// bytes are for a system call, never for Go code to read.
type MappableSource interface {
	SpliceSource
	// Map maps the Len bytes; unmap releases them after the write.
	Map() (b []byte, unmap func(), err error)
}

func (s Splice) len() int {
	if s.From != nil {
		return s.From.Len()
	}
	return len(s.Bytes)
}

// SplicedLen is the wire length of built with splices.
func SplicedLen(built []byte, splices []Splice) int {
	n := len(built)
	for _, s := range splices {
		n += s.len()
	}
	return n
}

// AppendSplicePieces appends the pieces of built with splices in wire
// order: built up to the first splice, its bytes, built up to the next,
// and so on. Splices are in ascending At, each within built. A splice
// with a source appends its bytes read into a buffer from buffer(n) (at
// least n bytes of capacity), which it also appends to read, so the
// caller can recycle them after the write.
func AppendSplicePieces(dst, read [][]byte, built []byte, splices []Splice, buffer func(n int) []byte) ([][]byte, [][]byte, error) {
	from := 0
	for _, s := range splices {
		if s.At > from {
			dst = append(dst, built[from:s.At])
		}
		switch {
		case s.From != nil:
			b, err := s.From.AppendTo(buffer(s.From.Len())[:0])
			if err != nil {
				return dst, read, fmt.Errorf("wire: spliced source: %w", err)
			}
			dst, read = append(dst, b), append(read, b)
		case len(s.Bytes) > 0:
			dst = append(dst, s.Bytes)
		}
		from = s.At
	}
	if from < len(built) || len(dst) == 0 {
		dst = append(dst, built[from:])
	}
	return dst, read, nil
}

// JoinSpliced appends the frame built with splices to dst as one
// contiguous run (for carriers that need one buffer).
func JoinSpliced(dst, built []byte, splices []Splice) ([]byte, error) {
	from := 0
	for _, s := range splices {
		dst = append(dst, built[from:s.At]...)
		if s.From != nil {
			var err error
			if dst, err = s.From.AppendTo(dst); err != nil {
				return dst, fmt.Errorf("wire: spliced source: %w", err)
			}
		} else {
			dst = append(dst, s.Bytes...)
		}
		from = s.At
	}
	return append(dst, built[from:]...), nil
}
