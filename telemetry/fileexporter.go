package telemetry

import (
	"bufio"
	"context"
	"encoding/hex"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// FileExporter is an sdktrace.SpanExporter that appends each span as a
// spanfile.Record line to a file. Each exported batch is flushed to the
// file; Shutdown flushes and closes it.
//
// It writes the JSON itself, straight from the SDK's span, into one
// reused buffer: building a spanfile.Record (maps of attributes) and
// encoding it with encoding/json cost 13% of a node's CPU at full tracing
// (docs/benchmarks.md). A resource's JSON is built once. The round-trip
// tests read the lines back with spanfile.Read.
type FileExporter struct {
	mu      sync.Mutex
	f       *os.File
	w       *bufio.Writer
	buf     []byte
	res     *resource.Resource
	resJSON []byte
	closed  bool
}

// NewFileExporter opens path for appending, creating it and its parent
// directories owner-only (0600 and 0700): spans carry stream, topic and
// user names.
func NewFileExporter(path string) (*FileExporter, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	return &FileExporter{f: f, w: bufio.NewWriterSize(f, 64<<10)}, nil
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
		if res := s.Resource(); res != e.res {
			e.res, e.resJSON = res, nil
			if res != nil && res.Len() > 0 {
				e.resJSON = appendAttrs(nil, res.Attributes())
			}
		}
		e.buf = appendSpan(e.buf[:0], s, e.resJSON)
		if _, err := e.w.Write(e.buf); err != nil {
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

// appendSpan appends s as one spanfile line (the fields of
// spanfile.Record, empty ones left out as its omitempty tags do): ids in
// lowercase hex, no parent id for a root span, integers exact.
func appendSpan(b []byte, s sdktrace.ReadOnlySpan, resJSON []byte) []byte {
	sc := s.SpanContext()
	b = append(b, `{"trace_id":"`...)
	b = appendTraceID(b, sc.TraceID())
	b = append(b, `","span_id":"`...)
	b = appendSpanID(b, sc.SpanID())
	b = append(b, '"')
	if p := s.Parent(); p.SpanID().IsValid() {
		b = append(b, `,"parent_span_id":"`...)
		b = appendSpanID(b, p.SpanID())
		b = append(b, '"')
	}
	b = append(b, `,"name":`...)
	b = appendString(b, s.Name())
	b = append(b, `,"start_ns":`...)
	b = strconv.AppendInt(b, s.StartTime().UnixNano(), 10)
	b = append(b, `,"end_ns":`...)
	b = strconv.AppendInt(b, s.EndTime().UnixNano(), 10)
	if len(resJSON) > 0 {
		b = append(b, `,"resource":`...)
		b = append(b, resJSON...)
	}
	if attrs := s.Attributes(); len(attrs) > 0 {
		b = append(b, `,"attributes":`...)
		b = appendAttrs(b, attrs)
	}
	if evs := s.Events(); len(evs) > 0 {
		b = append(b, `,"events":[`...)
		for i, ev := range evs {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"name":`...)
			b = appendString(b, ev.Name)
			b = append(b, `,"time_ns":`...)
			b = strconv.AppendInt(b, ev.Time.UnixNano(), 10)
			if len(ev.Attributes) > 0 {
				b = append(b, `,"attributes":`...)
				b = appendAttrs(b, ev.Attributes)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if links := s.Links(); len(links) > 0 {
		b = append(b, `,"links":[`...)
		for i, l := range links {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"trace_id":"`...)
			b = appendTraceID(b, l.SpanContext.TraceID())
			b = append(b, `","span_id":"`...)
			b = appendSpanID(b, l.SpanContext.SpanID())
			b = append(b, `"}`...)
		}
		b = append(b, ']')
	}
	b = append(b, `,"status":"`...)
	b = append(b, statusName(s.Status().Code)...)
	b = append(b, '"')
	if msg := s.Status().Description; msg != "" {
		b = append(b, `,"status_message":`...)
		b = appendString(b, msg)
	}
	return append(b, '}', '\n')
}

func appendTraceID(b []byte, id trace.TraceID) []byte { return hex.AppendEncode(b, id[:]) }

func appendSpanID(b []byte, id trace.SpanID) []byte { return hex.AppendEncode(b, id[:]) }

func statusName(c codes.Code) string {
	switch c {
	case codes.Ok:
		return "ok"
	case codes.Error:
		return "error"
	}
	return "unset"
}

// appendAttrs appends kvs as a JSON object (a later duplicate key wins
// when read, as the SDK keeps only one).
func appendAttrs(b []byte, kvs []attribute.KeyValue) []byte {
	b = append(b, '{')
	for i, kv := range kvs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, string(kv.Key))
		b = append(b, ':')
		b = appendValue(b, kv.Value)
	}
	return append(b, '}')
}

// appendValue appends v as JSON: int64 exact, non-finite floats as
// strings (JSON has no NaN), bytes as hex, slices as arrays, maps as
// objects; an unknown type as null.
func appendValue(b []byte, v attribute.Value) []byte {
	switch v.Type() {
	case attribute.BOOL:
		return strconv.AppendBool(b, v.AsBool())
	case attribute.INT64:
		return strconv.AppendInt(b, v.AsInt64(), 10)
	case attribute.FLOAT64:
		return appendFloat(b, v.AsFloat64())
	case attribute.STRING:
		return appendString(b, v.AsString())
	case attribute.BOOLSLICE:
		return appendArray(b, v.AsBoolSlice(), strconv.AppendBool)
	case attribute.INT64SLICE:
		return appendArray(b, v.AsInt64Slice(), func(b []byte, n int64) []byte { return strconv.AppendInt(b, n, 10) })
	case attribute.FLOAT64SLICE:
		return appendArray(b, v.AsFloat64Slice(), appendFloat)
	case attribute.STRINGSLICE:
		return appendArray(b, v.AsStringSlice(), appendString)
	case attribute.BYTESLICE:
		b = append(b, '"')
		b = hex.AppendEncode(b, v.AsByteSlice())
		return append(b, '"')
	case attribute.SLICE:
		return appendArray(b, v.AsSlice(), appendValue)
	case attribute.MAP:
		return appendAttrs(b, v.AsMap())
	}
	return append(b, "null"...)
}

func appendArray[T any](b []byte, xs []T, each func([]byte, T) []byte) []byte {
	b = append(b, '[')
	for i, x := range xs {
		if i > 0 {
			b = append(b, ',')
		}
		b = each(b, x)
	}
	return append(b, ']')
}

func appendFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		b = append(b, '"')
		b = strconv.AppendFloat(b, f, 'g', -1, 64)
		return append(b, '"')
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}

// appendString appends s as a JSON string: quotes, backslashes and
// control characters escaped, invalid UTF-8 replaced by U+FFFD (as
// encoding/json does).
func appendString(b []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, "\\ufffd"...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}
