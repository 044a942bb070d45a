package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"iggynode/wire"
)

// openWith opens a store in dir with testOptions changed by tune.
func openWith(t testing.TB, dir string, tune func(*Options)) *Store {
	t.Helper()
	o := testOptions()
	if tune != nil {
		tune(&o)
	}
	s, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func fileBytes(bytes int64) func(*Options) {
	return func(o *Options) { o.BatchFileBytes = bytes }
}

// appendAll appends batches of count messages at bases from, from+count, ...
// and returns them.
func appendAll(t testing.TB, s *Store, group uint64, from uint64, n, count, payload int) []kv {
	t.Helper()
	var out []kv
	base := from
	for i := range n {
		b := makeBatch(t, base, count, payload, byte(i)+byte(from))
		if err := s.AppendBatch(group, base, b, false); err != nil {
			t.Fatal(err)
		}
		out = append(out, kv{base, b})
		base += uint64(count)
	}
	return out
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFile(t testing.TB, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func appendToFile(t testing.TB, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// replica-plane.md 13.3 items 1-2: a file is the plain concatenation of its
// batches in append order, named after its first base offset in 20 digits;
// a new file starts once the current one holds BatchFileBytes or more, so a
// batch never spans files and a file may exceed the size by its last batch.
func TestBatchFilesRollAndLayout(t *testing.T) {
	bound(t, 30*time.Second)
	const limit = 2000
	s := openWith(t, t.TempDir(), fileBytes(limit))
	const g = 3
	// 896-byte batches, and one of 5456 bytes that is larger than a file.
	var want []kv
	base := uint64(0)
	for i, count := range []int{10, 10, 10, 10, 100, 10, 10, 10} {
		b := makeBatch(t, base, count, 4, byte(i))
		if count == 10 {
			b = makeBatch(t, base, count, 16, byte(i))
		}
		if err := s.AppendBatch(g, base, b, i == 3); err != nil {
			t.Fatal(err)
		}
		want = append(want, kv{base, b})
		base += uint64(count)
	}
	// The files the rule gives, computed by hand from the sizes: 896 x 3
	// reaches 2000 at the third batch; the 5256-byte batch goes into the
	// file after it (started by batch 3 at 30, 896 bytes < 2000) and closes
	// it; the last three fill one more.
	wantFiles := map[string][]kv{
		"00000000000000000000.log": want[0:3],
		"00000000000000000030.log": want[3:5],
		"00000000000000000140.log": want[5:8],
	}
	check := func(s *Store) {
		t.Helper()
		names := batchFileNames(t, s, g)
		if len(names) != len(wantFiles) {
			t.Fatalf("files %v", names)
		}
		for name, batches := range wantFiles {
			var cat []byte
			for _, b := range batches {
				cat = append(cat, b.b...)
			}
			if got := readFile(t, filepath.Join(groupDir(s, g), name)); !bytes.Equal(got, cat) {
				t.Fatalf("%s: %d bytes, want the %d-byte concatenation of its batches", name, len(got), len(cat))
			}
		}
		if got := scanBatches(t, s, g, 0); !equalKV(got, want) {
			t.Fatalf("scan %v", keysOf(got))
		}
		for _, w := range want {
			if got, err := s.ReadBatch(g, w.n); err != nil || !bytes.Equal(got, w.b) {
				t.Fatalf("ReadBatch(%d): %v", w.n, err)
			}
		}
		// A file's first base and last byte are boundaries for Find.
		for off, wantBase := range map[uint64]uint64{29: 20, 30: 30, 139: 40, 140: 140, 169: 160} {
			if b, ok, err := s.FindBatch(g, off); err != nil || !ok || b != wantBase {
				t.Fatalf("FindBatch(%d) = %d %v %v, want %d", off, b, ok, err, wantBase)
			}
		}
	}
	check(s)
	if filepath.Base(filepath.Dir(groupDir(s, g))) != "partitions" || filepath.Base(groupDir(s, g)) != "0000000000000003" {
		t.Fatalf("group directory %s", groupDir(s, g))
	}
	check(reopen(t, s))
}

// A scan hands out records from chunked reads: batches larger than a chunk,
// many small ones per chunk, and a chunk boundary inside a file.
func TestScanChunksAcrossSizes(t *testing.T) {
	s := openWith(t, t.TempDir(), fileBytes(4<<20))
	var want []kv
	want = append(want, appendAll(t, s, 1, 0, 300, 2, 3000)...)      // ~6 KiB each: chunks of ~170
	want = append(want, appendAll(t, s, 1, 600, 3, 2, 1_200_000)...) // 2.4 MB each: one per read
	want = append(want, appendAll(t, s, 1, 606, 50, 1, 10)...)
	if got := scanBatches(t, s, 1, 0); !equalKV(got, want) {
		t.Fatalf("scan: %d batches, want %d", len(got), len(want))
	}
	if got := scanBatches(t, s, 1, 601); !equalKV(got, want[301:]) {
		t.Fatalf("scan from 601: %v", keysOf(got))
	}
}

// doc.go, "Recovery": a record cut short by a crash (or garbage where the
// unsynced tail should be) is truncated away at the next open, and appends
// go on from the last whole record.
func TestTornTailTruncatedAtReopen(t *testing.T) {
	whole := makeBatch(t, 30, 10, 16, 9) // the batch the crash interrupted
	shortLen := bytes.Clone(whole[:wire.BatchHeaderSize])
	binary.LittleEndian.PutUint64(shortLen[wire.BatchLengthOffset:], 100)
	rewound := bytes.Clone(whole)
	binary.LittleEndian.PutUint64(rewound[wire.BatchBaseOffsetOffset:], 20)
	cases := []struct {
		name string
		tail []byte
	}{
		{"half a batch", whole[:len(whole)/2]},
		{"part of a header", whole[:100]},
		{"header only", whole[:wire.BatchHeaderSize]},
		{"batch_length below 256", append(shortLen, make([]byte, 200)...)},
		{"zeros of an unsynced page", make([]byte, 4096)},
		{"base_offset not above the previous", rewound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openWith(t, dir, nil)
			want := appendAll(t, s, 5, 0, 3, 10, 16)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(groupDir(s, 5), batchFileName(0))
			good := readFile(t, path)
			appendToFile(t, path, tc.tail)

			var logged bytes.Buffer
			s = openWith(t, dir, func(o *Options) { o.Logger = slog.New(slog.NewTextHandler(&logged, nil)) })
			if got := scanBatches(t, s, 5, 0); !equalKV(got, want) {
				t.Fatalf("after reopen: %v", keysOf(got))
			}
			if !strings.Contains(logged.String(), "truncating a torn batch record") {
				t.Fatalf("the truncation was not logged: %q", logged.String())
			}
			if got := readFile(t, path); !bytes.Equal(got, good) {
				t.Fatalf("file is %d bytes, want the %d of its whole records", len(got), len(good))
			}
			want = append(want, appendAll(t, s, 5, 30, 1, 10, 16)...)
			s = reopen(t, s)
			if got := scanBatches(t, s, 5, 0); !equalKV(got, want) {
				t.Fatalf("after append and reopen: %v", keysOf(got))
			}
		})
	}
}

// A torn record in a file that is not the last ends the log there: the
// later files follow a gap and are removed. An empty file (created, then
// the process died before its first write) is removed too.
func TestTornRecordDropsLaterFiles(t *testing.T) {
	dir := t.TempDir()
	s := openWith(t, dir, fileBytes(2000))
	want := appendAll(t, s, 8, 0, 9, 10, 16) // files at 0, 30, 60
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	gdir := groupDir(s, 8)
	appendToFile(t, filepath.Join(gdir, batchFileName(30)), make([]byte, 300))
	writeFile(t, filepath.Join(gdir, batchFileName(90)), nil)
	writeFile(t, filepath.Join(gdir, "notes.txt"), []byte("not a batch file"))

	s = openWith(t, dir, fileBytes(2000))
	if got := scanBatches(t, s, 8, 0); !equalKV(got, want[:6]) {
		t.Fatalf("after reopen: %v", keysOf(got))
	}
	if names := batchFileNames(t, s, 8); !slices.Equal(names, []string{batchFileName(0), batchFileName(30), "notes.txt"}) {
		t.Fatalf("files %v", names)
	}
	// The log continues at 60 in a fresh file (30's file is full).
	want = append(want[:6:6], appendAll(t, s, 8, 60, 1, 10, 16)...)
	if got := scanBatches(t, s, 8, 0); !equalKV(got, want) {
		t.Fatalf("after append: %v", keysOf(got))
	}
	// A file created for the next batch, which never got its bytes.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(gdir, batchFileName(70)), nil)
	s = openWith(t, dir, fileBytes(2000))
	if got := scanBatches(t, s, 8, 0); !equalKV(got, want) {
		t.Fatalf("with an empty file: %v", keysOf(got))
	}
	if names := batchFileNames(t, s, 8); slices.Contains(names, batchFileName(70)) {
		t.Fatalf("empty file kept: %v", names)
	}
}

// DeleteBatchesBelow removes whole files below the offset; the file that
// straddles it stays, its lower batches hidden by the floor, which is kept
// in badger under the group and honoured after a restart.
func TestDeleteBatchesBelowAcrossFilesSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	s := openWith(t, dir, fileBytes(2000))
	const g = 12
	all := appendAll(t, s, g, 0, 10, 10, 16) // files [0 10 20] [30 40 50] [60 70 80] [90]
	if names := batchFileNames(t, s, g); len(names) != 4 {
		t.Fatalf("files %v", names)
	}
	if err := s.DeleteBatchesBelow(g, 45); err != nil {
		t.Fatal(err)
	}
	check := func(s *Store) {
		t.Helper()
		if got := scanBatches(t, s, g, 0); !equalKV(got, all[5:]) {
			t.Fatalf("scan after delete below 45: %v", keysOf(got))
		}
		if got := scanBatches(t, s, g, 35); !equalKV(got, all[5:]) {
			t.Fatalf("scan from 35: %v", keysOf(got))
		}
		for _, off := range []uint64{0, 35, 45, 49} {
			if b, ok, err := s.FindBatch(g, off); ok || err != nil {
				t.Fatalf("FindBatch(%d) = %d %v %v, want none (30 and 40 are deleted)", off, b, ok, err)
			}
		}
		if b, ok, _ := s.FindBatch(g, 55); !ok || b != 50 {
			t.Fatalf("FindBatch(55) = %d %v", b, ok)
		}
		for _, base := range []uint64{0, 30, 40} {
			if _, err := s.ReadBatch(g, base); !errors.Is(err, ErrNotFound) {
				t.Fatalf("ReadBatch(%d) of a deleted batch: %v", base, err)
			}
		}
		if got, err := s.ReadBatch(g, 50); err != nil || !bytes.Equal(got, all[5].b) {
			t.Fatalf("ReadBatch(50): %v", err)
		}
		if names := batchFileNames(t, s, g); !slices.Equal(names, []string{batchFileName(30), batchFileName(60), batchFileName(90)}) {
			t.Fatalf("files %v", names)
		}
	}
	check(s)
	s = reopen(t, s)
	check(s)
	// The floor only rises.
	if err := s.DeleteBatchesBelow(g, 20); err != nil {
		t.Fatal(err)
	}
	check(s)
	if err := s.DeleteBatchesBelow(g, 90); err != nil {
		t.Fatal(err)
	}
	more := appendAll(t, s, g, 100, 2, 10, 16)
	s = reopen(t, s)
	if got := scanBatches(t, s, g, 0); !equalKV(got, append(all[9:10:10], more...)) {
		t.Fatalf("after delete below 90 and appends: %v", keysOf(got))
	}
	if names := batchFileNames(t, s, g); names[0] != batchFileName(90) {
		t.Fatalf("files %v", names)
	}
	// The floor is one key of the group, gone with it.
	if n := groupKeys(t, s, g); n != 1 {
		t.Fatalf("%d keys under the group, want the floor", n)
	}
	if err := s.DeletePartition(g); err != nil {
		t.Fatal(err)
	}
	if n := groupKeys(t, s, g); n != 0 {
		t.Fatalf("%d keys after DeletePartition", n)
	}
	// A recreated group starts from offset 0 without the old floor.
	again := appendAll(t, s, g, 0, 2, 10, 16)
	s = reopen(t, s)
	if got := scanBatches(t, s, g, 0); !equalKV(got, again) {
		t.Fatalf("recreated group: %v", keysOf(got))
	}
}

// An append at or below the last base offset replaces the suffix from it
// (a rolled-back journal being rewritten), across files, and survives a
// reopen.
func TestReappendReplacesSuffix(t *testing.T) {
	s := openWith(t, t.TempDir(), fileBytes(2000))
	const g = 4
	old := appendAll(t, s, g, 0, 8, 10, 16) // files [0 10 20] [30 40 50] [60 70]
	check := func(want []kv, files ...string) {
		t.Helper()
		if got := scanBatches(t, s, g, 0); !equalKV(got, want) {
			t.Fatalf("scan %v", keysOf(got))
		}
		if names := batchFileNames(t, s, g); !slices.Equal(names, files) {
			t.Fatalf("files %v, want %v", names, files)
		}
	}
	repl := makeBatch(t, 40, 5, 16, 99)
	if err := s.AppendBatch(g, 40, repl, true); err != nil {
		t.Fatal(err)
	}
	want := append(old[:4:4], kv{40, repl})
	check(want, batchFileName(0), batchFileName(30))
	s = reopen(t, s)
	check(want, batchFileName(0), batchFileName(30))
	// Re-appending at a file's first base replaces the whole file.
	repl30 := makeBatch(t, 30, 1, 16, 98)
	if err := s.AppendBatch(g, 30, repl30, false); err != nil {
		t.Fatal(err)
	}
	want = append(old[:3:3], kv{30, repl30})
	check(want, batchFileName(0), batchFileName(30))
	s = reopen(t, s)
	check(want, batchFileName(0), batchFileName(30))
	// Re-appending at the very first base empties the log first.
	repl0 := makeBatch(t, 0, 1, 16, 97)
	if err := s.AppendBatch(g, 0, repl0, false); err != nil {
		t.Fatal(err)
	}
	check([]kv{{0, repl0}}, batchFileName(0))
	s = reopen(t, s)
	check([]kv{{0, repl0}}, batchFileName(0))
}

// An append below the floor lowers it to the batch, and no deleted batch
// comes back (they were all below it, or replaced).
func TestAppendBelowFloor(t *testing.T) {
	s := openTest(t)
	appendAll(t, s, 2, 0, 3, 10, 16) // one file: 0 10 20
	if err := s.DeleteBatchesBelow(2, 15); err != nil {
		t.Fatal(err)
	}
	b12 := makeBatch(t, 12, 3, 16, 50)
	if err := s.AppendBatch(2, 12, b12, false); err != nil {
		t.Fatal(err)
	}
	check := func(want []kv) {
		t.Helper()
		if got := scanBatches(t, s, 2, 0); !equalKV(got, want) {
			t.Fatalf("scan %v", keysOf(got))
		}
		if _, err := s.ReadBatch(2, 10); !errors.Is(err, ErrNotFound) {
			t.Fatalf("ReadBatch(10): %v", err)
		}
	}
	check([]kv{{12, b12}})
	s = reopen(t, s)
	check([]kv{{12, b12}})
	// Everything deleted, then the log starts again lower.
	if err := s.DeleteBatchesBelow(2, math.MaxUint64); err != nil {
		t.Fatal(err)
	}
	if names := batchFileNames(t, s, 2); len(names) != 0 {
		t.Fatalf("files left %v", names)
	}
	fresh := appendAll(t, s, 2, 5, 2, 10, 16)
	check(fresh)
	s = reopen(t, s)
	check(fresh)
}

// ReadBatch hands the caller its own slice.
func TestReadBatchReturnsAnOwnedCopy(t *testing.T) {
	s := openTest(t)
	want := appendAll(t, s, 1, 0, 1, 3, 10)[0].b
	got, err := s.ReadBatch(1, 0)
	if err != nil {
		t.Fatal(err)
	}
	clear(got)
	if again, _ := s.ReadBatch(1, 0); !bytes.Equal(again, want) {
		t.Fatal("changing a returned batch changed the stored one")
	}
}

// Many groups appending, reading and scanning at once, with fewer handles
// allowed than files exist: every group reads back exactly its own batches,
// the idle handles stay within the bound, and a reopen finds them all.
func TestManyGroupsBoundedHandles(t *testing.T) {
	bound(t, 60*time.Second)
	const groups, per, workers, maxOpen = 120, 6, 4, 8
	dir := t.TempDir()
	tune := func(o *Options) { o.BatchFileBytes = 2000; o.MaxOpenBatchFiles = maxOpen }
	s := openWith(t, dir, tune)
	want := make([][]kv, groups)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := range per {
				for g := w; g < groups; g += workers {
					base := uint64(round * 10)
					b := makeBatch(t, base, 10, 16, byte(g))
					if err := s.AppendBatch(uint64(g), base, b, round == per-1); err != nil {
						errs <- err
						return
					}
					want[g] = append(want[g], kv{base, b})
					if got, err := s.ReadBatch(uint64(g), base); err != nil || !bytes.Equal(got, b) {
						errs <- fmt.Errorf("group %d ReadBatch(%d): %v", g, base, err)
						return
					}
					n := 0
					err := s.ScanBatches(uint64(g), 0, func(uint64, []byte) error { n++; return nil })
					if err != nil || n != round+1 {
						errs <- fmt.Errorf("group %d scan: %d batches, %v", g, n, err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := s.files.openCount(); n > maxOpen {
		t.Fatalf("%d handles open, bound %d", n, maxOpen)
	}
	verify := func(s *Store) {
		t.Helper()
		for g := range groups {
			if got := scanBatches(t, s, uint64(g), 0); !equalKV(got, want[g]) {
				t.Fatalf("group %d: %v", g, keysOf(got))
			}
		}
		if n := s.files.openCount(); n > maxOpen {
			t.Fatalf("%d handles open, bound %d", n, maxOpen)
		}
	}
	verify(s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	verify(openWith(t, dir, tune))
}

// A scan of a group runs while its writer appends: each scan sees a prefix
// of the log, in order, whole.
func TestScanWhileAppending(t *testing.T) {
	bound(t, 60*time.Second)
	s := openWith(t, t.TempDir(), fileBytes(8<<10))
	const n = 200
	batches := make([][]byte, n)
	for i := range batches {
		batches[i] = makeBatch(t, uint64(i)*2, 2, 100, byte(i))
	}
	done := make(chan error, 1)
	go func() {
		for i, b := range batches {
			if err := s.AppendBatch(1, uint64(i)*2, b, false); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for scans := 0; ; scans++ {
		i := 0
		err := s.ScanBatches(1, 0, func(base uint64, b []byte) error {
			if base != uint64(i)*2 || !bytes.Equal(b, batches[i]) {
				return fmt.Errorf("scan %d: batch %d at %d differs", scans, i, base)
			}
			i++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if i == n {
			break
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// The store's folders are 0700 and its batch files 0600 whatever the
// process umask lets through: a fresh store walked after appends has no
// group or other bit on anything it created itself (doc.go, "File
// permissions"; badger's own files follow the umask, cmd/node's test
// covers them).
func TestStoreCreatesOwnerOnlyFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fresh", "store")
	s := openWith(t, dir, nil)
	appendAll(t, s, 7, 0, 3, 2, 16)
	appendAll(t, s, 8, 0, 1, 1, 16)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	checked := 0
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if !d.IsDir() && !strings.HasPrefix(rel, partitionsDirName+string(filepath.Separator)) {
			return nil // badger's
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if perm := info.Mode().Perm(); perm&0o077 != 0 {
			t.Errorf("%s has mode %v", rel, perm)
		}
		checked++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Dir(dir), dir} {
		info, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm() != 0o700 {
			t.Errorf("%s: mode %v, want a 0700 folder", p, info.Mode().Perm())
		}
	}
	if checked < 5 { // store, partitions/, two group folders, batch files
		t.Fatalf("walked only %d entries", checked)
	}
}
