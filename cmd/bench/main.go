// Command bench is iggynode's load generator: producers and consumers
// against a node (or the built-in sink), reporting MB/s, msgs/s and
// latency percentiles. See package iggynode/bench for what is measured.
//
//	go run ./cmd/bench --sink --producers 1 --batches 2000
//	go run ./cmd/bench --address 127.0.0.1:8090 --producers 2 --consumers 2 --json out.json
//	go run ./cmd/bench --sink --workload balanced-producer --producers 4 --total-size 1GB --rate-limit 100MB/s --chart run.html
//	go run ./cmd/bench --sink --workload balanced-consumer-group --consumers 3 --total-size 100MB
//	go run ./cmd/bench loginflood --address 127.0.0.1:8090 --connections 64 --duration 20s
//	go run ./cmd/bench scale --partitions 2000,10000 --kill --restart
//	go run ./cmd/bench ceilings --node --fsync --dir /dev/shm/ceil
//
// The ceilings subcommand measures, in one run, the transport ceiling (a
// lean client against the sink), the storage ceiling (a sink that stores
// each batch), our SDK against the sink and, given --address or --node, the
// node, and prints the ratios between them (package iggynode/bench/ceilings).
// It runs its sinks as child processes of this command (the sink
// subcommand: the built-in sink on its own, printing its address).
//
// The scale subcommand starts a loopback cluster of node processes and
// measures idle CPU, RSS, creation time and send MB/s as its partitions
// grow, and recovery after a kill (package iggynode/bench/scale).
//
// The loginflood subcommand floods a node with wrong-password logins from
// one address and measures login, read and send latency from another
// (package iggynode/bench/loginflood).
//
// --workload picks iggy-bench's shapes (see package bench); the
// consumer-only ones (pinned-consumer, balanced-consumer-group) run no
// producer unless --producers is given. --total-size replaces --batches.
// A progress line goes to stderr every second when stderr is a terminal
// or with --progress.
//
// Every run is bounded: by the batch count (or total size), and by --timeout.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"iggynode/bench"
	"iggynode/internal/gctune"
	"iggynode/internal/version"
)

func main() {
	// The sinks and clients measured here get the node's collector
	// target: a ceiling held down by garbage collection is no ceiling.
	gctune.Start(os.Environ())
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	if len(args) == 1 && (args[0] == "--version" || args[0] == "-version") {
		fmt.Fprintln(out, version.Line("iggy-bench"))
		return nil
	}
	if len(args) > 0 && args[0] == "loginflood" {
		return runLoginFlood(args[1:], out)
	}
	if len(args) > 0 && args[0] == "scale" {
		return runScale(args[1:], out)
	}
	if len(args) > 0 && args[0] == "placement" {
		return runPlacement(args[1:], out)
	}
	if len(args) > 0 && args[0] == "ceilings" {
		return runCeilings(args[1:], out)
	}
	if len(args) > 0 && args[0] == "sink" {
		return runSink(args[1:], out)
	}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	var cfg bench.Config
	fs.StringVar(&cfg.Address, "address", "127.0.0.1:8090", "node address host:port (ignored with --sink)")
	fs.StringVar(&cfg.Transport, "transport", "tcp", "transport: tcp, tls, quic, ws, wss, http or https (the REST API; --address is the node's http.address)")
	fs.StringVar(&cfg.CAFile, "ca-file", "", "PEM CA file to trust for tls, quic and wss")
	fs.BoolVar(&cfg.Insecure, "insecure", false, "skip TLS certificate verification (self-signed dev certificates)")
	fs.StringVar(&cfg.Username, "username", bench.DefaultUsername, "username")
	fs.StringVar(&cfg.Password, "password", bench.DefaultPassword, "password")
	fs.IntVar(&cfg.Producers, "producers", 1, "producers, one connection each")
	fs.IntVar(&cfg.Consumers, "consumers", 0, "consumers, one connection each")
	fs.IntVar(&cfg.Streams, "streams", 0, "streams bench-1..N, one topic each (0: one per actor)")
	fs.IntVar(&cfg.PartitionsPerTopic, "partitions", 0, "partitions per topic (0: the workload's default, 1; balanced: one per actor)")
	fs.IntVar(&cfg.MessageSize, "message-size", 1000, "payload bytes per message")
	fs.IntVar(&cfg.MessagesPerBatch, "messages-per-batch", 1000, "messages per send (and per poll)")
	fs.IntVar(&cfg.BatchCount, "batches", 1000, "batches per producer; a consumer reads batches x messages-per-batch")
	fs.DurationVar(&cfg.Warmup, "warmup", 0, "unmeasured warmup per actor before measuring")
	fs.StringVar(&cfg.Workload, "workload", bench.WorkloadMixed, "workload: "+strings.Join(bench.Workloads(), ", "))
	fs.StringVar(&cfg.ConsumerGroup, "consumer-group", bench.DefaultConsumerGroup, "consumer group of the balanced-consumer-group workload")
	totalSize := fs.String("total-size", "", "payload to move in total, e.g. 1GB or 512MiB, split over the producers (instead of --batches)")
	rateLimit := fs.String("rate-limit", "", "cap on each actor's sends, e.g. 100MB/s (token bucket; empty: none)")
	progress := fs.Bool("progress", false, "print a progress line to stderr every second (default when stderr is a terminal)")
	chartPath := fs.String("chart", "", "write an HTML page with throughput and latency charts over time to this file")
	fs.DurationVar(&cfg.RequestTimeout, "request-timeout", 0, "per-request deadline (0: SDK default 30s)")
	timeout := fs.Duration("timeout", 10*time.Minute, "bound on the whole run")
	useSink := fs.Bool("sink", false, "start the built-in sink on 127.0.0.1:0 and run against it")
	jsonPath := fs.String("json", "", "write the report as JSON to this file")
	if err := fs.Parse(upstreamForm(fs, args)); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *timeout <= 0 {
		return errors.New("--timeout must be positive")
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if (cfg.Workload == bench.WorkloadPinnedConsumer || cfg.Workload == bench.WorkloadBalancedConsumerGroup) && !set["producers"] {
		cfg.Producers = 0 // consumer-only workloads read existing data
	}
	if *totalSize != "" {
		n, err := bench.ParseSize(*totalSize)
		if err != nil {
			return fmt.Errorf("--total-size: %w", err)
		}
		if set["batches"] {
			return errors.New("--total-size and --batches are alternatives; give one")
		}
		cfg.TotalSize, cfg.BatchCount = n, 0
	}
	if *rateLimit != "" {
		n, err := bench.ParseRate(*rateLimit)
		if err != nil {
			return fmt.Errorf("--rate-limit: %w", err)
		}
		cfg.RateLimit = n
	}
	if *progress || isTerminal(os.Stderr) {
		cfg.Progress = os.Stderr
	}

	if *useSink {
		sink, err := bench.StartSinkWith("127.0.0.1:0", bench.SinkOptions{PollMessageSize: cfg.MessageSize, Transport: cfg.Transport})
		if err != nil {
			return fmt.Errorf("start sink: %w", err)
		}
		defer sink.Close()
		cfg.Address = sink.Addr()
		cfg.Insecure = true // the sink's certificate is generated at start
		fmt.Fprintf(out, "sink listening on %s\n", cfg.Address)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()

	report, err := bench.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if err := report.WriteText(out); err != nil {
		return err
	}
	if err := writeJSON(*jsonPath, report); err != nil {
		return err
	}
	if *chartPath != "" {
		var page strings.Builder
		if err := bench.WriteChart(&page, report); err != nil {
			return err
		}
		if err := os.WriteFile(*chartPath, []byte(page.String()), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", *chartPath, err)
		}
	}
	return nil
}

// isTerminal reports whether f is a character device (a terminal), where
// a live progress line is wanted by default.
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// Upstream iggy-bench's command line is `iggy-bench [OPTIONS] BENCHMARK
// [OPTIONS] TRANSPORT [OPTIONS]`, e.g. `iggy-bench pinned-producer
// --producers 4 tcp --server-address 127.0.0.1:8090`. upstreamForm turns
// that into this command's flags: the benchmark word into --workload, the
// transport word into --transport, upstream's flag names into ours; the
// --workload form is unchanged.
var (
	upstreamBenchmarks = map[string]string{
		"pp": bench.WorkloadPinnedProducer, "pc": bench.WorkloadPinnedConsumer, "ppc": bench.WorkloadPinnedProducerAndConsumer,
		"bp": bench.WorkloadBalancedProducer, "bcg": bench.WorkloadBalancedConsumerGroup,
		"bpcg":  bench.WorkloadBalancedProducerAndConsumerGroup,
		"e2epc": bench.WorkloadEndToEnd, "e2epcg": bench.WorkloadEndToEndGroup,
	}
	upstreamTransports = map[string]string{"tcp": "tcp", "quic": "quic", "ws": "ws", "websocket": "ws", "http": "http"}
	upstreamFlags      = map[string]string{
		"server-address": "address", "message-batches": "batches", "total-data": "total-size", "warmup-time": "warmup",
	}
)

func upstreamForm(fs *flag.FlagSet, args []string) []string {
	for _, w := range bench.Workloads() {
		upstreamBenchmarks[w] = w
	}
	var flags, rest []string
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			rest = append(rest, args[i+1:]...)
			break
		}
		if !strings.HasPrefix(arg, "-") || arg == "-" {
			if w, ok := upstreamBenchmarks[arg]; ok {
				flags = append(flags, "--workload="+w)
			} else if t, ok := upstreamTransports[arg]; ok {
				flags = append(flags, "--transport="+t)
			} else {
				rest = append(rest, arg)
			}
			continue
		}
		name, value, inline := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		if ours, ok := upstreamFlags[name]; ok {
			name = ours
		}
		if inline {
			flags = append(flags, "--"+name+"="+value)
			continue
		}
		flags = append(flags, "--"+name)
		if takesValue(fs, name) && i+1 < len(args) {
			i++
			flags = append(flags, args[i])
		}
	}
	return append(flags, rest...)
}

// takesValue reports whether the flag name exists and is not a bool flag
// (an unknown one is left for Parse to refuse).
func takesValue(fs *flag.FlagSet, name string) bool {
	f := fs.Lookup(name)
	if f == nil {
		return false
	}
	b, isBool := f.Value.(interface{ IsBoolFlag() bool })
	return !isBool || !b.IsBoolFlag()
}

// writeJSON writes v, indented, to path; an empty path writes nothing
// (--json unset).
func writeJSON(path string, v any) error {
	if path == "" {
		return nil
	}
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
