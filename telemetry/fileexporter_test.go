package telemetry

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"iggynode/telemetry/spanfile"
)

func readSpanFile(t *testing.T, path string) []*spanfile.Record {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var recs []*spanfile.Record
	if err := spanfile.Read(f, func(r *spanfile.Record) error { recs = append(recs, r); return nil }); err != nil {
		t.Fatal(err)
	}
	return recs
}

// Spans recorded through an SDK provider with the file exporter read back
// with spanfile.Read as recorded: ids, exact 64-bit integers, events in
// order, links, status; the directory is created and the file appended.
func TestFileExporterRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "traces.jsonl")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(`{"trace_id":"01","span_id":"02","name":"earlier","start_ns":1,"end_ns":2}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	exp, err := NewFileExporter(path)
	if err != nil {
		t.Fatal(err)
	}
	rec := tracetest.NewSpanRecorder() // the SDK's own view of the same spans
	res := resource.NewSchemaless(attribute.String("service.name", "iggy"), attribute.Int(spanfile.AttrReplica, 2))
	tp := sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithBatcher(exp), sdktrace.WithSpanProcessor(rec))
	tr := tp.Tracer("test")

	linked := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{0xaa, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 0xff},
		SpanID:  trace.SpanID{0xbb, 1, 2, 3, 4, 5, 6, 0xcc},
	})
	ctx, root := tr.Start(context.Background(), spanfile.SpanOp,
		trace.WithAttributes(attribute.Int64(spanfile.AttrOp, 1<<62), attribute.Int64(spanfile.AttrGroup, -7),
			attribute.String(spanfile.AttrCommand, "send_messages"), attribute.Bool("flag", true),
			attribute.Float64("ratio", 0.5), attribute.Float64("nan", math.NaN()),
			attribute.Int64Slice("peers", []int64{1, 2, math.MaxInt64}), attribute.StringSlice("tags", []string{"x", "y"}),
			attribute.String("text", "q\"b\\s\nl\x01c é\xffx")),
		trace.WithLinks(trace.Link{SpanContext: linked}))
	root.AddEvent(spanfile.EventPrepared, trace.WithAttributes(attribute.Int64(spanfile.AttrView, 3)))
	root.AddEvent(spanfile.EventJournaled)
	root.AddEvent(spanfile.EventPrepareOK, trace.WithAttributes(attribute.Int64(spanfile.AttrPeer, 1)))
	_, child := tr.Start(ctx, "child")
	child.SetStatus(codes.Error, "disk full")
	child.End()
	root.SetStatus(codes.Ok, "")
	root.End()
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}

	recs := readSpanFile(t, path)
	if len(recs) != 3 || recs[0].Name != "earlier" {
		t.Fatalf("want the earlier line kept and 2 appended, got %d records", len(recs))
	}
	byName := map[string]*spanfile.Record{}
	for _, r := range recs[1:] {
		byName[r.Name] = r
	}
	for _, s := range rec.Ended() {
		got := byName[s.Name()]
		if got == nil {
			t.Fatalf("span %s not in the file", s.Name())
		}
		if got.TraceID != s.SpanContext().TraceID().String() || got.SpanID != s.SpanContext().SpanID().String() {
			t.Errorf("%s: ids %s/%s", s.Name(), got.TraceID, got.SpanID)
		}
		if got.StartNs != s.StartTime().UnixNano() || got.EndNs != s.EndTime().UnixNano() {
			t.Errorf("%s: times %d..%d", s.Name(), got.StartNs, got.EndNs)
		}
		if n, ok := spanfile.Int(got.Resource, spanfile.AttrReplica); !ok || n != 2 {
			t.Errorf("%s: resource %v", s.Name(), got.Resource)
		}
	}
	r, c := byName[spanfile.SpanOp], byName["child"]
	if r.ParentSpanID != "" || c.ParentSpanID != r.SpanID || c.TraceID != r.TraceID {
		t.Errorf("parent: root %q, child %q of %q", r.ParentSpanID, c.ParentSpanID, r.SpanID)
	}
	if n, ok := spanfile.Int(r.Attributes, spanfile.AttrOp); !ok || n != 1<<62 {
		t.Errorf("op %v (%T): 64-bit integers must stay exact", r.Attributes[spanfile.AttrOp], r.Attributes[spanfile.AttrOp])
	}
	if n, ok := spanfile.Int(r.Attributes, spanfile.AttrGroup); !ok || n != -7 {
		t.Errorf("group %v", r.Attributes[spanfile.AttrGroup])
	}
	if s, _ := spanfile.String(r.Attributes, spanfile.AttrCommand); s != "send_messages" || r.Attributes["flag"] != true {
		t.Errorf("attributes %v", r.Attributes)
	}
	if r.Attributes["ratio"] != json.Number("0.5") || r.Attributes["nan"] != "NaN" {
		t.Errorf("floats %v %v", r.Attributes["ratio"], r.Attributes["nan"])
	}
	if r.Attributes["text"] != "q\"b\\s\nl\x01c é\uFFFDx" {
		t.Errorf("string escaping: %q", r.Attributes["text"])
	}
	if peers, ok := r.Attributes["peers"].([]any); !ok || len(peers) != 3 || peers[2] != json.Number("9223372036854775807") {
		t.Errorf("peers %v", r.Attributes["peers"])
	}
	wantEvents := []string{spanfile.EventPrepared, spanfile.EventJournaled, spanfile.EventPrepareOK}
	if len(r.Events) != len(wantEvents) {
		t.Fatalf("events %+v", r.Events)
	}
	for i, ev := range r.Events {
		if ev.Name != wantEvents[i] || ev.TimeNs < r.StartNs || ev.TimeNs > r.EndNs {
			t.Errorf("event %d: %+v", i, ev)
		}
	}
	if n, _ := spanfile.Int(r.Events[0].Attributes, spanfile.AttrView); n != 3 || r.Events[1].Attributes != nil {
		t.Errorf("event attributes %v %v", r.Events[0].Attributes, r.Events[1].Attributes)
	}
	if len(r.Links) != 1 || r.Links[0].TraceID != "aa0102030405060708090a0b0c0d0eff" || r.Links[0].SpanID != "bb010203040506cc" {
		t.Errorf("links %+v", r.Links)
	}
	if r.Status != "ok" || c.Status != "error" || c.StatusMessage != "disk full" {
		t.Errorf("status %q, child %q %q", r.Status, c.Status, c.StatusMessage)
	}
	if err := exp.ExportSpans(context.Background(), nil); err == nil {
		t.Error("export after shutdown must fail")
	}
}

// A span that is never given a status reads "unset".
func TestFileExporterUnsetStatus(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	exp, err := NewFileExporter(path)
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	_, s := tp.Tracer("t").Start(context.Background(), "plain")
	s.End()
	recs := readSpanFile(t, path)
	if len(recs) != 1 || recs[0].Status != "unset" || recs[0].Attributes != nil || recs[0].ParentSpanID != "" {
		t.Fatalf("records %+v", recs)
	}
	_ = tp.Shutdown(context.Background())
}

// The hand-written string encoder agrees with encoding/json on every
// string: what it writes is valid JSON and reads back as what
// json.Marshal's output reads back as (invalid UTF-8 included).
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "q\"b\\s\n\r\t\x00\x1f", "é\xff\xfe日本", "\u2028<&>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var got, want string
		if err := json.Unmarshal(appendString(nil, s), &got); err != nil {
			t.Fatalf("%q: invalid JSON %q: %v", s, appendString(nil, s), err)
		}
		ref, _ := json.Marshal(s)
		if err := json.Unmarshal(ref, &want); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("%q: read back %q, encoding/json gives %q", s, got, want)
		}
	})
}

// The span file and the folders made for it are owner-only (0600, 0700):
// spans name streams, topics and users.
func TestFileExporterCreatesOwnerOnlyFiles(t *testing.T) {
	root := filepath.Join(t.TempDir(), "logs")
	path := filepath.Join(root, "deeper", "traces.jsonl")
	e, err := NewFileExporter(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]os.FileMode{root: 0o700, filepath.Dir(path): 0o700, path: 0o600} {
		info, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", p, info.Mode().Perm(), want)
		}
	}
}
