package telemetry

import (
	"context"
	"encoding/binary"
	"math/rand/v2"

	"go.opentelemetry.io/otel/trace"
)

type traceIDKey struct{}

// ContextWithTraceID makes root spans started from ctx take id as their
// trace id instead of a random one: the node derives an op's trace id
// (spanfile.OpTraceID) so that every replica's span for the op lands in
// one trace, and the ratio sampler, which decides on the trace id, decides
// the same on all of them. Spans with a parent keep the parent's trace.
// An invalid (zero) id is ignored.
func ContextWithTraceID(ctx context.Context, id trace.TraceID) context.Context {
	return context.WithValue(ctx, traceIDKey{}, id)
}

// idGenerator is the SDK's random generator plus ContextWithTraceID.
// math/rand/v2's global source is safe for concurrent use.
type idGenerator struct{}

func (idGenerator) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	tid, _ := ctx.Value(traceIDKey{}).(trace.TraceID)
	for !tid.IsValid() {
		binary.BigEndian.PutUint64(tid[:8], rand.Uint64())
		binary.BigEndian.PutUint64(tid[8:], rand.Uint64())
	}
	return tid, newSpanID()
}

func (idGenerator) NewSpanID(context.Context, trace.TraceID) trace.SpanID { return newSpanID() }

func newSpanID() trace.SpanID {
	var sid trace.SpanID
	for !sid.IsValid() {
		binary.BigEndian.PutUint64(sid[:], rand.Uint64())
	}
	return sid
}
