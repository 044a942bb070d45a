package vsr

import (
	"bytes"
	"encoding/binary"
	"testing"

	"iggynode/wire"
)

// ticks advances every replica by n ticks, settling after each.
func (c *cluster) ticks(n int) {
	for range n {
		for _, r := range c.reps {
			r.Tick()
		}
		c.settle()
	}
}

// sameCommits fails unless replica i applied exactly the primary's frames.
func sameCommits(t *testing.T, c *cluster, i int) {
	t.Helper()
	if len(c.committed[i]) != len(c.committed[0]) {
		t.Fatalf("replica %d committed %d ops, the primary %d", i, len(c.committed[i]), len(c.committed[0]))
	}
	for j := range c.committed[i] {
		a, b := c.committed[i][j], c.committed[0][j]
		if a.Op != b.Op || !bytes.Equal(a.Frame, b.Frame) {
			t.Fatalf("replica %d op %d differs from the primary's", i, b.Op)
		}
		if wire.HeaderOf(a.Frame).Command() != wire.CmdPrepare {
			t.Fatalf("replica %d applied op %d with command %v", i, a.Op, wire.HeaderOf(a.Frame).Command())
		}
	}
}

// 7.2-7.5: a backup that was down while ops committed sees a prepare gap
// when it is back, pulls the missing window from the primary in chunks,
// applies it, and then follows the live chain again.
func TestBackupRepairsOpsItMissed(t *testing.T) {
	c := newClusterWith(3, func(cfg *Config) { cfg.RepairChunk = 2 })
	c.down = map[uint8]bool{2: true}
	for op := uint64(1); op <= 7; op++ {
		submit(t, c.reps[0], "op", 100+op, op)
		c.settle()
	}
	if c.reps[0].CommitMax() != 7 || c.reps[2].CommitMin() != 0 {
		t.Fatalf("setup: primary commit %d, replica 2 commit %d", c.reps[0].CommitMax(), c.reps[2].CommitMin())
	}
	delete(c.down, 2)
	for op := uint64(8); op <= 10; op++ {
		submit(t, c.reps[0], "op", 100+op, op)
		c.settle()
	}
	c.ticks(c.reps[0].cfg.CommitBroadcastTicks + 1) // the heartbeat carries the last commit
	if c.reps[2].Repairs == 0 {
		t.Fatal("replica 2 caught up without a repair session")
	}
	if c.reps[2].repair.open {
		t.Fatalf("the repair session is still open: commit %d/%d op %d to %d drops %v primary %v", c.reps[2].CommitMin(), c.reps[2].CommitMax(), c.reps[2].Op(), c.reps[2].repair.toOp, c.reps[2].Dropped, c.reps[0].Dropped)
	}
	sameCommits(t, c, 2)
	// Caught up, it acknowledges live prepares again: with replica 1 down
	// the primary commits on replica 2's PrepareOk without a retransmission.
	c.down = map[uint8]bool{1: true}
	submit(t, c.reps[0], "op", 111, 11)
	c.settle()
	c.ticks(c.reps[0].cfg.PrepareRetransmitTicks + 1)
	if c.reps[0].CommitMax() != 11 {
		t.Fatalf("op 11 not committed with replica 2's ack: commit %d", c.reps[0].CommitMax())
	}
}

// 7.2 rule 4: a window lost on the way (every RepairPrepare of the first
// answer) is asked for again by the stall retry.
func TestRepairStallRetry(t *testing.T) {
	c := newCluster(3)
	c.down = map[uint8]bool{2: true}
	for op := uint64(1); op <= 3; op++ {
		submit(t, c.reps[0], "op", 100+op, op)
		c.settle()
	}
	delete(c.down, 2)
	lost := 0
	c.lose = func(e Envelope) bool {
		if wire.HeaderOf(e.Head).Command() == wire.CmdRepairPrepare && lost < 3 {
			lost++
			return true
		}
		return false
	}
	r2 := c.reps[2]
	c.ticks(c.reps[0].cfg.CommitBroadcastTicks + 1)
	if lost != 3 || !r2.repair.open || r2.CommitMin() != 0 {
		t.Fatalf("setup: lost %d, session open %v, commit %d", lost, r2.repair.open, r2.CommitMin())
	}
	c.ticks(r2.cfg.RepairRetryTicks - 2)
	if r2.CommitMin() != 0 {
		t.Fatalf("re-asked before the retry interval: commit %d", r2.CommitMin())
	}
	c.ticks(2)
	if r2.CommitMin() != 3 || r2.repair.open {
		t.Fatalf("after the stall retry: commit %d, session open %v", r2.CommitMin(), r2.repair.open)
	}
	sameCommits(t, c, 2)
}

// 7.3 rule 4-5: a server whose ring no longer holds the start of the window
// answers RangeEvicted; without state transfer the session closes and the
// replica stays where it is, counting why.
func TestRepairBelowTheRetainedRingIsRangeEvicted(t *testing.T) {
	c := newClusterWith(3, func(cfg *Config) { cfg.RetainOps, cfg.Metadata = 2, true })
	c.down = map[uint8]bool{2: true}
	for op := uint64(1); op <= 5; op++ {
		submit(t, c.reps[0], "op", 100+op, op)
		c.settle()
	}
	delete(c.down, 2)
	c.ticks(c.reps[0].cfg.CommitBroadcastTicks + 1)
	r2 := c.reps[2]
	if r2.Dropped["range evicted: state transfer needed"] == 0 {
		t.Fatalf("no RangeEvicted seen: drops %v", r2.Dropped)
	}
	if r2.CommitMin() != 0 {
		t.Fatalf("replica 2 applied ops past a hole: commit %d", r2.CommitMin())
	}
}

// RepairPrepare frames that do not belong are dropped, never journaled.
func TestRepairPrepareWithoutSessionIsDropped(t *testing.T) {
	c := newCluster(3)
	submit(t, c.reps[0], "op", 101, 1)
	c.settle()
	frame := append([]byte(nil), c.committed[0][0].Frame...)
	wire.HeaderOf(frame).SetCommand(wire.CmdRepairPrepare)
	r := New(Config{Group: 5, Replica: 2, ReplicaCount: 3})
	r.Step(frame)
	if r.HasReady() || r.Op() != 0 || r.Dropped["repair_prepare without a session"] != 1 {
		t.Fatalf("ready %v op %d drops %v", r.HasReady(), r.Op(), r.Dropped)
	}
}

// commitBatches has the primary commit ops from..to, one SendMessages
// batch of one message each at offset op-1, delivering as it goes.
func (c *cluster) commitBatches(t *testing.T, from, to uint64) {
	t.Helper()
	for op := from; op <= to; op++ {
		submitBatch(t, c.reps[0], op-1, 100+op)
		c.settle()
	}
}

// loseOnce makes the network lose the first frame that matches, and
// reports through the returned flag whether it has.
func (c *cluster) loseOnce(match func(h *wire.Header) bool) *bool {
	lost := new(bool)
	c.lose = func(e Envelope) bool {
		if !*lost && match(wire.HeaderOf(e.Head)) {
			*lost = true
			return true
		}
		return false
	}
	return lost
}

// restartWithSegments replaces replica i by a fresh core that knows only
// its durable offset frontier, as a partition replica restarted on its
// segments.
func (c *cluster) restartWithSegments(i int, frontier uint64) {
	c.reps[i] = New(Config{Group: 5, Replica: uint8(i), ReplicaCount: 3, Seed: uint64(i) + 1})
	c.reps[i].SetOffsetFrontier(frontier)
	c.committed[i] = nil
}

// submitBatch admits a SendMessages prepare whose body is a batch header
// of one message at offset base (the shell's stamp, enough for the core).
func submitBatch(t *testing.T, r *Replica, base uint64, now uint64) {
	t.Helper()
	frame := make([]byte, wire.HeaderSize+wire.BatchHeaderSize)
	binary.LittleEndian.PutUint64(frame[wire.HeaderSize+wire.BatchBaseOffsetOffset:], base)
	binary.LittleEndian.PutUint32(frame[wire.HeaderSize+wire.BatchMessageCountOffset:], 1)
	if err := r.Submit(Request{Client: wire.U128{Lo: 7}, Request: base + 1, Operation: wire.OpSendMessages, Frame: frame}, now); err != nil {
		t.Fatalf("submit: %v", err)
	}
}

// 7.5 partition rules: a backup restarted with its segments (a fresh core
// that knows only its durable offset frontier) repairs from a primary whose
// ring starts above op 1. The window connects to the durable data, so
// commit_min jumps to the floor and only the rest is applied; a backup
// whose data does not reach the ring is refused instead.
func TestPartitionRepairFloorConnectsToDurableData(t *testing.T) {
	for _, tc := range []struct {
		name     string
		frontier uint64 // next offset after the restarted backup's segments
		connects bool
	}{
		{"segments reach the ring", 6, true},
		{"segments end below the ring", 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClusterWith(3, func(cfg *Config) { cfg.RetainOps = 4 })
			c.commitBatches(t, 1, 10)
			c.ticks(c.reps[0].cfg.CommitBroadcastTicks + 1)
			// Replica 2 restarts having stored offsets 0..frontier-1.
			c.restartWithSegments(2, tc.frontier)
			c.ticks(c.reps[0].cfg.CommitBroadcastTicks + 1)
			r2 := c.reps[2]
			if !tc.connects {
				if r2.Dropped["repair floor does not connect: state transfer needed"] == 0 || r2.CommitMin() != 0 {
					t.Fatalf("commit %d, drops %v", r2.CommitMin(), r2.Dropped)
				}
				return
			}
			// The ring holds ops 7..10: commit_min jumps to 6, then 7..10 apply.
			if r2.CommitMin() != 10 {
				t.Fatalf("restarted backup at commit %d, drops %v", r2.CommitMin(), r2.Dropped)
			}
			if len(c.committed[2]) != 4 || c.committed[2][0].Op != 7 {
				t.Fatalf("applied %d ops from op %d", len(c.committed[2]), c.committed[2][0].Op)
			}
			for _, cm := range c.committed[2] {
				if !bytes.Equal(cm.Frame, c.committed[0][cm.Op-1].Frame) {
					t.Fatalf("op %d differs", cm.Op)
				}
			}
			// Back in the chain: with replica 1 down, op 11 commits on its ack.
			c.down = map[uint8]bool{1: true}
			submitBatch(t, c.reps[0], 10, 200)
			c.settle()
			c.ticks(c.reps[0].cfg.PrepareRetransmitTicks + 1)
			if c.reps[0].CommitMax() != 11 || r2.CommitMin() < 10 {
				t.Fatalf("after the floor: primary commit %d, replica 2 commit %d", c.reps[0].CommitMax(), r2.CommitMin())
			}
		})
	}
}

// 7.3 rules 3-6 on the metadata plane: ops the ring no longer holds are
// read back from the journal (Config.ReadJournal) down to the checkpoint,
// so a backup far behind still catches up; below the floor it is
// RangeEvicted.
func TestMetadataRepairReadsTheJournalBelowTheRing(t *testing.T) {
	for _, tc := range []struct {
		name    string
		floor   uint64 // JournalFloor: snapshot_op + 1
		catchUp bool
	}{
		{"journal reaches op 1", 1, true},
		{"journal compacted to op 4", 4, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClusterWith(3, func(cfg *Config) { cfg.RetainOps, cfg.Metadata = 2, true })
			reads := 0
			c.reps[0].cfg.ReadJournal = func(op uint64) []byte {
				reads++
				for _, cm := range c.committed[0] {
					if cm.Op == op {
						return cm.Frame
					}
				}
				return nil
			}
			c.reps[0].cfg.JournalFloor = func() uint64 { return tc.floor }
			c.down = map[uint8]bool{2: true}
			for op := uint64(1); op <= 8; op++ {
				submit(t, c.reps[0], "op", 100+op, op)
				c.settle()
			}
			delete(c.down, 2)
			c.ticks(c.reps[0].cfg.CommitBroadcastTicks + 1)
			r2 := c.reps[2]
			if !tc.catchUp {
				if r2.CommitMin() != 0 || r2.Dropped["range evicted: state transfer needed"] == 0 {
					t.Fatalf("below the journal floor: commit %d, drops %v", r2.CommitMin(), r2.Dropped)
				}
				return
			}
			if reads == 0 {
				t.Fatal("the ring of 2 served ops 1..6 without reading the journal")
			}
			sameCommits(t, c, 2)
		})
	}
}

// A backup re-acknowledges a prepare at or below its commit_min when it
// still holds that op with the same identity (ackHeld), and drops one it
// does not hold as such.
func TestHeldCommittedPrepareIsAckedAgain(t *testing.T) {
	c := newCluster(3)
	submit(t, c.reps[0], "op", 101, 1)
	c.settle()
	c.ticks(c.reps[0].cfg.CommitBroadcastTicks + 1)
	r2 := c.reps[2]
	if r2.CommitMin() != 1 {
		t.Fatalf("setup: replica 2 commit %d", r2.CommitMin())
	}
	again := append([]byte(nil), c.committed[0][0].Frame...)
	r2.Step(again)
	rd := r2.Ready()
	if len(rd.Send) != 1 || wire.HeaderOf(rd.Send[0].Head).Command() != wire.CmdPrepareOk || rd.Send[0].To != 0 {
		t.Fatalf("held committed prepare: sends %+v", rd.Send)
	}
	if ok, err := wire.DecodePrepareOkHeader(wire.HeaderOf(rd.Send[0].Head)); err != nil || ok.Op != 1 ||
		ok.PrepareChecksum != wire.HeaderOf(again).Prepare().Checksum {
		t.Fatalf("PrepareOk %+v %v", ok, err)
	}
	other := New(Config{Group: 5, Replica: 2, ReplicaCount: 3})
	other.Restore(0, 0, 1, wire.U128{Lo: 9}, 0) // committed op 1, but holds no frame of it
	other.Step(append([]byte(nil), c.committed[0][0].Frame...))
	if rd := other.Ready(); len(rd.Send) != 0 || other.Dropped["prepare already committed"] != 1 {
		t.Fatalf("a replica not holding op 1 acked it: %+v %v", rd.Send, other.Dropped)
	}
}

// 7.5 floor rule, found in review: a batch repaired in an earlier window
// of the session must not make a later RangeEvicted "connect", or
// commit_min would jump over ops this replica never received.
func TestFloorNeverConnectsOnAnEarlierWindowsBatch(t *testing.T) {
	c := newClusterWith(3, func(cfg *Config) { cfg.RetainOps, cfg.RepairChunk = 4, 2 })
	c.down = map[uint8]bool{2: true}
	c.commitBatches(t, 1, 4)
	delete(c.down, 2)
	lost := c.loseOnce(func(h *wire.Header) bool {
		return h.Command() == wire.CmdRequestPrepares && h.RequestPrepares().FromOp == 3
	})
	r2 := c.reps[2]
	c.ticks(c.reps[0].cfg.CommitBroadcastTicks + 1)
	if r2.CommitMin() != 2 || !*lost {
		t.Fatalf("setup: commit %d lost %v", r2.CommitMin(), *lost)
	}
	r2.SetOffsetFrontier(2) // what the partition shell reports after applying ops 1, 2
	c.down = map[uint8]bool{2: true}
	c.commitBatches(t, 5, 10)
	delete(c.down, 2)
	c.ticks(r2.cfg.RepairRetryTicks + 1)
	var ops []uint64
	for _, cm := range c.committed[2] {
		ops = append(ops, cm.Op)
	}
	for i, cm := range c.committed[2] {
		if cm.Op != uint64(i+1) {
			t.Fatalf("replica 2 applied op %d after op %d: ops 3..%d were skipped (commit_min %d)", cm.Op, i, cm.Op-1, r2.CommitMin())
		}
	}
}

// After a RangeEvicted (or a refused floor) closes the session, no new
// one opens before a retry interval: the primary is not asked for the same
// window every tick.
func TestRefusedRepairWaitsARetryInterval(t *testing.T) {
	c := newClusterWith(3, func(cfg *Config) { cfg.RetainOps, cfg.Metadata = 2, true })
	c.down = map[uint8]bool{2: true}
	for op := uint64(1); op <= 8; op++ {
		submit(t, c.reps[0], "op", 100+op, op)
		c.settle()
	}
	delete(c.down, 2)
	c.ticks(c.reps[0].cfg.CommitBroadcastTicks + 1)
	asks, served := 0, 0
	c.lose = func(e Envelope) bool {
		switch wire.HeaderOf(e.Head).Command() {
		case wire.CmdRequestPrepares:
			asks++
		case wire.CmdRepairPrepare:
			served++
		}
		return false
	}
	c.ticks(100)
	if asks > 2 {
		t.Fatalf("%d RequestPrepares in one retry interval", asks)
	}
	// Refusals in a row double the wait: over 15 s, 1+2+4+8 s apart.
	asks = 0
	c.ticks(1500)
	if asks > 5 || asks == 0 {
		t.Fatalf("%d RequestPrepares in 15 s from a replica refused every time", asks)
	}
}

// A partition backup whose floor is refused drops the RepairPrepares it
// held above its hole, so memory does not grow with the primary's commits.
func TestRefusedFloorDropsHeldEntries(t *testing.T) {
	c := newClusterWith(3, func(cfg *Config) { cfg.RetainOps = 4 })
	c.down = map[uint8]bool{2: true}
	c.commitBatches(t, 1, 10)
	delete(c.down, 2)
	r2 := c.reps[2]
	for round := uint64(0); round < 20; round++ {
		c.down = map[uint8]bool{2: true}
		c.commitBatches(t, 11+4*round, 14+4*round)
		delete(c.down, 2)
		c.ticks(c.reps[0].cfg.CommitBroadcastTicks + 1)
	}
	if len(r2.log) > 8 {
		t.Fatalf("replica 2 holds %d repaired entries it can never use", len(r2.log))
	}
}

// 7.5: a floor window with an op still missing above the floor is not
// decided; the session waits for the stall retry (no refusal, no back-off)
// and connects once the op arrives.
func TestFloorWindowWithAMissingOpWaits(t *testing.T) {
	c := newClusterWith(3, func(cfg *Config) { cfg.RetainOps = 4 })
	c.commitBatches(t, 1, 10)
	c.ticks(c.reps[0].cfg.CommitBroadcastTicks + 1)
	c.restartWithSegments(2, 6)
	lost := c.loseOnce(func(h *wire.Header) bool {
		return h.Command() == wire.CmdRepairPrepare && h.Prepare().Op == 7
	})
	r2 := c.reps[2]
	c.ticks(c.reps[0].cfg.CommitBroadcastTicks + 1)
	if !*lost || r2.RepairsRefused != 0 || !r2.repair.open || r2.CommitMin() != 0 {
		t.Fatalf("after a lost op 7: lost %v, refused %d, open %v, commit %d", *lost, r2.RepairsRefused, r2.repair.open, r2.CommitMin())
	}
	c.ticks(r2.cfg.RepairRetryTicks + 1)
	if r2.CommitMin() != 10 || r2.RepairsRefused != 0 {
		t.Fatalf("after the stall retry: commit %d, refused %d, drops %v", r2.CommitMin(), r2.RepairsRefused, r2.Dropped)
	}
}

// A partition replica restarted with its last committed prepares rebuilt
// by the shell (Recovery.Retained) serves them to repair; a set that is
// not a chain ending at the commit point with its identity is ignored (one
// that ends below it would leave ops neither served nor reported evicted).
func TestRecoveredRetainedPreparesAreServed(t *testing.T) {
	c := newCluster(3)
	for i := range uint64(5) {
		submitBatch(t, c.reps[0], i, 100+i)
		c.settle()
	}
	var frames [][]byte
	for _, cm := range c.committed[0] {
		frames = append(frames, cm.Frame)
	}
	if len(frames) != 5 {
		t.Fatalf("%d committed", len(frames))
	}
	id := func(op int) wire.U128 { return wire.HeaderOf(frames[op-1]).Prepare().Checksum }
	for _, tc := range []struct {
		name     string
		commit   uint64
		head     wire.U128
		retained [][]byte
		oldest   uint64
		served   int // of ops 4 and 5
	}{
		{"chained tail", 5, id(5), frames[2:], 3, 2},
		{"saved before the last commit", 5, id(5), frames[1:4], 6, 0},
		{"gap", 5, id(5), [][]byte{frames[2], frames[4]}, 6, 0},
		{"passes the commit point", 4, id(4), frames[2:], 5, 0},
		{"another op at the commit point", 5, id(4), frames[2:], 6, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := New(Config{Group: 5, Replica: 0, ReplicaCount: 3, Seed: 9})
			r.Recover(Recovery{View: 0, LogView: 0, CommitMax: tc.commit, Commit: tc.commit, CommitChecksum: tc.head, Retained: tc.retained})
			if got := r.OldestServable(); got != tc.oldest {
				t.Fatalf("oldest servable op %d, want %d", got, tc.oldest)
			}
			// Past the probe (a recovering replica serves nothing), a
			// primary-elect asks for ops 4 and 5.
			for i := 0; i < 2000 && r.Status() == StatusRecovering; i++ {
				r.Tick()
				r.Ready()
			}
			var rp wire.Header
			(&wire.RequestPreparesHeader{Replica: 1, FromOp: 4, ToOp: 5, Group: 5, Nonce: wire.U128{Lo: 3}}).Encode(&rp)
			r.Step(rp[:])
			var served []uint64
			for _, e := range r.Ready().Send {
				if h := wire.HeaderOf(e.Head); h.Command() == wire.CmdRepairPrepare {
					f := append(append([]byte(nil), e.Head...), e.Body...)
					if err := wire.VerifyPrepare(f); err != nil {
						t.Fatal(err)
					}
					served = append(served, h.Prepare().Op)
				}
			}
			if len(served) != tc.served {
				t.Fatalf("served ops %v, want %d of them (status %s)", served, tc.served, r.Status())
			}
		})
	}
}
