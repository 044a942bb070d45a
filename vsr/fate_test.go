package vsr

import (
	"slices"
	"testing"

	"iggynode/wire"
)

// losePrepareOks makes the network lose every PrepareOk: the primary's
// pipeline stays uncommitted while the backups hold its prepares.
func losePrepareOks(e Envelope) bool { return wire.HeaderOf(e.Head).Command() == wire.CmdPrepareOk }

func tagsOf(cs []Committed) []any {
	var out []any
	for _, c := range cs {
		if c.Tag != nil {
			out = append(out, c.Tag)
		}
	}
	return out
}

// A primary that hands over with a prepare in flight: without AwaitFate
// its client hears "outcome unknown" (and a partition client's replay
// would store it twice); with it, the former primary answers the request
// when the next view commits it, exactly once.
func TestAwaitFateAnswersAPrepareTheNextViewCommits(t *testing.T) {
	for _, await := range []bool{false, true} {
		c := newClusterWith(3, func(cfg *Config) { cfg.AwaitFate = await })
		submitOps(t, c, 1)
		c.lose = losePrepareOks
		submit(t, c.reps[0], "in flight", 2, "t")
		c.settle()
		if n := len(c.committed[0]); n != 1 {
			t.Fatalf("await %v: the primary committed %d ops with its PrepareOks lost", await, n)
		}
		c.lose = nil
		if err := c.reps[0].HandOver(1); err != nil {
			t.Fatal(err)
		}
		c.settle()
		c.run(100)
		if l := c.leaderIndex(); l != 1 || c.reps[0].CommitMin() != 2 {
			t.Fatalf("await %v: leader %d, former primary at commit %d", await, l, c.reps[0].CommitMin())
		}
		answered, canceled := tagsOf(c.committed[0]), c.canceled[0]
		if await {
			if !slices.Equal(answered, []any{"t"}) || len(canceled) != 0 || len(c.rejected[0]) != 0 || c.reps[0].Awaiting() != 0 {
				t.Fatalf("await: answered %v canceled %v rejected %v awaiting %d, want the commit to answer t",
					answered, canceled, c.rejected[0], c.reps[0].Awaiting())
			}
		} else if len(answered) != 0 || !slices.Equal(canceled, []any{"t"}) {
			t.Fatalf("no await: answered %v canceled %v, want t canceled", answered, canceled)
		}
	}
}

// A prepare only the old primary held is replaced by the next view: when
// another op commits at its number, the request is rejected (not
// committed, safe to re-issue), never answered with the other's result.
func TestAwaitFateRejectsAPrepareTheNextViewReplaced(t *testing.T) {
	c := newClusterWith(3, func(cfg *Config) { cfg.AwaitFate = true })
	submitOps(t, c, 1)
	c.lose = func(e Envelope) bool { return e.To != 0 && wire.HeaderOf(e.Head).Command() == wire.CmdPrepare }
	submit(t, c.reps[0], "only here", 2, "t")
	c.settle()
	c.lose = nil
	c.down = map[uint8]bool{0: true}
	c.run(1500) // the backups time the primary out and elect replica 1
	l := c.leaderIndex()
	if l < 1 {
		t.Fatalf("no new leader (%d)", l)
	}
	submit(t, c.reps[l], "the next view's op 2", 3, "other")
	c.settle()
	c.down = nil
	c.run(1000)
	if c.reps[0].CommitMin() < 2 {
		t.Fatalf("the former primary did not catch up: commit %d", c.reps[0].CommitMin())
	}
	if a := tagsOf(c.committed[0]); len(a) != 0 || !slices.Equal(c.rejected[0], []any{"t"}) || len(c.canceled[0]) != 0 {
		t.Fatalf("answered %v rejected %v canceled %v, want t rejected", a, c.rejected[0], c.canceled[0])
	}
}

// A wait is bounded: with no commit at its op, the request's outcome is
// given up as unknown after FateTicks, and a removed replica gives up at
// once.
func TestAwaitFateGivesUpAfterFateTicks(t *testing.T) {
	c := newClusterWith(3, func(cfg *Config) { cfg.AwaitFate, cfg.FateTicks = true, 30 })
	submitOps(t, c, 1)
	c.lose = func(e Envelope) bool { return wire.HeaderOf(e.Head).Command() == wire.CmdPrepare || losePrepareOks(e) }
	submit(t, c.reps[0], "stuck", 2, "t")
	c.settle()
	c.down = map[uint8]bool{1: true, 2: true} // no next view can form
	c.reps[0].primaryGone()                   // as a silent-primary timeout would
	c.settle()
	if c.reps[0].Awaiting() != 1 || c.reps[0].tickWork() == 0 {
		t.Fatalf("awaiting %d, tick work %d: the wait must keep the clock", c.reps[0].Awaiting(), c.reps[0].tickWork())
	}
	for range 29 {
		c.reps[0].Tick()
	}
	c.settle()
	if len(c.canceled[0]) != 0 {
		t.Fatalf("canceled %v before FateTicks", c.canceled[0])
	}
	c.reps[0].Tick()
	c.settle()
	if !slices.Equal(c.canceled[0], []any{"t"}) || c.reps[0].Awaiting() != 0 {
		t.Fatalf("canceled %v awaiting %d after FateTicks", c.canceled[0], c.reps[0].Awaiting())
	}
}

// hintOfEpoch is a primary's S3 hint (a Commit with counter 0) from
// replica `from` in the first view of epoch, or a heartbeat (counter 1).
func hintOfEpoch(epoch uint32, from uint8, counter uint64) []byte {
	head := make([]byte, wire.HeaderSize)
	c := wire.CommitHeader{Cluster: wire.U128{Lo: 7}, View: FirstView(epoch), Replica: from, TimestampMonotonic: counter,
		Commit: 10, Group: 5}
	c.Encode(wire.HeaderOf(head))
	return head
}

// A replica restarted as removed (Config.Removed: a moved-out partition
// without its data) does not fetch the group's state when a later
// epoch's primary hints it, only when a frame names it again; a joiner
// (not removed) fetches at the hint.
func TestRemovedReplicaIgnoresHintsOfLaterEpochs(t *testing.T) {
	ro := Roster{Epoch: 1, Voters: 0b1110, Target: 0b1110} // replica 0 left in epoch 1
	for _, removed := range []bool{true, false} {
		r := New(Config{Cluster: wire.U128{Lo: 7}, Group: 5, Replica: 0, ReplicaCount: 4, Roster: &ro, Removed: removed})
		if r.Removed() != removed {
			t.Fatalf("Removed() = %v, want %v", r.Removed(), removed)
		}
		r.Step(hintOfEpoch(3, 1, 0))
		if fetch := r.NeedTransfer >= 0; fetch == removed {
			t.Fatalf("removed %v: a hint of epoch 3 sets NeedTransfer %d", removed, r.NeedTransfer)
		}
		if removed {
			r.Step(hintOfEpoch(3, 1, 1)) // a heartbeat: only members get those
			if r.NeedTransfer != 1 {
				t.Fatalf("a heartbeat of epoch 3 to a removed replica: NeedTransfer %d, want 1", r.NeedTransfer)
			}
		}
	}
}

// A replica the shell stops for good gives up every request it holds,
// those in the pipeline and those queued behind it, in order: none is left
// unanswered, and none is answered again when its op commits later.
func TestAbandonCancelsEveryHeldRequest(t *testing.T) {
	c := newClusterWith(3, func(cfg *Config) { cfg.PrepareQueueDepth = 2 })
	submitOps(t, c, 1)
	c.lose = losePrepareOks
	for i, tag := range []string{"a", "b", "c"} { // c waits for a pipeline slot
		submit(t, c.reps[0], tag, uint64(10+i), tag)
	}
	c.settle()
	if len(c.canceled[0]) != 0 || len(tagsOf(c.committed[0])) != 0 {
		t.Fatal("answered before the abandon")
	}
	c.reps[0].Abandon()
	c.settle()
	if !slices.Equal(c.canceled[0], []any{"a", "b", "c"}) {
		t.Fatalf("canceled %v, want a b c", c.canceled[0])
	}
	c.lose = nil
	c.run(200)
	if c.reps[0].CommitMin() < 4 {
		t.Fatalf("the ops did not commit after all: commit %d", c.reps[0].CommitMin())
	}
	if a := tagsOf(c.committed[0]); len(a) != 0 || len(c.canceled[0]) != 3 {
		t.Fatalf("answered %v canceled %v after the commit", a, c.canceled[0])
	}
}
