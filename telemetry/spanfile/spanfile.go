// Package spanfile is the JSON-lines trace format shared by the node's file
// exporter, the simulator and the consensus timeline (cmd/timeline): one
// finished span per line, so a run's files can be appended, concatenated
// and read without a collector.
//
// The format is ours (OTLP's JSON mapping nests resource and scope spans
// and encodes 64-bit integers as strings, which makes files of several
// nodes awkward to merge by hand); its fields are the OpenTelemetry span
// model's, flattened:
//
//	{"trace_id":"<32 hex>","span_id":"<16 hex>","parent_span_id":"<16 hex or empty>",
//	 "name":"vsr.op","start_ns":<unix ns>,"end_ns":<unix ns>,
//	 "resource":{"service.name":"iggy","iggy.replica":0,...},
//	 "attributes":{"iggy.group":7,"iggy.op":12,...},
//	 "events":[{"name":"journaled","time_ns":<unix ns>,"attributes":{...}}],
//	 "links":[{"trace_id":"...","span_id":"..."}],
//	 "status":"unset|ok|error","status_message":""}
//
// Attribute values are JSON numbers (integers stay exact up to 2^63),
// strings, booleans, or arrays of those.
package spanfile

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"sync"
)

// Record is one finished span.
type Record struct {
	TraceID       string         `json:"trace_id"`
	SpanID        string         `json:"span_id"`
	ParentSpanID  string         `json:"parent_span_id,omitempty"`
	Name          string         `json:"name"`
	StartNs       int64          `json:"start_ns"`
	EndNs         int64          `json:"end_ns"`
	Resource      map[string]any `json:"resource,omitempty"`
	Attributes    map[string]any `json:"attributes,omitempty"`
	Events        []Event        `json:"events,omitempty"`
	Links         []Link         `json:"links,omitempty"`
	Status        string         `json:"status,omitempty"`
	StatusMessage string         `json:"status_message,omitempty"`
}

// Event is a timestamped point inside a span.
type Event struct {
	Name       string         `json:"name"`
	TimeNs     int64          `json:"time_ns"`
	Attributes map[string]any `json:"attributes,omitempty"`
}

// Link points at a span of another trace (an op's span links the client
// request that admitted it).
type Link struct {
	TraceID string `json:"trace_id"`
	SpanID  string `json:"span_id"`
}

// Writer appends records as lines; safe for concurrent use.
type Writer struct {
	mu  sync.Mutex
	buf *bufio.Writer
	enc *json.Encoder
}

// NewWriter writes to w; Flush before closing w.
func NewWriter(w io.Writer) *Writer {
	b := bufio.NewWriter(w)
	return &Writer{buf: b, enc: json.NewEncoder(b)}
}

// Write appends one record (json.Encoder ends it with a newline).
func (w *Writer) Write(r *Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.enc.Encode(r)
}

// Flush writes buffered lines through.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Flush()
}

// Read calls fn for every record of r, in file order. Numbers decode as
// json.Number so 64-bit ops and groups stay exact; Int reads them. A line
// that is not a record is an error naming its line number.
func Read(r io.Reader, fn func(*Record) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for line := 1; sc.Scan(); line++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.UseNumber()
		var rec Record
		if err := dec.Decode(&rec); err != nil {
			return fmt.Errorf("spanfile: line %d: %w", line, err)
		}
		if err := fn(&rec); err != nil {
			return err
		}
	}
	return sc.Err()
}

// Int is attribute key of attrs as an int64, if it is an integer.
func Int(attrs map[string]any, key string) (int64, bool) {
	switch v := attrs[key].(type) {
	case json.Number:
		n, err := v.Int64()
		return n, err == nil
	case int64:
		return v, true
	case int:
		return int64(v), true
	case uint64:
		return int64(v), true
	case float64:
		return int64(v), float64(int64(v)) == v
	}
	return 0, false
}

// Uint is attribute key of attrs as a uint64, if it is a non-negative
// integer (up to 2^64-1, which Int cannot hold).
func Uint(attrs map[string]any, key string) (uint64, bool) {
	switch v := attrs[key].(type) {
	case json.Number:
		n, err := strconv.ParseUint(v.String(), 10, 64)
		return n, err == nil
	case uint64:
		return v, true
	}
	if n, ok := Int(attrs, key); ok && n >= 0 {
		return uint64(n), true
	}
	return 0, false
}

// String is attribute key of attrs as a string, if it is one.
func String(attrs map[string]any, key string) (string, bool) {
	s, ok := attrs[key].(string)
	return s, ok
}
