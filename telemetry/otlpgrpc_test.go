package telemetry

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"

	collogs "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"

	"iggynode/config"
)

// grpcFake is an OTLP/gRPC collector keeping span names, log bodies and
// metric names.
type grpcFake struct {
	coltrace.UnimplementedTraceServiceServer
	mu                   sync.Mutex
	spans, logs, metrics []string
}

func (f *grpcFake) Export(_ context.Context, req *coltrace.ExportTraceServiceRequest) (*coltrace.ExportTraceServiceResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				f.spans = append(f.spans, s.Name)
			}
		}
	}
	return &coltrace.ExportTraceServiceResponse{}, nil
}

// The three services share the method name Export; logs and metrics go
// through these adapters.
type grpcFakeLogs struct {
	collogs.UnimplementedLogsServiceServer
	f *grpcFake
}

func (l grpcFakeLogs) Export(_ context.Context, req *collogs.ExportLogsServiceRequest) (*collogs.ExportLogsServiceResponse, error) {
	l.f.mu.Lock()
	defer l.f.mu.Unlock()
	for _, rl := range req.ResourceLogs {
		for _, sl := range rl.ScopeLogs {
			for _, r := range sl.LogRecords {
				l.f.logs = append(l.f.logs, fmt.Sprintf("%s trace=%x", r.Body.GetStringValue(), r.TraceId))
			}
		}
	}
	return &collogs.ExportLogsServiceResponse{}, nil
}

type grpcFakeMetrics struct {
	colmetrics.UnimplementedMetricsServiceServer
	f *grpcFake
}

func (m grpcFakeMetrics) Export(_ context.Context, req *colmetrics.ExportMetricsServiceRequest) (*colmetrics.ExportMetricsServiceResponse, error) {
	m.f.mu.Lock()
	defer m.f.mu.Unlock()
	for _, rm := range req.ResourceMetrics {
		for _, sm := range rm.ScopeMetrics {
			for _, x := range sm.Metrics {
				m.f.metrics = append(m.f.metrics, x.Name)
			}
		}
	}
	return &colmetrics.ExportMetricsServiceResponse{}, nil
}

// OTLP over gRPC (13.1, the default transport) against an in-process
// collector on loopback: spans, bridged log records and metrics arrive.
func TestSetupOTLPGRPC(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fake := &grpcFake{}
	srv := grpc.NewServer()
	coltrace.RegisterTraceServiceServer(srv, fake)
	collogs.RegisterLogsServiceServer(srv, grpcFakeLogs{f: fake})
	colmetrics.RegisterMetricsServiceServer(srv, grpcFakeMetrics{f: fake})
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()

	base := "http://" + lis.Addr().String()
	c := testConfig(t)
	c.Telemetry.Enabled = true
	c.Telemetry.Traces.Endpoint = base + "/v1/traces"
	c.Telemetry.Logs.Endpoint = base + "/v1/logs"
	c.Telemetry.Metrics.Exporter = config.ExporterOTLP
	c.Telemetry.Metrics.Endpoint = base + "/v1/metrics"
	tel := setup(t, c)
	logger := slog.New(tel.LogHandler(slog.NewTextHandler(io.Discard, nil)))
	ctx, s := tel.TracerProvider().Tracer("t").Start(context.Background(), "grpc-span")
	logger.InfoContext(ctx, "grpc-log")
	s.End()
	counter, err := tel.MeterProvider().Meter("t").Int64Counter("grpc_counter")
	if err != nil {
		t.Fatal(err)
	}
	counter.Add(ctx, 1)
	flush(t, tel)
	fake.mu.Lock()
	defer fake.mu.Unlock()
	if len(fake.spans) != 1 || fake.spans[0] != "grpc-span" {
		t.Errorf("collector got spans %v", fake.spans)
	}
	if want := fmt.Sprintf("grpc-log trace=%s", s.SpanContext().TraceID()); len(fake.logs) != 1 || fake.logs[0] != want {
		t.Errorf("collector got logs %v, want %q", fake.logs, want)
	}
	found := false
	for _, m := range fake.metrics {
		found = found || m == "grpc_counter"
	}
	if !found {
		t.Errorf("collector got metrics %v, want grpc_counter among them", fake.metrics)
	}
}
