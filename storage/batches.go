package storage

import (
	"fmt"

	"github.com/dgraph-io/badger/v4"

	"iggynode/wire"
)

// AppendBatch stores a stamped batch (wire/batch.go: 256-byte header and
// frames) verbatim under (group, baseOffset). baseOffset must equal the
// header's base_offset and batch_length the slice length, so a key never
// disagrees with the bytes it holds. With sync (the topic's enforce_fsync)
// the batch is fsynced before the call returns; without it, it survives a
// process crash, not a power loss (doc.go, "Durability"). The batch may be
// reused once the call returns.
func (s *Store) AppendBatch(group, baseOffset uint64, batch []byte, sync bool) error {
	if len(batch) < wire.BatchHeaderSize {
		return fmt.Errorf("storage: batch at %d: %d bytes, shorter than its header", baseOffset, len(batch))
	}
	b := wire.Batch(batch)
	if b.BaseOffset() != baseOffset || b.Length() != uint64(len(batch)) {
		return fmt.Errorf("storage: batch at %d: header says base_offset %d, batch_length %d of %d bytes",
			baseOffset, b.BaseOffset(), b.Length(), len(batch))
	}
	if err := s.set(u64Key(group, kindBatch, baseOffset), batch, sync); err != nil {
		return fmt.Errorf("storage: append batch group %d at %d: %w", group, baseOffset, err)
	}
	return nil
}

// ScanBatches calls fn for every batch of group whose base offset is >=
// fromBaseOffset, in ascending offset order. To read from an offset inside a
// batch, pass that batch's base offset (FindBatch). batch is valid only
// during the call (it may point into badger's memory-mapped value log):
// copy what you keep, or append the record to the reply buffer from inside
// fn. An error from fn ends the scan and is returned, except ErrStopScan
// which ends it cleanly.
func (s *Store) ScanBatches(group, fromBaseOffset uint64, fn func(baseOffset uint64, batch []byte) error) error {
	return s.scan(kindPrefix(group, kindBatch), u64Key(group, kindBatch, fromBaseOffset), func(key, v []byte) error {
		return fn(keyU64(key), v)
	})
}

// FindBatch returns the base offset of the batch of group that holds offset:
// the greatest base offset <= offset. ok is false when every stored batch
// starts above offset or the group has none. It does not check that offset
// is below the batch's end (base + message_count).
func (s *Store) FindBatch(group, offset uint64) (baseOffset uint64, ok bool, err error) {
	prefix := kindPrefix(group, kindBatch)
	err = s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix, Reverse: true})
		defer it.Close()
		// A reverse Seek lands on the greatest key <= the target.
		it.Seek(u64Key(group, kindBatch, offset))
		if it.Valid() {
			baseOffset, ok = keyU64(it.Item().Key()), true
		}
		return nil
	})
	if err != nil {
		return 0, false, fmt.Errorf("storage: find batch group %d offset %d: %w", group, offset, err)
	}
	return baseOffset, ok, nil
}

// ReadBatch returns a copy of the batch of group stored at baseOffset, or
// an error wrapping ErrNotFound.
func (s *Store) ReadBatch(group, baseOffset uint64) ([]byte, error) {
	b, ok, err := s.get(u64Key(group, kindBatch, baseOffset))
	if err != nil {
		return nil, fmt.Errorf("storage: read batch group %d at %d: %w", group, baseOffset, err)
	}
	if !ok {
		return nil, fmt.Errorf("storage: batch group %d at %d: %w", group, baseOffset, ErrNotFound)
	}
	return b, nil
}

// DeleteBatchesBelow deletes every batch of group whose base offset is <
// offset (retention, segment deletion, TruncatePartition). A batch that
// straddles offset is kept whole. Not synced: the deletion is idempotent and
// the metadata op behind it is replayed after a power loss.
func (s *Store) DeleteBatchesBelow(group, offset uint64) error {
	prefix := kindPrefix(group, kindBatch)
	if err := s.deleteRange(prefix, prefix, u64Key(group, kindBatch, offset), false); err != nil {
		return fmt.Errorf("storage: delete batches group %d below %d: %w", group, offset, err)
	}
	return nil
}

// DeletePartition deletes everything group owns: batches, consumer offsets,
// journal, VSR state and snapshot (topic or partition deletion, purge). It
// is synced, so a deleted partition does not come back after a power loss.
func (s *Store) DeletePartition(group uint64) error {
	s.seqMu.Lock()
	delete(s.seqs, group)
	s.seqMu.Unlock()
	prefix := groupPrefix(group)
	if err := s.deleteRange(prefix, prefix, nil, true); err != nil {
		return fmt.Errorf("storage: delete group %d: %w", group, err)
	}
	return nil
}
