package storage

import (
	"bytes"
	"errors"
	"testing"

	"iggynode/wire"
)

func testBatchCipher(t testing.TB, fill byte) *wire.BatchCipher {
	t.Helper()
	c, err := wire.NewBatchCipher(bytes.Repeat([]byte{fill}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The encryption record binds a store to its key once it holds batches: a
// restart with the same key passes, another key is ErrWrongEncryptionKey
// (InvalidEncryptionKey, 70), running without encryption is
// ErrEncryptionChanged; with no batches left any setting is taken and
// recorded.
func TestEncryptionRecordBindsTheStoreToItsKey(t *testing.T) {
	key, other := testBatchCipher(t, 1), testBatchCipher(t, 2)
	s := openTest(t)
	if err := s.CheckEncryption(key); err != nil {
		t.Fatal(err)
	}
	sealed, err := key.AppendSealedBatch(nil, makeBatch(t, 0, 3, 40, 9))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.AppendBatch(5, 0, sealed, false); err != nil {
		t.Fatal(err)
	}
	s = reopen(t, s)
	if err := s.CheckEncryption(key); err != nil {
		t.Fatalf("same key after a restart: %v", err)
	}
	if err := s.CheckEncryption(other); !errors.Is(err, ErrWrongEncryptionKey) || !errors.Is(err, wire.ErrInvalidEncryptionKey) {
		t.Fatalf("another key: %v", err)
	}
	if err := s.CheckEncryption(nil); !errors.Is(err, ErrEncryptionChanged) {
		t.Fatalf("without encryption: %v", err)
	}
	if err := s.CheckEncryption(key); err != nil {
		t.Fatalf("the refusals must not change the record: %v", err)
	}
	if err := s.DeletePartition(5); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckEncryption(other); err != nil {
		t.Fatalf("no batches left, a new key is taken: %v", err)
	}
	if err := s.CheckEncryption(nil); err != nil {
		t.Fatalf("no batches left, plaintext is taken: %v", err)
	}
	if err := s.AppendBatch(6, 0, makeBatch(t, 0, 1, 10, 1), false); err != nil {
		t.Fatal(err)
	}
	s = reopen(t, s)
	if err := s.CheckEncryption(key); !errors.Is(err, ErrEncryptionChanged) {
		t.Fatalf("encryption switched on over plaintext batches: %v", err)
	}
	if err := s.CheckEncryption(nil); err != nil {
		t.Fatal(err)
	}
}
