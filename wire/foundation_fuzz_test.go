package wire

import (
	"bytes"
	"testing"
)

// FuzzHeaders types arbitrary 256-byte headers with every client- and
// replica-plane view: no view may panic, and a header that decodes must
// re-encode to a header that decodes to the same value.
func FuzzHeaders(f *testing.F) {
	var ping Header
	(&RequestHeader{Size: 256, Client: U128{Lo: 1}, Request: 1, Operation: OpNonReplicated, Code: CodePing}).Encode(&ping)
	f.Add(ping[:])
	var ev Header
	(&EvictionHeader{Client: U128{Lo: 1}, Reason: EvictIncompatibleProtocol, MaxVersion: ProtocolVersion, MinVersion: ProtocolVersion}).Encode(&ev)
	f.Add(ev[:])
	var ok Header
	(&PrepareOkHeader{Op: 3, Operation: OpCreateStream, Group: MetadataGroup}).Encode(&ok)
	f.Add(ok[:])
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := FrameSize(b); err != nil || len(b) < HeaderSize {
			return
		}
		h := HeaderOf(b)
		if r, err := DecodeRequestHeader(h); err == nil {
			var again Header
			r.Encode(&again)
			r2, err := DecodeRequestHeader(&again)
			if err != nil || r2 != r {
				t.Fatalf("request header round trip: %+v vs %+v (%v)", r, r2, err)
			}
		}
		if r, err := DecodeReplyHeader(h); err == nil {
			var again Header
			r.Encode(&again)
			if r2 := again.Reply(); r2 != r {
				t.Fatalf("reply header round trip: %+v vs %+v", r, r2)
			}
		}
		if e, err := DecodeEvictionHeader(h); err == nil {
			var again Header
			e.Encode(&again)
			if e2, err := DecodeEvictionHeader(&again); err != nil || e2 != e {
				t.Fatalf("eviction round trip: %+v vs %+v (%v)", e, e2, err)
			}
			_ = Evicted(e).Error()
		}
		if p, err := DecodePrepareHeader(h); err == nil {
			var again Header
			p.Encode(&again)
			if p2 := again.Prepare(); p2 != p {
				t.Fatalf("prepare round trip: %+v vs %+v", p, p2)
			}
		}
		_, _ = DecodePrepareOkHeader(h)
		_, _ = DecodeCommitHeader(h)
		_ = VerifyPrepare(b)
	})
}

// FuzzBlocks decodes arbitrary options, user-header and permission blocks,
// identifiers and result sections: no panic, and canonical re-encodings
// decode back to the same value.
func FuzzBlocks(f *testing.F) {
	f.Add(AppendOptions(nil, Options{{Key: "segment_size", Kind: KindString, Value: []byte("1 GiB")}}))
	f.Add([]byte{0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 1, 3, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0})
	f.Add(AppendResultError(nil, ErrStreamNameAlreadyExists))
	f.Add(AppendIdentifier(nil, Named("stream")))
	f.Fuzz(func(t *testing.T, b []byte) {
		if o, err := DecodeOptions(b); err == nil {
			if enc := AppendOptions(nil, o); !bytes.Equal(enc, b) {
				t.Fatalf("options re-encode differs")
			}
		}
		if h, err := DecodeUserHeaders(b); err == nil {
			if enc := AppendUserHeaders(nil, h); !bytes.Equal(enc, b) {
				t.Fatalf("user headers re-encode differs")
			}
		}
		if p, err := DecodePermissions(b); err == nil {
			enc := p.AppendCanonical(nil)
			if len(enc) != p.EncodedLen() {
				t.Fatalf("permissions length %d vs EncodedLen %d", len(enc), p.EncodedLen())
			}
			p2, err := DecodePermissions(enc)
			if err != nil || !bytes.Equal(p2.AppendCanonical(nil), enc) {
				t.Fatalf("canonical permissions do not round trip: %v", err)
			}
		}
		r := NewReader(b)
		id := r.Identifier("id")
		if r.Err() == nil {
			if enc := AppendIdentifier(nil, id); !bytes.Equal(enc, b[:r.Offset()]) {
				t.Fatalf("identifier re-encode differs")
			}
		}
		_, _ = SplitResult(b)
	})
}
