package storage

import (
	"fmt"
	"os"

	"iggynode/wire"
)

// BatchSource returns the stored batch of group at baseOffset as a
// wire.SpliceSource: its file, position and length, read (or mapped, a
// wire.MappableSource: batchmap.go) only when the poll reply that carries
// it is written (plane/client does it in the connection's writer). The
// source opens the file itself, so it holds no handle of the store's
// cache while it waits for the write; a file deleted once it is open
// (retention) is still read whole, and one that left the index before
// (deleted, or the index forgotten) fails the write, and the connection
// with it: a purged partition, or a topic deleted and created again,
// writes new files under the same names, whose bytes a reply built
// before must not carry. Not for encrypted logs: their records are
// opened in memory.
func (s *Store) BatchSource(group, baseOffset uint64) (wire.SpliceSource, error) {
	g, bf, e, err := s.lockedBatch(group, baseOffset)
	if err != nil {
		return nil, err
	}
	defer g.mu.Unlock()
	return &fileRange{path: bf.path, entry: e, cache: &s.files, bf: bf}, nil
}

// fileRange is one stored batch: its index entry's bytes of the file at
// path; or, part set, a run of them (Range). bf is the file in the index
// when the source was made, whose mapping Map uses (batchmap.go).
type fileRange struct {
	path  string
	entry batchEntry
	part  bool
	cache *fileCache
	bf    *batchFile
}

// Range is the source of the batch's bytes [from, to): a slice's frames,
// which a poll serves from the file after a header it built itself
// (partition.Log, evicted batches with a frame table).
func (r *fileRange) Range(from, to int) wire.SpliceSource {
	if from < 0 || to < from || int64(to) > r.entry.length {
		panic(fmt.Sprintf("storage: range [%d, %d) of a %d-byte batch", from, to, r.entry.length))
	}
	return &fileRange{path: r.path, entry: batchEntry{base: r.entry.base, pos: r.entry.pos + int64(from), length: int64(to - from)}, part: true, cache: r.cache, bf: r.bf}
}

func (r *fileRange) Len() int { return int(r.entry.length) }

// AppendTo reads the range into dst and checks a whole batch against the
// index (a part has no header to check).
func (r *fileRange) AppendTo(dst []byte) ([]byte, error) {
	f, err := os.Open(r.path)
	if err != nil {
		return dst, fmt.Errorf("storage: %w", err)
	}
	defer f.Close()
	// Checked after the open: the store forgets a file before it deletes
	// it, so a file not yet forgotten now was not deleted before the open,
	// and f is the source's own file (not a new one under its name).
	if r.cache != nil && r.cache.isRetired(r.bf) {
		return dst, fmt.Errorf("%w: %s", errRetired, r.path)
	}
	readAt := func(p []byte, pos int64) error {
		if _, err := f.ReadAt(p, pos); err != nil {
			return fmt.Errorf("storage: read %s at %d: %w", r.path, pos, err)
		}
		return nil
	}
	if r.part {
		return appendRead(dst, r.entry, readAt)
	}
	return appendEntry(dst, r.entry, r.path, readAt)
}
