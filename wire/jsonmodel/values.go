package jsonmodel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"iggynode/wire"
)

// BodyError is a request body the reference refuses before its handler
// runs: Syntax is invalid JSON (400), otherwise a body that does not fit
// the model (422).
type BodyError struct {
	Syntax bool
	Err    error
}

func (e *BodyError) Error() string {
	if e.Syntax {
		return "Failed to parse the request body as JSON: " + e.Err.Error()
	}
	return "Failed to deserialize the JSON body into the target type: " + e.Err.Error()
}

func (e *BodyError) Unwrap() error { return e.Err }

func modelErr(format string, args ...any) error {
	return &BodyError{Err: fmt.Errorf(format, args...)}
}

// decode unmarshals body into v, classifying failures as BodyError.
func decode(body []byte, v any, strict bool) error {
	if !json.Valid(body) {
		return &BodyError{Syntax: true, Err: errors.New("invalid JSON")}
	}
	d := json.NewDecoder(bytes.NewReader(body))
	if strict {
		d.DisallowUnknownFields()
	}
	if err := d.Decode(v); err != nil {
		var be *BodyError
		if errors.As(err, &be) {
			return be
		}
		return &BodyError{Err: err}
	}
	return nil
}

// ByteSize is a byte count written as a human string ("0 B", "1.5 KB",
// "1 KiB"; http.md 0.1). It reads any unit spelling, a plain decimal
// string or a bare number.
type ByteSize uint64

var decimalUnits = []string{"B", "KB", "MB", "GB", "TB", "PB", "EB"}
var binaryUnits = []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}

// String picks the largest unit in which the value is exact with at most
// three fractional digits; at equal rank the spelling with fewer
// fractional digits, decimal on a tie.
func (s ByteSize) String() string {
	v := uint64(s)
	best, bestRank, bestFrac := strconv.FormatUint(v, 10)+" B", 0, 0
	try := func(units []string, base uint64) {
		div := uint64(1)
		for i := 1; i < len(units); i++ {
			if div > ^uint64(0)/base {
				return
			}
			div *= base
			if v < div {
				return
			}
			// exact with <= 3 fractional digits: v*1000 divisible by div
			whole, rem := v/div, v%div
			if new(big.Int).Mod(new(big.Int).Mul(new(big.Int).SetUint64(rem), big.NewInt(1000)), new(big.Int).SetUint64(div)).Sign() != 0 {
				continue
			}
			frac := new(big.Int).Div(new(big.Int).Mul(new(big.Int).SetUint64(rem), big.NewInt(1000)), new(big.Int).SetUint64(div)).Uint64()
			txt := strconv.FormatUint(whole, 10)
			digits := 0
			if frac != 0 {
				f := strings.TrimRight(fmt.Sprintf(".%03d", frac), "0")
				txt, digits = txt+f, len(f)-1
			}
			// The largest unit wins; at equal rank, fewer fractional
			// digits ("1 KiB", not "1.024 KB").
			if i > bestRank || (i == bestRank && digits < bestFrac) {
				best, bestRank, bestFrac = txt+" "+units[i], i, digits
			}
		}
	}
	try(decimalUnits, 1000)
	try(binaryUnits, 1024)
	return best
}

func (s ByteSize) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

func (s *ByteSize) UnmarshalJSON(b []byte) error {
	var n uint64
	if err := json.Unmarshal(b, &n); err == nil {
		*s = ByteSize(n)
		return nil
	}
	var str string
	if err := json.Unmarshal(b, &str); err != nil {
		return err
	}
	v, err := ParseByteSize(str)
	*s = ByteSize(v)
	return err
}

// ParseByteSize reads "1.5 KB", "1 KiB", "1024", "7 B" (units
// case-insensitive, space optional).
func ParseByteSize(s string) (uint64, error) {
	s = strings.TrimSpace(s)
	i := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := s, ""
	if i >= 0 {
		num, unit = strings.TrimSpace(s[:i]), strings.TrimSpace(s[i:])
	}
	mult := uint64(1)
	if unit != "" {
		m, ok := unitSpellings[strings.ToLower(unit)]
		if !ok {
			return 0, fmt.Errorf("unknown byte unit %q", unit)
		}
		mult = m
	}
	r, ok := new(big.Rat).SetString(num)
	if !ok || r.Sign() < 0 {
		return 0, fmt.Errorf("bad byte size %q", s)
	}
	r.Mul(r, new(big.Rat).SetInt(new(big.Int).SetUint64(mult)))
	v := new(big.Int).Quo(r.Num(), r.Denom())
	if !v.IsUint64() {
		return 0, fmt.Errorf("byte size %q overflows", s)
	}
	return v.Uint64(), nil
}

var unitSpellings = func() map[string]uint64 {
	m := map[string]uint64{}
	for k := range decimalUnits {
		d, b := strings.ToLower(decimalUnits[k]), strings.ToLower(binaryUnits[k])
		m[d], m[b] = pow(1000, k), pow(1024, k)
		if k > 0 {
			m[d[:1]], m[b[:2]] = pow(1000, k), pow(1024, k)
		}
	}
	m["bytes"] = 1
	return m
}()

func pow(b uint64, k int) uint64 {
	v := uint64(1)
	for range k {
		v *= b
	}
	return v
}

// MessageID is a u128 message id: a bare JSON number on output; on input a
// number up to u64::MAX, a decimal string up to u128::MAX, or 32 hex
// digits once every "-" is removed (a UUID, big-endian; http.md 6.3.1).
type MessageID wire.U128

func (m MessageID) big() *big.Int {
	v := new(big.Int).SetUint64(m.Hi)
	v.Lsh(v, 64)
	return v.Or(v, new(big.Int).SetUint64(m.Lo))
}

func (m MessageID) MarshalJSON() ([]byte, error) { return []byte(m.big().String()), nil }

func (m *MessageID) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		id, err := ParseMessageID(s)
		*m = id
		return err
	}
	v, ok := new(big.Int).SetString(string(b), 10)
	if !ok || v.Sign() < 0 || v.BitLen() > 128 {
		return fmt.Errorf("message id %s must be a non-negative integer up to u128::MAX or a string", b)
	}
	*m = fromBig(v)
	return nil
}

// ParseMessageID reads the string forms of 6.3.1.
func ParseMessageID(s string) (MessageID, error) {
	if s != "" && strings.Trim(s, "0123456789") == "" {
		v, ok := new(big.Int).SetString(s, 10)
		if !ok || v.BitLen() > 128 {
			return MessageID{}, fmt.Errorf("message id %q exceeds u128", s)
		}
		return fromBig(v), nil
	}
	hex := strings.ReplaceAll(s, "-", "")
	if len(hex) == 32 {
		if v, ok := new(big.Int).SetString(hex, 16); ok {
			return fromBig(v), nil
		}
	}
	return MessageID{}, fmt.Errorf("message id %q is neither decimal nor 32 hex digits", s)
}

func fromBig(v *big.Int) MessageID {
	lo := new(big.Int).And(v, new(big.Int).SetUint64(^uint64(0))).Uint64()
	hi := new(big.Int).Rsh(v, 64).Uint64()
	return MessageID{Lo: lo, Hi: hi}
}

// Bytes are standard base64 with padding.
type Bytes []byte

func (b Bytes) MarshalJSON() ([]byte, error) { return json.Marshal([]byte(b)) }

func (b *Bytes) UnmarshalJSON(data []byte) error {
	var v []byte
	if err := json.Unmarshal(data, &v); err != nil {
		return fmt.Errorf("bad base64: %w", err)
	}
	*b = v
	return nil
}

// ByteArray is bytes as a JSON array of numbers (OptionSpec.default_value).
type ByteArray []byte

func (b ByteArray) MarshalJSON() ([]byte, error) {
	out := make([]byte, 0, 2+4*len(b))
	out = append(out, '[')
	for i, v := range b {
		if i > 0 {
			out = append(out, ',')
		}
		out = strconv.AppendUint(out, uint64(v), 10)
	}
	return append(out, ']'), nil
}

func (b *ByteArray) UnmarshalJSON(data []byte) error {
	var v []uint8
	var nums []uint16
	if err := json.Unmarshal(data, &nums); err != nil {
		return err
	}
	for _, n := range nums {
		if n > 255 {
			return fmt.Errorf("byte value %d", n)
		}
		v = append(v, uint8(n))
	}
	*b = v
	return nil
}
