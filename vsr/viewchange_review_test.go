package vsr

import (
	"bytes"
	"testing"

	"iggynode/wire"
)

// Review tests for the view change (replica-plane.md 6.2-6.14) and the
// journal repair the primary-elect reuses (7.2-7.5). Each test names the
// rule it checks. Those marked "regression" failed on 1a4494f and pass
// since 50cc7d4, which fixed what they found; the others fail on 3172fe5.

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

// Regression (fixed in 50cc7d4).
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

// Regression (fixed in 50cc7d4).
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

// Regression (fixed in 50cc7d4).
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

// Regression (fixed in 50cc7d4).
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

// Regression (fixed in 50cc7d4: an entry repaired for another log_view is
// no longer applied by a backup).
// 6.10 step 8, 6.8 step 1 and 6.11 rule 2 (SAFETY): reconcile keeps a
// repaired entry it cannot prove ("repaired above a hole"), and the chain
// proof is lost at the first op the replica lacks, so an entry repaired in
// an older view survives the adoption of a view that discarded it, and the
// commit walk applies it because its number is now below commit_max. Here
// replica 2 repaired op 2 (Y) from primary 0 in view 0; view 1 (replicas 0
// and 1) discarded Y and committed Z as ops 2..5; replica 2 comes back,
// adopts the view (suffix: op 5 only) and applies Y as op 2. Found by a
// randomized run with long delays (a five-replica primary-elect applied an
// op repaired in an older view the same way). An entry whose identity the
// adopted (or merged) log does not prove must not be applied, and one
// repaired under an older log_view is as unproven as any other.
func TestEntryRepairedInAnOlderViewIsNotApplied(t *testing.T) {
	c := newCluster(3)
	submit(t, c.reps[0], "one", 100, 1)
	c.settle()
	c.ticks(c.reps[0].cfg.CommitBroadcastTicks + 1)
	one := wire.HeaderOf(c.committed[0][0].Frame).Prepare()

	// View 0: Y (op 2) and Y3 (op 3) reach nobody; Y3 then reaches replica
	// 2, which sees the gap and repairs Y from the primary.
	c.lose = func(e Envelope) bool {
		h := wire.HeaderOf(e.Head)
		return h.Command() == wire.CmdPrepare && h.Prepare().Op >= 2
	}
	submit(t, c.reps[0], "Y", 200, 2)
	submit(t, c.reps[0], "Y3", 201, 3)
	c.settle()
	c.reps[2].Step(append([]byte(nil), c.reps[0].frameAt(3)...))
	c.settle()
	c.lose = nil
	if c.reps[2].Op() != 2 || c.reps[1].Op() != 1 {
		t.Fatalf("setup: replica 2 head %d, replica 1 head %d, drops %v", c.reps[2].Op(), c.reps[1].Op(), c.reps[2].Dropped)
	}

	// Replica 2 is cut off; primary 0 restarts on its segments (a partition
	// replica: its journal is memory) and forms a view with replica 1,
	// which commits Z..Z5 as ops 2..5.
	c.down = map[uint8]bool{0: true, 2: true}
	c.reps[0] = New(Config{Group: 5, Replica: 0, ReplicaCount: 3, Seed: 1})
	c.reps[0].Recover(Recovery{Commit: 1, CommitMax: 1, CommitChecksum: one.Checksum, CommitTimestamp: one.Timestamp})
	c.committed[0] = c.committed[0][:1]
	delete(c.down, 0)
	c.tickUntil(t, 10000, "a view of replicas 0 and 1", func() bool { return c.leaderAbove(0) >= 0 })
	l := c.leaderAbove(0)
	for i, body := range []string{"Z", "Z3", "Z4", "Z5"} {
		submit(t, c.reps[l], body, uint64(300+i), i)
		c.settle()
	}
	c.ticks(c.reps[l].cfg.CommitBroadcastTicks + 1)
	if c.reps[l].CommitMax() != 5 || !bytes.Equal(appliedAt(c, l, 2), []byte("Z")) {
		t.Fatalf("setup: leader %d commit %d", l, c.reps[l].CommitMax())
	}

	// Replica 2 is back.
	delete(c.down, 2)
	c.tickUntil(t, 3000, "replica 2 applies op 2", func() bool { return c.reps[2].CommitMin() >= 2 })
	if got := appliedAt(c, 2, 2); !bytes.Equal(got, []byte("Z")) {
		t.Fatalf("replica 2 applied %q as op 2 in view %d; the cluster committed %q", got, c.reps[2].View(), "Z")
	}
}

// 6.8 steps 1-2 and 6.11 rule 2 (SAFETY; still open after 50cc7d4), the
// primary-elect side of TestEntryRepairedInAnOlderViewIsNotApplied: the
// merged log names only ops commit_max..op_head, the chain proof stops at
// the first op the primary-elect lacks, and reconcile keeps the entry it
// repaired in an older view. proven() accepts it because the entry was
// proven for log_view 0 and a primary-elect keeps its old log_view until
// startView, so electProgress's commit walk applies it as a committed op
// (and the new primary then serves it). While a merged log is parked,
// proofs must be made against the view being started (r.view), not the
// old log_view.
func TestPrimaryElectDoesNotApplyAnEntryRepairedInAnOlderView(t *testing.T) {
	c := newCluster(3)
	submit(t, c.reps[0], "one", 100, 1)
	c.settle()
	c.ticks(c.reps[0].cfg.CommitBroadcastTicks + 1)
	one := wire.HeaderOf(c.committed[0][0].Frame).Prepare()
	c.lose = func(e Envelope) bool {
		h := wire.HeaderOf(e.Head)
		return h.Command() == wire.CmdPrepare && h.Prepare().Op >= 2
	}
	submit(t, c.reps[0], "Y", 200, 2)
	submit(t, c.reps[0], "Y3", 201, 3)
	c.settle()
	c.reps[2].Step(append([]byte(nil), c.reps[0].frameAt(3)...))
	c.settle()
	c.lose = nil
	if c.reps[2].Op() != 2 {
		t.Fatalf("setup: replica 2 head %d", c.reps[2].Op())
	}

	// As before, replicas 0 (restarted on its segments) and 1 commit Z..Z5
	// in a view replica 2 does not hear of.
	c.down = map[uint8]bool{0: true, 2: true}
	c.reps[0] = New(Config{Group: 5, Replica: 0, ReplicaCount: 3, Seed: 1})
	c.reps[0].Recover(Recovery{Commit: 1, CommitMax: 1, CommitChecksum: one.Checksum, CommitTimestamp: one.Timestamp})
	c.committed[0] = c.committed[0][:1]
	delete(c.down, 0)
	c.tickUntil(t, 10000, "a view of replicas 0 and 1", func() bool { return c.leaderAbove(0) >= 0 })
	l := c.leaderAbove(0)
	for i, body := range []string{"Z", "Z3", "Z4", "Z5"} {
		submit(t, c.reps[l], body, uint64(300+i), i)
		c.settle()
	}
	c.ticks(c.reps[l].cfg.CommitBroadcastTicks + 1)
	other := 1 - l // the backup of that view, 0 or 1

	// The leader dies as replica 2 comes back; replica 2 is the
	// primary-elect of the view they form.
	c.down = map[uint8]bool{uint8(l): true}
	v := c.reps[other].View() + 1
	for PrimaryIndex(v, 3) != 2 {
		v++
	}
	c.reps[other].beginViewChange(v) // where its heartbeat timeout and escalations lead; jump there
	c.settle()
	c.tickUntil(t, 3000, "replica 2 leads", func() bool { return c.reps[2].Leading() })
	if got := appliedAt(c, 2, 2); !bytes.Equal(got, []byte("Z")) {
		t.Fatalf("primary-elect 2 applied %q as op 2 in view %d; the cluster committed %q", got, c.reps[2].View(), "Z")
	}
}

// unprovenRepairedOp builds, on five metadata replicas: replica 2
// repaired op 2 (Y) from primary 0 in view 0; primary 0 died for good and
// replicas 1, 3 and 4 formed view 1 without replica 2, discarding Y and
// committing Z..Z5 as ops 2..5; replica 2 came back and adopted view 1
// (its suffix names op 5 only), keeping Y journaled, unproven and
// unapplied. The network drops RepairPrepares to replica 2 on return.
func unprovenRepairedOp(t *testing.T) (*cluster, wire.PrepareHeader) {
	t.Helper()
	c := newClusterWith(5, func(cfg *Config) { cfg.Metadata = true })
	submit(t, c.reps[0], "one", 100, 1)
	c.settle()
	c.ticks(c.reps[0].cfg.CommitBroadcastTicks + 1)
	one := wire.HeaderOf(c.committed[0][0].Frame).Prepare()
	c.lose = func(e Envelope) bool {
		h := wire.HeaderOf(e.Head)
		return h.Command() == wire.CmdPrepare && h.Prepare().Op >= 2
	}
	submit(t, c.reps[0], "Y", 200, 2)
	submit(t, c.reps[0], "Y3", 201, 3)
	c.settle()
	c.reps[2].Step(append([]byte(nil), c.reps[0].frameAt(3)...))
	c.settle()
	c.lose = nil
	if c.reps[2].Op() != 2 {
		t.Fatalf("setup: replica 2 head %d", c.reps[2].Op())
	}
	c.down = map[uint8]bool{0: true, 2: true}
	c.tickUntil(t, 3000, "view 1", func() bool { return c.leading(1) == 1 })
	for i, body := range []string{"Z", "Z3", "Z4", "Z5"} {
		submit(t, c.reps[1], body, uint64(300+i), i)
		c.settle()
	}
	c.ticks(c.reps[1].cfg.CommitBroadcastTicks + 1)
	if c.reps[1].CommitMax() != 5 {
		t.Fatalf("setup: view 1 commit %d", c.reps[1].CommitMax())
	}
	delete(c.down, 2)
	c.lose = func(e Envelope) bool { return e.To == 2 && wire.HeaderOf(e.Head).Command() == wire.CmdRepairPrepare }
	c.tickUntil(t, 3000, "replica 2 adopts view 1", func() bool {
		return c.reps[2].View() == 1 && c.reps[2].Status() == StatusNormal
	})
	y := c.reps[2].frameAt(2)
	if y == nil || !bytes.Equal(y[wire.HeaderSize:], []byte("Y")) || appliedAt(c, 2, 2) != nil {
		t.Fatalf("setup: replica 2 holds Y %v, applied %q", y != nil, appliedAt(c, 2, 2))
	}
	return c, one
}

// 6.10 step 8 with 9.3 (SAFETY; in the fix of 50cc7d4): a repaired op not
// proven for the current log_view is journaled (durably, on the metadata
// plane) but not applied. Recover cannot tell it from a live entry (every
// recovered entry counts as proven), and the same-view rule reconcile
// gained in 50cc7d4 then trusts it: a restarted replica whose log_view is
// the StartView's keeps every unrefuted entry below a hole in its journal
// and applies it. Here replica 2 restarts before its repair replaced Y,
// adopts view 1 again through its probe, and applies Y as op 2. A restart
// must not turn an unproven entry into a proven one: trust same-view
// entries only above sv.op (the case the rule was made for) or on a chain
// from a known header, or persist the proof.
func TestRestartDoesNotProveAnUnprovenRepairedEntry(t *testing.T) {
	c, one := unprovenRepairedOp(t)
	y := append([]byte(nil), c.reps[2].frameAt(2)...)
	c.lose = nil
	cfg := c.reps[2].cfg
	c.reps[2] = New(cfg)
	c.reps[2].Recover(Recovery{View: 1, LogView: 1, Commit: 1, CommitMax: 5, CommitChecksum: one.Checksum,
		CommitTimestamp: one.Timestamp, Journal: [][]byte{y}, Incarnation: wire.U128{Lo: 0xfeed}})
	c.tickUntil(t, 3000, "replica 2 applies op 2", func() bool { return c.reps[2].CommitMin() >= 2 })
	if got := appliedAt(c, 2, 2); !bytes.Equal(got, []byte("Z")) {
		t.Fatalf("replica 2 applied %q as op 2 after its restart; view 1 committed %q", got, "Z")
	}
}

// 2.5, 9.3 step 3 and 9.5 (LIVENESS; in the fix of 50cc7d4): emitRepaired
// hands the shell repaired entries in op order without checking that each
// names the journaled entry below it as parent, so an unproven entry (Y
// above) is followed in the durable journal by a view's op (Z3) that
// does not chain onto it. The refutation truncates Y and Z3 only in the
// next Ready: a crash in between leaves a WAL whose hash chain breaks, and
// the node then refuses to boot ("metadata journal breaks its hash chain",
// actors/metadata.go; 9.3 step 3 says truncate from the break) and
// Recover asserts a chained journal. Hand the shell only entries that
// chain onto the journal (refute before emitting).
func TestRepairNeverJournalsABrokenHashChain(t *testing.T) {
	c, _ := unprovenRepairedOp(t)
	c.lose = nil
	r2 := c.reps[2]
	journal := map[uint64]wire.PrepareHeader{}
	for op := r2.CommitMin(); op <= r2.Op(); op++ {
		if f := r2.frameAt(op); f != nil {
			journal[op] = wire.HeaderOf(f).Prepare()
		}
	}
	// Replica 2's shell checks its journal's chain at every append.
	c.journaled = func(i int, truncate uint64, f []byte) {
		if i != 2 {
			return
		}
		if f == nil {
			for op := range journal {
				if op >= truncate {
					delete(journal, op)
				}
			}
			return
		}
		p := wire.HeaderOf(f).Prepare()
		if below, ok := journal[p.Op-1]; ok && below.Checksum != p.Parent {
			t.Fatalf("replica 2 journals op %d (%q) above op %d (%q), which is not its parent",
				p.Op, f[wire.HeaderSize:], p.Op-1, r2.frameAt(p.Op - 1)[wire.HeaderSize:])
		}
		journal[p.Op] = p
	}
	for range 3 * r2.cfg.RepairRetryTicks {
		for i, r := range c.reps {
			if !c.down[uint8(i)] {
				r.Tick()
			}
		}
		c.settle()
	}
	if got := appliedAt(c, 2, 2); !bytes.Equal(got, []byte("Z")) {
		t.Fatalf("replica 2 applied %q as op 2", got)
	}
}

// A backup that restarts (its RequestStartView reaches the primary) may
// have lost the memory journal its acknowledgements stood for: the primary
// forgets its acks of uncommitted ops and commits them only on fresh ones.
// Simulator seed 129056: op 8 committed on an ack from before the
// backup's restart; a later view without the primary discarded it.
func TestRestartedBackupsAcksAreForgotten(t *testing.T) {
	r := New(Config{Group: 5, Replica: 0, ReplicaCount: 3, Seed: 1})
	var preps [3]wire.PrepareHeader
	for op := uint64(1); op <= 2; op++ {
		submitBatch(t, r, op-1, 100+op)
		rd := r.Ready()
		preps[op] = wire.HeaderOf(rd.Journal[0]).Prepare()
		r.Journaled(op, nil)
		r.Ready()
	}
	ack := func(replica uint8, op uint64) {
		p := preps[op]
		var h wire.Header
		(&wire.PrepareOkHeader{View: 0, Replica: replica, Parent: p.Parent, PrepareChecksum: p.Checksum, Op: op,
			Timestamp: p.Timestamp, Operation: p.Operation, Group: 5}).Encode(&h)
		r.Step(h[:])
		r.Ready()
	}
	ack(2, 2) // op 2 has its quorum; op 1 not yet, so nothing commits
	if r.CommitMax() != 0 {
		t.Fatalf("commit_max %d before op 1 has a quorum", r.CommitMax())
	}
	var rsv wire.Header
	(&wire.RequestStartViewHeader{View: 0, Replica: 2, Group: 5, Incarnation: wire.U128{Lo: 9}}).Encode(&rsv)
	r.Step(rsv[:]) // replica 2 restarted
	r.Ready()
	ack(1, 1)
	if r.CommitMax() != 1 {
		t.Fatalf("commit_max %d, want 1: op 2's only backup ack came from before replica 2's restart", r.CommitMax())
	}
	ack(1, 2)
	if r.CommitMax() != 2 {
		t.Fatalf("commit_max %d after a fresh ack of op 2, want 2", r.CommitMax())
	}
}

// The journal head a memory-journal shell records stays at what an
// earlier incarnation's journal reached until a view is adopted: a
// replica restarted twice must not nack ops its first incarnation
// acknowledged (simulator seed 125576: it nacked an op the primary had
// committed on its ack, and with another replica behind, every merge
// deadlocked on a quorum of nacks of a committed op).
func TestJournalHeadOutlivesASecondRestart(t *testing.T) {
	r := New(Config{Group: 5, Replica: 2, ReplicaCount: 3, Seed: 3})
	r.Recover(Recovery{JournalHead: 4}) // the first incarnation journaled up to op 4
	if got := r.JournalHeadAfter(2); got != 4 {
		t.Fatalf("after journaling op 2 anew the shell would record %d, want 4", got)
	}
	// What the shell recorded comes back at the second restart: the DVC
	// still covers op 4 and nacks none of ops 1..4.
	again := New(Config{Group: 5, Replica: 2, ReplicaCount: 3, Seed: 3})
	again.Recover(Recovery{JournalHead: r.JournalHeadAfter(2)})
	h, s := again.ownDVC()
	if h.Op != 4 || !s.Nack.IsZero() {
		t.Fatalf("DVC op %d nacks %v, want op 4 and no nack", h.Op, s.Nack)
	}
	if got := New(Config{Group: 5, Replica: 2, ReplicaCount: 3}).JournalHeadAfter(7); got != 7 {
		t.Fatalf("a replica with no earlier incarnation records %d, want 7", got)
	}
}
