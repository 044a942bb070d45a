// Command faults runs the fault experiments of deploy/faults against the
// docker compose cluster (deploy/docker-compose.yml, image built by
// deploy/build.sh) and writes a text and a JSON report per experiment.
//
//	go run ./cmd/faults                       # every experiment
//	go run ./cmd/faults kill-primary wipe-backup
//	go run ./cmd/faults --list
//
// The exit status is 1 when any experiment fails.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"iggynode/deploy/faults"
	"iggynode/internal/version"
)

func main() {
	out := flag.String("out", "deploy/reports", "folder for the reports (<experiment>.txt and .json)")
	project := flag.String("project", "iggyfaults", "docker compose project name")
	root := flag.String("root", ".", "repository root (where deploy/docker-compose.yml lives)")
	list := flag.Bool("list", false, "list the experiments and exit")
	timeout := flag.Duration("timeout", 5*time.Minute, "bound on each experiment")
	showVersion := version.Flag(flag.CommandLine)
	flag.Parse()
	if version.Handled(showVersion, "faults", os.Stdout) {
		return
	}
	if *list {
		for _, e := range faults.Experiments {
			fmt.Printf("%-18s %s\n", e.Name, e.Description)
		}
		return
	}
	var chosen []faults.Experiment
	if flag.NArg() == 0 {
		chosen = faults.Experiments
	}
	for _, name := range flag.Args() {
		e, ok := faults.Find(name)
		if !ok {
			fmt.Fprintf(os.Stderr, "faults: no experiment %q (see --list)\n", name)
			os.Exit(2)
		}
		chosen = append(chosen, e)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	absRoot, err := filepath.Abs(*root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "faults:", err)
		os.Exit(2)
	}
	logf := func(format string, args ...any) { fmt.Printf(format+"\n", args...) }
	failed := 0
	for _, e := range chosen {
		ectx, cancel := context.WithTimeout(ctx, *timeout)
		rep := faults.RunExperiment(ectx, faults.NewCluster(absRoot, *project, logf), e)
		cancel()
		fmt.Print(rep.Text())
		if err := rep.Write(*out); err != nil {
			fmt.Fprintln(os.Stderr, "faults: report:", err)
		}
		if !rep.Passed {
			failed++
		}
	}
	fmt.Printf("%d of %d experiments passed; reports in %s\n", len(chosen)-failed, len(chosen), *out)
	if failed > 0 {
		os.Exit(1)
	}
}
