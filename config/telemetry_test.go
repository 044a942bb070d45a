package config

import (
	"strings"
	"testing"
	"time"
)

// server-behaviour.md 13.1 and 11.3: the reference telemetry and
// http.metrics defaults, plus ours.
func TestTelemetryDefaults(t *testing.T) {
	c, _, err := Load("", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := Telemetry{
		ServiceName: "iggy",
		Logs:        TelemetryLogs{Exporter: "otlp", Transport: "grpc", Endpoint: "http://localhost:7281/v1/logs"},
		Traces:      TelemetryTraces{Exporter: "otlp", Transport: "grpc", Endpoint: "http://localhost:7281/v1/traces", SampleRatio: 1},
		Metrics: TelemetryMetrics{Enabled: true, Exporter: "prometheus", Transport: "grpc",
			Endpoint: "http://localhost:7281/v1/metrics", Interval: Duration(time.Minute)},
	}
	if c.Telemetry != want {
		t.Errorf("telemetry defaults\n got %+v\nwant %+v", c.Telemetry, want)
	}
	if !c.HTTP.Enabled || c.HTTP.Address != "127.0.0.1:3000" || c.HTTP.Metrics != (HTTPMetrics{Enabled: true, Endpoint: "/metrics"}) {
		t.Errorf("http defaults %+v", c.HTTP)
	}
	if got := c.TracesFile(); got != "local_data/logs/traces.jsonl" {
		t.Errorf("TracesFile %q", got)
	}
}

func TestTelemetryKeys(t *testing.T) {
	cases := []struct {
		name  string
		file  string // TOML, may be empty
		env   []string
		check func(c Config) bool
	}{
		{"enabled file", "[telemetry]\nenabled = true\n", nil, func(c Config) bool { return c.Telemetry.Enabled }},
		{"enabled env", "", []string{"IGGY_TELEMETRY_ENABLED=true"}, func(c Config) bool { return c.Telemetry.Enabled }},
		{"service name", "", []string{"IGGY_TELEMETRY_SERVICE_NAME=n1"}, func(c Config) bool { return c.Telemetry.ServiceName == "n1" }},
		{"logs transport file", "[telemetry.logs]\ntransport = \"http\"\nendpoint = \"http://c:4318/v1/logs\"\n", nil,
			func(c Config) bool {
				return c.Telemetry.Logs.Transport == "http" && c.Telemetry.Logs.Endpoint == "http://c:4318/v1/logs"
			}},
		{"logs env", "", []string{"IGGY_TELEMETRY_LOGS_TRANSPORT=http", "IGGY_TELEMETRY_LOGS_ENDPOINT=http://c/v1/logs", "IGGY_TELEMETRY_LOGS_EXPORTER=none"},
			func(c Config) bool {
				l := c.Telemetry.Logs
				return l.Transport == "http" && l.Endpoint == "http://c/v1/logs" && l.Exporter == "none"
			}},
		{"traces file", "[telemetry.traces]\nexporter = \"file\"\nfile = \"/tmp/t.jsonl\"\nsample_ratio = 0.25\ntransport = \"http\"\nendpoint = \"http://x/v1/traces\"\n", nil,
			func(c Config) bool {
				tr := c.Telemetry.Traces
				return tr.Exporter == "file" && c.TracesFile() == "/tmp/t.jsonl" && tr.SampleRatio == 0.25 &&
					tr.Transport == "http" && tr.Endpoint == "http://x/v1/traces"
			}},
		{"integer ratio in file", "[telemetry.traces]\nsample_ratio = 0\n", nil, func(c Config) bool { return c.Telemetry.Traces.SampleRatio == 0 }},
		{"traces env", "", []string{"IGGY_TELEMETRY_TRACES_EXPORTER=stdout", "IGGY_TELEMETRY_TRACES_FILE=tr/x.jsonl",
			"IGGY_TELEMETRY_TRACES_SAMPLE_RATIO=0.5", "IGGY_TELEMETRY_TRACES_TRANSPORT=http", "IGGY_TELEMETRY_TRACES_ENDPOINT=http://y/v1/traces"},
			func(c Config) bool {
				tr := c.Telemetry.Traces
				return tr.Exporter == "stdout" && c.TracesFile() == "local_data/tr/x.jsonl" && tr.SampleRatio == 0.5 &&
					tr.Transport == "http" && tr.Endpoint == "http://y/v1/traces"
			}},
		{"metrics file", "[telemetry.metrics]\nenabled = false\nexporter = \"otlp\"\ntransport = \"http\"\nendpoint = \"http://m/v1/metrics\"\ninterval = \"5 s\"\n", nil,
			func(c Config) bool {
				m := c.Telemetry.Metrics
				return !m.Enabled && m.Exporter == "otlp" && m.Transport == "http" && m.Endpoint == "http://m/v1/metrics" && m.Interval.D() == 5*time.Second
			}},
		{"metrics env", "", []string{"IGGY_TELEMETRY_METRICS_ENABLED=false", "IGGY_TELEMETRY_METRICS_EXPORTER=stdout",
			"IGGY_TELEMETRY_METRICS_TRANSPORT=http", "IGGY_TELEMETRY_METRICS_ENDPOINT=http://m", "IGGY_TELEMETRY_METRICS_INTERVAL=10 s"},
			func(c Config) bool {
				m := c.Telemetry.Metrics
				return !m.Enabled && m.Exporter == "stdout" && m.Transport == "http" && m.Endpoint == "http://m" && m.Interval.D() == 10*time.Second
			}},
		{"http metrics file", "[http]\nenabled = true\naddress = \"0.0.0.0:3000\"\n[http.metrics]\nenabled = false\nendpoint = \"/m\"\ntoken = \"t0k\"\n", nil,
			func(c Config) bool {
				return c.HTTP.Enabled && c.HTTP.Address == "0.0.0.0:3000" && c.HTTP.Metrics == HTTPMetrics{Endpoint: "/m", Token: "t0k"}
			}},
		{"http metrics env", "", []string{"IGGY_HTTP_ENABLED=true", "IGGY_HTTP_METRICS_ENABLED=false", "IGGY_HTTP_METRICS_ENDPOINT=/prom",
			"IGGY_HTTP_METRICS_TOKEN=s3cret"},
			func(c Config) bool {
				return c.HTTP.Enabled && c.HTTP.Metrics == HTTPMetrics{Endpoint: "/prom", Token: "s3cret"}
			}},

		// Standard OTEL_* variables, and IGGY_* winning over them.
		{"OTEL_SDK_DISABLED", "[telemetry]\nenabled = true\n", []string{"OTEL_SDK_DISABLED=true"},
			func(c Config) bool { return !c.Telemetry.Enabled && !c.Telemetry.Metrics.Enabled }},
		{"OTEL_SDK_DISABLED=false changes nothing", "", []string{"OTEL_SDK_DISABLED=false"},
			func(c Config) bool { return !c.Telemetry.Enabled && c.Telemetry.Metrics.Enabled }},
		{"IGGY wins over OTEL_SDK_DISABLED", "", []string{"OTEL_SDK_DISABLED=true", "IGGY_TELEMETRY_ENABLED=true"},
			func(c Config) bool { return c.Telemetry.Enabled && !c.Telemetry.Metrics.Enabled }},
		{"OTEL_SERVICE_NAME over the file", "[telemetry]\nservice_name = \"f\"\n", []string{"OTEL_SERVICE_NAME=o"},
			func(c Config) bool { return c.Telemetry.ServiceName == "o" }},
		{"IGGY_ wins over OTEL_SERVICE_NAME", "", []string{"OTEL_SERVICE_NAME=o", "IGGY_TELEMETRY_SERVICE_NAME=i"},
			func(c Config) bool { return c.Telemetry.ServiceName == "i" }},
		{"OTEL_TRACES_SAMPLER_ARG", "", []string{"OTEL_TRACES_SAMPLER_ARG=0.125"},
			func(c Config) bool { return c.Telemetry.Traces.SampleRatio == 0.125 }},
		{"IGGY wins over OTEL_TRACES_SAMPLER_ARG", "", []string{"OTEL_TRACES_SAMPLER_ARG=0.125", "IGGY_TELEMETRY_TRACES_SAMPLE_RATIO=0.75"},
			func(c Config) bool { return c.Telemetry.Traces.SampleRatio == 0.75 }},
		{"OTEL_TRACES_EXPORTER console", "", []string{"OTEL_TRACES_EXPORTER=console"},
			func(c Config) bool { return c.Telemetry.Traces.Exporter == "stdout" }},
		{"OTEL_TRACES_EXPORTER none", "", []string{"OTEL_TRACES_EXPORTER=none"},
			func(c Config) bool { return c.Telemetry.Traces.Exporter == "none" }},
		{"IGGY wins over OTEL_TRACES_EXPORTER", "", []string{"OTEL_TRACES_EXPORTER=none", "IGGY_TELEMETRY_TRACES_EXPORTER=file"},
			func(c Config) bool { return c.Telemetry.Traces.Exporter == "file" }},
		{"OTEL_METRICS_EXPORTER otlp", "", []string{"OTEL_METRICS_EXPORTER=otlp"},
			func(c Config) bool { return c.Telemetry.Metrics.Exporter == "otlp" }},
		{"OTEL_METRICS_EXPORTER console", "", []string{"OTEL_METRICS_EXPORTER=console"},
			func(c Config) bool { return c.Telemetry.Metrics.Exporter == "stdout" }},
		{"IGGY wins over OTEL_METRICS_EXPORTER", "", []string{"OTEL_METRICS_EXPORTER=none", "IGGY_TELEMETRY_METRICS_EXPORTER=prometheus"},
			func(c Config) bool { return c.Telemetry.Metrics.Exporter == "prometheus" }},
		{"OTEL_LOGS_EXPORTER none", "", []string{"OTEL_LOGS_EXPORTER=none"},
			func(c Config) bool { return c.Telemetry.Logs.Exporter == "none" }},
		{"OTEL_EXPORTER_OTLP_ENDPOINT base", "", []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://col:4318/", "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf"},
			func(c Config) bool {
				t := c.Telemetry
				return t.Traces.Endpoint == "http://col:4318/v1/traces" && t.Logs.Endpoint == "http://col:4318/v1/logs" &&
					t.Metrics.Endpoint == "http://col:4318/v1/metrics" && t.Traces.Transport == "http" && t.Metrics.Transport == "http"
			}},
		{"per-signal OTLP endpoint wins over the base", "", []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://col:4317",
			"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://tr:4317", "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=grpc"},
			func(c Config) bool {
				t := c.Telemetry
				return t.Traces.Endpoint == "http://tr:4317" && t.Traces.Transport == "grpc" && t.Logs.Transport == "http"
			}},
		{"IGGY wins over OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "", []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://o",
			"IGGY_TELEMETRY_TRACES_ENDPOINT=http://i"},
			func(c Config) bool { return c.Telemetry.Traces.Endpoint == "http://i" }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := ""
			if tc.file != "" {
				path = writeFile(t, tc.file)
			}
			c, warns, err := Load(path, tc.env)
			if err != nil || len(warns) != 0 {
				t.Fatalf("Load: %v, warnings %v", err, warns)
			}
			if !tc.check(c) {
				t.Errorf("unexpected config: telemetry %+v http %+v", c.Telemetry, c.HTTP)
			}
		})
	}
}

func TestTelemetryValidation(t *testing.T) {
	cases := []struct {
		name string
		file string
		env  []string
		want string // substring of the error
	}{
		{"metrics endpoint without slash", "", []string{"IGGY_HTTP_METRICS_ENDPOINT=metrics"}, "http.metrics.endpoint"},
		{"ratio above 1", "", []string{"IGGY_TELEMETRY_TRACES_SAMPLE_RATIO=1.5"}, "sample_ratio"},
		{"ratio below 0", "[telemetry.traces]\nsample_ratio = -0.1\n", nil, "sample_ratio"},
		{"ratio NaN", "", []string{"OTEL_TRACES_SAMPLER_ARG=NaN"}, "sample_ratio"},
		{"ratio not a number", "", []string{"OTEL_TRACES_SAMPLER_ARG=half"}, "OTEL_TRACES_SAMPLER_ARG"},
		{"bad traces transport", "", []string{"IGGY_TELEMETRY_TRACES_TRANSPORT=udp"}, "telemetry.traces.transport"},
		{"bad logs transport", "[telemetry.logs]\ntransport = \"tcp\"\n", nil, "telemetry.logs.transport"},
		{"bad metrics transport", "", []string{"IGGY_TELEMETRY_METRICS_TRANSPORT=x"}, "telemetry.metrics.transport"},
		{"bad traces exporter", "", []string{"IGGY_TELEMETRY_TRACES_EXPORTER=jaeger"}, "telemetry.traces.exporter"},
		{"bad metrics exporter", "", []string{"IGGY_TELEMETRY_METRICS_EXPORTER=file"}, "telemetry.metrics.exporter"},
		{"bad logs exporter", "", []string{"IGGY_TELEMETRY_LOGS_EXPORTER=file"}, "telemetry.logs.exporter"},
		{"empty service name when enabled", "[telemetry]\nenabled = true\nservice_name = \"\"\n", nil, "service_name"},
		{"empty traces endpoint when enabled", "[telemetry]\nenabled = true\n[telemetry.traces]\nendpoint = \"\"\n", nil, "telemetry.traces.endpoint"},
		{"empty logs endpoint when enabled", "[telemetry]\nenabled = true\n[telemetry.logs]\nendpoint = \"\"\n", nil, "telemetry.logs.endpoint"},
		{"empty metrics endpoint for otlp", "[telemetry.metrics]\nexporter = \"otlp\"\nendpoint = \"\"\n", nil, "telemetry.metrics.endpoint"},
		{"zero metrics interval for stdout", "", []string{"IGGY_TELEMETRY_METRICS_EXPORTER=stdout", "IGGY_TELEMETRY_METRICS_INTERVAL=0"}, "interval"},
		{"unsupported OTEL_TRACES_EXPORTER", "", []string{"OTEL_TRACES_EXPORTER=zipkin"}, "OTEL_TRACES_EXPORTER"},
		{"unsupported OTEL_METRICS_EXPORTER", "", []string{"OTEL_METRICS_EXPORTER=zipkin"}, "OTEL_METRICS_EXPORTER"},
		{"bad OTEL_SDK_DISABLED", "", []string{"OTEL_SDK_DISABLED=perhaps"}, "OTEL_SDK_DISABLED"},
		{"bad OTLP protocol", "", []string{"OTEL_EXPORTER_OTLP_PROTOCOL=http/json"}, "OTEL_EXPORTER_OTLP_PROTOCOL"},
		{"bad ratio env value", "", []string{"IGGY_TELEMETRY_TRACES_SAMPLE_RATIO=most"}, "IGGY_TELEMETRY_TRACES_SAMPLE_RATIO"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := ""
			if tc.file != "" {
				path = writeFile(t, tc.file)
			}
			_, _, err := Load(path, tc.env)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want an error naming %q, got %v", tc.want, err)
			}
		})
	}
	// Empty endpoints are fine while telemetry is off (13.1 asks only when enabled).
	p := writeFile(t, "[telemetry.traces]\nendpoint = \"\"\n[telemetry.logs]\nendpoint = \"\"\n")
	if _, _, err := Load(p, nil); err != nil {
		t.Fatalf("disabled telemetry with empty endpoints: %v", err)
	}
}
