package main

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/big"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"iggynode/wire"
)

// headerKinds maps upstream's header kind names (-H key:kind:value) to
// wire kinds.
var headerKinds = func() map[string]wire.HeaderKind {
	m := map[string]wire.HeaderKind{}
	for k := wire.KindRaw; k <= wire.KindFloat64; k++ {
		m[k.String()] = k
	}
	return m
}()

// parseHeaders reads -H values: upstream's typed key:kind:value, several
// per value separated by commas, or our key=value (a String). A value
// whose comma-separated parts are not all typed headers is one header, so
// a String value may hold commas.
func parseHeaders(values []string) (wire.UserHeaders, error) {
	var out wire.UserHeaders
	for _, v := range values {
		parts := strings.Split(v, ",")
		var typed wire.UserHeaders
		allTyped := true
		for _, p := range parts {
			kv, ok, err := parseTypedHeader(p)
			if err != nil {
				return nil, err
			}
			if !ok {
				allTyped = false
				break
			}
			typed = append(typed, kv)
		}
		if allTyped {
			out = append(out, typed...)
			continue
		}
		if kv, ok, err := parseTypedHeader(v); err != nil || ok {
			if err != nil {
				return nil, err
			}
			out = append(out, kv)
			continue
		}
		k, val, ok := strings.Cut(v, "=")
		if !ok || k == "" || val == "" {
			return nil, fmt.Errorf("header %q is neither key:kind:value nor key=value", v)
		}
		out = append(out, wire.KeyValue{Key: k, Kind: wire.KindString, Value: []byte(val)})
	}
	if err := out.Validate(); err != nil {
		return nil, fmt.Errorf("headers: %w", err)
	}
	return out, nil
}

// parseTypedHeader reads key:kind:value; ok is false when s does not name
// a kind in the middle (so it is not meant as a typed header).
func parseTypedHeader(s string) (wire.KeyValue, bool, error) {
	parts := strings.SplitN(s, ":", 3)
	if len(parts) != 3 {
		return wire.KeyValue{}, false, nil
	}
	kind, ok := headerKinds[strings.ToLower(parts[1])]
	if !ok {
		return wire.KeyValue{}, false, nil
	}
	value, err := encodeHeaderValue(kind, parts[2])
	if err != nil {
		return wire.KeyValue{}, false, fmt.Errorf("header %q: %w", s, err)
	}
	if parts[0] == "" {
		return wire.KeyValue{}, false, fmt.Errorf("header %q: empty key", s)
	}
	return wire.KeyValue{Key: parts[0], Kind: kind, Value: value}, true, nil
}

// encodeHeaderValue writes text as kind's little-endian encoding (Raw
// takes the text's bytes, as upstream does).
func encodeHeaderValue(kind wire.HeaderKind, text string) ([]byte, error) {
	le := binary.LittleEndian
	switch kind {
	case wire.KindRaw, wire.KindString:
		return []byte(text), nil
	case wire.KindBool:
		b, err := strconv.ParseBool(text)
		if err != nil {
			return nil, err
		}
		if b {
			return []byte{1}, nil
		}
		return []byte{0}, nil
	case wire.KindFloat32:
		f, err := strconv.ParseFloat(text, 32)
		return le.AppendUint32(nil, math.Float32bits(float32(f))), err
	case wire.KindFloat64:
		f, err := strconv.ParseFloat(text, 64)
		return le.AppendUint64(nil, math.Float64bits(f)), err
	case wire.KindInt128, wire.KindUint128:
		n, ok := new(big.Int).SetString(text, 10)
		lo, hi := new(big.Int).Lsh(big.NewInt(-1), 127), new(big.Int).Lsh(big.NewInt(1), 127)
		if kind == wire.KindUint128 {
			lo, hi = big.NewInt(0), new(big.Int).Lsh(big.NewInt(1), 128)
		}
		if !ok || n.Cmp(lo) < 0 || n.Cmp(hi) >= 0 {
			return nil, fmt.Errorf("%q is not a %s", text, kind)
		}
		if n.Sign() < 0 {
			n.Add(n, new(big.Int).Lsh(big.NewInt(1), 128)) // two's complement
		}
		be := n.FillBytes(make([]byte, 16))
		out := make([]byte, 16)
		for i := range be {
			out[i] = be[15-i]
		}
		return out, nil
	}
	size := kind.FixedSize()
	signed := kind >= wire.KindInt8 && kind <= wire.KindInt64
	var u uint64
	if signed {
		v, err := strconv.ParseInt(text, 10, size*8)
		if err != nil {
			return nil, err
		}
		u = uint64(v)
	} else {
		v, err := strconv.ParseUint(text, 10, size*8)
		if err != nil {
			return nil, err
		}
		u = v
	}
	return le.AppendUint64(nil, u)[:size], nil
}

// headerValueText renders a header value by its kind.
func headerValueText(kind wire.HeaderKind, v []byte) string {
	le := binary.LittleEndian
	if size := kind.FixedSize(); size > 0 && len(v) != size {
		return fmt.Sprintf("0x%x", v)
	}
	switch kind {
	case wire.KindString:
		if utf8.Valid(v) {
			return string(v)
		}
	case wire.KindBool:
		return strconv.FormatBool(v[0] != 0)
	case wire.KindInt8:
		return strconv.FormatInt(int64(int8(v[0])), 10)
	case wire.KindInt16:
		return strconv.FormatInt(int64(int16(le.Uint16(v))), 10)
	case wire.KindInt32:
		return strconv.FormatInt(int64(int32(le.Uint32(v))), 10)
	case wire.KindInt64:
		return strconv.FormatInt(int64(le.Uint64(v)), 10)
	case wire.KindUint8:
		return strconv.FormatUint(uint64(v[0]), 10)
	case wire.KindUint16:
		return strconv.FormatUint(uint64(le.Uint16(v)), 10)
	case wire.KindUint32:
		return strconv.FormatUint(uint64(le.Uint32(v)), 10)
	case wire.KindUint64:
		return strconv.FormatUint(le.Uint64(v), 10)
	case wire.KindFloat32:
		return strconv.FormatFloat(float64(math.Float32frombits(le.Uint32(v))), 'g', -1, 32)
	case wire.KindFloat64:
		return strconv.FormatFloat(math.Float64frombits(le.Uint64(v)), 'g', -1, 64)
	case wire.KindInt128, wire.KindUint128:
		be := make([]byte, 16)
		for i := range be {
			be[i] = v[15-i]
		}
		n := new(big.Int).SetBytes(be)
		if kind == wire.KindInt128 && v[15]&0x80 != 0 {
			n.Sub(n, new(big.Int).Lsh(big.NewInt(1), 128))
		}
		return n.String()
	}
	return fmt.Sprintf("0x%x", v)
}

// headersText lists headers as key:kind:value, the -H syntax.
func headersText(h wire.UserHeaders) string {
	if len(h) == 0 {
		return "-"
	}
	parts := make([]string, len(h))
	for i, kv := range h {
		parts[i] = kv.Key + ":" + kv.Kind.String() + ":" + headerValueText(kv.Kind, kv.Value)
	}
	return strings.Join(parts, ", ")
}

// The binary message file of poll --output-file and send --input-file:
// message batches back to back, each in the layout a producer sends
// (client-plane.md 12.2, wire.AppendBatch): ids, origin timestamps,
// payloads and user headers as polled, offsets and server timestamps not.

// appendMessageFile writes one batch of the polled messages to w.
func appendMessageFile(w io.Writer, vs []polledView) error {
	if len(vs) == 0 {
		return nil
	}
	msgs := make([]wire.Message, len(vs))
	for i, v := range vs {
		msgs[i] = wire.Message{ID: v.ID, OriginTimestamp: v.OriginTimestamp, Payload: v.Payload, Headers: v.Headers}
	}
	b, err := wire.AppendBatch(nil, msgs)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// readMessageFile reads back the messages appendMessageFile wrote.
func readMessageFile(path string) ([]wire.Message, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []wire.Message
	for len(data) > 0 {
		if len(data) < wire.BatchHeaderSize {
			return nil, fmt.Errorf("%s: %d trailing bytes are not a message batch", path, len(data))
		}
		n := wire.Batch(data).Length()
		if n < wire.BatchHeaderSize || n > uint64(len(data)) {
			return nil, fmt.Errorf("%s: batch length %d does not fit the file", path, n)
		}
		b := wire.Batch(data[:n])
		if err := wire.ValidateBatch(b, b.MessageCount()); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		origin := b.OriginTimestamp()
		for it := b.Frames(); ; {
			f, ok := it.Next()
			if !ok {
				break
			}
			h, err := wire.DecodeUserHeaders(f.UserHeaders())
			if err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			out = append(out, wire.Message{ID: f.ID(), OriginTimestamp: origin + uint64(f.TimestampDelta()),
				Payload: append([]byte(nil), f.Payload()...), Headers: h})
		}
		data = data[n:]
	}
	return out, nil
}

// rowWriter prints rows in columns whose widths only grow, so rows printed
// batch by batch (poll --follow) stay aligned with the header and with
// each other; the last column is never padded. Widths start at the widest
// value a column can hold where that is bounded (pollColumnWidths).
type rowWriter struct {
	w      io.Writer
	widths []int
	header bool
	buf    strings.Builder
}

// pollColumnWidths: partition (u32), offset (u64), RFC 3339 second,
// message id (0x + 32 hex digits).
var pollColumnWidths = []int{10, 20, 20, 34}

func newRowWriter(w io.Writer) *rowWriter {
	return &rowWriter{w: w, widths: append([]int(nil), pollColumnWidths...)}
}

// add queues row, printing head first on the first call.
func (r *rowWriter) add(head, row []string) {
	if !r.header {
		r.header = true
		r.line(head)
	}
	r.line(row)
}

func (r *rowWriter) line(cells []string) {
	for len(r.widths) < len(cells) {
		r.widths = append(r.widths, 0)
	}
	for i, c := range cells {
		if i == len(cells)-1 {
			r.buf.WriteString(c)
			break
		}
		n := utf8.RuneCountInString(c)
		r.widths[i] = max(r.widths[i], n)
		r.buf.WriteString(c)
		r.buf.WriteString(strings.Repeat(" ", r.widths[i]-n+2))
	}
	r.buf.WriteByte('\n')
}

func (r *rowWriter) flush() {
	_, _ = io.WriteString(r.w, r.buf.String())
	r.buf.Reset()
}
