package testutil

import (
	"errors"
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
