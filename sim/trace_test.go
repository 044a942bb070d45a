package sim

import (
	"bytes"
	"io"
	"testing"

	"iggynode/telemetry/spanfile"
	"iggynode/telemetry/timeline"
)

// traced runs cfg with a span file per replica and loads them.
func traced(t *testing.T, cfg Config) (Result, *timeline.Model, []*bytes.Buffer) {
	t.Helper()
	n := cfg.Replicas
	if n == 0 {
		n = 3
	}
	bufs := make([]*bytes.Buffer, n)
	ws := make([]*spanfile.Writer, n)
	for i := range bufs {
		bufs[i] = &bytes.Buffer{}
		ws[i] = spanfile.NewWriter(bufs[i])
	}
	cfg.Trace = func(i int) *spanfile.Writer { return ws[i] }
	res := Run(cfg)
	var rs []io.Reader
	for _, b := range bufs {
		rs = append(rs, bytes.NewReader(b.Bytes()))
	}
	m, err := timeline.Load(rs...)
	if err != nil {
		t.Fatal(err)
	}
	return res, m, bufs
}

// Tracing only watches: the same seed gives the same run with and
// without it, on both planes and with every fault on.
func TestTracingKeepsTheRun(t *testing.T) {
	for _, seed := range []uint64{42, 43, 8} {
		plain := Run(FaultsFor(seed))
		res, m, bufs := traced(t, FaultsFor(seed))
		if res.Digest != plain.Digest || len(res.Timeline) != len(plain.Timeline) || res.Net != plain.Net {
			t.Fatalf("seed %d: digest %x traced, %x plain", seed, res.Digest, plain.Digest)
		}
		if len(m.Groups) != 1 || len(m.Groups[0].Ops) == 0 {
			t.Fatalf("seed %d: no ops traced", seed)
		}
		// The files are the same twice over too.
		_, _, again := traced(t, FaultsFor(seed))
		for i := range bufs {
			if !bytes.Equal(bufs[i].Bytes(), again[i].Bytes()) {
				t.Fatalf("seed %d: replica %d's span file differs between two runs", seed, i)
			}
		}
	}
}

// Without faults every op shows every step: on its primary prepared,
// journaled, forwarded, a PrepareOk, committed, applied, replied; on
// every replica journaled, committed, applied.
func TestTraceStepsWithoutFaults(t *testing.T) {
	for _, partition := range []bool{false, true} {
		res, m, _ := traced(t, Config{Seed: 11, PartitionPlane: partition, FaultTicks: 300, LivenessTicks: 600})
		if res.Failed() || res.Completed == 0 {
			t.Fatalf("run: %v, %d completed", res.Violations, res.Completed)
		}
		g := m.Groups[0]
		if len(g.Replicas) != 3 || uint64(len(g.Ops)) != res.Committed || !m.Virtual {
			t.Fatalf("%d replicas, %d ops traced of %d committed", len(g.Replicas), len(g.Ops), res.Committed)
		}
		for _, o := range g.Ops {
			if o.Primary != 0 || o.View != 0 {
				t.Fatalf("op %d: primary %d view %d", o.Op, o.Primary, o.View)
			}
			for _, s := range []string{spanfile.EventPrepared, spanfile.EventJournaled, spanfile.EventForwarded,
				spanfile.EventPrepareOK, spanfile.EventCommitted, spanfile.EventApplied, spanfile.EventReplied} {
				if _, ok := o.At(o.Primary, s); !ok {
					t.Fatalf("op %d: primary lacks %s: %v", o.Op, s, o.Steps)
				}
			}
			for _, r := range g.Replicas {
				for _, s := range []string{spanfile.EventJournaled, spanfile.EventCommitted, spanfile.EventApplied} {
					if _, ok := o.At(r, s); !ok {
						t.Fatalf("op %d: r%d lacks %s", o.Op, r, s)
					}
				}
			}
			if d, ok := o.CommitLatency(); !ok || d <= 0 {
				t.Fatalf("op %d: commit latency %d", o.Op, d)
			}
		}
	}
}

// With faults: every op some replica applied was prepared by a primary
// in a known view, every replica that committed an op applied it, and
// a run whose view moved has view change intervals.
func TestTraceWithFaults(t *testing.T) {
	for _, seed := range []uint64{2, 3, 8, 9, 11} { // 2, 8, 9, 11 change view; 8 transfers state
		res, m, _ := traced(t, FaultsFor(seed))
		if res.Failed() {
			t.Fatalf("seed %d: %v", seed, res.Violations)
		}
		g := m.Groups[0]
		for _, o := range g.Ops {
			applied := false
			for r := range o.Steps {
				_, c := o.At(r, spanfile.EventCommitted)
				_, a := o.At(r, spanfile.EventApplied)
				if c != a {
					t.Fatalf("seed %d op %d r%d: committed %v applied %v", seed, o.Op, r, c, a)
				}
				applied = applied || a
			}
			if applied && (o.Primary < 0 || o.View < 0) {
				t.Fatalf("seed %d op %d: applied, but primary %d view %d", seed, o.Op, o.Primary, o.View)
			}
		}
		kinds := map[string]int{}
		for _, iv := range g.Intervals {
			kinds[iv.Kind]++
		}
		if res.ViewChanges > 0 && kinds[timeline.KindViewChange] == 0 {
			t.Fatalf("seed %d: view %d reached, no view change interval", seed, res.ViewChanges)
		}
		if res.Transfers > 0 && kinds[timeline.KindStateTransfer] == 0 {
			t.Fatalf("seed %d: %d transfers, no transfer interval", seed, res.Transfers)
		}
		t.Logf("seed %d: %d ops, intervals %v, %+v", seed, len(g.Ops), kinds, g.Summarize())
	}
}
