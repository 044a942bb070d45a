package actors

import (
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"iggynode/telemetry/spanfile"
	"iggynode/telemetry/traceid"
	"iggynode/wire"
)

// recordingProvider is a tracer provider that records every span in rec
// and honours chosen ids, as the node's does (telemetry.Setup).
func recordingProvider(rec *tracetest.SpanRecorder) *sdktrace.TracerProvider {
	return sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithIDGenerator(traceid.Generator()))
}

// A record becomes an SDK span with the times the actors took, not the
// time it was built, and the ids drawn for it.
func TestSpanQueueBuildsRecordsAsTheyHappened(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	q := newSpanQueue(recordingProvider(rec).Tracer("t"))
	t0 := time.Now().Add(-time.Hour)
	at := func(us int) time.Time { return t0.Add(time.Duration(us) * time.Microsecond) }

	req := &spanRecord{kind: kindRequest, start: at(0), end: at(90), replica: 2, cmd: uint32(wire.CodeSendMessages), bytesIn: 300,
		bytesOut: 256, status: 0, replied: true}
	req.trace, req.span = traceid.Random()
	req.setRef(1, 2, 3)
	op := q.newOp()
	op.trace, op.start, op.end, op.replica, op.group, op.op, op.view, op.link = trace.TraceID{9}, at(10), at(80), 2, 7, 42, 3, req.spanContext()
	op.event(spanfile.EventAdmitted, at(10), -1)
	op.event(spanfile.EventPrepareOK, at(50), 1)
	op.event(spanfile.EventApplied, at(80), -1)
	cut := q.newOp()
	cut.trace, cut.start, cut.end, cut.outcome, cut.failed = trace.TraceID{8}, at(20), at(30), "truncated", true
	q.finish(op)
	q.finish(req)
	q.finish(cut)
	q.close()

	spans := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		spans[s.SpanContext().TraceID().String()] = s
	}
	r, o, c := spans[req.trace.String()], spans[trace.TraceID{9}.String()], spans[trace.TraceID{8}.String()]
	if r == nil || o == nil || c == nil || len(spans) != 3 {
		t.Fatalf("built %d spans: %v", len(spans), spans)
	}
	if r.SpanContext().SpanID() != req.span || !r.StartTime().Equal(at(0)) || !r.EndTime().Equal(at(90)) || r.Status().Code == codes.Error {
		t.Errorf("request span %v %v..%v %v", r.SpanContext(), r.StartTime(), r.EndTime(), r.Status())
	}
	if attrInt(r.Attributes(), spanfile.AttrPart) != 3 || attrInt(r.Attributes(), spanfile.AttrBytesOut) != 256 ||
		attrString(r.Attributes(), spanfile.AttrCommand) != wire.CodeSendMessages.String() {
		t.Errorf("request attributes %v", r.Attributes())
	}
	if !o.StartTime().Equal(at(10)) || !o.EndTime().Equal(at(80)) || len(o.Links()) != 1 || o.Links()[0].SpanContext.SpanID() != req.span {
		t.Errorf("op span %v..%v links %v", o.StartTime(), o.EndTime(), o.Links())
	}
	if ev := o.Events(); len(ev) != 3 || ev[1].Name != spanfile.EventPrepareOK || !ev[1].Time.Equal(at(50)) ||
		attrInt(ev[1].Attributes, spanfile.AttrPeer) != 1 || len(ev[0].Attributes) != 0 {
		t.Errorf("op events %v", ev)
	}
	if attrInt(o.Attributes(), spanfile.AttrOp) != 42 || attrInt(o.Attributes(), spanfile.AttrGroup) != 7 || attrInt(o.Attributes(), spanfile.AttrView) != 3 {
		t.Errorf("op attributes %v", o.Attributes())
	}
	if c.Status().Code != codes.Error || attrString(c.Attributes(), spanfile.AttrOutcome) != "truncated" {
		t.Errorf("truncated op: %v %v", c.Status(), c.Attributes())
	}
}

// A builder that falls behind costs spans, never a wait: past the
// backlog records are dropped and counted; what was queued is built on
// close.
func TestSpanQueueDropsPastItsBacklog(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	q := idleSpanQueue(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)).Tracer("t"))
	for i := 0; i < spanBacklog+5; i++ {
		r := q.newOp()
		r.trace, r.op = trace.TraceID{1, byte(i), byte(i >> 8)}, uint64(i)
		q.finish(r)
	}
	if q.dropped.Load() != 5 {
		t.Fatalf("dropped %d, want 5", q.dropped.Load())
	}
	go q.run()
	q.close()
	if n := len(rec.Ended()); n != spanBacklog {
		t.Fatalf("built %d spans, want the %d queued", n, spanBacklog)
	}
	q.finish(q.newOp()) // after close: queued, never built, no panic
}
