package storage

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"

	"golang.org/x/sys/unix"

	"iggynode/wire"
)

// Mapped batch files (doc.go, "Batch files"): a cold poll over plain TCP
// writes the stored batch from a read-only shared mapping of its file, so
// the bytes go from the page cache to the socket with the kernel's one
// copy, not read into a buffer first (docs/benchmarks.md, "Cold polls
// from mapped files"). Mappings are kept per file and reused poll after
// poll: mapping and unmapping per poll cost what the read saved (the
// unmap's TLB shootdown interrupts the other core too).
//
// A mapping covers mapWindow(end) bytes from the file's start, more than
// the file holds while it grows (pages past the end are never touched:
// only indexed batches are), and a batch past it maps the file again.
// The mapped files count against MaxOpenBatchFiles like the handles, in an
// LRU of their own; a mapping dropped (evicted, or its file deleted or
// forgotten) while a write still uses it is unmapped when that write
// releases it. Only system calls touch the mapped bytes, and the one
// check Go code makes (the batch header against the index) turns a fault
// into an error: a file cut under a mapping (a truncated suffix) makes
// the write fail with EFAULT, as a read of it would fail, instead of
// crashing the process.

// mapAlign rounds mapping windows up, so a file that grows is mapped again
// once per 64 MiB at most.
const mapAlign = 64 << 20

// errRetired: the batch file left the index (deleted, or the index was
// rebuilt) after the poll that carries it was built: neither its mapping
// nor its path may serve it any more (batchsource.go).
var errRetired = errors.New("storage: batch file left the index")

// fileMap is one mapping of a batch file. refs and dropped belong to the
// fileCache mutex.
type fileMap struct {
	data    []byte
	refs    int
	dropped bool
}

// mapWindow is the length to map for a batch ending at end: the whole
// file a group fills before it starts the next (BatchFileBytes), rounded
// up to mapAlign, or more when the batch ends past it.
func mapWindow(end, fileBytes int64) int64 {
	n := max(end, fileBytes)
	return (n + mapAlign - 1) / mapAlign * mapAlign
}

// mapped returns bf's mapping covering [0, end), mapping the file if it
// has none or only a shorter one, and pins it until unpin. Safe without
// the group's mutex: a file that left the index is never mapped again.
func (c *fileCache) mapped(bf *batchFile, end int64) (*fileMap, error) {
	c.mu.Lock()
	if m := bf.m; m != nil && int64(len(m.data)) >= end {
		m.refs++
		c.maps.MoveToFront(bf.mapElem)
		c.mu.Unlock()
		return m, nil
	}
	retired := bf.retired
	c.mu.Unlock()
	if retired {
		return nil, errRetired
	}
	data, err := mapFile(bf.path, mapWindow(end, c.fileBytes))
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case bf.retired:
		_ = unix.Munmap(data)
		return nil, errRetired
	case bf.m != nil && int64(len(bf.m.data)) >= end:
		// Another write mapped it meanwhile.
		_ = unix.Munmap(data)
	default:
		c.unmapLocked(bf)
		bf.m, bf.mapElem = &fileMap{data: data}, c.maps.PushFront(bf)
		c.evictMapsLocked()
	}
	bf.m.refs++
	return bf.m, nil
}

// isRetired reports whether bf left the index.
func (c *fileCache) isRetired(bf *batchFile) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bf.retired
}

// mapFile maps length bytes of the file at path, read-only and shared.
func mapFile(path string, length int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("storage: %w", err)
	}
	defer f.Close()
	data, err := unix.Mmap(int(f.Fd()), 0, int(length), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("storage: map %s: %w", path, err)
	}
	return data, nil
}

// unpin releases a mapping mapped returned; a dropped one is unmapped by
// its last user.
func (c *fileCache) unpin(m *fileMap) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m.refs--
	if m.dropped && m.refs == 0 {
		_ = unix.Munmap(m.data)
	}
}

// unmapLocked drops bf's mapping: unmapped now, or by its last user.
func (c *fileCache) unmapLocked(bf *batchFile) {
	m := bf.m
	if m == nil {
		return
	}
	c.maps.Remove(bf.mapElem)
	bf.m, bf.mapElem = nil, nil
	m.dropped = true
	if m.refs == 0 {
		_ = unix.Munmap(m.data)
	}
}

// evictMapsLocked drops the least recently used mappings beyond max.
func (c *fileCache) evictMapsLocked() {
	for c.maps.Len() > c.max {
		c.unmapLocked(c.maps.Back().Value.(*batchFile))
	}
}

func (c *fileCache) mappedCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.maps.Len()
}

// BatchFiles is what the store holds of its batch files: open handles and
// mappings (each at most Options.MaxOpenBatchFiles, beyond it only while
// in use).
type BatchFiles struct{ Open, Mapped int }

// BatchFiles reports the handles and mappings held now.
func (s *Store) BatchFiles() BatchFiles {
	s.files.mu.Lock()
	defer s.files.mu.Unlock()
	return BatchFiles{Open: s.files.lru.Len(), Mapped: s.files.maps.Len()}
}

// Map maps the range (wire.MappableSource) from its file's mapping. A
// whole batch is checked against the index first, as a read is.
func (r *fileRange) Map() ([]byte, func(), error) {
	if r.cache == nil {
		return nil, nil, errRetired
	}
	m, err := r.cache.mapped(r.bf, r.entry.pos+r.entry.length)
	if err != nil {
		return nil, nil, err
	}
	unpin := func() { r.cache.unpin(m) }
	b := m.data[r.entry.pos : r.entry.pos+r.entry.length : r.entry.pos+r.entry.length]
	if !r.part {
		if err := checkMapped(b, r.entry, r.path); err != nil {
			unpin()
			return nil, nil, err
		}
	}
	return b, unpin, nil
}

// checkMapped is checkRecord over a mapping, where a file cut below the
// header faults: the fault becomes an error, not a crash.
func checkMapped(b []byte, e batchEntry, path string) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %s at %d: %v", ErrCorrupt, path, e.pos, r)
		}
	}()
	return checkRecord(b, e, path)
}

var _ wire.MappableSource = (*fileRange)(nil)
