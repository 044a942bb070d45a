package bench

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"iggynode/client"
	"iggynode/wire"
)

// The brief's end-to-end run: 2 producers, 1 consumer, 20 batches of
// 100 x 100 B against the sink. The report counts exactly what was sent
// and received, and the sink saw exactly those sends.
func TestRunAgainstSink(t *testing.T) {
	s := startSink(t, SinkOptions{PollMessageSize: 100})
	cfg := Config{Address: s.Addr(), Producers: 2, Consumers: 1, MessageSize: 100, MessagesPerBatch: 100, BatchCount: 20}
	r, err := Run(testContext(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	p, c := r.Producers, r.Consumers
	if p.Actors != 2 || p.Messages != 4000 || p.PayloadBytes != 400_000 || p.Requests != 40 || p.Latency.Count != 40 {
		t.Errorf("producers: %d actors, %d messages, %d bytes, %d requests, %d latencies; want 2, 4000, 400000, 40, 40",
			p.Actors, p.Messages, p.PayloadBytes, p.Requests, p.Latency.Count)
	}
	if c.Actors != 1 || c.Messages != 2000 || c.PayloadBytes != 200_000 || c.Requests != 20 || c.Latency.Count != 20 {
		t.Errorf("consumers: %d actors, %d messages, %d bytes, %d requests, %d latencies; want 1, 2000, 200000, 20, 20",
			c.Actors, c.Messages, c.PayloadBytes, c.Requests, c.Latency.Count)
	}
	for _, a := range p.PerActor {
		if a.Messages != 2000 || a.Requests != 20 || a.MBPerSec <= 0 || a.Latency.P50Us <= 0 {
			t.Errorf("producer %d: %+v", a.Index, a)
		}
	}
	if p.PerActor[0].StreamID == p.PerActor[1].StreamID {
		t.Errorf("producers share stream %d; the default is one stream per actor", p.PerActor[0].StreamID)
	}
	if c.PerActor[0].StreamID != p.PerActor[0].StreamID {
		t.Errorf("consumer 0 reads stream %d, producer 0 writes %d", c.PerActor[0].StreamID, p.PerActor[0].StreamID)
	}
	if p.MBPerSec <= 0 || p.MessagesPerSec <= 0 || c.MBPerSec <= 0 || p.Duration <= 0 {
		t.Errorf("rates: producers %v MB/s %v msgs/s, consumers %v MB/s", p.MBPerSec, p.MessagesPerSec, c.MBPerSec)
	}
	if st := s.Stats(); st.Sends != 40 || st.SentMessages != 4000 || st.PolledMessages != 2000 {
		t.Errorf("sink saw %+v, want 40 sends of 4000 messages and 2000 polled", st)
	}
	var text strings.Builder
	if err := r.WriteText(&text); err != nil || !strings.Contains(text.String(), "producers: 4000 messages") ||
		!strings.Contains(text.String(), "consumers: 2000 messages") {
		t.Errorf("summary (%v):\n%s", err, text.String())
	}
	data, err := json.Marshal(r)
	if err != nil || !strings.Contains(string(data), `"p9999_us"`) || strings.Contains(strings.ToLower(string(data)), "password") {
		t.Errorf("json (%v): %s", err, data)
	}
}

// Warmup batches are sent but not counted; the measured part is exact.
func TestRunWarmupNotCounted(t *testing.T) {
	s := startSink(t, SinkOptions{PollMessageSize: 10})
	cfg := Config{Address: s.Addr(), Producers: 1, Consumers: 1, MessageSize: 10, MessagesPerBatch: 10, BatchCount: 5, Warmup: 30 * time.Millisecond}
	r, err := Run(testContext(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r.Producers.Messages != 50 || r.Consumers.Messages != 50 || r.Producers.Latency.Count != 5 {
		t.Errorf("measured %d sent, %d received, %d latencies; want 50, 50, 5", r.Producers.Messages, r.Consumers.Messages, r.Producers.Latency.Count)
	}
	if st := s.Stats(); st.SentMessages <= 50 || st.PolledMessages <= 50 {
		t.Errorf("sink saw %+v: the warmup sent and polled nothing", st)
	}
}

// A run that cannot finish (every poll empty) ends with its context.
func TestRunBoundedByContext(t *testing.T) {
	s := startSink(t, SinkOptions{EmptyPolls: true})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := Run(ctx, Config{Address: s.Addr(), Consumers: 1, MessageSize: 10, MessagesPerBatch: 10, BatchCount: 1})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want the deadline", err)
	}
}

func TestConfigValidation(t *testing.T) {
	base := Config{Address: "127.0.0.1:1", Producers: 1, MessageSize: 100, MessagesPerBatch: 10, BatchCount: 1}
	for _, c := range []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{"no actors", func(c *Config) { c.Producers = 0 }, "need producers or consumers"},
		{"no address", func(c *Config) { c.Address = "" }, "no address"},
		{"empty message", func(c *Config) { c.MessageSize = 0 }, "message size"},
		{"no batches", func(c *Config) { c.BatchCount = 0 }, "batches"},
		{"batch above 64 MiB", func(c *Config) { c.MessageSize, c.MessagesPerBatch = 1_000_000, 70 }, "frame limit"},
		{"consumer without producer", func(c *Config) { c.Consumers = 2 }, "no producer writes"},
		{"too many partitions", func(c *Config) { c.PartitionsPerTopic = 1001 }, "partitions per topic"},
	} {
		cfg := base
		c.change(&cfg)
		err := cfg.withDefaults().validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want %q", c.name, err, c.want)
		}
	}
	if err := base.withDefaults().validate(); err != nil {
		t.Errorf("base config: %v", err)
	}
	// Two consumers on one stream with two partitions, one producer per partition.
	ok := Config{Address: "x:1", Producers: 2, Consumers: 2, Streams: 1, PartitionsPerTopic: 2, MessageSize: 1, MessagesPerBatch: 1, BatchCount: 1}
	if err := ok.withDefaults().validate(); err != nil {
		t.Errorf("1 stream x 2 partitions: %v", err)
	}
}

// DESIGN.md performance rules: a send of a reused []wire.Message allocates
// per request, never per message (the sink answering in the same process is
// counted too, and is per request as well).
func TestSendAllocationsDoNotScaleWithMessages(t *testing.T) {
	s := startSink(t, SinkOptions{})
	c := connectSink(t, s)
	ctx := testContext(t)
	allocs := func(n int) float64 {
		payload := make([]byte, 100)
		msgs := make([]wire.Message, n)
		for i := range msgs {
			msgs[i] = client.NewMessage(payload)
		}
		return testing.AllocsPerRun(20, func() {
			if _, err := c.SendMessages(ctx, wire.ID(0), wire.ID(0), wire.PartitionID(0), msgs); err != nil {
				t.Fatal(err)
			}
		})
	}
	small, large := allocs(10), allocs(1000)
	t.Logf("allocations per send: %v for 10 messages, %v for 1000", small, large)
	if large > small+5 {
		t.Errorf("%v allocations per send of 1000 messages, %v for 10: something allocates per message", large, small)
	}
}
