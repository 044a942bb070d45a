package bench

import (
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram bounds: latencies are recorded in nanoseconds from 1 ns up to
// maxTrackedLatency with 3 significant digits (0.1% relative error).
const (
	maxTrackedLatency = 10 * time.Minute
	significantDigits = 3
	// bytesPerMB: MB/s counts payload bytes in decimal megabytes, as the
	// Iggy benchmark reports them.
	bytesPerMB = 1e6
)

// Histogram records request latencies. It keeps the exact minimum and
// maximum beside the HdrHistogram, whose values are exact only to 3
// significant digits. It is not safe for concurrent use: each actor owns
// one and the run merges them at the end.
type Histogram struct {
	h        *hdrhistogram.Histogram
	min, max time.Duration
}

// NewHistogram returns an empty histogram.
func NewHistogram() *Histogram {
	return &Histogram{h: hdrhistogram.New(1, int64(maxTrackedLatency), significantDigits)}
}

// Record adds one latency. Values outside 1 ns..10 min are clamped into the
// tracked range (a run is bounded by its timeout, so only clock oddities
// get there).
func (h *Histogram) Record(d time.Duration) {
	v := min(max(d, 1), maxTrackedLatency)
	_ = h.h.RecordValue(int64(v)) // cannot fail: v is in range
	if h.h.TotalCount() == 1 || v < h.min {
		h.min = v
	}
	h.max = max(h.max, v)
}

// Merge adds every value of o to h.
func (h *Histogram) Merge(o *Histogram) {
	if o.Count() == 0 {
		return
	}
	empty := h.Count() == 0
	h.h.Merge(o.h)
	if empty || o.min < h.min {
		h.min = o.min
	}
	h.max = max(h.max, o.max)
}

// Count is the number of recorded values.
func (h *Histogram) Count() int64 { return h.h.TotalCount() }

// Percentile is the latency at percentile p (0..100): the highest value
// equivalent to the one at that rank (HdrHistogram's definition).
func (h *Histogram) Percentile(p float64) time.Duration {
	return time.Duration(h.h.ValueAtPercentile(p))
}

// Summary condenses the histogram into the reported figures.
func (h *Histogram) Summary() Latency {
	if h.Count() == 0 {
		return Latency{}
	}
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	// A percentile is the top of its bucket; never report it above the
	// exact maximum.
	at := func(p float64) float64 { return us(min(h.Percentile(p), h.max)) }
	return Latency{
		Count:   h.Count(),
		MinUs:   us(h.min),
		MeanUs:  h.h.Mean() / float64(time.Microsecond),
		P50Us:   at(50),
		P90Us:   at(90),
		P95Us:   at(95),
		P99Us:   at(99),
		P999Us:  at(99.9),
		P9999Us: at(99.99),
		MaxUs:   us(h.max),
	}
}

// Latency is a latency distribution in microseconds. Min and Max are exact;
// the percentiles and the mean carry HdrHistogram's 0.1% relative error.
type Latency struct {
	Count   int64   `json:"count"`
	MinUs   float64 `json:"min_us"`
	MeanUs  float64 `json:"mean_us"`
	P50Us   float64 `json:"p50_us"`
	P90Us   float64 `json:"p90_us"`
	P95Us   float64 `json:"p95_us"`
	P99Us   float64 `json:"p99_us"`
	P999Us  float64 `json:"p999_us"`
	P9999Us float64 `json:"p9999_us"`
	MaxUs   float64 `json:"max_us"`
}

// Throughput turns a payload byte count and a message count moved in d
// into MB/s (decimal megabytes of payload) and messages/s. A zero or
// negative duration gives zero rates.
func Throughput(payloadBytes, messages uint64, d time.Duration) (mbPerSec, msgsPerSec float64) {
	if d <= 0 {
		return 0, 0
	}
	secs := d.Seconds()
	return float64(payloadBytes) / bytesPerMB / secs, float64(messages) / secs
}
