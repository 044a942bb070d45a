package storage

import (
	"encoding/binary"
	"fmt"

	"github.com/zeebo/xxh3"

	"iggynode/wire"
)

// Snapshot trailer (replica-plane.md 2.6, "Metadata snapshot file").
const (
	snapshotMagic       = 0x49534E50 // on-disk bytes 50 4E 53 49
	snapshotTrailerSize = 4 + 16
)

// SnapshotChecksum is W(H64(payload)), the trailer's checksum and the
// checkpoint_checksum that pairs a superblock with the snapshot (2.6).
func SnapshotChecksum(payload []byte) wire.U128 { return wire.Widen(xxh3.Hash(payload)) }

// SaveSnapshot stores group's snapshot payload followed by the 20-byte
// trailer (magic, W(H64(payload))), replacing the previous one, and fsyncs
// it before returning (9.1: the snapshot is durable before the superblock
// that names it).
func (s *Store) SaveSnapshot(group uint64, payload []byte) error {
	v := make([]byte, 0, len(payload)+snapshotTrailerSize)
	v = append(v, payload...)
	v = wire.AppendU32(v, snapshotMagic)
	v = wire.AppendU128(v, SnapshotChecksum(payload))
	if err := s.set(kindPrefix(group, kindSnapshot), v, true); err != nil {
		return fmt.Errorf("storage: save snapshot group %d: %w", group, err)
	}
	return nil
}

// LoadSnapshot returns group's snapshot payload after verifying the
// trailer. The store always writes the trailer, so a value without it (the
// spec's legacy unsealed file) is corrupt here, as is a checksum mismatch.
func (s *Store) LoadSnapshot(group uint64) ([]byte, bool, error) {
	v, ok, err := s.get(kindPrefix(group, kindSnapshot))
	if err != nil || !ok {
		if err != nil {
			err = fmt.Errorf("storage: load snapshot group %d: %w", group, err)
		}
		return nil, false, err
	}
	payload, err := openSnapshot(v)
	if err != nil {
		return nil, false, fmt.Errorf("storage: snapshot group %d: %w", group, err)
	}
	return payload, true, nil
}

// openSnapshot verifies the 2.6 trailer of v and returns the payload.
func openSnapshot(v []byte) ([]byte, error) {
	if len(v) < snapshotTrailerSize {
		return nil, fmt.Errorf("%w: snapshot of %d bytes", ErrCorrupt, len(v))
	}
	n := len(v) - snapshotTrailerSize
	payload, trailer := v[:n:n], v[n:]
	if m := binary.LittleEndian.Uint32(trailer); m != snapshotMagic {
		return nil, fmt.Errorf("%w: snapshot trailer magic %#x", ErrCorrupt, m)
	}
	stored := wire.U128{Lo: binary.LittleEndian.Uint64(trailer[4:]), Hi: binary.LittleEndian.Uint64(trailer[12:])}
	if sum := SnapshotChecksum(payload); stored != sum {
		return nil, fmt.Errorf("%w: snapshot checksum %v, computed %v", ErrCorrupt, stored, sum)
	}
	return payload, nil
}
