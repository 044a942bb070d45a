package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"iggynode/bench/ceilings"
)

// runCeilings is "bench ceilings": in one run, the transport ceiling
// (lean client, plain sink), the storage ceiling (storing sink), our SDK
// against the sink and, given a node, the lean client and the SDK against
// it, with the ratios between them (package bench/ceilings;
// docs/benchmarks.md, issue 20).
//
//	go run ./cmd/bench ceilings --node --fsync --dir /dev/shm/ceil
//	go run ./cmd/bench ceilings --address 127.0.0.1:8090 --producers 16 --partitions 16
//	go run ./cmd/bench ceilings --node --producers 16 --base-producers 4 --partitions 1
//	go run ./cmd/bench ceilings --node --env IGGY_PARTITION_MEMORY_BUDGET=16MiB   # cold polls
func runCeilings(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("bench ceilings", flag.ContinueOnError)
	var cfg ceilings.Config
	fs.IntVar(&cfg.Rounds, "rounds", 3, "alternating rounds; every figure is the median over them")
	fs.IntVar(&cfg.Messages, "messages", 1000, "messages per batch")
	fs.IntVar(&cfg.Size, "size", 1000, "payload bytes per message")
	fs.IntVar(&cfg.Batches, "batches", 200, "batches per producer per measurement")
	fs.IntVar(&cfg.Producers, "producers", 1, "producer connections (and as many polling ones)")
	fs.IntVar(&cfg.Partitions, "partitions", 0, "partitions of the topic, producer i on i mod partitions (0: one per producer)")
	fs.IntVar(&cfg.BaseProducers, "base-producers", 0, "also measure the storing sink and the node with this many producers sending the same bytes, and the ratios of --producers over them")
	fs.StringVar(&cfg.Dir, "dir", "", "storing sink files and a started node's data (default: a temporary directory; use tmpfs to measure code, not disk)")
	fs.BoolVar(&cfg.Fsync, "fsync", false, "also measure the storing sink with fsync and the node with enforce_fsync")
	fs.StringVar(&cfg.Address, "address", "", "a running node to measure too (host:port)")
	fs.StringVar(&cfg.Username, "username", "", "the node's user (default iggy)")
	fs.StringVar(&cfg.Password, "password", "", "its password (default iggy)")
	fs.BoolVar(&cfg.StartNode, "node", false, "start a node process for the run (--node-bin, or ./cmd/node built from --source)")
	fs.StringVar(&cfg.NodeBin, "node-bin", "", "node binary to start (implies --node)")
	fs.StringVar(&cfg.Source, "source", ".", "repository root to build ./cmd/node from")
	env := fs.String("env", "", "extra IGGY_* settings for a started node, comma-separated KEY=VALUE (IGGY_PARTITION_MEMORY_BUDGET=16MiB: cold polls)")
	sinkProcess := fs.Bool("sink-process", true, "run the sinks as child processes (bench sink), like the node, not beside the clients")
	jsonPath := fs.String("json", "", "write the result as JSON to this file")
	timeout := fs.Duration("timeout", 20*time.Minute, "bound on the whole run")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *timeout <= 0 {
		return errors.New("--timeout must be positive")
	}
	if cfg.NodeBin != "" {
		cfg.StartNode = true
	}
	if cfg.NodeEnv = splitEnv(*env); cfg.NodeEnv != nil && !cfg.StartNode {
		return errors.New("--env configures a node this run starts: give --node or --node-bin")
	}
	if cfg.StartNode && cfg.Address != "" {
		return errors.New("--address and --node/--node-bin are alternatives; give one")
	}
	if cfg.Rounds < 1 || cfg.Messages < 1 || cfg.Size < 1 || cfg.Batches < 1 || cfg.Producers < 1 || cfg.Partitions < 0 || cfg.BaseProducers < 0 {
		return errors.New("--rounds, --messages, --size, --batches and --producers must be positive, --partitions and --base-producers not negative")
	}
	if *sinkProcess {
		self, err := os.Executable()
		if err != nil {
			return err
		}
		cfg.SinkCommand = []string{self, "sink"}
	}
	cfg.Log = os.Stderr
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	res, err := ceilings.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if err := res.WriteText(out); err != nil {
		return err
	}
	if err := writeJSON(*jsonPath, res); err != nil {
		return err
	}
	return nil
}
