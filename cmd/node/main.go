// Command node runs one iggynode: an Apache Iggy binary protocol 0.11.0
// server. With no arguments it starts on the embedded defaults: TCP on
// 127.0.0.1:8090, data in ./local_data, root user iggy/iggy.
//
// Configuration: --config FILE (or IGGY_CONFIG_PATH) in TOML, overridden
// by IGGY_* environment variables (server-behaviour.md 11). Telemetry
// (traces, metrics, OTLP logs) is set up by package telemetry, whose doc
// lists the keys. The HTTP REST API (plane/http, with /ping and /metrics)
// listens on 127.0.0.1:3000 by default. It also serves GET /ready (ours):
// 503 until the node has caught up with its cluster
// (actors.Node.CaughtUp), then 200, for readiness probes; /ping stays the
// liveness route.
//
// In a StatefulSet, --replica-id-from-name $(POD_NAME) takes the replica
// id from the pod's ordinal (deploy/helm/iggynode).
//
// Every configuration warning (an unknown key or IGGY_* variable, a
// reference key the node ignores; package config) is logged at start;
// --strict, or system.strict_config = true (IGGY_SYSTEM_STRICT_CONFIG),
// refuses to start on any of them instead. Settings the node cannot honour
// (config.Validate) always refuse. With the default root password, any
// listener bound beyond loopback (TCP, QUIC, WebSocket, HTTP) is named in
// one loud warning.
//
// The process umask is 077: everything the node writes under system.path
// (badger's files too, which it creates 0666), its log and span files are
// owner-only.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	_ "net/http/pprof" // --pprof: profiles for performance work
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"iggynode/actors"
	"iggynode/config"
	"iggynode/internal/gctune"
	"iggynode/internal/version"
	httpplane "iggynode/plane/http"
	"iggynode/telemetry"
	"iggynode/wire"
)

func main() {
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	if err := run(os.Args[1:], os.Environ(), sig); err != nil {
		fmt.Fprintln(os.Stderr, "iggynode:", err)
		os.Exit(1)
	}
}

// run starts the node and serves until a signal arrives on sig.
func run(args []string, environ []string, sig <-chan os.Signal) error {
	fs := flag.NewFlagSet("node", flag.ContinueOnError)
	configPath := fs.String("config", "", "TOML configuration file (default: IGGY_CONFIG_PATH)")
	fresh := fs.Bool("fresh", false, "delete the data directory before starting")
	level := fs.String("log-level", "", "log level: debug, info, warn, error (default: system.logging.level)")
	replicaID := fs.Int("replica-id", -1, "this node's replica id in [cluster] (overrides cluster.replica_id)")
	replicaName := fs.String("replica-id-from-name", "", "take the replica id from the ordinal this name ends with, "+
		"as a StatefulSet's pod name (iggynode-2: 2); overrides cluster.replica_id")
	join := fs.Bool("join", false, "boot outside the cluster's roster, empty, until `iggy cluster add` names this node (cluster.join)")
	pprofAddr := fs.String("pprof", "", "serve Go profiles (net/http/pprof) on this address, e.g. 127.0.0.1:6060")
	strict := fs.Bool("strict", false, "refuse to start on any configuration warning (also system.strict_config, IGGY_SYSTEM_STRICT_CONFIG)")
	showVersion := version.Flag(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if version.Handled(showVersion, "iggynode", os.Stdout) {
		return nil
	}
	restrictFileModes() // before anything is written
	gctune.Start(environ)
	cfg, warnings, err := config.Load(*configPath, environ)
	if err != nil {
		return err
	}
	if len(warnings) > 0 && (*strict || cfg.System.StrictConfig) {
		return fmt.Errorf("strict configuration (--strict or system.strict_config): refusing to start on %d warning(s):\n  %s",
			len(warnings), strings.Join(warnings, "\n  "))
	}
	if *replicaID >= 0 {
		cfg.Cluster.ReplicaID = *replicaID
	}
	if *replicaName != "" {
		if *replicaID >= 0 {
			return errors.New("--replica-id and --replica-id-from-name exclude each other")
		}
		if cfg.Cluster.ReplicaID, err = replicaIDFromName(*replicaName); err != nil {
			return err
		}
	}
	if *join {
		cfg.Cluster.Join = true
	}
	if *level != "" {
		cfg.System.Logging.Level = *level
	}
	if *fresh {
		if err := os.RemoveAll(cfg.System.Path); err != nil {
			return err
		}
	}
	logFile, logErr := openLogFile(cfg.LogDir())
	out := io.Writer(os.Stderr)
	if logFile != nil {
		defer logFile.Close()
		out = io.MultiWriter(os.Stderr, logFile)
	}
	logger := slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: parseLevel(cfg.System.Logging.Level)}))
	slog.SetDefault(logger)
	if logErr != nil {
		logger.Warn("logging to standard error only", "err", logErr)
	}
	for _, w := range warnings {
		logger.Warn(w)
	}
	user, pass, err := config.RootCredentials(environ)
	if err != nil {
		return err
	}
	warnExposed(logger, cfg, pass)
	if *pprofAddr != "" {
		go func() {
			logger.Info("pprof listening", "address", *pprofAddr)
			if err := http.ListenAndServe(*pprofAddr, nil); err != nil {
				logger.Warn("pprof server stopped", "err", err)
			}
		}()
	}

	tel, err := telemetry.Setup(context.Background(), cfg, cfg.Cluster.ReplicaID, wire.ServerVersion)
	if err != nil {
		return err
	}
	defer shutdownTelemetry(logger, tel)
	logger = slog.New(tel.LogHandler(logger.Handler()))
	slog.SetDefault(logger)
	logTelemetry(logger, cfg, tel)
	surface, err := tel.Surface(cfg.HTTP)
	if err != nil {
		return err
	}
	removed, removedOnce := make(chan struct{}), sync.Once{}
	node, err := actors.Start(actors.Options{Config: cfg, RootUsername: user, RootPassword: pass, Logger: logger,
		TracerProvider: tel.TracerProvider(), MeterProvider: tel.MeterProvider(), HTTPSurface: surface,
		Removed: func() { removedOnce.Do(func() { close(removed) }) }})
	if err != nil {
		return err
	}
	if cfg.HTTP.Enabled {
		logger.Info("http listening", "address", node.HTTPAddr(), "routes", httpRoutes(cfg, tel))
	}
	logger.Info("iggynode serving", "tcp", node.TCPAddr(), "data", cfg.System.Path)

	select {
	case s := <-sig:
		logger.Info("shutting down", "signal", s.String())
	case <-removed:
		logger.Info("shutting down: removed from the cluster and drained")
	}
	go func() {
		for s := range sig {
			logger.Warn("already shutting down; signal ignored", "signal", s.String())
		}
	}()
	err = node.Close() // the HTTP listener drains with the node
	return err         // the deferred shutdownTelemetry flushes after the node's last spans
}

// shutdownGrace bounds each of the HTTP listener's drain and the telemetry
// flush at shutdown: an unreachable collector must not hold the exit.
const shutdownGrace = 10 * time.Second

func shutdownTelemetry(logger *slog.Logger, tel *telemetry.Telemetry) {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := tel.Shutdown(ctx); err != nil {
		logger.Warn("telemetry flush at shutdown", "err", err)
	}
}

// logTelemetry says at start what is exported where.
func logTelemetry(logger *slog.Logger, cfg config.Config, tel *telemetry.Telemetry) {
	t := cfg.Telemetry
	traces, logs, metrics := "off", "local", "off"
	if tel.Tracing() {
		traces = t.Traces.Exporter
		switch t.Traces.Exporter {
		case config.ExporterOTLP:
			traces += " " + t.Traces.Transport + " " + t.Traces.Endpoint
		case config.ExporterFile:
			traces += " " + cfg.TracesFile()
		}
		traces += fmt.Sprintf(" sample_ratio=%g", t.Traces.SampleRatio)
	}
	if t.Enabled && t.Logs.Exporter == config.ExporterOTLP {
		logs = "local+otlp " + t.Logs.Transport + " " + t.Logs.Endpoint
	}
	if t.Metrics.Enabled && t.Metrics.Exporter != config.ExporterNone {
		metrics = t.Metrics.Exporter
		switch {
		case t.Metrics.Exporter == config.ExporterOTLP:
			metrics += " " + t.Metrics.Transport + " " + t.Metrics.Endpoint
		case t.Metrics.Exporter == config.ExporterPrometheus && !(cfg.HTTP.Enabled && cfg.HTTP.Metrics.Enabled):
			metrics += " (collected, not served: http.enabled or http.metrics.enabled is false)"
		}
	}
	logger.Info("telemetry", "service", t.ServiceName, "traces", traces, "logs", logs, "metrics", metrics)
}

// httpRoutes names what the HTTP listener serves, for the start-up log.
func httpRoutes(cfg config.Config, tel *telemetry.Telemetry) string {
	routes := "REST API (http.md 2.1), /ping " + httpplane.ReadyRoute
	if cfg.HTTP.Metrics.Enabled && tel.Handler() != nil {
		routes += " " + cfg.HTTP.Metrics.Endpoint
		if cfg.HTTP.Metrics.Token != "" {
			routes += " (JWT, personal access token or the static bearer token)"
		}
	}
	return routes
}

// openLogFile opens dir/iggynode.log for appending, creating dir: the log
// the GetSnapshot archive collects and a container's users read from a
// mounted folder. Both are owner-only (0700, 0600): the log names users,
// streams and client addresses. A node that cannot write it logs to
// standard error only.
func openLogFile(dir string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return os.OpenFile(filepath.Join(dir, "iggynode.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
}

// warnExposed warns loudly, once, when any listener (TCP, QUIC,
// WebSocket, HTTP) is reachable beyond loopback while the root password is
// the well-known default.
func warnExposed(logger *slog.Logger, cfg config.Config, rootPassword string) {
	if rootPassword != "iggy" {
		return
	}
	exposed := exposedListeners(cfg)
	if len(exposed) == 0 {
		return
	}
	logger.Warn(strings.Repeat("!", 72))
	logger.Warn("listeners are reachable beyond loopback and the root password is the default 'iggy'",
		"listeners", strings.Join(exposed, " "), "fix", "set IGGY_ROOT_USERNAME and IGGY_ROOT_PASSWORD before the first start")
	logger.Warn(strings.Repeat("!", 72))
}

// exposedListeners names each enabled listener bound beyond loopback, as
// transport=address.
func exposedListeners(cfg config.Config) []string {
	var out []string
	for _, l := range []struct {
		name    string
		enabled bool
		address string
	}{
		{"tcp", cfg.TCP.Enabled, cfg.TCP.Address},
		{"quic", cfg.QUIC.Enabled, cfg.QUIC.Address},
		{"websocket", cfg.WebSocket.Enabled, cfg.WebSocket.Address},
		{"http", cfg.HTTP.Enabled, cfg.HTTP.Address},
	} {
		if l.enabled && !telemetry.IsLoopback(l.address) {
			out = append(out, l.name+"="+l.address)
		}
	}
	return out
}

func parseLevel(s string) slog.Level {
	switch strings.ToLower(s) {
	case "debug", "trace":
		return slog.LevelDebug
	case "warn", "warning":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	}
	return slog.LevelInfo
}
