package e2e

import (
	"context"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"iggynode/actors"
	"iggynode/client"
	"iggynode/config"
)

// testNode is a node on 127.0.0.1:0 with its data in dir.
type testNode struct {
	*actors.Node
	dir string
}

func logger() *slog.Logger {
	if os.Getenv("E2E_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func startNodeIn(t testing.TB, dir string) *testNode {
	t.Helper()
	return startNodeWith(t, dir, nil, nil)
}

// startNodeWith starts a node with a configuration hook and a clock (µs).
func startNodeWith(t testing.TB, dir string, tune func(*config.Config), clock func() uint64) *testNode {
	t.Helper()
	cfg := config.Default()
	cfg.System.Path = dir
	cfg.TCP.Address = "127.0.0.1:0"
	cfg.HTTP.Address = "127.0.0.1:0"
	cfg.QUIC.Address = "127.0.0.1:0"
	cfg.WebSocket.Address = "127.0.0.1:0"
	opts := actors.Options{RootUsername: "iggy", RootPassword: "iggy", Logger: logger(), Clock: clock}
	if tc := transportFor(t); tc.tls {
		cert, _ := certificate(t)
		opts.TLS = cert.ServerConfig()
		cfg.TCP.TLS.Enabled = tc.kind == client.TransportTCP
		cfg.WebSocket.TLS.Enabled = tc.kind == client.TransportWS
	}
	if tune != nil {
		tune(&cfg)
	}
	opts.Config = cfg
	n, err := actors.Start(opts)
	if err != nil {
		t.Fatalf("start node: %v", err)
	}
	return &testNode{Node: n, dir: dir}
}

func startNode(t testing.TB) *testNode {
	t.Helper()
	n := startNodeIn(t, t.TempDir())
	t.Cleanup(func() { _ = n.Close() })
	return n
}

// ctxT bounds a whole test: 60 s. 30 s ran out in a CI run several times
// slower than this machine (TestUsersLifecycle: 4 to 6 s here under race
// and a loaded CPU, over 30 s there). Speed is measured by the
// benchmarks; a test proves behaviour.
func ctxT(t testing.TB) context.Context {
	return ctxWithin(t, 60*time.Second)
}

// ctxWithin bounds a test that waits for elections, whose setup alone can
// take most of ctxT's budget under a parallel race run.
func ctxWithin(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// connect returns a client logged in as root.
func connect(t testing.TB, n *testNode) *client.Client {
	t.Helper()
	return connectAs(t, n, "iggy", "iggy")
}

func connectAs(t testing.TB, n *testNode, user, pass string) *client.Client {
	t.Helper()
	o := clientOptions(t, n)
	o.Username, o.Password, o.RequestTimeout = user, pass, 10*time.Second
	c, err := client.Connect(ctxT(t), o)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}
