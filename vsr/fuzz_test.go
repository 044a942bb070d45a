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
	// A RepairPrepare of op 1 as the primary below would serve it.
	seed := New(Config{Group: 5, Replica: 0, ReplicaCount: 3})
	_ = seed.Submit(Request{Frame: make([]byte, 300), Operation: wire.OpCreateStream}, 1)
	repair := append([]byte(nil), seed.Ready().Journal[0]...)
	wire.HeaderOf(repair).SetCommand(wire.CmdRepairPrepare)
	f.Add(repair)
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, rep := range []uint8{0, 1, 2} {
			r := New(Config{Group: 5, Replica: rep, ReplicaCount: 3})
			switch rep {
			case 0: // a primary with an op in its pipeline
				_ = r.Submit(Request{Frame: make([]byte, 300), Operation: wire.OpCreateStream}, 1)
				r.Ready()
			case 2: // a backup with a repair session open up to op 3
				var c wire.Header
				(&wire.CommitHeader{Commit: 3, Group: 5}).Encode(&c)
				r.Step(c[:])
				r.Ready()
			}
			r.Step(append([]byte(nil), b...)) // Step owns its frame
			for _, f := range r.Ready().Journal {
				r.Journaled(wire.HeaderOf(f).Prepare().Op, nil)
			}
			r.Tick()
			if r.CommitMin() > r.CommitMax() || r.CommitMin() > r.Op() {
				t.Fatalf("commit_min %d, commit_max %d, op %d", r.CommitMin(), r.CommitMax(), r.Op())
			}
		}
	})
}
