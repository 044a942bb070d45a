package telemetry

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	collogs "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"iggynode/config"
	"iggynode/internal/testutil"
	"iggynode/telemetry/spanfile"
	"iggynode/telemetry/traceid"
)

func testConfig(t *testing.T) config.Config {
	t.Helper()
	c := config.Default()
	c.System.Path = t.TempDir()
	return c
}

func setup(t *testing.T, c config.Config) *Telemetry {
	t.Helper()
	tel, err := Setup(context.Background(), c, 1, "0.9.0-test")
	if err != nil {
		t.Fatal(err)
	}
	return tel
}

// flush shuts tel down, which exports what its exporters still hold.
func flush(t *testing.T, tel *Telemetry) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tel.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

func scrape(t *testing.T, h http.Handler, req *http.Request) *httptest.ResponseRecorder {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

// Default configuration: no traces, metrics on the prometheus exporter.
func TestSetupDefaults(t *testing.T) {
	tel := setup(t, testConfig(t))
	defer tel.Shutdown(context.Background())
	if tel.Tracing() {
		t.Error("tracing is on by default")
	}
	if _, span := tel.TracerProvider().Tracer("t").Start(context.Background(), "x"); span.IsRecording() || span.SpanContext().IsValid() {
		t.Error("the tracer provider records while tracing is off")
	}
	if tel.Handler() == nil {
		t.Fatal("metrics are collected by default: want a prometheus handler")
	}
	if _, ok := otel.GetTextMapPropagator().(interface{ Fields() []string }); !ok ||
		!strings.Contains(fmt.Sprint(otel.GetTextMapPropagator().Fields()), "traceparent") {
		t.Errorf("W3C TraceContext propagator not installed: %v", otel.GetTextMapPropagator().Fields())
	}
}

// Exporter none everywhere: no-op providers, no handler.
func TestSetupNone(t *testing.T) {
	for _, env := range [][]string{
		{"IGGY_TELEMETRY_ENABLED=true", "IGGY_TELEMETRY_TRACES_EXPORTER=none", "IGGY_TELEMETRY_METRICS_EXPORTER=none", "IGGY_TELEMETRY_LOGS_EXPORTER=none"},
		{"OTEL_SDK_DISABLED=true"}, // metrics are on by default; this turns them off
	} {
		c, _, err := config.Load("", env)
		if err != nil {
			t.Fatal(err)
		}
		tel := setup(t, c)
		if tel.Tracing() || tel.Handler() != nil || tel.lp != nil || tel.mp != nil {
			t.Errorf("%v: tracing %v handler %v", env, tel.Tracing(), tel.Handler())
		}
		ctr, _ := tel.MeterProvider().Meter("m").Int64Counter("c")
		ctr.Add(context.Background(), 1) // the no-op provider accepts it
		if err := tel.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	}
}

// A counter recorded through MeterProvider appears in the Prometheus
// exposition, with the resource in target_info; the private registry also
// carries the Go runtime collector, and nothing lands in the global
// default registry.
func TestSetupPrometheus(t *testing.T) {
	tel := setup(t, testConfig(t))
	defer tel.Shutdown(context.Background())
	ctr, err := tel.MeterProvider().Meter("iggynode/test").Int64Counter("iggy_test_prepares", metric.WithDescription("d"))
	if err != nil {
		t.Fatal(err)
	}
	ctr.Add(context.Background(), 3, metric.WithAttributes(attribute.String("shard", "0")))
	w := scrape(t, tel.Handler(), httptest.NewRequest("GET", "/metrics", nil))
	body := w.Body.String()
	if w.Code != 200 || !regexp.MustCompile(`(?m)^iggy_test_prepares_total\{shard="0"\} 3$`).MatchString(body) {
		t.Fatalf("counter missing from the exposition (%d):\n%s", w.Code, body)
	}
	if !strings.Contains(body, `service_name="iggy"`) || !strings.Contains(body, `iggy_replica="1"`) ||
		!strings.Contains(body, `service_version="0.9.0-test"`) {
		t.Errorf("target_info lacks the resource:\n%s", grepLines(body, "target_info"))
	}
	if !strings.Contains(body, "go_goroutines") {
		t.Error("Go runtime collector missing")
	}
}

func grepLines(body, word string) string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		if strings.Contains(l, word) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// The file exporter: spans land in the configured file after Shutdown,
// carrying the resource; traceid.With sets a root span's trace id.
func TestSetupFileExporter(t *testing.T) {
	c := testConfig(t)
	c.Telemetry.Enabled = true
	c.Telemetry.Traces.Exporter = config.ExporterFile
	c.Telemetry.Logs.Exporter = config.ExporterNone
	tel := setup(t, c)
	if !tel.Tracing() {
		t.Fatal("tracing off with the file exporter")
	}
	id := trace.TraceID(spanfile.OpTraceID(1, 2, 3, 4))
	tr := tel.TracerProvider().Tracer("t")
	ctx, op := tr.Start(traceid.With(context.Background(), id), spanfile.SpanOp)
	_, child := tr.Start(ctx, "child")
	child.End()
	op.End()
	_, other := tr.Start(context.Background(), "random")
	other.End()
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	recs := readSpanFile(t, filepath.Join(c.LogDir(), "traces.jsonl"))
	if len(recs) != 3 {
		t.Fatalf("%d records, want 3", len(recs))
	}
	for _, r := range recs {
		want := id.String()
		if r.Name == "random" {
			if r.TraceID == want || len(r.TraceID) != 32 {
				t.Errorf("random trace id %q", r.TraceID)
			}
			continue
		}
		if r.TraceID != want {
			t.Errorf("%s: trace %s, want the derived %s", r.Name, r.TraceID, want)
		}
		if s, _ := spanfile.String(r.Resource, "service.name"); s != "iggy" {
			t.Errorf("resource %v", r.Resource)
		}
		if n, ok := spanfile.Int(r.Resource, spanfile.AttrReplica); !ok || n != 1 {
			t.Errorf("resource %v", r.Resource)
		}
		if s, _ := spanfile.String(r.Resource, "service.instance.id"); !strings.HasSuffix(s, "/1") {
			t.Errorf("service.instance.id %q", s)
		}
	}
}

// Sampling: ratio 0 records no root span, ratio 1 all; a derived trace id
// gets the same decision on every replica (two providers) at 0.5.
func TestSetupSampling(t *testing.T) {
	count := func(ratio float64, n int, ids []trace.TraceID) ([]bool, int) {
		c := testConfig(t)
		c.Telemetry.Enabled = true
		c.Telemetry.Traces.Exporter = config.ExporterFile
		c.Telemetry.Logs.Exporter = config.ExporterNone
		c.Telemetry.Traces.SampleRatio = ratio
		tel := setup(t, c)
		tr := tel.TracerProvider().Tracer("t")
		var decided []bool
		for i := 0; i < n; i++ {
			ctx := context.Background()
			if ids != nil {
				ctx = traceid.With(ctx, ids[i])
			}
			_, s := tr.Start(ctx, "s")
			decided = append(decided, s.SpanContext().IsSampled())
			s.End()
		}
		if err := tel.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		return decided, len(readSpanFile(t, c.TracesFile()))
	}
	if _, n := count(0, 50, nil); n != 0 {
		t.Errorf("ratio 0 recorded %d spans", n)
	}
	if _, n := count(1, 50, nil); n != 50 {
		t.Errorf("ratio 1 recorded %d of 50 spans", n)
	}
	ids := make([]trace.TraceID, 200)
	for i := range ids {
		ids[i] = spanfile.OpTraceID(7, 0, 1, uint64(i))
	}
	a, na := count(0.5, len(ids), ids)
	b, nb := count(0.5, len(ids), ids)
	if na != nb || na == 0 || na == len(ids) {
		t.Errorf("ratio 0.5 kept %d and %d of %d", na, nb, len(ids))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("op %d: replicas decided differently", i)
		}
	}
}

// The stdout exporters write spans and metrics to standard output.
func TestSetupStdout(t *testing.T) {
	var buf testutil.Buffer
	prev := stdout
	stdout = &buf
	defer func() { stdout = prev }()
	c := testConfig(t)
	c.Telemetry.Enabled = true
	c.Telemetry.Traces.Exporter = config.ExporterStdout
	c.Telemetry.Logs.Exporter = config.ExporterNone
	c.Telemetry.Metrics.Exporter = config.ExporterStdout
	tel := setup(t, c)
	if tel.Handler() != nil {
		t.Error("a prometheus handler with the stdout metrics exporter")
	}
	_, s := tel.TracerProvider().Tracer("t").Start(context.Background(), "stdout-span")
	s.End()
	ctr, _ := tel.MeterProvider().Meter("m").Int64Counter("stdout_counter")
	ctr.Add(context.Background(), 5)
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if !regexp.MustCompile(`"Name":\s*"stdout-span"`).MatchString(out) || !regexp.MustCompile(`"Name":\s*"stdout_counter"`).MatchString(out) {
		t.Fatalf("stdout exporters wrote:\n%s", out)
	}
}

// otlpFake is an OTLP/HTTP collector: it keeps the span names and log
// bodies it receives.
type otlpFake struct {
	mu    sync.Mutex
	spans []string
	logs  []string
	paths []string
}

func (f *otlpFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.paths = append(f.paths, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type"))
	switch r.URL.Path {
	case "/v1/traces":
		var req coltrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					f.spans = append(f.spans, s.Name)
				}
			}
		}
		b, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(b)
	case "/v1/logs":
		var req collogs.ExportLogsServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		for _, rl := range req.ResourceLogs {
			for _, sl := range rl.ScopeLogs {
				for _, l := range sl.LogRecords {
					f.logs = append(f.logs, fmt.Sprintf("%s trace=%x", l.Body.GetStringValue(), l.TraceId))
				}
			}
		}
		b, _ := proto.Marshal(&collogs.ExportLogsServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(b)
	default:
		http.NotFound(w, r)
	}
}

// OTLP over HTTP (13.1, transport http) against an in-process collector:
// spans and bridged log records arrive at /v1/traces and /v1/logs.
func TestSetupOTLPHTTP(t *testing.T) {
	fake := &otlpFake{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	c := testConfig(t)
	c.Telemetry.Enabled = true
	c.Telemetry.Traces.Transport = config.TransportHTTP
	c.Telemetry.Traces.Endpoint = srv.URL + "/v1/traces"
	c.Telemetry.Logs.Transport = config.TransportHTTP
	c.Telemetry.Logs.Endpoint = srv.URL + "/v1/logs"
	tel := setup(t, c)
	logger := slog.New(tel.LogHandler(slog.NewTextHandler(io.Discard, nil)))
	ctx, s := tel.TracerProvider().Tracer("t").Start(context.Background(), "otlp-span")
	logger.InfoContext(ctx, "otlp-log")
	s.End()
	flush(t, tel)
	fake.mu.Lock()
	defer fake.mu.Unlock()
	if len(fake.spans) != 1 || fake.spans[0] != "otlp-span" {
		t.Errorf("collector got spans %v (requests %v)", fake.spans, fake.paths)
	}
	want := fmt.Sprintf("otlp-log trace=%s", s.SpanContext().TraceID())
	if len(fake.logs) != 1 || fake.logs[0] != want {
		t.Errorf("collector got logs %v, want %q", fake.logs, want)
	}
	for _, p := range fake.paths {
		if !strings.HasPrefix(p, "POST ") || !strings.HasSuffix(p, "application/x-protobuf") {
			t.Errorf("request %s", p)
		}
	}
}
