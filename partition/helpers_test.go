package partition

import (
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"iggynode/internal/testutil"
	"iggynode/wire"
)

// memStore is an in-memory Store holding copies of persisted batches.
type memStore struct {
	batches map[uint64][]byte
	reads   int // ReadBatch calls
	sources int // BatchSource calls (nothing read until the reply is written)
	fail    error
}

func newMemStore() *memStore { return &memStore{batches: make(map[uint64][]byte)} }

func (m *memStore) ReadBatch(baseOffset uint64) ([]byte, error) {
	m.reads++
	return m.lookup(baseOffset)
}

func (m *memStore) lookup(baseOffset uint64) ([]byte, error) {
	if m.fail != nil {
		return nil, m.fail
	}
	b, ok := m.batches[baseOffset]
	if !ok {
		return nil, errors.New("memstore: no batch")
	}
	return b, nil
}

// BatchSource serves a stored batch as a splice source (SourceReader).
func (m *memStore) BatchSource(baseOffset uint64) (wire.SpliceSource, error) {
	m.sources++
	b, err := m.lookup(baseOffset)
	if err != nil {
		return nil, err
	}
	return memSource{testutil.MemSource{B: b}}, nil
}

// memSource is the memStore's batch source, with the ranges a poll
// slices evicted batches by (RangeSource).
type memSource struct{ testutil.MemSource }

func (m memSource) Range(from, to int) wire.SpliceSource {
	return memSource{testutil.MemSource{B: m.B[from:to], Fail: m.Fail}}
}

func (m *memStore) put(b []byte) { m.batches[wire.Batch(b).BaseOffset()] = append([]byte(nil), b...) }

// deleteBelow mirrors storage DeleteBatchesBelow.
func (m *memStore) deleteBelow(offset uint64) {
	for base := range m.batches {
		if base < offset {
			delete(m.batches, base)
		}
	}
}

// infos returns the stored batches' index fields in offset order, as a
// storage scan at boot yields them.
func (m *memStore) infos(t testing.TB) []BatchInfo {
	t.Helper()
	var out []BatchInfo
	for len(out) < len(m.batches) {
		var next *BatchInfo
		for _, b := range m.batches {
			info, err := BatchInfoOf(b)
			if err != nil {
				t.Fatal(err)
			}
			if (len(out) == 0 || info.BaseOffset > out[len(out)-1].BaseOffset) && (next == nil || info.BaseOffset < next.BaseOffset) {
				next = &info
			}
		}
		out = append(out, *next)
	}
	return out
}

// harness drives one Log the way the partition actor does: stamp at the
// journal append, then commit (ApplySend), then persist (MarkPersisted).
type harness struct {
	t     testing.TB
	log   *Log
	store *memStore
	ts    uint64 // last prepare timestamp
}

func newHarness(t testing.TB, cfg Config) *harness {
	s := newMemStore()
	return &harness{t: t, log: New(cfg, s), store: s, ts: 1_000_000}
}

// batchOf builds a producer batch of n messages whose payloads start with
// the offset each message will get when the batch is stamped at first (so
// polls can check payloads against offsets), padded to payloadSize bytes.
func batchOf(t testing.TB, first uint64, n, payloadSize int) []byte {
	t.Helper()
	msgs := make([]wire.Message, n)
	for i := range msgs {
		p := make([]byte, max(payloadSize, 8))
		binary.LittleEndian.PutUint64(p, first+uint64(i))
		for j := 8; j < len(p); j++ {
			p[j] = byte(first + uint64(i) + uint64(j))
		}
		msgs[i] = wire.Message{ID: wire.U128{Lo: first + uint64(i) + 1}, OriginTimestamp: 1_700_000_000_000_000 + uint64(i), Payload: p}
	}
	b, err := wire.AppendBatch(nil, msgs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// stamp journals a batch of n messages at the primary and returns it.
func (h *harness) stamp(n, payloadSize int) []byte {
	h.t.Helper()
	b := batchOf(h.t, h.log.JournalNext(), n, payloadSize)
	h.ts += 1000
	if base := h.log.StampNext(b, h.ts); base != wire.Batch(b).BaseOffset() {
		h.t.Fatalf("StampNext returned %d, batch says %d", base, wire.Batch(b).BaseOffset())
	}
	return b
}

// commit applies a journaled batch and persists it.
func (h *harness) commit(b []byte) { h.commitIndexed(b, false) }

// commitIndexed is commit, with the frame table admission gathers when
// indexed (ApplySendIndexed).
func (h *harness) commitIndexed(b []byte, indexed bool) {
	h.t.Helper()
	var table wire.FrameTable
	if indexed {
		var err error
		if table, err = wire.ValidateBatchIndexed(b, wire.Batch(b).MessageCount()); err != nil {
			h.t.Fatal(err)
		}
	}
	if err := h.log.ApplySendIndexed(b, table, nil); err != nil {
		h.t.Fatal(err)
	}
	h.store.put(b)
	h.log.MarkPersisted(h.log.HighWatermark())
}

// send stamps and commits batches of the given message counts.
func (h *harness) send(payloadSize int, counts ...int) {
	h.t.Helper()
	for _, n := range counts {
		h.commit(h.stamp(n, payloadSize))
	}
}

// truncate applies a watermark and deletes the removed batches from the store.
func (h *harness) truncate(upTo uint64) Truncated {
	tr := h.log.Truncate(upTo)
	if tr.Segments > 0 {
		h.store.deleteBelow(tr.OldestRetained)
	}
	return tr
}

// decodeRecords decodes poll records with wire's PolledMessages decoder and
// returns the served messages; it fails the test if the body does not
// decode or its count differs from n.
func decodeRecords(t testing.TB, records []byte, n uint32) []wire.PolledMessage {
	t.Helper()
	body := wire.AppendPolledHeader(nil, 7, 0, n)
	body = append(body, records...)
	var pm wire.PolledMessages
	if err := pm.Decode(body); err != nil {
		t.Fatalf("poll records do not decode: %v", err)
	}
	var out []wire.PolledMessage
	it := pm.Messages()
	for {
		m, ok := it.Next()
		if !ok {
			break
		}
		out = append(out, m)
	}
	return out
}

// checkMessages checks that msgs are exactly offsets from..to, each with
// the payload built for it, and that every record's checksum is right.
func checkMessages(t testing.TB, records []byte, msgs []wire.PolledMessage, from, to uint64) {
	t.Helper()
	if uint64(len(msgs)) != to-from+1 {
		t.Fatalf("served %d messages, want offsets %d..%d", len(msgs), from, to)
	}
	for i, m := range msgs {
		want := from + uint64(i)
		if m.Offset != want {
			t.Fatalf("message %d: offset %d, want %d", i, m.Offset, want)
		}
		if got := binary.LittleEndian.Uint64(m.Payload); got != want {
			t.Fatalf("message at %d carries the payload of %d", want, got)
		}
		if m.ID.Lo != want+1 {
			t.Fatalf("message at %d: id %d", want, m.ID.Lo)
		}
	}
	it := wire.RecordsOf(records)
	for {
		rec, ok := it.Next()
		if !ok {
			break
		}
		if err := wire.ValidateBatch(rec, rec.MessageCount()); err != nil {
			t.Fatalf("record at %d: %v", rec.BaseOffset(), err)
		}
	}
}

func (s Segment) String() string {
	return fmt.Sprintf("{%d..%d %dB %d msgs sealed=%v}", s.StartOffset, s.EndOffset, s.SizeBytes, s.Messages, s.Sealed)
}

// checkCache checks that the cache is aligned with the index tail and its
// byte count is right.
func checkCache(t testing.TB, l *Log) {
	t.Helper()
	if len(l.cache) > 0 && (l.cacheFirst < 0 || l.cacheFirst+len(l.cache) != l.index.len()) {
		t.Fatalf("cache of %d from %d, index of %d", len(l.cache), l.cacheFirst, l.index.len())
	}
	// The tables cover an index suffix that holds the cached one.
	if len(l.tables) > 0 && (l.tablesFirst < 0 || l.tablesFirst+len(l.tables) != l.index.len()) {
		t.Fatalf("tables of %d from %d, index of %d", len(l.tables), l.tablesFirst, l.index.len())
	}
	if len(l.cache) > 0 && (len(l.tables) == 0 || l.tablesFirst > l.cacheFirst) {
		t.Fatalf("tables of %d from %d, cache of %d from %d", len(l.tables), l.tablesFirst, len(l.cache), l.cacheFirst)
	}
	bytes := uint64(len(l.readBack))
	for c, b := range l.cache {
		bytes += uint64(len(b))
		if e := l.index.at(l.cacheFirst + c); wire.Batch(b).BaseOffset() != e.baseOffset {
			t.Fatalf("cached batch %d at %d, index says %d", c, wire.Batch(b).BaseOffset(), e.baseOffset)
		}
	}
	for k, si := range l.tables {
		bytes += si.bytes()
		if e := l.index.at(l.tablesFirst + k); si.table.Len() > 0 && !si.table.Covers(int(e.size), e.count) {
			t.Fatalf("table %d does not fit its batch", k)
		}
		// An evicted batch's table keeps its header; no other does.
		wantHeader := !l.cached(l.tablesFirst+k) && si.table.Len() > 0
		if (si.header != nil) != wantHeader || (wantHeader && wire.Batch(si.header).BaseOffset() != l.index.at(l.tablesFirst+k).baseOffset) {
			t.Fatalf("table %d: header kept %v, want %v", k, si.header != nil, wantHeader)
		}
	}
	if bytes != l.cachedBytes {
		t.Fatalf("cached bytes %d, counted %d", l.cachedBytes, bytes)
	}
}
