package actors

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"iggynode/telemetry/spanfile"
	"iggynode/telemetry/traceid"
)

// The two spans every send makes (its request, and its op on each
// replica) are not built on the path that answers the client: the actors
// fill a spanRecord (timestamps and the few numbers a span carries, into
// reused memory) and hand it, finished, to one goroutine that turns it
// into an SDK span with those timestamps. The SDK's span start, events,
// end and snapshot, and their garbage, were most of what full tracing
// cost a small send (docs/benchmarks.md "Telemetry overhead"); here they
// overlap the next request instead of delaying this one. Records gather
// for a few milliseconds before the builder wakes: waking a goroutine for
// every span costs the serving threads more than building it does.
//
// A request record's trace and span ids are drawn when the request
// begins, so the op it admits can link to it before either is built.

// spanKind tells the two kinds of record apart.
type spanKind uint8

const (
	kindRequest spanKind = iota
	kindOp
)

// spanRecord is one finished (or in-flight) request or op span.
type spanRecord struct {
	kind       spanKind
	start, end time.Time
	replica    uint8
	// Request: its chosen ids, command, sizes and status; stream, topic
	// and partition when a partition actor served it (hasRef).
	trace     trace.TraceID
	span      trace.SpanID
	cmd       uint32
	bytesIn   int
	bytesOut  int
	status    uint32
	replied   bool
	hasRef    bool
	stream    uint32
	topic     uint32
	partition uint32
	// Op: derived trace id (trace), group, op, view, the request it links
	// to, its events, and how it ended when not applied.
	group, op uint64
	view      uint32
	link      trace.SpanContext
	events    []spanEvent
	outcome   string
	failed    bool
}

// spanEvent is one consensus step on an op span; peer < 0: none.
type spanEvent struct {
	name string
	at   time.Time
	peer int16
}

// event appends a step at now (bounded: a stuck op retransmitted for
// long keeps its first steps).
func (r *spanRecord) event(name string, at time.Time, peer int16) {
	if len(r.events) < spanMaxEvent {
		r.events = append(r.events, spanEvent{name: name, at: at, peer: peer})
	}
}

// spanContext is the context ops link to (request records).
func (r *spanRecord) spanContext() trace.SpanContext {
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: r.trace, SpanID: r.span})
}

// setRef records the partition that served the request. The partition
// actor writes it before it sends the reply, and the connection hands the
// record on only after that reply (or, without one, with hasRef unread).
func (r *spanRecord) setRef(stream, topic, partition uint32) {
	r.stream, r.topic, r.partition, r.hasRef = stream, topic, partition, true
}

// spanQueue builds the SDK spans of finished records on its own
// goroutine. A record that finds the queue full is dropped and counted
// (iggy.telemetry.spans.dropped), as the SDK's batch processor drops
// spans behind it: the actors never wait for telemetry.
type spanQueue struct {
	tracer  trace.Tracer
	mu      sync.Mutex
	pending []*spanRecord
	wake    chan struct{} // the first record of a batch arrived
	full    chan struct{} // a batch is big enough to build now
	stop    chan struct{}
	done    chan struct{}
	dropped atomic.Int64
	ops     sync.Pool // *spanRecord of kindOp, events kept
	once    sync.Once
}

const (
	spanGather   = 10 * time.Millisecond // how long records gather before a build
	spanBatch    = 1024                  // records that start a build at once
	spanBacklog  = 32768                 // records held at most; more are dropped
	spanMaxEvent = 64                    // events kept per op span; more are dropped
)

func newSpanQueue(tracer trace.Tracer) *spanQueue {
	q := idleSpanQueue(tracer)
	go q.run()
	return q
}

// idleSpanQueue is a queue whose builder is not started (tests).
func idleSpanQueue(tracer trace.Tracer) *spanQueue {
	return &spanQueue{tracer: tracer, wake: make(chan struct{}, 1), full: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{})}
}

// newOp is an empty op record from the pool.
func (q *spanQueue) newOp() *spanRecord {
	if r, ok := q.ops.Get().(*spanRecord); ok {
		return r
	}
	return &spanRecord{kind: kindOp, events: make([]spanEvent, 0, 16)}
}

// finish hands a record to the builder.
func (q *spanQueue) finish(r *spanRecord) {
	q.mu.Lock()
	if len(q.pending) >= spanBacklog {
		q.mu.Unlock()
		q.dropped.Add(1)
		q.recycle(r)
		return
	}
	q.pending = append(q.pending, r)
	n := len(q.pending)
	q.mu.Unlock()
	switch n {
	case 1:
		signal(q.wake)
	case spanBatch:
		signal(q.full)
	}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

func (q *spanQueue) recycle(r *spanRecord) {
	if r.kind == kindOp {
		events := r.events[:0]
		*r = spanRecord{kind: kindOp, events: events}
		q.ops.Put(r)
	}
}

func (q *spanQueue) run() {
	defer close(q.done)
	gather := time.NewTimer(spanGather)
	gather.Stop()
	var batch []*spanRecord
	for {
		select {
		case <-q.wake:
		case <-q.stop:
			q.buildPending(batch)
			return
		}
		gather.Reset(spanGather)
		select {
		case <-gather.C:
		case <-q.full:
			gather.Stop()
		case <-q.stop:
			q.buildPending(batch)
			return
		}
		batch = q.buildPending(batch)
	}
}

// buildPending builds the records gathered so far; batch is the slice
// they are swapped into, returned for reuse.
func (q *spanQueue) buildPending(batch []*spanRecord) []*spanRecord {
	q.mu.Lock()
	batch, q.pending = q.pending, batch[:0]
	q.mu.Unlock()
	for i, r := range batch {
		q.build(r)
		batch[i] = nil
	}
	return batch
}

// close builds what is queued and stops the builder; records finished
// later are dropped. The node calls it after its actors stopped and
// before the tracer provider shuts down.
func (q *spanQueue) close() {
	q.once.Do(func() { close(q.stop) })
	<-q.done
}

func (q *spanQueue) build(r *spanRecord) {
	switch r.kind {
	case kindRequest:
		q.buildRequest(r)
	case kindOp:
		q.buildOp(r)
	}
	q.recycle(r)
}

func (q *spanQueue) buildRequest(r *spanRecord) {
	ctx := traceid.WithSpan(context.Background(), r.trace, r.span)
	attrs := make([]attribute.KeyValue, 0, 8)
	attrs = append(attrs, attribute.String(spanfile.AttrCommand, commandName(r.cmd)),
		attribute.Int(spanfile.AttrReplica, int(r.replica)), attribute.Int(spanfile.AttrBytesIn, r.bytesIn))
	if r.replied {
		if r.hasRef {
			attrs = append(attrs, attribute.Int64(spanfile.AttrStream, int64(r.stream)),
				attribute.Int64(spanfile.AttrTopic, int64(r.topic)), attribute.Int64(spanfile.AttrPart, int64(r.partition)))
		}
		attrs = append(attrs, attribute.Int64(spanfile.AttrStatus, int64(r.status)), attribute.Int(spanfile.AttrBytesOut, r.bytesOut))
	}
	_, s := q.tracer.Start(ctx, spanfile.SpanRequest, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithTimestamp(r.start), trace.WithAttributes(attrs...))
	switch {
	case !r.replied:
		s.SetStatus(codes.Error, "no reply")
	case r.status != 0:
		s.SetStatus(codes.Error, "status "+strconv.FormatUint(uint64(r.status), 10))
	}
	s.End(trace.WithTimestamp(r.end))
}

func (q *spanQueue) buildOp(r *spanRecord) {
	ctx := traceid.With(context.Background(), r.trace)
	opts := []trace.SpanStartOption{trace.WithTimestamp(r.start), trace.WithAttributes(
		attribute.Int64(spanfile.AttrGroup, int64(r.group)), attribute.Int64(spanfile.AttrOp, int64(r.op)),
		attribute.Int64(spanfile.AttrView, int64(r.view)), attribute.Int(spanfile.AttrReplica, int(r.replica)))}
	if r.link.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: r.link}))
	}
	_, s := q.tracer.Start(ctx, spanfile.SpanOp, opts...)
	if !s.IsRecording() {
		return // not sampled
	}
	for _, e := range r.events {
		if e.peer >= 0 {
			s.AddEvent(e.name, trace.WithTimestamp(e.at), trace.WithAttributes(attribute.Int(spanfile.AttrPeer, int(e.peer))))
		} else {
			s.AddEvent(e.name, trace.WithTimestamp(e.at))
		}
	}
	if r.outcome != "" {
		s.SetAttributes(attribute.String(spanfile.AttrOutcome, r.outcome))
		if r.failed {
			s.SetStatus(codes.Error, r.outcome)
		}
	}
	s.End(trace.WithTimestamp(r.end))
}
