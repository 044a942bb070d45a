package wire

import (
	"errors"
	"fmt"
)

// ErrorCode is an IggyError code (client-plane.md section 15). It travels as
// ReplyHeader.status or as the result of a result section, and it is a Go
// error, so callers can test for a code with errors.Is(err, wire.ErrUnauthorized).
type ErrorCode uint32

// Error implements error: "Unauthorized (41)".
func (c ErrorCode) Error() string { return fmt.Sprintf("%s (%d)", c.Name(), uint32(c)) }

// Name is the code's name in the IggyError enumeration, or "Error" for a code
// the table does not know (clients map unknown codes to 1, section 15).
func (c ErrorCode) Name() string {
	if n, ok := errorNames[c]; ok {
		return n
	}
	return "Error"
}

// Meaning is a short description of the code.
func (c ErrorCode) Meaning() string { return errorMeanings[c] }

// Known reports whether the code is in the IggyError table.
func (c ErrorCode) Known() bool { _, ok := errorNames[c]; return ok }

// ErrorCodes returns every known code, unordered.
func ErrorCodes() []ErrorCode {
	out := make([]ErrorCode, 0, len(errorNames))
	for c := range errorNames {
		out = append(out, c)
	}
	return out
}

// CodeOf extracts the IggyError code carried by err, if any.
func CodeOf(err error) (ErrorCode, bool) {
	if err == nil {
		return 0, false // before the errors.As targets, which escape (an allocation each)
	}
	var c ErrorCode
	if errors.As(err, &c) {
		return c, true
	}
	var e *DecodeError
	if errors.As(err, &e) {
		return ErrInvalidCommand, true
	}
	return 0, false
}

// DecodeError reports a byte sequence that does not decode. It never carries
// more than the field that failed and why; the caller decides which IggyError
// or eviction the failure becomes (client-plane.md 11.1: it depends on the
// command).
type DecodeError struct {
	Field  string
	Reason string
}

func (e *DecodeError) Error() string { return "wire: " + e.Field + ": " + e.Reason }

// Is lets errors.Is(err, ErrMalformed) match every decode error.
func (e *DecodeError) Is(target error) bool { return target == ErrMalformed }

// ErrMalformed matches every *DecodeError with errors.Is.
var ErrMalformed = errors.New("wire: malformed input")

func decodeErr(field, reason string) error { return &DecodeError{Field: field, Reason: reason} }

var errShort = "truncated"
