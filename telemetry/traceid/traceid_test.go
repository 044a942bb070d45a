package traceid

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

func TestChosenTraceIDAndRatioSampling(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithIDGenerator(Generator()))
	tr := tp.Tracer("test")
	want := trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	_, a := tr.Start(With(context.Background(), want), "a")
	_, b := tr.Start(With(context.Background(), want), "b")
	_, c := tr.Start(context.Background(), "c")
	a.End()
	b.End()
	c.End()
	spans := rec.Ended()
	if len(spans) != 3 {
		t.Fatalf("%d spans", len(spans))
	}
	if spans[0].SpanContext().TraceID() != want || spans[1].SpanContext().TraceID() != want {
		t.Fatalf("chosen trace id not used: %v %v", spans[0].SpanContext().TraceID(), spans[1].SpanContext().TraceID())
	}
	if spans[0].SpanContext().SpanID() == spans[1].SpanContext().SpanID() {
		t.Fatal("two spans of one trace share a span id")
	}
	if spans[2].SpanContext().TraceID() == want || !spans[2].SpanContext().TraceID().IsValid() {
		t.Fatal("a context without a chosen id did not get a fresh random one")
	}

	// Two providers (two replicas) with one ratio decide alike per id.
	for _, ratio := range []float64{0.25, 0.5} {
		r1, r2 := tracetest.NewSpanRecorder(), tracetest.NewSpanRecorder()
		mk := func(r *tracetest.SpanRecorder) trace.Tracer {
			return sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(r), sdktrace.WithIDGenerator(Generator()),
				sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio)))).Tracer("t")
		}
		t1, t2 := mk(r1), mk(r2)
		for i := 0; i < 400; i++ {
			id := trace.TraceID{byte(i), byte(i >> 8), 7, 7, 7, 7, 7, 7, byte(i * 31), byte(i * 17), byte(i * 13), 1, 2, 3, 4, 5}
			_, s1 := t1.Start(With(context.Background(), id), "op")
			_, s2 := t2.Start(With(context.Background(), id), "op")
			s1.End()
			s2.End()
		}
		n1, n2 := len(r1.Ended()), len(r2.Ended())
		if n1 != n2 || n1 == 0 || n1 == 400 {
			t.Fatalf("ratio %v: replicas kept %d and %d of 400", ratio, n1, n2)
		}
		for i := range r1.Ended() {
			if r1.Ended()[i].SpanContext().TraceID() != r2.Ended()[i].SpanContext().TraceID() {
				t.Fatalf("ratio %v: the replicas kept different ops", ratio)
			}
		}
	}
}

// A span built after the fact takes both ids drawn earlier, so a link
// made in between points at it.
func TestChosenSpanID(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tr := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithIDGenerator(Generator())).Tracer("test")
	tid, sid := Random()
	tid2, sid2 := Random()
	if !tid.IsValid() || !sid.IsValid() || tid == tid2 || sid == sid2 {
		t.Fatalf("Random drew %v/%v and %v/%v", tid, sid, tid2, sid2)
	}
	_, s := tr.Start(WithSpan(context.Background(), tid, sid), "request")
	s.End()
	_, r := tr.Start(WithSpan(context.Background(), tid, trace.SpanID{}), "request")
	r.End()
	got := rec.Ended()
	if got[0].SpanContext().TraceID() != tid || got[0].SpanContext().SpanID() != sid {
		t.Fatalf("span took %v/%v, want the chosen %v/%v", got[0].SpanContext().TraceID(), got[0].SpanContext().SpanID(), tid, sid)
	}
	if got[1].SpanContext().TraceID() != tid || !got[1].SpanContext().SpanID().IsValid() || got[1].SpanContext().SpanID() == sid {
		t.Fatalf("an unchosen span id was not drawn: %v", got[1].SpanContext().SpanID())
	}
}
