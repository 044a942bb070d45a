package faults

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"iggynode/internal/faultcheck"
	"iggynode/wire"
)

func TestReportFiles(t *testing.T) {
	rep := &Report{Experiment: "kill-primary", Started: time.Unix(0, 0), Targets: []string{"node1"}, TimeWithoutLeader: Millis(1500 * time.Millisecond),
		TimeToCatchUp: -1, LeaderElected: -1, Verdict: faultcheck.Verdict{AckedSends: 7, Lost: 0, Duplicates: 1}, NodeLogs: "node0 | hello\n"}
	dir := t.TempDir()
	if err := rep.Write(dir); err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	b, err := os.ReadFile(filepath.Join(dir, "kill-primary.json"))
	if err != nil || json.Unmarshal(b, &back) != nil {
		t.Fatalf("json report: %v %s", err, b)
	}
	if back["time_to_catch_up_ms"] != nil || back["leader_elected_ms"] != nil {
		t.Fatalf("figures never reached are not null: %v %v", back["time_to_catch_up_ms"], back["leader_elected_ms"])
	}
	if back["time_without_leader_ms"] != 1500.0 || back["acknowledged_sends"] != 7.0 || back["duplicates"] != 1.0 || back["passed"] != false {
		t.Fatalf("json report %v", back)
	}
	txt, _ := os.ReadFile(filepath.Join(dir, "kill-primary.txt"))
	for _, want := range []string{"kill-primary: FAILED", "time without leader   1.5s", "time to catch up      never", "duplicates            1"} {
		if !strings.Contains(string(txt), want) {
			t.Fatalf("text report lacks %q:\n%s", want, txt)
		}
	}
	if logs, _ := os.ReadFile(filepath.Join(dir, "kill-primary.nodes.log")); string(logs) != rep.NodeLogs {
		t.Fatalf("node logs %q", logs)
	}
}

func TestLastAckedOffset(t *testing.T) {
	var stored [][]byte
	for _, a := range []uint64{1, 2, 3, 4} { // 2 was not acknowledged
		_, p := faultcheck.Batch(a)
		stored = append(stored, p...)
	}
	h := faultcheck.History{Order: []uint64{1, 3, 4}}
	if got, want := lastAckedOffset(h, stored, 2), uint64(3*faultcheck.MessagesPerSend-1); got != want {
		t.Fatalf("last offset of send 3: %d, want %d", got, want)
	}
	if got := lastAckedOffset(h, stored, 0); got != 0 {
		t.Fatalf("nothing acknowledged: %d", got)
	}
}

func TestEveryExperimentIsFound(t *testing.T) {
	names := map[string]bool{}
	for _, e := range Experiments {
		if got, ok := Find(e.Name); !ok || got.Name != e.Name || names[e.Name] {
			t.Fatalf("experiment %q", e.Name)
		}
		names[e.Name] = true
	}
	for _, want := range []string{"kill-primary", "pause-primary", "partition-primary", "restart-all", "wipe-backup",
		"grow-3-to-5", "shrink-5-to-3", "replace-a-dead-host", "grow-3-to-5-rebalance"} {
		if !names[want] {
			t.Fatalf("no %s experiment", want)
		}
	}
	if _, ok := Find("nope"); ok {
		t.Fatal("found an unknown experiment")
	}
}

func TestRosterLine(t *testing.T) {
	st := wire.ClusterStatusReply{Epoch: 3, Voters: 0b11010, Target: 0b11010, EpochOp: 42, View: 3<<24 | 2,
		Nodes: []wire.ClusterStatusNode{{Spec: wire.NodeSpec{ID: 1}}, {Spec: wire.NodeSpec{ID: 3}, Primary: true}, {Spec: wire.NodeSpec{ID: 4}}}}
	if got, want := rosterLine(st), "epoch 3 view 2 epoch_op 42 voters {1,3,4} learners {} target {1,3,4} primary 3"; got != want {
		t.Fatalf("roster line %q, want %q", got, want)
	}
	if !settled(st) || settled(wire.ClusterStatusReply{Voters: 1, Target: 3, Learners: 2}) {
		t.Fatal("settled")
	}
}
