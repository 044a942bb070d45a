package loginflood

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"iggynode/actors"
	"iggynode/config"
)

// The tool against a real node on loopback, briefly: the flood is
// answered (refused, then throttled; with Token, accepted), every probe
// succeeds, and the report prints. No latency is asserted: the figures belong in benchmarks.md.
func TestRunAgainstANode(t *testing.T) {
	cfg := config.Default()
	cfg.System.Path = t.TempDir()
	cfg.TCP.Address, cfg.QUIC.Enabled, cfg.WebSocket.Enabled = "127.0.0.1:0", false, false
	cfg.HTTP.Address = "127.0.0.1:0"
	cfg.Login.Throttle.MaxDelay = config.Duration(500 * time.Millisecond)
	n, err := actors.Start(actors.Options{Config: cfg, RootUsername: "iggy", RootPassword: "iggy",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	for _, token := range []bool{false, true} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		rep, err := Run(ctx, Config{Address: n.TCPAddr(), Username: "iggy", Password: "iggy", Connections: 4,
			Warmup: 300 * time.Millisecond, Duration: 1500 * time.Millisecond, Send: true, Token: token})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		if err := rep.WriteText(&out); err != nil {
			t.Fatal(err)
		}
		t.Log("\n" + out.String())
		switch {
		case !token && (rep.Flood.Refused == 0 || rep.Flood.Throttled == 0 || rep.Flood.Accepted != 0):
			t.Errorf("flood %+v: want refused and throttled answers", rep.Flood)
		case token && (rep.Flood.Accepted == 0 || rep.Flood.Refused != 0 || rep.Flood.Dials < rep.Flood.Accepted):
			t.Errorf("token flood %+v: want accepted logins, each on its own connection", rep.Flood)
		}
		for name, p := range map[string]Probe{"login": rep.Login, "read": rep.Read, "send": *rep.Send} {
			if p.Latency.Count == 0 || p.Errors != 0 {
				t.Errorf("token %v: %s probe: %d ok, %d errors (%s)", token, name, p.Latency.Count, p.Errors, p.FirstError)
			}
		}
	}
}
