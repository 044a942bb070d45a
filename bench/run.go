package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"iggynode/client"
	"iggynode/wire"
)

// Defaults applied by Run to zero Config fields.
const (
	DefaultUsername     = "iggy"
	DefaultPassword     = "iggy"
	DefaultStreamPrefix = "bench-"
	DefaultTopic        = "bench"
	// emptyPollPause is how long a consumer waits after an empty poll
	// before asking again (its producers have not caught up yet).
	emptyPollPause = time.Millisecond
	// sendOverhead bounds the non-batch bytes of a SendMessages frame: the
	// 256-byte header and the metadata section with numeric ids.
	sendOverhead = wire.HeaderSize + 64
)

// Config describes one run.
type Config struct {
	// Address is the node (or sink) to dial, host:port.
	Address string `json:"address"`
	// Transport is tcp (default), tls, quic, ws or wss.
	Transport string `json:"transport"`
	// CAFile is a PEM file of CAs to trust for TLS carriages; empty with
	// Insecure skips verification (a sink's or a dev node's self-signed
	// certificate).
	CAFile   string `json:"-"`
	Insecure bool   `json:"-"`
	// Username and Password log every connection in; empty means iggy/iggy.
	Username string `json:"username"`
	Password string `json:"-"`

	Producers int `json:"producers"`
	Consumers int `json:"consumers"`
	// Streams is the number of streams, each with one topic; 0 means
	// max(Producers, Consumers), one stream per actor.
	Streams int `json:"streams"`
	// PartitionsPerTopic is each topic's partition count; 0 means 1.
	PartitionsPerTopic int `json:"partitions_per_topic"`

	MessageSize      int `json:"message_size"`       // payload bytes per message
	MessagesPerBatch int `json:"messages_per_batch"` // messages per send, and the poll count
	BatchCount       int `json:"batch_count"`        // sends per producer; a consumer reads BatchCount*MessagesPerBatch messages

	// Warmup is run by every actor before it measures: producers send
	// unmeasured batches, consumers poll offset 0 without advancing.
	Warmup time.Duration `json:"warmup_ns"`

	// StreamPrefix names the streams <prefix><n>, n from 1; "" means "bench-".
	StreamPrefix string `json:"stream_prefix"`
	// Topic names every stream's topic; "" means "bench".
	Topic string `json:"topic"`
	// RequestTimeout bounds each request; 0 means the SDK default (30 s).
	RequestTimeout time.Duration `json:"request_timeout_ns"`
}

// withDefaults fills the zero fields.
func (c Config) withDefaults() Config {
	if c.Username == "" && c.Password == "" {
		c.Username, c.Password = DefaultUsername, DefaultPassword
	}
	if c.Streams == 0 {
		c.Streams = max(c.Producers, c.Consumers)
	}
	if c.PartitionsPerTopic == 0 {
		c.PartitionsPerTopic = 1
	}
	if c.StreamPrefix == "" {
		c.StreamPrefix = DefaultStreamPrefix
	}
	if c.Topic == "" {
		c.Topic = DefaultTopic
	}
	return c
}

// validate rejects a run that could not finish: every count positive, a
// batch that fits one frame, and (when producers run) a producer on every
// consumer's partition, so every consumer can read its quota.
func (c Config) validate() error {
	switch {
	case c.Address == "":
		return errors.New("bench: no address")
	case c.Producers < 0 || c.Consumers < 0 || c.Producers+c.Consumers == 0:
		return fmt.Errorf("bench: need producers or consumers (got %d and %d)", c.Producers, c.Consumers)
	case c.Streams < 1:
		return fmt.Errorf("bench: %d streams", c.Streams)
	case c.PartitionsPerTopic < 1 || c.PartitionsPerTopic > sinkMaxPartitions:
		return fmt.Errorf("bench: %d partitions per topic (1..=%d)", c.PartitionsPerTopic, sinkMaxPartitions)
	case c.MessageSize < 1 || c.MessageSize > wire.MaxMessagePayloadSize:
		return fmt.Errorf("bench: message size %d (1..=%d)", c.MessageSize, wire.MaxMessagePayloadSize)
	case c.MessagesPerBatch < 1 || c.BatchCount < 1:
		return fmt.Errorf("bench: %d messages per batch, %d batches", c.MessagesPerBatch, c.BatchCount)
	case c.Warmup < 0:
		return fmt.Errorf("bench: negative warmup %v", c.Warmup)
	}
	batch := uint64(c.MessagesPerBatch)*uint64(wire.FrameHeaderSize+c.MessageSize) + wire.BatchHeaderSize
	if batch+sendOverhead > wire.DefaultMaxFrameSize {
		return fmt.Errorf("bench: a batch of %d x %d B is %d bytes, above the %d-byte frame limit",
			c.MessagesPerBatch, c.MessageSize, batch, wire.DefaultMaxFrameSize)
	}
	if c.Producers > 0 {
		written := map[[2]int]bool{}
		for i := range c.Producers {
			written[c.placement(i)] = true
		}
		for i := range c.Consumers {
			if p := c.placement(i); !written[p] {
				return fmt.Errorf("bench: consumer %d reads stream %d partition %d, which no producer writes", i, p[0]+1, p[1])
			}
		}
	}
	return nil
}

// placement maps the i-th producer (or consumer) to a stream index and a
// partition id: round-robin over the streams, then over the partitions.
func (c Config) placement(i int) [2]int {
	return [2]int{i % c.Streams, (i / c.Streams) % c.PartitionsPerTopic}
}

// target is one actor's partition, by numeric ids.
type target struct{ stream, topic, partition uint32 }

// Run sets up the streams and topics, runs the producers and consumers
// concurrently, and reports what they measured. Every actor has its own
// connection; ctx bounds the whole run.
func Run(ctx context.Context, cfg Config) (Report, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return Report{}, err
	}
	topics, err := setup(ctx, cfg)
	if err != nil {
		return Report{}, err
	}
	actors := make([]*actor, 0, cfg.Producers+cfg.Consumers)
	defer func() {
		for _, a := range actors {
			a.client.Close()
		}
	}()
	for i := range cfg.Producers + cfg.Consumers {
		kind, index := KindProducer, i
		if i >= cfg.Producers {
			kind, index = KindConsumer, i-cfg.Producers
		}
		p := cfg.placement(index)
		t := topics[p[0]]
		t.partition = uint32(p[1])
		a, err := newActor(ctx, cfg, kind, index, t)
		if err != nil {
			return Report{}, err
		}
		actors = append(actors, a)
	}
	started := time.Now()
	if err := runAll(ctx, actors); err != nil {
		return Report{}, err
	}
	return buildReport(cfg, started, actors), nil
}

// runAll runs every actor at once; the first failure cancels the others.
func runAll(ctx context.Context, actors []*actor) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for _, a := range actors {
		wg.Go(func() {
			if err := a.run(ctx); err != nil {
				once.Do(func() {
					first = fmt.Errorf("bench: %s %d: %w", a.kind, a.index, err)
					cancel()
				})
			}
		})
	}
	wg.Wait()
	return first
}

// connect opens one logged-in client.
func connect(ctx context.Context, cfg Config) (*client.Client, error) {
	o := client.Options{
		Address:        cfg.Address,
		Username:       cfg.Username,
		Password:       cfg.Password,
		NoDelay:        true,
		RequestTimeout: cfg.RequestTimeout,
	}
	switch cfg.Transport {
	case "tls":
		o.TLS = client.TLSOptions{Enabled: true, CAFile: cfg.CAFile, InsecureSkipVerify: cfg.Insecure}
	case "quic":
		o.Transport = client.TransportQUIC
		o.QUIC.ValidateCertificate, o.QUIC.CAFile = !cfg.Insecure, cfg.CAFile
	case "ws":
		o.Transport = client.TransportWS
	case "wss":
		o.Transport = client.TransportWS
		o.TLS = client.TLSOptions{Enabled: true, CAFile: cfg.CAFile, InsecureSkipVerify: cfg.Insecure}
	}
	return client.Connect(ctx, o)
}

// setup makes sure every stream <prefix><n> has the topic with at least
// PartitionsPerTopic partitions, reusing what exists, and returns their
// ids by stream index.
func setup(ctx context.Context, cfg Config) ([]target, error) {
	c, err := connect(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("bench: setup connection: %w", err)
	}
	defer c.Close()
	out := make([]target, cfg.Streams)
	for i := range out {
		name := fmt.Sprintf("%s%d", cfg.StreamPrefix, i+1)
		stream, topic, err := ensureTopic(ctx, c, name, cfg.Topic, uint32(cfg.PartitionsPerTopic))
		if err != nil {
			return nil, fmt.Errorf("bench: setup of stream %s: %w", name, err)
		}
		out[i] = target{stream: stream, topic: topic}
	}
	return out, nil
}

// ensureTopic finds or creates the stream and its topic and grows the
// topic to at least partitions partitions. A create that loses a race with
// another run (name already exists) reads the winner's.
func ensureTopic(ctx context.Context, c *client.Client, streamName, topicName string, partitions uint32) (uint32, uint32, error) {
	s, err := c.GetStream(ctx, wire.Named(streamName))
	if errors.Is(err, wire.ErrStreamIdNotFound) {
		s, err = c.CreateStream(ctx, streamName, nil)
		if errors.Is(err, wire.ErrStreamNameAlreadyExists) {
			s, err = c.GetStream(ctx, wire.Named(streamName))
		}
	}
	if err != nil {
		return 0, 0, err
	}
	streamID := wire.ID(s.ID)
	t, err := c.GetTopic(ctx, streamID, wire.Named(topicName))
	if errors.Is(err, wire.ErrTopicIdNotFound) {
		t, err = c.CreateTopic(ctx, streamID, topicName, partitions, nil)
		if errors.Is(err, wire.ErrTopicNameAlreadyExists) {
			t, err = c.GetTopic(ctx, streamID, wire.Named(topicName))
		}
	}
	if err != nil {
		return 0, 0, err
	}
	if t.PartitionsCount < partitions {
		if err := c.CreatePartitions(ctx, streamID, wire.ID(t.ID), partitions-t.PartitionsCount); err != nil {
			return 0, 0, err
		}
	}
	return s.ID, t.ID, nil
}

// Actor kinds as reports name them.
const (
	KindProducer = "producer"
	KindConsumer = "consumer"
)

// actor is one producer or consumer with its own connection and figures.
type actor struct {
	cfg    Config
	kind   string
	index  int
	target target
	client *client.Client

	hist                      *Histogram
	start, end                time.Time
	messages, bytes, requests uint64
	emptyPolls                uint64
}

func newActor(ctx context.Context, cfg Config, kind string, index int, t target) (*actor, error) {
	c, err := connect(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("bench: %s %d: connect: %w", kind, index, err)
	}
	return &actor{cfg: cfg, kind: kind, index: index, target: t, client: c, hist: NewHistogram()}, nil
}

func (a *actor) run(ctx context.Context) error {
	if a.kind == KindProducer {
		return a.produce(ctx)
	}
	return a.consume(ctx)
}

// produce sends BatchCount batches after the warmup. The messages are built
// once; each batch only restamps their ids (unique per producer) and origin
// timestamps, so the loop allocates nothing per message.
func (a *actor) produce(ctx context.Context) error {
	payload := make([]byte, a.cfg.MessageSize)
	for i := range payload {
		payload[i] = byte('a' + i%26)
	}
	msgs := make([]wire.Message, a.cfg.MessagesPerBatch)
	for i := range msgs {
		msgs[i].Payload = payload
	}
	var seq uint64
	restamp := func() {
		now := uint64(time.Now().UnixMicro())
		for i := range msgs {
			seq++
			msgs[i].ID = wire.U128{Lo: seq, Hi: uint64(a.index) + 1}
			msgs[i].OriginTimestamp = now
		}
	}
	stream, topic, partitioning := wire.ID(a.target.stream), wire.ID(a.target.topic), wire.PartitionID(a.target.partition)
	for warmEnd := time.Now().Add(a.cfg.Warmup); time.Now().Before(warmEnd); {
		restamp()
		if _, err := a.client.SendMessages(ctx, stream, topic, partitioning, msgs); err != nil {
			return fmt.Errorf("warmup send: %w", err)
		}
	}
	batchBytes := uint64(a.cfg.MessagesPerBatch * a.cfg.MessageSize)
	a.start = time.Now()
	for range a.cfg.BatchCount {
		restamp()
		sent := time.Now()
		if _, err := a.client.SendMessages(ctx, stream, topic, partitioning, msgs); err != nil {
			return fmt.Errorf("send: %w", err)
		}
		a.hist.Record(time.Since(sent))
		a.requests++
		a.messages += uint64(len(msgs))
		a.bytes += batchBytes
	}
	a.end = time.Now()
	return nil
}

// consume polls its partition from offset 0 (Offset strategy) until it has
// read BatchCount*MessagesPerBatch messages. Empty polls (the producers
// are behind) are counted apart, paused on and not recorded as latency.
func (a *actor) consume(ctx context.Context) error {
	consumer := wire.SingleConsumer(wire.ID(uint32(a.index)))
	stream, topic, partition := wire.ID(a.target.stream), wire.ID(a.target.topic), wire.Partition(a.target.partition)
	perPoll := uint64(a.cfg.MessagesPerBatch)
	for warmEnd := time.Now().Add(a.cfg.Warmup); time.Now().Before(warmEnd); {
		if _, err := a.client.PollMessages(ctx, consumer, stream, topic, partition, wire.OffsetStrategy(0), uint32(perPoll), false); err != nil {
			return fmt.Errorf("warmup poll: %w", err)
		}
	}
	quota := uint64(a.cfg.BatchCount) * perPoll
	var offset uint64
	a.start = time.Now()
	for a.messages < quota {
		count := uint32(min(perPoll, quota-a.messages))
		asked := time.Now()
		polled, err := a.client.PollMessages(ctx, consumer, stream, topic, partition, wire.OffsetStrategy(offset), count, false)
		if err != nil {
			return fmt.Errorf("poll at offset %d: %w", offset, err)
		}
		took := time.Since(asked)
		n, bytes, last := tally(polled)
		if n == 0 {
			a.emptyPolls++
			if err := pause(ctx, emptyPollPause); err != nil {
				return err
			}
			continue
		}
		a.hist.Record(took)
		a.requests++
		a.messages += n
		a.bytes += bytes
		offset = last + 1
	}
	a.end = time.Now()
	return nil
}

// tally counts a poll's messages and payload bytes and finds its last
// offset, walking the records in place.
func tally(p *wire.PolledMessages) (messages, payloadBytes, lastOffset uint64) {
	for it := p.Messages(); ; {
		m, ok := it.Next()
		if !ok {
			return messages, payloadBytes, lastOffset
		}
		messages++
		payloadBytes += uint64(len(m.Payload))
		lastOffset = m.Offset
	}
}

// pause waits d or until ctx ends.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
