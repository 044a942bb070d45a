package wire

import (
	"testing"
)

// A batch of 1000 messages with 1000-byte payloads, the DESIGN.md hot path.
const benchMessages, benchPayload = 1000, 1000

func benchBatchMessages() []Message {
	payload := make([]byte, benchPayload)
	for i := range payload {
		payload[i] = byte(i * 7)
	}
	msgs := make([]Message, benchMessages)
	for i := range msgs {
		msgs[i] = Message{ID: U128{Lo: uint64(i + 1)}, OriginTimestamp: 1_700_000_000_000_000 + uint64(i), Payload: payload}
	}
	return msgs
}

func benchBatch(b *testing.B) []byte {
	b.Helper()
	batch, err := AppendBatch(nil, benchBatchMessages())
	if err != nil {
		b.Fatal(err)
	}
	return batch
}

// BenchmarkBatchEncode builds the batch into a reused buffer.
func BenchmarkBatchEncode(b *testing.B) {
	msgs := benchBatchMessages()
	buf := benchBatch(b)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = AppendBatch(buf[:0], msgs); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBatchValidateIterate is admission plus a full frame walk.
func BenchmarkBatchValidateIterate(b *testing.B) {
	batch := benchBatch(b)
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	for b.Loop() {
		if err := ValidateBatch(batch, benchMessages); err != nil {
			b.Fatal(err)
		}
		n, payload := 0, 0
		for it := Batch(batch).Frames(); ; n++ {
			f, ok := it.Next()
			if !ok {
				break
			}
			payload += len(f.Payload())
		}
		if n != benchMessages || payload != benchMessages*benchPayload {
			b.Fatal("iteration")
		}
	}
}

// BenchmarkBatchStamp is both stamps of 13.1 step 7 and 13.2.
func BenchmarkBatchStamp(b *testing.B) {
	batch := benchBatch(b)
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	for i := uint64(0); b.Loop(); i++ {
		Batch(batch).StampPartition(i)
		Batch(batch).StampAppend(i, i)
	}
}

// BenchmarkBatchSlice serves the middle half of the batch into a reused buffer.
func BenchmarkBatchSlice(b *testing.B) {
	batch := benchBatch(b)
	Batch(batch).StampAppend(1_000_000, 1)
	var dst []byte
	dst, _ = AppendRecord(dst, batch, 1_000_250, 500)
	b.SetBytes(int64(len(dst)))
	b.ReportAllocs()
	for b.Loop() {
		var n uint32
		if dst, n = AppendRecord(dst[:0], batch, 1_000_250, 500); n != 500 {
			b.Fatal("slice")
		}
	}
}

// BenchmarkBatchPolledDecode is the consumer side: decode a poll reply and
// walk every message.
func BenchmarkBatchPolledDecode(b *testing.B) {
	batch := benchBatch(b)
	body := AppendPolledHeader(nil, 0, benchMessages-1, benchMessages)
	body = append(body, batch...)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	var p PolledMessages
	for b.Loop() {
		if err := p.Decode(body); err != nil {
			b.Fatal(err)
		}
		n := 0
		for it := p.Messages(); ; n++ {
			if _, ok := it.Next(); !ok {
				break
			}
		}
		if n != benchMessages {
			b.Fatal("iteration")
		}
	}
}

// BenchmarkBatchSeal seals the batch (one AES-256-GCM seal and one nonce
// per message, checksums recomputed) into a reused buffer.
func BenchmarkBatchSeal(b *testing.B) {
	c := testCipher(b, testKey)
	batch := benchBatch(b)
	buf := make([]byte, 0, SealedSize(batch))
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.AppendSealedBatch(buf, batch); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBatchOpen opens the sealed batch into a reused reply buffer,
// as a poll of a cached batch does.
func BenchmarkBatchOpen(b *testing.B) {
	c := testCipher(b, testKey)
	sealed, err := c.AppendSealedBatch(nil, benchBatch(b))
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 0, len(sealed))
	b.SetBytes(int64(len(sealed)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := c.AppendOpenedRecord(buf, sealed, 0, benchMessages); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBatchValidate is admission alone, and gathering the frame
// table too (ValidateBatchIndexed).
func BenchmarkBatchValidate(b *testing.B) {
	for _, c := range []struct {
		name     string
		validate func([]byte, uint32) error
	}{
		{"plain", ValidateBatch},
		{"indexed", func(batch []byte, n uint32) error { _, err := ValidateBatchIndexed(batch, n); return err }},
	} {
		b.Run(c.name, func(b *testing.B) {
			batch := benchBatch(b)
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			for b.Loop() {
				if err := c.validate(batch, benchMessages); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
