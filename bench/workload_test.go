package bench

import (
	"context"
	"encoding/json"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"

	"iggynode/internal/testutil"
)

// Every workload against the sink: the report and the sink count exactly
// the messages the workload moves, and the series adds up to the totals.
func TestWorkloadsAgainstSink(t *testing.T) {
	const batches, perBatch, size = 5, 10, 100
	for _, c := range []struct {
		workload             string
		producers, consumers int
		// wanted measured messages per group, and what the sink saw
		sent, polled, endToEnd uint64
		streams, partitions    int
	}{
		{WorkloadPinnedProducer, 2, 0, 100, 0, 0, 2, 1},
		{WorkloadPinnedConsumer, 0, 2, 0, 100, 0, 2, 1},
		{WorkloadPinnedProducerAndConsumer, 2, 2, 100, 100, 0, 2, 1},
		{WorkloadBalancedProducer, 3, 0, 150, 0, 0, 1, 3},
		{WorkloadBalancedConsumerGroup, 0, 3, 0, 150, 0, 1, 3},
		{WorkloadEndToEnd, 2, 0, 0, 0, 100, 2, 1},
		{WorkloadBalancedProducerAndConsumerGroup, 2, 2, 100, 100, 0, 1, 2},
		{WorkloadEndToEndGroup, 2, 0, 0, 0, 100, 1, 2},
		{WorkloadMixed, 2, 1, 100, 50, 0, 2, 1},
	} {
		t.Run(c.workload, func(t *testing.T) {
			s := startSink(t, SinkOptions{PollMessageSize: size})
			r, err := Run(testContext(t), Config{Address: s.Addr(), Workload: c.workload, Producers: c.producers, Consumers: c.consumers,
				MessageSize: size, MessagesPerBatch: perBatch, BatchCount: batches})
			if err != nil {
				t.Fatal(err)
			}
			if r.Config.Streams != c.streams || r.Config.PartitionsPerTopic != c.partitions {
				t.Errorf("%d streams x %d partitions, want %d x %d", r.Config.Streams, r.Config.PartitionsPerTopic, c.streams, c.partitions)
			}
			for _, g := range []struct {
				name string
				g    GroupReport
				want uint64
			}{{"producers", r.Producers, c.sent}, {"consumers", r.Consumers, c.polled}, {"producing consumers", r.ProducingConsumers, c.endToEnd}} {
				if g.g.Messages != g.want || g.g.PayloadBytes != g.want*size {
					t.Errorf("%s: %d messages, %d bytes; want %d, %d", g.name, g.g.Messages, g.g.PayloadBytes, g.want, g.want*size)
				}
				var fromSeries uint64
				for _, p := range g.g.Series {
					fromSeries += p.Messages
				}
				if fromSeries != g.want || (g.want > 0 && len(g.g.Series) == 0) {
					t.Errorf("%s: series %+v sums to %d messages, want %d", g.name, g.g.Series, fromSeries, g.want)
				}
			}
			st := s.Stats()
			if st.SentMessages != c.sent+c.endToEnd || st.PolledMessages != c.polled+c.endToEnd {
				t.Errorf("sink saw %+v, want %d sent and %d polled", st, c.sent+c.endToEnd, c.polled+c.endToEnd)
			}
			switch c.workload {
			case WorkloadEndToEnd:
				if l := r.ProducingConsumers.Latency; l.Count != 2*batches {
					t.Errorf("end-to-end latencies %d, want one per batch (%d)", l.Count, 2*batches)
				}
			case WorkloadBalancedProducer, WorkloadBalancedConsumerGroup:
				all := append(r.Producers.PerActor, r.Consumers.PerActor...)
				for _, a := range all {
					if a.StreamID != all[0].StreamID {
						t.Errorf("balanced actors on streams %d and %d", a.StreamID, all[0].StreamID)
					}
				}
			case WorkloadPinnedProducer:
				if p := r.Producers.PerActor; p[0].StreamID == p[1].StreamID {
					t.Errorf("pinned producers share stream %d", p[0].StreamID)
				}
			}
		})
	}
}

func TestWorkloadValidation(t *testing.T) {
	base := Config{Address: "x:1", MessageSize: 1, MessagesPerBatch: 1, BatchCount: 1}
	for _, c := range []struct {
		workload             string
		producers, consumers int
		streams              int
		want                 string
	}{
		{"no-such-workload", 1, 0, 0, "unknown workload"},
		{WorkloadPinnedProducer, 1, 1, 0, "producers only"},
		{WorkloadPinnedConsumer, 1, 1, 0, "consumers only"},
		{WorkloadBalancedConsumerGroup, 1, 2, 0, "consumers only"},
		{WorkloadEndToEnd, 0, 1, 0, "producers only"},
		{WorkloadPinnedProducerAndConsumer, 1, 0, 0, "producers and consumers"},
		{WorkloadPinnedProducer, 3, 0, 1, "one stream per actor"},
	} {
		cfg := base
		cfg.Workload, cfg.Producers, cfg.Consumers, cfg.Streams = c.workload, c.producers, c.consumers, c.streams
		if err := cfg.withDefaults().validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %d/%d: err %v, want %q", c.workload, c.producers, c.consumers, err, c.want)
		}
	}
	if _, err := Run(context.Background(), Config{Address: "x:1", Producers: 1, MessageSize: 1, MessagesPerBatch: 1, BatchCount: 1, TotalSize: 10}); err == nil ||
		!strings.Contains(err.Error(), "alternatives") {
		t.Errorf("total size with batch count: %v", err)
	}
}

// TotalSize is split over the producers in whole batches, rounded up.
func TestTotalSize(t *testing.T) {
	s := startSink(t, SinkOptions{PollMessageSize: 100})
	// 2 producers x 10 messages x 100 B = 2000 B per round: 10500 B is 6 rounds.
	r, err := Run(testContext(t), Config{Address: s.Addr(), Producers: 2, MessageSize: 100, MessagesPerBatch: 10, TotalSize: 10_500})
	if err != nil {
		t.Fatal(err)
	}
	if r.Config.BatchCount != 6 || r.Producers.Messages != 120 || s.Stats().Sends != 12 {
		t.Errorf("batch count %d, %d messages, %d sends; want 6, 120, 12", r.Config.BatchCount, r.Producers.Messages, s.Stats().Sends)
	}
}

func TestParseSize(t *testing.T) {
	for _, c := range []struct {
		in   string
		want uint64
	}{
		{"1000", 1000}, {"1GB", 1_000_000_000}, {"1gb", 1_000_000_000}, {"1.5MB", 1_500_000}, {"512KiB", 512 << 10},
		{"2 GiB", 2 << 30}, {"10B", 10}, {"0", 0}, {"3TB", 3e12},
	} {
		if got, err := ParseSize(c.in); err != nil || got != c.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "GB", "-1MB", "1XB", "1e30TB", "NaN"} {
		if got, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", bad, got)
		}
	}
	if got, err := ParseRate("100MB/s"); err != nil || got != 100_000_000 {
		t.Errorf("ParseRate(100MB/s) = %d, %v", got, err)
	}
	if got, err := ParseRate("5KiB"); err != nil || got != 5<<10 {
		t.Errorf("ParseRate(5KiB) = %d, %v", got, err)
	}
}

// The token bucket on a fake clock: the burst goes at once, then every
// take sleeps exactly its bytes at the rate, and credit never exceeds the
// burst however long the actor was idle.
func TestTokenBucketOnKnownBudget(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var slept []time.Duration
	b := newTokenBucket(1000, 100) // 1000 B/s, 100 B of burst
	b.now = func() time.Time { return now }
	b.sleep = func(_ context.Context, d time.Duration) error {
		slept = append(slept, d)
		now = now.Add(d)
		return nil
	}
	// The limiter starts full at its first use.
	ctx := context.Background()
	for _, n := range []int{100, 100, 50, 100} {
		if err := b.take(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	want := []time.Duration{100 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond}
	if len(slept) != len(want) {
		t.Fatalf("slept %v, want %v", slept, want)
	}
	for i := range want {
		if (slept[i] - want[i]).Abs() > time.Microsecond {
			t.Errorf("sleep %d: %v, want %v", i, slept[i], want[i])
		}
	}
	now = now.Add(10 * time.Second) // idle: credit caps at the burst
	slept = nil
	_ = b.take(ctx, 100)
	_ = b.take(ctx, 100)
	if len(slept) != 1 || (slept[0]-100*time.Millisecond).Abs() > time.Microsecond {
		t.Errorf("after idling slept %v, want one 100ms sleep", slept)
	}
	// A take above the burst still goes through, paced at the rate.
	slept = nil
	if err := b.take(ctx, 300); err != nil || len(slept) != 1 || slept[0] < 200*time.Millisecond {
		t.Errorf("oversized take: %v, slept %v", err, slept)
	}
}

// A rate-limited run against the sink takes the time its budget implies:
// 40 batches of 1000 B at 200 kB/s, one batch of burst, is at least 195 ms.
func TestRunRateLimited(t *testing.T) {
	s := startSink(t, SinkOptions{PollMessageSize: 100})
	const rate = 200_000
	r, err := Run(testContext(t), Config{Address: s.Addr(), Producers: 2, MessageSize: 100, MessagesPerBatch: 10, BatchCount: 40, RateLimit: rate})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range r.Producers.PerActor {
		if a.Duration < 190*time.Millisecond || a.Duration > 5*time.Second {
			t.Errorf("producer %d took %v, want about 195ms", a.Index, a.Duration)
		}
		if limit := rate / bytesPerMB * 40 / 39 * 1.05; a.MBPerSec > limit {
			t.Errorf("producer %d: %.3f MB/s above the %.3f MB/s limit", a.Index, a.MBPerSec, limit)
		}
	}
}

// Progress lines arrive every interval while the run lasts.
func TestProgressLines(t *testing.T) {
	s := startSink(t, SinkOptions{PollMessageSize: 100})
	var out testutil.Buffer
	_, err := Run(testContext(t), Config{Address: s.Addr(), Producers: 1, Consumers: 1, MessageSize: 100, MessagesPerBatch: 10, BatchCount: 30,
		RateLimit: 200_000, Progress: &out, ProgressInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	line := regexp.MustCompile(`^bench: \S+: producers \d+ msgs [0-9.]+ MB/s \| consumers \d+ msgs [0-9.]+ MB/s$`)
	if len(lines) < 3 {
		t.Fatalf("%d progress lines in a ~150ms run at 20ms: %q", len(lines), out.String())
	}
	for _, l := range lines {
		if !line.MatchString(l) {
			t.Errorf("progress line %q", l)
		}
	}
}

// The per-second series on known records: seconds from the first recorded
// one, an empty second in between as zeros, the last second's rate over
// its partial span.
func TestSeriesSeconds(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newSeries(t0)
	a, b := newSecondRecorder(s), newSecondRecorder(s)
	a.record(t0.Add(1100*time.Millisecond), time.Millisecond, 10, 1000)
	b.record(t0.Add(1500*time.Millisecond), 3*time.Millisecond, 20, 2000)
	a.record(t0.Add(1900*time.Millisecond), 2*time.Millisecond, 10, 1000)
	a.record(t0.Add(3100*time.Millisecond), 5*time.Millisecond, 5, 500_000)
	a.flush()
	b.flush()
	got := s.stats(t0.Add(3500 * time.Millisecond))
	if len(got) != 3 {
		t.Fatalf("series %+v, want seconds 1..3", got)
	}
	if p := got[0]; p.Second != 1 || p.Messages != 40 || p.PayloadBytes != 4000 || p.Requests != 3 || p.MBPerSec != 0.004 {
		t.Errorf("second 1: %+v", p)
	}
	// 2 significant digits: within 1%.
	if p50, p99 := got[0].P50Us, got[0].P99Us; math.Abs(p50-2000) > 20 || math.Abs(p99-3000) > 30 {
		t.Errorf("second 1 p50 %v p99 %v, want 2000 and 3000 within 1%%", p50, p99)
	}
	if p := got[1]; p.Second != 2 || p.Messages != 0 || p.MBPerSec != 0 {
		t.Errorf("second 2: %+v", p)
	}
	// 500 kB in the last 0.5 s: 1 MB/s.
	if p := got[2]; p.Second != 3 || math.Abs(p.MBPerSec-1) > 1e-9 || p.MessagesPerSec != 10 {
		t.Errorf("second 3: %+v", p)
	}
}

var polylinePoints = regexp.MustCompile(`<polyline [^>]*points="([^"]*)"`)

// One polyline per series, one point per value, mapped onto the plot.
func TestSVGChartPolylines(t *testing.T) {
	svg := SVGChart("t", "MB/s", []ChartSeries{
		{Name: "a", Color: "red", X: []float64{0, 1, 2, 3}, Y: []float64{0, 50, 100, 25}},
		{Name: "b <&>", Color: "blue", X: []float64{0, 1}, Y: []float64{10, math.NaN()}},
	}, map[int]bool{1: true})
	m := polylinePoints.FindAllStringSubmatch(svg, -1)
	if len(m) != 2 {
		t.Fatalf("%d polylines, want 2:\n%s", len(m), svg)
	}
	if pts := strings.Fields(m[0][1]); len(pts) != 4 || pts[0] != "70.0,280.0" || pts[2] != "610.0,30.0" {
		t.Errorf("series a points %v: want 4, from (70,280) with the max 100 at the top (y 30)", pts)
	}
	if pts := strings.Fields(m[1][1]); len(pts) != 2 || pts[1] != "340.0,280.0" {
		t.Errorf("series b points %v: NaN drawn at 0", pts)
	}
	if !strings.Contains(svg, "b &lt;&amp;&gt;") || strings.Contains(svg, "b <&>") || strings.Count(svg, "stroke-dasharray") != 1 {
		t.Errorf("names not escaped or dash wrong:\n%s", svg)
	}
}

// The HTML page: self-contained, a throughput line per group and p50/p99
// lines per group, each with a point per second.
func TestWriteChart(t *testing.T) {
	r := Report{Config: Config{Workload: WorkloadMixed, Address: "127.0.0.1:1"}}
	r.Producers.Series = []SecondStats{{Second: 0, MBPerSec: 10, P50Us: 100, P99Us: 200}, {Second: 1, MBPerSec: 20}, {Second: 2, MBPerSec: 15}}
	r.Consumers.Series = []SecondStats{{Second: 1, MBPerSec: 5}, {Second: 2, MBPerSec: 6}}
	var b strings.Builder
	if err := WriteChart(&b, r); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	m := polylinePoints.FindAllStringSubmatch(page, -1)
	var counts []int
	for _, x := range m {
		counts = append(counts, len(strings.Fields(x[1])))
	}
	want := []int{3, 2, 3, 3, 2, 2} // throughput: producers, consumers; latency: p50/p99 producers, consumers
	if len(counts) != len(want) {
		t.Fatalf("polyline point counts %v, want %v", counts, want)
	}
	for i := range want {
		if counts[i] != want[i] {
			t.Errorf("polyline point counts %v, want %v", counts, want)
			break
		}
	}
	for _, banned := range []string{"<script", "src=", "href=", "@import"} {
		if strings.Contains(page, banned) {
			t.Errorf("page contains %q: not self-contained", banned)
		}
	}
	if !strings.HasPrefix(page, "<!DOCTYPE html>") || strings.Count(page, "<svg") != 2 {
		t.Errorf("page shape:\n%s", page)
	}
	// A dot per point (3+2 throughput, 2x3+2x2 latency), latency in ms as
	// on the console (100 µs is 0.1), and the percentile table.
	if n := strings.Count(page, "<circle"); n != 15 {
		t.Errorf("%d dots, want 15", n)
	}
	if !strings.Contains(page, ">ms</text>") || strings.Contains(page, "µs") {
		t.Errorf("latency chart not in ms")
	}
	if !strings.Contains(page, "Latency percentiles (ms)") || !strings.Contains(page, "<th>p99.9</th>") {
		t.Errorf("no percentile table")
	}
}

// A run under a second has one point per line: its dot still shows, and
// the page names the actors as the run had them.
func TestChartOfASubSecondRun(t *testing.T) {
	s := startSink(t, SinkOptions{PollMessageSize: 10})
	r, err := Run(testContext(t), Config{Address: s.Addr(), Workload: WorkloadEndToEnd, Producers: 2, MessageSize: 10, MessagesPerBatch: 10, BatchCount: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.ProducingConsumers.Series) != 1 {
		t.Fatalf("series %+v, want one second", r.ProducingConsumers.Series)
	}
	var b strings.Builder
	if err := WriteChart(&b, r); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if n := strings.Count(page, "<circle"); n != 3 { // MB/s, p50, p99
		t.Errorf("%d dots for a one-second run, want 3", n)
	}
	if !strings.Contains(page, "2 producing consumers") || strings.Contains(page, "0 consumers") {
		t.Errorf("header does not say 2 producing consumers")
	}
	if !strings.Contains(page, "<td>producing consumers (end-to-end)</td><td>6</td>") {
		t.Errorf("percentile table lacks the 6 end-to-end requests")
	}
	var text strings.Builder
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "2 producing consumers,") || strings.Contains(text.String(), "µs") {
		t.Errorf("text report: %s", text.String())
	}
}

// End-to-end latency is the send-to-read time, not the rate limiter's
// pacing: at 20 kB/s, 1 kB batches wait 50 ms each for the limiter, and
// the sink answers in well under that.
func TestEndToEndLatencyExcludesTheRateLimit(t *testing.T) {
	s := startSink(t, SinkOptions{PollMessageSize: 100})
	r, err := Run(testContext(t), Config{Address: s.Addr(), Workload: WorkloadEndToEnd, Producers: 1, MessageSize: 100,
		MessagesPerBatch: 10, BatchCount: 6, RateLimit: 20_000})
	if err != nil {
		t.Fatal(err)
	}
	pc := r.ProducingConsumers
	if pc.Duration < 200*time.Millisecond {
		t.Fatalf("run took %v: the limiter did not pace it", pc.Duration)
	}
	if p50 := pc.Latency.P50Us; p50 > 25e3 {
		t.Errorf("end-to-end p50 %.0f µs includes the limiter's 50 ms wait", p50)
	}
}

// The JSON report carries the series.
func TestReportJSONSeries(t *testing.T) {
	s := startSink(t, SinkOptions{PollMessageSize: 10})
	r, err := Run(testContext(t), Config{Address: s.Addr(), Producers: 1, MessageSize: 10, MessagesPerBatch: 10, BatchCount: 3})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(r)
	var back struct {
		Producers struct {
			Series []SecondStats `json:"series"`
		} `json:"producers"`
	}
	if err := json.Unmarshal(data, &back); err != nil || len(back.Producers.Series) == 0 || back.Producers.Series[0].Messages != 30 {
		t.Errorf("series in JSON (%v): %s", err, data)
	}
}
