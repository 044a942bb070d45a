package vsr

import (
	"errors"
	"testing"

	"iggynode/wire"
)

// Tests of reconfig.go's rules S1-S6, each named in its comment. Every one
// was run with its rule taken out and failed.

// newGrowCluster is n replicas of which the first voters form epoch 0 and
// the rest are joiners (Config.Roster without them).
func newGrowCluster(n, voters int) *cluster {
	ro := DefaultRoster(voters)
	return newClusterWith(n, func(c *Config) {
		c.ReplicaCount = voters
		c.Roster = &ro
		c.Metadata = true
	})
}

// serveEpochTransfers is the shell's transfer for the tests: a replica
// whose core asks installs at once the state of the peer it names, when
// that peer is a caught-up primary or of a newer epoch than it; its
// applied log becomes the peer's.
func (c *cluster) serveEpochTransfers() {
	for i, r := range c.reps {
		if c.down[uint8(i)] || r.NeedTransfer < 0 || r.Transferring() {
			continue
		}
		p := c.reps[r.NeedTransfer]
		r.SetTransferring(true)
		if c.down[uint8(r.NeedTransfer)] || !(p.CaughtUpPrimary() || p.Epoch() > r.Epoch()) ||
			!r.InstallAllowedEpoch(p.CommitMin(), p.Roster()) {
			r.SetTransferring(false)
			continue
		}
		c.committed[i] = append([]Committed(nil), c.committed[r.NeedTransfer][:p.CommitMin()]...)
		r.InstalledEpoch(p.CommitMin(), p.CommitMax(), p.Roster())
	}
	c.settle()
}

// run ticks every live replica n times, serving transfers after each.
func (c *cluster) run(n int) {
	for range n {
		for i, r := range c.reps {
			if !c.down[uint8(i)] {
				r.Tick()
			}
		}
		c.settle()
		c.serveEpochTransfers()
	}
}

func (c *cluster) leaderIndex() int {
	for i, r := range c.reps {
		if !c.down[uint8(i)] && r.Leading() {
			return i
		}
	}
	return -1
}

func submitOps(t *testing.T, c *cluster, n int) {
	t.Helper()
	for range n {
		l := c.leaderIndex()
		if l < 0 {
			t.Fatalf("no leader")
		}
		submit(t, c.reps[l], "op", 1, nil)
		c.settle()
	}
}

// The roster's primary is the spec's PrimaryIndex for the voters 0..n-1
// (4.4): a cluster that never reconfigures picks the same primaries.
func TestRosterPrimaryIsPrimaryIndex(t *testing.T) {
	for n := 1; n <= 7; n++ {
		ro := DefaultRoster(n)
		for v := uint32(0); v < 40; v++ {
			if ro.Primary(v) != PrimaryIndex(v, n) {
				t.Fatalf("n=%d view %d: %d, want %d", n, v, ro.Primary(v), PrimaryIndex(v, n))
			}
		}
	}
	ro := Roster{Voters: 1<<1 | 1<<3 | 1<<4}
	if ro.Primary(0) != 1 || ro.Primary(1) != 3 || ro.Primary(2) != 4 || ro.Primary(3) != 1 || ro.next(4) != 1 || ro.next(1) != 3 {
		t.Fatalf("primaries of {1,3,4}: %d %d %d", ro.Primary(0), ro.Primary(1), ro.Primary(2))
	}
	b := EncodeRoster(nil, Roster{Epoch: 3, Voters: 7, Learners: 8, Target: 15})
	if got, err := DecodeRoster(b); err != nil || got != (Roster{Epoch: 3, Voters: 7, Learners: 8, Target: 15}) {
		t.Fatalf("roster round trip: %v %v", got, err)
	}
	if _, err := DecodeRoster(EncodeRoster(nil, Roster{Voters: 3, Learners: 1})); err == nil {
		t.Fatal("a voter that is also a learner must not decode")
	}
}

// 3 -> 5: R1 adds 3 and 4 as learners (they transfer, S3, and probe), the
// primary promotes them on its own once they hold the log (R2, S5), and
// every replica ends in epoch 2 with five voters and the same log.
func TestGrowThreeToFive(t *testing.T) {
	c := newGrowCluster(5, 3)
	submitOps(t, c, 4)
	if err := c.reps[0].Reconfigure(0b11111, 2); err != nil {
		t.Fatal(err)
	}
	c.settle()
	c.run(200)
	submitOps(t, c, 3)
	c.run(200)
	for i, r := range c.reps {
		if ro := r.Roster(); ro.Epoch != 2 || ro.Voters != 0b11111 || ro.Changing() || r.Status() != StatusNormal {
			t.Fatalf("replica %d: %v %s", i, ro, r.Status())
		}
		sameApplied(t, c, 0, i)
		if r.CommitMin() != c.reps[0].CommitMin() {
			t.Fatalf("replica %d at %d, primary at %d", i, r.CommitMin(), c.reps[0].CommitMin())
		}
	}
	if c.reps[0].CommitMin() != 4+2+3 {
		t.Fatalf("commit %d: 4 ops, R1, R2, 3 ops", c.reps[0].CommitMin())
	}
}

// S1: after R is prepared the primary admits nothing in its epoch; once R
// commits the new epoch's primary admits again.
func TestNothingIsPreparedAboveReconfiguration(t *testing.T) {
	c := newGrowCluster(3, 3)
	submitOps(t, c, 2)
	c.down = map[uint8]bool{1: true, 2: true} // R cannot commit yet
	if err := c.reps[0].Reconfigure(0b110, 1); err != nil {
		t.Fatal(err)
	}
	c.settle()
	err := c.reps[0].Submit(Request{Client: wire.U128{Lo: 7}, Request: 2, Operation: wire.OpCreateStream, Frame: frameWith("late")}, 3)
	if !errors.Is(err, ErrBusy) {
		t.Fatalf("submit above a pending R: %v, want ErrBusy", err)
	}
	if err := c.reps[0].Reconfigure(0b111, 1); !errors.Is(err, ErrReconfiguring) {
		t.Fatalf("second R: %v", err)
	}
	if c.reps[0].Op() != 3 {
		t.Fatalf("op %d, want R at 3 and nothing above", c.reps[0].Op())
	}
	c.down = nil
	c.run(60)
	if l := c.leaderIndex(); l < 0 || c.reps[l].Epoch() != 1 {
		t.Fatalf("no leader of epoch 1")
	}
	submitOps(t, c, 1)
	if c.reps[c.leaderIndex()].CommitMin() != 4 {
		t.Fatalf("commit %d after the epoch change", c.reps[c.leaderIndex()].CommitMin())
	}
}

// S5: a learner's acknowledgements are not in any quorum: with two of
// three voters down, the primary and two learners do not commit.
func TestLearnerAcksCountForNothing(t *testing.T) {
	c := newGrowCluster(5, 3)
	submitOps(t, c, 2)
	c.down = map[uint8]bool{3: true, 4: true} // learners catch up later; R2 must wait
	if err := c.reps[0].Reconfigure(0b11111, 1); err != nil {
		t.Fatal(err)
	}
	c.run(5)
	c.down = map[uint8]bool{4: true} // learner 4 stays away: R2 waits for it
	c.run(400)                       // learner 3 transfers, probes and catches up
	l := c.leaderIndex()
	if ro := c.reps[l].Roster(); ro.Epoch != 1 || ro.Learners != 0b11000 || c.reps[3].Status() != StatusNormal {
		t.Fatalf("roster %v, learner 3 %s", ro, c.reps[3].Status())
	}
	c.down = map[uint8]bool{4: true}
	for i := 0; i < 3; i++ {
		if i != l {
			c.down[uint8(i)] = true // one voter left, the leader
		}
	}
	before := c.reps[l].CommitMin()
	submit(t, c.reps[l], "op", 9, nil)
	c.settle()
	c.run(3)
	if c.reps[3].Op() != before+1 {
		t.Fatalf("learner 3 did not journal the op (op %d)", c.reps[3].Op())
	}
	if c.reps[l].CommitMin() != before {
		t.Fatalf("committed with one voter and a learner: %d -> %d", before, c.reps[l].CommitMin())
	}
}

// S5 and S2: R2 waits for the learners: while a learner is down the
// learner epoch stays, and it promotes once the learner holds the log.
func TestPromotionWaitsForTheLearner(t *testing.T) {
	c := newGrowCluster(4, 3)
	submitOps(t, c, 3)
	c.down = map[uint8]bool{3: true}
	if err := c.reps[0].Reconfigure(0b1111, 1); err != nil {
		t.Fatal(err)
	}
	c.run(100)
	if ro := c.reps[0].Roster(); ro.Epoch != 1 || ro.Learners != 0b1000 {
		t.Fatalf("promoted a learner that never caught up: %v", ro)
	}
	c.down = nil
	c.run(200)
	for i, r := range c.reps {
		if ro := r.Roster(); ro.Epoch != 2 || ro.Voters != 0b1111 {
			t.Fatalf("replica %d: %v", i, ro)
		}
	}
}

// S3: a frame of a newer epoch is not acted on (a StartViewChange would
// otherwise start a view change counted with the old roster); it asks for
// a transfer. A frame of an older epoch is dropped and answered.
func TestEpochFence(t *testing.T) {
	r := New(Config{Replica: 1, ReplicaCount: 3, Group: 5})
	s := wire.StartViewChangeHeader{View: FirstView(1) + 1, Replica: 2, Group: 5}
	head := make([]byte, wire.HeaderSize)
	s.Encode(wire.HeaderOf(head))
	r.Step(head)
	if r.Status() != StatusNormal || r.View() != 0 || r.NeedTransfer != 2 {
		t.Fatalf("newer epoch SVC: %s view %d need %d", r.Status(), r.View(), r.NeedTransfer)
	}

	ro := Roster{Epoch: 1, Voters: 0b111, Target: 0b111}
	o := New(Config{Replica: 0, ReplicaCount: 3, Group: 5, Roster: &ro})
	old := wire.StartViewChangeHeader{View: 7, Replica: 2, Group: 5}
	old.Encode(wire.HeaderOf(head))
	o.Step(head)
	rd := o.Ready()
	if o.Status() != StatusNormal || len(rd.Send) != 1 || rd.Send[0].To != 2 ||
		wire.HeaderOf(rd.Send[0].Head).Command() != wire.CmdCommit || EpochOf(wire.HeaderOf(rd.Send[0].Head).View()) != 1 {
		t.Fatalf("older epoch SVC: %s, sends %d", o.Status(), len(rd.Send))
	}
}

// S4, S6: removing the current primary is a planned view change: the
// moment R applies, the first view of the next epoch has another
// primary, with no timeout; the old primary is removed, refuses
// requests, and still serves repair.
func TestRemovingThePrimaryHandsOver(t *testing.T) {
	c := newGrowCluster(4, 4)
	submitOps(t, c, 3)
	if err := c.reps[0].Reconfigure(0b1110, 1); err != nil {
		t.Fatal(err)
	}
	c.settle()
	if !c.reps[0].Removed() || c.reps[0].Leading() {
		t.Fatalf("old primary: removed %v leading %v", c.reps[0].Removed(), c.reps[0].Leading())
	}
	if err := c.reps[0].Submit(Request{Frame: frameWith("x")}, 1); !errors.Is(err, ErrRemoved) {
		t.Fatalf("submit at a removed replica: %v", err)
	}
	l := c.leaderIndex()
	if l < 1 || c.reps[l].View() != FirstView(1) {
		t.Fatalf("no leader of view %d without a timeout (leader %d)", FirstView(1), l)
	}
	submitOps(t, c, 2)
	for i := 1; i < 4; i++ {
		sameApplied(t, c, l, i)
	}
	// The removed replica still serves repair to a member catching up.
	q := wire.RequestPreparesHeader{Replica: 1, Group: 5, FromOp: 1, ToOp: 3, Nonce: wire.U128{Lo: 1}}
	head := make([]byte, wire.HeaderSize)
	q.Encode(wire.HeaderOf(head))
	c.reps[0].Step(head)
	served := 0
	for _, e := range c.reps[0].Ready().Send {
		if wire.HeaderOf(e.Head).Command() == wire.CmdRepairPrepare {
			served++
		}
	}
	if served != 3 {
		t.Fatalf("removed replica served %d prepares, want 3", served)
	}
}

// S4 and S3: a backup that misses the last heartbeat of the old view
// stays in the old epoch; the new epoch's frames make it transfer, and it
// follows the new epoch with the same log.
func TestLaggardCatchesUpAcrossTheEpoch(t *testing.T) {
	c := newGrowCluster(3, 3)
	submitOps(t, c, 2)
	c.lose = func(e Envelope) bool {
		h := wire.HeaderOf(e.Head)
		return e.To == 2 && h.Command() == wire.CmdCommit && EpochOf(h.View()) == 0
	}
	if err := c.reps[0].Reconfigure(0b110, 1); err != nil { // and remove the primary
		t.Fatal(err)
	}
	c.settle()
	if c.reps[2].Epoch() != 0 {
		t.Fatalf("replica 2 got the epoch anyway")
	}
	c.lose = nil
	c.run(300)
	if r := c.reps[2]; r.Epoch() != 1 || r.Status() != StatusNormal {
		t.Fatalf("laggard: epoch %d %s", r.Epoch(), r.Status())
	}
	submitOps(t, c, 2)
	c.run(60)
	sameApplied(t, c, 1, 2)
	if c.reps[2].CommitMin() != c.reps[1].CommitMin() {
		t.Fatalf("laggard at %d, leader at %d", c.reps[2].CommitMin(), c.reps[1].CommitMin())
	}
}

// S5: a learner whose primary goes silent probes; it never starts a view
// change (its vote would count nowhere, and its view number would lead
// the voters' elections astray).
func TestLearnerNeverElects(t *testing.T) {
	c := newGrowCluster(5, 3)
	submitOps(t, c, 2)
	c.down = map[uint8]bool{4: true} // learner 4 away: R2 waits, 3 stays a learner
	if err := c.reps[0].Reconfigure(0b11111, 1); err != nil {
		t.Fatal(err)
	}
	c.settle()
	c.run(400) // learner 3 transfers, probes and follows
	if c.reps[3].Status() != StatusNormal || !c.reps[3].Learner() {
		t.Fatalf("learner %s, learner %v", c.reps[3].Status(), c.reps[3].Learner())
	}
	c.down = map[uint8]bool{0: true, 1: true, 2: true, 4: true}
	for range 3000 {
		c.reps[3].Tick()
		c.settle()
		if c.reps[3].Status() == StatusViewChange {
			t.Fatalf("a learner started a view change")
		}
	}
}

// S2: a recovered replica takes its roster from the durable state and
// computes primaries with it.
func TestRecoveredRosterPicksThePrimary(t *testing.T) {
	ro := Roster{Epoch: 1, Voters: 0b1010, Target: 0b1010}
	r := New(Config{Replica: 3, ReplicaCount: 4, Group: 5})
	r.Recover(Recovery{View: FirstView(1) + 1, LogView: FirstView(1), Commit: 0, Roster: &ro})
	if r.Primary() != 3 || r.Roster() != ro || r.Removed() {
		t.Fatalf("primary %d roster %v", r.Primary(), r.Roster())
	}
	rd := r.Ready()
	if rd.State != nil && rd.State.Roster != ro {
		t.Fatalf("state roster %v", rd.State.Roster)
	}
	gone := New(Config{Replica: 0, ReplicaCount: 4, Group: 5})
	gone.Recover(Recovery{View: FirstView(1), LogView: FirstView(1), Roster: &ro, Removed: true})
	if !gone.Removed() {
		t.Fatal("a replica restarted removed must stay removed")
	}
	// S6: a joiner that installed a state from before the epoch naming it
	// is not removed: the epoch that adds it must still reach it.
	joiner := New(Config{Replica: 0, ReplicaCount: 4, Group: 5})
	joiner.Recover(Recovery{View: FirstView(1), LogView: FirstView(1), Roster: &ro})
	if joiner.Removed() || joiner.Member() {
		t.Fatal("a joiner not named yet is neither removed nor a member")
	}
	s := wire.CommitHeader{View: FirstView(2), Replica: 1, Group: 5, Commit: 9}
	head := make([]byte, wire.HeaderSize)
	s.Encode(wire.HeaderOf(head))
	joiner.Step(head)
	if joiner.NeedTransfer != 1 {
		t.Fatalf("a joiner hearing a newer epoch must transfer (need %d)", joiner.NeedTransfer)
	}
}

// ReconfigureWith: the shell's trailer (the metadata group's addresses)
// rides R1, and the core sends it again with the R2 it proposes itself.
func TestRosterTrailerRidesBothSteps(t *testing.T) {
	c := newGrowCluster(4, 3)
	submitOps(t, c, 2)
	if err := c.reps[0].ReconfigureWith(0b1110, []byte("addresses"), 1); err != nil {
		t.Fatal(err)
	}
	c.settle()
	c.run(400)
	var rs []Roster
	for _, cm := range c.committed[1] {
		if ro, ok := RosterOf(cm.Frame); ok {
			rs = append(rs, ro)
			if string(RosterTrailer(cm.Frame)) != "addresses" {
				t.Fatalf("R of epoch %d carries %q", ro.Epoch, RosterTrailer(cm.Frame))
			}
		}
	}
	if len(rs) != 2 || rs[0].Learners != 0b1000 || rs[1].Voters != 0b1110 || !c.reps[0].Removed() {
		t.Fatalf("rosters %v, replica 0 removed %v", rs, c.reps[0].Removed())
	}
}

// A node alone is a cluster of one (doc.go), and grows like any other:
// 1 -> 3, the two joiners transfer, learn and are promoted.
func TestGrowOneToThree(t *testing.T) {
	c := newGrowCluster(3, 1)
	submitOps(t, c, 3)
	if c.reps[0].CommitMin() != 3 {
		t.Fatalf("the single node commits alone: %d", c.reps[0].CommitMin())
	}
	if err := c.reps[0].Reconfigure(0b111, 1); err != nil {
		t.Fatal(err)
	}
	c.settle()
	c.run(600)
	submitOps(t, c, 2)
	c.run(100)
	for i, r := range c.reps {
		if ro := r.Roster(); ro.Voters != 0b111 || ro.Changing() || r.CommitMin() != c.reps[c.leaderIndex()].CommitMin() {
			t.Fatalf("replica %d: %v commit %d", i, ro, r.CommitMin())
		}
		sameApplied(t, c, c.leaderIndex(), i)
	}
}

// S6: a removed replica answers a frame of the epoch it left with the
// hint of S3: it may be the only one that applied the R its old group
// needs.
func TestRemovedReplicaHintsOldEpochFrames(t *testing.T) {
	c := newGrowCluster(3, 3)
	submitOps(t, c, 2)
	if err := c.reps[0].Reconfigure(0b110, 1); err != nil {
		t.Fatal(err)
	}
	c.settle()
	r := c.reps[0]
	if !r.Removed() {
		t.Fatal("replica 0 is not removed")
	}
	s := wire.StartViewChangeHeader{View: 1, Replica: 2, Group: 5}
	head := make([]byte, wire.HeaderSize)
	s.Encode(wire.HeaderOf(head))
	r.Step(head)
	rd := r.Ready()
	if len(rd.Send) != 1 || rd.Send[0].To != 2 || EpochOf(wire.HeaderOf(rd.Send[0].Head).View()) != 1 {
		t.Fatalf("removed replica's answer: %d sends", len(rd.Send))
	}
}

// S1 across a view change: the primary dies with R prepared on the
// backups but not committed; the primary-elect's merged log holds R, so
// it admits nothing above it, commits R, and the next epoch opens.
func TestMergedReconfigurationStopsTheNextPrimary(t *testing.T) {
	c := newGrowCluster(3, 3)
	submitOps(t, c, 2)
	c.lose = func(e Envelope) bool {
		h := wire.HeaderOf(e.Head)
		return e.To == 0 && h.Command() == wire.CmdPrepareOk
	}
	if err := c.reps[0].Reconfigure(0b111, 1); err != nil || c.reps[0].Op() != 2 {
		t.Fatalf("the current roster is no change: %v, op %d", err, c.reps[0].Op())
	}
	if err := c.reps[0].Reconfigure(0b110, 1); err != nil {
		t.Fatal(err)
	}
	c.settle()
	if c.reps[0].CommitMin() != 2 || c.reps[1].Op() != 3 {
		t.Fatalf("R must be held by the backups, uncommitted: commit %d, backup op %d", c.reps[0].CommitMin(), c.reps[1].Op())
	}
	c.down = map[uint8]bool{0: true}
	c.lose = func(e Envelope) bool { // every PrepareOk lost: the next primary cannot commit R yet
		return wire.HeaderOf(e.Head).Command() == wire.CmdPrepareOk
	}
	l := -1
	for i := 0; i < 2000 && l < 0; i++ {
		c.run(1)
		l = c.leaderIndex()
	}
	if l < 0 || c.reps[l].Epoch() != 0 || c.reps[l].CommitMin() != 2 {
		t.Fatalf("no epoch-0 primary-elect with R pending (leader %d)", l)
	}
	err := c.reps[l].Submit(Request{Client: wire.U128{Lo: 7}, Request: 9, Operation: wire.OpCreateStream, Frame: frameWith("x")}, 5)
	if !errors.Is(err, ErrBusy) {
		t.Fatalf("the primary of view %d admitted above the merged R: %v", c.reps[l].View(), err)
	}
	c.lose = nil
	c.run(200)
	l = c.leaderIndex()
	if l < 0 || c.reps[l].Epoch() != 1 || c.reps[l].CommitMin() != 3 {
		t.Fatalf("no epoch 1 leader at commit 3 (leader %d)", l)
	}
}

// RenewEpoch (a replica id moved to a new address) commits an R with the
// same members and the new trailer; every replica enters the epoch, the
// old primary of that view leads it, and writes go on.
func TestRenewEpochKeepsTheMembers(t *testing.T) {
	c := newGrowCluster(3, 3)
	submitOps(t, c, 2)
	if err := c.reps[1].RenewEpoch([]byte("x"), 1); !errors.Is(err, ErrNotPrimary) {
		t.Fatalf("a backup renews: %v", err)
	}
	if err := c.reps[0].RenewEpoch([]byte("moved"), 1); err != nil {
		t.Fatal(err)
	}
	if err := c.reps[0].RenewEpoch([]byte("again"), 1); !errors.Is(err, ErrReconfiguring) {
		t.Fatalf("a second renewal in flight: %v", err)
	}
	c.settle()
	c.run(100)
	for i, r := range c.reps {
		if ro := r.Roster(); ro.Epoch != 1 || ro.Voters != 0b111 || ro.Learners != 0 || r.Removed() {
			t.Fatalf("replica %d: roster %v removed %v", i, ro, r.Removed())
		}
	}
	var trailer string
	for _, cm := range c.committed[2] {
		if _, ok := RosterOf(cm.Frame); ok {
			trailer = string(RosterTrailer(cm.Frame))
		}
	}
	if trailer != "moved" {
		t.Fatalf("the committed R carries %q", trailer)
	}
	submitOps(t, c, 2)
	if l := c.leaderIndex(); l < 0 || EpochOf(c.reps[l].View()) != 1 {
		t.Fatalf("leader %d after the renewal", l)
	}
}

// HandOver (issue 23's leadership moves) is a view change to the first
// view whose primary is the target: the target leads it, nothing
// committed is lost, writes go on; a backup cannot hand over, nor can
// the primary to a learner or a stranger.
func TestHandOverMovesThePrimary(t *testing.T) {
	c := newClusterWith(5, func(cfg *Config) { cfg.Metadata = true })
	submitOps(t, c, 3)
	if err := c.reps[1].HandOver(3); !errors.Is(err, ErrNotPrimary) {
		t.Fatalf("a backup hands over: %v", err)
	}
	if err := c.reps[0].HandOver(7); !errors.Is(err, ErrNotVoter) {
		t.Fatalf("to a stranger: %v", err)
	}
	if err := c.reps[0].HandOver(3); err != nil {
		t.Fatal(err)
	}
	c.settle()
	c.run(50)
	l := c.leaderIndex()
	if l != 3 || c.reps[3].View() != 3 {
		t.Fatalf("leader %d in view %d, want replica 3 in view 3", l, c.reps[l].View())
	}
	submitOps(t, c, 2)
	c.run(100) // backups learn the commit point from the heartbeat
	for i, r := range c.reps {
		if r.CommitMin() < 5 {
			t.Fatalf("replica %d committed %d of 5", i, r.CommitMin())
		}
	}
	for i := range c.committed[0][:3] {
		if string(c.committed[3][i].Frame) != string(c.committed[0][i].Frame) {
			t.Fatalf("op %d differs after the hand-over", i+1)
		}
	}
}
