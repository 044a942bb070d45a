package storage

import (
	"encoding/binary"
	"testing"

	"iggynode/wire"
)

// benchBatch is a ~1 MiB stamped batch: 1024 messages of 1000 bytes.
func benchBatch(b *testing.B) []byte {
	return makeBatch(b, 0, 1024, 1000, 1)
}

func benchAppend(b *testing.B, sync bool) {
	s, err := Open(b.TempDir(), Options{GCInterval: -1}) // production sizes
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	batch := benchBatch(b)
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	b.ResetTimer()
	base := uint64(0)
	for b.Loop() {
		// Only the base offset changes (the shell stamps it); the store
		// does not re-verify checksums.
		binary.LittleEndian.PutUint64(batch[wire.BatchBaseOffsetOffset:], base)
		if err := s.AppendBatch(1, base, batch, sync); err != nil {
			b.Fatal(err)
		}
		base += 1024
	}
}

// BenchmarkAppendBatch1MiB: partition appends without enforce_fsync. The
// ~1 MiB allocated per op is badger's, not ours: its value-log writer
// encodes each entry into a bytes.Buffer made per write call (value.go,
// valueLog.write) before copying it into the mapped file. The store adds
// the 18-byte key and the transaction.
func BenchmarkAppendBatch1MiB(b *testing.B) { benchAppend(b, false) }

// BenchmarkAppendBatch1MiBSync: with enforce_fsync, one fsync per batch.
func BenchmarkAppendBatch1MiBSync(b *testing.B) { benchAppend(b, true) }

// BenchmarkAppendBatch1MiBParallel: several partitions appending at once
// without sync (badger's write goroutine batches their requests).
func BenchmarkAppendBatch1MiBParallel(b *testing.B) {
	s, err := Open(b.TempDir(), Options{GCInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	proto := benchBatch(b)
	b.SetBytes(int64(len(proto)))
	b.ReportAllocs()
	var next uint64
	var mu = make(chan struct{}, 1)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		mu <- struct{}{}
		next++
		group := next
		<-mu
		batch := append([]byte(nil), proto...)
		base := uint64(0)
		for pb.Next() {
			binary.LittleEndian.PutUint64(batch[wire.BatchBaseOffsetOffset:], base)
			if err := s.AppendBatch(group, base, batch, false); err != nil {
				b.Error(err)
				return
			}
			base += 1024
		}
	})
}
