package partition

import (
	"testing"

	"iggynode/wire"
)

// benchLog holds 1000 messages of 1 KB in 10 cached batches of 100.
func benchLog(b *testing.B) *Log {
	h := newHarness(b, Config{})
	for range 10 {
		h.send(1024, 100)
	}
	return h.log
}

func benchPoll(b *testing.B, s wire.PollingStrategy, count uint32) {
	l := benchLog(b)
	dst := make([]byte, 0, 2<<20)
	out, p, err := l.Poll(dst, s, count, 0, false)
	if err != nil || p.Count == 0 {
		b.Fatalf("poll: %v %+v", err, p)
	}
	b.SetBytes(int64(len(out)))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		out, _, _ = l.Poll(dst[:0], s, count, 0, false)
	}
	_ = out
}

// 1000 messages, every batch served whole.
func BenchmarkPollWhole(b *testing.B) { benchPoll(b, wire.FirstStrategy(), 1000) }

// 1000 messages starting mid-batch: the first and last records are sliced
// (checksums recomputed).
func BenchmarkPollSliced(b *testing.B) { benchPoll(b, wire.OffsetStrategy(50), 900) }

// 1000 single-message polls walking the partition (binary search each).
func BenchmarkPollOneMessage(b *testing.B) {
	l := benchLog(b)
	dst := make([]byte, 0, 4096)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		dst, _, _ = l.Poll(dst[:0], wire.OffsetStrategy(uint64(i%1000)), 1, 0, false)
	}
}

// ApplySend of committed 100 x 1 KB batches (stamped once, re-stamped per
// iteration so each starts at the frontier).
func BenchmarkApplySend(b *testing.B) {
	batch := batchOf(b, 0, 100, 1024)
	l := New(Config{SegmentSize: 16 << 20}, newMemStore())
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		l.StampNext(batch, l.HighWatermark()+1)
		if err := l.ApplySend(batch); err != nil {
			b.Fatal(err)
		}
		l.MarkPersisted(l.HighWatermark())
	}
}
