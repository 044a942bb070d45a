package wire

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/zeebo/xxh3"
)

// unhex decodes hex written by hand, ignoring spaces and newlines.
func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatalf("bad hex: %v", err)
	}
	return b
}

// specBatch175 is the batch of the client-plane.md 17.5 SendMessages body
// (body bytes 0x1a..0x14f), copied by hand from the spec.
func specBatch175(t testing.TB) []byte {
	t.Helper()
	return unhex(t, `
		00 00 00 00 00 00 00 00
		00 00 00 00 00 00 00 00
		00 00 00 00 00 00 00 00
		00 40 1e 18 24 0a 06 00
		35 01 00 00 00 00 00 00
		c3 0f 94 7c 3d c3 37 89
		01 00 00 00`+strings.Repeat(" 00", 204)+`
		8e 5c a5 9e db bd bf b9
		01 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
		00 00 00 00
		00 00 00 00
		00 00 00 00
		05 00 00 00
		00 00 00 00 00 00 00 00
		68 65 6c 6c 6f`)
}

// refBatchChecksum is an independent reading of client-plane.md 12.2: it
// concatenates P on the heap and hashes it one-shot.
func refBatchChecksum(b []byte) uint64 {
	p := append([]byte(nil), b[0:40]...)
	p = append(p, b[48:52]...)
	count := binary.LittleEndian.Uint32(b[48:])
	rest := b[256:]
	for i := uint32(0); i < count && len(rest) >= 48; i++ {
		p = append(p, rest[:8]...)
		n := 48 + int(binary.LittleEndian.Uint32(rest[36:])) + int(binary.LittleEndian.Uint32(rest[32:]))
		rest = rest[n:]
	}
	return xxh3.Hash(p)
}

// testFrame lays out one frame by hand (docs/messages.md offsets) with its
// 12.1 checksum.
func testFrame(id uint64, offsetDelta, tsDelta uint32, payload, headers []byte) []byte {
	f := make([]byte, 48, 48+len(payload)+len(headers))
	binary.LittleEndian.PutUint64(f[8:], id)
	binary.LittleEndian.PutUint32(f[24:], offsetDelta)
	binary.LittleEndian.PutUint32(f[28:], tsDelta)
	binary.LittleEndian.PutUint32(f[32:], uint32(len(headers)))
	binary.LittleEndian.PutUint32(f[36:], uint32(len(payload)))
	f = append(append(f, payload...), headers...)
	binary.LittleEndian.PutUint64(f, xxh3.Hash(f[8:]))
	return f
}

// testBatch lays out a producer batch by hand around frames, sealed with
// refBatchChecksum.
func testBatch(origin uint64, frames ...[]byte) []byte {
	b := make([]byte, 256)
	for _, f := range frames {
		b = append(b, f...)
	}
	binary.LittleEndian.PutUint64(b[24:], origin)
	binary.LittleEndian.PutUint64(b[32:], uint64(len(b)))
	binary.LittleEndian.PutUint32(b[48:], uint32(len(frames)))
	reseal(b)
	return b
}

func reseal(b []byte) { binary.LittleEndian.PutUint64(b[40:], refBatchChecksum(b)) }

func threeFrameBatch() []byte {
	return testBatch(1000,
		testFrame(1, 0, 0, []byte("alpha"), nil),
		testFrame(2, 1, 7, []byte("bravo!"), []byte{2, 1, 0, 0, 0, 'k', 1, 1, 0, 0, 0, 'v'}),
		testFrame(3, 2, 9, []byte("c"), nil))
}

// client-plane.md 17.5: the spec batch validates, its checksums are the
// spec's, and stamping reproduces the derived checksums of the table.
func TestBatchSpecVector(t *testing.T) {
	b := specBatch175(t)
	if len(b) != 309 {
		t.Fatalf("spec batch is %d bytes, want 309", len(b))
	}
	if err := ValidateBatch(b, 1); err != nil {
		t.Fatalf("ValidateBatch: %v", err)
	}
	want := BatchHeader{OriginTimestamp: 1_700_000_000_000_000, Length: 309, Checksum: 0x8937C33D7C940FC3, MessageCount: 1}
	if got := Batch(b).Header(); got != want {
		t.Fatalf("header %+v, want %+v", got, want)
	}
	if got := ComputeBatchChecksum(b); got != 0x8937C33D7C940FC3 {
		t.Fatalf("batch checksum %#x", got)
	}
	it := Batch(b).Frames()
	f, ok := it.Next()
	if !ok {
		t.Fatal("no frame")
	}
	if got := FrameChecksum(f); got != 0xB9BFBDDB9EA55C8E || f.Checksum() != got {
		t.Fatalf("frame checksum computed %#x stored %#x", got, f.Checksum())
	}
	if f.ID() != (U128{Lo: 1}) || f.OffsetDelta() != 0 || f.TimestampDelta() != 0 ||
		f.PayloadLength() != 5 || f.UserHeadersLength() != 0 ||
		string(f.Payload()) != "hello" || len(f.UserHeaders()) != 0 {
		t.Fatalf("frame fields: id %v payload %q", f.ID(), f.Payload())
	}
	if _, more := it.Next(); more || len(it.Rest()) != 0 {
		t.Fatal("more than one frame")
	}

	stamped := append([]byte(nil), b...)
	Batch(stamped).StampPartition(2)
	if got := Batch(stamped).Checksum(); got != 0x02839155DB4BBE9C {
		t.Fatalf("partition 2 checksum %#x, want 0x02839155DB4BBE9C", got)
	}
	if Batch(stamped).PartitionID() != 2 || !bytes.Equal(stamped[256:], b[256:]) {
		t.Fatal("StampPartition touched more than the header fields")
	}
	appended := append([]byte(nil), b...)
	Batch(appended).StampAppend(100, 1_700_000_000_000_005)
	if got := Batch(appended).Checksum(); got != 0xDB08AC825BFA5C09 {
		t.Fatalf("append-stamped checksum %#x, want 0xDB08AC825BFA5C09", got)
	}
	if Batch(appended).BaseOffset() != 100 || Batch(appended).BaseTimestamp() != 1_700_000_000_000_005 {
		t.Fatal("StampAppend fields")
	}
}

// The builder writes the 17.5 batch byte for byte.
func TestAppendBatchSpecVector(t *testing.T) {
	want := specBatch175(t)
	prefix := []byte{0xAA, 0xBB}
	got, err := AppendBatch(prefix, []Message{{ID: U128{Lo: 1}, OriginTimestamp: 1_700_000_000_000_000, Payload: []byte("hello")}})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got[:2], prefix) || !bytes.Equal(got[2:], want) {
		t.Fatalf("AppendBatch:\n got %x\nwant %x", got[2:], want)
	}
}

// client-plane.md 17.1.
func TestHashConstants(t *testing.T) {
	if got := xxh3.Hash(nil); got != 0x2D06800538D394C2 {
		t.Errorf("XXH3(empty) %#x", got)
	}
	if got := xxh3.Hash([]byte("hello")); got != 0x9555E8555C62DCFD {
		t.Errorf("XXH3(hello) %#x", got)
	}
	if got := ConsumerNameKey(""); got != 0x02CC5D05 {
		t.Errorf("XXH32(empty) %#x", got)
	}
	if got := ConsumerNameKey("my-consumer"); got != 0x7E13444F {
		t.Errorf("my-consumer key %#x", got)
	}
	if got := ConsumerKey(Named("my-consumer")); got != 0x7E13444F {
		t.Errorf("ConsumerKey(named) %#x", got)
	}
	if got := ConsumerKey(ID(7)); got != 7 {
		t.Errorf("ConsumerKey(7) %d", got)
	}
	for _, tc := range []struct {
		key        string
		partitions uint32
		want       uint32
	}{
		{"order-42", 3, 1}, {"order-42", 4, 1}, {"order-42", 10, 9},
		{"user-1", 3, 0}, {"user-1", 8, 5},
		{"user-1", 1, 0}, {"user-1", 0, 0},
	} {
		if got := PartitionIndexForKey([]byte(tc.key), tc.partitions); got != tc.want {
			t.Errorf("PartitionIndexForKey(%q, %d) = %d, want %d", tc.key, tc.partitions, got, tc.want)
		}
	}
}

// client-plane.md 12 and 12.2: the stack buffer and the streaming path give
// the one-shot hash of P, on both sides of the 1024-byte chunk.
func TestBatchChecksumMatchesReference(t *testing.T) {
	var frames [][]byte
	for n := 0; n <= 300; n++ {
		b := testBatch(uint64(n)*3, frames...)
		binary.LittleEndian.PutUint64(b[0:], uint64(n))
		binary.LittleEndian.PutUint64(b[8:], uint64(n)<<20)
		if got, want := ComputeBatchChecksum(b), refBatchChecksum(b); got != want {
			t.Fatalf("%d frames: checksum %#x, reference %#x", n, got, want)
		}
		reseal(b)
		if n > 0 {
			if err := ValidateBatch(b, uint32(n)); err != nil {
				t.Fatalf("%d frames: %v", n, err)
			}
		}
		frames = append(frames, testFrame(uint64(n), uint32(n), 0, []byte{byte(n), 1, 2}, nil))
	}
}

// client-plane.md 13.1 steps 3-6, one row per rule, with the code a
// compatible server answers (8.4.2).
func TestValidateBatchRejects(t *testing.T) {
	const invalid, frameSum, batchSum = ErrInvalidCommand, ErrInvalidMessageChecksum, ErrInvalidBatchChecksum
	frame1At := 256 + 48 + 5 // second frame of threeFrameBatch
	tests := []struct {
		name   string
		mutate func(b []byte) []byte
		count  uint32
		want   ErrorCode // 0: valid
	}{
		{"valid", func(b []byte) []byte { return b }, 3, 0},
		{"producer stamps are hashed, not checked (12.2)", func(b []byte) []byte {
			binary.LittleEndian.PutUint64(b[0:], 9)
			binary.LittleEndian.PutUint64(b[8:], 10)
			binary.LittleEndian.PutUint64(b[16:], 11)
			reseal(b)
			return b
		}, 3, 0},
		{"step 3: shorter than the header", func(b []byte) []byte { return b[:255] }, 3, invalid},
		{"step 3: batch_length below 256", func(b []byte) []byte {
			binary.LittleEndian.PutUint64(b[32:], 255)
			return b
		}, 3, invalid},
		{"step 3: batch_length short of the body", func(b []byte) []byte { return append(b, 0) }, 3, invalid},
		{"step 3: batch_length past the body", func(b []byte) []byte { return b[:len(b)-1] }, 3, invalid},
		{"step 3: reserved byte 52", func(b []byte) []byte { b[52] = 1; return b }, 3, invalid},
		{"step 3: reserved byte 255", func(b []byte) []byte { b[255] = 0x80; return b }, 3, invalid},
		{"step 4: frame header truncated", func(b []byte) []byte {
			b = append(b, make([]byte, 47)...)
			binary.LittleEndian.PutUint64(b[32:], uint64(len(b)))
			binary.LittleEndian.PutUint32(b[48:], 4)
			return b
		}, 4, invalid},
		{"step 4: frame runs past the blob", func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[len(b)-1-48+36:], 2)
			return b
		}, 3, invalid},
		{"step 4: hostile frame lengths", func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[frame1At+32:], 0xFFFFFFFF)
			binary.LittleEndian.PutUint32(b[frame1At+36:], 0xFFFFFFFF)
			return b
		}, 3, invalid},
		{"step 4: frame reserved byte", func(b []byte) []byte { b[frame1At+47] = 1; return b }, 3, invalid},
		{"step 4: fewer frames than message_count", func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[48:], 4)
			reseal(b)
			return b
		}, 4, invalid},
		{"step 4: more frames than message_count", func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[48:], 2)
			reseal(b)
			return b
		}, 2, invalid},
		{"step 5: frame checksum", func(b []byte) []byte { b[frame1At+48] ^= 1; return b }, 3, frameSum},
		{"step 5: frame checksum before batch checksum", func(b []byte) []byte {
			b[frame1At+48] ^= 1
			b[40] ^= 1
			return b
		}, 3, frameSum},
		{"step 4 before step 5: tiling error after a bad frame checksum", func(b []byte) []byte {
			b[256+48] ^= 1
			b[frame1At+47] = 1
			return b
		}, 3, invalid},
		{"step 5: batch checksum field", func(b []byte) []byte { b[47] ^= 0x10; return b }, 3, batchSum},
		{"step 5: header field changed after sealing", func(b []byte) []byte { b[24] ^= 1; return b }, 3, batchSum},
		{"step 5: stored frame checksum consistent but batch not resealed", func(b []byte) []byte {
			b[frame1At+48] ^= 1
			binary.LittleEndian.PutUint64(b[frame1At:], xxh3.Hash(b[frame1At+8:frame1At+48+6+12]))
			return b
		}, 3, batchSum},
		{"step 6: message_count 0", func(b []byte) []byte {
			b = b[:256]
			binary.LittleEndian.PutUint64(b[32:], 256)
			binary.LittleEndian.PutUint32(b[48:], 0)
			reseal(b)
			return b
		}, 0, invalid},
		{"step 6: messages_count differs", func(b []byte) []byte { return b }, 2, invalid},
		{"step 6 after step 5", func(b []byte) []byte { b[47] ^= 0x10; return b }, 2, batchSum},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.mutate(threeFrameBatch())
			err := ValidateBatch(b, tc.count)
			if tc.want == 0 {
				if err != nil {
					t.Fatalf("unexpected %v", err)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want code %d", err, tc.want)
			}
			if code, _ := CodeOf(err); code != tc.want {
				t.Fatalf("CodeOf %d, want %d", code, tc.want)
			}
		})
	}
}

// Stamping a multi-frame batch keeps it valid and matches the reference.
func TestStampMultiFrame(t *testing.T) {
	b := threeFrameBatch()
	Batch(b).StampPartition(7)
	Batch(b).StampAppend(1<<40, 123456)
	if err := ValidateBatch(b, 3); err != nil {
		t.Fatal(err)
	}
	if got, want := Batch(b).Checksum(), refBatchChecksum(b); got != want {
		t.Fatalf("checksum %#x, reference %#x", got, want)
	}
}

// client-plane.md 13.4 and 12.2 (last row): whole records as stored, sliced
// records with a rewritten header over a contiguous run of frames.
func TestAppendRecord(t *testing.T) {
	var frames [][]byte
	for i := 0; i < 5; i++ {
		frames = append(frames, testFrame(uint64(i+1), uint32(i), uint32(i*10), bytes.Repeat([]byte{byte('a' + i)}, i+1), nil))
	}
	stored := testBatch(5000, frames...)
	Batch(stored).StampPartition(3)
	Batch(stored).StampAppend(100, 777)

	tests := []struct {
		name      string
		start     uint64
		max       uint32
		wantFirst int // index of the first frame served
		wantN     uint32
	}{
		{"first frames", 100, 2, 0, 2},
		{"middle", 102, 2, 2, 2},
		{"last", 104, 1, 4, 1},
		{"count beyond end", 103, 10, 3, 2},
		{"tail from frame 1", 101, 4, 1, 4},
		{"start before base", 50, 3, 0, 3},
		{"whole", 100, 5, 0, 5},
		{"whole, count beyond end", 0, 100, 0, 5},
		{"past the end", 105, 10, 0, 0},
		{"max 0", 100, 0, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dst := []byte{1, 2, 3}
			out, n := AppendRecord(dst, stored, tc.start, tc.max)
			if n != tc.wantN {
				t.Fatalf("served %d, want %d", n, tc.wantN)
			}
			// The header alone plus the frames it points at is the same
			// record, and the frames are the stored batch's own bytes.
			hdr, run, hn := AppendRecordHeader([]byte{1, 2, 3}, stored, tc.start, tc.max)
			if joined := append(append([]byte(nil), hdr...), run...); hn != n || !bytes.Equal(joined, out) {
				t.Fatalf("AppendRecordHeader: %d messages, %d+%d bytes; AppendRecord %d, %d bytes", hn, len(hdr), len(run), n, len(out))
			}
			if len(run) > 0 && !Aliases(stored, run) {
				t.Fatal("the frames are a copy, not the stored batch's bytes")
			}
			if !bytes.Equal(out[:3], []byte{1, 2, 3}) {
				t.Fatal("dst prefix clobbered")
			}
			rec := out[3:]
			if n == 0 {
				if len(rec) != 0 {
					t.Fatalf("appended %d bytes for no messages", len(rec))
				}
				return
			}
			if n == 5 {
				if !bytes.Equal(rec, stored) {
					t.Fatal("whole record differs from the stored batch")
				}
				return
			}
			if err := ValidateBatch(rec, n); err != nil {
				t.Fatalf("sliced record does not validate: %v", err)
			}
			h := Batch(rec).Header()
			if h.Checksum != refBatchChecksum(rec) {
				t.Fatalf("checksum %#x, fresh %#x", h.Checksum, refBatchChecksum(rec))
			}
			want := Batch(stored).Header()
			want.Length, want.MessageCount, want.Checksum = uint64(len(rec)), n, h.Checksum
			if h != want {
				t.Fatalf("header %+v, want %+v", h, want)
			}
			if !bytes.Equal(rec[52:256], make([]byte, 204)) {
				t.Fatal("reserved bytes not zero")
			}
			var blob []byte
			for _, f := range frames[tc.wantFirst : tc.wantFirst+int(n)] {
				blob = append(blob, f...)
			}
			if !bytes.Equal(rec[256:], blob) {
				t.Fatal("frames are not the selected run")
			}
		})
	}
}

// Build -> validate -> stamp -> serve -> decode, with user headers.
func TestBatchRoundTrip(t *testing.T) {
	hs := UserHeaders{
		{Key: "trace", Kind: KindString, Value: []byte("abc")},
		{Key: "n", Kind: KindUint32, Value: []byte{1, 0, 0, 0}},
	}
	msgs := []Message{
		{ID: U128{Lo: 1, Hi: 2}, OriginTimestamp: 5_000_100, Payload: []byte("first"), Headers: hs},
		{ID: U128{Lo: 3}, OriginTimestamp: 5_000_000, Payload: []byte("second")},
		{ID: U128{}, OriginTimestamp: 5_000_000 + 0xFFFFFFFF, Payload: bytes.Repeat([]byte{7}, 1000), Headers: hs[:1]},
	}
	b, err := AppendBatch(nil, msgs)
	if err != nil {
		t.Fatal(err)
	}
	if err := ValidateBatch(b, 3); err != nil {
		t.Fatalf("built batch does not validate: %v", err)
	}
	if Batch(b).OriginTimestamp() != 5_000_000 || Batch(b).PartitionID() != 0 || Batch(b).BaseOffset() != 0 {
		t.Fatalf("header %+v", Batch(b).Header())
	}
	var sums []uint64
	for it := Batch(b).Frames(); ; {
		f, ok := it.Next()
		if !ok {
			break
		}
		if f.Checksum() != FrameChecksum(f) {
			t.Fatalf("frame %d checksum", len(sums))
		}
		sums = append(sums, f.Checksum())
	}
	Batch(b).StampPartition(4)
	Batch(b).StampAppend(40, 9_999)

	body := AppendPolledHeader(nil, 4, 42, 0)
	body, n := AppendRecord(body, b, 41, 10)
	SetPolledMessagesCount(body, n)
	var p PolledMessages
	if err := p.Decode(body); err != nil {
		t.Fatal(err)
	}
	if p.PartitionID != 4 || p.CurrentOffset != 42 || p.MessagesCount != 2 || p.Resync() {
		t.Fatalf("prefix %+v", p)
	}
	it := p.Messages()
	for i := 1; i < 3; i++ {
		m, ok := it.Next()
		if !ok {
			t.Fatalf("message %d missing", i)
		}
		want := msgs[i]
		if m.Offset != 40+uint64(i) || m.Timestamp != 9_999 || m.OriginTimestamp != want.OriginTimestamp ||
			m.ID != want.ID || !bytes.Equal(m.Payload, want.Payload) {
			t.Fatalf("message %d: %+v", i, m)
		}
		got, err := DecodeUserHeaders(m.UserHeaders)
		if err != nil || !Options(got).Equal(Options(want.Headers)) {
			t.Fatalf("message %d headers %v (%v), want %v", i, got, err, want.Headers)
		}
		if m.Checksum != sums[i] {
			t.Fatalf("message %d checksum %#x, stored %#x", i, m.Checksum, sums[i])
		}
	}
	if _, ok := it.Next(); ok {
		t.Fatal("extra message")
	}
}

func TestAppendBatchRejects(t *testing.T) {
	ok := []byte("x")
	tests := []struct {
		name string
		msgs []Message
		want ErrorCode
	}{
		{"no messages", nil, ErrInvalidMessagesCount},
		{"empty payload", []Message{{Payload: ok}, {Payload: nil}}, ErrEmptyMessagePayload},
		{"payload above 64 000 000", []Message{{Payload: make([]byte, MaxMessagePayloadSize+1)}}, ErrTooBigMessagePayload},
		{"header key empty", []Message{{Payload: ok, Headers: UserHeaders{{Key: "", Kind: KindRaw, Value: ok}}}}, ErrInvalidHeaderKey},
		{"header kind undefined", []Message{{Payload: ok, Headers: UserHeaders{{Key: "k", Kind: 16, Value: ok}}}}, ErrInvalidHeaderKind},
		{"header value empty", []Message{{Payload: ok, Headers: UserHeaders{{Key: "k", Kind: KindRaw}}}}, ErrInvalidHeaderValue},
		{"timestamps span more than u32", []Message{{Payload: ok, OriginTimestamp: 10}, {Payload: ok, OriginTimestamp: 10 + 1<<32}}, ErrInvalidMessageTimestampDelta},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dst := []byte{9}
			out, err := AppendBatch(dst, tc.msgs)
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if len(out) != 1 || out[0] != 9 {
				t.Fatal("dst changed on error")
			}
		})
	}
	if _, err := AppendBatch(nil, []Message{{Payload: make([]byte, MaxMessagePayloadSize)}}); err != nil {
		t.Fatalf("64 000 000-byte payload refused: %v", err)
	}
}

// client-plane.md 7.17: the prefix, written by hand.
func TestPolledMessagesEncode(t *testing.T) {
	got := AppendPolledHeader([]byte{0xEE}, 3, 0x0102030405060708, 2)
	want := unhex(t, "ee 03 00 00 00 08 07 06 05 04 03 02 01 02 00 00 00")
	if !bytes.Equal(got, want) {
		t.Fatalf("got %x want %x", got, want)
	}
	SetPolledMessagesCount(got[1:], 0x01020304)
	if !bytes.Equal(got[13:], []byte{4, 3, 2, 1}) {
		t.Fatalf("count patch %x", got[13:])
	}
	p := PolledMessages{PartitionID: PartitionResync, CurrentOffset: 0, MessagesCount: 0}
	if got := p.AppendTo(nil); !bytes.Equal(got, unhex(t, "ff ff ff ff 0000000000000000 00000000")) {
		t.Fatalf("sentinel %x", got)
	}
}

func TestPolledMessagesDecode(t *testing.T) {
	spec := specBatch175(t)
	prefix := func(part uint32, cur uint64, count uint32) []byte {
		b := binary.LittleEndian.AppendUint32(nil, part)
		b = binary.LittleEndian.AppendUint64(b, cur)
		return binary.LittleEndian.AppendUint32(b, count)
	}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	mut := func(f func(b []byte)) []byte { b := append([]byte(nil), spec...); f(b); return b }
	tests := []struct {
		name   string
		body   []byte
		want   PolledMessages // compared when ok
		ok     bool
		resync bool
	}{
		{"0 bytes: empty poll of partition 0", nil, PolledMessages{}, true, false},
		{"1 byte", []byte{0}, PolledMessages{}, false, false},
		{"15 bytes", make([]byte, 15), PolledMessages{}, false, false},
		{"empty poll", prefix(5, 9, 0), PolledMessages{PartitionID: 5, CurrentOffset: 9, Records: []byte{}}, true, false},
		{"re-sync sentinel", prefix(0xFFFFFFFF, 0, 0), PolledMessages{PartitionID: PartitionResync, Records: []byte{}}, true, true},
		{"one record", cat(prefix(0, 0, 1), spec), PolledMessages{MessagesCount: 1, Records: spec}, true, false},
		{"two records", cat(prefix(0, 0, 2), spec, spec), PolledMessages{MessagesCount: 2, Records: cat(spec, spec)}, true, false},
		{"sentinel with messages is not a re-sync", cat(prefix(0xFFFFFFFF, 0, 1), spec), PolledMessages{PartitionID: PartitionResync, MessagesCount: 1, Records: spec}, true, false},
		{"messages_count above frames", cat(prefix(0, 0, 2), spec), PolledMessages{}, false, false},
		{"messages_count below frames", cat(prefix(0, 0, 1), spec, spec), PolledMessages{}, false, false},
		{"record header truncated", cat(prefix(0, 0, 0), make([]byte, 255)), PolledMessages{}, false, false},
		{"record batch_length below 256", cat(prefix(0, 0, 0), mut(func(b []byte) { b[32], b[33] = 0xFF, 0 })), PolledMessages{}, false, false},
		{"record past the body", cat(prefix(0, 0, 1), spec[:308]), PolledMessages{}, false, false},
		{"record batch_length past the body", cat(prefix(0, 0, 1), mut(func(b []byte) { b[32] = 0x36 })), PolledMessages{}, false, false},
		{"frames do not tile the record", cat(prefix(0, 0, 1), mut(func(b []byte) { b[256+36] = 4 })), PolledMessages{}, false, false},
		{"frame reserved bytes", cat(prefix(0, 0, 1), mut(func(b []byte) { b[256+40] = 1 })), PolledMessages{}, false, false},
		{"record message_count differs from its frames", cat(prefix(0, 0, 2), mut(func(b []byte) { b[48] = 2 })), PolledMessages{}, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := PolledMessages{PartitionID: 77}
			err := p.Decode(tc.body)
			if !tc.ok {
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("got %v, want a decode error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.PartitionID != tc.want.PartitionID || p.CurrentOffset != tc.want.CurrentOffset ||
				p.MessagesCount != tc.want.MessagesCount || !bytes.Equal(p.Records, tc.want.Records) {
				t.Fatalf("got %+v, want %+v", p, tc.want)
			}
			if p.Resync() != tc.resync {
				t.Fatalf("Resync %v", p.Resync())
			}
			var n uint32
			for it := p.Messages(); ; n++ {
				m, ok := it.Next()
				if !ok {
					break
				}
				if string(m.Payload) != "hello" || m.OriginTimestamp != 1_700_000_000_000_000 || m.Checksum != 0xB9BFBDDB9EA55C8E {
					t.Fatalf("message %+v", m)
				}
			}
			if n != p.MessagesCount {
				t.Fatalf("iterated %d, want %d", n, p.MessagesCount)
			}
		})
	}
}

// client-plane.md 7.18, bytes by hand.
func TestSendConfirmations(t *testing.T) {
	one := unhex(t, "01000000 01000000 02000000 03000000 0a00000000000001")
	want := SendConfirmations{{StreamID: 1, TopicID: 2, PartitionID: 3, BaseOffset: 0x010000000000000a}}
	if got := want.AppendTo(nil); !bytes.Equal(got, one) {
		t.Fatalf("encode %x", got)
	}
	var c SendConfirmations
	if err := c.Decode(one); err != nil || len(c) != 1 || c[0] != want[0] {
		t.Fatalf("decode %+v %v", c, err)
	}
	if err := c.Decode(unhex(t, "00000000")); err != nil || len(c) != 0 {
		t.Fatalf("count 0: %+v %v", c, err)
	}
	for name, body := range map[string][]byte{
		"empty":          nil,
		"trailing bytes": append(append([]byte(nil), one...), 0),
		"count past end": unhex(t, "02000000 01000000 02000000 03000000 0a00000000000001"),
		"truncated":      one[:len(one)-1],
	} {
		c = SendConfirmations{{}}
		if err := c.Decode(body); !errors.Is(err, ErrMalformed) || c != nil {
			t.Errorf("%s: %v %v", name, err, c)
		}
	}
}

// A small and a large batch are byte for byte what 12.1 and 12.2 define,
// appended into a buffer full of stale bytes: every field, reserved bytes
// included, is written, and the bytes before dst's length are kept.
func TestAppendBatchMatchesTheSpec(t *testing.T) {
	for _, n := range []int{3, 700} {
		msgs := make([]Message, n)
		for i := range msgs {
			msgs[i] = Message{ID: U128{Lo: uint64(i) + 1, Hi: 9}, OriginTimestamp: 5_000_000 + uint64(n-i)*7,
				Payload: bytes.Repeat([]byte{byte(i)}, 600+i%900)}
			if i%4 == 0 {
				msgs[i].Headers = UserHeaders{{Key: fmt.Sprintf("h%d", i), Kind: KindString, Value: []byte("v")}}
			}
		}
		want := specBatch(msgs)
		stale := bytes.Repeat([]byte{0xA5}, 16+len(want))
		got, err := AppendBatch(stale[:16], msgs)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got[:16], stale[:16]) || !bytes.Equal(got[16:], want) {
			t.Fatalf("%d messages: the encoding differs from 12.1/12.2", n)
		}
		if err := ValidateBatch(got[16:], uint32(n)); err != nil {
			t.Fatalf("%d messages: %v", n, err)
		}
	}
}

// specBatch is a producer batch written field by field from client-plane.md
// 12.1 and 12.2 and docs/messages.md: header bytes 0..24 zero,
// origin_timestamp the earliest origin, batch_length, the checksum over
// the header fields and every frame checksum, message_count, the rest of
// the 256-byte header zero; each frame its checksum, id, index, timestamp
// delta, user-header and payload lengths, eight zero bytes, the payload,
// then the user headers; nothing from this package's encoders.
func specBatch(msgs []Message) []byte {
	origin := msgs[0].OriginTimestamp
	for _, m := range msgs {
		origin = min(origin, m.OriginTimestamp)
	}
	var frames []byte
	var sums []byte
	for i, m := range msgs {
		// User headers (docs/encodings.md): per header the key as a TLV
		// of kind 2 (String), then the value as a TLV of its kind:
		// [kind u8][length u32 LE][bytes].
		var uh []byte
		for _, h := range m.Headers {
			uh = append(uh, 2)
			uh = binary.LittleEndian.AppendUint32(uh, uint32(len(h.Key)))
			uh = append(uh, h.Key...)
			uh = append(uh, byte(h.Kind))
			uh = binary.LittleEndian.AppendUint32(uh, uint32(len(h.Value)))
			uh = append(uh, h.Value...)
		}
		f := make([]byte, 48, 48+len(m.Payload)+len(uh))
		binary.LittleEndian.PutUint64(f[8:], m.ID.Lo)
		binary.LittleEndian.PutUint64(f[16:], m.ID.Hi)
		binary.LittleEndian.PutUint32(f[24:], uint32(i))
		binary.LittleEndian.PutUint32(f[28:], uint32(m.OriginTimestamp-origin))
		binary.LittleEndian.PutUint32(f[32:], uint32(len(uh)))
		binary.LittleEndian.PutUint32(f[36:], uint32(len(m.Payload)))
		f = append(append(f, m.Payload...), uh...)
		binary.LittleEndian.PutUint64(f, xxh3.Hash(f[8:]))
		sums = append(sums, f[:8]...)
		frames = append(frames, f...)
	}
	h := make([]byte, 256)
	binary.LittleEndian.PutUint64(h[24:], origin)
	binary.LittleEndian.PutUint64(h[32:], uint64(256+len(frames)))
	binary.LittleEndian.PutUint32(h[48:], uint32(len(msgs)))
	p := append(append(append([]byte{}, h[:40]...), h[48:52]...), sums...)
	binary.LittleEndian.PutUint64(h[40:], xxh3.Hash(p))
	return append(h, frames...)
}
