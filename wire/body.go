package wire

// Body is the codec of one request or response payload: the bytes after the
// 256-byte header (for result-framed replies, after the result section).
//
// Conventions every body type follows:
//   - AppendTo appends the encoding to b and returns the extended slice; it
//     does not validate (call Validate first when the input is untrusted).
//   - Decode replaces the receiver's contents from a whole body. It returns a
//     *DecodeError (errors.Is(err, ErrMalformed)) on any malformed input,
//     never panics, never reads past the end, and never allocates more than
//     the input justifies. Fixed-shape requests ignore trailing bytes, as the
//     reference server does (client-plane.md 2.9); bodies whose last field
//     runs to the end (options blocks, lists) must consume it exactly.
type Body interface {
	AppendTo(b []byte) []byte
	Decode(body []byte) error
}

// Request is a typed request body.
type Request interface {
	Body
	// Code is the command code the request is sent as.
	Code() CommandCode
}

// Empty is the body of commands without a payload (Ping, GetStats, GetMe,
// GetClients, GetUsers, GetStreams, GetPersonalAccessTokens, Logout, ...).
// Decode accepts and ignores any bytes, as the reference server does.
type Empty struct{}

func (Empty) AppendTo(b []byte) []byte { return b }
func (*Empty) Decode([]byte) error     { return nil }

// decodeWith runs fn over a Reader on body and returns the reader's error.
// When exact is set, trailing bytes are an error.
func decodeWith(body []byte, exact bool, what string, fn func(r *Reader)) error {
	r := NewReader(body)
	fn(r)
	if r.err != nil {
		return r.err
	}
	if exact && r.Len() != 0 {
		return decodeErr(what, "trailing bytes")
	}
	return nil
}
