// Package traceid lets the node choose the ids of a root span: the
// spans every replica records for one replicated op share the id derived
// from (cluster, group, op) (spanfile.OpTraceID), so they form one trace
// although the wire carries no trace context. Installed as the tracer
// provider's IDGenerator; a context without a chosen id gets random ids,
// as the SDK's default generator gives. A span built after the fact
// (actors build request spans off the request's path) takes the span id
// drawn when the request began, so others could link to it already.
//
// Because the trace id is the same on every replica, a TraceIDRatioBased
// sampler keeps or drops an op's spans on all of them alike.
package traceid

import (
	"context"
	"encoding/binary"
	"math/rand/v2"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

type key struct{}

type chosen struct {
	trace trace.TraceID
	span  trace.SpanID
}

// With returns ctx carrying the trace id the next root span started with it
// gets. An invalid (zero) id is ignored; spans with a parent keep the
// parent's trace.
func With(ctx context.Context, id trace.TraceID) context.Context {
	return context.WithValue(ctx, key{}, chosen{trace: id})
}

// WithSpan is With for both ids of a root span; an invalid span id is
// ignored (a random one is drawn).
func WithSpan(ctx context.Context, tid trace.TraceID, sid trace.SpanID) context.Context {
	return context.WithValue(ctx, key{}, chosen{trace: tid, span: sid})
}

// Random is a random trace id and span id, as the generator draws them.
func Random() (trace.TraceID, trace.SpanID) {
	return newTraceID(), newSpanID()
}

// Generator returns an IDGenerator honouring With; other ids are random
// (math/rand/v2's global source, safe for concurrent use, no lock here).
func Generator() sdktrace.IDGenerator { return generator{} }

type generator struct{}

// NewIDs is a root span's trace and span id.
func (generator) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	c, _ := ctx.Value(key{}).(chosen)
	if !c.trace.IsValid() {
		c.trace = newTraceID()
	}
	if !c.span.IsValid() {
		c.span = newSpanID()
	}
	return c.trace, c.span
}

// NewSpanID is a child span's id.
func (generator) NewSpanID(context.Context, trace.TraceID) trace.SpanID { return newSpanID() }

func newTraceID() trace.TraceID {
	var tid trace.TraceID
	for !tid.IsValid() {
		binary.BigEndian.PutUint64(tid[:8], rand.Uint64())
		binary.BigEndian.PutUint64(tid[8:], rand.Uint64())
	}
	return tid
}

func newSpanID() trace.SpanID {
	var sid trace.SpanID
	for !sid.IsValid() {
		binary.BigEndian.PutUint64(sid[:], rand.Uint64())
	}
	return sid
}
