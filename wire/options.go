package wire

import (
	"bytes"
	"fmt"
	"sort"
	"unicode/utf8"
)

// HeaderKind is the kind code of a typed value in user headers and option
// blocks (encodings.md "Header kinds"; client-plane.md 10.4).
type HeaderKind uint8

const (
	KindRaw     HeaderKind = 1
	KindString  HeaderKind = 2
	KindBool    HeaderKind = 3
	KindInt8    HeaderKind = 4
	KindInt16   HeaderKind = 5
	KindInt32   HeaderKind = 6
	KindInt64   HeaderKind = 7
	KindInt128  HeaderKind = 8
	KindUint8   HeaderKind = 9
	KindUint16  HeaderKind = 10
	KindUint32  HeaderKind = 11
	KindUint64  HeaderKind = 12
	KindUint128 HeaderKind = 13
	KindFloat32 HeaderKind = 14
	KindFloat64 HeaderKind = 15
)

var kindNames = [...]string{"", "raw", "string", "bool", "int8", "int16", "int32", "int64", "int128",
	"uint8", "uint16", "uint32", "uint64", "uint128", "float32", "float64"}

// Defined reports whether k is one of the 15 defined kinds.
func (k HeaderKind) Defined() bool { return k >= KindRaw && k <= KindFloat64 }

func (k HeaderKind) String() string {
	if k.Defined() {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// FixedSize is the value size a kind implies, or 0 for Raw and String.
func (k HeaderKind) FixedSize() int {
	switch k {
	case KindBool, KindInt8, KindUint8:
		return 1
	case KindInt16, KindUint16:
		return 2
	case KindInt32, KindUint32, KindFloat32:
		return 4
	case KindInt64, KindUint64, KindFloat64:
		return 8
	case KindInt128, KindUint128:
		return 16
	}
	return 0
}

// Limits of the TLV encodings (client-plane.md 1, 10.1).
const (
	MaxOptionsBlockSize = 100_000
	MaxOptionsPairs     = 1024
	MaxTLVFieldLen      = 255
	MaxUserHeadersSize  = 100_000
)

// KeyValue is one key/value pair of an options block or a user-headers
// block: a String key and a typed value.
type KeyValue struct {
	Key   string
	Kind  HeaderKind
	Value []byte
}

// Options is an options block (client-plane.md 10).
type Options []KeyValue

// tlvField is one [kind u8][len u32][data] field.
const tlvOverhead = 5

// walkTLV walks a flat run of TLV fields pairwise and calls fn for every
// key/value pair. It enforces the structural rules shared by options and
// user headers: nonzero kinds, lengths 1..=255, no field past the end, exact
// tiling, an even number of fields, String keys in UTF-8.
func walkTLV(b []byte, what string, fn func(KeyValue) error) error {
	r := NewReader(b)
	for r.Len() > 0 {
		var kv KeyValue
		for i := 0; i < 2; i++ {
			kind := HeaderKind(r.U8(what))
			n := r.U32(what)
			if r.err != nil {
				if i == 1 && r.Len() == 0 {
					return decodeErr(what, "odd number of fields")
				}
				return r.err
			}
			if kind == 0 {
				return decodeErr(what, "kind 0")
			}
			if n < 1 || n > MaxTLVFieldLen {
				return decodeErr(what, fmt.Sprintf("field length %d outside 1..=255", n))
			}
			data := r.take(what, int(n))
			if data == nil {
				return r.err
			}
			if i == 0 {
				if kind != KindString || !utf8.Valid(data) {
					return decodeErr(what, "key must be a UTF-8 String")
				}
				kv.Key = string(data)
			} else {
				kv.Kind, kv.Value = kind, append([]byte(nil), data...)
			}
			if i == 0 && r.Len() == 0 {
				return decodeErr(what, "odd number of fields")
			}
		}
		if err := fn(kv); err != nil {
			return err
		}
	}
	return nil
}

// DecodeOptions decodes an options block that fills b exactly, applying every
// rule of client-plane.md 10.1 in order. Value kinds are not restricted here
// (forward compatibility); the topic catalog restricts them per key.
func DecodeOptions(b []byte) (Options, error) {
	if len(b) > MaxOptionsBlockSize {
		return nil, decodeErr("options", "block larger than 100000 bytes")
	}
	if len(b) == 0 {
		return nil, nil
	}
	var opts Options
	seen := make(map[string]struct{})
	err := walkTLV(b, "options", func(kv KeyValue) error {
		if len(opts) == MaxOptionsPairs {
			return decodeErr("options", "more than 1024 pairs")
		}
		if _, dup := seen[kv.Key]; dup {
			return decodeErr("options", "duplicate key "+kv.Key)
		}
		seen[kv.Key] = struct{}{}
		opts = append(opts, kv)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return opts, nil
}

// EncodedLen is the block's size on the wire (without a length prefix).
func (o Options) EncodedLen() int {
	n := 0
	for _, kv := range o {
		n += 2*tlvOverhead + len(kv.Key) + len(kv.Value)
	}
	return n
}

// Validate checks the block against the limits the decoder enforces, so an
// encoder never writes a block the peer refuses (OptionsBlockTooLarge for
// the size limits, as the crate's encoder reports).
func (o Options) Validate() error {
	if len(o) > MaxOptionsPairs || o.EncodedLen() > MaxOptionsBlockSize {
		return ErrOptionsBlockTooLarge
	}
	seen := make(map[string]struct{}, len(o))
	for _, kv := range o {
		if len(kv.Key) < 1 || len(kv.Key) > MaxTLVFieldLen || !utf8.ValidString(kv.Key) {
			return decodeErr("options", "key must be 1..=255 bytes of UTF-8")
		}
		if kv.Kind == 0 || len(kv.Value) < 1 || len(kv.Value) > MaxTLVFieldLen {
			return decodeErr("options", "value must have a nonzero kind and 1..=255 bytes")
		}
		if _, dup := seen[kv.Key]; dup {
			return decodeErr("options", "duplicate key "+kv.Key)
		}
		seen[kv.Key] = struct{}{}
	}
	return nil
}

// AppendOptions appends the block's TLV fields in the order given.
func AppendOptions(b []byte, o Options) []byte {
	for _, kv := range o {
		b = AppendU32(append(b, byte(KindString)), uint32(len(kv.Key)))
		b = append(b, kv.Key...)
		b = AppendU32(append(b, byte(kv.Kind)), uint32(len(kv.Value)))
		b = append(b, kv.Value...)
	}
	return b
}

// AppendOptions32 appends the response-side form: [len u32][block], with
// entries in ascending key order (client-plane.md 10.3).
func AppendOptions32(b []byte, o Options) []byte {
	b = AppendU32(b, uint32(o.EncodedLen()))
	return AppendOptions(b, o.Sorted())
}

// Options32 reads a response-side [len u32][block].
func (r *Reader) Options32(field string) Options {
	n := r.U32(field)
	if r.err != nil {
		return nil
	}
	if uint64(n) > uint64(r.Len()) {
		r.Fail(field, errShort)
		return nil
	}
	o, err := DecodeOptions(r.take(field, int(n)))
	if err != nil && r.err == nil {
		r.err = err
	}
	return o
}

// Get returns the pair with the given key.
func (o Options) Get(key string) (KeyValue, bool) {
	for _, kv := range o {
		if kv.Key == key {
			return kv, true
		}
	}
	return KeyValue{}, false
}

// Sorted returns a copy ordered by key bytes (every key is a String, so this
// is the (kind, key) order of 10.3).
func (o Options) Sorted() Options {
	s := append(Options(nil), o...)
	sort.SliceStable(s, func(i, j int) bool { return s[i].Key < s[j].Key })
	return s
}

// Equal reports whether two blocks hold the same pairs in the same order.
func (o Options) Equal(p Options) bool {
	if len(o) != len(p) {
		return false
	}
	for i := range o {
		if o[i].Key != p[i].Key || o[i].Kind != p[i].Kind || !bytes.Equal(o[i].Value, p[i].Value) {
			return false
		}
	}
	return true
}

// UserHeaders is a message's user-headers block (encodings.md "User headers
// block"). The server forwards it untouched; only SDKs enforce its rules.
type UserHeaders []KeyValue

// DecodeUserHeaders decodes a user-headers block that fills b exactly.
// Unknown value kinds are preserved.
func DecodeUserHeaders(b []byte) (UserHeaders, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var hs UserHeaders
	err := walkTLV(b, "user headers", func(kv KeyValue) error {
		hs = append(hs, kv)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return hs, nil
}

// EncodedLen is the block's size on the wire.
func (h UserHeaders) EncodedLen() int { return Options(h).EncodedLen() }

// Validate applies the SDK-side rules: keys 1..=255 bytes of UTF-8, values
// with a defined kind and 1..=255 bytes, block at most 100 000 bytes.
func (h UserHeaders) Validate() error {
	if h.EncodedLen() > MaxUserHeadersSize {
		return ErrTooBigUserHeaders
	}
	for _, kv := range h {
		if len(kv.Key) < 1 || len(kv.Key) > MaxTLVFieldLen || !utf8.ValidString(kv.Key) {
			return ErrInvalidHeaderKey
		}
		if !kv.Kind.Defined() {
			return ErrInvalidHeaderKind
		}
		if len(kv.Value) < 1 || len(kv.Value) > MaxTLVFieldLen {
			return ErrInvalidHeaderValue
		}
	}
	return nil
}

// AppendUserHeaders appends the block's TLV fields.
func AppendUserHeaders(b []byte, h UserHeaders) []byte { return AppendOptions(b, Options(h)) }
