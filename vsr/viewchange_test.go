package vsr

import (
	"bytes"
	"testing"

	"iggynode/wire"
)

// tickUntil ticks every live replica until done holds, failing after limit
// ticks.
func (c *cluster) tickUntil(t *testing.T, limit int, what string, done func() bool) {
	t.Helper()
	for i := 0; !done(); i++ {
		if i == limit {
			t.Fatalf("%s: not within %d ticks", what, limit)
		}
		for j, r := range c.reps {
			if !c.down[uint8(j)] {
				r.Tick()
			}
		}
		c.settle()
	}
}

// leading is the replica leading view v, or -1.
func (c *cluster) leading(v uint32) int {
	for i, r := range c.reps {
		if !c.down[uint8(i)] && r.Leading() && r.View() == v {
			return i
		}
	}
	return -1
}

// sameApplied fails unless replicas a and b applied the same ops (same
// identity and body; the view byte may differ, 2.2).
func sameApplied(t *testing.T, c *cluster, a, b int) {
	t.Helper()
	n := min(len(c.committed[a]), len(c.committed[b]))
	for j := 0; j < n; j++ {
		x, y := c.committed[a][j], c.committed[b][j]
		if x.Op != y.Op || wire.HeaderOf(x.Frame).Prepare().Checksum != wire.HeaderOf(y.Frame).Prepare().Checksum ||
			!bytes.Equal(x.Frame[wire.HeaderSize:], y.Frame[wire.HeaderSize:]) {
			t.Fatalf("replicas %d and %d applied different ops at op %d", a, b, x.Op)
		}
	}
}

// 6.2 rule 1, 6.3-6.9: the primary dies; after the heartbeat timeout the
// backups elect replica 1 (view 1), it starts the view with every
// committed op, and new requests commit on it, chained to the old log.
func TestDeadPrimaryIsReplaced(t *testing.T) {
	c := newCluster(3)
	for op := uint64(1); op <= 5; op++ {
		submit(t, c.reps[0], "op", 100+op, op)
		c.settle()
	}
	c.ticks(c.reps[0].cfg.CommitBroadcastTicks + 1)
	c.down = map[uint8]bool{0: true}
	c.tickUntil(t, 2000, "a new primary", func() bool { return c.leading(1) == 1 })
	if c.reps[2].View() != 1 || c.reps[2].Status() != StatusNormal || c.reps[1].Op() != 5 {
		t.Fatalf("replica 2 %s in view %d, new primary at op %d", c.reps[2].Status(), c.reps[2].View(), c.reps[1].Op())
	}
	if c.reps[1].ViewsStarted != 1 || c.reps[2].ViewsAdopted != 1 {
		t.Fatalf("views started %d, adopted %d", c.reps[1].ViewsStarted, c.reps[2].ViewsAdopted)
	}
	submit(t, c.reps[1], "after", 200, "new")
	c.settle()
	if c.reps[1].CommitMax() != 6 {
		t.Fatalf("the new primary committed %d", c.reps[1].CommitMax())
	}
	six := c.committed[1][len(c.committed[1])-1]
	five := c.committed[0][4]
	if six.Op != 6 || six.Tag != "new" || wire.HeaderOf(six.Frame).Prepare().Parent != wire.HeaderOf(five.Frame).Prepare().Checksum {
		t.Fatalf("op 6 does not chain onto op 5: %+v", six)
	}
	sameApplied(t, c, 0, 1)
	sameApplied(t, c, 1, 2)
}

// 6.11 rule 1: an op the dead primary prepared and one backup journaled
// (its acknowledgement lost, so never committed) survives the merge and
// is committed in the new view under its original identity.
func TestUncommittedOpHeldByABackupSurvives(t *testing.T) {
	c := newCluster(3)
	submit(t, c.reps[0], "one", 100, 1)
	c.settle()
	c.lose = func(e Envelope) bool { return wire.HeaderOf(e.Head).Command() == wire.CmdPrepareOk }
	submit(t, c.reps[0], "two", 101, 2)
	c.settle()
	if c.reps[0].CommitMax() != 1 || c.reps[1].Op() != 2 {
		t.Fatalf("setup: primary commit %d, replica 1 head %d", c.reps[0].CommitMax(), c.reps[1].Op())
	}
	identity := wire.HeaderOf(c.reps[1].frameAt(2)).Prepare().Checksum
	c.lose = nil
	c.down = map[uint8]bool{0: true}
	c.tickUntil(t, 2000, "a new primary", func() bool { return c.leading(1) == 1 && c.reps[1].CommitMin() == 2 })
	got := c.committed[1][1]
	if got.Op != 2 || wire.HeaderOf(got.Frame).Prepare().Checksum != identity || !bytes.Equal(got.Frame[wire.HeaderSize:], []byte("two")) {
		t.Fatalf("op 2 was not kept: %+v", got)
	}
	c.tickUntil(t, 200, "replica 2 applies op 2", func() bool { return c.reps[2].CommitMin() == 2 })
	sameApplied(t, c, 1, 2)
}

// 6.11 rules 2-3, 6.12, and the reconciliation choice of viewchange.go:
// an op only the old primary journaled is discarded by the new view and
// its number reused; when the old primary restarts from its journal it
// probes, adopts the view, truncates its own op 2, and applies the new op
// 2 instead, never its own.
func TestRestartedOldPrimaryDiscardsItsUncommittedOp(t *testing.T) {
	c := newCluster(3)
	submit(t, c.reps[0], "one", 100, 1)
	c.settle()
	c.ticks(c.reps[0].cfg.CommitBroadcastTicks + 1)
	c.lose = func(e Envelope) bool { return wire.HeaderOf(e.Head).Command() == wire.CmdPrepare }
	submit(t, c.reps[0], "lost", 101, 2)
	c.settle()
	c.lose = nil
	oldJournal := [][]byte{c.reps[0].frameAt(2)}
	oldOne := wire.HeaderOf(c.committed[0][0].Frame).Prepare()
	c.down = map[uint8]bool{0: true}
	c.tickUntil(t, 2000, "a new primary", func() bool { return c.leading(1) == 1 })
	submit(t, c.reps[1], "new", 300, "n")
	c.settle()
	if c.reps[1].CommitMax() != 2 {
		t.Fatalf("new op 2 not committed: %d", c.reps[1].CommitMax())
	}

	// Replica 0 restarts: committed op 1, journaled op 2 above it.
	c.reps[0] = New(Config{Group: 5, Replica: 0, ReplicaCount: 3, Seed: 9})
	c.reps[0].Recover(Recovery{Commit: 1, CommitMax: 1, CommitChecksum: oldOne.Checksum, CommitTimestamp: oldOne.Timestamp, Journal: oldJournal})
	c.committed[0] = c.committed[0][:1]
	if c.reps[0].Status() != StatusRecovering || c.reps[0].Leading() {
		t.Fatalf("a restarted replica rejoins recovering: %s, leading %v", c.reps[0].Status(), c.reps[0].Leading())
	}
	delete(c.down, 0)
	c.tickUntil(t, 500, "replica 0 applies op 2", func() bool { return c.reps[0].CommitMin() == 2 })
	if truncated := c.truncated[0]; len(truncated) != 1 || truncated[0] != 2 || c.reps[0].CommitMin() != 2 || c.reps[0].View() != 1 {
		t.Fatalf("truncated %v, commit %d, view %d, drops %v", c.truncated[0], c.reps[0].CommitMin(), c.reps[0].View(), c.reps[0].Dropped)
	}
	if got := c.committed[0][1]; !bytes.Equal(got.Frame[wire.HeaderSize:], []byte("new")) {
		t.Fatalf("replica 0 applied %q as op 2", got.Frame[wire.HeaderSize:])
	}
	sameApplied(t, c, 0, 1)
}

// 6.12 rule 4: after a full-cluster restart nobody answers a probe; each
// replica elects after view_probe_attempts_max probes, the recovered logs
// meet in the merge, and the cluster commits again.
func TestFullClusterRestartElects(t *testing.T) {
	c := newCluster(3)
	for op := uint64(1); op <= 3; op++ {
		submit(t, c.reps[0], "op", 100+op, op)
		c.settle()
	}
	c.ticks(c.reps[0].cfg.CommitBroadcastTicks + 1)
	for i := range c.reps {
		last := wire.HeaderOf(c.committed[i][2].Frame).Prepare()
		c.reps[i] = New(Config{Group: 5, Replica: uint8(i), ReplicaCount: 3, Seed: uint64(i) + 20})
		c.reps[i].Recover(Recovery{Commit: 3, CommitMax: 3, CommitChecksum: last.Checksum, CommitTimestamp: last.Timestamp})
	}
	c.tickUntil(t, 3000, "a primary after a full restart", func() bool { return c.leading(c.reps[0].View()) >= 0 && c.reps[0].View() > 0 })
	l := c.leading(c.reps[0].View())
	submit(t, c.reps[l], "again", 500, "a")
	c.settle()
	if c.reps[l].CommitMax() != 4 {
		t.Fatalf("no commit after the restart: %d (leader %d, view %d)", c.reps[l].CommitMax(), l, c.reps[l].View())
	}
	for _, r := range c.reps {
		if r.Probes == 0 {
			t.Fatalf("replica %d never probed", r.cfg.Replica)
		}
	}
}

// 6.13: a view change's StartViewChange goes out only with the new view
// state in the same Ready; when writing it fails, nothing view-scoped is
// sent until a retry succeeds.
func TestViewScopedSendsWaitForDurableState(t *testing.T) {
	r := New(Config{Group: 5, Replica: 1, ReplicaCount: 3, HeartbeatTimeoutTicks: 2})
	r.Tick()
	r.Tick() // heartbeat timeout: election for view 1
	rd := r.Ready()
	if rd.State == nil || rd.State.View != 1 || rd.State.LogView != 0 {
		t.Fatalf("state %+v", rd.State)
	}
	svcs := 0
	for _, e := range rd.Send {
		if wire.HeaderOf(e.Head).Command() == wire.CmdStartViewChange {
			svcs++
		}
	}
	if svcs != 2 {
		t.Fatalf("%d StartViewChanges with the state", svcs)
	}
	r.StateFailed()
	r.Tick()
	if r.StateFailingFor() != 1 {
		t.Fatalf("failing for %d ticks after one", r.StateFailingFor())
	}
	durable := false
	for range 2 * r.cfg.ViewChangeRetransmitTicks {
		r.Tick()
		rd := r.Ready()
		if rd.State != nil {
			r.StatePersisted()
			durable = true
			if r.StateFailingFor() != 0 {
				t.Fatal("a successful write did not reset the failing time (6.13 rule 4)")
			}
		}
		for _, e := range rd.Send {
			if !durable {
				t.Fatalf("sent %v before the state was durable", wire.HeaderOf(e.Head).Command())
			}
			if wire.HeaderOf(e.Head).Command() == wire.CmdStartViewChange {
				return // the retransmission went out once the state was written again
			}
		}
	}
	t.Fatalf("no StartViewChange after the state write was retried (durable %v)", durable)
}

// 6.5.3, 6.6 step 6, 13.5: a DoViewChange from a replica outside the
// roster or with a broken suffix is dropped, never recorded.
func TestBadDoViewChangeIsDropped(t *testing.T) {
	r := New(Config{Group: 5, Replica: 1, ReplicaCount: 3})
	for _, d := range []wire.DoViewChangeHeader{
		{View: 1, Replica: 7, Group: 5},
		{View: 1, Replica: 2, Group: 6},
	} {
		r.Step(wire.AppendDoViewChange(nil, d, nil))
	}
	bad := wire.AppendDoViewChange(nil, wire.DoViewChangeHeader{View: 1, Replica: 2, Group: 5, Op: 3}, make([]byte, wire.HeaderSize))
	r.Step(bad) // a suffix entry that is not a prepare header of op 3
	if r.vc.dvcs[2] != nil || r.vc.dvcs[7%3] != nil || r.Dropped["bad do_view_change"] != 2 || r.Dropped["do_view_change from an unknown replica"] != 1 {
		t.Fatalf("drops %v", r.Dropped)
	}
}

// 6.5.1 and 6.10 steps 6-7 across a restart: a backup that adopted a
// StartView (head 5, commit 3) while it holds none of those ops keeps the
// view's head and headers in its durable state; after a restart its
// DoViewChange still announces op 5, commit 3 and the headers of ops 3..5,
// so the merge neither caps the commit point at its journal nor reads the
// others' copies of those ops as discarded.
func TestRestartedBackupStillAnnouncesItsViewsLog(t *testing.T) {
	c := newCluster(3)
	c.down = map[uint8]bool{2: true}
	for op := uint64(1); op <= 5; op++ {
		submit(t, c.reps[0], "op", 100+op, op)
		c.settle()
	}
	var body []byte
	for op := uint64(5); op >= 3; op-- {
		body = append(body, c.reps[0].frameAt(op)[:wire.HeaderSize]...)
	}
	sv := wire.AppendStartView(nil, wire.StartViewHeader{View: 3, Replica: 0, Op: 5, Commit: 3, Group: 5}, body)
	b := New(Config{Group: 5, Replica: 2, ReplicaCount: 3, Seed: 3})
	b.Step(sv)
	rd := b.Ready()
	if rd.State == nil || rd.State.ViewHead != 5 || len(rd.State.ViewHeaders) != 3*wire.HeaderSize {
		t.Fatalf("durable state %+v", rd.State)
	}
	st := *rd.State

	b = New(Config{Group: 5, Replica: 2, ReplicaCount: 3, Seed: 4})
	b.Recover(Recovery{View: st.View, LogView: st.LogView, CommitMax: st.CommitMax, ViewHead: st.ViewHead, ViewHeaders: st.ViewHeaders})
	d, entries := dvcAfterProbe(t, b)
	if d.Op != 5 || d.Commit != 3 || d.LogView != 3 || len(entries) != 3 {
		t.Fatalf("DVC op %d commit %d log_view %d with %d entries", d.Op, d.Commit, d.LogView, len(entries))
	}
	for _, en := range entries {
		if en.Blank || en.Present {
			t.Fatalf("entry %d: blank %v present %v; want the adopted header, not present", en.Prepare.Op, en.Blank, en.Present)
		}
	}
}

// A primary-elect proves repaired ops against the merged log only: the
// headers it adopted in its old log_view name that view's ops, which the
// merge may have discarded (cmd/sim --replicas 5, seed 43868: an elect
// applied its old view's op 21 where the cluster committed another).
func TestPrimaryElectDoesNotProveAgainstItsOldViewsHeaders(t *testing.T) {
	r := New(Config{Group: 5, Replica: 1, ReplicaCount: 3})
	old := wire.BlankPrepare(4)
	r.adopted = map[uint64]wire.Header{4: old}
	r.vc.merged = &mergedLog{opHead: 6, commitMax: 6, headers: map[uint64]wire.Header{}, committedElsewhere: map[uint64]wire.Header{}}
	if _, ok := r.viewHeader(4); ok {
		t.Fatal("a primary-elect took its old view's adopted header as the merged log's")
	}
	r.vc.merged = nil
	if _, ok := r.viewHeader(4); !ok {
		t.Fatal("a backup no longer reads the headers of the view it adopted")
	}
}

// 9.4 rule 1 with 6.5.2: a partition replica restarted without its
// in-memory journal may have acknowledged ops up to the head that journal
// had reached. Its DoViewChange announces that head and nacks none of
// those ops, so a view change without the replicas holding them cannot
// discard them (cmd/sim seed 75004: an op acknowledged by a backup that
// then restarted was truncated by a merge of that backup and the third).
func TestRestartedPartitionReplicaDoesNotNackWhatItMayHaveAcked(t *testing.T) {
	b := New(Config{Group: 5, Replica: 2, ReplicaCount: 3, Seed: 4})
	b.Recover(Recovery{View: 1, LogView: 1, CommitMax: 3, Commit: 3, JournalHead: 5})
	d, entries := dvcAfterProbe(t, b)
	if d.Op != 5 || d.Commit != 3 || len(entries) != 3 {
		t.Fatalf("DVC op %d commit %d with %d entries", d.Op, d.Commit, len(entries))
	}
	for _, en := range entries {
		if en.Nack || en.Present {
			t.Fatalf("op %d: nack %v present %v; the replica knows nothing of it", en.Prepare.Op, en.Nack, en.Present)
		}
	}
}

// dvcAfterProbe ticks a recovered replica of a three-replica group until
// its probe gives up and it starts an election (6.12 rule 4), hands it a
// StartViewChange of that view from replica 1 (f = 1), and returns the
// DoViewChange it sends.
func dvcAfterProbe(t *testing.T, b *Replica) (wire.DoViewChangeHeader, []wire.SuffixEntry) {
	t.Helper()
	for i := 0; i < 2000 && b.Status() != StatusViewChange; i++ {
		b.Tick()
		b.Ready()
	}
	svc := make([]byte, wire.HeaderSize)
	s := wire.StartViewChangeHeader{View: b.View(), Replica: 1, Group: b.Group()}
	s.Encode(wire.HeaderOf(svc))
	b.Step(svc)
	for _, e := range b.Ready().Send {
		if wire.HeaderOf(e.Head).Command() != wire.CmdDoViewChange {
			continue
		}
		d, entries, err := wire.DecodeDoViewChange(append(append([]byte(nil), e.Head...), e.Body...))
		if err != nil {
			t.Fatal(err)
		}
		return d, entries
	}
	t.Fatalf("no DoViewChange sent (status %s)", b.Status())
	return wire.DoViewChangeHeader{}, nil
}
