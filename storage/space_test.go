package storage

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"iggynode/internal/testutil"
)

// fakeFS is a filesystem whose free space the test sets.
type fakeFS struct{ free atomic.Int64 }

func (f *fakeFS) statfs(string) (uint64, uint64, error) { return uint64(f.free.Load()), 1 << 40, nil }

func fakeSpace(t *testing.T, soft, hard int64) (*Space, *fakeFS) {
	t.Helper()
	fs := &fakeFS{}
	fs.free.Store(1 << 40)
	g, err := newSpace(t.TempDir(), SpaceOptions{ReserveSoft: soft, ReserveHard: hard, CheckInterval: time.Hour, Statfs: fs.statfs},
		slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.close)
	return g, fs
}

// The three states follow free space: worse at once, better only past
// the reserve plus the hysteresis (a quarter of the band, >= 1 MiB).
func TestSpaceStatesFollowFreeSpaceWithHysteresis(t *testing.T) {
	const mib = 1 << 20
	g, fs := fakeSpace(t, 40*mib, 8*mib) // hysteresis 8 MiB
	steps := []struct {
		free int64
		want SpaceState
	}{
		{100 * mib, SpaceOK},
		{40 * mib, SpaceOK},
		{40*mib - 1, SpaceLow},
		{47 * mib, SpaceLow}, // inside the hysteresis
		{8*mib - 1, SpaceHard},
		{15 * mib, SpaceHard}, // inside the hysteresis
		{16 * mib, SpaceLow},
		{48 * mib, SpaceOK},
		{0, SpaceHard},
		{100 * mib, SpaceOK},
	}
	for _, s := range steps {
		fs.free.Store(s.free)
		g.refresh()
		if got := g.State(); got != s.want {
			t.Fatalf("free %d: state %v, want %v", s.free, got, s.want)
		}
		if g.AcceptsClientWrites() != (s.want == SpaceOK) {
			t.Fatalf("free %d: AcceptsClientWrites %v in state %v", s.free, g.AcceptsClientWrites(), s.want)
		}
	}
}

// Writes are charged against the last statfs, so a burst between two
// ticks changes the state without waiting for the next one; a batch that
// would cut into the hard reserve is refused, checked on a fresh statfs.
func TestSpaceChargesWritesAndRefusesBatchesIntoTheHardReserve(t *testing.T) {
	const mib = 1 << 20
	g, fs := fakeSpace(t, 40*mib, 8*mib)
	fs.free.Store(41 * mib)
	g.refresh()
	fs.free.Store(30 * mib) // the "disk" after the writes below (statfs catches up)
	g.charge(2 * mib)
	if g.State() != SpaceLow {
		t.Fatalf("after writing past the soft reserve: %v", g.State())
	}
	fs.free.Store(9 * mib)
	g.refresh()
	if err := g.admitBatch(2 * mib); !errors.Is(err, ErrNoSpace) || !IsNoSpace(err) {
		t.Fatalf("a batch into the hard reserve: %v", err)
	}
	if err := g.admitBatch(mib / 2); err != nil {
		t.Fatalf("a batch above the hard reserve: %v", err)
	}
	fs.free.Store(100 * mib) // space freed: the estimate says no, statfs says yes
	if err := g.admitBatch(2 * mib); err != nil {
		t.Fatalf("after space returned: %v", err)
	}
	if !g.Fits(50*mib) || g.Fits(93*mib) {
		t.Fatal("Fits does not measure against the hard reserve")
	}
	var off *Space
	if off.State() != SpaceOK || off.admitBatch(1<<40) != nil || off.Free() != -1 {
		t.Fatal("a nil guard must refuse nothing")
	}
}

func TestBadgerFilesShrinkToFitTheHardReserve(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		hard, memTable, valueLog int64
	}{
		{256 * mib, 32 * mib, 64 * mib}, // the defaults fit the default reserve
		{1 << 30, 32 * mib, 64 * mib},
		{64 * mib, 5592405, 22369622},
		{8 * mib, mib, 2 * mib},
		{MinReserveHard, mib, mib},
	} {
		o := Options{Space: SpaceOptions{ReserveSoft: c.hard, ReserveHard: c.hard}}.withDefaults()
		o.fitBadgerToReserve()
		if o.MemTableBytes != c.memTable || o.ValueLogFileBytes != c.valueLog {
			t.Errorf("hard %d: memtable %d, value log %d; want %d, %d", c.hard, o.MemTableBytes, o.ValueLogFileBytes, c.memTable, c.valueLog)
		}
		if need := badgerReserve(o.MemTableBytes, o.ValueLogFileBytes); need > c.hard {
			t.Errorf("hard %d: badger may still claim %d", c.hard, need)
		}
	}
	if _, err := newSpace(t.TempDir(), SpaceOptions{ReserveSoft: 8 << 20, ReserveHard: 1 << 20}, slog.New(slog.DiscardHandler)); err == nil {
		t.Fatal("a hard reserve below MinReserveHard was accepted")
	}
}

// On a real 24 MiB filesystem: batches are refused with ErrNoSpace before
// the hard reserve, nothing refused is half written, badger records
// (superblocks, small values) are still written below it without a fault,
// and appends are taken again once space is freed.
func TestFullFilesystemRefusesBatchesAndKeepsBadgerWriting(t *testing.T) {
	bound(t, 60*time.Second)
	fs := testutil.MountSmallFS(t, 24<<20)
	const soft, hard = 12 << 20, 8 << 20
	opts := testOptions()
	opts.Space = SpaceOptions{ReserveSoft: soft, ReserveHard: hard, CheckInterval: 20 * time.Millisecond}
	s, err := Open(fs.Dir+"/store", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if s.opts.MemTableBytes > 1<<20 || s.opts.ValueLogFileBytes > 2<<20 {
		t.Fatalf("badger not lowered to fit an 8 MiB hard reserve: %d / %d", s.opts.MemTableBytes, s.opts.ValueLogFileBytes)
	}
	filler := fs.Fill("filler", soft+2<<20)
	var stored []uint64
	var refusal error
	for base := uint64(0); refusal == nil && base < 10_000; base += 4 {
		b := makeBatch(t, base, 4, 64<<10, byte(base))
		if err := s.AppendBatch(7, base, b, false); err != nil {
			refusal = err
			break
		}
		stored = append(stored, base)
	}
	if !errors.Is(refusal, ErrNoSpace) {
		t.Fatalf("filling the disk ended with %v, want ErrNoSpace from the guard", refusal)
	}
	if free := fs.Free(); free < hard-(1<<20) {
		t.Fatalf("the guard let batches into the hard reserve: %d bytes free", free)
	}
	if s.Space().State() == SpaceOK || s.Space().AcceptsClientWrites() {
		t.Fatalf("state %v after a refused batch", s.Space().State())
	}
	// Someone else takes the disk down to 2 MiB under the hard reserve:
	// badger still takes its records there, through memtable rotations
	// and a flush (2 MiB of them, 1 MiB memtables), without a fault.
	filler2 := fs.Fill("filler2", hard-2<<20)
	deadline := time.Now().Add(5 * time.Second)
	for s.Space().State() != SpaceHard {
		if time.Now().After(deadline) {
			t.Fatalf("state %v with %d bytes free", s.Space().State(), fs.Free())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := s.AppendBatch(7, 1<<20, makeBatch(t, 1<<20, 1, 100, 1), false); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("a batch below the hard reserve: %v", err)
	}
	for i := range 5000 {
		if err := s.SaveVsrState(3, VsrState{View: uint32(i), CommitMax: uint64(i)}, i%500 == 0); err != nil {
			t.Fatalf("superblock %d below the hard reserve: %v", i, err)
		}
		if err := s.Put(fmt.Sprintf("login/%d", i), make([]byte, 300), false); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(filler2); err != nil {
		t.Fatal(err)
	}
	got := scanBatches(t, s, 7, 0)
	if len(got) != len(stored) {
		t.Fatalf("%d batches readable, %d were stored", len(got), len(stored))
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(5 * time.Second)
	for s.Space().State() != SpaceOK {
		if time.Now().After(deadline) {
			t.Fatalf("state %v 5 s after the space was freed (%d bytes free)", s.Space().State(), fs.Free())
		}
		time.Sleep(10 * time.Millisecond)
	}
	next := stored[len(stored)-1] + 4
	if err := s.AppendBatch(7, next, makeBatch(t, next, 4, 64<<10, 1), true); err != nil {
		t.Fatalf("append after space returned: %v", err)
	}
}

// A write the kernel refuses (the guard's figures were wrong: statfs here
// lies) is ENOSPC to the caller, leaves no partial record, and moves the
// guard to SpaceHard at once.
func TestENOSPCFromTheKernelIsNoSpaceAndMovesTheGuard(t *testing.T) {
	bound(t, 60*time.Second)
	fs := testutil.MountSmallFS(t, 16<<20)
	lying := &fakeFS{}
	lying.free.Store(1 << 40)
	opts := testOptions()
	opts.Space = SpaceOptions{ReserveSoft: 8 << 20, ReserveHard: MinReserveHard, CheckInterval: time.Hour, Statfs: lying.statfs}
	s, err := Open(fs.Dir+"/store", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	filler := fs.Fill("filler", 1<<20)
	var stored int
	var failure error
	for base := uint64(0); base < 1000; base += 4 {
		if failure = s.AppendBatch(9, base, makeBatch(t, base, 4, 64<<10, 2), false); failure != nil {
			break
		}
		stored++
	}
	// Free the disk before anything else touches badger's mapped files.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if failure == nil || !IsNoSpace(failure) || errors.Is(failure, ErrNoSpace) {
		t.Fatalf("append on a full disk: %v, want the kernel's ENOSPC", failure)
	}
	if s.Space().State() != SpaceHard {
		t.Fatalf("state %v after ENOSPC", s.Space().State())
	}
	if got := len(scanBatches(t, s, 9, 0)); got != stored {
		t.Fatalf("%d batches readable after the failed append, %d stored", got, stored)
	}
}
