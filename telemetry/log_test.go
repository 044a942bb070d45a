package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// A record logged inside a span carries that span's ids; one logged
// without a span carries none; groups and attributes still pass through.
func TestLogHandlerAddsSpanIDs(t *testing.T) {
	var buf bytes.Buffer
	var tel *Telemetry // nil: everything off, the bridge still adds ids
	logger := slog.New(tel.LogHandler(slog.NewJSONHandler(&buf, nil))).With("node", 1)
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(context.Background())

	ctx, span := tp.Tracer("t").Start(context.Background(), "op")
	logger.InfoContext(ctx, "inside")
	span.End()
	logger.InfoContext(context.Background(), "outside")
	logger.Info("no context")

	var lines []map[string]any
	for _, line := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		lines = append(lines, m)
	}
	if len(lines) != 3 {
		t.Fatalf("lines %v", lines)
	}
	sc := span.SpanContext()
	if lines[0][LogKeyTraceID] != sc.TraceID().String() || lines[0][LogKeySpanID] != sc.SpanID().String() {
		t.Errorf("inside: %v, want trace %s span %s", lines[0], sc.TraceID(), sc.SpanID())
	}
	for _, l := range lines[1:] {
		if _, ok := l[LogKeyTraceID]; ok {
			t.Errorf("%v: a record without a span carries a trace id", l)
		}
		if _, ok := l[LogKeySpanID]; ok {
			t.Errorf("%v: a record without a span carries a span id", l)
		}
	}
	for _, l := range lines {
		if l["node"] != float64(1) {
			t.Errorf("%v: WithAttrs lost", l)
		}
	}
}

// The level of the wrapped handler applies.
func TestLogHandlerFollowsLevel(t *testing.T) {
	var buf bytes.Buffer
	h := (&Telemetry{}).LogHandler(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
	slog.New(h).Info("dropped")
	slog.New(h).WithGroup("g").Warn("kept", "k", 1)
	if out := buf.String(); bytes.Contains(buf.Bytes(), []byte("dropped")) || !bytes.Contains(buf.Bytes(), []byte("g.k=1")) {
		t.Fatalf("output %q", out)
	}
}
