// Command bench is iggynode's load generator: producers and consumers
// against a node (or the built-in sink), reporting MB/s, msgs/s and
// latency percentiles. See package iggynode/bench for what is measured.
//
//	go run ./cmd/bench --sink --producers 1 --batches 2000
//	go run ./cmd/bench --address 127.0.0.1:8090 --producers 2 --consumers 2 --json out.json
//
// Every run is bounded: by the batch count, and by --timeout.
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
	"time"

	"iggynode/bench"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	var cfg bench.Config
	fs.StringVar(&cfg.Address, "address", "127.0.0.1:8090", "node address host:port (ignored with --sink)")
	fs.StringVar(&cfg.Transport, "transport", "tcp", "transport: tcp, tls, quic, ws or wss")
	fs.StringVar(&cfg.CAFile, "ca-file", "", "PEM CA file to trust for tls, quic and wss")
	fs.BoolVar(&cfg.Insecure, "insecure", false, "skip TLS certificate verification (self-signed dev certificates)")
	fs.StringVar(&cfg.Username, "username", bench.DefaultUsername, "username")
	fs.StringVar(&cfg.Password, "password", bench.DefaultPassword, "password")
	fs.IntVar(&cfg.Producers, "producers", 1, "producers, one connection each")
	fs.IntVar(&cfg.Consumers, "consumers", 0, "consumers, one connection each")
	fs.IntVar(&cfg.Streams, "streams", 0, "streams bench-1..N, one topic each (0: one per actor)")
	fs.IntVar(&cfg.PartitionsPerTopic, "partitions", 1, "partitions per topic")
	fs.IntVar(&cfg.MessageSize, "message-size", 1000, "payload bytes per message")
	fs.IntVar(&cfg.MessagesPerBatch, "messages-per-batch", 1000, "messages per send (and per poll)")
	fs.IntVar(&cfg.BatchCount, "batches", 1000, "batches per producer; a consumer reads batches x messages-per-batch")
	fs.DurationVar(&cfg.Warmup, "warmup", 0, "unmeasured warmup per actor before measuring")
	fs.DurationVar(&cfg.RequestTimeout, "request-timeout", 0, "per-request deadline (0: SDK default 30s)")
	timeout := fs.Duration("timeout", 10*time.Minute, "bound on the whole run")
	useSink := fs.Bool("sink", false, "start the built-in sink on 127.0.0.1:0 and run against it")
	jsonPath := fs.String("json", "", "write the report as JSON to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *timeout <= 0 {
		return errors.New("--timeout must be positive")
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
	if *jsonPath != "" {
		data, err := json.MarshalIndent(report, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(*jsonPath, append(data, '\n'), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", *jsonPath, err)
		}
	}
	return nil
}
