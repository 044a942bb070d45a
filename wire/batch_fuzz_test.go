package wire

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"
)

func builtSeedBatch(tb testing.TB) []byte {
	b, err := AppendBatch(nil, []Message{
		{ID: U128{Lo: 9}, OriginTimestamp: 10, Payload: []byte("one"), Headers: UserHeaders{{Key: "k", Kind: KindUint8, Value: []byte{1}}}},
		{ID: U128{Hi: 1}, OriginTimestamp: 12, Payload: []byte("two")},
	})
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// FuzzBatchValidate: ValidateBatch never panics and reports one of the three
// admission codes; a batch it accepts iterates exactly message_count frames
// whose checksums are the stored ones, and is served whole as stored.
func FuzzBatchValidate(f *testing.F) {
	f.Add(specBatch175(f), uint32(1))
	f.Add(threeFrameBatch(), uint32(3))
	f.Add(builtSeedBatch(f), uint32(2))
	f.Add(make([]byte, 256), uint32(0))
	many := make([]Message, 130) // past the stack buffer: the streamed batch checksum
	for i := range many {
		many[i] = Message{ID: U128{Lo: uint64(i)}, Payload: []byte{byte(i)}}
	}
	if b, err := AppendBatch(nil, many); err == nil {
		f.Add(b, uint32(len(many)))
	}
	f.Fuzz(func(t *testing.T, b []byte, messagesCount uint32) {
		err := ValidateBatch(b, messagesCount)
		// The indexed pass says the same and gathers BuildFrameTable's table.
		table, ierr := ValidateBatchIndexed(b, messagesCount)
		if fmt.Sprint(ierr) != fmt.Sprint(err) {
			t.Fatalf("ValidateBatchIndexed: %v, ValidateBatch: %v", ierr, err)
		}
		if err == nil {
			built, _ := BuildFrameTable(Batch(b))
			if !table.Built() || !slices.Equal(table.ends, built.ends) || !slices.Equal(table.sums, built.sums) {
				t.Fatalf("table %+v, BuildFrameTable's %+v", table, built)
			}
		}
		// Walkers never panic on unvalidated input.
		for it := Batch(b).Frames(); ; {
			if _, ok := it.Next(); !ok {
				break
			}
		}
		ComputeBatchChecksum(b)
		AppendRecord(nil, b, 0, 3)
		if err != nil {
			var be *BatchError
			if !errors.As(err, &be) || (be.Code != ErrInvalidCommand && be.Code != ErrInvalidMessageChecksum && be.Code != ErrInvalidBatchChecksum) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		batch := Batch(b)
		it := batch.Frames()
		var n uint32
		for ; ; n++ {
			fr, ok := it.Next()
			if !ok {
				break
			}
			if FrameChecksum(fr) != fr.Checksum() {
				t.Fatalf("frame %d checksum differs after validation", n)
			}
			if len(fr) != FrameHeaderSize+len(fr.Payload())+len(fr.UserHeaders()) {
				t.Fatalf("frame %d does not split into header, payload and headers", n)
			}
		}
		if n != batch.MessageCount() || n != messagesCount || len(it.Rest()) != 0 {
			t.Fatalf("iterated %d frames of %d, rest %d", n, batch.MessageCount(), len(it.Rest()))
		}
		if ComputeBatchChecksum(b) != batch.Checksum() {
			t.Fatal("ComputeBatchChecksum disagrees with a validated batch")
		}
		if rec, got := AppendRecord(nil, b, 0, n); got != n || !bytes.Equal(rec, b) {
			t.Fatal("whole batch not served as stored")
		}
		stamped := append([]byte(nil), b...)
		Batch(stamped).StampPartition(5)
		Batch(stamped).StampAppend(1<<40, 77)
		if err := ValidateBatch(stamped, n); err != nil {
			t.Fatalf("stamped batch fails validation: %v", err)
		}
	})
}

// FuzzBatchPolledMessages: Decode never panics; what decodes re-encodes to
// the same bytes (a 0-byte body to the 16-byte empty poll) and iterates
// exactly messages_count messages.
func FuzzBatchPolledMessages(f *testing.F) {
	spec := specBatch175(f)
	f.Add([]byte{})
	f.Add(AppendPolledHeader(nil, PartitionResync, 0, 0))
	f.Add(append(AppendPolledHeader(nil, 1, 2, 1), spec...))
	f.Add(append(append(AppendPolledHeader(nil, 0, 5, 3), spec...), builtSeedBatch(f)...))
	f.Fuzz(func(t *testing.T, body []byte) {
		if len(body) >= PolledMessagesHeaderSize {
			for it := (&PolledMessages{Records: body[PolledMessagesHeaderSize:]}).Messages(); ; {
				if _, ok := it.Next(); !ok {
					break
				}
			}
		}
		var p PolledMessages
		if err := p.Decode(body); err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v is not a decode error", err)
			}
			return
		}
		var n uint32
		for it := p.Messages(); ; n++ {
			if _, ok := it.Next(); !ok {
				break
			}
		}
		if n != p.MessagesCount {
			t.Fatalf("iterated %d, messages_count %d", n, p.MessagesCount)
		}
		enc := p.AppendTo(nil)
		if len(body) > 0 && !bytes.Equal(enc, body) {
			t.Fatalf("re-encoding differs:\n%x\n%x", enc, body)
		}
		var q PolledMessages
		if err := q.Decode(enc); err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if q.PartitionID != p.PartitionID || q.CurrentOffset != p.CurrentOffset || q.MessagesCount != p.MessagesCount ||
			!bytes.Equal(q.Records, p.Records) {
			t.Fatalf("re-decode %+v, want %+v", q, p)
		}
	})
}

// FuzzBatchSlice: slicing a valid built batch at any offset and count serves
// the expected contiguous messages in a record that itself validates.
func FuzzBatchSlice(f *testing.F) {
	f.Add(uint8(5), []byte{0, 1, 2, 3}, uint64(100), uint16(2), uint32(2))
	f.Add(uint8(1), []byte{}, uint64(0), uint16(0), uint32(1))
	f.Add(uint8(200), []byte{255, 9, 17}, uint64(1)<<50, uint16(150), uint32(1000))
	f.Fuzz(func(t *testing.T, count uint8, sizes []byte, base uint64, startDelta uint16, maxCount uint32) {
		n := int(count)%150 + 1
		msgs := make([]Message, n)
		for i := range msgs {
			size := 1
			if len(sizes) > 0 {
				size += int(sizes[i%len(sizes)])
			}
			msgs[i] = Message{ID: U128{Lo: uint64(i)}, OriginTimestamp: uint64(1000 + i), Payload: bytes.Repeat([]byte{byte(i)}, size)}
			if size%2 == 0 {
				msgs[i].Headers = UserHeaders{{Key: "i", Kind: KindUint8, Value: []byte{byte(i)}}}
			}
		}
		batch, err := AppendBatch(nil, msgs)
		if err != nil {
			t.Fatal(err)
		}
		base = base%(1<<62) + 1
		Batch(batch).StampAppend(base, 42)
		rel := int(startDelta)%(n+3) - 1 // -1 ..= n+1
		start := base + uint64(rel)
		if rel < 0 {
			start = base - 1
		}
		first := max(rel, 0)
		want := 0
		if first < n {
			want = int(min(uint64(maxCount), uint64(n-first)))
		}
		out, got := AppendRecord([]byte{0xAB}, batch, start, maxCount)
		if int(got) != want {
			t.Fatalf("served %d, want %d (n %d, rel %d, max %d)", got, want, n, rel, maxCount)
		}
		rec := out[1:]
		if want == 0 {
			if len(rec) != 0 {
				t.Fatal("bytes appended for no messages")
			}
			return
		}
		if err := ValidateBatch(rec, got); err != nil {
			t.Fatalf("record does not validate: %v", err)
		}
		if want == n && !bytes.Equal(rec, batch) {
			t.Fatal("whole record differs from the batch")
		}
		if Batch(rec).BaseOffset() != base || Batch(rec).BaseTimestamp() != 42 {
			t.Fatal("header fields changed")
		}
		it := Batch(rec).Frames()
		for i := 0; i < want; i++ {
			fr, _ := it.Next()
			if base+uint64(fr.OffsetDelta()) != base+uint64(first+i) || !bytes.Equal(fr.Payload(), msgs[first+i].Payload) {
				t.Fatalf("frame %d is not message %d", i, first+i)
			}
		}
	})
}

// FuzzBatchSendConfirmations: Decode never panics; what decodes re-encodes
// to the same bytes.
func FuzzBatchSendConfirmations(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0})
	f.Add(SendConfirmations{{StreamID: 1, TopicID: 2, PartitionID: 3, BaseOffset: 4}}.AppendTo(nil))
	f.Fuzz(func(t *testing.T, body []byte) {
		var c SendConfirmations
		if err := c.Decode(body); err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v is not a decode error", err)
			}
			return
		}
		if enc := c.AppendTo(nil); !bytes.Equal(enc, body) {
			t.Fatalf("re-encoding differs: %x vs %x", enc, body)
		}
	})
}
