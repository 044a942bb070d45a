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
	// View change: SVC, a DVC and a StartView whose suffix is that op, and
	// a RequestStartView (6.4-6.12).
	var svc wire.Header
	(&wire.StartViewChangeHeader{View: 1, Replica: 1, Group: 5}).Encode(&svc)
	f.Add(svc[:])
	suffix := append([]byte(nil), seed.frameAt(0)...)
	if p := seed.log[1]; p != nil {
		suffix = append([]byte(nil), p.frame[:wire.HeaderSize]...)
	}
	f.Add(wire.AppendDoViewChange(nil, wire.DoViewChangeHeader{View: 1, Replica: 2, Op: 1, Group: 5, PresentBitset: wire.U128{Lo: 1}}, suffix))
	f.Add(wire.AppendStartView(nil, wire.StartViewHeader{View: 1, Replica: 1, Op: 1, Group: 5}, suffix))
	var rsv wire.Header
	(&wire.RequestStartViewHeader{View: 0, Replica: 1, Group: 5, Incarnation: wire.U128{Lo: 3}}).Encode(&rsv)
	f.Add(rsv[:])
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

// FuzzTransferSession feeds arbitrary StateTransferTarget and StateChunk
// frames to a metadata and a partition session and verifies whatever
// completes: peer input never panics (7.6, 7.8, 13.3 rule 3).
func FuzzTransferSession(f *testing.F) {
	meta := NewTransferSession(wire.U128{}, 2, 5, 0, false, 1<<20, wire.U128{Lo: 9})
	f.Add(offerFrame(meta, 3, []byte("snap"), []byte("tbl")), chunkFrame(meta, 0, 0, []byte("snap")))
	f.Fuzz(func(t *testing.T, target, chunk []byte) {
		for i, partition := range []bool{false, true, true} {
			s := NewTransferSession(wire.U128{}, 2, 5, 0, partition, 1<<20, wire.U128{Lo: 9})
			if i == 2 { // staged, with a segment an earlier session left
				s.Stage = &memoryStage{segments: map[int][]byte{}, sealed: map[int]bool{}}
				s.Reusable = []StagedSegment{{Frontier: 0, Len: 256, Checksum: 0, End: 1, Batches: []SegmentBatch{{Count: 1, Length: 256}}}}
			}
			if len(target) >= wire.HeaderSize {
				_, _ = s.OnTarget(append([]byte(nil), target...))
			}
			if len(chunk) >= wire.HeaderSize {
				_, _ = s.OnChunk(append([]byte(nil), chunk...))
			}
			_, _ = s.Tick(1)
			if partition {
				_, _ = s.VerifyPartition()
				_, _ = s.GroupRoster()
				_, _ = s.Completed(), s.Batches()
			} else {
				_, _, _, _, _ = s.Verify()
			}
		}
	})
}
