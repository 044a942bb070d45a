package testutil

import (
	"errors"
	"unsafe"
)

// MemSource is a splice source (wire.SpliceSource) over memory: what a
// store's file source gives, without the file. Fail makes it unreadable,
// as a source whose file is gone.
type MemSource struct {
	B    []byte
	Fail bool
}

// ErrSourceGone is what a failing MemSource returns.
var ErrSourceGone = errors.New("testutil: source gone")

func (m MemSource) Len() int { return len(m.B) }

func (m MemSource) AppendTo(dst []byte) ([]byte, error) {
	if m.Fail {
		return dst, ErrSourceGone
	}
	return append(dst, m.B...), nil
}

// Within reports whether sub lies wholly inside b's memory (the same
// bytes, not a copy); false when either is empty.
func Within(sub, b []byte) bool {
	if len(sub) == 0 || len(b) == 0 {
		return false
	}
	p, lo := uintptr(unsafe.Pointer(&sub[0])), uintptr(unsafe.Pointer(&b[0]))
	return p >= lo && p+uintptr(len(sub)) <= lo+uintptr(len(b))
}
