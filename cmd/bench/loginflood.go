package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"

	"iggynode/bench"
	"iggynode/bench/loginflood"
)

// runLoginFlood is "bench loginflood": a wrong-password flood from one
// address while probes from another measure login, read and (with --send)
// send latency (package bench/loginflood; docs/benchmarks.md, issue 17).
//
//	go run ./cmd/bench loginflood --address 127.0.0.1:8090 --connections 64 --duration 20s
func runLoginFlood(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("bench loginflood", flag.ContinueOnError)
	var cfg loginflood.Config
	fs.StringVar(&cfg.Address, "address", "127.0.0.1:8090", "node to flood (host:port, TCP)")
	fs.StringVar(&cfg.ProbeAddress, "probe-address", "", "node the probes use (default: --address)")
	fs.StringVar(&cfg.FloodFrom, "flood-from", "127.0.0.2", "local IP the flood dials from")
	fs.StringVar(&cfg.ProbeFrom, "probe-from", "127.0.0.1", "local IP the probes dial from")
	fs.IntVar(&cfg.Connections, "connections", 64, "flooding connections")
	fs.StringVar(&cfg.Username, "username", bench.DefaultUsername, "username (the flood guesses its password)")
	fs.StringVar(&cfg.Password, "password", bench.DefaultPassword, "the right password, for the probes")
	fs.DurationVar(&cfg.Warmup, "warmup", 0, "flood this long before the probes measure")
	fs.DurationVar(&cfg.Duration, "duration", 0, "how long the probes measure (default 20s)")
	fs.DurationVar(&cfg.ProbeInterval, "probe-interval", 0, "pause between two probes of a kind (default 20ms)")
	fs.BoolVar(&cfg.Send, "send", false, "add a producer probe (one-message batches to stream loginflood)")
	fs.DurationVar(&cfg.RequestTimeout, "request-timeout", 0, "per-request deadline (default 10s)")
	fs.BoolVar(&cfg.Token, "token", false, "flood with valid logins of a personal access token, one per fresh connection (each commits a Register and a Logout)")
	jsonPath := fs.String("json", "", "write the report as JSON to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	report, err := loginflood.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if err := report.WriteText(out); err != nil {
		return err
	}
	return writeJSON(*jsonPath, report)
}
