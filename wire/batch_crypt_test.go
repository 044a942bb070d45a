package wire

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"testing"

	"github.com/zeebo/xxh3"
)

// testKey is a fixed AES-256 key; otherKey differs in one bit.
var testKey, otherKey = bytes.Repeat([]byte{0x42}, 32), append(bytes.Repeat([]byte{0x42}, 31), 0x43)

func testCipher(t testing.TB, key []byte) *BatchCipher {
	t.Helper()
	c, err := NewBatchCipher(key)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// cryptMessages are messages whose payloads and user headers all carry a
// marker, with and without headers, of several sizes.
func cryptMessages(n int) []Message {
	msgs := make([]Message, n)
	for i := range msgs {
		msgs[i] = Message{ID: U128{Lo: uint64(i) + 1, Hi: 7}, OriginTimestamp: 1_700_000_000_000_000 + uint64(i)*3,
			Payload: []byte(fmt.Sprintf("secret-payload-%d-%s", i, bytes.Repeat([]byte{'p'}, i*37%300)))}
		if i%3 != 1 {
			msgs[i].Headers = UserHeaders{{Key: "secret-header", Kind: KindString, Value: []byte(fmt.Sprintf("secret-value-%d", i))}}
		}
	}
	return msgs
}

// plainAndSealed builds a producer batch of msgs, stamps its partition,
// seals it, and stamps both copies' append fields the same way.
func plainAndSealed(t testing.TB, c *BatchCipher, msgs []Message) (plain, sealed Batch) {
	t.Helper()
	b, err := AppendBatch(nil, msgs)
	if err != nil {
		t.Fatal(err)
	}
	Batch(b).StampPartition(3)
	s, err := c.AppendSealedBatch(nil, b)
	if err != nil {
		t.Fatal(err)
	}
	Batch(b).StampAppend(1000, 1_800_000_000_000_000)
	Batch(s).StampAppend(1000, 1_800_000_000_000_000)
	return b, s
}

// The sealed batch is a valid batch (the checksums hold on disk) whose
// bytes hold no payload or header plaintext; opened, whole or in place, it
// is the plaintext batch byte for byte, so every message's payload and
// headers come back with the producer's checksums.
func TestSealedBatchRoundTrips(t *testing.T) {
	c := testCipher(t, testKey)
	msgs := cryptMessages(150) // past the checksum's stack buffer
	plain, sealed := plainAndSealed(t, c, msgs)
	if err := ValidateBatch(sealed, uint32(len(msgs))); err != nil {
		t.Fatalf("sealed batch does not validate: %v", err)
	}
	if want := uint64(len(plain)) + uint64(len(msgs))*SealOverhead; sealed.Length() != want || uint64(len(sealed)) != want {
		t.Fatalf("sealed batch_length %d of %d bytes, want %d", sealed.Length(), len(sealed), want)
	}
	for _, marker := range []string{"secret-payload", "secret-header", "secret-value"} {
		if bytes.Contains(sealed, []byte(marker)) {
			t.Fatalf("sealed batch holds the plaintext %q", marker)
		}
	}
	opened, n, err := c.AppendOpenedRecord(nil, sealed, 0, math.MaxUint32)
	if err != nil || n != uint32(len(msgs)) {
		t.Fatalf("open: %d messages, %v", n, err)
	}
	if !bytes.Equal(opened, plain) {
		t.Fatal("opened record differs from the plaintext batch")
	}
	inPlace := append([]byte(nil), sealed...)
	w, err := c.OpenBatchInPlace(inPlace)
	if err != nil || !bytes.Equal(inPlace[:w], plain) {
		t.Fatalf("opened in place: %v, equal %v", err, bytes.Equal(inPlace[:w], plain))
	}
	if err := ValidateBatch(opened, uint32(len(msgs))); err != nil {
		t.Fatalf("opened record does not validate: %v", err)
	}
	it := Batch(opened).Frames()
	for i, m := range msgs {
		f, _ := it.Next()
		if !bytes.Equal(f.Payload(), m.Payload) || !bytes.Equal(f.UserHeaders(), AppendUserHeaders(nil, m.Headers)) || f.ID() != m.ID {
			t.Fatalf("message %d does not round-trip", i)
		}
	}
}

// client-plane.md 13.4: a sliced poll of a sealed batch is the same record
// as the slice of the plaintext batch, for every start and count.
func TestOpenedSlicesMatchPlainSlices(t *testing.T) {
	c := testCipher(t, testKey)
	plain, sealed := plainAndSealed(t, c, cryptMessages(7))
	for start := uint64(995); start <= 1008; start++ {
		for count := uint32(0); count <= 8; count++ {
			want, wantN := AppendRecord([]byte("prefix"), plain, start, count)
			got, n, err := c.AppendOpenedRecord([]byte("prefix"), sealed, start, count)
			if err != nil || n != wantN || !bytes.Equal(got, want) {
				t.Fatalf("start %d count %d: %d messages (%v), want %d; equal %v", start, count, n, err, wantN, bytes.Equal(got, want))
			}
			if n > 0 {
				if err := ValidateBatch(got[6:], n); err != nil {
					t.Fatalf("start %d count %d: record does not validate: %v", start, count, err)
				}
			}
		}
	}
}

// fixedNonces yields 0x00, 0x01, ... so a test knows every nonce.
type fixedNonces struct{ next byte }

func (f *fixedNonces) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = f.next
		f.next++
	}
	return len(p), nil
}

// The layout the file comment of batch_crypt.go states, checked against an
// independent AES-256-GCM seal: frame header with the sealed lengths, the
// nonce at 48, the ciphertext of payload ‖ user headers, the tag last, the
// frame header bytes 8..48 as additional data, and the checksums over the
// sealed bytes.
func TestSealedLayoutIsAsDocumented(t *testing.T) {
	c := testCipher(t, testKey)
	c.random = &fixedNonces{}
	headers := UserHeaders{{Key: "k", Kind: KindRaw, Value: []byte("hv")}}
	msgs := []Message{{ID: U128{Lo: 0x1122, Hi: 0x3344}, OriginTimestamp: 5, Payload: []byte("hello"), Headers: headers},
		{ID: U128{Lo: 2}, OriginTimestamp: 9, Payload: []byte("x")}}
	plain, err := AppendBatch(nil, msgs)
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := c.AppendSealedBatch(nil, plain)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(sealed[:BatchLengthOffset], plain[:BatchLengthOffset]) || !bytes.Equal(sealed[BatchMessageCountOffset:BatchHeaderSize], plain[BatchMessageCountOffset:BatchHeaderSize]) {
		t.Fatal("the header changed beyond batch_length and batch_checksum")
	}
	block, _ := aes.NewCipher(testKey)
	gcm, _ := cipher.NewGCM(block)
	hl := uint32(len(AppendUserHeaders(nil, headers)))
	wantLens := [][2]uint32{{12 + 5, hl + 16}, {12 + 1, 0 + 16}}
	pf, sf := Batch(plain).Frames(), Batch(sealed).Frames()
	for i := range msgs {
		p, _ := pf.Next()
		s, ok := sf.Next()
		if !ok {
			t.Fatalf("sealed frame %d missing", i)
		}
		if s.PayloadLength() != wantLens[i][0] || s.UserHeadersLength() != wantLens[i][1] {
			t.Fatalf("frame %d: lengths %d/%d, want %v", i, s.PayloadLength(), s.UserHeadersLength(), wantLens[i])
		}
		if !bytes.Equal(s[FrameIDOffset:FrameUserHeadersLengthOffset], p[FrameIDOffset:FrameUserHeadersLengthOffset]) ||
			binary.LittleEndian.Uint64(s[FrameReservedOffset:]) != 0 {
			t.Fatalf("frame %d: id, deltas or reserved changed", i)
		}
		nonce := s[48:60]
		for j, v := range nonce {
			if v != byte(i*12+j) {
				t.Fatalf("frame %d: nonce %x is not at bytes 48..60", i, nonce)
			}
		}
		want := gcm.Seal(nil, nonce, p[FrameHeaderSize:], s[FrameIDOffset:FrameHeaderSize])
		if !bytes.Equal(s[60:], want) {
			t.Fatalf("frame %d: bytes 60.. are not GCM(payload ‖ headers) ‖ tag with the header as additional data", i)
		}
		if s.Checksum() != xxh3.Hash(s[FrameIDOffset:]) {
			t.Fatalf("frame %d: checksum not over the sealed frame", i)
		}
	}
	if Batch(sealed).Checksum() != refBatchChecksum(sealed) {
		t.Fatal("batch checksum not over the sealed header and frame checksums")
	}
}

// resealAll recomputes a sealed batch's frame and batch checksums after a
// test changed its bytes, so only authentication can catch the change.
func resealAll(b []byte) {
	for it := Batch(b).Frames(); ; {
		f, ok := it.Next()
		if !ok {
			break
		}
		binary.LittleEndian.PutUint64(f, FrameChecksum(f))
	}
	binary.LittleEndian.PutUint64(b[BatchChecksumOffset:], ComputeBatchChecksum(b))
}

// Tampering that keeps every checksum valid is still refused, as is the
// wrong key: CannotDecryptData (72), dst unchanged, no panic.
func TestTamperedSealedBatchIsRefused(t *testing.T) {
	c := testCipher(t, testKey)
	_, sealed := plainAndSealed(t, c, cryptMessages(3))
	it := sealed.Frames()
	first, _ := it.Next()
	second := BatchHeaderSize + len(first) // where frame 1 starts
	cases := []struct {
		name   string
		cipher *BatchCipher
		change func(b []byte)
	}{
		{"wrong key", testCipher(t, otherKey), func([]byte) {}},
		{"ciphertext byte", c, func(b []byte) { b[second+60] ^= 1 }},
		{"tag byte", c, func(b []byte) { b[len(b)-1] ^= 1 }},
		{"nonce byte", c, func(b []byte) { b[second+48] ^= 1 }},
		{"message id", c, func(b []byte) { b[second+FrameIDOffset] ^= 1 }},
		{"payload/headers split", c, func(b []byte) {
			f := b[second:]
			binary.LittleEndian.PutUint32(f[FramePayloadLengthOffset:], binary.LittleEndian.Uint32(f[FramePayloadLengthOffset:])+1)
			binary.LittleEndian.PutUint32(f[FrameUserHeadersLengthOffset:], binary.LittleEndian.Uint32(f[FrameUserHeadersLengthOffset:])-1)
		}},
		{"lengths too short for a nonce", c, func(b []byte) {
			f := b[second:]
			total := binary.LittleEndian.Uint32(f[FramePayloadLengthOffset:]) + binary.LittleEndian.Uint32(f[FrameUserHeadersLengthOffset:])
			binary.LittleEndian.PutUint32(f[FramePayloadLengthOffset:], 3)
			binary.LittleEndian.PutUint32(f[FrameUserHeadersLengthOffset:], total-3)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := append([]byte(nil), sealed...)
			tc.change(b)
			resealAll(b)
			if err := ValidateBatch(b, 3); err != nil {
				t.Fatalf("the tampered batch must still pass its checksums: %v", err)
			}
			got, n, err := tc.cipher.AppendOpenedRecord([]byte("dst"), b, 0, 10)
			if !errors.Is(err, ErrCannotDecryptData) || n != 0 || string(got) != "dst" {
				t.Fatalf("open: %q, %d messages, %v; want CannotDecryptData and dst unchanged", got[:min(len(got), 8)], n, err)
			}
			if _, err := tc.cipher.OpenBatchInPlace(b); !errors.Is(err, ErrCannotDecryptData) {
				t.Fatalf("open in place: %v, want CannotDecryptData", err)
			}
		})
	}
	// A frame served alone from before the tampered one still opens.
	b := append([]byte(nil), sealed...)
	b[second+60] ^= 1
	resealAll(b)
	if _, n, err := c.AppendOpenedRecord(nil, b, 0, 1); err != nil || n != 1 {
		t.Fatalf("the untouched first frame: %d, %v", n, err)
	}
}

// Every message gets its own nonce: within a batch and across seals of
// the same batch, none repeats.
func TestNoncesDoNotRepeat(t *testing.T) {
	c := testCipher(t, testKey)
	plain, err := AppendBatch(nil, cryptMessages(200))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[[SealNonceSize]byte]bool{}
	for range 5 {
		sealed, err := c.AppendSealedBatch(nil, plain)
		if err != nil {
			t.Fatal(err)
		}
		for it := Batch(sealed).Frames(); ; {
			f, ok := it.Next()
			if !ok {
				break
			}
			n := [SealNonceSize]byte(f[FrameHeaderSize:])
			if seen[n] {
				t.Fatalf("nonce %x used twice", n)
			}
			seen[n] = true
		}
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, io.ErrUnexpectedEOF }

// A 16-byte key is InvalidEncryptionKey (70); a nonce that cannot be drawn
// or a batch that is not whole is CannotEncryptData (71), dst unchanged.
func TestSealRefusals(t *testing.T) {
	if _, err := NewBatchCipher(make([]byte, 16)); !errors.Is(err, ErrInvalidEncryptionKey) {
		t.Fatalf("16-byte key: %v", err)
	}
	c := testCipher(t, testKey)
	plain, err := AppendBatch(nil, cryptMessages(2))
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"short": plain[:100], "torn frame": plain[:len(plain)-1],
		"count": func() []byte { b := append([]byte(nil), plain...); b[BatchMessageCountOffset] = 3; return b }()} {
		if got, err := c.AppendSealedBatch([]byte("dst"), b); !errors.Is(err, ErrCannotEncryptData) || string(got) != "dst" {
			t.Fatalf("%s: %v", name, err)
		}
	}
	c.random = failingReader{}
	if got, err := c.AppendSealedBatch([]byte("dst"), plain); !errors.Is(err, ErrCannotEncryptData) || string(got) != "dst" {
		t.Fatalf("failing nonce source: %v", err)
	}
	if _, err := c.SealValue(nil, []byte("v"), nil); !errors.Is(err, ErrCannotEncryptData) {
		t.Fatalf("failing nonce source, value: %v", err)
	}
}

// SealValue/OpenValue: the key check storage keeps opens under the same
// key and additional data only.
func TestSealedValueOpensUnderItsKeyOnly(t *testing.T) {
	c := testCipher(t, testKey)
	v, err := c.SealValue([]byte("x"), []byte("check"), []byte("aad"))
	if err != nil || len(v) != 1+SealOverhead+5 {
		t.Fatalf("sealed value of %d bytes: %v", len(v), err)
	}
	if got, err := c.OpenValue(nil, v[1:], []byte("aad")); err != nil || string(got) != "check" {
		t.Fatalf("open: %q, %v", got, err)
	}
	for name, open := range map[string]func() error{
		"other key": func() error { _, err := testCipher(t, otherKey).OpenValue(nil, v[1:], []byte("aad")); return err },
		"other aad": func() error { _, err := c.OpenValue(nil, v[1:], []byte("bad")); return err },
		"short":     func() error { _, err := c.OpenValue(nil, v[1:10], nil); return err },
	} {
		if err := open(); !errors.Is(err, ErrCannotDecryptData) {
			t.Fatalf("%s: %v", name, err)
		}
	}
}

// DESIGN.md, performance rules: sealing into a buffer with room and
// opening into one allocate nothing, however many messages.
func TestSealAndOpenDoNotAllocate(t *testing.T) {
	c := testCipher(t, testKey)
	plain, err := AppendBatch(nil, cryptMessages(100))
	if err != nil {
		t.Fatal(err)
	}
	sealed, _ := c.AppendSealedBatch(nil, plain)
	buf := make([]byte, 0, len(sealed))
	if n := testing.AllocsPerRun(20, func() { _, _ = c.AppendSealedBatch(buf, plain) }); n != 0 {
		t.Fatalf("seal: %v allocs", n)
	}
	if n := testing.AllocsPerRun(20, func() { _, _, _ = c.AppendOpenedRecord(buf, sealed, 0, 50) }); n != 0 {
		t.Fatalf("open: %v allocs", n)
	}
	work := make([]byte, len(sealed))
	if n := testing.AllocsPerRun(20, func() { copy(work, sealed); _, _ = c.OpenBatchInPlace(work) }); n != 0 {
		t.Fatalf("open in place: %v allocs", n)
	}
}
