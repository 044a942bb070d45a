package wire

import (
	"encoding/binary"
	"math"
	"unicode/utf8"
)

// Reader decodes little-endian fields from a byte slice. It never reads past
// the end and never panics: the first failure sticks, later reads return
// zero values, and Err reports it. Strings are copied out of the input so a
// decoded value never aliases a reused buffer.
type Reader struct {
	b   []byte
	off int
	err error
}

// NewReader returns a Reader over b.
func NewReader(b []byte) *Reader { return &Reader{b: b} }

// Err is the first decode failure, or nil.
func (r *Reader) Err() error { return r.err }

// Offset is the number of bytes consumed so far.
func (r *Reader) Offset() int { return r.off }

// Len is the number of bytes left.
func (r *Reader) Len() int { return len(r.b) - r.off }

// Fail records err unless an earlier failure is already recorded.
func (r *Reader) Fail(field, reason string) {
	if r.err == nil {
		r.err = decodeErr(field, reason)
	}
}

// take returns the next n bytes, or nil after recording a truncation.
func (r *Reader) take(field string, n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b)-r.off {
		r.Fail(field, errShort)
		return nil
	}
	s := r.b[r.off : r.off+n : r.off+n]
	r.off += n
	return s
}

// Bytes returns the next n bytes without copying (they alias the input).
func (r *Reader) Bytes(field string, n int) []byte { return r.take(field, n) }

// Rest returns every remaining byte without copying.
func (r *Reader) Rest() []byte {
	if r.err != nil {
		return nil
	}
	s := r.b[r.off:]
	r.off = len(r.b)
	return s
}

func (r *Reader) U8(field string) uint8 {
	if b := r.take(field, 1); b != nil {
		return b[0]
	}
	return 0
}

func (r *Reader) U16(field string) uint16 {
	if b := r.take(field, 2); b != nil {
		return binary.LittleEndian.Uint16(b)
	}
	return 0
}

func (r *Reader) U32(field string) uint32 {
	if b := r.take(field, 4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func (r *Reader) U64(field string) uint64 {
	if b := r.take(field, 8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

func (r *Reader) U128(field string) U128 {
	if b := r.take(field, 16); b != nil {
		return getU128(b)
	}
	return U128{}
}

func (r *Reader) F32(field string) float32 { return math.Float32frombits(r.U32(field)) }

// Bool8 reads a bool8: any nonzero byte is true (client-plane.md 0).
func (r *Reader) Bool8(field string) bool { return r.U8(field) != 0 }

// Name reads a Name: [len u8 1..=255][UTF-8].
func (r *Reader) Name(field string) string {
	n := r.U8(field)
	if r.err == nil && n == 0 {
		r.Fail(field, "empty name")
		return ""
	}
	return r.utf8(field, int(n))
}

// Str8 reads [len u8][UTF-8], length 0 allowed.
func (r *Reader) Str8(field string) string { return r.utf8(field, int(r.U8(field))) }

// Str32 reads [len u32][UTF-8], length 0 allowed. The length is checked
// against the remaining input before anything is allocated.
func (r *Reader) Str32(field string) string {
	n := r.U32(field)
	if r.err == nil && uint64(n) > uint64(r.Len()) {
		r.Fail(field, errShort)
		return ""
	}
	return r.utf8(field, int(n))
}

func (r *Reader) utf8(field string, n int) string {
	b := r.take(field, n)
	if b == nil {
		return ""
	}
	if !utf8.Valid(b) {
		r.Fail(field, "invalid UTF-8")
		return ""
	}
	return string(b)
}

// Count reads a u32 element count and checks that count elements of at least
// minSize bytes each can still fit, so a hostile count cannot make the
// caller allocate more than the input justifies.
func (r *Reader) Count(field string, minSize int) int {
	n := r.U32(field)
	if r.err != nil {
		return 0
	}
	if minSize < 1 {
		minSize = 1
	}
	if uint64(n)*uint64(minSize) > uint64(r.Len()) {
		r.Fail(field, "count exceeds input")
		return 0
	}
	return int(n)
}

// Appenders: each appends one little-endian field to b.

func AppendU8(b []byte, v uint8) []byte   { return append(b, v) }
func AppendU16(b []byte, v uint16) []byte { return binary.LittleEndian.AppendUint16(b, v) }
func AppendU32(b []byte, v uint32) []byte { return binary.LittleEndian.AppendUint32(b, v) }
func AppendU64(b []byte, v uint64) []byte { return binary.LittleEndian.AppendUint64(b, v) }
func AppendF32(b []byte, v float32) []byte {
	return binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
}

func AppendU128(b []byte, v U128) []byte {
	b = binary.LittleEndian.AppendUint64(b, v.Lo)
	return binary.LittleEndian.AppendUint64(b, v.Hi)
}

func AppendBool8(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// AppendName appends a Name. The caller guarantees 1..=255 bytes; Validate
// methods of request types check it before encoding.
func AppendName(b []byte, s string) []byte { return append(append(b, uint8(len(s))), s...) }

// AppendStr8 appends [len u8][bytes].
func AppendStr8(b []byte, s string) []byte { return append(append(b, uint8(len(s))), s...) }

// AppendStr32 appends [len u32][bytes].
func AppendStr32(b []byte, s string) []byte { return append(AppendU32(b, uint32(len(s))), s...) }

// ValidName reports whether s is a valid Name: 1..=255 bytes of UTF-8.
func ValidName(s string) bool { return len(s) >= 1 && len(s) <= 255 && utf8.ValidString(s) }
