package wire

import (
	"encoding/binary"
	"fmt"
)

// U128 is an unsigned 128-bit integer as the headers carry it: 16 bytes,
// little-endian, Lo first.
type U128 struct{ Lo, Hi uint64 }

// IsZero reports whether the value is 0.
func (u U128) IsZero() bool { return u.Lo == 0 && u.Hi == 0 }

// Widen zero-extends a 64-bit hash into a u128 field (client-plane.md 12.5).
func Widen(v uint64) U128 { return U128{Lo: v} }

func (u U128) String() string {
	if u.Hi == 0 {
		return fmt.Sprintf("%#x", u.Lo)
	}
	return fmt.Sprintf("%#x%016x", u.Hi, u.Lo)
}

func getU128(b []byte) U128 {
	return U128{Lo: binary.LittleEndian.Uint64(b), Hi: binary.LittleEndian.Uint64(b[8:])}
}

func putU128(b []byte, u U128) {
	binary.LittleEndian.PutUint64(b, u.Lo)
	binary.LittleEndian.PutUint64(b[8:], u.Hi)
}
