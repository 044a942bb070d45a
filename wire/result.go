package wire

// Result section (framing.md "Result section"; client-plane.md 4.3):
// [count u32] count x {index u32, result u32}. Success is count 0 followed by
// the typed payload; a rejection is exactly one entry and no payload.

// AppendResultOK appends the 4-byte success count.
func AppendResultOK(b []byte) []byte { return AppendU32(b, 0) }

// AppendResultError appends the 12-byte rejection [1][0][code].
func AppendResultError(b []byte, code ErrorCode) []byte {
	return AppendU32(AppendU32(AppendU32(b, 1), 0), uint32(code))
}

// ResultError is a committed (or preflight) rejection read from a result
// section. It unwraps to its ErrorCode.
type ResultError struct{ Code ErrorCode }

func (e *ResultError) Error() string { return "rejected: " + e.Code.Error() }
func (e *ResultError) Unwrap() error { return e.Code }

// StatusError is a deny frame: a nonzero ReplyHeader.status with an empty
// body. It unwraps to its ErrorCode.
type StatusError struct{ Code ErrorCode }

func (e *StatusError) Error() string { return "denied: " + e.Code.Error() }
func (e *StatusError) Unwrap() error { return e.Code }

// SplitResult strips a result section from a status-0 body. It returns the
// typed payload after a success, a *ResultError for a rejection (first
// entry's code), or a decode error for a malformed section.
func SplitResult(body []byte) ([]byte, error) {
	r := NewReader(body)
	n := r.U32("result count")
	if r.err != nil {
		return nil, r.err
	}
	if n == 0 {
		return r.Rest(), nil
	}
	if uint64(n)*8 > uint64(r.Len()) {
		return nil, decodeErr("result entries", errShort)
	}
	r.U32("result index")
	code := r.U32("result code")
	if code == 0 {
		return nil, decodeErr("result code", "zero in a rejection")
	}
	return nil, &ResultError{Code: ErrorCode(code)}
}
