package storage

import (
	"container/list"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"iggynode/wire"
)

// Batch files (doc.go, "Batch files"): each partition group's stamped
// batches live in append-only files <store>/partitions/<group, 16 hex
// digits>/<first base offset, 20 digits>.log, each the plain concatenation
// of its batches in ascending offset order (replica-plane.md 13.3 item 1).
const (
	partitionsDirName = "partitions"
	batchFileExt      = ".log"
	batchFileDigits   = 20
	// deletedDirSuffix marks a group directory renamed away by
	// DeletePartition; Open removes any left by a crash.
	deletedDirSuffix = ".deleted"
	// scanChunkBytes is how much ScanBatches reads per pread when batches
	// are small (a larger batch is read whole).
	scanChunkBytes = 1 << 20
)

// batchEntry locates one stored batch inside its file.
type batchEntry struct {
	base   uint64
	pos    int64
	length int64
}

// batchFile is one <base>.log file. path, size and entries belong to the
// owning groupLog (its mutex); f, refs, elem, m, mapElem and retired
// belong to fileCache (its mutex). A file in a group's list always holds
// at least one batch.
type batchFile struct {
	path    string
	size    int64
	entries []batchEntry // ascending base; contiguous from position 0

	f    *os.File
	refs int
	elem *list.Element

	m       *fileMap // batchmap.go
	mapElem *list.Element
	retired bool // forgotten: out of the index for good
}

func (bf *batchFile) firstBase() uint64 { return bf.entries[0].base }
func (bf *batchFile) lastBase() uint64  { return bf.entries[len(bf.entries)-1].base }

// groupLog is the in-memory index of one group's batch files, built on
// first use by walking them (loadGroup). The partition actor is the only
// writer of its group; appending serializes the calls that change the
// files (appends and deletions), taken before mu. mu guards the index and
// is held only between syscalls that move data: an append lets go of it
// around its write and its fsync, so reads of stored batches (a cold
// poll in the partition actor, a scan) never wait for a write or a sync
// (DESIGN.md: never hold an actor on a sync).
type groupLog struct {
	appending sync.Mutex
	mu        sync.Mutex
	group     uint64
	dir       string
	loaded    bool
	files     []*batchFile // ascending first base; batches ascend across files
	// floor is the first retained offset: batches below it are deleted
	// (DeleteBatchesBelow) even while a file still holds them.
	floor uint64

	unsynced       []*batchFile // written since their last fsync
	dirUnsynced    bool         // a file was created or removed since the last directory fsync
	parentUnsynced bool         // the group directory itself may be new
}

// groupLog returns the index of group, creating an unloaded one.
func (s *Store) groupLog(group uint64) *groupLog {
	s.partsMu.Lock()
	defer s.partsMu.Unlock()
	g := s.parts[group]
	if g == nil {
		g = &groupLog{group: group, dir: filepath.Join(s.partsDir, fmt.Sprintf("%016x", group))}
		s.parts[group] = g
	}
	return g
}

// lockedGroup returns group's index locked and loaded; the caller unlocks.
func (s *Store) lockedGroup(group uint64) (*groupLog, error) {
	g := s.groupLog(group)
	g.mu.Lock()
	if err := s.loadGroup(g); err != nil {
		g.mu.Unlock()
		return nil, err
	}
	return g, nil
}

// changingGroup is lockedGroup for a call that changes the group's files:
// appending is held as well, and the caller unlocks both (mu first).
func (s *Store) changingGroup(group uint64) (*groupLog, error) {
	g := s.groupLog(group)
	g.appending.Lock()
	g.mu.Lock()
	if err := s.loadGroup(g); err != nil {
		g.mu.Unlock()
		g.appending.Unlock()
		return nil, err
	}
	return g, nil
}

// unlockedFor runs fn, a syscall that moves data (a write, an fsync),
// with g.mu released: the caller holds g.appending, so nothing else
// changes the files meanwhile, and readers go on with the index as it
// was (but not while the index is forgotten).
func (g *groupLog) unlockedFor(fn func() error) error {
	if !g.loaded {
		// A failed update forgot the index (invalidate): a reader now
		// would rebuild it beside this call.
		return fn()
	}
	g.mu.Unlock()
	defer g.mu.Lock()
	return fn()
}

func batchFileName(base uint64) string {
	return fmt.Sprintf("%0*d%s", batchFileDigits, base, batchFileExt)
}

// parseBatchFileName returns the base offset a file is named after; other
// names (not 20 digits + .log) are not batch files.
func parseBatchFileName(name string) (uint64, bool) {
	digits, ok := strings.CutSuffix(name, batchFileExt)
	if !ok || len(digits) != batchFileDigits {
		return 0, false
	}
	base, err := strconv.ParseUint(digits, 10, 64)
	return base, err == nil
}

// loadGroup builds g's index from its files, applying the recovery rule
// (doc.go, "Recovery"): the log is the longest prefix of plausible records;
// the first implausible one and everything after it is cut away.
func (s *Store) loadGroup(g *groupLog) error {
	if g.loaded {
		return nil
	}
	floor, err := s.loadFloor(g.group)
	if err != nil {
		return err
	}
	dirents, err := os.ReadDir(g.dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("storage: group %d batch files: %w", g.group, err)
	}
	type named struct {
		base uint64
		path string
	}
	var names []named
	for _, d := range dirents {
		if base, ok := parseBatchFileName(d.Name()); ok && d.Type().IsRegular() {
			names = append(names, named{base, filepath.Join(g.dir, d.Name())})
		}
	}
	slices.SortFunc(names, func(a, b named) int {
		if a.base < b.base {
			return -1
		}
		if a.base > b.base {
			return 1
		}
		return 0
	})
	var files []*batchFile
	var prev uint64
	havePrev, torn := false, false
	for _, n := range names {
		if torn {
			s.opts.Logger.Warn("storage: removing batch file after a torn record", "group", g.group, "file", n.path)
			if err := removeIfExists(n.path); err != nil {
				return err
			}
			continue
		}
		bf, tornHere, err := s.walkBatchFile(g.group, n.path, n.base, prev, havePrev)
		if err != nil {
			return err
		}
		torn = tornHere
		if len(bf.entries) == 0 {
			if err := removeIfExists(n.path); err != nil {
				return err
			}
			continue
		}
		files = append(files, bf)
		prev, havePrev = bf.lastBase(), true
	}
	g.files, g.floor, g.loaded = files, floor, true
	// Nothing read from disk is known to be fsynced (the process may have
	// been killed before a sync), so the first synced append syncs it all.
	g.unsynced = slices.Clone(files)
	g.dirUnsynced, g.parentUnsynced = true, true
	// A deletion interrupted by a crash left whole files below the floor.
	return s.dropFilesBelow(g, floor)
}

// walkBatchFile indexes one file by reading each record's 256-byte header
// (base_offset at 8, batch_length at 32), so boot reads O(batches), not
// O(bytes). A record is plausible when its header and its batch_length
// bytes lie inside the file, batch_length >= 256, and its base_offset is
// above the previous record's (the first record of a file: equal to the
// file's name). At the first implausible record the file is truncated there
// and torn is true.
func (s *Store) walkBatchFile(group uint64, path string, nameBase, prev uint64, havePrev bool) (*batchFile, bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false, fmt.Errorf("storage: group %d: %w", group, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, false, fmt.Errorf("storage: group %d: %w", group, err)
	}
	bf := &batchFile{path: path}
	size := st.Size()
	var hdr [wire.BatchHeaderSize]byte
	pos, why := int64(0), ""
	for pos < size && why == "" {
		if size-pos < wire.BatchHeaderSize {
			why = fmt.Sprintf("%d bytes left, less than a batch header", size-pos)
			break
		}
		if _, err := f.ReadAt(hdr[:], pos); err != nil {
			return nil, false, fmt.Errorf("storage: group %d: read %s at %d: %w", group, path, pos, err)
		}
		b := wire.Batch(hdr[:])
		base, length := b.BaseOffset(), b.Length()
		switch {
		case length < wire.BatchHeaderSize:
			why = fmt.Sprintf("batch_length %d", length)
		case length > uint64(size-pos):
			why = fmt.Sprintf("batch_length %d, %d bytes left", length, size-pos)
		case len(bf.entries) == 0 && base != nameBase:
			why = fmt.Sprintf("first base_offset %d in a file named %d", base, nameBase)
		case havePrev && base <= prev:
			why = fmt.Sprintf("base_offset %d after %d", base, prev)
		default:
			bf.entries = append(bf.entries, batchEntry{base: base, pos: pos, length: int64(length)})
			prev, havePrev = base, true
			pos += int64(length)
		}
	}
	bf.size = pos
	if pos == size {
		return bf, false, nil
	}
	s.opts.Logger.Warn("storage: truncating a torn batch record", "group", group, "file", path,
		"at", pos, "size", size, "reason", why)
	if err := os.Truncate(path, pos); err != nil {
		return nil, false, fmt.Errorf("storage: group %d: truncate torn tail of %s: %w", group, path, err)
	}
	return bf, true, nil
}

func removeIfExists(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("storage: %w", err)
	}
	return nil
}

// locate returns the first batch with base >= offset, ignoring the floor.
func (g *groupLog) locate(offset uint64) (fi, ei int, ok bool) {
	fi = sort.Search(len(g.files), func(i int) bool { return g.files[i].lastBase() >= offset })
	if fi == len(g.files) {
		return 0, 0, false
	}
	es := g.files[fi].entries
	return fi, sort.Search(len(es), func(i int) bool { return es[i].base >= offset }), true
}

// find returns the visible batch with the greatest base <= offset.
func (g *groupLog) find(offset uint64) (uint64, bool) {
	fi := sort.Search(len(g.files), func(i int) bool { return g.files[i].firstBase() > offset }) - 1
	if fi < 0 {
		return 0, false
	}
	es := g.files[fi].entries
	ei := sort.Search(len(es), func(i int) bool { return es[i].base > offset }) - 1
	if base := es[ei].base; base >= g.floor {
		return base, true
	}
	return 0, false
}

func (g *groupLog) markUnsynced(bf *batchFile) {
	if !slices.Contains(g.unsynced, bf) {
		g.unsynced = append(g.unsynced, bf)
	}
}

// removeFile closes and deletes one file of g (not synced).
func (s *Store) removeFile(g *groupLog, bf *batchFile) error {
	s.files.forget(bf)
	g.unsynced = slices.DeleteFunc(g.unsynced, func(x *batchFile) bool { return x == bf })
	g.dirUnsynced = true
	return removeIfExists(bf.path)
}

// dropFilesBelow deletes the leading files all of whose batches are below
// offset; a file holding batches on both sides stays (the floor hides its
// lower ones).
func (s *Store) dropFilesBelow(g *groupLog, offset uint64) error {
	n := 0
	for n < len(g.files) && g.files[n].lastBase() < offset {
		if err := s.removeFile(g, g.files[n]); err != nil {
			g.files = g.files[n:]
			return err
		}
		n++
	}
	g.files = g.files[n:]
	return nil
}

// truncateFrom drops every batch with base >= offset: a re-append replaces
// the suffix it lands in, as a log does (the partition rolls its journal
// back after a failed append or a view change, partition.RollbackJournal).
func (s *Store) truncateFrom(g *groupLog, offset uint64) error {
	fi, ei, ok := g.locate(offset)
	if !ok {
		return nil
	}
	for _, bf := range slices.Backward(g.files[fi+1:]) {
		if err := s.removeFile(g, bf); err != nil {
			return err
		}
	}
	bf := g.files[fi]
	g.files = g.files[:fi+1]
	if ei == 0 {
		g.files = g.files[:fi]
		return s.removeFile(g, bf)
	}
	pos := bf.entries[ei].pos
	f, err := s.files.acquire(bf)
	if err != nil {
		return err
	}
	err = f.Truncate(pos)
	s.files.release(bf)
	if err != nil {
		return fmt.Errorf("storage: truncate %s at %d: %w", bf.path, pos, err)
	}
	bf.entries, bf.size = bf.entries[:ei], pos
	g.markUnsynced(bf)
	return nil
}

// createFile starts a new file named after base, to follow g's last one;
// the caller lists it in g.files once it holds a batch (appendRun).
func (s *Store) createFile(g *groupLog, base uint64) (*batchFile, error) {
	if err := os.Mkdir(g.dir, dirMode); err == nil {
		g.parentUnsynced = true
	} else if !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("storage: %w", err)
	}
	bf := &batchFile{path: filepath.Join(g.dir, batchFileName(base))}
	// O_TRUNC: a file of that name that the index does not hold is a
	// leftover no batch of which is retained.
	f, err := os.OpenFile(bf.path, os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_APPEND, fileMode)
	if err != nil {
		return nil, fmt.Errorf("storage: %w", err)
	}
	s.files.add(bf, f)
	g.dirUnsynced = true
	return bf, nil
}

// invalidate forgets g's index after a failed update, so the next call
// rebuilds it from the files (and the recovery rule) instead of trusting
// a state that may disagree with the disk.
func (s *Store) invalidate(g *groupLog) {
	for _, bf := range g.files {
		s.files.forget(bf)
	}
	g.files, g.unsynced, g.loaded = nil, nil, false
}

// syncGroup fsyncs every file of g written since its last fsync (earlier
// files first, so a synced batch never follows an unsynced one), then the
// group directory and the partitions directory when entries changed. A
// failed fsync is sticky for the whole store (ErrSyncFailed). The caller
// holds g.appending and g.mu; each fsync runs with g.mu released.
func (s *Store) syncGroup(g *groupLog) error {
	if err := s.syncer.err(); err != nil {
		return err
	}
	for len(g.unsynced) > 0 {
		bf := g.unsynced[0]
		f, err := s.files.acquire(bf)
		if err == nil {
			err = g.unlockedFor(func() error {
				if s.beforeSync != nil {
					s.beforeSync(g.group)
				}
				return f.Sync()
			})
			s.files.release(bf)
		}
		if err != nil {
			return s.syncer.fail(err)
		}
		g.unsynced = g.unsynced[1:]
	}
	if g.dirUnsynced {
		if err := g.unlockedFor(func() error { return fsyncPath(g.dir) }); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return s.syncer.fail(err)
		}
		g.dirUnsynced = false
	}
	if g.parentUnsynced {
		if err := g.unlockedFor(func() error { return fsyncPath(s.partsDir) }); err != nil {
			return s.syncer.fail(err)
		}
		g.parentUnsynced = false
	}
	return nil
}

// removeGroupFiles deletes g's directory: renamed away first (one atomic
// step, made durable before the caller deletes the group's keys), then
// removed. A crash in between leaves a *.deleted directory that Open
// removes.
func (s *Store) removeGroupFiles(g *groupLog) error {
	for _, bf := range g.files {
		s.files.forget(bf)
	}
	g.files, g.unsynced, g.loaded = nil, nil, false
	gone := g.dir + deletedDirSuffix
	if err := os.RemoveAll(gone); err != nil {
		return err
	}
	if err := os.Rename(g.dir, gone); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	if err := fsyncPath(s.partsDir); err != nil {
		return s.syncer.fail(err)
	}
	return os.RemoveAll(gone)
}

// openPartitionsDir creates <store>/partitions (fsyncing the store
// directory when it is new) and removes directories a crashed
// DeletePartition left behind.
func openPartitionsDir(storeDir string) (string, error) {
	dir := filepath.Join(storeDir, partitionsDirName)
	if err := os.Mkdir(dir, dirMode); err == nil {
		if err := fsyncPath(storeDir); err != nil {
			return "", err
		}
	} else if !errors.Is(err, fs.ErrExist) {
		return "", err
	}
	dirents, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	for _, d := range dirents {
		if strings.HasSuffix(d.Name(), deletedDirSuffix) {
			if err := os.RemoveAll(filepath.Join(dir, d.Name())); err != nil {
				return "", err
			}
		}
	}
	return dir, nil
}

// loadFloor reads group's first retained offset (0 when none is stored).
func (s *Store) loadFloor(group uint64) (uint64, error) {
	v, ok, err := s.get(kindPrefix(group, kindFloor))
	if err != nil || !ok {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("%w: group %d batch floor of %d bytes", ErrCorrupt, group, len(v))
	}
	return binary.LittleEndian.Uint64(v), nil
}

func (s *Store) saveFloor(group, floor uint64, sync bool) error {
	return s.set(kindPrefix(group, kindFloor), binary.LittleEndian.AppendUint64(nil, floor), sync)
}

// closeBatchFiles fsyncs what was written since the last fsync and closes
// every handle (Close).
func (s *Store) closeBatchFiles() error {
	s.partsMu.Lock()
	groups := make([]*groupLog, 0, len(s.parts))
	for _, g := range s.parts {
		groups = append(groups, g)
	}
	s.partsMu.Unlock()
	var errs []error
	for _, g := range groups {
		g.appending.Lock()
		g.mu.Lock()
		if g.loaded {
			errs = append(errs, s.syncGroup(g))
		}
		for _, bf := range g.files {
			s.files.forget(bf)
		}
		g.files, g.unsynced, g.loaded = nil, nil, false
		g.mu.Unlock()
		g.appending.Unlock()
	}
	return errors.Join(errs...)
}

// fileCache bounds the open batch-file handles across groups: beyond max,
// the least recently used handle that no call is using is closed (and
// reopened on its next use). A handle in use is never closed, so the bound
// can be exceeded while more than max files are in use at once. The
// files' mappings (batchmap.go) have a second LRU under the same bound.
type fileCache struct {
	mu        sync.Mutex
	max       int
	fileBytes int64     // Options.BatchFileBytes, for mapping windows
	lru       list.List // of *batchFile with an open handle; front = most recent
	maps      list.List // of *batchFile with a mapping; front = most recent
}

// acquire returns bf's handle (opening it if needed) and pins it until
// release. The caller holds bf's group mutex.
func (c *fileCache) acquire(bf *batchFile) (*os.File, error) {
	c.mu.Lock()
	if bf.f != nil {
		bf.refs++
		c.lru.MoveToFront(bf.elem)
		c.mu.Unlock()
		return bf.f, nil
	}
	c.mu.Unlock()
	// O_APPEND: every write lands at the current end, whatever pread did.
	f, err := os.OpenFile(bf.path, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return nil, fmt.Errorf("storage: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	bf.f, bf.refs, bf.elem = f, 1, c.lru.PushFront(bf)
	c.evictLocked()
	return f, nil
}

func (c *fileCache) release(bf *batchFile) {
	c.mu.Lock()
	defer c.mu.Unlock()
	bf.refs--
	c.evictLocked()
}

// add registers the handle of a file just created (not pinned).
func (c *fileCache) add(bf *batchFile, f *os.File) {
	c.mu.Lock()
	defer c.mu.Unlock()
	bf.f, bf.refs, bf.elem = f, 0, c.lru.PushFront(bf)
	c.evictLocked()
}

// forget closes bf's handle and drops its mapping for good (the file is
// being deleted or the index dropped). The caller holds bf's group mutex,
// so the handle is not pinned; a mapping a write still uses is unmapped
// when it is done.
func (c *fileCache) forget(bf *batchFile) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closeLocked(bf)
	c.unmapLocked(bf)
	bf.retired = true
}

func (c *fileCache) closeLocked(bf *batchFile) {
	if bf.f == nil {
		return
	}
	c.lru.Remove(bf.elem)
	// Close of a regular file does not flush anything: durability is
	// syncGroup's, and the written bytes are in the page cache already.
	_ = bf.f.Close()
	bf.f, bf.elem = nil, nil
}

func (c *fileCache) evictLocked() {
	for e := c.lru.Back(); e != nil && c.lru.Len() > c.max; {
		bf := e.Value.(*batchFile)
		e = e.Prev()
		if bf.refs == 0 {
			c.closeLocked(bf)
		}
	}
}

func (c *fileCache) openCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}
