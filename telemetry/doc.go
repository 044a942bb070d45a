// Package telemetry sets up the node's OpenTelemetry traces, metrics and
// log export from config.Telemetry and config.HTTP (server-behaviour.md
// 13; DESIGN.md "Observability"), and serves the small HTTP surface the
// node has: GET /ping and the Prometheus exposition.
//
// Setup builds one Telemetry per process; the node passes its
// TracerProvider and MeterProvider to the actors, wraps its slog handler
// with LogHandler, serves HTTPHandler with Serve when http.enabled, and
// calls Shutdown after the node has closed so the last spans and metrics
// are flushed. Setup sets no global provider: the only global it installs
// is the W3C TraceContext propagator (13.2).
//
// # Configuration
//
// The reference keys (13.1):
//
//	telemetry.enabled           false   traces and OTLP log export on
//	telemetry.service_name      "iggy"  resource service.name; non-empty when enabled
//	telemetry.logs.transport    "grpc"  grpc | http (OTLP/HTTP, binary protobuf)
//	telemetry.logs.endpoint     "http://localhost:7281/v1/logs"
//	telemetry.traces.transport  "grpc"  grpc | http
//	telemetry.traces.endpoint   "http://localhost:7281/v1/traces"
//
// Ours:
//
//	telemetry.logs.exporter     "otlp"  otlp | none (none: logs stay local even when enabled)
//	telemetry.traces.exporter   "otlp"  otlp | file | stdout | none; used only when telemetry.enabled
//	telemetry.traces.file       ""      JSON-lines span file (package spanfile) for the file
//	                                    exporter; relative to system.path; empty means
//	                                    <system.path>/<system.logging.path>/traces.jsonl
//	telemetry.traces.sample_ratio 1.0   parent-based TraceIDRatioBased sampler, in [0, 1]
//	telemetry.metrics.enabled   true    metrics are collected by default, independently of
//	                                    telemetry.enabled
//	telemetry.metrics.exporter  "prometheus"  prometheus | otlp | stdout | none
//	telemetry.metrics.transport "grpc"  grpc | http (otlp)
//	telemetry.metrics.endpoint  "http://localhost:7281/v1/metrics" (otlp)
//	telemetry.metrics.interval  "60 s"  periodic reader interval (otlp, stdout)
//	http.enabled                true    the HTTP listener (plane/http, the REST API)
//	http.address                "127.0.0.1:3000"
//	http.metrics.enabled        true    serve the Prometheus exposition (13.3)
//	http.metrics.endpoint       "/metrics"  must start with "/"
//	http.metrics.token          ""      static bearer token the metrics route also accepts; secret
//
// Each key has its IGGY_* variable (IGGY_TELEMETRY_TRACES_SAMPLE_RATIO,
// IGGY_HTTP_METRICS_TOKEN, ...; server-behaviour.md 11.2).
//
// Standard OpenTelemetry variables are honoured as a layer between the
// configuration file and IGGY_* (IGGY_* wins when both are set):
// OTEL_SDK_DISABLED=true turns traces, logs and metrics off;
// OTEL_SERVICE_NAME sets service_name; OTEL_TRACES_SAMPLER_ARG sets the
// ratio; OTEL_TRACES_EXPORTER (otlp | console | none), OTEL_METRICS_EXPORTER
// (otlp | console | prometheus | none) and OTEL_LOGS_EXPORTER (otlp | none)
// choose exporters, console meaning stdout; OTEL_EXPORTER_OTLP_ENDPOINT
// (base, "/v1/<signal>" appended), OTEL_EXPORTER_OTLP_<SIGNAL>_ENDPOINT and
// the matching _PROTOCOL variables (grpc | http/protobuf) set endpoints
// and transports. The other OTEL_EXPORTER_OTLP_* variables (headers,
// timeout, compression, certificates) are read by the OTLP exporters
// themselves, and OTEL_RESOURCE_ATTRIBUTES adds resource attributes.
//
// # Signals
//
// Traces: on when telemetry.enabled and traces.exporter is not none.
// Tracing reports it, so instrumented hot paths can skip all work when
// it is off (TracerProvider is then a no-op provider). Every exporter
// sits behind a batch span processor; Shutdown drains it. The file
// exporter appends spanfile records, one finished span per line, and
// flushes each batch. Root spans started from a context made by
// traceid.With take that trace id (spanfile.OpTraceID), so the
// ratio sampler decides the same on every replica for one op.
//
// Metrics: a real SDK MeterProvider whenever metrics are enabled with an
// exporter other than none, else a no-op provider. The Prometheus
// exporter registers on a private registry (never the global default one,
// which protoactor may use) together with the Go runtime and process
// collectors; Handler serves it. OTLP and stdout use a periodic reader.
//
// Logs: LogHandler adds trace_id and span_id (lowercase hex) to every
// record logged with a context that carries a valid span. When
// telemetry.enabled and logs.exporter is otlp, records are also exported
// over OTLP through the otelslog bridge and a batch processor, as the
// reference does.
//
// Resource: service.name, service.version (the build version),
// service.instance.id ("<cluster.name>/<replica>" in cluster mode,
// "<hostname>/<replica>" otherwise) and iggy.replica (spanfile.AttrReplica).
//
// # The HTTP surface
//
// The node's HTTP listener is the REST API of package plane/http, which
// mounts what Surface builds here: GET /ping ("pong"), the Prometheus
// exposition at http.metrics.endpoint when http.metrics.enabled and the
// metrics exporter is prometheus (the listener requires a JWT, a personal
// access token or the static http.metrics.token on it), and the counter
// behind http_requests_total (13.3), which wraps the whole listener.
// HTTPHandler serves the surface alone (/ping and the exposition, the
// static token rule, loopback only without a token) for tools without the
// REST API.
package telemetry
