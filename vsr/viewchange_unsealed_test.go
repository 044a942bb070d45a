package vsr

import (
	"testing"

	"iggynode/wire"
)

// A primary whose head came by state transfer knows neither its identity
// nor its timestamp (Installed: they do not travel), so it prepares the
// next op on a zero parent (the unsealed link, 2.5 rule 3) and with a
// timestamp from its own clock alone, which may be behind the op below
// (simulator seed 468 of --placement 3 --replicas 5 --groups 6
// --handover 0.01: an R that maybePromote proposed on a fresh core,
// now_us 0, timestamp 1 above op 1 at 5.92 s). A backup that committed
// the op below itself holds both; as primary-elect of the next view it
// panicked "own suffix decodes: timestamp not below op 2's" (6.5.3 rule
// 5). Its DoViewChange must announce one consistent log: the op it
// acknowledged, and nothing of the committed op below the link.

// sendsOf drains r (every append journaled) and returns the frames it
// sends, whole.
func sendsOf(r *Replica) (frames [][]byte) {
	for r.HasReady() {
		rd := r.Ready()
		if rd.State != nil {
			r.StatePersisted()
		}
		for _, f := range rd.Journal {
			r.Journaled(wire.HeaderOf(f).Prepare().Op, nil)
		}
		for _, e := range rd.Send {
			frames = append(frames, append(append([]byte(nil), e.Head...), e.Body...))
		}
	}
	return frames
}

func sentFrame(frames [][]byte, cmd wire.Command) []byte {
	for _, f := range frames {
		if wire.HeaderOf(f).Command() == cmd {
			return f
		}
	}
	return nil
}

func svcFrom(r *Replica, view uint32, from uint8) []byte {
	s := wire.StartViewChangeHeader{Cluster: r.cfg.Cluster, View: view, Replica: from, Group: r.cfg.Group}
	head := make([]byte, wire.HeaderSize)
	s.Encode(wire.HeaderOf(head))
	return head
}

func TestOwnSuffixLeavesOutTheCommittedOpBelowAnUnsealedLink(t *testing.T) {
	c := newCluster(3)
	submit(t, c.reps[0], "one", 5_920_000, "one")
	c.settle()
	c.ticks(60) // the commit heartbeat
	r2 := c.reps[2]
	if r2.CommitMin() != 1 || r2.frameAt(1) == nil {
		t.Fatalf("setup: replica 2 at commit %d, holds op 1: %v", r2.CommitMin(), r2.frameAt(1) != nil)
	}

	// Replica 1 lost its memory and installed the state at op 1; with
	// replica 0, which did the same, it starts view 1. Neither DVC names
	// op 1, so nothing lifts its timestamp floor.
	r1 := New(Config{Group: 5, Replica: 1, ReplicaCount: 3, Seed: 2})
	r1.Installed(1, 1)
	r1.beginViewChange(1)
	r1.Step(svcFrom(r1, 1, 0))
	blank := wire.BuildSuffix(wire.SuffixSource{Commit: 1, Head: 1})
	r1.Step(wire.AppendDoViewChange(nil, wire.DoViewChangeHeader{Cluster: r1.cfg.Cluster, View: 1, Replica: 0, Op: 1,
		Commit: 1, Group: 5, NackBitset: blank.Nack, PresentBitset: blank.Present}, blank.Body))
	sv := sentFrame(sendsOf(r1), wire.CmdStartView)
	if !r1.IsPrimary() || r1.Status() != StatusNormal || sv == nil {
		t.Fatalf("setup: replica 1 %s in view %d, primary %v", r1.Status(), r1.View(), r1.IsPrimary())
	}
	submit(t, r1, "two", 1_000, "two") // its clock is behind op 1's
	prepare := sentFrame(sendsOf(r1), wire.CmdPrepare)
	if p := wire.HeaderOf(prepare).Prepare(); p.Op != 2 || !p.Parent.IsZero() || p.Timestamp >= 5_920_000 {
		t.Fatalf("setup: op 2 is %+v", p)
	}

	// Replica 2 adopts view 1 and acknowledges op 2.
	r2.Step(sv)
	sendsOf(r2)
	r2.Step(prepare)
	if sentFrame(sendsOf(r2), wire.CmdPrepareOk) == nil || r2.Op() != 2 || r2.View() != 1 {
		t.Fatalf("setup: replica 2 %s in view %d at op %d", r2.Status(), r2.View(), r2.Op())
	}

	// View 2 is replica 2's: its own DVC is recorded (6.6 step 5).
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Fatalf("replica 2's own DoViewChange: %v", p)
			}
		}()
		r2.beginViewChange(2)
		r2.Step(svcFrom(r2, 2, 0))
	}()
	d, s := r2.ownDVC()
	entries, err := wire.DecodeSuffix(d.Op, s.Body, s.Nack, s.Present)
	if err != nil {
		t.Fatalf("the DoViewChange does not decode: %v", err)
	}
	two := wire.HeaderOf(prepare).Prepare().Checksum
	if d.Op != 2 || len(entries) != 2 || entries[0].Prepare.Checksum != two || !entries[0].Present || entries[0].Nack {
		t.Fatalf("op 2, acknowledged, must be announced present: %+v", entries)
	}
	if !entries[1].Blank || entries[1].Nack {
		t.Fatalf("op 1, committed below the unsealed link, must be a blank without a nack: %+v", entries[1])
	}

	// With replica 1's DVC the view starts and keeps op 2.
	r1.beginViewChange(2)
	dvc := sentFrame(sendsOf(r1), wire.CmdDoViewChange)
	if dvc == nil {
		r1.Step(svcFrom(r1, 2, 0))
		dvc = sentFrame(sendsOf(r1), wire.CmdDoViewChange)
	}
	r2.Step(dvc)
	sendsOf(r2)
	if r2.Status() != StatusNormal || r2.View() != 2 || r2.Op() != 2 || r2.log[2] == nil || r2.log[2].hdr.Checksum != two {
		t.Fatalf("replica 2 %s in view %d at op %d: op 2 not kept", r2.Status(), r2.View(), r2.Op())
	}
}
