package wire

import (
	"bytes"
	"errors"
	"math"
	"testing"
)

// FuzzOpenSealedBatch: opening arbitrary bytes as a sealed batch, sliced
// or in place, never panics and fails only with CannotDecryptData; what
// opens from an admissible header is a record that validates. Bytes that
// are a valid plaintext batch seal and open back to themselves.
func FuzzOpenSealedBatch(f *testing.F) {
	c := testCipher(f, testKey)
	for _, plain := range [][]byte{builtSeedBatch(f), threeFrameBatch(), specBatch175(f)} {
		sealed, err := c.AppendSealedBatch(nil, plain)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(sealed, uint64(0), uint32(math.MaxUint32))
		f.Add(sealed, uint64(1), uint32(1))
		f.Add(plain, uint64(0), uint32(2))
	}
	f.Add(make([]byte, 256), uint64(0), uint32(1))
	f.Fuzz(func(t *testing.T, b []byte, start uint64, count uint32) {
		rec, n, err := c.AppendOpenedRecord(nil, b, start, count)
		switch {
		case err != nil && !errors.Is(err, ErrCannotDecryptData):
			t.Fatalf("open: %v is not CannotDecryptData", err)
		case err != nil && len(rec) != 0:
			t.Fatalf("open failed but appended %d bytes", len(rec))
		case err == nil && n > 0 && bytes.Equal(b[BatchReservedOffset:BatchHeaderSize], make([]byte, BatchHeaderSize-BatchReservedOffset)):
			// The header is copied, not authenticated: only one that
			// passed admission (zero reserved bytes) must come out valid.
			if verr := ValidateBatch(rec, n); verr != nil {
				t.Fatalf("opened record does not validate: %v", verr)
			}
		}
		work := append([]byte(nil), b...)
		if w, err := c.OpenBatchInPlace(work); err != nil && !errors.Is(err, ErrCannotDecryptData) {
			t.Fatalf("open in place: %v is not CannotDecryptData", err)
		} else if err == nil && w > len(b) {
			t.Fatalf("in-place record of %d bytes from %d", w, len(b))
		}
		if len(b) < BatchHeaderSize || ValidateBatch(b, Batch(b).MessageCount()) != nil {
			return
		}
		sealed, err := c.AppendSealedBatch(nil, b)
		if err != nil {
			t.Fatalf("a valid batch does not seal: %v", err)
		}
		opened, n, err := c.AppendOpenedRecord(nil, sealed, 0, math.MaxUint32)
		if err != nil || n != Batch(b).MessageCount() || !bytes.Equal(opened, b) {
			t.Fatalf("seal and open: %d messages, %v; equal %v", n, err, bytes.Equal(opened, b))
		}
		w, err := c.OpenBatchInPlace(sealed)
		if err != nil || !bytes.Equal(sealed[:w], b) {
			t.Fatalf("seal and open in place: %v", err)
		}
	})
}
