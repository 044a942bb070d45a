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
			within := 4 * time.Minute
			if e.Timeout > 0 {
				within = e.Timeout
			}
			ctx, cancel := context.WithTimeout(t.Context(), within)
			defer cancel()
			rep := RunExperiment(ctx, NewCluster(root, "iggyfaults", t.Logf), e)
			if err := rep.Write(filepath.Join(root, "deploy", "reports")); err != nil {
				t.Error(err)
			}
			switch {
			case rep.PendingSkip():
				t.Skipf("failed, on known node bugs (%s); nothing acknowledged lost; report in deploy/reports/%s.txt:\n%s",
					e.Pending, e.Name, rep.Text())
			case !rep.Passed:
				t.Fatalf("experiment failed:\n%s", rep.Text())
			case e.Pending != "":
				t.Logf("passed although pending node bugs are named (%s): empty Experiment.Pending if they are fixed", e.Pending)
			}
			caughtUp := "caught up " + rep.TimeToCatchUp.String() + " after the heal"
			if len(rep.Targets) == 0 {
				caughtUp = "no target to catch up"
			}
			t.Logf("%d sends acknowledged, %d lost, %d duplicates; no write for %s; %s",
				rep.AckedSends, rep.Lost, rep.Duplicates, rep.TimeWithoutLeader, caughtUp)
			if rb := rep.Rebalance; rb != nil {
				t.Logf("rebalance: %d replicas moved in %d partitions, on their placement %s after the heal; leadership spread %s after the heal",
					rb.ReplicaMoves, rb.PartitionsMoved, rb.Settled, rb.LeadersBalanced)
			}
		})
	}
}
