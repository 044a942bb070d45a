package storage

import (
	"bytes"
	"errors"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"iggynode/wire"
)

func TestBatchRoundTrip(t *testing.T) {
	s := openTest(t)
	const g = 42
	// Small and large batches, with files rolling at 64 KiB: batches land
	// beside each other and alone in files.
	sizes := []struct{ count, payload int }{{1, 10}, {3, 100}, {16, 1000}, {2, 200_000}, {5, 40}}
	var want []kv
	base := uint64(0)
	for i, sz := range sizes {
		b := makeBatch(t, base, sz.count, sz.payload, byte(i))
		if err := s.AppendBatch(g, base, b, i%2 == 0); err != nil {
			t.Fatal(err)
		}
		want = append(want, kv{base, b})
		base += uint64(sz.count)
	}
	for _, w := range want {
		got, err := s.ReadBatch(g, w.n)
		if err != nil || !bytes.Equal(got, w.b) {
			t.Fatalf("ReadBatch(%d): err %v, equal %v", w.n, err, bytes.Equal(got, w.b))
		}
		if wire.Batch(got).BaseOffset() != w.n {
			t.Fatalf("stored header base %d, want %d", wire.Batch(got).BaseOffset(), w.n)
		}
	}
	if got := scanBatches(t, s, g, 0); !equalKV(got, want) {
		t.Fatalf("scan from 0: %v", keysOf(got))
	}
	// Starting in the middle: the caller passes the base of the batch that
	// holds its start offset (FindBatch).
	start := want[2].n + 5
	from, ok, err := s.FindBatch(g, start)
	if err != nil || !ok || from != want[2].n {
		t.Fatalf("FindBatch(%d) = %d %v %v, want %d", start, from, ok, err, want[2].n)
	}
	if got := scanBatches(t, s, g, from); !equalKV(got, want[2:]) {
		t.Fatalf("scan from %d: %v", from, keysOf(got))
	}
	// A from between bases starts at the next batch.
	if got := scanBatches(t, s, g, want[2].n+1); !equalKV(got, want[3:]) {
		t.Fatalf("scan from %d: %v", want[2].n+1, keysOf(got))
	}
	if got := scanBatches(t, s, g, base); len(got) != 0 {
		t.Fatalf("scan past the end: %v", keysOf(got))
	}
	if b, ok, _ := s.FindBatch(g, math.MaxUint64); !ok || b != want[len(want)-1].n {
		t.Fatalf("FindBatch(max) = %d %v", b, ok)
	}
	if b, ok, _ := s.FindBatch(g, want[3].n); !ok || b != want[3].n {
		t.Fatalf("FindBatch(exact base %d) = %d %v", want[3].n, b, ok)
	}
	if _, ok, _ := s.FindBatch(g+1, 10); ok {
		t.Fatal("FindBatch on an empty group found a batch")
	}
	// Below the first batch of a group, with a neighbour group below it.
	if err := s.AppendBatch(g+1, 5, makeBatch(t, 5, 1, 1, 0), false); err != nil {
		t.Fatal(err)
	}
	if b, ok, _ := s.FindBatch(g+1, 4); ok {
		t.Fatalf("FindBatch below the first batch found %d", b)
	}
	if _, err := s.ReadBatch(g, 3); !errors.Is(err, ErrNotFound) {
		t.Fatalf("ReadBatch of a missing batch: %v", err)
	}
}

func TestAppendBatchRefusesInconsistentHeader(t *testing.T) {
	s := openTest(t)
	b := makeBatch(t, 100, 2, 10, 1)
	if err := s.AppendBatch(1, 101, b, false); err == nil {
		t.Fatal("base offset disagreeing with the header was stored")
	}
	if err := s.AppendBatch(1, 100, b[:len(b)-1], false); err == nil {
		t.Fatal("batch shorter than its batch_length was stored")
	}
	if err := s.AppendBatch(1, 0, make([]byte, 255), false); err == nil {
		t.Fatal("batch shorter than its header was stored")
	}
	if n := groupKeys(t, s, 1); n != 0 {
		t.Fatalf("%d keys stored by refused appends", n)
	}
	if names := batchFileNames(t, s, 1); len(names) != 0 {
		t.Fatalf("refused appends created files %v", names)
	}
}

func TestScanStopsAndPropagatesErrors(t *testing.T) {
	s := openTest(t)
	for op := uint64(1); op <= 5; op++ {
		if err := s.AppendPrepare(0, op, makePrepare(op, 10), false); err != nil {
			t.Fatal(err)
		}
	}
	var seen []uint64
	err := s.ScanPrepares(0, 0, func(op uint64, _ []byte) error {
		seen = append(seen, op)
		if op == 3 {
			return ErrStopScan
		}
		return nil
	})
	if err != nil || !slices.Equal(seen, []uint64{1, 2, 3}) {
		t.Fatalf("stop: err %v seen %v", err, seen)
	}
	boom := errors.New("boom")
	if err := s.ScanPrepares(0, 0, func(uint64, []byte) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("callback error: %v", err)
	}
	b := makeBatch(t, 0, 1, 1, 0)
	if err := s.AppendBatch(0, 0, b, false); err != nil {
		t.Fatal(err)
	}
	if err := s.ScanBatches(0, 0, func(uint64, []byte) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("batch callback error: %v", err)
	}
}

// Groups with adjacent or extreme ids never see each other's records, and
// offsets whose little-endian order differs from their numeric order still
// scan in numeric order (journal keys are big-endian; batch files are named
// in zero-padded decimal). Batches are appended in ascending order, as a
// log is (an append at or below the last base replaces the suffix:
// TestReappendReplacesSuffix); prepares in a scrambled one.
func TestGroupsAndOffsetsOrderAcrossAdjacentIDs(t *testing.T) {
	s := openTest(t)
	groups := []uint64{0, 1, 1 << 32, 1 << 63, math.MaxUint64}
	bases := []uint64{0, 1, 255, 256, 65_536, 1 << 32, 1<<32 + 1, 1 << 63, math.MaxUint64 - 7}
	// Insert in a scrambled order.
	order := []int{4, 0, 8, 2, 6, 1, 7, 3, 5}
	for gi, g := range groups {
		for _, base := range bases {
			b := makeBatch(t, base, 1, 8, byte(gi))
			if err := s.AppendBatch(g, base, b, false); err != nil {
				t.Fatal(err)
			}
		}
		for _, i := range order {
			if err := s.AppendPrepare(g, bases[i], makePrepare(uint64(gi), 4), false); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.StoreOffset(g, 1, uint32(gi), uint64(gi)*10, false); err != nil {
			t.Fatal(err)
		}
		if err := s.SaveVsrState(g, VsrState{View: uint32(gi)}, false); err != nil {
			t.Fatal(err)
		}
	}
	check := func(g uint64, gi int) {
		t.Helper()
		got := scanBatches(t, s, g, 0)
		if !slices.Equal(keysOf(got), bases) {
			t.Fatalf("group %#x batches %v", g, keysOf(got))
		}
		for _, e := range got {
			if e.b[wire.BatchHeaderSize+wire.FrameHeaderSize] != byte(gi) {
				t.Fatalf("group %#x holds another group's batch at %d", g, e.n)
			}
		}
		if ops := keysOf(scanPrepares(t, s, g, 0)); !slices.Equal(ops, bases) {
			t.Fatalf("group %#x ops %v", g, ops)
		}
		offs, err := s.LoadOffsets(g)
		if err != nil || len(offs) != 1 || offs[OffsetKey{1, uint32(gi)}] != uint64(gi)*10 {
			t.Fatalf("group %#x offsets %v %v", g, offs, err)
		}
		st, ok, err := s.LoadVsrState(g)
		if err != nil || !ok || st.View != uint32(gi) {
			t.Fatalf("group %#x vsr state %+v %v %v", g, st, ok, err)
		}
	}
	for gi, g := range groups {
		check(g, gi)
	}
	// Deleting group 1 leaves its neighbours 0 and 1<<32 whole.
	if err := s.DeletePartition(1); err != nil {
		t.Fatal(err)
	}
	if n := groupKeys(t, s, 1); n != 0 {
		t.Fatalf("group 1 has %d keys after DeletePartition", n)
	}
	if names := batchFileNames(t, s, 1); len(names) != 0 {
		t.Fatalf("group 1 has files %v after DeletePartition", names)
	}
	for gi, g := range groups {
		if g != 1 {
			check(g, gi)
		}
	}
}

func TestPrepareJournalTruncateCompact(t *testing.T) {
	s := openTest(t)
	const g = 0
	frames := map[uint64][]byte{}
	for op := uint64(1); op <= 20; op++ {
		bodyLen := 100
		if op%5 == 0 {
			bodyLen = 70_000 // value-log path
		}
		frames[op] = makePrepare(op, bodyLen)
		if err := s.AppendPrepare(g, op, frames[op], op%2 == 0); err != nil {
			t.Fatal(err)
		}
	}
	ops := func(from uint64) []uint64 { return keysOf(scanPrepares(t, s, g, from)) }
	seq := func(a, b uint64) []uint64 {
		var out []uint64
		for i := a; i <= b; i++ {
			out = append(out, i)
		}
		return out
	}
	if got := ops(0); !slices.Equal(got, seq(1, 20)) {
		t.Fatalf("ops %v", got)
	}
	if got := ops(7); !slices.Equal(got, seq(7, 20)) {
		t.Fatalf("ops from 7 %v", got)
	}
	for _, e := range scanPrepares(t, s, g, 0) {
		if !bytes.Equal(e.b, frames[e.n]) {
			t.Fatalf("op %d frame differs", e.n)
		}
	}
	// 6.10 step 8: drop ops >= 15; op 14 stays.
	if err := s.TruncatePrepares(g, 15); err != nil {
		t.Fatal(err)
	}
	if got := ops(0); !slices.Equal(got, seq(1, 14)) {
		t.Fatalf("after truncate from 15: %v", got)
	}
	// 9.1 step 4: drop ops < 5; op 5 (the commit point) stays.
	if err := s.CompactPrepares(g, 5); err != nil {
		t.Fatal(err)
	}
	if got := ops(0); !slices.Equal(got, seq(5, 14)) {
		t.Fatalf("after compact below 5: %v", got)
	}
	// Repair replaces a frame at the same op.
	repl := makePrepare(99, 33)
	if err := s.AppendPrepare(g, 10, repl, true); err != nil {
		t.Fatal(err)
	}
	if got := scanPrepares(t, s, g, 10); got[0].n != 10 || !bytes.Equal(got[0].b, repl) {
		t.Fatal("op 10 not replaced")
	}
	// Boundaries at the ends: nothing to do is fine.
	if err := s.TruncatePrepares(g, 15); err != nil {
		t.Fatal(err)
	}
	if err := s.CompactPrepares(g, 0); err != nil {
		t.Fatal(err)
	}
	if got := ops(0); !slices.Equal(got, seq(5, 14)) {
		t.Fatalf("after no-op truncate/compact: %v", got)
	}
	if err := s.TruncatePrepares(g, 0); err != nil {
		t.Fatal(err)
	}
	if got := ops(0); len(got) != 0 {
		t.Fatalf("after truncate from 0: %v", got)
	}
	if err := s.AppendPrepare(g, 1, make([]byte, wire.HeaderSize-1), false); err == nil {
		t.Fatal("a frame shorter than a header was journaled")
	}
}

func TestDeleteBatchesBelowBoundaries(t *testing.T) {
	s := openTest(t)
	const g = 9
	bases := []uint64{0, 10, 20, 30}
	for i, b := range bases {
		if err := s.AppendBatch(g, b, makeBatch(t, b, 10, 16, byte(i)), false); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AppendBatch(g+1, 5, makeBatch(t, 5, 1, 16, 0), false); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		below uint64
		want  []uint64
	}{
		{0, []uint64{0, 10, 20, 30}},
		{10, []uint64{10, 20, 30}}, // base 10 is not < 10
		{25, []uint64{30}},         // base 20 < 25 goes, even though it holds 20..29
		{30, []uint64{30}},
		{math.MaxUint64, nil},
	}
	for _, st := range steps {
		if err := s.DeleteBatchesBelow(g, st.below); err != nil {
			t.Fatal(err)
		}
		if got := keysOf(scanBatches(t, s, g, 0)); !slices.Equal(got, st.want) {
			t.Fatalf("below %d: %v, want %v", st.below, got, st.want)
		}
	}
	if got := keysOf(scanBatches(t, s, g+1, 0)); !slices.Equal(got, []uint64{5}) {
		t.Fatalf("neighbour group lost batches: %v", got)
	}
}

func TestOffsets(t *testing.T) {
	s := openTest(t)
	const g = 3
	put := func(kind uint8, key uint32, off uint64) {
		t.Helper()
		if err := s.StoreOffset(g, kind, key, off, kind == 2); err != nil {
			t.Fatal(err)
		}
	}
	put(1, 7, 100)
	put(2, 7, 200) // same key, other kind
	put(1, math.MaxUint32, math.MaxUint64)
	put(1, 7, 101) // overwrite
	if err := s.StoreOffset(g+1, 1, 7, 5, false); err != nil {
		t.Fatal(err)
	}
	want := map[OffsetKey]uint64{{1, 7}: 101, {2, 7}: 200, {1, math.MaxUint32}: math.MaxUint64}
	got, err := s.LoadOffsets(g)
	if err != nil || !mapsEqual(got, want) {
		t.Fatalf("offsets %v %v", got, err)
	}
	if err := s.DeleteOffset(g, 2, 7); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteOffset(g, 2, 8); err != nil { // missing: not an error
		t.Fatal(err)
	}
	delete(want, OffsetKey{2, 7})
	if got, _ := s.LoadOffsets(g); !mapsEqual(got, want) {
		t.Fatalf("after delete %v", got)
	}
	if got, _ := s.LoadOffsets(77); len(got) != 0 {
		t.Fatalf("empty group offsets %v", got)
	}
}

func TestKV(t *testing.T) {
	s := openTest(t)
	if _, ok, err := s.Get("id"); ok || err != nil {
		t.Fatalf("missing key: %v %v", ok, err)
	}
	big := bytes.Repeat([]byte{7}, 10_000)
	for name, v := range map[string][]byte{"id": {1, 2, 3}, "id/next": big, "": {9}} {
		if err := s.Put(name, v, true); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Delete("id"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.Get("id"); ok {
		t.Fatal("deleted key still there")
	}
	// Delete is exact: a name that extends the deleted one survives.
	if v, ok, err := s.Get("id/next"); !ok || err != nil || !bytes.Equal(v, big) {
		t.Fatalf("id/next: %v %v", ok, err)
	}
	if v, ok, _ := s.Get(""); !ok || !bytes.Equal(v, []byte{9}) {
		t.Fatal("empty name")
	}
	if err := s.Put(strings.Repeat("x", maxKVNameLen+1), nil, false); err == nil {
		t.Fatal("oversized name accepted")
	}
}

func TestDeletePartitionRemovesEverything(t *testing.T) {
	s := openTest(t)
	const g = 5
	if err := s.AppendBatch(g, 0, makeBatch(t, 0, 2, 10_000, 1), false); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendPrepare(g, 1, makePrepare(1, 8), true); err != nil {
		t.Fatal(err)
	}
	if err := s.StoreOffset(g, 1, 1, 1, false); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveVsrState(g, VsrState{View: 3}, true); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveVsrState(g, VsrState{View: 4}, true); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveSnapshot(g, []byte("snap")); err != nil {
		t.Fatal(err)
	}
	if err := s.Put("keep", []byte{1}, false); err != nil {
		t.Fatal(err)
	}
	if err := s.DeletePartition(g); err != nil {
		t.Fatal(err)
	}
	if n := groupKeys(t, s, g); n != 0 {
		t.Fatalf("%d keys left", n)
	}
	if _, err := os.Stat(groupDir(s, g)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("batch directory left: %v", err)
	}
	if got := scanBatches(t, s, g, 0); len(got) != 0 {
		t.Fatalf("batches left: %v", keysOf(got))
	}
	if _, ok, _ := s.LoadVsrState(g); ok {
		t.Fatal("vsr state left")
	}
	if _, ok, _ := s.LoadSnapshot(g); ok {
		t.Fatal("snapshot left")
	}
	if _, ok, _ := s.Get("keep"); !ok {
		t.Fatal("generic key deleted with the partition")
	}
	// A recreated group starts its superblock sequence afresh.
	if err := s.SaveVsrState(g, VsrState{View: 1}, false); err != nil {
		t.Fatal(err)
	}
	if seq := storedSequence(t, s, g); seq != 1 {
		t.Fatalf("sequence after recreate %d", seq)
	}
}

func TestReopenKeepsEverything(t *testing.T) {
	s := openTest(t)
	batches := []kv{{0, makeBatch(t, 0, 4, 100, 1)}, {4, makeBatch(t, 4, 8, 150_000, 2)}}
	for _, b := range batches {
		if err := s.AppendBatch(11, b.n, b.b, false); err != nil {
			t.Fatal(err)
		}
	}
	prepares := []kv{{1, makePrepare(1, 100)}, {2, makePrepare(2, 50_000)}}
	for _, p := range prepares {
		if err := s.AppendPrepare(0, p.n, p.b, false); err != nil {
			t.Fatal(err)
		}
	}
	vs := VsrState{Cluster: wire.U128{Lo: 1, Hi: 2}, ReplicaID: 1, ReplicaCount: 3, View: 7, LogView: 6,
		CommitMax: 99, CheckpointOp: 50, CheckpointChecksum: SnapshotChecksum([]byte("p")), OffsetFrontier: 12}
	if err := s.SaveVsrState(0, vs, false); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveSnapshot(0, []byte("p")); err != nil {
		t.Fatal(err)
	}
	if err := s.StoreOffset(11, 2, 4, 3, false); err != nil {
		t.Fatal(err)
	}
	if err := s.Put("node/id", []byte{5}, false); err != nil {
		t.Fatal(err)
	}

	s = reopen(t, s)
	if got := scanBatches(t, s, 11, 0); !equalKV(got, batches) {
		t.Fatalf("batches after reopen %v", keysOf(got))
	}
	if got := scanPrepares(t, s, 0, 0); !equalKV(got, prepares) {
		t.Fatalf("prepares after reopen %v", keysOf(got))
	}
	if got, ok, err := s.LoadVsrState(0); err != nil || !ok || got != vs {
		t.Fatalf("vsr state after reopen %+v %v %v", got, ok, err)
	}
	if p, ok, err := s.LoadSnapshot(0); err != nil || !ok || string(p) != "p" {
		t.Fatalf("snapshot after reopen %q %v %v", p, ok, err)
	}
	if o, _ := s.LoadOffsets(11); o[OffsetKey{2, 4}] != 3 {
		t.Fatalf("offsets after reopen %v", o)
	}
	if v, ok, _ := s.Get("node/id"); !ok || !bytes.Equal(v, []byte{5}) {
		t.Fatal("kv after reopen")
	}
	// The superblock sequence continues across the restart (9.2: it
	// increments per write).
	if err := s.SaveVsrState(0, vs, true); err != nil {
		t.Fatal(err)
	}
	if seq := storedSequence(t, s, 0); seq != 2 {
		t.Fatalf("sequence after reopen and one more write %d, want 2", seq)
	}
}

func TestConcurrentSyncedAppends(t *testing.T) {
	s := openTest(t)
	const writers, each = 4, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				op := uint64(w*each + i + 1)
				errs <- s.AppendPrepare(uint64(w), op, makePrepare(op, 64), true)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for w := range writers {
		if n := len(scanPrepares(t, s, uint64(w), 0)); n != each {
			t.Fatalf("group %d holds %d ops", w, n)
		}
	}
}

// The syncer gives each caller an fsync round that started after its call,
// lets waiting callers share one round, and keeps a failure for good.
func TestSyncerCoalescesAndFailureSticks(t *testing.T) {
	bound(t, 20*time.Second)
	var y syncer
	y.init()
	var rounds atomic.Int32
	release := make(chan struct{})
	entered := make(chan struct{}, 10)
	slow := func() error {
		rounds.Add(1)
		entered <- struct{}{}
		<-release
		return nil
	}
	first := make(chan error, 1)
	go func() { first <- y.sync(slow) }()
	<-entered // round 1 runs and blocks
	// Three callers arrive while round 1 runs: round 1 may predate their
	// writes, so they need round 2, and all three share it.
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() { defer wg.Done(); _ = y.sync(slow) }()
	}
	waitFor(t, func() bool { y.mu.Lock(); defer y.mu.Unlock(); return y.waiters == 3 })
	release <- struct{}{} // finish round 1
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	<-entered             // round 2 starts for the three waiters
	release <- struct{}{} // finish it
	wg.Wait()
	if n := rounds.Load(); n != 2 {
		t.Fatalf("%d fsync rounds, want 2", n)
	}
	boom := errors.New("eio")
	if err := y.sync(func() error { return boom }); !errors.Is(err, ErrSyncFailed) || !errors.Is(err, boom) {
		t.Fatalf("failed round: %v", err)
	}
	if err := y.sync(func() error { return nil }); !errors.Is(err, ErrSyncFailed) {
		t.Fatalf("sync after a failure: %v", err)
	}
}

func TestBadgerLoggerLevels(t *testing.T) {
	var buf bytes.Buffer
	l := badgerLogger{slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	l.Debugf("debug %d", 1)
	l.Infof("info %d", 2)
	l.Warningf("warn %d\n", 3)
	l.Errorf("error %d", 4)
	out := buf.String()
	if strings.Contains(out, "debug 1") || strings.Contains(out, "info 2") {
		t.Fatalf("badger info/debug reached slog: %s", out)
	}
	if !strings.Contains(out, "level=WARN msg=\"warn 3\" component=badger") ||
		!strings.Contains(out, "level=ERROR msg=\"error 4\" component=badger") {
		t.Fatalf("warn/error missing: %s", out)
	}
}

func TestReclaimSpaceAfterRetention(t *testing.T) {
	s := openTest(t)
	for i := range 8 {
		base := uint64(i) * 4
		if err := s.AppendBatch(1, base, makeBatch(t, base, 4, 250_000, byte(i)), false); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DeleteBatchesBelow(1, 28); err != nil {
		t.Fatal(err)
	}
	if err := s.ReclaimSpace(); err != nil {
		t.Fatal(err)
	}
	if got := keysOf(scanBatches(t, s, 1, 0)); !slices.Equal(got, []uint64{28}) {
		t.Fatalf("after retention %v", got)
	}
}

func equalKV(a, b []kv) bool {
	return slices.EqualFunc(a, b, func(x, y kv) bool { return x.n == y.n && bytes.Equal(x.b, y.b) })
}

func mapsEqual(a, b map[OffsetKey]uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func storedSequence(t *testing.T, s *Store, group uint64) uint64 {
	t.Helper()
	raw, ok, err := s.get(kindPrefix(group, kindSuperblock))
	if err != nil || !ok {
		t.Fatalf("raw superblock: %v %v", ok, err)
	}
	seq, _, err := decodeSuperblock(raw)
	if err != nil {
		t.Fatal(err)
	}
	return seq
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for range 2000 {
		if cond() {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("condition not reached")
}
