//go:build docker

package faults

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestExperiments runs every fault experiment against the compose cluster
// (build tag docker; .ci/run runs it where a Docker engine answers). Each
// is bounded by its own timeout; the reports land in deploy/reports.
func TestExperiments(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(filepath.Join(root, "deploy", "build.sh")).CombinedOutput(); err != nil {
		t.Fatalf("building the image: %v\n%s", err, out)
	}
	for _, e := range Experiments {
		t.Run(e.Name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
			defer cancel()
			rep := RunExperiment(ctx, NewCluster(root, "iggyfaults", t.Logf), e)
			if err := rep.Write(filepath.Join(root, "deploy", "reports")); err != nil {
				t.Error(err)
			}
			if !rep.Passed {
				t.Fatalf("experiment failed:\n%s", rep.Text())
			}
			t.Logf("%d sends acknowledged, %d lost, %d duplicates; no write for %s; caught up %s after the heal",
				rep.AckedSends, rep.Lost, rep.Duplicates, rep.TimeWithoutLeader, rep.TimeToCatchUp)
		})
	}
}
