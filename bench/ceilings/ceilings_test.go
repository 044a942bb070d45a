package ceilings

import (
	"context"
	"io"
	"log/slog"
	"math"
	"strings"
	"testing"
	"time"

	"iggynode/actors"
	"iggynode/client"
	"iggynode/config"
)

// A tiny run against an in-process node (loopback port 0) measures every
// line, node, base-producer and fsync ones included (the storing sink's
// lines check that it holds every byte sent): figures positive where measured,
// no poll figure where none is measured, every ratio finite and positive,
// and the node keeps none of the run's streams.
func TestRunAgainstNode(t *testing.T) {
	cfg := config.Default()
	cfg.System.Path = t.TempDir()
	cfg.TCP.Address = "127.0.0.1:0"
	cfg.HTTP.Enabled, cfg.QUIC.Enabled, cfg.WebSocket.Enabled = false, false, false
	n, err := actors.Start(actors.Options{Config: cfg, RootUsername: "iggy", RootPassword: "iggy",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := Run(ctx, Config{Rounds: 2, Messages: 30, Size: 50, Batches: 3, Producers: 3, Partitions: 2,
		BaseProducers: 1, Fsync: true, Address: n.TCPAddr(), Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range res.Lines {
		names = append(names, l.Name)
		polls := !strings.Contains(l.Name, "storing") && !strings.Contains(l.Name, "fsync")
		if len(l.Rounds) != 2 || l.Median.SendMBps <= 0 || l.Median.SendP99Ms <= 0 || (l.Median.PollMBps > 0) != polls {
			t.Errorf("line %+v", l)
		}
		if sliced := l.Name == LeanNode || l.Name == LeanNodeBase; (l.Median.SlicedPollMBps > 0) != sliced {
			t.Errorf("line %s: sliced poll %v MB/s, want it measured only on %s", l.Name, l.Median.SlicedPollMBps, LeanNode)
		}
	}
	want := []string{LeanSink, LeanStoring, LeanStoringBase, LeanStoringSync, SDKSink, LeanNode, SDKNode, LeanNodeBase, SDKNodeBase, LeanNodeSync, SDKNodeSync}
	if strings.Join(names, "|") != strings.Join(want, "|") {
		t.Errorf("lines %q, want %q", names, want)
	}
	if len(res.Ratios) != len(ratioSpecs) {
		t.Errorf("%d ratios, want %d", len(res.Ratios), len(ratioSpecs))
	}
	for _, r := range res.Ratios {
		if len(r.Rounds) != 2 || !(r.Median > 0) || math.IsInf(r.Median, 0) {
			t.Errorf("ratio %+v", r)
		}
	}
	c, err := client.Connect(ctx, client.Options{Address: n.TCPAddr(), Username: "iggy", Password: "iggy"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if streams, err := c.GetStreams(ctx); err != nil || len(streams) != 0 {
		t.Errorf("streams left on the node: %v, %v", streams, err)
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{math.Inf(1), 1, 2}, 2},
		{nil, 0},
	} {
		if got := median(c.in); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}
