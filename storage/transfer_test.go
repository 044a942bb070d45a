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

// stage writes segments (each a list of batches) into a new stage of
// group in chunks of chunk bytes, sealing each.
func stage(t *testing.T, s *Store, group uint64, chunk int, segments ...[][]byte) *TransferStage {
	t.Helper()
	ts, err := s.StageTransfer(group)
	if err != nil {
		t.Fatal(err)
	}
	for i, seg := range segments {
		data := bytes.Join(seg, nil)
		frontier := uint64(0)
		if len(seg) > 0 {
			frontier = wire.Batch(seg[0]).BaseOffset()
		}
		for len(data) > 0 {
			n := min(chunk, len(data))
			if err := ts.Write(i, frontier, data[:n]); err != nil {
				t.Fatal(err)
			}
			data = data[n:]
		}
		if err := ts.Seal(i); err != nil {
			t.Fatal(err)
		}
	}
	return ts
}

// replica-plane.md 13.3 rule 5: staged segments are files under
// <store>/transfer, fsynced as they are sealed; the install renames them
// into the group's batch directory, where they are the group's batches
// (read, appended to, and kept across a reopen), and leaves no staged
// file behind; Open deletes a stage a crash left.
func TestStagedSegmentsInstallAsTheGroupsBatchFiles(t *testing.T) {
	s := openTest(t)
	a, b, c := makeBatch(t, 10, 3, 500, 1), makeBatch(t, 13, 2, 900, 2), makeBatch(t, 15, 4, 300, 3)
	if err := s.AppendBatch(7, 0, makeBatch(t, 0, 5, 100, 9), true); err != nil { // the old state the install replaces
		t.Fatal(err)
	}
	ts := stage(t, s, 7, 1000, [][]byte{a, b}, [][]byte{c})
	staged, _ := filepath.Glob(filepath.Join(s.Dir(), transferDirName, "*", "*.log.part"))
	if len(staged) != 2 || ts.Bytes() != int64(len(a)+len(b)+len(c)) {
		t.Fatalf("staged files %v, %d bytes", staged, ts.Bytes())
	}
	if err := s.InstallStaged(ts); err == nil {
		t.Fatal("installed over a group that holds batch files")
	}
	if err := s.DeletePartition(7); err != nil {
		t.Fatal(err)
	}
	if err := s.InstallStaged(ts); err != nil {
		t.Fatal(err)
	}
	if err := ts.Discard(); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(filepath.Join(s.Dir(), transferDirName)); len(left) != 0 {
		t.Fatalf("left in the staging directory: %v", left)
	}
	want := []kv{{10, a}, {13, b}, {15, c}}
	if got := scanBatches(t, s, 7, 0); !slices.EqualFunc(got, want, func(x, y kv) bool { return x.n == y.n && bytes.Equal(x.b, y.b) }) {
		t.Fatalf("after install: %v", keysOf(got))
	}
	d := makeBatch(t, 19, 1, 100, 4)
	if err := s.AppendBatch(7, 19, d, true); err != nil {
		t.Fatal(err)
	}
	// A stage nobody discarded (a crash) is gone after a reopen; the
	// installed batches are not.
	_ = stage(t, s, 8, 1<<20, [][]byte{makeBatch(t, 0, 1, 100, 5)})
	s = reopen(t, s)
	if left, _ := os.ReadDir(filepath.Join(s.Dir(), transferDirName)); len(left) != 0 {
		t.Fatalf("a leftover stage survived Open: %v", left)
	}
	if got := keysOf(scanBatches(t, s, 7, 0)); !slices.Equal(got, []uint64{10, 13, 15, 19}) {
		t.Fatalf("after reopen: %v", got)
	}
}

// A stage refuses what does not fit above the hard reserve, both the
// reservation and a write, and an unsealed stage is not installed.
func TestStagingRespectsTheDiskReserveAndSealing(t *testing.T) {
	const mib = 1 << 20
	s, fs := openOnFakeSpace(t, MinReserveHard+3*mib/2)
	ts, err := s.StageTransfer(3)
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Discard()
	if err := ts.Reserve(2 * mib); !IsNoSpace(err) {
		t.Fatalf("Reserve(2 MiB) with 1.5 MiB free: %v", err)
	}
	if err := ts.Reserve(mib); err != nil {
		t.Fatalf("Reserve(1 MiB) with 1.5 MiB free: %v", err)
	}
	fs.free.Add(-mib) // what the write below takes of the filesystem
	if err := ts.Write(0, 0, make([]byte, mib)); err != nil {
		t.Fatal(err)
	}
	if err := ts.Write(0, 0, make([]byte, mib)); !IsNoSpace(err) {
		t.Fatalf("a second MiB with 0.5 MiB left: %v", err)
	}
	if err := s.InstallStaged(ts); err == nil {
		t.Fatal("an unsealed stage was installed")
	}
}

// SegmentRanges covers a group's visible batches, from its floor, as
// ranges of their files split at batch boundaries to at most maxBytes;
// the ranges read what the files held when they were taken, even after
// retention deleted the files and the partition was deleted.
func TestSegmentRangesReadTheFilesAsTheyWere(t *testing.T) {
	s := openTest(t) // files roll every 64 KiB
	var batches [][]byte
	for i := range 12 {
		b := makeBatch(t, uint64(i*4), 4, 5000, byte(i))
		if err := s.AppendBatch(3, uint64(i*4), b, false); err != nil {
			t.Fatal(err)
		}
		batches = append(batches, b)
	}
	if err := s.DeleteBatchesBelow(3, 8); err != nil { // the floor: batches 0 and 1 hidden
		t.Fatal(err)
	}
	ranges, release, err := s.SegmentRanges(3, 45000) // two batches of ~20 KB per range at most
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if err := s.DeleteBatchesBelow(3, 40); err != nil {
		t.Fatal(err)
	}
	if err := s.DeletePartition(3); err != nil {
		t.Fatal(err)
	}
	var got []byte
	next := uint64(8)
	for _, r := range ranges {
		if r.Frontier != next || r.Size() > 45000 {
			t.Fatalf("range at %d of %d bytes, want one at %d of at most 45000", r.Frontier, r.Size(), next)
		}
		b := make([]byte, r.Size())
		if _, err := r.ReadAt(b, 0); err != nil {
			t.Fatalf("range at %d after its file was deleted: %v", r.Frontier, err)
		}
		for rest := b; len(rest) > 0; rest = rest[wire.Batch(rest).Length():] {
			next = wire.Batch(rest).BaseOffset() + uint64(wire.Batch(rest).MessageCount())
		}
		got = append(got, b...)
	}
	if want := bytes.Join(batches[2:], nil); !bytes.Equal(got, want) || len(ranges) < 5 {
		t.Fatalf("%d ranges of %d bytes, want the %d bytes from the floor", len(ranges), len(got), len(want))
	}
}

// The stages a node receives at once reserve their room together, above
// the soft reserve (the live chain's room), and give back what they
// wrote or discarded.
func TestStagesReserveTheirRoomTogetherAboveTheSoftReserve(t *testing.T) {
	const mib = 1 << 20
	const soft = MinReserveHard + 4*mib
	fs := &fakeFS{}
	fs.free.Store(soft + 3*mib)
	s := openWith(t, t.TempDir(), func(o *Options) {
		o.Space = SpaceOptions{ReserveSoft: soft, ReserveHard: MinReserveHard, CheckInterval: time.Hour, Statfs: fs.statfs}
	})
	newStage := func(group uint64) *TransferStage {
		ts, err := s.StageTransfer(group)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ts.Discard() })
		return ts
	}
	a, b, c := newStage(1), newStage(2), newStage(3)
	if err := a.Reserve(4 * mib); !IsNoSpace(err) {
		t.Fatalf("4 MiB with 3 MiB above the soft reserve: %v", err)
	}
	if err := a.Reserve(2 * mib); err != nil {
		t.Fatal(err)
	}
	if err := b.Reserve(2 * mib); !IsNoSpace(err) {
		t.Fatalf("2 MiB beside another stage's 2 MiB, with 3 MiB above the soft reserve: %v", err)
	}
	if err := b.Reserve(mib); err != nil {
		t.Fatal(err)
	}
	if got := s.StagedReserved(); got != 3*mib {
		t.Fatalf("reserved %d, want 3 MiB", got)
	}
	fs.free.Add(-mib) // what a's write takes of the filesystem
	if err := a.Write(0, 0, make([]byte, mib)); err != nil {
		t.Fatal(err)
	}
	if got := s.StagedReserved(); got != 2*mib {
		t.Fatalf("after a wrote 1 MiB of its 2: reserved %d, want 2 MiB", got)
	}
	if err := c.Reserve(mib); !IsNoSpace(err) {
		t.Fatalf("1 MiB with 2 MiB free above the soft reserve and 2 MiB reserved: %v", err)
	}
	if err := a.Discard(); err != nil {
		t.Fatal(err)
	}
	fs.free.Add(mib) // its file deleted
	if got := s.StagedReserved(); got != mib {
		t.Fatalf("after a was discarded: reserved %d, want b's 1 MiB", got)
	}
	if err := c.Reserve(2 * mib); err != nil {
		t.Fatalf("2 MiB beside b's 1 MiB with 3 MiB above the soft reserve: %v", err)
	}
}

// DiscardStaged deletes a group's live stages (those an owner lost), and
// only that group's.
func TestDiscardStagedDeletesOnlyThatGroupsStages(t *testing.T) {
	s := openTest(t)
	var dirs []string
	for _, g := range []uint64{5, 5, 6} {
		ts := stage(t, s, g, 1000, [][]byte{makeBatch(t, 0, 2, 300, byte(g))})
		if err := ts.Reserve(1 << 20); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, ts.dir)
	}
	n, err := s.DiscardStaged(5)
	if err != nil || n != 2 {
		t.Fatalf("DiscardStaged(5) = %d, %v; want 2", n, err)
	}
	for i, dir := range dirs {
		_, err := os.Stat(dir)
		if gone := os.IsNotExist(err); gone != (i < 2) {
			t.Fatalf("stage %d (%s): gone %v", i, dir, gone)
		}
	}
	if got := s.StagedReserved(); got != 1<<20 {
		t.Fatalf("reserved %d after group 5's stages went, want group 6's 1 MiB", got)
	}
	if n, _ := s.DiscardStaged(5); n != 0 {
		t.Fatalf("a second DiscardStaged(5) found %d", n)
	}
}

// Keep leaves a stage only the sealed segments a new offer reuses (the
// one being written and every other go, with the reservation); the next
// attempt writes the rest in its manifest's order, below the kept one
// too, and the install takes them all.
func TestAStageKeepsTheSegmentsANewOfferReuses(t *testing.T) {
	s := openTest(t)
	a, b, c := makeBatch(t, 10, 3, 500, 1), makeBatch(t, 13, 2, 900, 2), makeBatch(t, 15, 4, 300, 3)
	ts := stage(t, s, 7, 1000, [][]byte{b}, [][]byte{c})
	if err := ts.Reserve(1 << 20); err != nil {
		t.Fatal(err)
	}
	if err := ts.Write(2, 20, []byte("half a segment")); err != nil {
		t.Fatal(err)
	}
	if err := ts.Keep([]uint64{13, 20}); err != nil { // 20 was never sealed: it goes
		t.Fatal(err)
	}
	names := func() (out []string) {
		files, _ := filepath.Glob(filepath.Join(ts.Dir(), "*"))
		for _, f := range files {
			out = append(out, filepath.Base(f))
		}
		return out
	}
	if got := names(); !slices.Equal(got, []string{batchFileName(13) + stagedFileExt}) {
		t.Fatalf("kept %v, want segment 13's file alone", got)
	}
	if r := s.StagedReserved(); r != 0 {
		t.Fatalf("%d bytes still reserved after Keep", r)
	}
	for i, seg := range [][]byte{a, c} { // the next attempt's artifacts 0 and 2
		frontier := wire.Batch(seg).BaseOffset()
		if err := ts.Write(i*2, frontier, seg); err != nil {
			t.Fatal(err)
		}
		if err := ts.Seal(i * 2); err != nil {
			t.Fatal(err)
		}
	}
	if err := ts.Write(3, 13, b); err == nil {
		t.Fatal("a second segment at a kept frontier was staged")
	}
	if err := ts.Keep([]uint64{10, 13, 15}); err != nil {
		t.Fatal(err)
	}
	if err := s.InstallStaged(ts); err != nil {
		t.Fatal(err)
	}
	want := []kv{{10, a}, {13, b}, {15, c}}
	if got := scanBatches(t, s, 7, 0); !slices.EqualFunc(got, want, func(x, y kv) bool { return x.n == y.n && bytes.Equal(x.b, y.b) }) {
		t.Fatalf("after install: %v", keysOf(got))
	}
}
