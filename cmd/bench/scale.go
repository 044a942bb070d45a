package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"iggynode/bench/scale"
)

// runScale is "bench scale": a loopback cluster of node processes as its
// partitions grow (package bench/scale; docs/benchmarks.md, issue 16).
//
//	go run ./cmd/bench scale --partitions 2000,10000 --kill --restart
func runScale(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("bench scale", flag.ContinueOnError)
	var cfg scale.Config
	parts := fs.String("partitions", "2000,10000", "partition totals to reach, increasing, comma-separated")
	fs.IntVar(&cfg.Nodes, "nodes", 3, "cluster nodes")
	fs.IntVar(&cfg.PerTopic, "per-topic", 1000, "partitions per created topic")
	fs.DurationVar(&cfg.Idle, "idle", 20*time.Second, "idle window for the CPU figure")
	fs.IntVar(&cfg.Batches, "batches", 300, "batches of the send measurement")
	fs.IntVar(&cfg.MessagesPerBatch, "messages-per-batch", 1000, "messages per batch")
	fs.IntVar(&cfg.MessageSize, "message-size", 1000, "payload bytes per message")
	fs.BoolVar(&cfg.Kill, "kill", false, "then kill node 0 and time writes to a sample of partitions")
	fs.BoolVar(&cfg.Restart, "restart", false, "then restart every node and time writes to a sample")
	fs.IntVar(&cfg.Sample, "sample", 50, "partitions written after a kill or restart")
	fs.IntVar(&cfg.Rounds, "rounds", 3, "send rounds per step, alternating with the one-partition cluster")
	pf := bindProcFlags(fs, &cfg.Source, &cfg.Dir, 30*time.Minute)
	if err := fs.Parse(args); err != nil {
		return err
	}
	for _, p := range strings.Split(*parts, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n <= 0 {
			return fmt.Errorf("--partitions: %q is not a count", p)
		}
		cfg.Partitions = append(cfg.Partitions, n)
	}
	cfg.Env, cfg.Log = pf.envList(), os.Stderr
	ctx, cancel := pf.context()
	defer cancel()
	res, err := scale.Run(ctx, cfg)
	for _, s := range res.Steps {
		fmt.Fprintf(out, "%6d partitions: create %6.1f s, idle CPU %v %%, RSS %v MiB, send %.0f MB/s (one-partition cluster %.0f MB/s, ratio %.2f)\n",
			s.Partitions, s.CreateSeconds, rounded(s.IdleCPU), rounded(s.RSSMiB), s.SendMBps, s.RefMBps, s.SendMBps/s.RefMBps)
	}
	if res.KillSeconds > 0 {
		fmt.Fprintf(out, "node 0 killed: %d sampled partitions took writes again after %.1f s\n", cfg.Sample, res.KillSeconds)
	}
	if res.RestartSeconds > 0 {
		fmt.Fprintf(out, "whole cluster restarted: %d sampled partitions took writes %.1f s after the last node was up\n", cfg.Sample, res.RestartSeconds)
	}
	if err != nil {
		return err
	}
	return writeJSON(*pf.json, res)
}

// runPlacement is "bench placement": a cluster whose partitions live on 3
// of its nodes against a 3-node cluster holding every partition on every
// node (bench/scale.RunPlacement, issue 23).
//
//	go run ./cmd/bench placement --nodes 5 --partitions 30
func runPlacement(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("bench placement", flag.ContinueOnError)
	var cfg scale.PlacementConfig
	fs.IntVar(&cfg.Nodes, "nodes", 5, "nodes of the placed cluster (R = 3)")
	fs.IntVar(&cfg.RefNodes, "reference-nodes", 3, "nodes of the reference cluster (every partition on every node)")
	fs.IntVar(&cfg.Partitions, "partitions", 30, "partitions of the one topic")
	fs.IntVar(&cfg.Producers, "producers", 10, "producers sending Balanced over the partitions, split over the nodes")
	fs.IntVar(&cfg.Batches, "batches", 40, "batches per producer and round")
	fs.IntVar(&cfg.MessagesPerBatch, "messages-per-batch", 1000, "messages per batch")
	fs.IntVar(&cfg.MessageSize, "message-size", 1000, "payload bytes per message")
	fs.IntVar(&cfg.Rounds, "rounds", 3, "send rounds per cluster, alternating")
	pf := bindProcFlags(fs, &cfg.Source, &cfg.Dir, 20*time.Minute)
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg.Env, cfg.Log = pf.envList(), os.Stderr
	ctx, cancel := pf.context()
	defer cancel()
	res, err := scale.RunPlacement(ctx, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%d nodes, R = 3, %d partitions: leads per node %v at creation, %v after the rounds (%.0f s to settle), replicas per node %v\n",
		res.Nodes, cfg.Partitions, res.LeadsBefore, res.Leads, res.SettleSeconds, res.Replicas)
	fmt.Fprintf(out, "bytes stored per node / payload sent: %v (reference %d nodes: %v)\n", rounded2(res.Share), res.RefNodes, rounded2(res.RefShare))
	fmt.Fprintf(out, "send %.0f MB/s, reference %.0f MB/s, ratio %.2f (medians of %d rounds each, alternating)\n", res.SendMBps, res.RefMBps, res.SendMBps/res.RefMBps, len(res.Rounds))
	return writeJSON(*pf.json, res)
}

// procFlags are the flags of the subcommands that start node processes:
// where to build from and keep data, extra node settings, the JSON
// result, and the bound on the run.
type procFlags struct {
	env, json *string
	timeout   *time.Duration
}

func bindProcFlags(fs *flag.FlagSet, source, dir *string, timeout time.Duration) procFlags {
	fs.StringVar(source, "source", ".", "repository root to build ./cmd/node from")
	fs.StringVar(dir, "dir", "", "keep the nodes' data and logs (nodeN.log) here instead of a temporary directory")
	return procFlags{env: fs.String("env", "", "extra IGGY_* settings for every node, comma-separated KEY=VALUE"),
		json:    fs.String("json", "", "write the result as JSON to this file"),
		timeout: fs.Duration("timeout", timeout, "bound on the whole run")}
}

func (f procFlags) envList() []string { return splitEnv(*f.env) }

// splitEnv splits a --env value (comma-separated KEY=VALUE) into a list.
func splitEnv(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// context ends at the timeout or an interrupt.
func (f procFlags) context() (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	ctx, cancel := context.WithTimeout(ctx, *f.timeout)
	return ctx, func() { cancel(); stop() }
}

func rounded2(v []float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(int(x*100+0.5)) / 100
	}
	return out
}

func rounded(v []float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(int(x*10+0.5)) / 10
	}
	return out
}
