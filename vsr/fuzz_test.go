package vsr

import (
	"testing"

	"iggynode/wire"
)

// FuzzStep feeds arbitrary peer frames to a backup and a primary: peer
// input never panics (replica-plane.md 13.5) and never breaks an invariant.
func FuzzStep(f *testing.F) {
	var ok wire.Header
	(&wire.PrepareOkHeader{Op: 1, Operation: wire.OpCreateStream, Group: 5}).Encode(&ok)
	f.Add(ok[:])
	var c wire.Header
	(&wire.CommitHeader{Commit: 3, Group: 5}).Encode(&c)
	f.Add(c[:])
	var rp wire.Header
	(&wire.RequestPreparesHeader{Replica: 1, FromOp: 1, ToOp: 1, Group: 5}).Encode(&rp)
	f.Add(rp[:])
	var done wire.Header
	(&wire.RepairRangeReplyHeader{Command: wire.CmdRepairDone, Op: 1, Group: 5}).Encode(&done)
	f.Add(done[:])
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, rep := range []uint8{0, 1} {
			r := New(Config{Group: 5, Replica: rep, ReplicaCount: 3})
			if rep == 0 {
				_ = r.Submit(Request{Frame: make([]byte, 300), Operation: wire.OpCreateStream}, 1)
				r.Ready()
			}
			r.Step(append([]byte(nil), b...)) // Step owns its frame
			r.Tick()
			if r.CommitMin() > r.CommitMax() {
				t.Fatalf("commit_min %d > commit_max %d", r.CommitMin(), r.CommitMax())
			}
		}
	})
}
