package storage

import (
	"encoding/binary"
	"os"
	"slices"
	"testing"
	"time"

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

// BenchmarkAppendBatch1MiB: partition appends without enforce_fsync: one
// write() of the batch to the group's current file (no copy, no
// allocation beyond the index entry).
func BenchmarkAppendBatch1MiB(b *testing.B) { benchAppend(b, false) }

// BenchmarkAppendBatch1MiBSync: with enforce_fsync, one fsync per batch.
func BenchmarkAppendBatch1MiBSync(b *testing.B) { benchAppend(b, true) }

// BenchmarkAppendBatch1MiBParallel: several partitions appending at once
// without sync, each to its own files.
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
	b.StopTimer() // Close's flush and fsync are not part of the appends
}

// BenchmarkAppendBatch1MiBLatency: the distribution of single append
// latencies without sync. Each op is 1000 x 1 MiB into a fresh store that is
// removed afterwards (so disk use stays at 1 GiB whatever -benchtime says);
// run with -benchtime=1x for exactly 1000 appends. The partition actor
// appends inline, so the tail (p99, max) is what stalls a send path, not
// the mean.
func BenchmarkAppendBatch1MiBLatency(b *testing.B) {
	const perOp = 1000
	batch := benchBatch(b)
	b.SetBytes(int64(len(batch)) * perOp)
	var lat []time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir, err := os.MkdirTemp("", "storage-latency-")
		if err != nil {
			b.Fatal(err)
		}
		s, err := Open(dir, Options{GCInterval: -1}) // production sizes
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		base := uint64(0)
		for range perOp {
			binary.LittleEndian.PutUint64(batch[wire.BatchBaseOffsetOffset:], base)
			start := time.Now()
			if err := s.AppendBatch(1, base, batch, false); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(start))
			base += 1024
		}
		b.StopTimer()
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		if err := os.RemoveAll(dir); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
	b.ReportMetric(ms(lat[len(lat)*99/100]), "p99-ms")
	b.ReportMetric(ms(lat[len(lat)-1]), "max-ms")
}
