package main

import (
	"os"
	"path/filepath"
	"testing"

	"iggynode/sim"
	"iggynode/telemetry/timeline"
)

// --trace writes one span file per replica that cmd/timeline reads.
func TestTraceToWritesOneFilePerReplica(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "traces")
	w, done, err := traceTo(dir, 9, 3)
	if err != nil {
		t.Fatal(err)
	}
	res := sim.Run(sim.Config{Seed: 9, FaultTicks: 200, LivenessTicks: 400, Trace: w})
	if err := done(); err != nil {
		t.Fatal(err)
	}
	l := timeline.NewLoader()
	for i := range 3 {
		f, err := os.Open(filepath.Join(dir, "sim-seed9-r"+string(rune('0'+i))+".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Read(f); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	m := l.Model()
	if len(m.Groups) != 1 || uint64(len(m.Groups[0].Ops)) != res.Committed || !m.Virtual {
		t.Fatalf("%d groups, committed %d", len(m.Groups), res.Committed)
	}
}
