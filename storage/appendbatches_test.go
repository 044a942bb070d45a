package storage

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"iggynode/wire"
)

// AppendBatches is AppendBatch for many batches at once: the same files
// (rolled at the same batches), the same bytes, the same index, after a
// reopen too, including a batch in the group that replaces a suffix the
// group itself wrote.
func TestAppendBatchesMatchesOneByOne(t *testing.T) {
	bound(t, 30*time.Second)
	const limit = 2000
	var batches [][]byte
	base := uint64(0)
	for i, count := range []int{10, 10, 10, 10, 100, 10, 10, 10} {
		payload := 16
		if count == 100 {
			payload = 4
		}
		batches = append(batches, makeBatch(t, base, count, payload, byte(i)))
		base += uint64(count)
	}
	// The group rewrites offset 150 on (a rolled-back suffix replaced).
	batches = append(batches, makeBatch(t, 150, 5, 16, 77), makeBatch(t, 155, 5, 16, 78))

	one := openWith(t, t.TempDir(), fileBytes(limit))
	for _, b := range batches {
		if err := one.AppendBatch(1, baseOf(b), b, false); err != nil {
			t.Fatal(err)
		}
	}
	many := openWith(t, t.TempDir(), fileBytes(limit))
	if n, err := many.AppendBatches(1, batches[:3], false); err != nil || n != 3 {
		t.Fatalf("AppendBatches = %d, %v", n, err)
	}
	if n, err := many.AppendBatches(1, batches[3:], true); err != nil || n != len(batches)-3 {
		t.Fatalf("AppendBatches = %d, %v", n, err)
	}
	same := func(a, b *Store) {
		t.Helper()
		names := batchFileNames(t, a, 1)
		if got := batchFileNames(t, b, 1); !slices.Equal(got, names) {
			t.Fatalf("files %v, one by one %v", got, names)
		}
		for _, name := range names {
			if !bytes.Equal(readFile(t, filepath.Join(groupDir(b, 1), name)), readFile(t, filepath.Join(groupDir(a, 1), name))) {
				t.Fatalf("%s differs from the one-by-one file", name)
			}
		}
		if got, want := scanBatches(t, b, 1, 0), scanBatches(t, a, 1, 0); !equalKV(got, want) {
			t.Fatalf("scan %v, one by one %v", keysOf(got), keysOf(want))
		}
	}
	same(one, many)
	if got := keysOf(scanBatches(t, many, 1, 0)); !slices.Equal(got, []uint64{0, 10, 20, 30, 40, 140, 150, 155}) {
		t.Fatalf("bases %v", got)
	}
	same(reopen(t, one), reopen(t, many))
}

// A batch whose header disagrees with the index refuses the whole call
// before anything is written.
func TestAppendBatchesChecksEveryHeaderFirst(t *testing.T) {
	s := openTest(t)
	good := makeBatch(t, 0, 3, 8, 1)
	bad := slices.Clone(makeBatch(t, 3, 3, 8, 2))
	bad = bad[:len(bad)-1] // batch_length no longer the slice length
	if n, err := s.AppendBatches(2, [][]byte{good, bad}, false); err == nil || n != 0 {
		t.Fatalf("AppendBatches = %d, %v; want 0 and an error", n, err)
	}
	if got := scanBatches(t, s, 2, 0); len(got) != 0 {
		t.Fatalf("stored %v", keysOf(got))
	}
}

// advance resumes a writev after a short write without touching the
// caller's buffers list.
func TestAdvanceAfterShortWrite(t *testing.T) {
	bufs := [][]byte{[]byte("abc"), []byte("defg"), []byte("h")}
	keep := slices.Clone(bufs)
	cases := map[int]string{0: "abcdefgh", 2: "cdefgh", 3: "defgh", 5: "fgh", 7: "h", 8: ""}
	for n, want := range cases {
		got := bytes.Join(advance(bufs, n), nil)
		if string(got) != want {
			t.Fatalf("advance(%d) = %q, want %q", n, got, want)
		}
		for i := range bufs {
			if !bytes.Equal(bufs[i], keep[i]) {
				t.Fatalf("advance(%d) changed the caller's buffers", n)
			}
		}
	}
}

// writeAll writes more buffers than one writev takes, in order.
func TestWriteAllBeyondIovMax(t *testing.T) {
	f, err := os.OpenFile(filepath.Join(t.TempDir(), "f"), os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var bufs [][]byte
	var want []byte
	for i := range 2500 {
		b := []byte{byte(i), byte(i >> 8), 0xAB}
		bufs = append(bufs, b)
		want = append(want, b...)
	}
	if err := writeAll(f, bufs); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(f.Name())
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("file holds %d bytes (%v), want %d in order", len(got), err, len(want))
	}
}

func baseOf(batch []byte) uint64 { return wire.Batch(batch).BaseOffset() }

// A group whose later batch fails (here its new file cannot be created,
// as on ENOSPC or EMFILE) reports the batches before it stored, and with
// sync they are synced before the call returns: a caller acknowledges
// them. (Found by review: the sync used to be skipped on that path.)
func TestAppendBatchesSyncsWhatItStoredBeforeAFailure(t *testing.T) {
	bound(t, 30*time.Second)
	s := openWith(t, t.TempDir(), fileBytes(2000))
	a := makeBatch(t, 0, 10, 200, 1)  // fills the first file
	b := makeBatch(t, 10, 10, 200, 2) // needs a new file named after 10
	if err := os.MkdirAll(filepath.Join(groupDir(s, 1), batchFileName(10)), 0o700); err != nil {
		t.Fatal(err)
	}
	n, err := s.AppendBatches(1, [][]byte{a, b}, true)
	if n != 1 || err == nil {
		t.Fatalf("AppendBatches = %d, %v; want the first stored and an error for the second", n, err)
	}
	g, _ := s.lockedGroup(1)
	unsynced := len(g.unsynced)
	g.mu.Unlock()
	if unsynced != 0 {
		t.Fatalf("%d file(s) holding a batch reported stored were not fsynced", unsynced)
	}
	if got := keysOf(scanBatches(t, s, 1, 0)); !slices.Equal(got, []uint64{0}) {
		t.Fatalf("stored %v", got)
	}
}

// openOnFakeSpace opens a store whose filesystem reports free bytes
// (the test changes them through the fakeFS), with both reserves at the
// minimum and no periodic statfs.
func openOnFakeSpace(t *testing.T, free int64) (*Store, *fakeFS) {
	t.Helper()
	fs := &fakeFS{}
	fs.free.Store(free)
	s := openWith(t, t.TempDir(), func(o *Options) {
		o.Space = SpaceOptions{ReserveSoft: MinReserveHard, ReserveHard: MinReserveHard, CheckInterval: time.Hour, Statfs: fs.statfs}
	})
	return s, fs
}

// A group too large for the room above the hard reserve stores the
// batches that fit and refuses from the first that does not.
func TestAppendBatchesStoresThePrefixThatFits(t *testing.T) {
	const mib = 1 << 20
	s, _ := openOnFakeSpace(t, MinReserveHard+3*mib/2)
	a := makeBatch(t, 0, 1, mib-1000, 1)
	b := makeBatch(t, 1, 1, mib-1000, 2)
	n, err := s.AppendBatches(1, [][]byte{a, b}, false)
	if n != 1 || !IsNoSpace(err) {
		t.Fatalf("AppendBatches = %d, %v; want the first stored and no space for the second", n, err)
	}
	if got := keysOf(scanBatches(t, s, 1, 0)); !slices.Equal(got, []uint64{0}) {
		t.Fatalf("stored %v", got)
	}
}
