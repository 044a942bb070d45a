package storage

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"iggynode/wire"
)

// bound fails the whole binary loudly if the test outlives d: a hung
// badger call must not stall CI until go test's global timeout.
func bound(t testing.TB, d time.Duration) {
	t.Helper()
	name := t.Name()
	timer := time.AfterFunc(d, func() { panic(fmt.Sprintf("%s: still running after %v", name, d)) })
	t.Cleanup(func() { timer.Stop() })
}

// testOptions are small so tests stay light; the value threshold is the
// production one so both the LSM and the value-log paths are exercised, and
// batch files roll every 64 KiB so every batch test crosses files.
func testOptions() Options {
	return Options{MemTableBytes: 8 << 20, ValueLogFileBytes: 16 << 20, BlockCacheBytes: 1 << 20, GCInterval: -1,
		BatchFileBytes: 64 << 10, Logger: slog.New(slog.DiscardHandler)}
}

func openTest(t testing.TB) *Store {
	t.Helper()
	bound(t, 60*time.Second)
	s, err := Open(t.TempDir(), testOptions())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func reopen(t testing.TB, s *Store) *Store {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(s.Dir(), s.opts) // the same options
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s2.Close() })
	return s2
}

// makeBatch builds a valid stamped batch of count messages of payloadLen
// bytes each, at baseOffset; the payload bytes depend on seed.
func makeBatch(t testing.TB, baseOffset uint64, count, payloadLen int, seed byte) []byte {
	t.Helper()
	msgs := make([]wire.Message, count)
	for i := range msgs {
		p := make([]byte, payloadLen)
		for j := range p {
			p[j] = seed + byte(i) + byte(j*7)
		}
		msgs[i] = wire.Message{ID: wire.U128{Lo: uint64(i) + 1, Hi: uint64(seed)}, OriginTimestamp: 1_700_000_000_000_000, Payload: p}
	}
	b, err := wire.AppendBatch(nil, msgs)
	if err != nil {
		t.Fatal(err)
	}
	wire.Batch(b).StampAppend(baseOffset, 1_700_000_000_000_001+baseOffset)
	return b
}

// makePrepare is a 256-byte header (op in the first 8 bytes, so frames
// differ) and a body; the store keeps frames verbatim and does not parse
// them.
func makePrepare(op uint64, bodyLen int) []byte {
	f := make([]byte, wire.HeaderSize+bodyLen)
	for i := range f {
		f[i] = byte(op) ^ byte(i)
	}
	return f
}

type kv struct {
	n uint64
	b []byte
}

func scanBatches(t testing.TB, s *Store, group, from uint64) []kv {
	t.Helper()
	var out []kv
	err := s.ScanBatches(group, from, func(base uint64, b []byte) error {
		out = append(out, kv{base, bytes.Clone(b)})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func scanPrepares(t testing.TB, s *Store, group, from uint64) []kv {
	t.Helper()
	var out []kv
	err := s.ScanPrepares(group, from, func(op uint64, f []byte) error {
		out = append(out, kv{op, bytes.Clone(f)})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func keysOf(kvs []kv) []uint64 {
	out := make([]uint64, len(kvs))
	for i, e := range kvs {
		out[i] = e.n
	}
	return out
}

// groupKeys counts the keys left under group.
func groupKeys(t testing.TB, s *Store, group uint64) int {
	t.Helper()
	n := 0
	err := s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: groupPrefix(group)})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// groupDir is where group's batch files live.
func groupDir(s *Store, group uint64) string {
	return filepath.Join(s.Dir(), partitionsDirName, fmt.Sprintf("%016x", group))
}

// batchFileNames lists the files in group's directory, sorted (none when it
// does not exist).
func batchFileNames(t testing.TB, s *Store, group uint64) []string {
	t.Helper()
	ents, err := os.ReadDir(groupDir(s, group))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}
