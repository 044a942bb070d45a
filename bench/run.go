package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sync"
	"sync/atomic"
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
	// DefaultConsumerGroup names the group of the balanced-consumer-group
	// workload.
	DefaultConsumerGroup = "bench-group"
	// DefaultProgressInterval is how often Config.Progress gets a line.
	DefaultProgressInterval = time.Second
	// emptyPollPause is how long a consumer waits after an empty poll
	// before asking again (its producers have not caught up yet).
	emptyPollPause = time.Millisecond
	// sendOverhead bounds the non-batch bytes of a SendMessages frame: the
	// 256-byte header and the metadata section with numeric ids.
	sendOverhead = wire.HeaderSize + 64
)

// Workloads (Config.Workload), after iggy-bench's. See the package doc.
const (
	// WorkloadMixed is producers and consumers side by side, placed
	// round-robin over Streams x PartitionsPerTopic (the default).
	WorkloadMixed = "mixed"
	// WorkloadPinnedProducer: producers only, each on its own stream.
	WorkloadPinnedProducer = "pinned-producer"
	// WorkloadPinnedConsumer: consumers only, each reading its own stream.
	WorkloadPinnedConsumer = "pinned-consumer"
	// WorkloadPinnedProducerAndConsumer: producer i and consumer i share
	// stream i.
	WorkloadPinnedProducerAndConsumer = "pinned-producer-and-consumer"
	// WorkloadBalancedProducer: producers send Balanced to one topic with
	// several partitions.
	WorkloadBalancedProducer = "balanced-producer"
	// WorkloadBalancedConsumerGroup: consumers join one consumer group and
	// poll it until they have read the total together.
	WorkloadBalancedConsumerGroup = "balanced-consumer-group"
	// WorkloadEndToEnd: each actor sends a batch then polls it back; the
	// latency is end to end.
	WorkloadEndToEnd = "end-to-end-producing-consumer"
	// WorkloadBalancedProducerAndConsumerGroup: producers send Balanced to
	// one topic while consumers of one consumer group read everything they
	// send.
	WorkloadBalancedProducerAndConsumerGroup = "balanced-producer-and-consumer-group"
	// WorkloadEndToEndGroup: each actor sends a batch Balanced to one topic
	// and polls the consumer group all of them belong to; its latency is a
	// message's age when polled (now minus its origin timestamp, stamped
	// when the rate limiter let its batch go).
	WorkloadEndToEndGroup = "end-to-end-producing-consumer-group"
)

// Workloads lists the accepted Config.Workload values.
func Workloads() []string {
	return []string{WorkloadMixed, WorkloadPinnedProducer, WorkloadPinnedConsumer, WorkloadPinnedProducerAndConsumer,
		WorkloadBalancedProducer, WorkloadBalancedConsumerGroup, WorkloadBalancedProducerAndConsumerGroup,
		WorkloadEndToEnd, WorkloadEndToEndGroup}
}

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

	// Workload is one of Workloads(); "" means WorkloadMixed.
	Workload string `json:"workload"`
	// TotalSize is the payload bytes the run moves, an alternative to
	// BatchCount: split evenly over the producers (the consumers when none
	// produce), rounded up to whole batches.
	TotalSize uint64 `json:"total_size,omitempty"`
	// RateLimit caps every actor's sends at this many payload bytes per
	// second (token bucket, one batch of burst); 0 means no limit.
	RateLimit uint64 `json:"rate_limit_bytes_per_s,omitempty"`
	// ConsumerGroup names the balanced-consumer-group workload's group; ""
	// means "bench-group".
	ConsumerGroup string `json:"consumer_group,omitempty"`
	// Progress, when set, gets a line every ProgressInterval (0: 1 s) while
	// the actors run: messages and MB/s so far per group.
	Progress         io.Writer     `json:"-"`
	ProgressInterval time.Duration `json:"-"`

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
	if c.Workload == "" {
		c.Workload = WorkloadMixed
	}
	if c.Streams == 0 {
		c.Streams = max(c.Producers, c.Consumers)
		if c.balanced() {
			c.Streams = 1
		}
	}
	if c.PartitionsPerTopic == 0 {
		switch c.Workload {
		case WorkloadBalancedProducer:
			c.PartitionsPerTopic = max(c.Producers, 1)
		case WorkloadBalancedConsumerGroup:
			c.PartitionsPerTopic = max(c.Consumers, 1)
		case WorkloadBalancedProducerAndConsumerGroup, WorkloadEndToEndGroup:
			c.PartitionsPerTopic = max(c.Producers, c.Consumers, 1)
		default:
			c.PartitionsPerTopic = 1
		}
	}
	if c.ConsumerGroup == "" {
		c.ConsumerGroup = DefaultConsumerGroup
	}
	if c.ProgressInterval <= 0 {
		c.ProgressInterval = DefaultProgressInterval
	}
	if c.TotalSize > 0 && c.BatchCount == 0 && c.MessagesPerBatch > 0 && c.MessageSize > 0 {
		drivers := c.Producers
		if drivers == 0 {
			drivers = c.Consumers
		}
		if drivers > 0 {
			perBatch := uint64(drivers) * uint64(c.MessagesPerBatch) * uint64(c.MessageSize)
			c.BatchCount = int(min((c.TotalSize+perBatch-1)/perBatch, math.MaxInt32))
		}
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
	case c.Warmup > 0 && c.Workload == WorkloadEndToEndGroup:
		return fmt.Errorf("bench: workload %s has no warmup (the group's polls would read its messages)", c.Workload)
	case !slices.Contains(Workloads(), c.Workload):
		return fmt.Errorf("bench: unknown workload %q (one of %v)", c.Workload, Workloads())
	}
	if err := c.validateWorkload(); err != nil {
		return err
	}
	batch := uint64(c.MessagesPerBatch)*uint64(wire.FrameHeaderSize+c.MessageSize) + wire.BatchHeaderSize
	if batch+sendOverhead > wire.DefaultMaxFrameSize {
		return fmt.Errorf("bench: a batch of %d x %d B is %d bytes, above the %d-byte frame limit",
			c.MessagesPerBatch, c.MessageSize, batch, wire.DefaultMaxFrameSize)
	}
	if c.Producers > 0 && c.Consumers > 0 && !c.balanced() {
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

// balanced reports whether the workload runs on one shared topic.
func (c Config) balanced() bool {
	switch c.Workload {
	case WorkloadBalancedProducer, WorkloadBalancedConsumerGroup, WorkloadBalancedProducerAndConsumerGroup, WorkloadEndToEndGroup:
		return true
	}
	return false
}

// grouped reports whether the workload reads through a consumer group.
func (c Config) grouped() bool {
	switch c.Workload {
	case WorkloadBalancedConsumerGroup, WorkloadBalancedProducerAndConsumerGroup, WorkloadEndToEndGroup:
		return true
	}
	return false
}

// endToEnd reports whether every actor both sends and polls.
func (c Config) endToEnd() bool {
	return c.Workload == WorkloadEndToEnd || c.Workload == WorkloadEndToEndGroup
}

// ActorsText says who runs: "2 producers, 1 consumer", or for the
// end-to-end workloads (whose actors are counted as producers)
// "2 producing consumers".
func (c Config) ActorsText() string {
	plural := func(n int, what string) string {
		if n == 1 {
			return fmt.Sprintf("1 %s", what)
		}
		return fmt.Sprintf("%d %ss", n, what)
	}
	if c.endToEnd() {
		return plural(c.Producers, "producing consumer")
	}
	return plural(c.Producers, "producer") + ", " + plural(c.Consumers, "consumer")
}

// validateWorkload checks the actor counts each workload runs with.
func (c Config) validateWorkload() error {
	need := func(producers, consumers bool) error {
		if producers != (c.Producers > 0) || consumers != (c.Consumers > 0) {
			return fmt.Errorf("bench: workload %s runs %s (got %d producers, %d consumers)",
				c.Workload, map[[2]bool]string{{true, false}: "producers only", {false, true}: "consumers only", {true, true}: "producers and consumers"}[[2]bool{producers, consumers}],
				c.Producers, c.Consumers)
		}
		return nil
	}
	switch c.Workload {
	case WorkloadPinnedProducer, WorkloadBalancedProducer, WorkloadEndToEnd, WorkloadEndToEndGroup:
		if err := need(true, false); err != nil {
			return err
		}
	case WorkloadPinnedConsumer, WorkloadBalancedConsumerGroup:
		if err := need(false, true); err != nil {
			return err
		}
	case WorkloadPinnedProducerAndConsumer, WorkloadBalancedProducerAndConsumerGroup:
		if err := need(true, true); err != nil {
			return err
		}
	}
	switch c.Workload {
	case WorkloadPinnedProducer, WorkloadPinnedConsumer, WorkloadPinnedProducerAndConsumer, WorkloadEndToEnd:
		if actors := max(c.Producers, c.Consumers); c.Streams != actors {
			return fmt.Errorf("bench: workload %s pins one stream per actor: %d streams for %d actors", c.Workload, c.Streams, actors)
		}
	}
	return nil
}

// placement maps the i-th producer (or consumer) to a stream index and a
// partition id: round-robin over the streams, then over the partitions.
func (c Config) placement(i int) [2]int {
	return [2]int{i % c.Streams, (i / c.Streams) % c.PartitionsPerTopic}
}

// target is one actor's partition (and, for balanced-consumer-group, its
// group), by numeric ids.
type target struct{ stream, topic, partition, group uint32 }

// Run sets up the streams and topics, runs the producers and consumers
// concurrently, and reports what they measured. Every actor has its own
// connection; ctx bounds the whole run.
func Run(ctx context.Context, cfg Config) (Report, error) {
	if cfg.TotalSize > 0 && cfg.BatchCount > 0 {
		return Report{}, errors.New("bench: total size and batch count are alternatives; set one")
	}
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
	// The group's shared quota: consumers claim polls from it until it is
	// read (balanced-consumer-group).
	// Consumers alone read BatchCount batches each; beside producers (or as
	// producing consumers) they read what the producers send.
	readers := cfg.Consumers
	if cfg.Producers > 0 {
		readers = cfg.Producers
	}
	shared := &quota{total: uint64(readers) * uint64(cfg.BatchCount) * uint64(cfg.MessagesPerBatch)}
	shared.left.Store(int64(shared.total))
	for i := range cfg.Producers + cfg.Consumers {
		kind, index := KindProducer, i
		if i >= cfg.Producers {
			kind, index = KindConsumer, i-cfg.Producers
		}
		if cfg.endToEnd() {
			kind = KindProducingConsumer
		}
		p := cfg.placement(index)
		t := topics[p[0]]
		t.partition = uint32(p[1])
		if cfg.balanced() {
			t.partition = 0 // Balanced sends and group polls pick theirs
		}
		a, err := newActor(ctx, cfg, kind, index, t)
		if err != nil {
			return Report{}, err
		}
		a.shared = shared
		actors = append(actors, a)
	}
	started := time.Now()
	series := map[string]*series{}
	for _, a := range actors {
		if series[a.kind] == nil {
			series[a.kind] = newSeries(started)
		}
		a.rec = newSecondRecorder(series[a.kind])
	}
	stopProgress := startProgress(cfg.Progress, cfg.ProgressInterval, started, actors)
	err = runAll(ctx, actors)
	stopProgress()
	if err != nil {
		return Report{}, err
	}
	return buildReport(cfg, started, actors, series), nil
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
		o.QUIC.SkipCertificateVerification = cfg.Insecure
	case "ws":
		o.Transport = client.TransportWS
	case "wss":
		o.Transport = client.TransportWS
		o.TLS = client.TLSOptions{Enabled: true, CAFile: cfg.CAFile, InsecureSkipVerify: cfg.Insecure}
	case "http":
		o.Transport = client.TransportHTTP // the REST API (address: the node's http.address)
	case "https":
		o.Transport = client.TransportHTTP
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
	if cfg.grouped() {
		group, err := ensureGroup(ctx, c, out[0], cfg.ConsumerGroup)
		if err != nil {
			return nil, fmt.Errorf("bench: setup of consumer group %s: %w", cfg.ConsumerGroup, err)
		}
		for i := range out {
			out[i].group = group
		}
	}
	return out, nil
}

// ensureGroup finds or creates the consumer group on t's topic.
func ensureGroup(ctx context.Context, c *client.Client, t target, name string) (uint32, error) {
	stream, topic := wire.ID(t.stream), wire.ID(t.topic)
	g, err := c.GetConsumerGroup(ctx, stream, topic, wire.Named(name))
	if errors.Is(err, wire.ErrConsumerGroupIdNotFound) {
		g, err = c.CreateConsumerGroup(ctx, stream, topic, name)
		if errors.Is(err, wire.ErrConsumerGroupNameAlreadyExists) {
			g, err = c.GetConsumerGroup(ctx, stream, topic, wire.Named(name))
		}
	}
	if err != nil {
		return 0, err
	}
	return g.ID, nil
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
	// KindProducingConsumer is the end-to-end workload's actor.
	KindProducingConsumer = "producing-consumer"
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

	// live mirrors messages and bytes for the progress line, which reads
	// them while the actor runs.
	liveMessages, liveBytes atomic.Uint64
	rec                     *secondRecorder // this actor's time series
	limiter                 *tokenBucket    // nil without a rate limit
	shared                  *quota          // balanced-consumer-group's shared quota
}

func newActor(ctx context.Context, cfg Config, kind string, index int, t target) (*actor, error) {
	c, err := connect(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("bench: %s %d: connect: %w", kind, index, err)
	}
	a := &actor{cfg: cfg, kind: kind, index: index, target: t, client: c, hist: NewHistogram()}
	if cfg.RateLimit > 0 {
		a.limiter = newTokenBucket(cfg.RateLimit, uint64(cfg.MessagesPerBatch)*uint64(cfg.MessageSize))
	}
	return a, nil
}

func (a *actor) run(ctx context.Context) error {
	defer a.rec.flush()
	switch {
	case a.kind == KindProducer:
		return a.produce(ctx)
	case a.kind == KindProducingConsumer && a.cfg.grouped():
		return a.produceConsumeGroup(ctx)
	case a.kind == KindProducingConsumer:
		return a.produceConsume(ctx)
	case a.cfg.grouped():
		return a.consumeGroup(ctx)
	}
	return a.consume(ctx)
}

// record counts one measured request that completed at done.
func (a *actor) record(done time.Time, took time.Duration, messages, bytes uint64) {
	a.hist.Record(took)
	a.requests++
	a.messages += messages
	a.bytes += bytes
	a.liveMessages.Add(messages)
	a.liveBytes.Add(bytes)
	a.rec.record(done, took, messages, bytes)
}

// limit waits for the rate limiter's leave to send n payload bytes.
func (a *actor) limit(ctx context.Context, n int) error {
	if a.limiter == nil {
		return nil
	}
	return a.limiter.take(ctx, n)
}

// produce sends BatchCount batches after the warmup. The messages are built
// once; each batch only restamps their ids (unique per producer) and origin
// timestamps, so the loop allocates nothing per message.
func (a *actor) produce(ctx context.Context) error {
	msgs, restamp := a.batch()
	stream, topic, partitioning := wire.ID(a.target.stream), wire.ID(a.target.topic), wire.PartitionID(a.target.partition)
	if a.cfg.balanced() {
		partitioning = wire.Balanced()
	}
	batchBytes := a.cfg.MessagesPerBatch * a.cfg.MessageSize
	for warmEnd := time.Now().Add(a.cfg.Warmup); time.Now().Before(warmEnd); {
		if err := a.limit(ctx, batchBytes); err != nil {
			return err
		}
		restamp()
		if _, err := a.client.SendMessages(ctx, stream, topic, partitioning, msgs); err != nil {
			return fmt.Errorf("warmup send: %w", err)
		}
	}
	a.start = time.Now()
	for range a.cfg.BatchCount {
		if err := a.limit(ctx, batchBytes); err != nil {
			return err
		}
		restamp()
		sent := time.Now()
		if _, err := a.client.SendMessages(ctx, stream, topic, partitioning, msgs); err != nil {
			return fmt.Errorf("send: %w", err)
		}
		done := time.Now()
		a.record(done, done.Sub(sent), uint64(len(msgs)), uint64(batchBytes))
	}
	a.end = time.Now()
	return nil
}

// batch builds the actor's reusable messages around one shared payload
// and the function that restamps them for the next send: ids (unique per
// actor: its index in the high half, a sequence in the low) and origin
// timestamps.
func (a *actor) batch() ([]wire.Message, func()) {
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
	return msgs, restamp
}

// consume polls its partition from offset 0 (Offset strategy) until it has
// read BatchCount*MessagesPerBatch messages. Empty polls (the producers
// are behind) are counted apart, paused on and not recorded as latency.
func (a *actor) consume(ctx context.Context) error {
	consumer := wire.SingleConsumer(wire.ID(uint32(a.index)))
	stream, topic, partition := wire.ID(a.target.stream), wire.ID(a.target.topic), wire.Partition(a.target.partition)
	perPoll := uint64(a.cfg.MessagesPerBatch)
	var polled client.Polled // reused: the zero-copy poll
	for warmEnd := time.Now().Add(a.cfg.Warmup); time.Now().Before(warmEnd); {
		if err := a.client.PollMessagesInto(ctx, &polled, consumer, stream, topic, partition, wire.OffsetStrategy(0), uint32(perPoll), false); err != nil {
			return fmt.Errorf("warmup poll: %w", err)
		}
	}
	quota := uint64(a.cfg.BatchCount) * perPoll
	var offset uint64
	a.start = time.Now()
	for a.messages < quota {
		count := uint32(min(perPoll, quota-a.messages))
		asked := time.Now()
		err := a.client.PollMessagesInto(ctx, &polled, consumer, stream, topic, partition, wire.OffsetStrategy(offset), count, false)
		if err != nil {
			return fmt.Errorf("poll at offset %d: %w", offset, err)
		}
		done := time.Now()
		n, bytes, last := tally(&polled.PolledMessages)
		if n == 0 {
			if err := a.emptyPoll(ctx); err != nil {
				return err
			}
			continue
		}
		a.record(done, done.Sub(asked), n, bytes)
		offset = last + 1
	}
	a.end = time.Now()
	return nil
}

// emptyPoll counts a poll that returned nothing and pauses before the
// next, so an idle partition is not polled in a tight loop.
func (a *actor) emptyPoll(ctx context.Context) error {
	a.emptyPolls++
	return pause(ctx, emptyPollPause)
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
