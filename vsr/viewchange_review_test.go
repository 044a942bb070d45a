package vsr

import (
	"bytes"
	"testing"

	"iggynode/wire"
)

// Review tests for the view change (replica-plane.md 6.2-6.14) and the
// journal repair the primary-elect reuses (7.2-7.5). Each failing test
// names the rule it breaks.

// frameOf joins an envelope into the frame a peer receives.
func frameOf(e Envelope) []byte { return append(append([]byte(nil), e.Head...), e.Body...) }

// leaderAbove is the live replica leading a view above v, or -1.
func (c *cluster) leaderAbove(v uint32) int {
	for i, r := range c.reps {
		if !c.down[uint8(i)] && r.Leading() && r.View() > v {
			return i
		}
	}
	return -1
}

// appliedAt is the body replica i applied as op, or nil.
func appliedAt(c *cluster, i int, op uint64) []byte {
	for _, x := range c.committed[i] {
		if x.Op == op {
			return x.Frame[wire.HeaderSize:]
		}
	}
	return nil
}

// 6.10 steps 2/4/8, 6.11 rule 3 and 9.5 rule 1 (SAFETY): a StartView of
// the view a backup already runs, delivered late (here the primary's
// startView broadcast, overtaken by the RequestStartView answer; a
// duplicate, or the 5.10 rule 3 broadcast overtaken by a prepare relayed
// along the chain, do the same), is adopted again: reconcile truncates
// every journal entry above the stale SV's head. Those entries were
// prepared in this very view after the SV and the backup has acknowledged
// them, so an op committed on that acknowledgement loses a copy; when the
// primary then dies, the next view no longer has it and reuses its number.
// A replica in Normal in sv.view should ignore a StartView of sv.view (or
// at least never truncate above sv.op entries journaled in sv.view).
func TestStaleStartViewOfTheCurrentViewKeepsAcknowledgedOps(t *testing.T) {
	c := newCluster(3)
	submit(t, c.reps[0], "one", 100, 1)
	c.settle()
	c.ticks(c.reps[0].cfg.CommitBroadcastTicks + 1)
	one := wire.HeaderOf(c.committed[0][0].Frame).Prepare()

	// The primary dies; replica 1 starts view 1. Its StartView broadcast to
	// replica 2 is held back in the network; replica 2 adopts view 1 from
	// the answer to its RequestStartView instead (6.12 rule 5).
	c.down = map[uint8]bool{0: true}
	var late []byte
	c.lose = func(e Envelope) bool {
		if late == nil && e.To == 2 && wire.HeaderOf(e.Head).Command() == wire.CmdStartView {
			late = frameOf(e)
			return true
		}
		return false
	}
	c.tickUntil(t, 3000, "replica 2 in view 1", func() bool {
		return c.leading(1) == 1 && c.reps[2].View() == 1 && c.reps[2].Status() == StatusNormal
	})
	if late == nil {
		t.Fatal("setup: no StartView held back")
	}
	c.lose = nil

	// Op 2 commits on replica 1 with replica 2's acknowledgement.
	submit(t, c.reps[1], "two", 200, 2)
	c.settle()
	if c.reps[1].CommitMax() != 2 || c.reps[2].Op() != 2 || !bytes.Equal(appliedAt(c, 1, 2), []byte("two")) {
		t.Fatalf("setup: primary commit %d, replica 2 head %d", c.reps[1].CommitMax(), c.reps[2].Op())
	}

	// The held-back StartView (view 1, op 1) arrives.
	c.reps[2].Step(late)
	c.settle()
	if c.reps[2].frameAt(2) == nil {
		t.Errorf("replica 2 truncated op 2, which it acknowledged and which is committed (truncated %v)", c.truncated[2])
	}

	// Consequence: the primary dies, replica 0 restarts from its journal
	// (op 1), and the new view reuses op 2.
	c.down = map[uint8]bool{1: true}
	c.reps[0] = New(Config{Group: 5, Replica: 0, ReplicaCount: 3, Seed: 1})
	c.reps[0].Recover(Recovery{Commit: 1, CommitMax: 1, CommitChecksum: one.Checksum, CommitTimestamp: one.Timestamp})
	c.committed[0] = c.committed[0][:1]
	c.tickUntil(t, 5000, "a primary among replicas 0 and 2", func() bool { return c.leaderAbove(1) >= 0 })
	l := c.leaderAbove(1)
	submit(t, c.reps[l], "new", 300, "n")
	c.settle()
	c.tickUntil(t, 500, "the new primary applies op 2", func() bool { return appliedAt(c, l, 2) != nil })
	if got := appliedAt(c, l, 2); !bytes.Equal(got, []byte("two")) {
		t.Fatalf("committed op 2 %q was lost: the new primary (replica %d, view %d) applied %q as op 2",
			"two", l, c.reps[l].View(), got)
	}
}

// 6.12 rule 2 and 6.10 step 3 (SAFETY): the incarnation must be drawn anew
// at every boot, but Recover derives it from Config.Seed alone, and both
// shells (actors/cluster.go coreConfig, sim coreConfig) pass the same seed
// at every boot of a replica. The incarnation guard then never fires: a
// StartView answering the previous boot's RequestStartView is adopted by
// the new boot, which truncates the journaled, acknowledged ops above its
// head.
func TestIncarnationIsFreshAtEveryBoot(t *testing.T) {
	c := newClusterWith(3, func(cfg *Config) { cfg.Metadata = true })
	cfg2 := c.reps[2].cfg // the configuration every boot of replica 2 gets
	submit(t, c.reps[0], "one", 100, 1)
	c.settle()
	c.ticks(c.reps[0].cfg.CommitBroadcastTicks + 1)
	one := wire.HeaderOf(c.committed[0][0].Frame).Prepare()
	recovery := Recovery{Commit: 1, CommitMax: 1, CommitChecksum: one.Checksum, CommitTimestamp: one.Timestamp}

	// Boot A of replica 2 probes; the answer to its first probe is delayed
	// in the network, the second one is adopted.
	c.reps[2] = New(cfg2)
	c.reps[2].Recover(recovery)
	c.committed[2] = c.committed[2][:1]
	var late []byte
	c.lose = func(e Envelope) bool {
		if late == nil && e.To == 2 && wire.HeaderOf(e.Head).Command() == wire.CmdStartView {
			late = frameOf(e)
			return true
		}
		return false
	}
	c.tickUntil(t, 1000, "boot A adopts view 0", func() bool { return c.reps[2].Status() == StatusNormal })
	c.lose = nil
	if late == nil || wire.HeaderOf(late).StartView().Incarnation.IsZero() {
		t.Fatal("setup: no probe answer held back")
	}

	// Op 2 is journaled by replica 2 and committed; replica 1 is away, so
	// replica 2's acknowledgement is the quorum.
	c.down = map[uint8]bool{1: true}
	submit(t, c.reps[0], "two", 200, 2)
	c.settle()
	c.tickUntil(t, 200, "op 2 commits", func() bool { return c.reps[0].CommitMax() == 2 })
	if c.reps[2].frameAt(2) == nil {
		t.Fatal("setup: replica 2 does not hold op 2")
	}
	journal := [][]byte{c.reps[2].frameAt(2)}

	// Boot B of replica 2 (same configuration, as the shells do).
	c.reps[2] = New(cfg2)
	c.reps[2].Recover(Recovery{Commit: 1, CommitMax: 1, CommitChecksum: one.Checksum, CommitTimestamp: one.Timestamp, Journal: journal})
	if c.reps[2].incarnation == wire.HeaderOf(late).StartView().Incarnation {
		t.Errorf("boot B drew boot A's incarnation %v", c.reps[2].incarnation)
	}
	c.reps[2].Step(late) // boot A's answer arrives now
	c.reps[2].Ready()
	if c.reps[2].frameAt(2) == nil {
		t.Fatalf("boot B adopted the StartView answering boot A and truncated the acknowledged, committed op 2")
	}
}

// 7.4 rules 1-4 with 6.10 step 6 and 5.9 (SAFETY): a RepairPrepare carries
// no nonce, so one served long ago, for a session of an older view, is
// accepted by any open session; below the adopted StartView's suffix
// (ops at or below the view's commit_max are not in it) nothing checks its
// identity, and the commit walk applies it at once. Here old primary 0
// served its uncommitted op 2 (Y) to replica 1 in view 0; view 1 discarded
// Y and committed Z as op 2; replica 0 restarts (a partition replica: its
// journal is memory), adopts view 1, opens a repair session for ops 2..3,
// and receives the stale RepairPrepare Y before the primary's answer. It
// applies Y where every other replica applied Z. A repaired op should be
// applied only once its identity is proven (the suffix header, or the
// parent named by a proven op above it), or its view checked against the
// view that must have prepared it.
func TestStaleRepairPrepareIsNotApplied(t *testing.T) {
	c := newCluster(3)
	submit(t, c.reps[0], "one", 100, 1)
	c.settle()
	c.ticks(c.reps[0].cfg.CommitBroadcastTicks + 1)
	one := wire.HeaderOf(c.committed[0][0].Frame).Prepare()

	// View 0: op 2 (Y) reaches nobody; op 3 reaches replica 1, which sees
	// the gap and asks primary 0 for op 2. That answer is held in the
	// network.
	var stale []byte
	c.lose = func(e Envelope) bool {
		h := wire.HeaderOf(e.Head)
		switch {
		case h.Command() == wire.CmdPrepare && h.Prepare().View == 0 && h.Prepare().Op == 2:
			return true
		case h.Command() == wire.CmdPrepare && h.Prepare().View == 0 && h.Prepare().Op == 3 && e.To != 1:
			return true
		case h.Command() == wire.CmdRepairPrepare && h.Prepare().View == 0 && h.Prepare().Op == 2:
			if stale == nil {
				stale = frameOf(e)
			}
			return true
		}
		return false
	}
	submit(t, c.reps[0], "Y", 200, 2)
	c.settle()
	submit(t, c.reps[0], "Y3", 201, 3)
	c.settle()
	if stale == nil || c.reps[1].Op() != 1 || c.reps[2].Op() != 1 {
		t.Fatalf("setup: stale %v, heads %d %d", stale != nil, c.reps[1].Op(), c.reps[2].Op())
	}

	// Primary 0 dies; view 1 discards Y and commits Z (op 2) and Z3 (op 3).
	c.down = map[uint8]bool{0: true}
	c.tickUntil(t, 3000, "view 1", func() bool { return c.leading(1) == 1 && c.reps[2].Status() == StatusNormal })
	submit(t, c.reps[1], "Z", 300, "z")
	c.settle()
	submit(t, c.reps[1], "Z3", 301, "z3")
	c.settle()
	c.ticks(c.reps[1].cfg.CommitBroadcastTicks + 1)
	if !bytes.Equal(appliedAt(c, 1, 2), []byte("Z")) || !bytes.Equal(appliedAt(c, 2, 2), []byte("Z")) {
		t.Fatalf("setup: op 2 applied as %q and %q", appliedAt(c, 1, 2), appliedAt(c, 2, 2))
	}

	// Replica 0 restarts on its segments (op 1) and rejoins view 1; the
	// primary's RepairPrepares are slow, the stale one arrives first.
	c.reps[0] = New(Config{Group: 5, Replica: 0, ReplicaCount: 3, Seed: 1})
	c.reps[0].Recover(Recovery{Commit: 1, CommitMax: 1, CommitChecksum: one.Checksum, CommitTimestamp: one.Timestamp})
	c.committed[0] = c.committed[0][:1]
	delete(c.down, 0)
	c.lose = func(e Envelope) bool { return e.To == 0 && wire.HeaderOf(e.Head).Command() == wire.CmdRepairPrepare }
	c.tickUntil(t, 1000, "replica 0 adopts view 1 and repairs", func() bool {
		return c.reps[0].Status() == StatusNormal && c.reps[0].repair.open
	})
	c.reps[0].Step(stale)
	c.settle()
	c.lose = nil
	c.tickUntil(t, 1000, "replica 0 applies op 2", func() bool { return c.reps[0].CommitMin() >= 2 })
	if got := appliedAt(c, 0, 2); !bytes.Equal(got, []byte("Z")) {
		t.Fatalf("replica 0 applied %q as op 2, the cluster committed %q", got, "Z")
	}
}

// 4.6 rule 3 and 1.6 with 6.1 (SAFETY, with a shell whose journal append
// completes after later frames were stepped; the Ready/Journaled contract
// allows it, the actor shells happen to be synchronous): forward restamps
// a prepare with the forwarder's current view. A backup whose append of a
// view-0 prepare completes after it entered the view change for view 1
// forwards that prepare as a view-1 prepare. The next replica, already in
// view 1, journals and acknowledges it although the merge of view 1
// discarded it, then silently refuses the new primary's op at that
// number, and applies the discarded op when the commit point passes it.
// Forwarded bytes are the journaled bytes (view as journaled), and a
// replica outside Normal should not forward at all.
func TestForwardOutsideNormalDoesNotRestampIntoTheNewView(t *testing.T) {
	c := newCluster(4)
	submit(t, c.reps[0], "one", 100, 1)
	c.settle()
	c.ticks(c.reps[0].cfg.CommitBroadcastTicks + 1)

	// View 0: op 2 (Y) is journaled by primary 0 only; its retransmission
	// reaches replica 2, whose append is slow.
	c.lose = func(e Envelope) bool {
		h := wire.HeaderOf(e.Head)
		return h.Command() == wire.CmdPrepare && h.Prepare().Op == 2 && h.Prepare().View == 0
	}
	submit(t, c.reps[0], "Y", 200, 2)
	c.settle()
	c.reps[2].Step(append([]byte(nil), c.reps[0].frameAt(2)...))
	if rd := c.reps[2].Ready(); len(rd.Journal) != 1 {
		t.Fatalf("setup: replica 2 journals %d frames", len(rd.Journal))
	}

	// Primary 0 dies; view 1 (primary 1) discards Y. Replica 3 adopts view
	// 1; the StartView to replica 2 is slow.
	c.down = map[uint8]bool{0: true}
	c.lose = func(e Envelope) bool { return e.To == 2 && wire.HeaderOf(e.Head).Command() == wire.CmdStartView }
	c.tickUntil(t, 3000, "view 1 at replicas 1 and 3", func() bool {
		return c.leading(1) == 1 && c.reps[3].View() == 1 && c.reps[3].Status() == StatusNormal
	})
	if c.reps[1].Op() != 1 || c.reps[2].Status() != StatusViewChange {
		t.Fatalf("setup: view 1 head %d, replica 2 %s", c.reps[1].Op(), c.reps[2].Status())
	}

	// Replica 2's append of Y completes now, in the view change.
	c.reps[2].Journaled(2, nil)
	c.settle()
	c.lose = nil
	if f := c.reps[3].frameAt(2); f != nil {
		t.Errorf("replica 3 journaled the discarded view-0 op 2 as a view-%d prepare", wire.HeaderOf(f).Prepare().View)
	}

	// View 1 commits Z as op 2.
	submit(t, c.reps[1], "Z", 300, "z")
	c.settle()
	c.tickUntil(t, 2000, "replica 3 applies op 2", func() bool { return c.reps[3].CommitMin() >= 2 })
	if got := appliedAt(c, 3, 2); !bytes.Equal(got, []byte("Z")) || !bytes.Equal(appliedAt(c, 1, 2), []byte("Z")) {
		t.Fatalf("replica 3 applied %q as op 2, primary 1 applied %q", got, appliedAt(c, 1, 2))
	}
}

// 6.10 steps 3/4/8 and 9.5 rule 1 (SAFETY), the Recovering side of
// TestStaleStartViewOfTheCurrentViewKeepsAcknowledgedOps: after a restart
// the incarnation guard lets every zero-incarnation StartView through, so
// the late startView broadcast of the view the replica already served in
// is adopted by its new boot and truncates the ops it journaled and
// acknowledged in that view after the broadcast. Entries above sv.op that
// were journaled in sv.view itself are newer than the StartView and must
// not be truncated on its say-so.
func TestStaleStartViewAfterRestartKeepsAcknowledgedOps(t *testing.T) {
	c := newClusterWith(3, func(cfg *Config) { cfg.Metadata = true })
	submit(t, c.reps[0], "one", 100, 1)
	c.settle()
	c.ticks(c.reps[0].cfg.CommitBroadcastTicks + 1)
	one := wire.HeaderOf(c.committed[0][0].Frame).Prepare()

	c.down = map[uint8]bool{0: true}
	var late []byte
	c.lose = func(e Envelope) bool {
		if late == nil && e.To == 2 && wire.HeaderOf(e.Head).Command() == wire.CmdStartView {
			late = frameOf(e)
			return true
		}
		return false
	}
	c.tickUntil(t, 3000, "replica 2 in view 1", func() bool {
		return c.leading(1) == 1 && c.reps[2].View() == 1 && c.reps[2].Status() == StatusNormal
	})
	c.lose = nil
	if late == nil || !wire.HeaderOf(late).StartView().Incarnation.IsZero() {
		t.Fatal("setup: the startView broadcast was not held back")
	}
	submit(t, c.reps[1], "two", 200, 2)
	c.settle()
	if c.reps[1].CommitMax() != 2 || c.reps[2].frameAt(2) == nil {
		t.Fatalf("setup: primary commit %d", c.reps[1].CommitMax())
	}
	journal := [][]byte{c.reps[2].frameAt(2)}

	// Replica 2 restarts from its durable state: view 1, log_view 1,
	// op 2 journaled above commit 1.
	cfg := c.reps[2].cfg
	c.reps[2] = New(cfg)
	c.reps[2].Recover(Recovery{View: 1, LogView: 1, Commit: 1, CommitMax: 1, CommitChecksum: one.Checksum,
		CommitTimestamp: one.Timestamp, Journal: journal})
	c.reps[2].Step(late)
	c.reps[2].Ready()
	if c.reps[2].frameAt(2) == nil {
		t.Fatal("the restarted replica adopted the late StartView (view 1, op 1) and truncated its acknowledged, committed op 2")
	}
}
