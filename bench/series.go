package bench

import (
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// seriesDigits is the precision of the per-second histograms: 2 significant
// digits (1% error) keeps each one small, since a run keeps one per second
// per group.
const seriesDigits = 2

// SecondStats is one second of a group's measured work: what completed in
// [Second, Second+1) seconds after the run's start (when the actors, all
// connected, were released; warmup seconds are empty). Rates divide by the
// second's length, except the last one, which ends with the group.
type SecondStats struct {
	Second         int     `json:"second"`
	Messages       uint64  `json:"messages"`
	PayloadBytes   uint64  `json:"payload_bytes"`
	Requests       uint64  `json:"requests"`
	MBPerSec       float64 `json:"mb_per_s"`
	MessagesPerSec float64 `json:"msgs_per_s"`
	P50Us          float64 `json:"p50_us"`
	P99Us          float64 `json:"p99_us"`
}

// secondBucket accumulates one second.
type secondBucket struct {
	messages, bytes, requests uint64
	hist                      *Histogram
}

func (b *secondBucket) add(o *secondBucket) {
	b.messages += o.messages
	b.bytes += o.bytes
	b.requests += o.requests
	b.hist.Merge(o.hist)
}

// series is one group's time series. Actors record into their own
// secondRecorder and fold it in here once per second, so the lock is taken
// once per actor-second, not per request.
type series struct {
	start   time.Time
	mu      sync.Mutex
	seconds []*secondBucket
}

func newSeries(start time.Time) *series { return &series{start: start} }

// fold adds an actor's second into the series.
func (s *series) fold(second int, b *secondBucket) {
	if b.requests == 0 || second < 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.seconds) <= second {
		s.seconds = append(s.seconds, nil)
	}
	if s.seconds[second] == nil {
		s.seconds[second] = &secondBucket{hist: newSeriesHistogram()}
	}
	s.seconds[second].add(b)
}

// stats condenses the series into one point per second from the first to
// the last recorded one (empty seconds in between are zeros). end is when
// the group's last actor finished: the last second's rates use the span up
// to it.
func (s *series) stats(end time.Time) []SecondStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	first := 0
	for first < len(s.seconds) && s.seconds[first] == nil {
		first++
	}
	var out []SecondStats
	for i := first; i < len(s.seconds); i++ {
		p := SecondStats{Second: i}
		if b := s.seconds[i]; b != nil {
			p.Messages, p.PayloadBytes, p.Requests = b.messages, b.bytes, b.requests
			span := time.Second
			if i == len(s.seconds)-1 {
				if d := end.Sub(s.start.Add(time.Duration(i) * time.Second)); d > 0 && d < span {
					span = d
				}
			}
			p.MBPerSec, p.MessagesPerSec = Throughput(b.bytes, b.messages, span)
			l := b.hist.Summary()
			p.P50Us, p.P99Us = l.P50Us, l.P99Us
		}
		out = append(out, p)
	}
	return out
}

// secondRecorder is an actor's current second, folded into the group's
// series when a request completes in a later second and at the end.
type secondRecorder struct {
	series *series
	second int
	bucket secondBucket
}

func newSecondRecorder(s *series) *secondRecorder {
	return &secondRecorder{series: s, bucket: secondBucket{hist: newSeriesHistogram()}}
}

// record adds one request that completed at `at`.
func (r *secondRecorder) record(at time.Time, took time.Duration, messages, bytes uint64) {
	second := int(at.Sub(r.series.start) / time.Second)
	if second != r.second {
		r.flush()
		r.second = second
	}
	r.bucket.messages += messages
	r.bucket.bytes += bytes
	r.bucket.requests++
	r.bucket.hist.Record(took)
}

// flush folds the current second into the series and empties it.
func (r *secondRecorder) flush() {
	r.series.fold(r.second, &r.bucket)
	r.bucket.messages, r.bucket.bytes, r.bucket.requests = 0, 0, 0
	r.bucket.hist.reset()
}

func newSeriesHistogram() *Histogram {
	return &Histogram{h: hdrhistogram.New(1, int64(maxTrackedLatency), seriesDigits)}
}

// reset empties the histogram for reuse.
func (h *Histogram) reset() {
	h.h.Reset()
	h.min, h.max = 0, 0
}
