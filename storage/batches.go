package storage

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"iggynode/wire"
)

// AppendBatch stores a stamped batch (wire/batch.go: 256-byte header and
// frames) verbatim at the end of group's batch log (doc.go, "Batch files"):
// one write() of the whole slice to the current file, no copy. baseOffset
// must equal the header's base_offset and batch_length the slice length, so
// the index never disagrees with the bytes. Batches are appended in
// ascending base offset: an append at or below the last stored base offset
// first drops every stored batch from baseOffset on (a rolled-back journal
// suffix being replaced, partition.RollbackJournal), and one below the
// retained floor (DeleteBatchesBelow) lowers the floor to it. With sync (the
// topic's enforce_fsync) the group's files are fsynced before the call
// returns; without it the batch is in the page cache, so it survives a
// process crash, not a power loss (doc.go, "Durability"). The batch may be
// reused once the call returns.
func (s *Store) AppendBatch(group, baseOffset uint64, batch []byte, sync bool) error {
	if err := checkAppended(baseOffset, batch); err != nil {
		return err
	}
	one := [1][]byte{batch}
	_, err := s.AppendBatches(group, one[:], sync)
	return err
}

// AppendBatches stores batches of one group, each as AppendBatch would, in
// one step: the batches that land in the same file go out in one writev,
// and with sync one fsync covers them all (the group commit of a partition
// actor's turn, actors/partition.go). It returns how many batches, from
// the first, were stored (and, with sync, synced): on an error the rest
// were not. Batches that would cut into the hard reserve are refused
// from the first that does, so a group too large for the room left still
// stores what fits. The batches may be reused once it returns.
func (s *Store) AppendBatches(group uint64, batches [][]byte, sync bool) (int, error) {
	for _, batch := range batches {
		if len(batch) < wire.BatchHeaderSize {
			return 0, fmt.Errorf("storage: batch of %d bytes, shorter than its header", len(batch))
		}
		if err := checkAppended(wire.Batch(batch).BaseOffset(), batch); err != nil {
			return 0, err
		}
	}
	if len(batches) == 0 {
		return 0, nil
	}
	// The hard reserve is badger's (space.go): a batch that would cut into
	// it is refused before a byte of it is written.
	admitted, total := 0, int64(0)
	var refused error
	for _, b := range batches {
		if err := s.space.admitBatch(total + int64(len(b))); err != nil {
			refused = err
			break
		}
		total += int64(len(b))
		admitted++
	}
	wrap := func(i int, err error) error {
		return fmt.Errorf("storage: append batch group %d at %d: %w", group, wire.Batch(batches[i]).BaseOffset(), err)
	}
	if admitted == 0 {
		return 0, wrap(0, refused)
	}
	g, err := s.changingGroup(group)
	if err != nil {
		return 0, wrap(0, err)
	}
	defer g.appending.Unlock()
	defer g.mu.Unlock() // appendRun and syncGroup let go of it around each write and fsync
	stored, failed := 0, refused
	for stored < admitted {
		n, err := s.appendRun(g, batches[stored:admitted], sync)
		for _, b := range batches[stored : stored+n] {
			s.space.charge(int64(len(b)))
		}
		stored += n
		if err != nil {
			if IsNoSpace(err) {
				s.space.sawNoSpace()
			}
			failed = err
			break
		}
	}
	if sync && stored > 0 {
		if !g.loaded {
			// A later run's failure forgot the index and with it which
			// files the earlier runs left unsynced: none is known durable.
			return 0, wrap(0, failed)
		}
		// Before any is reported stored: a caller acknowledges what this
		// returns, also when a later batch failed.
		if err := s.syncGroup(g); err != nil {
			return 0, wrap(0, err)
		}
	}
	if stored < len(batches) {
		return stored, wrap(stored, failed)
	}
	return stored, nil
}

// checkAppended is AppendBatch's rule for the header: base_offset and
// batch_length must be what the index records.
func checkAppended(baseOffset uint64, batch []byte) error {
	if len(batch) < wire.BatchHeaderSize {
		return fmt.Errorf("storage: batch at %d: %d bytes, shorter than its header", baseOffset, len(batch))
	}
	b := wire.Batch(batch)
	if b.BaseOffset() != baseOffset || b.Length() != uint64(len(batch)) {
		return fmt.Errorf("storage: batch at %d: header says base_offset %d, batch_length %d of %d bytes",
			baseOffset, b.BaseOffset(), b.Length(), len(batch))
	}
	return nil
}

// appendRun writes the longest prefix of batches that goes to one file:
// the first batch after any truncation or floor change it implies, then
// each following batch with a higher base offset while the file is short
// of BatchFileBytes (the rule tailFor applies batch by batch). It returns
// how many it wrote; a failed write stores none of them.
func (s *Store) appendRun(g *groupLog, batches [][]byte, sync bool) (int, error) {
	base := wire.Batch(batches[0]).BaseOffset()
	if n := len(g.files); n > 0 && base <= g.files[n-1].lastBase() {
		if err := s.truncateFrom(g, base); err != nil {
			s.invalidate(g)
			return 0, err
		}
	}
	if base < g.floor {
		// Every batch left is below base (the suffix from base is gone), so
		// lowering the floor to base reveals none of the deleted ones.
		if err := s.saveFloor(g.group, base, sync); err != nil {
			return 0, err
		}
		g.floor = base
	}
	tail, fresh, err := s.tailFor(g, base)
	if err != nil {
		return 0, err
	}
	run, size, prev := 1, tail.size+int64(len(batches[0])), base
	for run < len(batches) && size < s.opts.BatchFileBytes {
		next := wire.Batch(batches[run]).BaseOffset()
		if next <= prev {
			break // replaces a suffix: the next run truncates first
		}
		size += int64(len(batches[run]))
		prev = next
		run++
	}
	f, err := s.files.acquire(tail)
	if err != nil {
		s.dropFresh(g, tail, fresh)
		return 0, err
	}
	// Readers see the index as it was until the write has returned: a
	// fresh file joins it with its first batch.
	werr := g.unlockedFor(func() error { return writeAll(f, batches[:run]) })
	if werr != nil {
		// Cut a partial write so the next append starts on a record
		// boundary; if even that fails, rebuild the index from the disk.
		terr := f.Truncate(tail.size)
		s.files.release(tail)
		if terr != nil {
			s.files.forget(tail) // invalidate forgets the listed files; a fresh one is not yet
			s.invalidate(g)
		} else {
			s.dropFresh(g, tail, fresh)
		}
		return 0, werr
	}
	s.files.release(tail)
	if fresh {
		g.files = append(g.files, tail)
	}
	for _, batch := range batches[:run] {
		tail.entries = append(tail.entries, batchEntry{base: wire.Batch(batch).BaseOffset(), pos: tail.size, length: int64(len(batch))})
		tail.size += int64(len(batch))
	}
	g.markUnsynced(tail)
	return run, nil
}

// tailFor returns the file the batch at base goes to: the current one, or
// a new one named after base once the current one holds BatchFileBytes
// (fresh: not in g.files until its first batch is written, so the rule
// that every listed file holds a batch holds while readers look).
func (s *Store) tailFor(g *groupLog, base uint64) (bf *batchFile, fresh bool, err error) {
	if n := len(g.files); n > 0 && g.files[n-1].size < s.opts.BatchFileBytes {
		return g.files[n-1], false, nil
	}
	bf, err = s.createFile(g, base)
	return bf, err == nil, err
}

// dropFresh removes a file just created for a batch whose write failed.
func (s *Store) dropFresh(g *groupLog, bf *batchFile, fresh bool) {
	if !fresh {
		return
	}
	if err := s.removeFile(g, bf); err != nil {
		s.invalidate(g)
	}
}

// ScanBatches calls fn for every batch of group whose base offset is >=
// fromBaseOffset, in ascending offset order. To read from an offset inside a
// batch, pass that batch's base offset (FindBatch). Batches are read in
// chunks of up to 1 MiB (a larger batch whole) into a buffer reused for the
// next chunk: batch is valid only during the call, so copy what you keep,
// or append the record to the reply buffer from inside fn. fn runs without
// the group's lock held (it may call the store); an append racing with the
// scan may or may not be seen. An error from fn ends the scan and is
// returned, except ErrStopScan which ends it cleanly.
func (s *Store) ScanBatches(group, fromBaseOffset uint64, fn func(baseOffset uint64, batch []byte) error) error {
	var buf []byte
	var recs []batchEntry // positions relative to buf
	cursor := fromBaseOffset
	for {
		var err error
		buf, recs, err = s.readChunk(group, cursor, buf, recs[:0])
		if err != nil {
			return fmt.Errorf("storage: scan batches group %d from %d: %w", group, cursor, err)
		}
		if len(recs) == 0 {
			return nil
		}
		for _, r := range recs {
			if err := fn(r.base, buf[r.pos:r.pos+r.length:r.pos+r.length]); err != nil {
				if errors.Is(err, ErrStopScan) {
					return nil
				}
				return err
			}
		}
		last := recs[len(recs)-1].base
		if last == math.MaxUint64 {
			return nil
		}
		cursor = last + 1
	}
}

// readChunk reads, under the group's lock, the visible batches from the
// first one at or above from, as many whole consecutive records of one
// file as fit in scanChunkBytes (at least one), into buf.
func (s *Store) readChunk(group, from uint64, buf []byte, recs []batchEntry) ([]byte, []batchEntry, error) {
	g, err := s.lockedGroup(group)
	if err != nil {
		return buf, recs, err
	}
	defer g.mu.Unlock()
	fi, ei, ok := g.locate(max(from, g.floor))
	if !ok {
		return buf, recs, nil
	}
	bf := g.files[fi]
	es := bf.entries[ei:]
	start, end := es[0].pos, es[0].pos+es[0].length
	n := 1
	for n < len(es) && es[n].pos+es[n].length-start <= scanChunkBytes {
		end = es[n].pos + es[n].length
		n++
	}
	if int64(cap(buf)) < end-start {
		buf = make([]byte, max(end-start, scanChunkBytes))
	}
	buf = buf[:end-start]
	if err := s.readAt(bf, buf, start); err != nil {
		return buf, recs, err
	}
	for _, e := range es[:n] {
		r := batchEntry{base: e.base, pos: e.pos - start, length: e.length}
		if err := checkRecord(buf[r.pos:r.pos+r.length], e, bf.path); err != nil {
			return buf, recs, err
		}
		recs = append(recs, r)
	}
	return buf, recs, nil
}

// readAt preads len(p) bytes of bf at pos.
func (s *Store) readAt(bf *batchFile, p []byte, pos int64) error {
	f, err := s.files.acquire(bf)
	if err != nil {
		return err
	}
	defer s.files.release(bf)
	if _, err := f.ReadAt(p, pos); err != nil {
		return fmt.Errorf("read %s at %d: %w", bf.path, pos, err)
	}
	return nil
}

// checkRecord verifies that the bytes read agree with the index (they can
// only differ if the file was changed behind the store's back).
func checkRecord(rec []byte, e batchEntry, path string) error {
	b := wire.Batch(rec)
	if b.BaseOffset() != e.base || b.Length() != uint64(e.length) {
		return fmt.Errorf("%w: %s at %d: header base_offset %d, batch_length %d; index %d, %d",
			ErrCorrupt, path, e.pos, b.BaseOffset(), b.Length(), e.base, e.length)
	}
	return nil
}

// FindBatch returns the base offset of the batch of group that holds offset:
// the greatest base offset <= offset. ok is false when every retained batch
// starts above offset or the group has none. It does not check that offset
// is below the batch's end (base + message_count).
func (s *Store) FindBatch(group, offset uint64) (baseOffset uint64, ok bool, err error) {
	g, err := s.lockedGroup(group)
	if err != nil {
		return 0, false, fmt.Errorf("storage: find batch group %d offset %d: %w", group, offset, err)
	}
	defer g.mu.Unlock()
	baseOffset, ok = g.find(offset)
	return baseOffset, ok, nil
}

// ReadBatch returns the batch of group stored at baseOffset, read with one
// pread into a new slice that the caller owns, or an error wrapping
// ErrNotFound.
func (s *Store) ReadBatch(group, baseOffset uint64) ([]byte, error) {
	return s.AppendBatchTo(nil, group, baseOffset)
}

// lockedBatch finds the stored batch of group at baseOffset: its file
// and index entry, with the group's mutex held (the caller unlocks it
// when err is nil).
func (s *Store) lockedBatch(group, baseOffset uint64) (*groupLog, *batchFile, batchEntry, error) {
	g, err := s.lockedGroup(group)
	if err != nil {
		return nil, nil, batchEntry{}, fmt.Errorf("storage: batch group %d at %d: %w", group, baseOffset, err)
	}
	fi, ei, ok := g.locate(baseOffset)
	if !ok || baseOffset < g.floor || g.files[fi].entries[ei].base != baseOffset {
		g.mu.Unlock()
		return nil, nil, batchEntry{}, fmt.Errorf("storage: batch group %d at %d: %w", group, baseOffset, ErrNotFound)
	}
	return g, g.files[fi], g.files[fi].entries[ei], nil
}

// AppendBatchTo appends the stored batch at baseOffset to dst and returns
// the extended slice, so a poll reply is read straight into the frame that
// carries it (no intermediate buffer). On error dst is returned unchanged.
func (s *Store) AppendBatchTo(dst []byte, group, baseOffset uint64) ([]byte, error) {
	g, bf, e, err := s.lockedBatch(group, baseOffset)
	if err != nil {
		return dst, err
	}
	defer g.mu.Unlock()
	out, err := appendEntry(dst, e, bf.path, func(p []byte, pos int64) error { return s.readAt(bf, p, pos) })
	if err != nil {
		return dst, fmt.Errorf("storage: read batch group %d at %d: %w", group, baseOffset, err)
	}
	return out, nil
}

// appendEntry appends the bytes of index entry e of the file at path,
// read by readAt, to dst and checks them against e (checkRecord). On
// error dst is returned unchanged.
func appendEntry(dst []byte, e batchEntry, path string, readAt func(p []byte, pos int64) error) ([]byte, error) {
	at := len(dst)
	dst, err := appendRead(dst, e, readAt)
	if err != nil {
		return dst, err
	}
	if err := checkRecord(dst[at:], e, path); err != nil {
		return dst[:at], err
	}
	return dst, nil
}

// appendRead appends e's bytes, read with readAt, to dst.
func appendRead(dst []byte, e batchEntry, readAt func(p []byte, pos int64) error) ([]byte, error) {
	at := len(dst)
	dst = slices.Grow(dst, int(e.length))[:at+int(e.length)]
	if err := readAt(dst[at:], e.pos); err != nil {
		return dst[:at], err
	}
	return dst, nil
}

// DeleteBatchesBelow deletes every batch of group whose base offset is <
// offset (retention, segment deletion, TruncatePartition). A batch that
// straddles offset is kept whole. Files all of whose batches are below
// offset are deleted; in a file that also holds batches at or above it, the
// lower ones stay on disk but are gone for Scan, Find and Read: the group's
// floor (first retained offset) rises to offset and is stored in badger, so
// a restart honours it. Not synced: the deletion is idempotent and the
// metadata op behind it is replayed after a power loss.
func (s *Store) DeleteBatchesBelow(group, offset uint64) error {
	g, err := s.changingGroup(group)
	if err != nil {
		return fmt.Errorf("storage: delete batches group %d below %d: %w", group, offset, err)
	}
	defer g.appending.Unlock()
	defer g.mu.Unlock()
	if offset <= g.floor {
		return nil
	}
	// The floor first: a crash before the files go leaves whole files below
	// it, which the next load deletes.
	if err := s.saveFloor(group, offset, false); err != nil {
		return fmt.Errorf("storage: delete batches group %d below %d: %w", group, offset, err)
	}
	g.floor = offset
	if err := s.dropFilesBelow(g, offset); err != nil {
		return fmt.Errorf("storage: delete batches group %d below %d: %w", group, offset, err)
	}
	return nil
}

// DeletePartition deletes everything group owns: its batch files, consumer
// offsets, journal, VSR state, snapshot and batch floor (topic or partition
// deletion, purge). It is synced, so a deleted partition does not come back
// after a power loss: the files go first (their directory renamed away and
// the rename fsynced), then the keys, so no state can show old batches
// without their floor.
func (s *Store) DeletePartition(group uint64) error {
	s.seqMu.Lock()
	delete(s.seqs, group)
	s.seqMu.Unlock()
	g := s.groupLog(group)
	g.appending.Lock()
	defer g.appending.Unlock()
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := s.removeGroupFiles(g); err != nil {
		return fmt.Errorf("storage: delete group %d batch files: %w", group, err)
	}
	prefix := groupPrefix(group)
	if err := s.deleteRange(prefix, prefix, nil, true); err != nil {
		return fmt.Errorf("storage: delete group %d: %w", group, err)
	}
	return nil
}
