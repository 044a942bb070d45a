// Command hostile measures a node's resident memory under N
// unauthenticated connections that each send only a header claiming a
// maximum-size frame (package bench/hostile; docs/benchmarks.md).
//
//	go run ./cmd/hostile -conns 300                  # this checkout
//	go run ./cmd/hostile -conns 300 -src /tmp/main   # another one
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"iggynode/bench/hostile"
	"iggynode/internal/version"
)

func main() {
	var env multi
	src := flag.String("src", ".", "module directory whose ./cmd/node is built and run")
	transport := flag.String("transport", "tcp", "tcp, ws or quic")
	conns := flag.Int("conns", 300, "connections, each sending one header")
	size := flag.Uint("size", 64<<20, "frame size the headers claim, bytes")
	settle := flag.Duration("settle", 5*time.Second, "how long the connections stay open while RSS is sampled")
	rounds := flag.Int("rounds", 1, "attacks in a row, each closing its connections before the next (memory reuse)")
	verbose := flag.Bool("v", false, "show the build's and the node's output")
	flag.Var(&env, "env", "KEY=VALUE for the node (repeatable), e.g. -env IGGY_LIMITS_LOGIN_TIMEOUT=0")
	showVersion := version.Flag(flag.CommandLine)
	flag.Parse()
	if version.Handled(showVersion, "hostile", os.Stdout) {
		return
	}
	var log io.Writer = io.Discard
	if *verbose {
		log = os.Stderr
	}
	res, err := hostile.Run(context.Background(), hostile.Config{Source: *src, Transport: *transport, Conns: *conns,
		FrameSize: uint32(*size), Settle: *settle, Rounds: *rounds, Env: env, Log: log})
	if err != nil {
		fmt.Fprintln(os.Stderr, "hostile:", err)
		os.Exit(1)
	}
	fmt.Printf("%s, %d connections x %d rounds, headers claiming %d bytes: %s\n", *transport, *conns, *rounds, *size, res)
}

type multi []string

func (m *multi) String() string     { return strings.Join(*m, " ") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }
