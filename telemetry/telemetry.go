package telemetry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/contrib/bridges/otelslog"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploggrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"iggynode/config"
	"iggynode/telemetry/spanfile"
	"iggynode/telemetry/traceid"
)

// scopeName is the instrumentation scope of what this package records
// itself (the HTTP request counter, the log bridge).
const scopeName = "iggynode/telemetry"

// stdout is where the stdout exporters write; tests replace it.
var stdout io.Writer = os.Stdout

// Telemetry is the process's telemetry: providers for the node's
// instrumentation and the exporters behind them. The zero of each part is
// "off"; methods are safe on a nil *Telemetry (everything off).
type Telemetry struct {
	tp       *sdktrace.TracerProvider // nil: tracing off
	mp       *sdkmetric.MeterProvider // nil: metrics off
	lp       *sdklog.LoggerProvider   // nil: no OTLP log export
	promHTTP http.Handler
	version  string
}

// Setup builds the telemetry cfg asks for (see the package doc). version
// is the build version (resource service.version); replicaID names this
// replica in the resource. ctx bounds exporter construction only. On error
// nothing is left running.
func Setup(ctx context.Context, cfg config.Config, replicaID int, version string) (*Telemetry, error) {
	t := &Telemetry{version: version}
	tc := cfg.Telemetry
	tracing := tc.Enabled && tc.Traces.Exporter != config.ExporterNone
	metrics := tc.Metrics.Enabled && tc.Metrics.Exporter != config.ExporterNone
	logs := tc.Enabled && tc.Logs.Exporter == config.ExporterOTLP
	otel.SetTextMapPropagator(propagation.TraceContext{}) // 13.2
	if !tracing && !metrics && !logs {
		return t, nil
	}
	res, err := newResource(ctx, cfg, replicaID, version)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*Telemetry, error) {
		_ = t.Shutdown(context.Background())
		return nil, err
	}
	if tracing {
		if t.tp, err = newTracerProvider(ctx, cfg, res); err != nil {
			return fail(err)
		}
	}
	if metrics {
		if err := t.startMetrics(ctx, tc.Metrics, res); err != nil {
			return fail(err)
		}
	}
	if logs {
		if t.lp, err = newLoggerProvider(ctx, tc.Logs, res); err != nil {
			return fail(err)
		}
	}
	return t, nil
}

func newResource(ctx context.Context, cfg config.Config, replicaID int, version string) (*resource.Resource, error) {
	instance := cfg.Cluster.Name + "/" + strconv.Itoa(replicaID)
	if !cfg.Cluster.Enabled {
		host, err := os.Hostname()
		if err != nil || host == "" {
			host = "localhost"
		}
		instance = host + "/" + strconv.Itoa(replicaID)
	}
	// Later options win: ours over OTEL_RESOURCE_ATTRIBUTES.
	res, err := resource.New(ctx,
		resource.WithFromEnv(),
		resource.WithTelemetrySDK(),
		resource.WithAttributes(
			attribute.String("service.name", cfg.Telemetry.ServiceName),
			attribute.String("service.version", version),
			attribute.String("service.instance.id", instance),
			attribute.Int(spanfile.AttrReplica, replicaID),
		))
	if err != nil && res == nil {
		return nil, fmt.Errorf("telemetry resource: %w", err)
	}
	return res, nil // a partial resource (bad OTEL_RESOURCE_ATTRIBUTES) still names us
}

func newTracerProvider(ctx context.Context, cfg config.Config, res *resource.Resource) (*sdktrace.TracerProvider, error) {
	tr := cfg.Telemetry.Traces
	var (
		exp sdktrace.SpanExporter
		err error
	)
	opts := []sdktrace.BatchSpanProcessorOption{}
	switch tr.Exporter {
	case config.ExporterOTLP:
		if tr.Transport == config.TransportHTTP {
			exp, err = otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(tr.Endpoint))
		} else {
			exp, err = otlptracegrpc.New(ctx, otlptracegrpc.WithEndpointURL(tr.Endpoint))
		}
	case config.ExporterFile:
		exp, err = NewFileExporter(cfg.TracesFile())
		// A file is read by the timeline after the run: keep more spans
		// queued rather than drop them under a burst.
		opts = append(opts, sdktrace.WithMaxQueueSize(16384))
	case config.ExporterStdout:
		exp, err = stdouttrace.New(stdouttrace.WithWriter(stdout))
	default:
		err = fmt.Errorf("unknown exporter")
	}
	if err != nil {
		return nil, fmt.Errorf("telemetry.traces.exporter %s: %w", tr.Exporter, err)
	}
	return sdktrace.NewTracerProvider(
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(tr.SampleRatio))),
		sdktrace.WithIDGenerator(traceid.Generator()),
		sdktrace.WithBatcher(exp, opts...),
	), nil
}

func (t *Telemetry) startMetrics(ctx context.Context, m config.TelemetryMetrics, res *resource.Resource) error {
	var reader sdkmetric.Reader
	switch m.Exporter {
	case config.ExporterPrometheus:
		reg := prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo())
		if err != nil {
			return fmt.Errorf("telemetry.metrics.exporter prometheus: %w", err)
		}
		reader = exp
		t.promHTTP = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	case config.ExporterOTLP, config.ExporterStdout:
		var (
			exp sdkmetric.Exporter
			err error
		)
		switch {
		case m.Exporter == config.ExporterStdout:
			exp, err = stdoutmetric.New(stdoutmetric.WithWriter(stdout))
		case m.Transport == config.TransportHTTP:
			exp, err = otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpointURL(m.Endpoint))
		default:
			exp, err = otlpmetricgrpc.New(ctx, otlpmetricgrpc.WithEndpointURL(m.Endpoint))
		}
		if err != nil {
			return fmt.Errorf("telemetry.metrics.exporter %s: %w", m.Exporter, err)
		}
		reader = sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(m.Interval.D()))
	default:
		return fmt.Errorf("telemetry.metrics.exporter %q: unknown exporter", m.Exporter)
	}
	t.mp = sdkmetric.NewMeterProvider(sdkmetric.WithResource(res), sdkmetric.WithReader(reader))
	return nil
}

func newLoggerProvider(ctx context.Context, l config.TelemetryLogs, res *resource.Resource) (*sdklog.LoggerProvider, error) {
	var (
		exp sdklog.Exporter
		err error
	)
	if l.Transport == config.TransportHTTP {
		exp, err = otlploghttp.New(ctx, otlploghttp.WithEndpointURL(l.Endpoint))
	} else {
		exp, err = otlploggrpc.New(ctx, otlploggrpc.WithEndpointURL(l.Endpoint))
	}
	if err != nil {
		return nil, fmt.Errorf("telemetry.logs: %w", err)
	}
	return sdklog.NewLoggerProvider(sdklog.WithResource(res), sdklog.WithProcessor(sdklog.NewBatchProcessor(exp))), nil
}

// TracerProvider is where the node's spans go: the SDK provider when
// tracing is on, a no-op provider otherwise.
func (t *Telemetry) TracerProvider() trace.TracerProvider {
	if t == nil || t.tp == nil {
		return tracenoop.NewTracerProvider()
	}
	return t.tp
}

// Tracing reports whether spans are recorded and exported at all; hot
// paths check it before building attributes.
func (t *Telemetry) Tracing() bool { return t != nil && t.tp != nil }

// MeterProvider is where the node's metrics go: the SDK provider when
// metrics are enabled with an exporter, a no-op provider otherwise.
func (t *Telemetry) MeterProvider() metric.MeterProvider {
	if t == nil || t.mp == nil {
		return metricnoop.NewMeterProvider()
	}
	return t.mp
}

// Handler serves the Prometheus text exposition of the private registry;
// nil unless the metrics exporter is prometheus. It carries no
// authentication: HTTPHandler adds that.
func (t *Telemetry) Handler() http.Handler {
	if t == nil {
		return nil
	}
	return t.promHTTP
}

// LogHandler wraps inner so records logged with a context that carries a
// valid span get trace_id and span_id attributes, and, when OTLP log
// export is on, go to the OTLP exporter too.
func (t *Telemetry) LogHandler(inner slog.Handler) slog.Handler {
	h := &logHandler{inner: inner}
	if t != nil && t.lp != nil {
		h.otlp = otelslog.NewHandler(scopeName, otelslog.WithLoggerProvider(t.lp), otelslog.WithVersion(t.version))
	}
	return h
}

// Shutdown flushes every exporter and closes them (and the span file).
// Spans ended after it are dropped.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	var errs []error
	if t.tp != nil {
		errs = append(errs, t.tp.Shutdown(ctx))
	}
	if t.mp != nil {
		errs = append(errs, t.mp.Shutdown(ctx))
	}
	if t.lp != nil {
		errs = append(errs, t.lp.Shutdown(ctx))
	}
	return errors.Join(errs...)
}
