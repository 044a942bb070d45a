// Package traceid lets the node choose the trace id of a root span: the
// spans every replica records for one replicated op share the id derived
// from (cluster, group, op) (spanfile.OpTraceID), so they form one trace
// although the wire carries no trace context. Installed as the tracer
// provider's IDGenerator; a context without a chosen id gets random ids,
// as the SDK's default generator gives.
//
// Because the trace id is the same on every replica, a TraceIDRatioBased
// sampler keeps or drops an op's spans on all of them alike.
package traceid

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"sync"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

type key struct{}

// With returns ctx carrying the trace id the next root span started with it
// gets.
func With(ctx context.Context, id trace.TraceID) context.Context {
	return context.WithValue(ctx, key{}, id)
}

// Generator returns an IDGenerator honouring With.
func Generator() sdktrace.IDGenerator { return &generator{} }

type generator struct {
	mu    sync.Mutex
	state [2]uint64 // xorshift128+, seeded from crypto/rand once
	init  bool
}

func (g *generator) next() uint64 {
	if !g.init {
		var b [16]byte
		_, _ = rand.Read(b[:])
		g.state[0], g.state[1] = binary.LittleEndian.Uint64(b[:8])|1, binary.LittleEndian.Uint64(b[8:])
		g.init = true
	}
	s1, s0 := g.state[0], g.state[1]
	g.state[0] = s0
	s1 ^= s1 << 23
	g.state[1] = s1 ^ s0 ^ (s1 >> 17) ^ (s0 >> 26)
	return g.state[1] + s0
}

func (g *generator) spanID() trace.SpanID {
	var id trace.SpanID
	for id == (trace.SpanID{}) {
		binary.LittleEndian.PutUint64(id[:], g.next())
	}
	return id
}

// NewIDs is a root span's trace and span id.
func (g *generator) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if id, ok := ctx.Value(key{}).(trace.TraceID); ok && id.IsValid() {
		return id, g.spanID()
	}
	var tid trace.TraceID
	for !tid.IsValid() {
		binary.LittleEndian.PutUint64(tid[:8], g.next())
		binary.LittleEndian.PutUint64(tid[8:], g.next())
	}
	return tid, g.spanID()
}

// NewSpanID is a child span's id.
func (g *generator) NewSpanID(context.Context, trace.TraceID) trace.SpanID {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.spanID()
}
