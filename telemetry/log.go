package telemetry

import (
	"context"
	"errors"
	"log/slog"

	"go.opentelemetry.io/otel/trace"
)

// Log attribute keys for the span a record was logged in.
const (
	LogKeyTraceID = "trace_id"
	LogKeySpanID  = "span_id"
)

// logHandler adds the span of the record's context to inner's records and
// hands the record to the OTLP bridge (which reads the span itself).
type logHandler struct {
	inner slog.Handler
	otlp  slog.Handler // nil: no OTLP log export
}

// Enabled follows inner: the node's level applies to exported logs too.
func (h *logHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.inner.Enabled(ctx, l)
}

func (h *logHandler) Handle(ctx context.Context, r slog.Record) error {
	var otlpErr error
	if h.otlp != nil {
		otlpErr = h.otlp.Handle(ctx, r)
	}
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r = r.Clone()
		r.AddAttrs(slog.String(LogKeyTraceID, sc.TraceID().String()), slog.String(LogKeySpanID, sc.SpanID().String()))
	}
	return errors.Join(h.inner.Handle(ctx, r), otlpErr)
}

func (h *logHandler) WithAttrs(as []slog.Attr) slog.Handler {
	n := &logHandler{inner: h.inner.WithAttrs(as)}
	if h.otlp != nil {
		n.otlp = h.otlp.WithAttrs(as)
	}
	return n
}

func (h *logHandler) WithGroup(name string) slog.Handler {
	n := &logHandler{inner: h.inner.WithGroup(name)}
	if h.otlp != nil {
		n.otlp = h.otlp.WithGroup(name)
	}
	return n
}
