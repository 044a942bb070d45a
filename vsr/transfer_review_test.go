package vsr

import (
	"bytes"
	"testing"

	"iggynode/wire"
)

// Review tests for state transfer as the core sees it (replica-plane.md
// 7.5-7.9, 9.5): NeedTransfer, SetTransferring and Installed, driven by a
// test standing in for the shell (the actor shell's checks are quoted
// where they matter). Each test names the rule it checks and fails on
// 9004f01.

// startTransferIfNeeded is the shell's maybeStart: a transfer child is
// spawned against NeedTransfer and the core marked transferring.
func startTransferIfNeeded(r *Replica) bool {
	if r.NeedTransfer < 0 || r.Transferring() {
		return false
	}
	r.SetTransferring(true)
	return true
}

// finishTransfer is the shell's end of a complete transfer of the state at
// commitOp: installed if the core's InstallAllowed lets it, else
// abandoned. It reports whether it installed.
func finishTransfer(r *Replica, commitOp, commitMax uint64) bool {
	if !r.InstallAllowed(commitOp) {
		r.SetTransferring(false)
		return false
	}
	r.Installed(commitOp, commitMax)
	return true
}

// serveTransfers stands in for the shells of every live replica after
// each step: a replica whose core asks for a transfer gets, at once, the
// offer its peer would make (a caught-up primary's commit point, as
// metadataOffer and partitionOffer build it) or a refusal.
func (c *cluster) serveTransfers() {
	for i, r := range c.reps {
		if c.down[uint8(i)] || !startTransferIfNeeded(r) {
			continue
		}
		p := c.reps[r.NeedTransfer]
		if c.down[uint8(r.NeedTransfer)] || !p.CaughtUpPrimary() {
			r.SetTransferring(false)
			continue
		}
		if finishTransfer(r, p.CommitMin(), p.CommitMax()) {
			r.SetOffsetFrontier(p.CommitMin()) // one message per op in these tests
		}
	}
	c.settle()
}

// 7.6 ("while not Idle the replica sends no PrepareOk ... and does not run
// its commit walk"), 7.9.4 steps 4-7, 6.9 and 9.5 rule 5 (SAFETY and
// LIVENESS): a metadata transfer is not abandoned when the view changes,
// and nothing stops the replica running it from becoming primary-elect:
// it repairs the merged log from a DVC source whose journal still reaches
// its gap (journal floors differ between replicas: each checkpoints
// relative to its own last snapshot, and a restart or an install moves
// it) and starts the view, still transferring, so commit_min stays behind
// (commitJournal returns early). When the last chunk then arrives (the old
// primary is cut from replica 2 only, so it keeps serving the cached
// offer to replica 1; the harness, which cannot cut one link, takes it
// out of the consensus instead), the metadata shell installs it (installMetadata only checks
// op > commit_min; unlike installPartition it never compares the offer's
// view with the local one) and Installed, which checks neither status nor
// role, clears the new primary's log: the merged ops above the snapshot,
// committed in view 0, are dropped from the primary's memory and (the
// shell truncates from op+1) from its journal. The primary is left with
// commit_min below commit_max and nothing to commit them from (a primary
// never repairs), and the op numbers it prepares next are ones the
// backups hold committed with another identity, so they never
// acknowledge them: the cluster is stuck with a quorum up and the network
// healed. The shell should refuse a metadata install whose offer view is
// below the local view (as it does for partitions), abandon a transfer
// when the replica leaves the view it started in, and Installed should
// refuse to run on a primary or outside Normal.
func TestTransferCompletingOnTheNewPrimaryDoesNotDropCommittedOps(t *testing.T) {
	c := newClusterWith(3, func(cfg *Config) {
		cfg.Metadata = true
		if cfg.Replica == 0 {
			cfg.RetainOps = 2 // replica 0 compacted below what replica 1 lacks
		}
	})
	c.down = map[uint8]bool{1: true}
	for op := uint64(1); op <= 10; op++ {
		submit(t, c.reps[0], "op", 100+op, op)
		c.settle()
		c.ticks(c.reps[0].cfg.PrepareRetransmitTicks + 1) // replica 2 hears it from the retransmission
	}
	if c.reps[0].CommitMin() != 10 {
		t.Fatalf("setup: primary commit %d", c.reps[0].CommitMin())
	}
	delete(c.down, 1)
	r1 := c.reps[1]
	c.tickUntil(t, 2000, "replica 1 needs a transfer from replica 0", func() bool { return r1.NeedTransfer == 0 })
	if !startTransferIfNeeded(r1) {
		t.Fatal("setup: no transfer started")
	}
	// Replica 0 builds its offer now: commit_op = its commit_min.
	offerOp, offerMax, offerView := c.reps[0].CommitMin(), c.reps[0].CommitMax(), c.reps[0].View()
	if offerOp != 10 {
		t.Fatalf("setup: offer at op %d", offerOp)
	}
	// Ops 11 and 12 commit on replicas 0 and 2 while replica 1 transfers.
	for op := uint64(11); op <= 12; op++ {
		submit(t, c.reps[0], "late", 100+op, op)
		c.settle()
	}
	c.ticks(c.reps[0].cfg.CommitBroadcastTicks + 1)
	if c.reps[2].CommitMin() != 12 {
		t.Fatalf("setup: replica 2 commit %d", c.reps[2].CommitMin())
	}

	// Replica 0 is cut from the consensus of replicas 1 and 2; they elect
	// replica 1 (view 1), which repairs the merged log from replica 2.
	c.down = map[uint8]bool{0: true}
	c.tickUntil(t, 5000, "replica 1 leads view 1", func() bool { return c.leading(1) == 1 })
	// The transfer's last chunk arrives (offer of view offerView, which
	// installMetadata never compares with the local view), unless the core
	// abandoned the transfer when it left view 0 (then the shell drops it).
	_ = offerView
	if r1.Transferring() {
		finishTransfer(r1, offerOp, offerMax)
	}
	c.settle()
	delete(c.down, 0)
	c.ticks(c.reps[0].cfg.CommitBroadcastTicks + 1)

	submit(t, r1, "after", 500, "after")
	c.settle()
	for i := 0; i < 3000 && r1.CommitMax() < 13; i++ {
		for _, r := range c.reps {
			r.Tick()
		}
		c.settle()
	}
	for op := uint64(11); op <= 12; op++ {
		if got := appliedAt(c, 1, op); !bytes.Equal(got, []byte("late")) {
			t.Errorf("the new primary never applied op %d, committed in view 0 (applied %q; commit %d/%d, op %d)",
				op, got, r1.CommitMin(), r1.CommitMax(), r1.Op())
		}
	}
	if r1.CommitMax() < 13 {
		t.Fatalf("a request submitted to the new primary never commits: commit %d/%d, op %d (drops at replica 2: %v)",
			r1.CommitMin(), r1.CommitMax(), r1.Op(), c.reps[2].Dropped)
	}
	if h := wire.HeaderOf(c.committed[1][len(c.committed[1])-1].Frame).Prepare(); h.Op != 13 {
		t.Fatalf("the new request committed as op %d", h.Op)
	}
}

// 7.9.4 step 7 and 7.2 rules 2 and 4 (LIVENESS): after an install the
// core opens the tail repair against the transfer peer and never moves
// it: the stall retry re-sends to the same peer, and only a view change
// closes the session. For a metadata transfer that outlived a view change
// (installMetadata has no view check) that peer is no longer the primary;
// if it crashes right after serving the last chunk, the backup asks a dead
// replica for the tail forever while the primary, alive and holding every
// op, keeps it in the view with its heartbeats. Installed should repair
// from the primary of the current view (or the shell should refuse an
// offer of an older view, as installPartition does), and a session whose
// peer never answers should move to the primary.
func TestTailRepairAfterAnInstallDoesNotWaitForADeadTransferPeer(t *testing.T) {
	c := newClusterWith(3, func(cfg *Config) {
		cfg.Metadata = true
		if cfg.Replica == 0 {
			cfg.RetainOps = 2
		}
	})
	c.down = map[uint8]bool{2: true}
	for op := uint64(1); op <= 10; op++ {
		submit(t, c.reps[0], "op", 100+op, op)
		c.settle()
	}
	delete(c.down, 2)
	r2 := c.reps[2]
	c.tickUntil(t, 2000, "replica 2 needs a transfer from replica 0", func() bool { return r2.NeedTransfer == 0 })
	startTransferIfNeeded(r2)
	offerOp, offerMax := c.reps[0].CommitMin(), c.reps[0].CommitMax()
	for op := uint64(11); op <= 12; op++ { // committed by replicas 0 and 1 while replica 2 transfers
		submit(t, c.reps[0], "late", 100+op, op)
		c.settle()
	}
	if offerOp != 10 || c.reps[1].CommitMax() < 11 {
		t.Fatalf("setup: offer at %d, replica 1 commit %d", offerOp, c.reps[1].CommitMax())
	}
	// Replica 0 is cut from replica 1: replicas 1 and 2 start view 1.
	c.down = map[uint8]bool{0: true}
	c.tickUntil(t, 5000, "view 1 adopted by replica 2", func() bool {
		return c.leading(1) == 1 && r2.View() == 1 && r2.Status() == StatusNormal
	})
	// Replica 0 serves the last chunk to replica 2, then crashes for good
	// (unless the core abandoned the transfer when it left view 0).
	if r2.Transferring() {
		finishTransfer(r2, offerOp, offerMax)
	}
	c.settle()
	target := c.reps[1].CommitMax()
	for i := 0; i < 20000 && r2.CommitMin() < target; i++ {
		for j, r := range c.reps {
			if !c.down[uint8(j)] {
				r.Tick()
			}
		}
		c.settle()
	}
	if r2.CommitMin() < target {
		t.Fatalf("replica 2 stays at commit %d below the primary's %d for 200 s: its repair session asks replica %d (down) forever",
			r2.CommitMin(), target, r2.repair.peer)
	}
	for _, x := range c.committed[2] {
		if !bytes.Equal(appliedAt(c, 1, x.Op), x.Frame[wire.HeaderSize:]) {
			t.Fatalf("replica 2 applied another op %d than the primary", x.Op)
		}
	}
}

// 7.3 partition server rules 3-5 with 7.7 rule 7e (LIVENESS): the server's
// "oldest op still held" is the first op of its ring of committed
// prepares (oldestHeld), and neither Installed nor the floor jump resets
// that ring. A replica that installed a partition transfer at op c still
// holds the ring of ops it committed long before; until it commits an op
// of its own (keep restarts the ring), it answers a RequestPrepares for an
// op between that ring and c with RepairDone and no RangeEvicted, so the
// requester never learns it must transfer (7.5: the floor comes only
// from RangeEvicted) and asks again at every stall retry. When that
// replica is the primary and the requester is the only other replica up,
// nothing commits to restart the ring: the partition is stuck with a
// quorum up. Here replica 1 installs at op 10 and becomes primary when
// replica 0 dies; replica 2, restarted with its segments at op 9, can
// never obtain op 10. Installed (and applyFloor) should drop the retained
// ring, so oldestHeld is commit_min + 1 and RangeEvicted is answered.
func TestInstalledPrimaryAnswersRangeEvictedBelowItsInstall(t *testing.T) {
	c := newClusterWith(3, func(cfg *Config) { cfg.RetainOps = 2 })
	c.commitBatches(t, 1, 3)
	c.ticks(c.reps[0].cfg.CommitBroadcastTicks + 1)
	r1 := c.reps[1]
	if r1.CommitMin() != 3 {
		t.Fatalf("setup: replica 1 commit %d", r1.CommitMin())
	}
	r1.SetOffsetFrontier(3)
	// Replica 1 is away while ops 4..10 commit on replicas 0 and 2.
	c.down = map[uint8]bool{1: true}
	for op := uint64(4); op <= 10; op++ {
		submitBatch(t, c.reps[0], op-1, 100+op)
		c.settle()
		c.ticks(c.reps[0].cfg.PrepareRetransmitTicks + 1)
	}
	c.ticks(c.reps[0].cfg.CommitBroadcastTicks + 1)
	if c.reps[0].CommitMin() != 10 || c.reps[2].CommitMin() != 10 {
		t.Fatalf("setup: commits %d %d", c.reps[0].CommitMin(), c.reps[2].CommitMin())
	}
	nine := wire.HeaderOf(c.committed[2][8].Frame).Prepare()
	// Back, its window does not connect to its segments (FloorRefused): it
	// transfers from replica 0 and installs the offer at op 10.
	delete(c.down, 1)
	c.tickUntil(t, 2000, "replica 1 needs a transfer", func() bool { return r1.NeedTransfer == 0 })
	startTransferIfNeeded(r1)
	if !finishTransfer(r1, c.reps[0].CommitMin(), c.reps[0].CommitMax()) {
		t.Fatal("setup: the install was refused")
	}
	r1.SetOffsetFrontier(10)
	c.settle()
	// Replica 0 dies; replica 2 restarts on its segments with op 9 applied
	// (its commit walk had not heard of op 10's commit yet).
	c.down = map[uint8]bool{0: true}
	c.reps[2] = New(Config{Group: 5, Replica: 2, ReplicaCount: 3, Seed: 3, RetainOps: 2})
	c.reps[2].Recover(Recovery{Commit: 9, CommitMax: 9, CommitChecksum: nine.Checksum, CommitTimestamp: nine.Timestamp})
	c.reps[2].SetOffsetFrontier(9)
	c.committed[2] = c.committed[2][:9]
	c.tickUntil(t, 5000, "replica 1 leads view 1", func() bool { return c.leading(1) == 1 })
	r2 := c.reps[2]
	for i := 0; i < 6000 && r2.CommitMin() < 10; i++ {
		for j, r := range c.reps {
			if !c.down[uint8(j)] {
				r.Tick()
			}
		}
		c.settle()
		c.serveTransfers()
	}
	if r2.CommitMin() < 10 {
		t.Fatalf("replica 2 never obtains op 10 from the primary that installed it (commit %d, repair sessions %d, refused %d: it was never told to transfer)",
			r2.CommitMin(), r2.Repairs, r2.RepairsRefused)
	}
}
