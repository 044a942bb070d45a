package bench

import (
	"math"
	"testing"
	"time"
)

// within checks HdrHistogram's contract at 3 significant digits: the
// reported value is the top of the bucket holding the true one, so it lies
// in [want, want*1.001].
func within(t *testing.T, name string, got, want float64) {
	t.Helper()
	if got < want || got > want*1.001 {
		t.Errorf("%s = %v, want %v (+0.1%%)", name, got, want)
	}
}

func TestHistogramUniformPercentiles(t *testing.T) {
	h := NewHistogram()
	for i := 1; i <= 10000; i++ { // 1 µs .. 10 ms, one each
		h.Record(time.Duration(i) * time.Microsecond)
	}
	s := h.Summary()
	if s.Count != 10000 {
		t.Fatalf("count %d, want 10000", s.Count)
	}
	// Rank of percentile p is round(p/100 * 10000): the value is that rank in µs.
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"p50", s.P50Us, 5000}, {"p90", s.P90Us, 9000}, {"p95", s.P95Us, 9500},
		{"p99", s.P99Us, 9900}, {"p999", s.P999Us, 9990}, {"p9999", s.P9999Us, 9999},
	} {
		within(t, c.name, c.got, c.want)
	}
	if s.MinUs != 1 || s.MaxUs != 10000 {
		t.Errorf("min %v max %v, want exact 1 and 10000", s.MinUs, s.MaxUs)
	}
	if math.Abs(s.MeanUs-5000.5) > 5000.5*0.001 {
		t.Errorf("mean %v, want 5000.5 ±0.1%%", s.MeanUs)
	}
}

func TestHistogramTailPercentiles(t *testing.T) {
	h := NewHistogram()
	for range 990 {
		h.Record(100 * time.Microsecond)
	}
	for range 9 {
		h.Record(50 * time.Millisecond)
	}
	h.Record(2 * time.Second)
	s := h.Summary()
	within(t, "p50", s.P50Us, 100)
	within(t, "p99", s.P99Us, 100) // rank 990 is the last fast request
	within(t, "p999", s.P999Us, 50000)
	if s.P9999Us != 2e6 || s.MaxUs != 2e6 {
		t.Errorf("p9999 %v max %v, want 2e6 (capped at the exact max)", s.P9999Us, s.MaxUs)
	}
	if s.MinUs != 100 {
		t.Errorf("min %v, want 100", s.MinUs)
	}
}

func TestHistogramMerge(t *testing.T) {
	a, b, all := NewHistogram(), NewHistogram(), NewHistogram()
	for i := 1; i <= 100; i++ {
		d := time.Duration(i) * time.Millisecond
		if i%2 == 0 {
			a.Record(d)
		} else {
			b.Record(d)
		}
		all.Record(d)
	}
	merged := NewHistogram()
	merged.Merge(NewHistogram()) // empty: no effect
	merged.Merge(a)
	merged.Merge(b)
	if got, want := merged.Summary(), all.Summary(); got != want {
		t.Errorf("merged %+v\nwant   %+v", got, want)
	}
	if s := merged.Summary(); s.MinUs != 1000 || s.MaxUs != 100000 {
		t.Errorf("min %v max %v, want 1000 and 100000", s.MinUs, s.MaxUs)
	}
}

func TestHistogramEmptyAndClamped(t *testing.T) {
	if s := NewHistogram().Summary(); s != (Latency{}) {
		t.Errorf("empty summary %+v", s)
	}
	h := NewHistogram()
	h.Record(0)
	h.Record(time.Hour)
	s := h.Summary()
	if s.Count != 2 || s.MinUs != 0.001 || s.MaxUs != float64(maxTrackedLatency/time.Microsecond) {
		t.Errorf("clamped %+v, want min 1 ns and max 10 min", s)
	}
}

func TestThroughput(t *testing.T) {
	for _, c := range []struct {
		name          string
		bytes, msgs   uint64
		d             time.Duration
		wantMB, wantM float64
	}{
		{"2000 x 1000 x 1000 B in 2 s", 2_000_000_000, 2_000_000, 2 * time.Second, 1000, 1_000_000},
		{"400 kB in 250 ms", 400_000, 4000, 250 * time.Millisecond, 1.6, 16000},
		{"zero duration", 1000, 1, 0, 0, 0},
		{"negative duration", 1000, 1, -time.Second, 0, 0},
	} {
		mb, m := Throughput(c.bytes, c.msgs, c.d)
		if math.Abs(mb-c.wantMB) > 1e-9 || math.Abs(m-c.wantM) > 1e-6 {
			t.Errorf("%s: %v MB/s %v msgs/s, want %v and %v", c.name, mb, m, c.wantMB, c.wantM)
		}
	}
}

// A group's rates divide its totals by the span from the first start to
// the last end; each actor's by its own span.
func TestGroupArithmetic(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	mk := func(kind string, start, end time.Duration, msgs uint64) *actor {
		a := &actor{kind: kind, start: t0.Add(start), end: t0.Add(end), messages: msgs, bytes: msgs * 1000, requests: msgs / 1000, hist: NewHistogram()}
		a.hist.Record(time.Millisecond)
		return a
	}
	actors := []*actor{
		mk(KindProducer, 0, 2*time.Second, 1_000_000),
		mk(KindProducer, time.Second, 4*time.Second, 3_000_000),
		mk(KindConsumer, 0, time.Second, 500_000),
	}
	r := buildReport(Config{}, t0, actors, nil)
	p := r.Producers
	if p.Actors != 2 || p.Messages != 4_000_000 || p.PayloadBytes != 4_000_000_000 || p.Requests != 4000 || p.Duration != 4*time.Second {
		t.Fatalf("producers %+v", p)
	}
	if p.MBPerSec != 1000 || p.MessagesPerSec != 1_000_000 {
		t.Errorf("producers %v MB/s %v msgs/s, want 1000 and 1e6", p.MBPerSec, p.MessagesPerSec)
	}
	if a := p.PerActor[1]; a.MBPerSec != 1000 || a.MessagesPerSec != 1_000_000 || a.Duration != 3*time.Second {
		t.Errorf("producer 1 %+v", a)
	}
	if p.Latency.Count != 2 {
		t.Errorf("producer latency count %d, want 2", p.Latency.Count)
	}
	c := r.Consumers
	if c.Actors != 1 || c.MBPerSec != 500 || c.MessagesPerSec != 500_000 {
		t.Errorf("consumers %+v", c)
	}
}
