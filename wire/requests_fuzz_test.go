package wire

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// reqInternalCode maps an internal operation to a fuzz "code" outside the
// u16 command space, so FuzzRequest covers the replica-internal bodies too.
func reqInternalCode(op Operation) uint32 { return 1<<16 | uint32(op) }

// reqFuzzBody returns a zero body for a fuzz code.
func reqFuzzBody(code uint32) (Body, bool) {
	switch code {
	case reqInternalCode(OpCreateTopicWithAssignments):
		return &CreateTopicWithAssignments{}, true
	case reqInternalCode(OpCreatePartitionsWithAssignments):
		return &CreatePartitionsWithAssignments{}, true
	case reqInternalCode(OpTruncatePartition):
		return &TruncatePartition{}, true
	}
	return NewRequest(CommandCode(code))
}

func reqSeedCode(v Body) uint32 {
	switch x := v.(type) {
	case Request:
		return uint32(x.Code())
	case interface{ Operation() Operation }:
		return reqInternalCode(x.Operation())
	}
	panic("vector without a code")
}

// FuzzRequest decodes arbitrary bodies under every catalogue code: no
// panic, every failure is ErrMalformed, every decoded value validates, and
// decode(encode(decoded)) equals decoded (every request type decodes to a
// value whose encoding is canonical).
func FuzzRequest(f *testing.F) {
	for _, v := range reqAllVectors(f) {
		f.Add(reqSeedCode(v.value), reqHex(f, v.hex))
	}
	f.Fuzz(func(t *testing.T, code uint32, body []byte) {
		first, ok := reqFuzzBody(code)
		if !ok {
			return
		}
		if err := first.Decode(body); err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("code %d: error %v is not ErrMalformed", code, err)
			}
			return
		}
		if v, ok := first.(interface{ Validate() error }); ok {
			if err := v.Validate(); err != nil {
				t.Fatalf("code %d: decoded %+v does not validate: %v", code, first, err)
			}
		}
		enc := first.AppendTo(nil)
		second := reqFresh(first)
		if err := second.Decode(enc); err != nil {
			t.Fatalf("code %d: re-decode of %x: %v", code, enc, err)
		}
		if !reflect.DeepEqual(first, second) {
			t.Fatalf("code %d: round trip\nfirst  %+v\nsecond %+v", code, first, second)
		}
		if again := second.AppendTo(nil); !bytes.Equal(again, enc) {
			t.Fatalf("code %d: encoding not stable\n%x\n%x", code, enc, again)
		}
	})
}

// FuzzRequestRegister checks DecodeRegister against the two typed decoders
// and the password-shape round trip.
func FuzzRequestRegister(f *testing.F) {
	for _, s := range []string{reqLogin174Hex,
		`00 2c 00 00 01 67 01 31 03 61 62 63 00 00 00 00 00`,
		`00 2c 00 00 01 67 01 31 03 74 6f 6b 00 00 00 00`,
		`07 2c 00 00 06 67 6f 2d 73 64 6b 05 30 2e 37 2e 30 03 74 6f 6b 03 00 00 00 63 74 78`,
		`00 2c 00 00 01 67 01 31 00`,
	} {
		f.Add(reqHex(f, s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		rb, err := DecodeRegister(body)
		var pw LoginRegister
		pwErr := pw.Decode(body)
		var tok LoginRegisterWithPAT
		tokErr := tok.Decode(body)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v is not ErrMalformed", err)
			}
			if pwErr == nil || tokErr == nil {
				t.Fatalf("prefix failed but a shape decoded")
			}
			return
		}
		if (pwErr == nil) != (rb.Password != nil) || (tokErr == nil) != (rb.Token != nil) {
			t.Fatalf("shape disagreement: password %v/%v token %v/%v", pwErr, rb.Password, tokErr, rb.Token)
		}
		if rb.Password != nil && !reflect.DeepEqual(*rb.Password, pw) {
			t.Fatalf("password shape %+v vs %+v", *rb.Password, pw)
		}
		if rb.Token != nil && !reflect.DeepEqual(*rb.Token, tok) {
			t.Fatalf("token shape %+v vs %+v", *rb.Token, tok)
		}
		if rb.Password != nil && rb.Password.ClientInfo != rb.ClientInfo {
			t.Fatalf("prefix mismatch")
		}
		if rb.Password != nil {
			again, err := DecodeRegister(rb.Password.AppendTo(nil))
			if err != nil || again.Password == nil || !reflect.DeepEqual(*again.Password, *rb.Password) {
				t.Fatalf("password round trip: %+v, %v", again.Password, err)
			}
		}
		if rb.Token != nil {
			var back LoginRegisterWithPAT
			if err := back.Decode(rb.Token.AppendTo(nil)); err != nil || !reflect.DeepEqual(back, *rb.Token) {
				t.Fatalf("token round trip: %+v, %v", back, err)
			}
		}
	})
}

// FuzzRequestSendMessages: the metadata section is canonical, so a body
// that decodes re-encodes to exactly the same bytes, and Batch is the tail
// of the input itself.
func FuzzRequestSendMessages(f *testing.F) {
	f.Add(reqHex(f, reqSend175Hex))
	f.Add(reqHex(f, `11 00 00 00 02 01 73 01 04 01 00 00 00 03 02 aa bb 02 00 00 00`))
	f.Add(reqHex(f, `12 00 00 00 01 04 01 00 00 00 01 04 02 00 00 00 01 00 00 00 00 00 01 02 03`))
	f.Add(reqHex(f, `17 00 00 00 01 04 00 00 00 00 01 04 00 00 00 00 02 04 00 00 00 00 01 00 00 00 00`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var x SendMessages
		if err := x.Decode(body); err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v is not ErrMalformed", err)
			}
			return
		}
		if err := x.Validate(); err != nil {
			t.Fatalf("decoded value does not validate: %v", err)
		}
		if len(x.Batch) > 0 && &x.Batch[len(x.Batch)-1] != &body[len(body)-1] {
			t.Fatalf("batch does not alias the body")
		}
		if enc := x.AppendTo(nil); !bytes.Equal(enc, body) {
			t.Fatalf("re-encode differs\n got %x\nwant %x", enc, body)
		}
	})
}
