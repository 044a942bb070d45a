package vsr

import (
	"testing"

	"iggynode/wire"
)

// Core bugs the simulator's placement runs found (cmd/sim --placement 3
// --replicas 5 --groups 6 --handover 0.01: partition groups on 3 of 5
// nodes, moving replicas between nodes, under every fault).

// A quiet backup that is away (a paused process, its node still live)
// while a move removes it misses the R and S4's last heartbeat, and
// comes back a quiet backup of the old epoch whose primary's node is
// alive: nothing else ever reaches it. The new epoch's primary hints it
// (reconfig.go, hintDeparted) until it answers from the new epoch, so it
// transfers, says it is removed, and the group goes quiet again
// (simulator seed 1851 of --placement 3 --replicas 5 --groups 6
// --handover 0.01).
func TestRemovedWhileAwayLearnsItIsRemoved(t *testing.T) {
	ro := DefaultRoster(3)
	c := newClusterWith(4, func(cfg *Config) {
		cfg.ReplicaCount, cfg.Roster, cfg.Metadata, cfg.Quiesce = 3, &ro, true, true
	})
	submitOps(t, c, 2)
	tickUntilQuiet(t, c, 2000)
	c.down = map[uint8]bool{2: true} // paused with its memory
	if err := c.reps[0].Reconfigure(0b1011, 2); err != nil {
		t.Fatal(err)
	}
	c.settle()
	c.run(600)
	if got := c.reps[c.leaderIndex()].Roster(); got.Voters != 0b1011 || got.Changing() {
		t.Fatalf("setup: the move did not finish: %v", got)
	}
	if r := c.reps[2]; r.Epoch() != 0 || !r.Quiet() {
		t.Fatalf("setup: replica 2 in epoch %d, quiet %v", r.Epoch(), r.Quiet())
	}
	delete(c.down, 2)
	c.run(600)
	if r := c.reps[2]; !r.Removed() || r.Epoch() != 2 {
		t.Fatalf("replica 2 back: epoch %d, removed %v, %s, quiet %v", r.Epoch(), r.Removed(), r.Status(), r.Quiet())
	}
	l := c.leaderIndex()
	if l < 0 || !c.reps[l].Quiet() || c.reps[l].departed != 0 {
		t.Fatalf("the primary (replica %d) is not quiet again", l)
	}
}

// A backup holds a committed op it repaired, proven for an older view's
// log only, and adopts a view whose StartView has a blank there (the new
// primary restarted from its segments and kept no frame of that op) and
// ends at it: nothing can prove the entry, no op above comes while the
// group is idle, and the commit walk stays below commit_max for good (a
// learner that never caught up, so its move never finished: simulator
// seed 7019). maybeRepair drops it and asks the primary again.
func TestCommittedRepairedOpNothingCanProveIsAskedAgain(t *testing.T) {
	c := newCluster(3)
	for op := uint64(1); op <= 3; op++ {
		submit(t, c.reps[0], "op", 100+op, op)
		c.settle()
	}
	two, three := c.committed[0][1].Frame, c.committed[0][2].Frame
	p2, p3 := wire.HeaderOf(two).Prepare(), wire.HeaderOf(three).Prepare()
	r := New(Config{Group: 5, Replica: 2, ReplicaCount: 3, Seed: 3})
	r.Recover(Recovery{View: 4, LogView: 4, CommitMax: 3, Commit: 2, CommitChecksum: p2.Checksum, CommitTimestamp: p2.Timestamp})
	r.status, r.ceded = StatusNormal, false // view 4 adopted, its StartView naming no op (a blank at 3)
	r.log[3] = &entry{frame: append([]byte(nil), three...), hdr: p3, journaled: true, repaired: true, emitted: true, proven: true, provenView: 3}
	r.sequencer, r.lastChecksum, r.knownHead = 3, p3.Checksum, 3
	r.Ready()
	var asked *wire.RequestPreparesHeader
	truncated := uint64(0)
	for range r.cfg.RepairRetryTicks + 1 {
		r.Tick()
		rd := r.Ready()
		if rd.Truncate != 0 {
			truncated = rd.Truncate
		}
		for _, e := range rd.Send {
			if h := wire.HeaderOf(e.Head); h.Command() == wire.CmdRequestPrepares {
				q, _ := wire.DecodeRequestPreparesHeader(h)
				asked = &q
			}
		}
		for _, f := range rd.Journal {
			r.Journaled(wire.HeaderOf(f).Prepare().Op, nil)
		}
	}
	if asked == nil || asked.FromOp != 3 || truncated != 3 {
		t.Fatalf("commit %d of %d: truncated from %d, asked %+v", r.CommitMin(), r.CommitMax(), truncated, asked)
	}
}

// 6.7 step 5 with 2.5 rule 3: a primary whose head came by state
// transfer (its identity unknown) builds the next op on a zero parent,
// the unsealed link. The merge's chain check took that for a broken
// chain below a committed op a DVC still names, so every merge of the
// group deadlocked (simulator seed 3515).
func TestMergeAcceptsTheUnsealedLinkOfAZeroParent(t *testing.T) {
	l := newLog(1, 3)
	l[4] = sealPrepare(4, wire.U128{}, 2_000_000, 3, 1)
	m, out := merge([]*dvcRecord{
		dvc(0, 5, 4, 3, l.without(3)),
		dvc(2, 5, 4, 3, l),
	}, 3)
	if out != mergeReady || m.opHead != 4 {
		t.Fatalf("merge %v (%+v)", out, m)
	}
	if h := m.headers[4]; h.Checksum() != l.id(4) {
		t.Fatal("op 4 is not the canonical header")
	}
}
