package storage

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	"iggynode/wire"
)

// mapSource maps the stored batch of group at base (and a run of it).
func mapSource(t *testing.T, s *Store, group, base uint64) (wire.MappableSource, []byte, func()) {
	t.Helper()
	src, err := s.BatchSource(group, base)
	if err != nil {
		t.Fatal(err)
	}
	m := src.(wire.MappableSource)
	b, unpin, err := m.Map()
	if err != nil {
		t.Fatalf("map batch %d: %v", base, err)
	}
	return m, b, unpin
}

// mapsOf counts the mappings of files under dir in /proc/self/maps.
func mapsOf(t *testing.T, dir string) int {
	t.Helper()
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skip("no /proc/self/maps:", err)
	}
	return strings.Count(string(maps), dir)
}

// A mapped batch (and a run of it) is the stored bytes, across files; a
// file is mapped once for every batch of it, and no more files than
// MaxOpenBatchFiles stay mapped: the least recently used goes, unmapped
// by its last user.
func TestMappedBatchesAreTheStoredBytesAndBounded(t *testing.T) {
	opts := testOptions()
	opts.MaxOpenBatchFiles = 2
	s, err := Open(t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const group = 3
	var batches [][]byte
	for i := range 12 {
		b := makeBatch(t, uint64(i*20), 20, 700, byte(i))
		if err := s.AppendBatch(group, uint64(i*20), b, false); err != nil {
			t.Fatal(err)
		}
		batches = append(batches, b)
	}
	g, err := s.lockedGroup(group)
	if err != nil {
		t.Fatal(err)
	}
	files := len(g.files)
	g.mu.Unlock()
	if files < 3 {
		t.Fatalf("%d batch files, want at least 3 to pass the bound", files)
	}
	_, first, unpinFirst := mapSource(t, s, group, 0)
	for i, want := range batches {
		src, b, unpin := mapSource(t, s, group, uint64(i*20))
		if !bytes.Equal(b, want) {
			t.Fatalf("batch %d: mapped bytes differ from the stored batch", i)
		}
		from, to := 256+i*31, len(want)-i*17
		part, unpinPart, err := src.(interface {
			Range(from, to int) wire.SpliceSource
		}).Range(from, to).(wire.MappableSource).Map()
		if err != nil || !bytes.Equal(part, want[from:to]) {
			t.Fatalf("batch %d: run [%d, %d) mapped: %v", i, from, to, err)
		}
		unpinPart()
		unpin()
		if n := s.files.mappedCount(); n > opts.MaxOpenBatchFiles {
			t.Fatalf("batch %d: %d files mapped, bound %d", i, n, opts.MaxOpenBatchFiles)
		}
	}
	// The first file's mapping was dropped while pinned: still readable,
	// unmapped once released.
	if !bytes.Equal(first, batches[0]) {
		t.Fatal("a pinned mapping changed after it was dropped")
	}
	dir := s.partsDir
	if n := mapsOf(t, dir); n != opts.MaxOpenBatchFiles+1 {
		t.Fatalf("%d mappings of batch files with the first pinned, want %d", n, opts.MaxOpenBatchFiles+1)
	}
	unpinFirst()
	if n := mapsOf(t, dir); n != opts.MaxOpenBatchFiles {
		t.Fatalf("%d mappings of batch files after the last unpin, want %d", n, opts.MaxOpenBatchFiles)
	}
	// Two batches of one file share its mapping.
	_, _, u1 := mapSource(t, s, group, 220)
	_, _, u2 := mapSource(t, s, group, 200)
	u1()
	u2()
	if n := mapsOf(t, dir); n != opts.MaxOpenBatchFiles {
		t.Fatalf("%d mappings after two batches of the last file, want %d", n, opts.MaxOpenBatchFiles)
	}
}

// A deleted file's mapping goes with it (a write that still uses it
// keeps it until its unpin), a source made before the deletion no longer
// maps (the writer then reads the path, which fails), and a file cut
// under a mapping behind the store's back gives an error, not a crash.
func TestMappedBatchesOfDeletedAndCutFiles(t *testing.T) {
	s := openTest(t)
	const group = 5
	for i := range 4 {
		if err := s.AppendBatch(group, uint64(i*20), makeBatch(t, uint64(i*20), 20, 700, byte(i)), false); err != nil {
			t.Fatal(err)
		}
	}
	dir := s.partsDir
	src, b, unpin := mapSource(t, s, group, 0)
	if err := s.DeletePartition(group); err != nil {
		t.Fatal(err)
	}
	if wire.Batch(b).BaseOffset() != 0 || mapsOf(t, dir) != 1 {
		t.Fatalf("the pinned mapping of a deleted file: base %d, %d mappings", wire.Batch(b).BaseOffset(), mapsOf(t, dir))
	}
	unpin()
	if n := mapsOf(t, dir); n != 0 {
		t.Fatalf("%d mappings left after the deleted file's last unpin", n)
	}
	if _, _, err := src.Map(); !errors.Is(err, errRetired) {
		t.Fatalf("mapping a source of a deleted file: %v, want errRetired", err)
	}

	for i := range 2 {
		if err := s.AppendBatch(group, uint64(i*20), makeBatch(t, uint64(i*20), 20, 700, byte(i)), false); err != nil {
			t.Fatal(err)
		}
	}
	cut, err := s.BatchSource(group, 20)
	if err != nil {
		t.Fatal(err)
	}
	g, err := s.lockedGroup(group)
	if err != nil {
		t.Fatal(err)
	}
	path := g.files[0].path
	g.mu.Unlock()
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	if _, _, err := cut.(wire.MappableSource).Map(); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("mapping a batch whose file was cut: %v, want ErrCorrupt", err)
	}
}
