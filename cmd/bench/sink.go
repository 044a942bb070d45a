package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"iggynode/bench"
	"iggynode/bench/ceilings"
)

// runSink is "bench sink": the built-in sink (optionally storing) as a
// process of its own, so bench ceilings can measure it out of the
// client's process, as it measures the node. It prints
// "sink listening on ADDR" and serves until its stdin closes or it is
// interrupted.
//
//	go run ./cmd/bench sink --store-dir /dev/shm/s --fsync < /dev/tty
func runSink(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("bench sink", flag.ContinueOnError)
	addr := fs.String("address", "127.0.0.1:0", "listen address (port 0: a free one)")
	var o bench.SinkOptions
	fs.IntVar(&o.PollMessageSize, "poll-size", bench.DefaultSinkMessageSize, "payload bytes of each message of a canned poll reply")
	fs.StringVar(&o.StoreDir, "store-dir", "", "store every batch in a file per partition in this (existing) directory")
	fs.BoolVar(&o.StoreFsync, "fsync", false, "with --store-dir, sync the file after every batch")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	s, err := bench.StartSinkWith(*addr, o)
	if err != nil {
		return err
	}
	defer s.Close()
	if _, err := fmt.Fprintln(out, ceilings.SinkListening+s.Addr()); err != nil {
		return err
	}
	done := make(chan struct{}, 2)
	go func() {
		_, _ = io.Copy(io.Discard, bufio.NewReader(os.Stdin)) // until stdin closes
		done <- struct{}{}
	}()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	select {
	case <-done:
	case <-sig:
	}
	return nil
}
