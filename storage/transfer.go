package storage

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// Staged state transfers (doc.go, "Staged transfers"; replica-plane.md
// 13.3 rule 5): a partition transfer writes each SEGMENT_LOG artifact it
// receives to <store>/transfer/<group, 16 hex digits>.<stage>/<frontier,
// 20 digits>.log.part, fsynced once complete, and the install renames the
// files into the group's batch directory as <frontier>.log. The artifact
// is a batch file verbatim (13.3 rule 1, batchfiles.go), so nothing is
// read back or written twice, and the receiver holds no segment in
// memory. The staging directory is outside the group's own, which the
// install deletes (DeletePartition) before it renames, and each stage has
// its own (<stage> counts the store's stages), so a transfer actor that
// is stopping while its group's next one starts deletes only its own.
const (
	transferDirName = "transfer"
	stagedFileExt   = ".part"
)

// TransferStage is one incoming partition transfer's staged segments. The
// transfer's actor writes it; the partition actor installs it after the
// transfer reported completion (its methods are not safe for concurrent
// use, and are not used concurrently; the store's registry of live stages
// is).
type TransferStage struct {
	s     *Store
	group uint64
	dir   string
	files []*stagedFile // in the order they were written
	open  *stagedFile   // the one being written
	// reserved is what Reserve took of the disk and Write has not
	// written yet (staging.reserved counts it).
	reserved int64
}

// Dir is the stage's directory.
func (t *TransferStage) Dir() string { return t.dir }

type stagedFile struct {
	artifact int
	frontier uint64
	path     string
	f        *os.File
	size     int64
	sealed   bool
}

// staging is the store's live stages and the disk room they reserved and
// have not written yet: the stages a node receives at once (up to 4,
// replica-plane.md 7.7 rule 1) each pass Reserve only if all of them fit
// together.
type staging struct {
	mu       sync.Mutex
	made     uint64 // stages made: each one's directory number
	live     map[*TransferStage]struct{}
	reserved int64
}

// StageTransfer starts staging a transfer into group, in a directory of
// its own. Its owner deletes it (Discard); DiscardStaged deletes a
// group's that lost their owner, Open any a crash left.
func (s *Store) StageTransfer(group uint64) (*TransferStage, error) {
	st := &s.staging
	st.mu.Lock()
	st.made++
	dir := filepath.Join(s.dir, transferDirName, fmt.Sprintf("%016x.%d", group, st.made))
	st.mu.Unlock()
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return nil, fmt.Errorf("storage: stage transfer of group %d: %w", group, err)
	}
	t := &TransferStage{s: s, group: group, dir: dir}
	st.mu.Lock()
	if st.live == nil {
		st.live = map[*TransferStage]struct{}{}
	}
	st.live[t] = struct{}{}
	st.mu.Unlock()
	return t, nil
}

// DiscardStaged deletes every live stage of group: those whose owner
// went without deleting them (a transfer's outcome still queued for its
// group actor when that actor stopped). It reports how many it deleted.
func (s *Store) DiscardStaged(group uint64) (int, error) {
	st := &s.staging
	st.mu.Lock()
	var mine []*TransferStage
	for t := range st.live {
		if t.group == group {
			mine = append(mine, t)
		}
	}
	st.mu.Unlock()
	var errs []error
	for _, t := range mine {
		errs = append(errs, t.Discard())
	}
	return len(mine), errors.Join(errs...)
}

// StagedReserved is the disk room the live stages reserved and have not
// written yet (the gauge iggy.cluster.transfer.staged.reserved).
func (s *Store) StagedReserved() int64 {
	s.staging.mu.Lock()
	defer s.staging.mu.Unlock()
	return s.staging.reserved
}

// removeStagedTransfers deletes every staged transfer (Open: no transfer
// survives a restart; the partitions ask again).
func removeStagedTransfers(storeDir string) error {
	return os.RemoveAll(filepath.Join(storeDir, transferDirName))
}

// Reserve takes room for segments of n bytes (replacing what this stage
// reserved before), or refuses them if, with what the other live stages
// reserved and have not written, they would cut into the soft disk
// reserve, on a fresh statfs: a transfer is the node catching up, and it
// leaves the live chain (and the journal tail the install repairs) the
// room that reserve keeps. The partition's present files, which the
// install deletes, are not counted as free: a transfer never depends on
// deleting data before its own is safe.
func (t *TransferStage) Reserve(n uint64) error {
	want := int64(min(n, 1<<62))
	st := &t.s.staging
	st.mu.Lock()
	defer st.mu.Unlock()
	others := st.reserved - t.reserved
	if !t.s.space.fitsAboveSoft(others + want) {
		return fmt.Errorf("%w: %d bytes of staged segments, with the %d other transfers reserved, would cut into the soft reserve",
			ErrNoSpace, want, others)
	}
	st.reserved += want - t.reserved
	t.reserved = want
	return nil
}

// unreserve gives back n bytes of the stage's reservation (at most what
// it holds): written (the disk's free space counts them now) or not
// needed any more.
func (t *TransferStage) unreserve(n int64) {
	st := &t.s.staging
	st.mu.Lock()
	defer st.mu.Unlock()
	n = min(n, t.reserved)
	t.reserved -= n
	st.reserved -= n
}

// closeOpen closes the file being written, if any.
func (t *TransferStage) closeOpen() {
	if t.open != nil {
		_ = t.open.f.Close()
		t.open.f, t.open = nil, nil
	}
}

// Keep deletes every staged file but the sealed ones at frontiers (a new
// offer of the group reuses them, 7.7 rule 6), the one being written
// included, and gives back the stage's reservation: what a transfer that
// ended without an install leaves for the next.
func (t *TransferStage) Keep(frontiers []uint64) error {
	t.closeOpen()
	var kept []*stagedFile
	var errs []error
	for _, f := range t.files {
		if f.sealed && slices.Contains(frontiers, f.frontier) {
			kept = append(kept, f)
			continue
		}
		if err := os.Remove(f.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	t.files = kept
	t.unreserve(t.reserved)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("storage: staged transfer of group %d: %w", t.group, err)
	}
	return nil
}

// Write appends chunk to artifact i, a segment starting at frontier; the
// first chunk of an artifact creates its file. Artifacts arrive one after
// the other, each complete (Seal) before the next starts, and not
// necessarily in frontier order (those kept from an earlier attempt are
// not written again).
func (t *TransferStage) Write(i int, frontier uint64, chunk []byte) error {
	if t.open == nil || t.open.artifact != i {
		if t.open != nil {
			return fmt.Errorf("storage: staged artifact %d started before %d was sealed", i, t.open.artifact)
		}
		for _, f := range t.files {
			if f.frontier == frontier {
				return fmt.Errorf("storage: a second staged segment at %d", frontier)
			}
		}
		path := filepath.Join(t.dir, batchFileName(frontier)+stagedFileExt)
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, fileMode)
		if err != nil {
			return fmt.Errorf("storage: %w", err)
		}
		t.open = &stagedFile{artifact: i, frontier: frontier, path: path, f: f}
		t.files = append(t.files, t.open)
	}
	if err := t.s.space.admitBatch(int64(len(chunk))); err != nil {
		return err
	}
	n, err := t.open.f.Write(chunk)
	t.open.size += int64(n)
	t.s.space.charge(int64(n))
	t.unreserve(int64(n))
	if err != nil {
		if IsNoSpace(err) {
			t.s.space.sawNoSpace()
		}
		return fmt.Errorf("storage: stage %s: %w", t.open.path, err)
	}
	return nil
}

// Seal fsyncs and closes artifact i's file.
func (t *TransferStage) Seal(i int) error {
	bf := t.open
	if bf == nil || bf.artifact != i {
		return nil // empty: no file was made for it
	}
	t.open = nil
	err := bf.f.Sync()
	if cerr := bf.f.Close(); err == nil {
		err = cerr
	}
	bf.f = nil
	if err != nil {
		return fmt.Errorf("storage: stage %s: %w", bf.path, err)
	}
	bf.sealed = true
	return nil
}

// Bytes is the size of what was staged so far.
func (t *TransferStage) Bytes() int64 {
	var n int64
	for _, f := range t.files {
		n += f.size
	}
	return n
}

// Discard deletes what the stage holds (after an install: the emptied
// directory) and gives back its reservation. It is idempotent.
func (t *TransferStage) Discard() error {
	if t == nil {
		return nil
	}
	t.unreserve(t.reserved)
	t.s.staging.mu.Lock()
	delete(t.s.staging.live, t)
	t.s.staging.mu.Unlock()
	t.closeOpen()
	t.files = nil
	if err := os.RemoveAll(t.dir); err != nil {
		return fmt.Errorf("storage: discard staged transfer of group %d: %w", t.group, err)
	}
	return nil
}

// InstallStaged makes the staged segments the group's batch files: each
// is renamed to <frontier>.log in the group's directory, then the
// directory and its parent are fsynced. The group must hold no batch
// file (DeletePartition first); the caller writes the rest of the
// partition's state and syncs the store. The files are indexed on the
// group's next use, by the walk boot does (loadGroup).
func (s *Store) InstallStaged(t *TransferStage) error {
	if t.open != nil {
		return fmt.Errorf("storage: install of group %d with artifact %d unsealed", t.group, t.open.artifact)
	}
	g := s.groupLog(t.group)
	g.appending.Lock()
	defer g.appending.Unlock()
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := s.loadGroup(g); err != nil {
		return err
	}
	if len(g.files) > 0 {
		return fmt.Errorf("storage: install into group %d, which holds batch files", t.group)
	}
	if err := os.Mkdir(g.dir, dirMode); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("storage: %w", err)
	}
	for _, f := range t.files {
		if !f.sealed {
			return fmt.Errorf("storage: install of group %d with %s unsealed", t.group, f.path)
		}
		dst := filepath.Join(g.dir, strings.TrimSuffix(filepath.Base(f.path), stagedFileExt))
		if err := os.Rename(f.path, dst); err != nil {
			s.invalidate(g)
			return fmt.Errorf("storage: install %s: %w", f.path, err)
		}
	}
	t.files = nil
	s.invalidate(g) // walked afresh on next use
	if err := fsyncPath(g.dir); err != nil {
		return s.syncer.fail(err)
	}
	if err := fsyncPath(s.partsDir); err != nil {
		return s.syncer.fail(err)
	}
	return nil
}

// SegmentRange is a run of a group's stored batches inside one batch
// file: a SEGMENT_LOG artifact (13.3 rule 3) a state transfer offer
// reads from the file as it is served, instead of holding it in memory.
type SegmentRange struct {
	Frontier uint64 // base offset of its first batch
	*io.SectionReader
}

// SegmentRanges returns the group's visible batches (from its floor) as
// ranges of their files in offset order, each of at most maxBytes (or a
// single larger batch), read through handles opened now: a range keeps
// the bytes its file held at the call, whatever happens to the file
// afterwards (batch files are append-only; one deleted by retention or
// with its partition stays readable through the handle). release closes
// the handles.
func (s *Store) SegmentRanges(group uint64, maxBytes int64) (ranges []SegmentRange, release func(), err error) {
	g, err := s.lockedGroup(group)
	if err != nil {
		return nil, nil, err
	}
	defer g.mu.Unlock()
	var files []*os.File
	release = func() {
		for _, f := range files {
			_ = f.Close()
		}
	}
	fi, ei, ok := g.locate(g.floor)
	if !ok {
		return nil, release, nil
	}
	for ; fi < len(g.files); fi, ei = fi+1, 0 {
		bf := g.files[fi]
		f, err := os.Open(bf.path)
		if err != nil {
			release()
			return nil, nil, fmt.Errorf("storage: group %d: %w", group, err)
		}
		files = append(files, f)
		es := bf.entries[ei:]
		for len(es) > 0 {
			start, n := es[0].pos, 1
			for n < len(es) && es[n].pos+es[n].length-start <= maxBytes {
				n++
			}
			end := es[n-1].pos + es[n-1].length
			ranges = append(ranges, SegmentRange{Frontier: es[0].base, SectionReader: io.NewSectionReader(f, start, end-start)})
			es = es[n:]
		}
	}
	return ranges, release, nil
}
