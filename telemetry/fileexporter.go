package telemetry

import (
	"context"
	"encoding/hex"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"iggynode/telemetry/spanfile"
)

// FileExporter is an sdktrace.SpanExporter that appends each span as a
// spanfile.Record line to a file. Each exported batch is flushed to the
// file; Shutdown flushes and closes it.
type FileExporter struct {
	mu     sync.Mutex
	f      *os.File
	w      *spanfile.Writer
	closed bool
}

// NewFileExporter opens path for appending, creating it and its parent
// directories.
func NewFileExporter(path string) (*FileExporter, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &FileExporter{f: f, w: spanfile.NewWriter(f)}, nil
}

var errExporterClosed = errors.New("telemetry: file exporter is shut down")

// ExportSpans writes spans and flushes them to the file.
func (e *FileExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return errExporterClosed
	}
	for _, s := range spans {
		rec := spanRecord(s)
		if err := e.w.Write(&rec); err != nil {
			return err
		}
	}
	return e.w.Flush()
}

// Shutdown flushes and closes the file; later exports fail.
func (e *FileExporter) Shutdown(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	return errors.Join(e.w.Flush(), e.f.Close())
}

// spanRecord converts a finished span to its spanfile form: ids in lowercase
// hex, no parent id for a root span, integers kept as int64.
func spanRecord(s sdktrace.ReadOnlySpan) spanfile.Record {
	sc := s.SpanContext()
	r := spanfile.Record{
		TraceID:       sc.TraceID().String(),
		SpanID:        sc.SpanID().String(),
		Name:          s.Name(),
		StartNs:       s.StartTime().UnixNano(),
		EndNs:         s.EndTime().UnixNano(),
		Attributes:    attrMap(s.Attributes()),
		Status:        statusName(s.Status().Code),
		StatusMessage: s.Status().Description,
	}
	if p := s.Parent(); p.SpanID().IsValid() {
		r.ParentSpanID = p.SpanID().String()
	}
	if res := s.Resource(); res != nil {
		r.Resource = attrMap(res.Attributes())
	}
	for _, ev := range s.Events() {
		r.Events = append(r.Events, spanfile.Event{Name: ev.Name, TimeNs: ev.Time.UnixNano(), Attributes: attrMap(ev.Attributes)})
	}
	for _, l := range s.Links() {
		r.Links = append(r.Links, spanfile.Link{TraceID: l.SpanContext.TraceID().String(), SpanID: l.SpanContext.SpanID().String()})
	}
	return r
}

func statusName(c codes.Code) string {
	switch c {
	case codes.Ok:
		return "ok"
	case codes.Error:
		return "error"
	}
	return "unset"
}

func attrMap(kvs []attribute.KeyValue) map[string]any {
	if len(kvs) == 0 {
		return nil
	}
	m := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		if v := attrValue(kv.Value); v != nil {
			m[string(kv.Key)] = v
		}
	}
	return m
}

// attrValue is v as a JSON-encodable value: int64 stays int64 (exact),
// non-finite floats become strings (JSON has no NaN), bytes become hex.
func attrValue(v attribute.Value) any {
	switch v.Type() {
	case attribute.BOOL:
		return v.AsBool()
	case attribute.INT64:
		return v.AsInt64()
	case attribute.FLOAT64:
		return jsonFloat(v.AsFloat64())
	case attribute.STRING:
		return v.AsString()
	case attribute.BOOLSLICE:
		return v.AsBoolSlice()
	case attribute.INT64SLICE:
		return v.AsInt64Slice()
	case attribute.FLOAT64SLICE:
		fs := v.AsFloat64Slice()
		out := make([]any, len(fs))
		for i, f := range fs {
			out[i] = jsonFloat(f)
		}
		return out
	case attribute.STRINGSLICE:
		return v.AsStringSlice()
	case attribute.BYTESLICE:
		return hex.EncodeToString(v.AsByteSlice())
	case attribute.SLICE:
		vs := v.AsSlice()
		out := make([]any, len(vs))
		for i, e := range vs {
			out[i] = attrValue(e)
		}
		return out
	case attribute.MAP:
		return attrMap(v.AsMap())
	}
	return nil
}

func jsonFloat(f float64) any {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return f
}
