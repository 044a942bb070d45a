// Command sim runs the deterministic cluster simulator (package sim) for
// fault-tolerance experiments: one seed with its timeline, or many seeds
// with a summary. Every run is reproducible from its seed.
//
//	go run ./cmd/sim --seed 7 --timeline
//	go run ./cmd/sim --seeds 2000 --loss 0.2 --crash 0.005
//	go run ./cmd/sim --seed 8 --trace traces/ && go run ./cmd/timeline --html seed8.html traces/
//
// --trace DIR writes each run's span files, one per replica
// (DIR/sim-seed<S>-r<i>.jsonl), in the format the node writes
// (telemetry/spanfile), for cmd/timeline.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"iggynode/internal/version"
	"iggynode/sim"
	"iggynode/telemetry/spanfile"
)

func main() {
	var (
		seed               = flag.Uint64("seed", 1, "first (or only) seed")
		seeds              = flag.Int("seeds", 1, "number of seeds to run, from --seed on")
		replicas           = flag.Int("replicas", 3, "replicas")
		clients            = flag.Int("clients", 4, "clients, each with one request in flight")
		ticks              = flag.Int("ticks", 2000, "ticks (10 ms each) of the fault phase")
		liveness           = flag.Int("liveness-ticks", 3000, "ticks after healing for every request and replica to settle")
		custom             = flag.Bool("custom", false, "use the fault flags below instead of the per-seed mix of `go test`")
		loss               = flag.Float64("loss", 0.1, "packet loss probability (0-0.3)")
		replay             = flag.Float64("replay", 0.02, "packet duplication probability")
		partition          = flag.Float64("partition", 0.002, "per-tick probability the network splits")
		heal               = flag.Float64("heal", 0.02, "per-tick probability a split heals")
		asym               = flag.Bool("asymmetric", false, "partitions cut one direction only")
		clog               = flag.Float64("clog", 0.0005, "per-tick, per-link probability of clogging")
		crash              = flag.Float64("crash", 0.002, "per-tick probability a replica (primary included) goes down")
		restart            = flag.Float64("restart", 0.01, "per-tick probability a down replica comes back")
		timeline           = flag.Bool("timeline", false, "print each run's timeline")
		traceDir           = flag.String("trace", "", "write each run's span files (one per replica) to this directory, for cmd/timeline")
		reconfig           = flag.Bool("reconfig", false, "run membership changes (issue 22): voters {0,1,2} grow, shrink or are replaced under every fault, on the metadata group; --replicas is ignored")
		reconfigPartitions = flag.Bool("reconfig-partitions", false, "with --reconfig: run the plans on a partition group with quiescence and deadlines instead of the metadata group")
		handOver           = flag.Float64("handover", 0, "per-tick probability (fault phase) a group's primary hands over to a random other voter: planned view changes (issue 23)")
		groups             = flag.Int("groups", 1, "partition groups per node; above 1, with quiescence and the node-level heartbeat (sim.ManyGroupsFaultsFor); with --placement, 6 unless given")
		noAwaitFate        = flag.Bool("no-await-fate", false, "partition groups answer a cancelled prepare 'outcome unknown' at once instead of waiting for its op to commit (vsr.Config.AwaitFate): counts the duplicates the wait saves")
		placement          = flag.Int("placement", 0, "run each partition group on this many of the --replicas nodes, moving replicas between nodes under every fault (issue 23, sim.PlacementFaultsFor); needs --replicas above it")
	)
	showVersion := version.Flag(flag.CommandLine)
	flag.Parse()
	if version.Handled(showVersion, "sim", os.Stdout) {
		return
	}
	groupsGiven := false
	flag.Visit(func(f *flag.Flag) { groupsGiven = groupsGiven || f.Name == "groups" })
	switch {
	case *placement > 0 && *replicas <= *placement:
		fmt.Fprintf(os.Stderr, "sim: --placement %d needs --replicas above it (a node to move to)\n", *placement)
		os.Exit(2)
	case *placement > 0 && *reconfig:
		fmt.Fprintln(os.Stderr, "sim: --placement and --reconfig are different runs; pick one")
		os.Exit(2)
	}
	start := time.Now()
	failed, journalFailures := 0, 0
	var ops, repairs, highestView uint64
	viewChanged, transfers, epochs, primaryCrashes, transferCrashes, splits, handOvers, moves, duplicates := 0, 0, 0, 0, 0, 0, 0, 0, 0
	for s := *seed; s < *seed+uint64(*seeds); s++ {
		cfg := sim.FaultsFor(s)
		switch {
		case *placement > 0:
			cfg = sim.PlacementFaultsFor(s)
			cfg.Placement = *placement
			if groupsGiven {
				cfg.Groups = *groups
			}
		case *groups > 1:
			cfg = sim.ManyGroupsFaultsFor(s)
			cfg.Groups = *groups
		}
		if *custom {
			cfg.Net = sim.NetConfig{Loss: *loss, Replay: *replay, PartitionProbability: *partition,
				UnpartitionProbability: *heal, Asymmetric: *asym, ClogProbability: *clog}
			cfg.CrashProbability, cfg.RestartProbability = *crash, *restart
		}
		cfg.Replicas, cfg.Clients, cfg.FaultTicks, cfg.LivenessTicks = *replicas, *clients, *ticks, *liveness
		cfg.Reconfig = *reconfig
		cfg.ReconfigPartitions = *reconfigPartitions
		cfg.HandOverProbability = *handOver
		cfg.NoAwaitFate = *noAwaitFate
		closeTrace := func() error { return nil }
		if *traceDir != "" {
			var err error
			if cfg.Trace, closeTrace, err = traceTo(*traceDir, s, cfg.Replicas); err != nil {
				fmt.Fprintln(os.Stderr, "sim:", err)
				os.Exit(1)
			}
		}
		res := sim.Run(cfg)
		if err := closeTrace(); err != nil {
			fmt.Fprintln(os.Stderr, "sim:", err)
			os.Exit(1)
		}
		ops += res.Committed
		repairs += res.Repairs
		if res.ViewChanges > 0 {
			viewChanged++
		}
		transfers += res.Transfers
		epochs += res.Epochs
		primaryCrashes += res.PrimaryCrashesMidChange
		transferCrashes += res.TransferCrashes
		splits += res.OldNewSplits
		handOvers += res.HandOvers
		moves += res.Moves
		duplicates += res.Duplicates
		highestView = max(highestView, res.ViewChanges)
		journalFailures += res.JournalFailures
		if *timeline || *seeds == 1 {
			fmt.Printf("seed %d: %d ticks, %d requests submitted, %d answered, %d ops committed, highest view %d, %d repair sessions, %d state transfers, %d crashes, %d journal failures, %d naps\n",
				s, res.Ticks, res.Submitted, res.Completed, res.Committed, res.ViewChanges, res.Repairs, res.Transfers, res.Crashes, res.JournalFailures, res.Naps)
			fmt.Printf("  network: %+v\n", res.Net)
			if *timeline {
				for _, e := range res.Timeline {
					fmt.Println(" ", e)
				}
			}
		}
		if res.Failed() {
			failed++
			fmt.Printf("seed %d FAILED: %s\n  replay: go run ./cmd/sim --seed %d --clients %d --timeline\n", s, res.Violations[0], s, cfg.Clients)
		}
	}
	took := time.Since(start)
	fmt.Printf("%d seeds, %d failed, %d ops committed, %d repair sessions, %d journal failures injected, %.0f seeds/min (%v)\n",
		*seeds, failed, ops, repairs, journalFailures, float64(*seeds)/took.Minutes(), took.Round(time.Millisecond))
	fmt.Printf("%d seeds saw a view change (highest view %d), %d state transfers installed\n", viewChanged, highestView, transfers)
	if *handOver > 0 {
		fmt.Printf("%d planned hand-overs started\n", handOvers)
	}
	fmt.Printf("%d requests applied twice (replayed after an unknown outcome)\n", duplicates)
	if *reconfig || *placement > 0 {
		fmt.Printf("%d epochs entered over all seeds (%d plan steps or moves reached); during a change: %d primary crashes, %d crashes mid-transfer, %d partitions between old and new members\n",
			epochs, moves, primaryCrashes, transferCrashes, splits)
	}
	if failed > 0 {
		os.Exit(1)
	}
}

// traceTo opens dir/sim-seed<seed>-r<i>.jsonl for each replica; done
// flushes and closes them all, and reports the first error.
func traceTo(dir string, seed uint64, replicas int) (w sim.TraceWriters, done func() error, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, err
	}
	files := make([]*os.File, replicas)
	writers := make([]*spanfile.Writer, replicas)
	done = func() error {
		var first error
		for i, f := range files {
			if f == nil {
				continue
			}
			if err := writers[i].Flush(); err != nil && first == nil {
				first = fmt.Errorf("%s: %w", f.Name(), err)
			}
			if err := f.Close(); err != nil && first == nil {
				first = err
			}
		}
		return first
	}
	for i := range files {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("sim-seed%d-r%d.jsonl", seed, i)))
		if err != nil {
			done()
			return nil, nil, err
		}
		files[i], writers[i] = f, spanfile.NewWriter(f)
	}
	return func(i int) *spanfile.Writer { return writers[i] }, done, nil
}
