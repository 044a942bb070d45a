package config

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Telemetry is the telemetry section: the reference keys of
// server-behaviour.md 13.1 (enabled, service_name, logs.*, traces.*) and
// ours (traces.exporter, traces.file, traces.sample_ratio, logs.exporter,
// metrics.*). Package telemetry documents what each one does.
type Telemetry struct {
	Enabled     bool             `toml:"enabled"`
	ServiceName string           `toml:"service_name"`
	Logs        TelemetryLogs    `toml:"logs"`
	Traces      TelemetryTraces  `toml:"traces"`
	Metrics     TelemetryMetrics `toml:"metrics"`
}

// TelemetryLogs is telemetry.logs: OTLP export of the node's log records.
type TelemetryLogs struct {
	Exporter  string `toml:"exporter"`  // otlp | none
	Transport string `toml:"transport"` // grpc | http
	Endpoint  string `toml:"endpoint"`
}

// TelemetryTraces is telemetry.traces.
type TelemetryTraces struct {
	Exporter  string `toml:"exporter"`  // otlp | file | stdout | none
	Transport string `toml:"transport"` // grpc | http (otlp)
	Endpoint  string `toml:"endpoint"`  // otlp
	// File is the JSON-lines span file (file exporter); empty means
	// traces.jsonl in the log directory. See Config.TracesFile.
	File        string  `toml:"file"`
	SampleRatio float64 `toml:"sample_ratio"`
}

// TelemetryMetrics is telemetry.metrics. Unlike traces it does not hang
// on telemetry.enabled: metrics are collected by default.
type TelemetryMetrics struct {
	Enabled   bool     `toml:"enabled"`
	Exporter  string   `toml:"exporter"`  // prometheus | otlp | stdout | none
	Transport string   `toml:"transport"` // grpc | http (otlp)
	Endpoint  string   `toml:"endpoint"`  // otlp
	Interval  Duration `toml:"interval"`  // periodic reader (otlp, stdout)
}

// Exporter and transport names.
const (
	ExporterOTLP       = "otlp"
	ExporterFile       = "file"
	ExporterStdout     = "stdout"
	ExporterPrometheus = "prometheus"
	ExporterNone       = "none"
	TransportGRPC      = "grpc"
	TransportHTTP      = "http"
)

func defaultTelemetry() Telemetry {
	return Telemetry{
		ServiceName: "iggy",
		Logs:        TelemetryLogs{Exporter: ExporterOTLP, Transport: TransportGRPC, Endpoint: "http://localhost:7281/v1/logs"},
		Traces: TelemetryTraces{Exporter: ExporterOTLP, Transport: TransportGRPC, Endpoint: "http://localhost:7281/v1/traces",
			SampleRatio: 1},
		Metrics: TelemetryMetrics{Enabled: true, Exporter: ExporterPrometheus, Transport: TransportGRPC,
			Endpoint: "http://localhost:7281/v1/metrics", Interval: Duration(60e9)},
	}
}

// TracesFile is where the file exporter writes: telemetry.traces.file
// (UnderSystem); empty means traces.jsonl in LogDir.
func (c Config) TracesFile() string {
	if c.Telemetry.Traces.File == "" {
		return filepath.Join(c.LogDir(), "traces.jsonl")
	}
	return c.UnderSystem(c.Telemetry.Traces.File)
}

// applyOTelEnv maps the standard OpenTelemetry variables onto cfg. Load
// applies it after the file and before IGGY_*, so IGGY_* wins when both
// name the same setting. OTEL_EXPORTER_OTLP_* variables other than the
// endpoints and protocols (headers, timeout, compression, certificates)
// are read by the OTLP exporters themselves.
func applyOTelEnv(cfg *Config, env map[string]string) error {
	t := &cfg.Telemetry
	if v := env["OTEL_SDK_DISABLED"]; v != "" {
		off, err := strconv.ParseBool(strings.ToLower(strings.TrimSpace(v)))
		if err != nil {
			return fmt.Errorf("OTEL_SDK_DISABLED=%q: %w", v, err)
		}
		if off {
			t.Enabled = false
			t.Metrics.Enabled = false
		}
	}
	if v := strings.TrimSpace(env["OTEL_SERVICE_NAME"]); v != "" {
		t.ServiceName = v
	}
	if v := strings.TrimSpace(env["OTEL_TRACES_SAMPLER_ARG"]); v != "" {
		r, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return fmt.Errorf("OTEL_TRACES_SAMPLER_ARG=%q: %w", v, err)
		}
		t.Traces.SampleRatio = r
	}
	exporters := []struct {
		name    string
		dst     *string
		allowed map[string]string
	}{
		{"OTEL_TRACES_EXPORTER", &t.Traces.Exporter, map[string]string{"otlp": ExporterOTLP, "console": ExporterStdout, "none": ExporterNone}},
		{"OTEL_METRICS_EXPORTER", &t.Metrics.Exporter, map[string]string{"otlp": ExporterOTLP, "console": ExporterStdout,
			"prometheus": ExporterPrometheus, "none": ExporterNone}},
		{"OTEL_LOGS_EXPORTER", &t.Logs.Exporter, map[string]string{"otlp": ExporterOTLP, "none": ExporterNone}},
	}
	for _, e := range exporters {
		v := strings.ToLower(strings.TrimSpace(env[e.name]))
		if v == "" {
			continue
		}
		ours, ok := e.allowed[v]
		if !ok {
			return fmt.Errorf("%s=%q: this node supports %s", e.name, v, strings.Join(slices.Sorted(maps.Keys(e.allowed)), ", "))
		}
		*e.dst = ours
	}
	signals := []struct {
		suffix, path        string
		endpoint, transport *string
	}{
		{"TRACES", "/v1/traces", &t.Traces.Endpoint, &t.Traces.Transport},
		{"METRICS", "/v1/metrics", &t.Metrics.Endpoint, &t.Metrics.Transport},
		{"LOGS", "/v1/logs", &t.Logs.Endpoint, &t.Logs.Transport},
	}
	for _, s := range signals {
		if v := strings.TrimSpace(env["OTEL_EXPORTER_OTLP_ENDPOINT"]); v != "" {
			*s.endpoint = strings.TrimSuffix(v, "/") + s.path
		}
		if v := strings.TrimSpace(env["OTEL_EXPORTER_OTLP_"+s.suffix+"_ENDPOINT"]); v != "" {
			*s.endpoint = v
		}
		for _, name := range []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_" + s.suffix + "_PROTOCOL"} {
			switch v := strings.TrimSpace(env[name]); v {
			case "":
			case "grpc":
				*s.transport = TransportGRPC
			case "http/protobuf":
				*s.transport = TransportHTTP
			default:
				return fmt.Errorf("%s=%q: this node supports grpc and http/protobuf", name, v)
			}
		}
	}
	return nil
}

// validateTelemetry checks the telemetry section and http.metrics
// (server-behaviour.md 13.1, 11.3).
func validateTelemetry(c Config) error {
	t := c.Telemetry
	if !strings.HasPrefix(c.HTTP.Metrics.Endpoint, "/") {
		return fmt.Errorf("http.metrics.endpoint %q must start with /", c.HTTP.Metrics.Endpoint)
	}
	if t.Traces.SampleRatio < 0 || t.Traces.SampleRatio > 1 || t.Traces.SampleRatio != t.Traces.SampleRatio {
		return fmt.Errorf("telemetry.traces.sample_ratio %v must be in [0, 1]", t.Traces.SampleRatio)
	}
	if err := oneOf("telemetry.traces.exporter", t.Traces.Exporter, ExporterOTLP, ExporterFile, ExporterStdout, ExporterNone); err != nil {
		return err
	}
	if err := oneOf("telemetry.logs.exporter", t.Logs.Exporter, ExporterOTLP, ExporterNone); err != nil {
		return err
	}
	if err := oneOf("telemetry.metrics.exporter", t.Metrics.Exporter, ExporterPrometheus, ExporterOTLP, ExporterStdout, ExporterNone); err != nil {
		return err
	}
	for _, tr := range []struct{ key, v string }{
		{"telemetry.logs.transport", t.Logs.Transport},
		{"telemetry.traces.transport", t.Traces.Transport},
		{"telemetry.metrics.transport", t.Metrics.Transport},
	} {
		if err := oneOf(tr.key, tr.v, TransportGRPC, TransportHTTP); err != nil {
			return err
		}
	}
	if t.Enabled {
		if strings.TrimSpace(t.ServiceName) == "" {
			return fmt.Errorf("telemetry.service_name must be non-empty when telemetry is enabled")
		}
		if t.Logs.Exporter == ExporterOTLP && t.Logs.Endpoint == "" {
			return fmt.Errorf("telemetry.logs.endpoint must be non-empty when telemetry is enabled")
		}
		if t.Traces.Exporter == ExporterOTLP && t.Traces.Endpoint == "" {
			return fmt.Errorf("telemetry.traces.endpoint must be non-empty when telemetry is enabled")
		}
	}
	if t.Metrics.Enabled {
		if t.Metrics.Exporter == ExporterOTLP && t.Metrics.Endpoint == "" {
			return fmt.Errorf("telemetry.metrics.endpoint must be non-empty for the otlp metrics exporter")
		}
		if (t.Metrics.Exporter == ExporterOTLP || t.Metrics.Exporter == ExporterStdout) && t.Metrics.Interval <= 0 {
			return fmt.Errorf("telemetry.metrics.interval must be positive")
		}
		if t.ServiceName == "" {
			return fmt.Errorf("telemetry.service_name must be non-empty when metrics are enabled")
		}
	}
	return nil
}

func oneOf(key, v string, allowed ...string) error {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return fmt.Errorf("%s %q must be one of %s", key, v, strings.Join(allowed, ", "))
}
