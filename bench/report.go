package bench

import (
	"fmt"
	"io"
	"time"
)

// Report is what a run measured, per group of actors and per actor.
type Report struct {
	Config    Config      `json:"config"`
	StartedAt time.Time   `json:"started_at"`
	Producers GroupReport `json:"producers"`
	Consumers GroupReport `json:"consumers"`
	// ProducingConsumers are the end-to-end-producing-consumer actors:
	// their latency is from a send to the poll that read the batch back.
	ProducingConsumers GroupReport `json:"producing_consumers"`
}

// namedGroup is a group with its display name and latency label.
type namedGroup struct {
	name, latency string
	GroupReport
}

func (r Report) groups() []namedGroup {
	return []namedGroup{
		{"producers", "send", r.Producers},
		{"consumers", "poll", r.Consumers},
		{"producing consumers", "end-to-end", r.ProducingConsumers},
	}
}

// GroupReport sums one kind of actor. Its rates divide the group's totals
// by the span from the first actor's start to the last one's end, so they
// are what the actors achieved together.
type GroupReport struct {
	Actors         int           `json:"actors"`
	Messages       uint64        `json:"messages"`
	PayloadBytes   uint64        `json:"payload_bytes"`
	Requests       uint64        `json:"requests"`
	EmptyPolls     uint64        `json:"empty_polls,omitempty"`
	Duration       time.Duration `json:"duration_ns"`
	MBPerSec       float64       `json:"mb_per_s"`
	MessagesPerSec float64       `json:"msgs_per_s"`
	// Latency merges every actor's requests: send to confirmation for
	// producers, poll to reply for consumers (non-empty polls only).
	Latency  Latency       `json:"latency"`
	PerActor []ActorReport `json:"per_actor,omitempty"`
	// Series is the group's figures second by second (see SecondStats).
	Series []SecondStats `json:"series,omitempty"`
}

// ActorReport is one producer's or consumer's figures over its own
// measured span (after its warmup).
// PartitionID is 0 in the balanced workloads, whose sends and group polls
// pick their partitions.
type ActorReport struct {
	Kind           string        `json:"kind"`
	Index          int           `json:"index"`
	StreamID       uint32        `json:"stream_id"`
	TopicID        uint32        `json:"topic_id"`
	PartitionID    uint32        `json:"partition_id"`
	Messages       uint64        `json:"messages"`
	PayloadBytes   uint64        `json:"payload_bytes"`
	Requests       uint64        `json:"requests"`
	EmptyPolls     uint64        `json:"empty_polls,omitempty"`
	Duration       time.Duration `json:"duration_ns"`
	MBPerSec       float64       `json:"mb_per_s"`
	MessagesPerSec float64       `json:"msgs_per_s"`
	Latency        Latency       `json:"latency"`
}

// buildReport turns the finished actors into a Report.
func buildReport(cfg Config, started time.Time, actors []*actor, series map[string]*series) Report {
	r := Report{Config: cfg, StartedAt: started}
	r.Producers = group(actors, KindProducer, series[KindProducer])
	r.Consumers = group(actors, KindConsumer, series[KindConsumer])
	r.ProducingConsumers = group(actors, KindProducingConsumer, series[KindProducingConsumer])
	return r
}

// group aggregates the actors of one kind; s (may be nil) is its series.
func group(actors []*actor, kind string, s *series) GroupReport {
	var g GroupReport
	hist := NewHistogram()
	var first, last time.Time
	for _, a := range actors {
		if a.kind != kind {
			continue
		}
		ar := a.report()
		g.PerActor = append(g.PerActor, ar)
		g.Actors++
		g.Messages += ar.Messages
		g.PayloadBytes += ar.PayloadBytes
		g.Requests += ar.Requests
		g.EmptyPolls += ar.EmptyPolls
		hist.Merge(a.hist)
		if first.IsZero() || a.start.Before(first) {
			first = a.start
		}
		if a.end.After(last) {
			last = a.end
		}
	}
	if g.Actors > 0 {
		g.Duration = last.Sub(first)
	}
	g.MBPerSec, g.MessagesPerSec = Throughput(g.PayloadBytes, g.Messages, g.Duration)
	g.Latency = hist.Summary()
	if s != nil && g.Actors > 0 {
		g.Series = s.stats(last)
	}
	return g
}

func (a *actor) report() ActorReport {
	ar := ActorReport{
		Kind: a.kind, Index: a.index,
		StreamID: a.target.stream, TopicID: a.target.topic, PartitionID: a.target.partition,
		Messages: a.messages, PayloadBytes: a.bytes, Requests: a.requests, EmptyPolls: a.emptyPolls,
		Duration: a.end.Sub(a.start),
		Latency:  a.hist.Summary(),
	}
	ar.MBPerSec, ar.MessagesPerSec = Throughput(ar.PayloadBytes, ar.Messages, ar.Duration)
	return ar
}

// WriteText prints a human summary: the run's shape, then per group the
// totals, rates and latency percentiles, then one line per actor.
func (r Report) WriteText(w io.Writer) error {
	c := r.Config
	p := &printer{w: w}
	p.printf("target %s, workload %s: %s, %d streams x %d partitions, %d batches x %d messages x %d B, warmup %v",
		c.Address, c.Workload, c.ActorsText(), c.Streams, c.PartitionsPerTopic, c.BatchCount, c.MessagesPerBatch, c.MessageSize, c.Warmup)
	if c.RateLimit > 0 {
		p.printf(", rate limit %.1f MB/s per actor", float64(c.RateLimit)/bytesPerMB)
	}
	p.printf("\n")
	for _, g := range r.groups() {
		if g.Actors == 0 {
			continue
		}
		p.printf("%s: %d messages, %.1f MB in %.3f s: %.1f MB/s, %.0f msgs/s, %d requests",
			g.name, g.Messages, float64(g.PayloadBytes)/bytesPerMB, g.Duration.Seconds(), g.MBPerSec, g.MessagesPerSec, g.Requests)
		if g.EmptyPolls > 0 {
			p.printf(", %d empty polls", g.EmptyPolls)
		}
		p.printf("\n  %s latency: %s\n", g.latency, latencyLine(g.Latency))
		for _, a := range g.PerActor {
			partition := fmt.Sprint(a.PartitionID)
			if c.balanced() {
				partition = "balanced" // Balanced sends and group polls pick their partitions
			}
			p.printf("  %s %d (stream %d, topic %d, partition %s): %.1f MB/s, %.0f msgs/s, p50 %s, p99 %s, max %s\n",
				a.Kind, a.Index, a.StreamID, a.TopicID, partition, a.MBPerSec, a.MessagesPerSec,
				millis(a.Latency.P50Us), millis(a.Latency.P99Us), millis(a.Latency.MaxUs))
		}
	}
	return p.err
}

func latencyLine(l Latency) string {
	return fmt.Sprintf("p50 %s, p90 %s, p95 %s, p99 %s, p999 %s, p9999 %s, max %s (%d requests)",
		millis(l.P50Us), millis(l.P90Us), millis(l.P95Us), millis(l.P99Us), millis(l.P999Us), millis(l.P9999Us), millis(l.MaxUs), l.Count)
}

// millis prints a latency measured in µs in milliseconds, the one unit of
// the console, the chart and the percentile table (as upstream's bench).
func millis(us float64) string { return fmt.Sprintf("%.3f ms", us/1e3) }

// printer keeps the first write error.
type printer struct {
	w   io.Writer
	err error
}

func (p *printer) printf(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}
