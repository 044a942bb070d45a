package wire_test

// Golden byte vectors written by hand from the specification (framing.md,
// client-plane.md, messages.md, replica-plane.md Appendix A), never produced
// by our encoder. Each test decodes a vector with the wire API and checks
// every field, then encodes the expected value and checks the bytes.
//
// Vector files live in testdata/golden/*.hex: `#` starts a comment, bytes
// are hex separated by whitespace, and a line may start with an `0000:`
// offset prefix, which the loader checks against the bytes read so far (so
// a miscounted hand-written line fails loudly). Checksums the spec does not
// list were computed with the C reference xxHash (libxxhash 0.8.1, which
// reproduces every constant of client-plane.md 17.1), and are marked so.

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"iggynode/wire"
)

// parseGoldenHex parses the .hex format described above.
func parseGoldenHex(src string) ([]byte, error) {
	var out []byte
	for n, line := range strings.Split(src, "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		fields := strings.Fields(line)
		if len(fields) > 0 && strings.HasSuffix(fields[0], ":") {
			off, err := strconv.ParseUint(strings.TrimSuffix(fields[0], ":"), 16, 32)
			if err != nil {
				return nil, fmt.Errorf("line %d: bad offset prefix %q", n+1, fields[0])
			}
			if int(off) != len(out) {
				return nil, fmt.Errorf("line %d: offset prefix %#x but %#x bytes precede it", n+1, off, len(out))
			}
			fields = fields[1:]
		}
		for _, f := range fields {
			b, err := hex.DecodeString(f)
			if err != nil {
				return nil, fmt.Errorf("line %d: %v", n+1, err)
			}
			out = append(out, b...)
		}
	}
	return out, nil
}

// loadGolden reads testdata/golden/name.
func loadGolden(t *testing.T, name string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "golden", name))
	if err != nil {
		t.Fatalf("golden vector: %v", err)
	}
	b, err := parseGoldenHex(string(raw))
	if err != nil {
		t.Fatalf("golden vector %s: %v", name, err)
	}
	return b
}

// hx parses an inline hand-written vector in the same format.
func hx(t *testing.T, s string) []byte {
	t.Helper()
	b, err := parseGoldenHex(s)
	if err != nil {
		t.Fatalf("inline vector: %v", err)
	}
	return b
}

// assertBytes fails with the first differing offset and a dump of both.
func assertBytes(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if bytes.Equal(got, want) {
		return
	}
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	t.Errorf("%s: bytes differ from the spec vector at offset %d (%#x); got %d bytes, want %d\ngot:\n%swant:\n%s",
		what, i, i, len(got), len(want), hex.Dump(got), hex.Dump(want))
}

// header copies a 256-byte vector into a Header.
func header(t *testing.T, b []byte) *wire.Header {
	t.Helper()
	if len(b) != wire.HeaderSize {
		t.Fatalf("header vector is %d bytes, want %d", len(b), wire.HeaderSize)
	}
	var h wire.Header
	copy(h[:], b)
	return &h
}

var (
	// c1 is the client id of client-plane.md 17.3.
	c1 = wire.U128{Hi: 0x0123456789ABCDEF, Lo: 0xFEDCBA9876543210}
	// c2 is a second client id, 0x00112233445566778899AABBCCDDEEFF.
	c2 = wire.U128{Hi: 0x0011223344556677, Lo: 0x8899AABBCCDDEEFF}
	// clusterA2 is the cluster id of name "iggy-cluster" as it sits in header
	// bytes 32..48 (replica-plane.md Appendix A, A2).
	clusterA2 = wire.U128{Lo: 0xb8ba2787c805bb21, Hi: 0x462da7e87bc20e8d}
)

const (
	ts17       = 1_700_000_000_000_000 // µs, the origin timestamp of 17.5
	createBody = "\x02s1"              // CreateStream body: name "s1", empty options
	// xxh3CreateBody is XXH3-64 of createBody (C reference libxxhash).
	xxh3CreateBody = 0x2F81B4A25A20BEC2
)

// ---------------------------------------------------------------------------
// 1. Headers

func TestGolden_ClientPlane17_3_PingHeader(t *testing.T) {
	vec := loadGolden(t, "ping_request_header.hex")
	want := wire.RequestHeader{
		Size: 256, Client: c1, Request: 1, Operation: wire.OpNonReplicated, Code: wire.CodePing,
	}
	got, err := wire.DecodeRequestHeader(header(t, vec))
	if err != nil {
		t.Fatalf("DecodeRequestHeader: %v", err)
	}
	if got != want {
		t.Errorf("decoded %+v\nwant    %+v", got, want)
	}
	var h wire.Header
	want.Encode(&h)
	assertBytes(t, "RequestHeader.Encode", h[:], vec)
}

func TestGolden_Framing_RequestHeaderMetadataOp(t *testing.T) {
	vec := loadGolden(t, "create_stream_request_header.hex")
	want := wire.RequestHeader{
		Size: 259, Client: c1, RequestChecksum: wire.Widen(xxh3CreateBody), Timestamp: ts17,
		Request: 7, Operation: wire.OpCreateStream, Session: 42,
	}
	got, err := wire.DecodeRequestHeader(header(t, vec))
	if err != nil {
		t.Fatalf("DecodeRequestHeader: %v", err)
	}
	if got != want {
		t.Errorf("decoded %+v\nwant    %+v", got, want)
	}
	var h wire.Header
	want.Encode(&h)
	assertBytes(t, "RequestHeader.Encode", h[:], vec)
	// client-plane.md 12.3: the stamp is XXH3-64 of the body, widened.
	if c := wire.RequestChecksum([]byte(createBody)); c != got.RequestChecksum {
		t.Errorf("RequestChecksum(body) = %v, header carries %v", c, got.RequestChecksum)
	}
	// A code set on a non-NonReplicated request is not written (196..200 stay zero).
	withCode := want
	withCode.Code = wire.CodeCreateStream
	withCode.Encode(&h)
	assertBytes(t, "Encode ignores Code off NonReplicated", h[:], vec)
}

func TestGolden_Framing_RequestHeaderNonReplicatedCode(t *testing.T) {
	vec := loadGolden(t, "get_topics_request_header.hex")
	want := wire.RequestHeader{
		Size: 262, Client: c1, Request: 8, Operation: wire.OpNonReplicated, Session: 42, Code: wire.CodeGetTopics,
	}
	got, err := wire.DecodeRequestHeader(header(t, vec))
	if err != nil {
		t.Fatalf("DecodeRequestHeader: %v", err)
	}
	if got != want {
		t.Errorf("decoded %+v\nwant    %+v", got, want)
	}
	if got.Code != 301 {
		t.Errorf("code at 196..200 = %d, want 301", got.Code)
	}
	var h wire.Header
	want.Encode(&h)
	assertBytes(t, "RequestHeader.Encode", h[:], vec)
}

func TestGolden_ClientPlane4_4_ReplyHeaderClasses(t *testing.T) {
	cases := []struct {
		class, file string
		want        wire.ReplyHeader
	}{
		{"A non-replicated success", "reply_header_class_a.hex", wire.ReplyHeader{
			Size: 512, Client: c1, Op: 42, Commit: 57, Timestamp: ts17, Request: 8,
			Operation: wire.OpNonReplicated,
		}},
		{"B1 non-replicated deny", "reply_header_class_b1.hex", wire.ReplyHeader{
			Cluster: wire.U128{Lo: 1}, Size: 256, View: 5, Release: 1, Replica: 2, Client: c1,
			Op: 42, Commit: 57, Timestamp: ts17, Request: 8, Operation: wire.OpNonReplicated,
			Status: uint32(wire.ErrUnauthorized),
		}},
		{"C committed metadata", "reply_header_class_c.hex", wire.ReplyHeader{
			Cluster: clusterA2, Size: 299, View: 3, Replica: 1, RequestChecksum: wire.Widen(xxh3CreateBody),
			Client: c1, Op: 58, Commit: 58, Timestamp: ts17 + 123, Request: 7, Operation: wire.OpCreateStream,
		}},
		{"D result rejection", "reply_header_class_d.hex", wire.ReplyHeader{
			Size: 268, Client: c1, Op: 58, Commit: 58, Request: 8, Operation: wire.OpCreateStream,
		}},
		{"G login success", "reply_header_class_g.hex", wire.ReplyHeader{
			Size: 289, RequestChecksum: wire.Widen(0x8FDE203C2A3F8095), Client: c2, Op: 42, Commit: 42,
			Operation: wire.OpRegister,
		}},
		{"H logout success", "reply_header_class_h.hex", wire.ReplyHeader{
			Size: 256, RequestChecksum: wire.Widen(0x2D06800538D394C2), Client: c2, Op: 42, Commit: 60,
			Request: 9, Operation: wire.OpLogout,
		}},
	}
	for _, tc := range cases {
		t.Run(tc.class, func(t *testing.T) {
			vec := loadGolden(t, tc.file)
			got, err := wire.DecodeReplyHeader(header(t, vec))
			if err != nil {
				t.Fatalf("DecodeReplyHeader: %v", err)
			}
			if got != tc.want {
				t.Errorf("decoded %+v\nwant    %+v", got, tc.want)
			}
			var h wire.Header
			tc.want.Encode(&h)
			assertBytes(t, "ReplyHeader.Encode", h[:], vec)
		})
	}
}

func TestGolden_ClientPlane4_4_ReplyHeaderRejections(t *testing.T) {
	base := loadGolden(t, "reply_header_class_a.hex")
	// A request frame is not a reply.
	if _, err := wire.DecodeReplyHeader(header(t, loadGolden(t, "ping_request_header.hex"))); err == nil {
		t.Error("DecodeReplyHeader accepted command 5")
	}
	// 4.4 (Go SDK): with status 0 the operation must be defined.
	for _, op := range []byte{4, 63, 69, 150, 163, 255} {
		h := header(t, base)
		h[208] = op
		if _, err := wire.DecodeReplyHeader(h); err == nil {
			t.Errorf("status-0 reply with operation %d accepted", op)
		}
	}
	// A deny frame is decoded whatever its operation byte says.
	h := header(t, loadGolden(t, "reply_header_class_b1.hex"))
	h[208] = 200
	if _, err := wire.DecodeReplyHeader(h); err != nil {
		t.Errorf("status-41 reply with operation 200 rejected: %v", err)
	}
}

func TestGolden_ClientPlane4_5_EvictionHeaders(t *testing.T) {
	cases := []struct {
		name, file string
		want       wire.EvictionHeader
		code       wire.ErrorCode // client-plane.md 16
	}{
		{"NoSession", "eviction_no_session.hex", wire.EvictionHeader{
			Cluster: clusterA2, View: 3, Replica: 1, Client: c1, Reason: wire.EvictNoSession,
		}, wire.ErrUnauthenticated},
		{"InvalidCredentials", "eviction_invalid_credentials.hex", wire.EvictionHeader{
			Client: c2, Reason: wire.EvictInvalidCredentials,
		}, wire.ErrInvalidCredentials},
		{"IncompatibleProtocol", "eviction_incompatible_protocol.hex", wire.EvictionHeader{
			Client: c2, MaxVersion: 11264, MinVersion: 11264, Reason: wire.EvictIncompatibleProtocol,
		}, wire.ErrIncompatibleProtocolVersion},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			vec := loadGolden(t, tc.file)
			h := header(t, vec)
			if h.Size() != 256 || h.Command() != wire.CmdEviction || h.Release() != 0 {
				t.Errorf("size %d command %v release %d", h.Size(), h.Command(), h.Release())
			}
			got, err := wire.DecodeEvictionHeader(h)
			if err != nil {
				t.Fatalf("DecodeEvictionHeader: %v", err)
			}
			if got != tc.want {
				t.Errorf("decoded %+v\nwant    %+v", got, tc.want)
			}
			if c := wire.Evicted(got).Code(); c != tc.code {
				t.Errorf("SDK mapping: %v, want %v", c, tc.code)
			}
			var enc wire.Header
			tc.want.Encode(&enc)
			assertBytes(t, "EvictionHeader.Encode", enc[:], vec)
		})
	}
}

func TestGolden_ClientPlane4_5_EvictionRejections(t *testing.T) {
	noSession := loadGolden(t, "eviction_no_session.hex")
	incompatible := loadGolden(t, "eviction_incompatible_protocol.hex")
	cases := []struct {
		name   string
		base   []byte
		mutate func(h *wire.Header)
	}{
		{"reserved byte 62", noSession, func(h *wire.Header) { h[62] = 1 }},
		{"reserved byte 127", noSession, func(h *wire.Header) { h[127] = 0x80 }},
		{"reserved byte 152", incompatible, func(h *wire.Header) { h[152] = 1 }},
		{"reserved byte 254", noSession, func(h *wire.Header) { h[254] = 1 }},
		{"reason 0", noSession, func(h *wire.Header) { h[255] = 0 }},
		{"window max on reason 1", noSession, func(h *wire.Header) { h[145] = 0x2c }},
		{"window min on reason 1", noSession, func(h *wire.Header) { h[149] = 0x2c }},
		{"window on reason 9", loadGolden(t, "eviction_invalid_credentials.hex"), func(h *wire.Header) { h[145], h[149] = 0x2c, 0x2c }},
		{"reason 14 with min 0", incompatible, func(h *wire.Header) { h[149] = 0 }},
		{"reason 14 with min > max", incompatible, func(h *wire.Header) { h[148] = 1 }},
		{"client 0", noSession, func(h *wire.Header) { clear(h[128:144]) }},
		{"size 257", noSession, func(h *wire.Header) { h[48] = 1; h[49] = 1 }},
		{"command 8", noSession, func(h *wire.Header) { h[60] = 8 }},
	}
	for _, tc := range cases {
		h := header(t, tc.base)
		tc.mutate(h)
		if _, err := wire.DecodeEvictionHeader(h); err == nil {
			t.Errorf("%s: DecodeEvictionHeader accepted it", tc.name)
		} else if !errors.Is(err, wire.ErrMalformed) {
			t.Errorf("%s: error %v is not ErrMalformed", tc.name, err)
		}
	}
}

func TestGolden_Framing_FrameSizePrefix(t *testing.T) {
	vec := loadGolden(t, "create_stream_request_header.hex")
	size, err := wire.FrameSize(vec[:52])
	if err != nil || size != 259 {
		t.Errorf("FrameSize(52-byte prefix) = %d, %v; want 259", size, err)
	}
	if _, err := wire.FrameSize(vec[:51]); err == nil {
		t.Error("FrameSize accepted a 51-byte prefix")
	}
	if err := wire.CheckFrameSize(size, wire.DefaultMaxFrameSize); err != nil {
		t.Errorf("CheckFrameSize(259): %v", err)
	}
	for _, bad := range []uint32{0, 255, wire.DefaultMaxFrameSize + 1} {
		if wire.CheckFrameSize(bad, wire.DefaultMaxFrameSize) == nil {
			t.Errorf("CheckFrameSize(%d) accepted", bad)
		}
	}
}

func TestGolden_ClientPlane4_1_HeaderValidation(t *testing.T) {
	// Each row edits the 17.3 Ping header: operation at 176, request at 168,
	// session at 184, client at 128..144, command at 60.
	cases := []struct {
		name   string
		mutate func(h *wire.Header)
		ok     bool
	}{
		{"ping as in 17.3", func(h *wire.Header) {}, true},
		{"client 0", func(h *wire.Header) { clear(h[128:144]) }, false},
		{"client with only the high byte", func(h *wire.Header) { clear(h[128:143]) }, true},
		{"command 8", func(h *wire.Header) { h[60] = 8 }, false},
		{"operation 0", func(h *wire.Header) { h[176] = 0 }, false},
		{"undefined operation 4", func(h *wire.Header) { h[176], h[184] = 4, 1 }, false},
		{"undefined operation 63", func(h *wire.Header) { h[176], h[184] = 63, 1 }, false},
		{"undefined operation 69", func(h *wire.Header) { h[176], h[184] = 69, 1 }, false},
		{"undefined operation 127", func(h *wire.Header) { h[176], h[184] = 127, 1 }, false},
		{"undefined operation 150", func(h *wire.Header) { h[176], h[184] = 150, 1 }, false},
		{"undefined operation 163", func(h *wire.Header) { h[176], h[184] = 163, 1 }, false},
		{"internal 64 with request and session", func(h *wire.Header) { h[176], h[184] = 64, 1 }, true},
		{"internal 68 with request and session", func(h *wire.Header) { h[176], h[184] = 68, 1 }, true},
		{"Register request 0 session 0", func(h *wire.Header) { h[176], h[168] = 1, 0 }, true},
		{"Register with request 1", func(h *wire.Header) { h[176] = 1 }, false},
		{"Register with session 1", func(h *wire.Header) { h[176], h[168], h[184] = 1, 0, 1 }, false},
		{"Logout request 1 session 42", func(h *wire.Header) { h[176], h[184] = 3, 42 }, true},
		{"Logout with session 0", func(h *wire.Header) { h[176] = 3 }, false},
		{"Logout with request 0", func(h *wire.Header) { h[176], h[168], h[184] = 3, 0, 42 }, false},
		{"CreateStream request 1 session 1", func(h *wire.Header) { h[176], h[184] = 128, 1 }, true},
		{"CreateStream session 0", func(h *wire.Header) { h[176] = 128 }, false},
		{"SendMessages request 0", func(h *wire.Header) { h[176], h[168], h[184] = 160, 0, 1 }, false},
		{"DeleteConsumerOffset request 1 session 1", func(h *wire.Header) { h[176], h[184] = 162, 1 }, true},
		{"NonReplicated request 0 session 0", func(h *wire.Header) { h[168] = 0 }, true},
		{"NonReplicated request 0 session 9", func(h *wire.Header) { h[168], h[184] = 0, 9 }, true},
		{"NonReplicated anything in unchecked fields", func(h *wire.Header) {
			h[0], h[20], h[40], h[52], h[56], h[61], h[100], h[150], h[178], h[192], h[199], h[220], h[250] = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13
		}, true},
	}
	base := loadGolden(t, "ping_request_header.hex")
	for _, tc := range cases {
		h := header(t, base)
		tc.mutate(h)
		_, err := wire.DecodeRequestHeader(h)
		if tc.ok && err != nil {
			t.Errorf("%s: rejected: %v", tc.name, err)
		}
		if !tc.ok && err == nil {
			t.Errorf("%s: accepted, client-plane.md 4.1 drops it", tc.name)
		}
	}
}

// ---------------------------------------------------------------------------
// 2. Shared encodings

func TestGolden_ClientPlane2_2_Identifier(t *testing.T) {
	ok := []struct {
		hex  string
		want wire.Identifier
	}{
		{"01 04 00 00 00 00", wire.ID(0)},
		{"01 04 2a 00 00 00", wire.ID(42)},
		{"02 02 73 31", wire.Named("s1")},
		{"02 01 30", wire.Named("0")}, // a string that spells a number stays a string
	}
	for _, tc := range ok {
		vec := hx(t, tc.hex)
		r := wire.NewReader(vec)
		got := r.Identifier("id")
		if r.Err() != nil || r.Len() != 0 || got != tc.want {
			t.Errorf("%s: decoded %+v (err %v, %d left), want %+v", tc.hex, got, r.Err(), r.Len(), tc.want)
		}
		assertBytes(t, "AppendIdentifier "+tc.hex, wire.AppendIdentifier(nil, tc.want), vec)
		if n := tc.want.EncodedLen(); n != len(vec) {
			t.Errorf("%s: EncodedLen %d", tc.hex, n)
		}
	}
	for _, bad := range []string{
		"", "01", "01 04 00 00 00", // truncated
		"00 04 00 00 00 00", "03 04 00 00 00 00", // kind
		"01 05 00 00 00 00 00", "01 00", // numeric length must be 4
		"02 00",       // empty string
		"02 02 ff fe", // invalid UTF-8
	} {
		r := wire.NewReader(hx(t, bad))
		if r.Identifier("id"); r.Err() == nil {
			t.Errorf("identifier %q accepted", bad)
		}
	}
}

func TestGolden_ClientPlane2_3_Consumer(t *testing.T) {
	ok := []struct {
		hex  string
		want wire.Consumer
	}{
		{"02 02 02 67 31", wire.GroupConsumer(wire.Named("g1"))},
		{"01 01 04 07 00 00 00", wire.SingleConsumer(wire.ID(7))},
	}
	for _, tc := range ok {
		vec := hx(t, tc.hex)
		r := wire.NewReader(vec)
		got := r.Consumer("consumer")
		if r.Err() != nil || r.Len() != 0 || got != tc.want {
			t.Errorf("%s: decoded %+v (err %v), want %+v", tc.hex, got, r.Err(), tc.want)
		}
		assertBytes(t, "AppendConsumer", wire.AppendConsumer(nil, tc.want), vec)
	}
	for _, bad := range []string{"00 01 04 07 00 00 00", "03 02 02 67 31", "02"} {
		r := wire.NewReader(hx(t, bad))
		if r.Consumer("consumer"); r.Err() == nil {
			t.Errorf("consumer %q accepted", bad)
		}
	}
}

func TestGolden_ClientPlane2_4_OptionalPartition(t *testing.T) {
	cases := []struct {
		hex, canonical string
		want           wire.OptionalPartition
	}{
		{"01 07 00 00 00", "01 07 00 00 00", wire.Partition(7)},
		{"01 00 00 00 00", "01 00 00 00 00", wire.Partition(0)},
		{"00 00 00 00 00", "00 00 00 00 00", wire.OptionalPartition{}},
		// Any flag other than 1 is absent; the value is read and ignored.
		{"02 09 00 00 00", "00 00 00 00 00", wire.OptionalPartition{}},
		{"ff 01 00 00 00", "00 00 00 00 00", wire.OptionalPartition{}},
	}
	for _, tc := range cases {
		r := wire.NewReader(hx(t, tc.hex))
		got := r.OptionalPartition("partition")
		if r.Err() != nil || r.Len() != 0 || got != tc.want {
			t.Errorf("%s: decoded %+v (err %v, %d left), want %+v", tc.hex, got, r.Err(), r.Len(), tc.want)
		}
		assertBytes(t, "AppendOptionalPartition "+tc.hex, wire.AppendOptionalPartition(nil, got), hx(t, tc.canonical))
	}
	r := wire.NewReader(hx(t, "01 07 00 00"))
	if r.OptionalPartition("partition"); r.Err() == nil {
		t.Error("4-byte optional partition accepted")
	}
}

func TestGolden_ClientPlane2_5_Partitioning(t *testing.T) {
	ok := []struct {
		hex  string
		want wire.Partitioning
	}{
		{"01 00", wire.Balanced()},
		{"02 04 03 00 00 00", wire.PartitionID(3)},
		{"03 08 6f 72 64 65 72 2d 34 32", wire.MessagesKey([]byte("order-42"))},
		{"03 02 ff fe", wire.MessagesKey([]byte{0xff, 0xfe})}, // keys need not be UTF-8
	}
	for _, tc := range ok {
		vec := hx(t, tc.hex)
		r := wire.NewReader(vec)
		got := r.Partitioning("partitioning")
		if r.Err() != nil || r.Len() != 0 || got.Kind != tc.want.Kind || got.ID != tc.want.ID || !bytes.Equal(got.Key, tc.want.Key) {
			t.Errorf("%s: decoded %+v (err %v), want %+v", tc.hex, got, r.Err(), tc.want)
		}
		assertBytes(t, "AppendPartitioning "+tc.hex, wire.AppendPartitioning(nil, tc.want), vec)
		if n := tc.want.EncodedLen(); n != len(vec) {
			t.Errorf("%s: EncodedLen %d", tc.hex, n)
		}
	}
	for _, bad := range []string{
		"01 01 00", "02 03 00 00 00", "02 05 00 00 00 00 00", "03 00", "03 02 61", "00 00", "04 00",
	} {
		r := wire.NewReader(hx(t, bad))
		if r.Partitioning("partitioning"); r.Err() == nil {
			t.Errorf("partitioning %q accepted", bad)
		}
	}
}

func TestGolden_ClientPlane2_6_PollingStrategy(t *testing.T) {
	ok := []struct {
		hex  string
		want wire.PollingStrategy
	}{
		{"01 64 00 00 00 00 00 00 00", wire.OffsetStrategy(100)},
		{"02 00 40 1e 18 24 0a 06 00", wire.TimestampStrategy(ts17)},
		{"03 00 00 00 00 00 00 00 00", wire.FirstStrategy()},
		{"04 00 00 00 00 00 00 00 00", wire.LastStrategy()},
		{"05 00 00 00 00 00 00 00 00", wire.NextStrategy()},
		// The value of First/Last/Next is carried, not interpreted.
		{"05 2a 00 00 00 00 00 00 00", wire.PollingStrategy{Kind: wire.PollNext, Value: 42}},
	}
	for _, tc := range ok {
		vec := hx(t, tc.hex)
		r := wire.NewReader(vec)
		got := r.PollingStrategy("strategy")
		if r.Err() != nil || r.Len() != 0 || got != tc.want {
			t.Errorf("%s: decoded %+v (err %v), want %+v", tc.hex, got, r.Err(), tc.want)
		}
		assertBytes(t, "AppendPollingStrategy "+tc.hex, wire.AppendPollingStrategy(nil, tc.want), vec)
	}
	for _, bad := range []string{"00 00 00 00 00 00 00 00 00", "06 00 00 00 00 00 00 00 00", "01 00 00 00 00 00 00 00"} {
		r := wire.NewReader(hx(t, bad))
		if r.PollingStrategy("strategy"); r.Err() == nil {
			t.Errorf("strategy %q accepted", bad)
		}
	}
}

func TestGolden_ClientPlane17_2_PackedVersion(t *testing.T) {
	cases := []struct {
		major, minor, patch uint32
		hex                 string
		accepted            bool
	}{
		{0, 11, 0, "00 2c 00 00", true},
		{0, 11, 7, "07 2c 00 00", true},
		{0, 11, 1023, "ff 2f 00 00", true},  // 12287, top of the window
		{0, 10, 3, "03 28 00 00", false},    // below the minimum
		{0, 10, 1023, "ff 2b 00 00", false}, // 11263
		{0, 12, 0, "00 30 00 00", false},    // minor above 11
		{1, 11, 0, "00 2c 10 00", false},
	}
	for _, tc := range cases {
		v := wire.Pack(tc.major, tc.minor, tc.patch)
		assertBytes(t, fmt.Sprintf("packed %d.%d.%d", tc.major, tc.minor, tc.patch), wire.AppendU32(nil, uint32(v)), hx(t, tc.hex))
		r := wire.NewReader(hx(t, tc.hex))
		back := wire.Version(r.U32("version"))
		if back.Major() != tc.major || back.Minor() != tc.minor || back.Patch() != tc.patch {
			t.Errorf("%s: unpacked %v", tc.hex, back)
		}
		if got := wire.ProtocolVersion.Accepts(back); got != tc.accepted {
			t.Errorf("gate(%v) = %v, want %v (client-plane.md 5.2 step 2)", back, got, tc.accepted)
		}
	}
	if wire.ProtocolVersion != 0x2C00 || wire.MinProtocolVersion != 11264 {
		t.Errorf("ProtocolVersion %#x, MinProtocolVersion %#x; want 0x2C00 both", wire.ProtocolVersion, wire.MinProtocolVersion)
	}
}

const perm94 = `
00 01 00 00 00 00 00 00 01 00   # global flags: read_servers, poll_messages
01                              # has_streams
03 00 00 00                     # stream_id = 3
00 01 00 00 00 00               # stream flags: read_stream
01                              # has_topics
00 00 00 00                     # topic_id = 0
00 00 00 01                     # topic flags: send_messages
00                              # has_next_topic = 0
00                              # has_next_stream = 0
`

func TestGolden_ClientPlane9_4_PermissionsExample(t *testing.T) {
	vec := hx(t, perm94)
	if len(vec) != 32 {
		t.Fatalf("9.4 example is %d bytes, spec says 32", len(vec))
	}
	p, err := wire.DecodePermissions(vec)
	if err != nil {
		t.Fatalf("DecodePermissions: %v", err)
	}
	wantGlobal := wire.GlobalPermissions{ReadServers: true, PollMessages: true}
	if p.Global != wantGlobal {
		t.Errorf("global %+v, want %+v", p.Global, wantGlobal)
	}
	if len(p.Streams) != 1 {
		t.Fatalf("streams %+v, want only stream 3", p.Streams)
	}
	s, ok := p.Streams[3]
	if !ok || !s.ReadStream || s.ManageStream || s.ManageTopics || s.ReadTopics || s.PollMessages || s.SendMessages {
		t.Errorf("stream 3 = %+v (present %v), want only read_stream", s, ok)
	}
	if len(s.Topics) != 1 || s.Topics[0] != (wire.TopicPermissions{SendMessages: true}) {
		t.Errorf("topics %+v, want topic 0 with send_messages", s.Topics)
	}
	if n := p.EncodedLen(); n != 32 {
		t.Errorf("EncodedLen %d, want 32", n)
	}
	assertBytes(t, "AppendCanonical", p.AppendCanonical(nil), vec)
	assertBytes(t, "AppendEcho", p.AppendEcho(nil), vec)
	// Built in Go, the same set encodes to the same bytes.
	built := &wire.Permissions{Global: wantGlobal, Streams: map[uint32]wire.StreamPermissions{
		3: {ReadStream: true, Topics: map[uint32]wire.TopicPermissions{0: {SendMessages: true}}},
	}}
	assertBytes(t, "AppendCanonical(built)", built.AppendCanonical(nil), vec)
	// 11.1: the block must decode completely and fill its length exactly.
	if _, err := wire.DecodePermissions(append(append([]byte(nil), vec...), 0)); err == nil {
		t.Error("a trailing byte after the block was accepted")
	}
	if _, err := wire.DecodePermissions(vec[:31]); err == nil {
		t.Error("a truncated block was accepted")
	}
	if _, err := wire.DecodePermissions(vec[:10]); err == nil {
		t.Error("a block without has_streams was accepted")
	}
}

func TestGolden_ClientPlane9_3_PermissionsDuplicatesLastWins(t *testing.T) {
	in := hx(t, `
00 00 00 00 00 00 00 00 00 00                 # no global flags
01                                            # has_streams
03 00 00 00  00 01 00 00 00 00  00  01        # stream 3: read_stream, no topics, next
01 00 00 00  01 00 00 00 00 00  01            # stream 1: manage_stream, has_topics
02 00 00 00  00 01 00 00  00                  #   topic 2: read_topic, last topic
01                                            # has_next_stream
03 00 00 00  00 00 00 00 00 01  00  00        # stream 3 again: send_messages, last
`)
	canonical := hx(t, `
00 00 00 00 00 00 00 00 00 00
01
01 00 00 00  01 00 00 00 00 00  01            # stream 1 first (ascending)
02 00 00 00  00 01 00 00  00
01
03 00 00 00  00 00 00 00 00 01  00  00        # stream 3: the last entry won
`)
	p, err := wire.DecodePermissions(in)
	if err != nil {
		t.Fatalf("DecodePermissions: %v", err)
	}
	if s := p.Streams[3]; s.ReadStream || !s.SendMessages {
		t.Errorf("stream 3 = %+v, want the last entry (send_messages only)", s)
	}
	if len(p.Streams) != 2 {
		t.Errorf("%d stream entries, want 2", len(p.Streams))
	}
	assertBytes(t, "AppendCanonical", p.AppendCanonical(nil), canonical)
	if n := p.EncodedLen(); n != len(canonical) {
		t.Errorf("EncodedLen %d, want %d", n, len(canonical))
	}
}

func TestGolden_ClientPlane9_3_PermissionsNonzeroFlagsNormalized(t *testing.T) {
	in := hx(t, `
02 00 00 00 00 00 00 00 00 00                 # manage_servers = 02 (true)
02                                            # has_streams = 02 (true)
05 00 00 00  00 ff 00 00 00 00  00  07        # stream 5: read_stream = ff, next = 07
02 00 00 00  00 00 00 00 02 00  00  00        # stream 2: poll_messages = 02, last
`)
	echo := hx(t, `
01 00 00 00 00 00 00 00 00 00
01
05 00 00 00  00 01 00 00 00 00  00  01        # same order, flags 00/01
02 00 00 00  00 00 00 00 01 00  00  00
`)
	canonical := hx(t, `
01 00 00 00 00 00 00 00 00 00
01
02 00 00 00  00 00 00 00 01 00  00  01        # ascending ids
05 00 00 00  00 01 00 00 00 00  00  00
`)
	p, err := wire.DecodePermissions(in)
	if err != nil {
		t.Fatalf("DecodePermissions: %v", err)
	}
	if !p.Global.ManageServers || !p.Streams[5].ReadStream || !p.Streams[2].PollMessages {
		t.Errorf("nonzero flag bytes not read as true: %+v", p)
	}
	assertBytes(t, "AppendEcho (CreateUser reply, 9.3)", p.AppendEcho(nil), echo)
	assertBytes(t, "AppendCanonical (GetUser, 9.3)", p.AppendCanonical(nil), canonical)
}

// optionsTwo is a request-side block in client order: message_expiry
// (Uint64, 7 days = 604 800 000 000 µs) then compression_algorithm (String
// "gzip"), 32 + 35 = 67 bytes.
const optionsTwo = `
02 0e 00 00 00                                # key: String, 14 bytes
6d 65 73 73 61 67 65 5f 65 78 70 69 72 79     # "message_expiry"
0c 08 00 00 00                                # value: Uint64, 8 bytes
00 a0 e3 d0 8c 00 00 00                       # 604 800 000 000
02 15 00 00 00                                # key: String, 21 bytes
63 6f 6d 70 72 65 73 73 69 6f 6e 5f 61 6c 67 6f 72 69 74 68 6d   # "compression_algorithm"
02 04 00 00 00                                # value: String, 4 bytes
67 7a 69 70                                   # "gzip"
`

// optionsTwoResponse is the same block response-side (10.3): a u32 length,
// then entries in ascending key order.
const optionsTwoResponse = `
43 00 00 00                                   # options_len = 67
02 15 00 00 00 63 6f 6d 70 72 65 73 73 69 6f 6e 5f 61 6c 67 6f 72 69 74 68 6d
02 04 00 00 00 67 7a 69 70
02 0e 00 00 00 6d 65 73 73 61 67 65 5f 65 78 70 69 72 79
0c 08 00 00 00 00 a0 e3 d0 8c 00 00 00
`

func optionsTwoValue() wire.Options {
	return wire.Options{
		{Key: "message_expiry", Kind: wire.KindUint64, Value: []byte{0x00, 0xa0, 0xe3, 0xd0, 0x8c, 0, 0, 0}},
		{Key: "compression_algorithm", Kind: wire.KindString, Value: []byte("gzip")},
	}
}

func TestGolden_ClientPlane10_1_OptionsBlock(t *testing.T) {
	vec := hx(t, optionsTwo)
	if len(vec) != 67 {
		t.Fatalf("vector is %d bytes, want 67", len(vec))
	}
	want := optionsTwoValue()
	got, err := wire.DecodeOptions(vec)
	if err != nil {
		t.Fatalf("DecodeOptions: %v", err)
	}
	if !got.Equal(want) {
		t.Errorf("decoded %+v\nwant    %+v", got, want)
	}
	assertBytes(t, "AppendOptions (request order kept)", wire.AppendOptions(nil, want), vec)
	if n := want.EncodedLen(); n != 67 {
		t.Errorf("EncodedLen %d", n)
	}
	if o, err := wire.DecodeOptions(nil); err != nil || len(o) != 0 {
		t.Errorf("empty block: %v, %v", o, err)
	}
	bad := map[string]string{
		"duplicate key":        "02 01 00 00 00 61 09 01 00 00 00 01 02 01 00 00 00 61 09 01 00 00 00 02",
		"odd number of fields": "02 01 00 00 00 61",
		"key kind 0":           "00 01 00 00 00 61 09 01 00 00 00 01",
		"value kind 0":         "02 01 00 00 00 61 00 01 00 00 00 01",
		"key kind Raw":         "01 01 00 00 00 61 09 01 00 00 00 01",
		"value length 0":       "02 01 00 00 00 61 09 00 00 00 00",
		"value length 256":     "02 01 00 00 00 61 01 00 01 00 00 01",
		"field past the end":   "02 01 00 00 00 61 09 02 00 00 00 01",
		"trailing byte":        "02 01 00 00 00 61 09 01 00 00 00 01 00",
		"key not UTF-8":        "02 01 00 00 00 ff 09 01 00 00 00 01",
		"truncated field head": "02 01 00",
	}
	for name, h := range bad {
		if _, err := wire.DecodeOptions(hx(t, h)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// 10.1: value kinds are not restricted at this layer.
	if _, err := wire.DecodeOptions(hx(t, "02 01 00 00 00 61 c8 01 00 00 00 01")); err != nil {
		t.Errorf("value kind 200 rejected: %v", err)
	}
}

func TestGolden_ClientPlane10_3_OptionsResponseOrder(t *testing.T) {
	vec := hx(t, optionsTwoResponse)
	assertBytes(t, "AppendOptions32", wire.AppendOptions32(nil, optionsTwoValue()), vec)
	r := wire.NewReader(vec)
	got := r.Options32("options")
	if r.Err() != nil || r.Len() != 0 {
		t.Fatalf("Options32: %v, %d left", r.Err(), r.Len())
	}
	want := optionsTwoValue().Sorted()
	if !got.Equal(want) || got[0].Key != "compression_algorithm" {
		t.Errorf("decoded %+v\nwant    %+v", got, want)
	}
	empty := wire.NewReader(hx(t, "00 00 00 00"))
	if o := empty.Options32("options"); empty.Err() != nil || len(o) != 0 {
		t.Errorf("empty OptBlock32: %v %v", o, empty.Err())
	}
	assertBytes(t, "AppendOptions32(empty)", wire.AppendOptions32(nil, nil), hx(t, "00 00 00 00"))
	short := wire.NewReader(hx(t, "05 00 00 00 02 01 00 00"))
	if short.Options32("options"); short.Err() == nil {
		t.Error("OptBlock32 longer than the input accepted")
	}
}

func TestGolden_ClientPlane17_6_ResultSection(t *testing.T) {
	// Success: count 0 followed by the typed payload.
	ok := hx(t, "00 00 00 00  aa bb")
	payload, err := wire.SplitResult(ok)
	if err != nil || !bytes.Equal(payload, []byte{0xaa, 0xbb}) {
		t.Errorf("SplitResult(success) = %x, %v", payload, err)
	}
	assertBytes(t, "AppendResultOK", wire.AppendResultOK(nil), hx(t, "00 00 00 00"))
	// 17.6: "stream name already exists", 1012 = 0x3F4.
	rej := hx(t, "01 00 00 00  00 00 00 00  f4 03 00 00")
	assertBytes(t, "AppendResultError(1012)", wire.AppendResultError(nil, wire.ErrorCode(1012)), rej)
	_, err = wire.SplitResult(rej)
	var re *wire.ResultError
	if !errors.As(err, &re) || re.Code != 1012 {
		t.Errorf("SplitResult(rejection) = %v, want ResultError 1012", err)
	}
	if !errors.Is(err, wire.ErrorCode(1012)) {
		t.Errorf("rejection does not unwrap to code 1012: %v", err)
	}
	for _, bad := range []string{"", "00 00 00", "01 00 00 00 00 00 00 00", "01 00 00 00 00 00 00 00 00 00 00 00"} {
		_, err := wire.SplitResult(hx(t, bad))
		if err == nil || errors.As(err, &re) {
			t.Errorf("SplitResult(%q) = %v, want a decode error", bad, err)
		}
	}
}

func TestGolden_ClientPlane17_1_HashConstants(t *testing.T) {
	// 17.1: the Logout stamp of the Rust SDK, bytes 144..160.
	logout := hx(t, "c2 94 d3 38 05 80 06 2d 00 00 00 00 00 00 00 00")
	assertBytes(t, "RequestChecksum(empty body)", wire.AppendU128(nil, wire.RequestChecksum(nil)), logout)
	if c := wire.RequestChecksum([]byte("hello")); c != wire.Widen(0x9555E8555C62DCFD) {
		t.Errorf("XXH3-64(hello) = %v, want 0x9555E8555C62DCFD", c)
	}
	if c := wire.RequestChecksum(hx(t, login174)); c != wire.Widen(0x8FDE203C2A3F8095) {
		t.Errorf("XXH3-64(17.4 body) = %v, want 0x8FDE203C2A3F8095", c)
	}
	// XXH32 rows of 17.1 (seed 0), through the client-plane uses of 12.6.
	if k := wire.ConsumerNameKey(""); k != 0x02CC5D05 {
		t.Errorf("XXH32(empty) = %#x, want 0x02CC5D05", k)
	}
	if k := wire.ConsumerNameKey("my-consumer"); k != 0x7E13444F {
		t.Errorf("offset key of my-consumer = %#x, want 0x7E13444F", k)
	}
	if k := wire.ConsumerKey(wire.Named("my-consumer")); k != 0x7E13444F {
		t.Errorf("ConsumerKey(my-consumer) = %#x", k)
	}
	for _, tc := range []struct {
		key        string
		partitions uint32
		index      uint32
	}{
		{"order-42", 3, 1}, {"order-42", 4, 1}, {"order-42", 10, 9}, {"user-1", 3, 0}, {"user-1", 8, 5},
	} {
		if i := wire.PartitionIndexForKey([]byte(tc.key), tc.partitions); i != tc.index {
			t.Errorf("PartitionIndexForKey(%q, %d) = %d, want %d", tc.key, tc.partitions, i, tc.index)
		}
	}
	// replica-plane.md Appendix A1 is the same constant.
	if c := wire.RequestChecksum([]byte{}); c.Lo != 0x2d06800538d394c2 || c.Hi != 0 {
		t.Errorf("H64(\"\") widened = %v", c)
	}
}

// login174 is the 34-byte login-register body of client-plane.md 17.4.
const login174 = `
00 2c 00 00                       # protocol 0.11.0
08 72 75 73 74 2d 73 64 6b        # sdk_name "rust-sdk"
06 30 2e 31 31 2e 30              # sdk_version "0.11.0"
04 69 67 67 79                    # username "iggy"
04 69 67 67 79                    # password "iggy"
00 00 00 00                       # context length 0
`

// ---------------------------------------------------------------------------
// 3. Message batches

// sendBatchOffset is where the batch starts in the 17.5 body (4 + 22).
const sendBatchOffset = 26

func TestGolden_ClientPlane17_5_SendMessagesBody(t *testing.T) {
	vec := loadGolden(t, "send_messages_body.hex")
	if len(vec) != 335 {
		t.Fatalf("17.5 body is %d bytes, spec says 335", len(vec))
	}
	var sm wire.SendMessages
	if err := sm.Decode(vec); err != nil {
		t.Fatalf("SendMessages.Decode: %v", err)
	}
	if sm.Stream != wire.ID(0) || sm.Topic != wire.ID(0) || sm.Partitioning.Kind != wire.PartitionByID ||
		sm.Partitioning.ID != 0 || sm.MessagesCount != 1 {
		t.Errorf("metadata %+v", sm)
	}
	assertBytes(t, "decoded batch", sm.Batch, vec[sendBatchOffset:])
	if err := wire.ValidateBatch(sm.Batch, sm.MessagesCount); err != nil {
		t.Errorf("ValidateBatch(17.5): %v", err)
	}
	b := wire.Batch(sm.Batch)
	wantHdr := wire.BatchHeader{OriginTimestamp: ts17, Length: 309, Checksum: 0x8937C33D7C940FC3, MessageCount: 1}
	if h := b.Header(); h != wantHdr {
		t.Errorf("batch header %+v\nwant         %+v", h, wantHdr)
	}
	it := b.Frames()
	f, ok := it.Next()
	if !ok {
		t.Fatal("no frame")
	}
	if f.Checksum() != 0xB9BFBDDB9EA55C8E || f.ID() != (wire.U128{Lo: 1}) || f.OffsetDelta() != 0 ||
		f.TimestampDelta() != 0 || f.UserHeadersLength() != 0 || f.PayloadLength() != 5 ||
		string(f.Payload()) != "hello" || len(f.UserHeaders()) != 0 {
		t.Errorf("frame: checksum %#x id %v deltas %d/%d lengths %d/%d payload %q",
			f.Checksum(), f.ID(), f.OffsetDelta(), f.TimestampDelta(), f.UserHeadersLength(), f.PayloadLength(), f.Payload())
	}
	if _, more := it.Next(); more || len(it.Rest()) != 0 {
		t.Error("frames do not tile the blob as one frame")
	}
	// 12.1 and 12.2, recomputed.
	if c := wire.FrameChecksum(f); c != 0xB9BFBDDB9EA55C8E {
		t.Errorf("FrameChecksum = %#x, want 0xB9BFBDDB9EA55C8E", c)
	}
	if c := wire.ComputeBatchChecksum(sm.Batch); c != 0x8937C33D7C940FC3 {
		t.Errorf("ComputeBatchChecksum = %#x, want 0x8937C33D7C940FC3", c)
	}
	// Encoding: the request and a producer-built batch give the same bytes.
	assertBytes(t, "SendMessages.AppendTo", sm.AppendTo(nil), vec)
	want := wire.SendMessages{Stream: wire.ID(0), Topic: wire.ID(0), Partitioning: wire.PartitionID(0), MessagesCount: 1,
		Batch: vec[sendBatchOffset:]}
	assertBytes(t, "SendMessages{...}.AppendTo", want.AppendTo(nil), vec)
	assertBytes(t, "AppendSendMessagesHeader",
		wire.AppendSendMessagesHeader(nil, wire.ID(0), wire.ID(0), wire.PartitionID(0), 1), vec[:sendBatchOffset])
	built, err := wire.AppendBatch(nil, []wire.Message{{ID: wire.U128{Lo: 1}, OriginTimestamp: ts17, Payload: []byte("hello")}})
	if err != nil {
		t.Fatalf("AppendBatch: %v", err)
	}
	assertBytes(t, "AppendBatch", built, vec[sendBatchOffset:])
}

func TestGolden_ClientPlane17_5_StampingChecksums(t *testing.T) {
	vec := loadGolden(t, "send_messages_body.hex")
	batch := func() wire.Batch { return wire.Batch(append([]byte(nil), vec[sendBatchOffset:]...)) }

	// partition_id = 2: header bytes 0..8 and the checksum at 40..48.
	b := batch()
	b.StampPartition(2)
	assertBytes(t, "stamped partition_id", b[0:8], hx(t, "02 00 00 00 00 00 00 00"))
	assertBytes(t, "checksum after partition 2", b[40:48], hx(t, "9c be 4b db 55 91 83 02")) // 0x02839155DB4BBE9C
	if err := wire.ValidateBatch(b, 1); err != nil {
		t.Errorf("stamped batch no longer validates: %v", err)
	}

	// base_offset = 100, base_timestamp = origin + 5.
	b = batch()
	b.StampAppend(100, ts17+5)
	assertBytes(t, "stamped base_offset/base_timestamp", b[8:24],
		hx(t, "64 00 00 00 00 00 00 00  05 40 1e 18 24 0a 06 00"))
	assertBytes(t, "checksum after append stamp", b[40:48], hx(t, "09 5c fa 5b 82 ac 08 db")) // 0xDB08AC825BFA5C09
	assertBytes(t, "frames untouched by stamping", b[256:], vec[sendBatchOffset+256:])
}

func TestGolden_ClientPlane13_1_BatchAdmissionRejections(t *testing.T) {
	vec := loadGolden(t, "send_messages_body.hex")
	cases := []struct {
		name   string
		mutate func(b []byte) // b is the batch (body offset 26)
		count  uint32
		code   wire.ErrorCode
	}{
		{"payload byte changed", func(b []byte) { b[304] ^= 1 }, 1, wire.ErrInvalidMessageChecksum},
		{"frame checksum changed", func(b []byte) { b[256] ^= 1 }, 1, wire.ErrInvalidMessageChecksum},
		{"batch checksum changed", func(b []byte) { b[40] ^= 1 }, 1, wire.ErrInvalidBatchChecksum},
		{"origin changed (hashed as received)", func(b []byte) { b[24] ^= 1 }, 1, wire.ErrInvalidBatchChecksum},
		{"reserved header byte 52", func(b []byte) { b[52] = 1 }, 1, wire.ErrInvalidCommand},
		{"reserved header byte 255", func(b []byte) { b[255] = 1 }, 1, wire.ErrInvalidCommand},
		{"frame reserved byte 40", func(b []byte) { b[256+40] = 1 }, 1, wire.ErrInvalidCommand},
		{"batch_length 310", func(b []byte) { b[32] = 0x36 }, 1, wire.ErrInvalidCommand},
		{"metadata messages_count 2", func(b []byte) {}, 2, wire.ErrInvalidCommand},
		{"payload_length 6", func(b []byte) { b[256+36] = 6 }, 1, wire.ErrInvalidCommand},
	}
	for _, tc := range cases {
		b := append([]byte(nil), vec[sendBatchOffset:]...)
		tc.mutate(b)
		err := wire.ValidateBatch(b, tc.count)
		if !errors.Is(err, tc.code) {
			t.Errorf("%s: ValidateBatch = %v, want code %v", tc.name, err, tc.code)
		}
	}
}

// ---------------------------------------------------------------------------
// 4. Request bodies

func TestGolden_ClientPlane17_4_LoginRegisterBody(t *testing.T) {
	vec := loadGolden(t, "login_register_body.hex")
	if len(vec) != 34 {
		t.Fatalf("17.4 body is %d bytes, spec says 34", len(vec))
	}
	want := wire.LoginRegister{
		ClientInfo: wire.ClientVersionInfo{Version: wire.Pack(0, 11, 0), SDKName: "rust-sdk", SDKVersion: "0.11.0"},
		Username:   "iggy", Password: "iggy",
	}
	var got wire.LoginRegister
	if err := got.Decode(vec); err != nil {
		t.Fatalf("LoginRegister.Decode: %v", err)
	}
	if got != want {
		t.Errorf("decoded %+v\nwant    %+v", got, want)
	}
	assertBytes(t, "LoginRegister.AppendTo", want.AppendTo(nil), vec)
	// 5.2: the server tells the shapes apart by decoding; this body is only
	// a password body (as a token body its context length would be
	// 0x67676904).
	reg, err := wire.DecodeRegister(vec)
	if err != nil {
		t.Fatalf("DecodeRegister: %v", err)
	}
	if reg.Password == nil || *reg.Password != want || reg.Token != nil {
		t.Errorf("DecodeRegister: password %+v token %+v", reg.Password, reg.Token)
	}
	if c := wire.RequestChecksum(vec); c != wire.Widen(0x8FDE203C2A3F8095) {
		t.Errorf("request_checksum = %v, want 0x8FDE203C2A3F8095", c)
	}
	// Trailing bytes after the context are ignored (5.2).
	if err := got.Decode(append(append([]byte(nil), vec...), 0xAA)); err != nil || got != want {
		t.Errorf("trailing byte: %+v, %v", got, err)
	}
}

func TestGolden_Commands_CreateTopicBody(t *testing.T) {
	vec := loadGolden(t, "create_topic_body.hex")
	want := wire.CreateTopic{Stream: wire.ID(0), PartitionsCount: 3, Name: "orders", Options: optionsTwoValue()}
	var got wire.CreateTopic
	if err := got.Decode(vec); err != nil {
		t.Fatalf("CreateTopic.Decode: %v", err)
	}
	if got.Stream != want.Stream || got.PartitionsCount != 3 || got.Name != "orders" || !got.Options.Equal(want.Options) {
		t.Errorf("decoded %+v\nwant    %+v", got, want)
	}
	assertBytes(t, "CreateTopic.AppendTo (options in client order)", want.AppendTo(nil), vec)
	// 2.9: the options block must consume the rest exactly.
	if err := got.Decode(append(append([]byte(nil), vec...), 0)); err == nil {
		t.Error("a trailing byte after the options block was accepted")
	}
	if err := got.Decode(vec[:len(vec)-1]); err == nil {
		t.Error("a truncated options block was accepted")
	}
}

func TestGolden_Commands_CreateUserBody(t *testing.T) {
	vec := loadGolden(t, "create_user_body.hex")
	var got wire.CreateUser
	if err := got.Decode(vec); err != nil {
		t.Fatalf("CreateUser.Decode: %v", err)
	}
	if got.Username != "user1" || got.Password != "secret" || got.Status != 1 || len(got.Options) != 0 {
		t.Errorf("decoded %+v", got)
	}
	if got.Permissions == nil {
		t.Fatal("permissions absent")
	}
	assertBytes(t, "decoded permissions (canonical)", got.Permissions.AppendCanonical(nil), hx(t, perm94))
	assertBytes(t, "CreateUser.AppendTo (decoded)", got.AppendTo(nil), vec)
	perms, err := wire.DecodePermissions(hx(t, perm94))
	if err != nil {
		t.Fatal(err)
	}
	want := wire.CreateUser{Username: "user1", Password: "secret", Status: 1, Permissions: perms}
	assertBytes(t, "CreateUser.AppendTo", want.AppendTo(nil), vec)

	// has_permissions other than exactly 1 means none follow (18 #27).
	none := hx(t, "05 75 73 65 72 31  06 73 65 63 72 65 74  01  02")
	if err := got.Decode(none); err != nil || got.Permissions != nil {
		t.Errorf("has_permissions 2: %+v, %v", got, err)
	}
	assertBytes(t, "CreateUser without permissions", wire.CreateUser{Username: "user1", Password: "secret", Status: 1}.AppendTo(nil),
		hx(t, "05 75 73 65 72 31  06 73 65 63 72 65 74  01  00"))
	// 11.1: permissions_len must equal the block's size.
	for _, n := range []byte{0x1f, 0x21} {
		bad := append([]byte(nil), vec...)
		bad[0x0f] = n
		if err := got.Decode(bad); err == nil {
			t.Errorf("permissions_len %#x accepted for a 32-byte block", n)
		}
	}
}

func TestGolden_Commands_UpdateUserBody(t *testing.T) {
	vec := loadGolden(t, "update_user_body.hex")
	var got wire.UpdateUser
	if err := got.Decode(vec); err != nil {
		t.Fatalf("UpdateUser.Decode: %v", err)
	}
	if got.User != wire.ID(1) || got.Username == nil || *got.Username != "user2" || got.Status != nil || len(got.Options) != 0 {
		t.Errorf("decoded %+v (status %v)", got, got.Status)
	}
	// Re-encoded, an absent status is flag 0.
	assertBytes(t, "UpdateUser.AppendTo", got.AppendTo(nil),
		hx(t, "01 04 01 00 00 00  01 05 75 73 65 72 32  00"))
	status := uint8(2)
	withStatus := wire.UpdateUser{User: wire.ID(1), Status: &status}
	assertBytes(t, "UpdateUser status only", withStatus.AppendTo(nil), hx(t, "01 04 01 00 00 00  00  01 02"))
	if err := got.Decode(hx(t, "01 04 01 00 00 00  00  01 02")); err != nil || got.Username != nil ||
		got.Status == nil || *got.Status != 2 {
		t.Errorf("status-only body: %+v, %v", got, err)
	}
}

func TestGolden_Commands_PollMessagesBody(t *testing.T) {
	vec := loadGolden(t, "poll_messages_body.hex")
	want := wire.PollMessages{
		Consumer: wire.SingleConsumer(wire.ID(1)), Stream: wire.Named("s1"), Topic: wire.ID(0),
		Partition: wire.Partition(0), Strategy: wire.NextStrategy(), Count: 10, AutoCommit: true,
	}
	var got wire.PollMessages
	if err := got.Decode(vec); err != nil {
		t.Fatalf("PollMessages.Decode: %v", err)
	}
	if got != want {
		t.Errorf("decoded %+v\nwant    %+v", got, want)
	}
	assertBytes(t, "PollMessages.AppendTo", want.AppendTo(nil), vec)
	// bool8: any nonzero auto_commit byte is true (client-plane.md 0).
	odd := append([]byte(nil), vec...)
	odd[35] = 0x02
	if err := got.Decode(odd); err != nil || !got.AutoCommit {
		t.Errorf("auto_commit 0x02: %+v, %v", got, err)
	}
	if err := got.Decode(vec[:35]); err == nil {
		t.Error("body without auto_commit accepted")
	}
}

func TestGolden_Commands_StoreConsumerOffsetBody(t *testing.T) {
	vec := loadGolden(t, "store_consumer_offset_body.hex")
	want := wire.StoreConsumerOffset{
		Consumer: wire.GroupConsumer(wire.ID(0)), Stream: wire.ID(0), Topic: wire.ID(0),
		Partition: wire.Partition(2), Offset: 41, Ack: wire.AckQuorum,
	}
	var got wire.StoreConsumerOffset
	if err := got.Decode(vec); err != nil {
		t.Fatalf("StoreConsumerOffset.Decode: %v", err)
	}
	if got != want {
		t.Errorf("decoded %+v\nwant    %+v", got, want)
	}
	assertBytes(t, "StoreConsumerOffset.AppendTo", want.AppendTo(nil), vec)
	// commands.md: the ack byte is mandatory; 2.7: only 0 and 1.
	if err := got.Decode(vec[:32]); err == nil {
		t.Error("body without ack accepted")
	}
	bad := append([]byte(nil), vec...)
	bad[32] = 2
	if err := got.Decode(bad); err == nil {
		t.Error("ack 2 accepted")
	}
}

func TestGolden_Commands_DeleteSegmentsBody(t *testing.T) {
	vec := loadGolden(t, "delete_segments_body.hex")
	want := wire.DeleteSegments{Stream: wire.ID(0), Topic: wire.Named("t1"), PartitionID: 2, SegmentsCount: 5}
	var got wire.DeleteSegments
	if err := got.Decode(vec); err != nil {
		t.Fatalf("DeleteSegments.Decode: %v", err)
	}
	if got != want {
		t.Errorf("decoded %+v\nwant    %+v", got, want)
	}
	assertBytes(t, "DeleteSegments.AppendTo", want.AppendTo(nil), vec)
	if err := got.Decode(vec[:17]); err == nil {
		t.Error("truncated body accepted")
	}
}

func TestGolden_ClientPlane8_1_3_GetSnapshotBody(t *testing.T) {
	vec := loadGolden(t, "get_snapshot_body.hex")
	var got wire.GetSnapshot
	if err := got.Decode(vec); err != nil {
		t.Fatalf("GetSnapshot.Decode: %v", err)
	}
	if got.Compression != 2 || !bytes.Equal(got.Types, []byte{1, 6}) {
		t.Errorf("decoded %+v", got)
	}
	assertBytes(t, "GetSnapshot.AppendTo", wire.GetSnapshot{Compression: 2, Types: []uint8{1, 6}}.AppendTo(nil), vec)
	assertBytes(t, "GetSnapshot no types", wire.GetSnapshot{Compression: 1}.AppendTo(nil), hx(t, "01 00"))
	if err := got.Decode(hx(t, "02 03 01 06")); err == nil {
		t.Error("types_count past the body accepted")
	}
}

// ---------------------------------------------------------------------------
// 5. Response bodies

func TestGolden_ClientPlane17_6_CreateStreamReply(t *testing.T) {
	vec := loadGolden(t, "create_stream_reply_body.hex")
	payload, err := wire.SplitResult(vec)
	if err != nil {
		t.Fatalf("SplitResult: %v", err)
	}
	want := wire.StreamDetails{StreamResponse: wire.StreamResponse{ID: 0, CreatedAt: ts17, Name: "s1"}}
	var got wire.StreamDetails
	if err := got.Decode(payload); err != nil {
		t.Fatalf("StreamDetails.Decode: %v", err)
	}
	if got.ID != 0 || got.CreatedAt != ts17 || got.TopicsCount != 0 || got.SizeBytes != 0 || got.MessagesCount != 0 ||
		got.Name != "s1" || len(got.Options) != 0 || len(got.Topics) != 0 {
		t.Errorf("decoded %+v", got)
	}
	assertBytes(t, "result OK + StreamDetails.AppendTo", want.AppendTo(wire.AppendResultOK(nil)), vec)
}

func TestGolden_ClientPlane7_3_TopicHeaderBothOptionBlocks(t *testing.T) {
	vec := loadGolden(t, "topic_details.hex")
	const headerLen = 338 // 50 + 6 + 4 + 67 + 4 + 207
	if len(vec) != headerLen+80 {
		t.Fatalf("vector is %d bytes, want %d", len(vec), headerLen+80)
	}
	u64 := func(v uint64) []byte { return wire.AppendU64(nil, v) }
	derived := wire.Options{
		{Key: "enforce_fsync", Kind: wire.KindBool, Value: []byte{0}},
		{Key: "max_topic_size", Kind: wire.KindUint64, Value: u64(^uint64(0))},
		{Key: "messages_required_to_save", Kind: wire.KindUint32, Value: []byte{0, 4, 0, 0}},
		{Key: "preallocate_segments", Kind: wire.KindBool, Value: []byte{0}},
		{Key: "segment_size", Kind: wire.KindUint64, Value: u64(1 << 30)},
		{Key: "size_of_messages_required_to_save", Kind: wire.KindUint64, Value: u64(1 << 20)},
	}
	want := wire.TopicHeader{
		ID: 1, CreatedAt: ts17, PartitionsCount: 2, MessageExpiry: 604_800_000_000, CompressionAlgorithm: 2,
		MaxTopicSize: ^uint64(0), Name: "orders", ExplicitOptions: optionsTwoValue().Sorted(), DerivedOptions: derived,
	}
	var got wire.TopicHeader
	if err := got.Decode(vec[:headerLen]); err != nil {
		t.Fatalf("TopicHeader.Decode: %v", err)
	}
	if got.ID != want.ID || got.CreatedAt != want.CreatedAt || got.PartitionsCount != 2 ||
		got.MessageExpiry != want.MessageExpiry || got.CompressionAlgorithm != 2 || got.MaxTopicSize != want.MaxTopicSize ||
		got.SizeBytes != 0 || got.MessagesCount != 0 || got.Name != "orders" ||
		!got.ExplicitOptions.Equal(want.ExplicitOptions) || !got.DerivedOptions.Equal(derived) {
		t.Errorf("decoded %+v\nwant    %+v", got, want)
	}
	assertBytes(t, "TopicHeader.AppendTo", want.AppendTo(nil), vec[:headerLen])
	// Response blocks are sorted on encode whatever order they are held in (10.3).
	shuffled := want
	shuffled.ExplicitOptions = optionsTwoValue()
	shuffled.DerivedOptions = append(wire.Options(nil), derived[5], derived[0], derived[3], derived[1], derived[4], derived[2])
	assertBytes(t, "TopicHeader.AppendTo (unsorted input)", shuffled.AppendTo(nil), vec[:headerLen])

	// 7.5: TopicDetails = header + partitions_count PartitionResponses.
	var details wire.TopicDetails
	if err := details.Decode(vec); err != nil {
		t.Fatalf("TopicDetails.Decode: %v", err)
	}
	wantParts := []wire.PartitionResponse{{ID: 0, CreatedAt: ts17}, {ID: 1, CreatedAt: ts17}}
	if len(details.Partitions) != 2 || details.Partitions[0] != wantParts[0] || details.Partitions[1] != wantParts[1] {
		t.Errorf("partitions %+v", details.Partitions)
	}
	assertBytes(t, "TopicDetails.AppendTo", wire.TopicDetails{TopicHeader: want, Partitions: wantParts}.AppendTo(nil), vec)
	if err := details.Decode(vec[:len(vec)-1]); err == nil {
		t.Error("TopicDetails with a truncated partition accepted")
	}
}

func TestGolden_ClientPlane7_4_PartitionResponse(t *testing.T) {
	vec := loadGolden(t, "partition_response.hex")
	want := wire.PartitionResponse{ID: 1, CreatedAt: ts17, SegmentsCount: 3, CurrentOffset: 99, SizeBytes: 123_456, MessagesCount: 100}
	var got wire.PartitionResponse
	if err := got.Decode(vec); err != nil {
		t.Fatalf("PartitionResponse.Decode: %v", err)
	}
	if got != want {
		t.Errorf("decoded %+v\nwant    %+v", got, want)
	}
	assertBytes(t, "PartitionResponse.AppendTo", want.AppendTo(nil), vec)
	if len(vec) != 40 {
		t.Errorf("vector is %d bytes", len(vec))
	}
}

func TestGolden_ClientPlane7_11_UserDetails(t *testing.T) {
	t.Run("no permission set", func(t *testing.T) {
		vec := loadGolden(t, "user_details_no_permissions.hex")
		var got wire.UserDetails
		if err := got.Decode(vec); err != nil {
			t.Fatalf("UserDetails.Decode: %v", err)
		}
		if got.ID != 1 || got.CreatedAt != ts17 || got.Status != wire.UserActive || got.Username != "user1" ||
			len(got.Options) != 0 || got.Permissions != nil {
			t.Errorf("decoded %+v", got)
		}
		want := wire.UserDetails{UserResponse: wire.UserResponse{ID: 1, CreatedAt: ts17, Status: wire.UserActive, Username: "user1"}}
		assertBytes(t, "UserDetails.AppendTo", want.AppendTo(nil), vec)
	})
	t.Run("9.4 permission set", func(t *testing.T) {
		vec := loadGolden(t, "user_details_permissions.hex")
		var got wire.UserDetails
		if err := got.Decode(vec); err != nil {
			t.Fatalf("UserDetails.Decode: %v", err)
		}
		if got.ID != 1 || got.Status != wire.UserInactive || got.Username != "user1" || got.Permissions == nil {
			t.Fatalf("decoded %+v", got)
		}
		assertBytes(t, "decoded permissions", got.Permissions.AppendCanonical(nil), hx(t, perm94))
		perms, err := wire.DecodePermissions(hx(t, perm94))
		if err != nil {
			t.Fatal(err)
		}
		want := wire.UserDetails{
			UserResponse: wire.UserResponse{ID: 1, CreatedAt: ts17, Status: wire.UserInactive, Username: "user1"},
			Permissions:  perms,
		}
		assertBytes(t, "UserDetails.AppendTo", want.AppendTo(nil), vec)
		assertBytes(t, "UserDetails.AppendEcho", want.AppendEcho(nil), vec)
	})
	t.Run("all-false set still behind 01", func(t *testing.T) {
		want := wire.UserDetails{
			UserResponse: wire.UserResponse{ID: 1, CreatedAt: ts17, Status: wire.UserActive, Username: "user1"},
			Permissions:  &wire.Permissions{},
		}
		vec := hx(t, `
01 00 00 00  00 40 1e 18 24 0a 06 00  01  05 75 73 65 72 31  00 00 00 00
01  0b 00 00 00  00 00 00 00 00 00 00 00 00 00  00
`)
		assertBytes(t, "UserDetails.AppendTo(empty set)", want.AppendTo(nil), vec)
		var got wire.UserDetails
		if err := got.Decode(vec); err != nil || got.Permissions == nil {
			t.Errorf("decoded %+v, %v; want an empty set, not none", got, err)
		}
	})
	// 7.11: status must be 1 or 2 (the Go SDK rejects others).
	bad := loadGolden(t, "user_details_no_permissions.hex")
	bad[12] = 3
	var got wire.UserDetails
	if err := got.Decode(bad); err == nil {
		t.Error("status 3 accepted")
	}
}

func TestGolden_ClientPlane7_12_LoginRegisterResponse(t *testing.T) {
	vec := loadGolden(t, "login_register_response.hex")
	payload, err := wire.SplitResult(vec)
	if err != nil {
		t.Fatalf("SplitResult: %v", err)
	}
	want := wire.LoginRegisterResponse{UserID: 0, Session: 42, ServerProtocolVersion: 11264, ServerVersion: "0.9.0-edge.5"}
	var got wire.LoginRegisterResponse
	if err := got.Decode(payload); err != nil {
		t.Fatalf("LoginRegisterResponse.Decode: %v", err)
	}
	if got != want {
		t.Errorf("decoded %+v\nwant    %+v", got, want)
	}
	assertBytes(t, "result OK + LoginRegisterResponse.AppendTo", want.AppendTo(wire.AppendResultOK(nil)), vec)
	if len(payload) != 17+12 {
		t.Errorf("payload is %d bytes, want 17 + 12", len(payload))
	}
}

func TestGolden_ClientPlane7_15_ClusterMetadata(t *testing.T) {
	vec := loadGolden(t, "cluster_metadata.hex")
	want := wire.ClusterMetadata{Name: "single-node", Nodes: []wire.ClusterNode{{
		Name: "iggy-node", IP: "127.0.0.1", TCPPort: 8090, QUICPort: 8080, HTTPPort: 3000, WebSocketPort: 8092,
		Role: wire.RoleLeader, Status: wire.NodeHealthy,
	}}}
	var got wire.ClusterMetadata
	if err := got.Decode(vec); err != nil {
		t.Fatalf("ClusterMetadata.Decode: %v", err)
	}
	if got.Name != want.Name || len(got.Nodes) != 1 || got.Nodes[0] != want.Nodes[0] {
		t.Errorf("decoded %+v\nwant    %+v", got, want)
	}
	assertBytes(t, "ClusterMetadata.AppendTo", want.AppendTo(nil), vec)
	// Go SDK limits (7.15): role 0/1, status 0..=4, at most 64 nodes.
	for name, mutate := range map[string]func(b []byte) []byte{
		"role 2":         func(b []byte) []byte { b[0x35] = 2; return b },
		"status 5":       func(b []byte) []byte { b[0x36] = 5; return b },
		"nodes_count 65": func(b []byte) []byte { b[0x0f] = 65; return b },
		"truncated node": func(b []byte) []byte { return b[:len(b)-1] },
	} {
		if err := got.Decode(mutate(append([]byte(nil), vec...))); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestGolden_ClientPlane7_8_ConsumerGroupDetails(t *testing.T) {
	vec := loadGolden(t, "consumer_group_details.hex")
	want := wire.ConsumerGroupDetails{
		ConsumerGroupResponse: wire.ConsumerGroupResponse{ID: 0, PartitionsCount: 3, MembersCount: 2, Name: "g1"},
		Members:               []wire.ConsumerGroupMember{{ID: 0, Partitions: []uint32{0, 2}}, {ID: 1, Partitions: []uint32{1}}},
	}
	var got wire.ConsumerGroupDetails
	if err := got.Decode(vec); err != nil {
		t.Fatalf("ConsumerGroupDetails.Decode: %v", err)
	}
	if got.ConsumerGroupResponse != want.ConsumerGroupResponse || len(got.Members) != 2 ||
		got.Members[0].ID != 0 || !slicesEqual(got.Members[0].Partitions, []uint32{0, 2}) ||
		got.Members[1].ID != 1 || !slicesEqual(got.Members[1].Partitions, []uint32{1}) {
		t.Errorf("decoded %+v\nwant    %+v", got, want)
	}
	assertBytes(t, "ConsumerGroupDetails.AppendTo", want.AppendTo(nil), vec)
	if err := got.Decode(vec[:len(vec)-4]); err == nil {
		t.Error("missing member partition accepted")
	}
}

func slicesEqual(a, b []uint32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestGolden_ClientPlane7_14_Stats(t *testing.T) {
	vec := loadGolden(t, "stats.hex")
	// 7.14 and 18 C: strings start at offset 108.
	if got := hex.EncodeToString(vec[108:113]); got != "0100000068" {
		t.Fatalf("vector: hostname not at 108 (%s)", got)
	}
	want := wire.Stats{
		ProcessID: 1234, CPUUsage: 12.5, TotalCPUUsage: 50, MemoryUsage: 16 << 20, TotalMemory: 16 << 30,
		AvailableMemory: 8 << 30, RunTime: 3_600_000_000, StartTime: ts17, ReadBytes: 0x11, WrittenBytes: 0x22,
		MessagesSizeBytes: 0x33, StreamsCount: 1, TopicsCount: 2, PartitionsCount: 3, SegmentsCount: 4,
		MessagesCount: 5, ClientsCount: 6, ConsumerGroupsCount: 7,
		Hostname: "h", OSName: "Linux", OSVersion: "6", KernelVersion: "6.1", IggyServerVersion: "0.9.0-iggynode",
		IggyServerSemver: 9000,
		CacheMetrics:     []wire.CacheMetric{{StreamID: 1, TopicID: 2, PartitionID: 3, Hits: 3, Misses: 1, HitRatio: 0.75}},
		ThreadsCount:     8, FreeDiskSpace: 64 << 30, TotalDiskSpace: 256 << 30,
	}
	var got wire.Stats
	if err := got.Decode(vec); err != nil {
		t.Fatalf("Stats.Decode: %v", err)
	}
	if len(got.CacheMetrics) != 1 || got.CacheMetrics[0] != want.CacheMetrics[0] {
		t.Errorf("cache metrics %+v", got.CacheMetrics)
	}
	gotCmp, wantCmp := got, want
	gotCmp.CacheMetrics, wantCmp.CacheMetrics = nil, nil
	if fmt.Sprintf("%+v", gotCmp) != fmt.Sprintf("%+v", wantCmp) {
		t.Errorf("decoded %+v\nwant    %+v", got, want)
	}
	assertBytes(t, "Stats.AppendTo", want.AppendTo(nil), vec)
	prefix := want
	prefix.Hostname = ""
	if enc := prefix.AppendTo(nil); !bytes.Equal(enc[108:112], []byte{0, 0, 0, 0}) || !bytes.Equal(enc[:108], vec[:108]) {
		t.Errorf("numeric prefix is not the 108 bytes of 7.14")
	}
}

// topicCatalog104 is client-plane.md 10.4, row by row: key, canonical kind,
// default bytes.
var topicCatalog104 = []struct {
	key  string
	kind wire.HeaderKind
	def  string
}{
	{"compression_algorithm", 2, "6e 6f 6e 65"},
	{"message_expiry", 12, "ff ff ff ff ff ff ff ff"},
	{"max_topic_size", 12, "ff ff ff ff ff ff ff ff"},
	{"segment_size", 12, "00 00 00 40 00 00 00 00"},
	{"enforce_fsync", 3, "00"},
	{"messages_required_to_save", 11, "00 04 00 00"},
	{"size_of_messages_required_to_save", 12, "00 00 10 00 00 00 00 00"},
	{"preallocate_segments", 3, "00"},
}

func TestGolden_ClientPlane10_4_OptionCatalogEntry1(t *testing.T) {
	vec := loadGolden(t, "option_catalog_entry1.hex")
	want := wire.OptionCatalog{{Key: "compression_algorithm", Kind: wire.KindString, Default: []byte("none"), Description: "none or gzip"}}
	var got wire.OptionCatalog
	if err := got.Decode(vec); err != nil {
		t.Fatalf("OptionCatalog.Decode: %v", err)
	}
	if len(got) != 1 || got[0].Key != want[0].Key || got[0].Kind != want[0].Kind ||
		!bytes.Equal(got[0].Default, want[0].Default) || got[0].Description != want[0].Description {
		t.Errorf("decoded %+v\nwant    %+v", got, want)
	}
	assertBytes(t, "OptionCatalog.AppendTo", want.AppendTo(nil), vec)

	// The node's catalog: the 8 rows of 10.4 in order, non-empty descriptions
	// (7.16); entry 1 encodes to the vector up to its description.
	cat := wire.TopicOptionCatalog()
	if len(cat) != len(topicCatalog104) {
		t.Fatalf("catalog has %d entries, 10.4 has 8", len(cat))
	}
	for i, row := range topicCatalog104 {
		d := cat[i]
		if d.Key != row.key || d.Kind != row.kind || !bytes.Equal(d.Default, hx(t, row.def)) || d.Description == "" {
			t.Errorf("entry %d: %q kind %d default %x (description %d bytes); 10.4 says %q kind %d default %s",
				i+1, d.Key, d.Kind, d.Default, len(d.Description), row.key, row.kind, row.def)
		}
	}
	entry := cat[0].AppendTo(nil)
	assertBytes(t, "TopicOptionCatalog()[0] up to description_len", entry[:0x23-4], vec[4:0x23])
}

func TestGolden_LoaderChecksOffsets(t *testing.T) {
	if _, err := parseGoldenHex("0000: 01 02\n0003: 03\n"); err == nil {
		t.Error("a wrong offset prefix was not reported")
	}
	b, err := parseGoldenHex("# c\n0000: 01 02 # x\n0002: 0304\n")
	if err != nil || !bytes.Equal(b, []byte{1, 2, 3, 4}) {
		t.Errorf("parse: %x, %v", b, err)
	}
}

// ---------------------------------------------------------------------------
// replica-plane.md Appendix A: the generic header's seals.

func TestGolden_ReplicaPlaneA6_CommitFrameSeal(t *testing.T) {
	vec := loadGolden(t, "replica_commit_a6.hex")
	want := wire.CommitHeader{Cluster: clusterA2, View: 1, Replica: 1, TimestampMonotonic: 7, Commit: 42, Group: 1 << 63}
	h := header(t, vec)
	got, err := wire.DecodeCommitHeader(h)
	if err != nil {
		t.Fatalf("DecodeCommitHeader: %v", err)
	}
	if got != want {
		t.Errorf("decoded %+v\nwant    %+v", got, want)
	}
	assertBytes(t, "FrameSeal", wire.AppendU128(nil, wire.FrameSeal(h)), vec[0:16])
	var enc wire.Header
	want.Encode(&enc)
	assertBytes(t, "CommitHeader.Encode (sealed)", enc[:], vec)
	// A6 note: the view is covered by the frame seal.
	h.SetView(2)
	if h.SealValid() {
		t.Error("seal still valid after the view changed")
	}
}

func TestGolden_ReplicaPlaneA7_PrepareIdentity(t *testing.T) {
	vec := loadGolden(t, "replica_prepare_a7.hex")
	want := wire.PrepareHeader{
		Checksum: wire.Widen(0x026205ea9f8b4eb8), ChecksumBody: wire.Widen(0x2d06800538d394c2), Cluster: clusterA2,
		Size: 256, View: 3, Command: wire.CmdPrepare, Client: wire.U128{Lo: 0x1234}, Op: 1, Timestamp: ts17,
		Operation: wire.OpRegister, Group: 1 << 63, UserID: 1,
	}
	h := header(t, vec)
	got, err := wire.DecodePrepareHeader(h)
	if err != nil {
		t.Fatalf("DecodePrepareHeader: %v", err)
	}
	if got != want {
		t.Errorf("decoded %+v\nwant    %+v", got, want)
	}
	if id := wire.PrepareIdentity(h); id != wire.Widen(0x026205ea9f8b4eb8) {
		t.Errorf("PrepareIdentity = %v, want 0x026205ea9f8b4eb8", id)
	}
	var enc wire.Header
	want.Encode(&enc)
	assertBytes(t, "PrepareHeader.Encode", enc[:], vec)
	if err := wire.VerifyPrepare(vec); err != nil {
		t.Errorf("VerifyPrepare(A7, empty body): %v", err)
	}
	// A7 note: the identity excludes the view.
	h.SetView(9)
	if id := wire.PrepareIdentity(h); id != wire.Widen(0x026205ea9f8b4eb8) {
		t.Errorf("identity changed with the view: %v", id)
	}
}
