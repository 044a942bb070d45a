package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"iggynode/wire"
)

// encryptionRecordName is the generic key (Put/Get) under which the store
// records how its message batches are kept at rest (doc.go, "Encryption").
const encryptionRecordName = "storage/encryption"

// Encryption record: format version, mode, and for AES-256-GCM a key check.
const (
	encryptionRecordVersion = 1
	encryptionPlain         = 0
	encryptionAESGCM        = 1
)

// keyCheckPlaintext and keyCheckAAD make the key check: a value only the
// key that sealed it opens.
var keyCheckPlaintext, keyCheckAAD = []byte("iggynode at-rest key check"), []byte("storage/encryption v1")

var (
	// ErrWrongEncryptionKey: the store's batches were sealed under another
	// key than the one given (its key check does not open). It unwraps to
	// wire.ErrInvalidEncryptionKey.
	ErrWrongEncryptionKey = fmt.Errorf("storage: the encryption key is not the one this store's messages were sealed with: %w",
		wire.ErrInvalidEncryptionKey)
	// ErrEncryptionChanged: encryption was switched on or off over a store
	// that holds batches written the other way.
	ErrEncryptionChanged = errors.New("storage: encryption at rest differs from the setting this store's messages were written with")
)

// CheckEncryption compares the encryption the node runs with (c; nil:
// none) with the one the store's batches were written under, and records
// it when the store holds no batch files yet (a new store, or one emptied
// by deletion): only batches make the record binding. It returns
// ErrWrongEncryptionKey when batches exist and c is not their key, and
// ErrEncryptionChanged when batches exist and were written with encryption
// and c is nil, or without and c is not.
func (s *Store) CheckEncryption(c *wire.BatchCipher) error {
	v, ok, err := s.Get(encryptionRecordName)
	if err != nil {
		return err
	}
	if ok {
		mode, err := checkEncryptionRecord(v, c)
		if err == nil {
			return nil
		}
		held, herr := s.holdsBatches()
		if herr != nil {
			return herr
		}
		if held && errors.Is(err, ErrEncryptionChanged) {
			return fmt.Errorf("%w: its messages were written %s and the node runs %s", err, modeName(mode), modeName(modeOf(c)))
		}
		if held {
			return err
		}
	}
	rec := []byte{encryptionRecordVersion, modeOf(c)}
	if c != nil {
		if rec, err = c.SealValue(rec, keyCheckPlaintext, keyCheckAAD); err != nil {
			return fmt.Errorf("storage: sealing the key check: %w", err)
		}
	}
	// Synced: no batch is written under a mode that is not durable yet.
	return s.Put(encryptionRecordName, rec, true)
}

func modeOf(c *wire.BatchCipher) byte {
	if c == nil {
		return encryptionPlain
	}
	return encryptionAESGCM
}

func modeName(mode byte) string {
	if mode == encryptionAESGCM {
		return "encrypted (AES-256-GCM)"
	}
	return "in plaintext"
}

// checkEncryptionRecord reports whether the record v allows running with
// c, and the mode it records.
func checkEncryptionRecord(v []byte, c *wire.BatchCipher) (byte, error) {
	if len(v) < 2 || v[0] != encryptionRecordVersion || v[1] > encryptionAESGCM {
		return 0, fmt.Errorf("%w: encryption record of %d bytes is not one this build writes", ErrCorrupt, len(v))
	}
	switch {
	case v[1] == encryptionPlain && c == nil:
		return v[1], nil
	case v[1] == encryptionAESGCM && c != nil:
		if _, err := c.OpenValue(nil, v[2:], keyCheckAAD); err != nil {
			return v[1], ErrWrongEncryptionKey
		}
		return v[1], nil
	}
	return v[1], ErrEncryptionChanged
}

// holdsBatches reports whether any partition group has a batch file.
func (s *Store) holdsBatches() (bool, error) {
	groups, err := os.ReadDir(s.partsDir)
	if err != nil {
		return false, err
	}
	for _, g := range groups {
		if !g.IsDir() || strings.HasSuffix(g.Name(), deletedDirSuffix) {
			continue
		}
		files, err := os.ReadDir(filepath.Join(s.partsDir, g.Name()))
		if err != nil {
			return false, err
		}
		for _, f := range files {
			if _, ok := parseBatchFileName(f.Name()); ok {
				return true, nil
			}
		}
	}
	return false, nil
}
