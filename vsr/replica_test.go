package vsr

import (
	"bytes"
	"errors"
	"testing"

	"iggynode/wire"
)

func frameWith(body string) []byte {
	f := make([]byte, wire.HeaderSize+len(body))
	copy(f[wire.HeaderSize:], body)
	return f
}

func submit(t *testing.T, r *Replica, body string, now uint64, tag any) {
	t.Helper()
	err := r.Submit(Request{Client: wire.U128{Lo: 7}, Request: 1, Operation: wire.OpCreateStream,
		UserID: 3, Frame: frameWith(body), Tag: tag}, now)
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
}

// replica-plane.md 4.5: the quorum table.
func TestQuorumTable(t *testing.T) {
	want := map[int][4]int{1: {1, 1, 1, 0}, 2: {2, 2, 1, 0}, 3: {2, 2, 2, 1}, 4: {2, 3, 3, 1},
		5: {3, 3, 3, 2}, 6: {3, 4, 4, 2}, 7: {3, 5, 5, 3}, 8: {3, 6, 6, 3}}
	for n, w := range want {
		got := [4]int{QuorumReplication(n), QuorumViewChange(n), QuorumNack(n), Faults(n)}
		if got != w {
			t.Errorf("n=%d: got %v want %v", n, got, w)
		}
		if QuorumReplication(n)+QuorumViewChange(n) <= n || QuorumReplication(n)+QuorumNack(n) <= n {
			t.Errorf("n=%d: quorums do not intersect", n)
		}
	}
}

// A cluster of one: submit -> journal -> (journaled) -> commit, hash chain,
// monotonic timestamps (5.4, 5.5, 5.9).
func TestSingleReplicaCommitPath(t *testing.T) {
	r := New(Config{Group: wire.MetadataGroup, Metadata: true})
	submit(t, r, "first", 1000, "a")
	rd := r.Ready()
	if len(rd.Journal) != 1 || len(rd.Commit) != 0 || len(rd.Send) != 0 {
		t.Fatalf("before the append is durable nothing may commit: %+v", rd)
	}
	p1 := wire.HeaderOf(rd.Journal[0]).Prepare()
	if p1.Op != 1 || !p1.Parent.IsZero() || p1.Timestamp != 1000 || p1.Group != wire.MetadataGroup || p1.UserID != 3 {
		t.Fatalf("prepare 1 = %+v", p1)
	}
	if err := wire.VerifyPrepare(rd.Journal[0]); err != nil || p1.ChecksumBody.IsZero() {
		t.Fatalf("metadata prepare must carry identity and body seal: %v", err)
	}
	r.Journaled(1, nil)
	rd = r.Ready()
	if len(rd.Commit) != 1 || rd.Commit[0].Op != 1 || rd.Commit[0].Tag != "a" || !bytes.Equal(rd.Commit[0].Frame[256:], []byte("first")) {
		t.Fatalf("commit = %+v", rd.Commit)
	}
	submit(t, r, "second", 500, "b") // clock went backwards
	rd = r.Ready()
	p2 := wire.HeaderOf(rd.Journal[0]).Prepare()
	if p2.Op != 2 || p2.Parent != p1.Checksum || p2.Timestamp != 1001 || p2.Commit != 1 {
		t.Fatalf("prepare 2 = %+v (parent must chain, timestamp strictly increase)", p2)
	}
	r.Journaled(2, nil)
	if rd = r.Ready(); len(rd.Commit) != 1 || r.CommitMin() != 2 || r.CommitMax() != 2 {
		t.Fatalf("commit 2: %+v min=%d max=%d", rd.Commit, r.CommitMin(), r.CommitMax())
	}
}

// 5.2: the prepare queue, then the request queue, then refusal; queued
// requests are promoted after commits.
func TestPipelineLimits(t *testing.T) {
	r := New(Config{PrepareQueueDepth: 2})
	for i := 0; i < 6; i++ {
		submit(t, r, "x", uint64(i+1), i)
	}
	if err := r.Submit(Request{Frame: frameWith("y")}, 9); !errors.Is(err, ErrBusy) {
		t.Fatalf("7th request: %v, want ErrBusy", err)
	}
	rd := r.Ready()
	if len(rd.Journal) != 2 || r.QueueLen() != 4 {
		t.Fatalf("journal %d queue %d", len(rd.Journal), r.QueueLen())
	}
	var committed []any
	for op := uint64(1); op <= 6; op++ {
		r.Journaled(op, nil)
		for _, c := range r.Ready().Commit {
			committed = append(committed, c.Tag)
		}
	}
	if len(committed) != 6 {
		t.Fatalf("committed %v", committed)
	}
	for i, tag := range committed {
		if tag != i {
			t.Fatalf("commit order %v", committed)
		}
	}
}

// 5.5 step 3: a failed append rolls back and cancels the subscriber.
func TestJournalFailureCancels(t *testing.T) {
	r := New(Config{})
	submit(t, r, "a", 1, "a")
	submit(t, r, "b", 2, "b")
	r.Ready()
	r.Journaled(1, nil)
	r.Ready()
	r.Journaled(2, errors.New("disk full"))
	rd := r.Ready()
	if len(rd.Canceled) != 1 || rd.Canceled[0] != "b" || r.Op() != 1 {
		t.Fatalf("canceled %v op %d", rd.Canceled, r.Op())
	}
	submit(t, r, "c", 3, "c")
	p := wire.HeaderOf(r.Ready().Journal[0]).Prepare()
	if p.Op != 2 {
		t.Fatalf("op after rollback = %d", p.Op)
	}
}

func TestBackupRefusesSubmit(t *testing.T) {
	r := New(Config{Replica: 1, ReplicaCount: 3})
	if err := r.Submit(Request{Frame: frameWith("x")}, 1); !errors.Is(err, ErrNotPrimary) {
		t.Fatalf("got %v", err)
	}
}

// cluster drives n replicas over a perfect in-memory network.
type cluster struct {
	reps      []*Replica
	committed [][]Committed
	down      map[uint8]bool        // crashed replicas: they neither act nor receive
	lose      func(e Envelope) bool // frames the network loses, if set
	truncated map[int][]uint64      // Ready.Truncate values each replica gave its journal
	// journaled, if set, sees each Ready's truncation and every frame
	// handed to a journal, in order, before it is reported Journaled.
	journaled func(i int, truncate uint64, frame []byte)
	// loseQuiet loses quiescence entries, if set; quietSent counts them.
	loseQuiet func(q QuietEntry) bool
	quietSent int
	// canceled and rejected: each replica's Ready.Canceled and Rejected.
	canceled, rejected map[int][]any
}

func newCluster(n int) *cluster { return newClusterWith(n, nil) }

// newClusterWith lets a test adjust every replica's Config.
func newClusterWith(n int, adjust func(*Config)) *cluster {
	c := &cluster{committed: make([][]Committed, n)}
	for i := 0; i < n; i++ {
		cfg := Config{Group: 5, Replica: uint8(i), ReplicaCount: n, Seed: uint64(i + 1)}
		if adjust != nil {
			adjust(&cfg)
		}
		c.reps = append(c.reps, New(cfg))
	}
	return c
}

// settle journals every pending append and delivers every frame until quiet.
func (c *cluster) settle() {
	for progress := true; progress; {
		progress = false
		for i, r := range c.reps {
			if c.down[uint8(i)] {
				r.Ready()
				continue
			}
			for r.HasReady() {
				progress = true
				rd := r.Ready()
				if rd.Truncate != 0 {
					if c.truncated == nil {
						c.truncated = map[int][]uint64{}
					}
					c.truncated[i] = append(c.truncated[i], rd.Truncate)
				}
				if c.journaled != nil && rd.Truncate != 0 {
					c.journaled(i, rd.Truncate, nil)
				}
				for _, f := range rd.Journal {
					if c.journaled != nil {
						c.journaled(i, 0, f)
					}
					r.Journaled(wire.HeaderOf(f).Prepare().Op, nil)
				}
				c.committed[i] = append(c.committed[i], rd.Commit...)
				if len(rd.Canceled)+len(rd.Rejected) > 0 {
					if c.canceled == nil {
						c.canceled, c.rejected = map[int][]any{}, map[int][]any{}
					}
					c.canceled[i] = append(c.canceled[i], rd.Canceled...)
					c.rejected[i] = append(c.rejected[i], rd.Rejected...)
				}
				for _, e := range rd.Send {
					if !c.down[e.To] && (c.lose == nil || !c.lose(e)) {
						c.reps[e.To].Step(append(append([]byte(nil), e.Head...), e.Body...))
					}
				}
				for _, q := range rd.Quiet {
					// The node-level heartbeat, without its interval.
					c.quietSent++
					if !c.down[q.To] && (c.loseQuiet == nil || !c.loseQuiet(q)) {
						c.reps[q.To].OnQuiet(uint8(i), q.Kind, q.View, q.Commit)
					}
				}
			}
		}
	}
}

// Normal operation on three replicas (4.6, 5.6-5.10): chain replication,
// PrepareOks to the primary, commit, and the Commit heartbeat carrying the
// commit point to backups; every replica applies identical frames in order.
func TestThreeReplicasNormalOperation(t *testing.T) {
	c := newCluster(3)
	for i := 0; i < 10; i++ {
		submit(t, c.reps[0], "op", uint64(100+i), i)
		c.settle()
	}
	if got := len(c.committed[0]); got != 10 {
		t.Fatalf("primary committed %d", got)
	}
	// Backups learn the final commit point from the heartbeat.
	for tick := 0; tick < 60; tick++ {
		for _, r := range c.reps {
			r.Tick()
		}
		c.settle()
	}
	for i := 1; i < 3; i++ {
		if len(c.committed[i]) != 10 {
			t.Fatalf("replica %d committed %d", i, len(c.committed[i]))
		}
		for j := range c.committed[i] {
			if !bytes.Equal(c.committed[i][j].Frame, c.committed[0][j].Frame) {
				t.Fatalf("replica %d op %d differs", i, j+1)
			}
			if c.committed[i][j].Tag != nil {
				t.Fatalf("a backup has no subscriber")
			}
		}
	}
}

// 5.11: a lost prepare is retransmitted by the Prepare timer.
func TestRetransmissionAfterLoss(t *testing.T) {
	c := newCluster(3)
	submit(t, c.reps[0], "op", 1, "x")
	rd := c.reps[0].Ready()
	c.reps[0].Journaled(1, nil)
	c.reps[0].Ready() // drop the forward to replica 1 on the floor
	_ = rd
	if c.reps[0].CommitMax() != 0 {
		t.Fatal("committed without a quorum")
	}
	for tick := 0; tick < 40 && c.reps[0].CommitMax() == 0; tick++ {
		c.reps[0].Tick()
		c.settle()
	}
	if c.reps[0].CommitMax() != 1 || len(c.committed[0]) != 1 {
		t.Fatalf("retransmission did not commit: max=%d", c.reps[0].CommitMax())
	}
}

// 13.5: peer garbage is dropped and counted, never panics.
func TestStepDropsGarbage(t *testing.T) {
	r := New(Config{Replica: 1, ReplicaCount: 3})
	r.Step([]byte{1, 2, 3})
	bad := make([]byte, 256)
	bad[60] = byte(wire.CmdPrepareOk)
	r.Step(bad)
	if len(r.Dropped) == 0 {
		t.Fatal("garbage not counted")
	}
}

// 4.6 rule 5 with a crashed chain hop: replica 1 never answers, so replica 2
// hears each prepare only from the primary's retransmission. Every op must
// still commit at the first firing of the Prepare timer: the backoff of one
// op must not leak into the next, or a cluster with one dead backup would slow
// down without bound.
func TestDeadChainHopCommitsAtFirstRetransmit(t *testing.T) {
	c := newCluster(3)
	c.down = map[uint8]bool{1: true}
	limit := c.reps[0].cfg.PrepareRetransmitTicks
	for op := uint64(1); op <= 6; op++ {
		submit(t, c.reps[0], "op", 100+op, op)
		c.settle()
		if c.reps[0].CommitMax() != op-1 {
			t.Fatalf("op %d committed without replica 2's ack", op)
		}
		ticks := 0
		for c.reps[0].CommitMax() < op {
			if ticks++; ticks > limit {
				t.Fatalf("op %d not committed within %d ticks of a dead chain hop", op, limit)
			}
			for _, r := range c.reps {
				r.Tick()
			}
			c.settle()
		}
	}
	if got := len(c.committed[0]); got != 6 {
		t.Fatalf("primary committed %d ops", got)
	}
}

// Config.StartView: a fresh group of voters {1,3,4} started in view 2 of
// epoch 0 is led by voter 4 (the third in id order) and commits there;
// without StartView voter 1 would lead.
func TestStartViewPlacesTheFirstPrimary(t *testing.T) {
	ro := Roster{Voters: 1<<1 | 1<<3 | 1<<4, Target: 1<<1 | 1<<3 | 1<<4}
	c := newClusterWith(5, func(cfg *Config) { cfg.ReplicaCount, cfg.Roster, cfg.StartView = 5, &ro, 2 })
	for _, i := range []int{1, 3, 4} {
		if got := c.reps[i].Primary(); got != 4 || c.reps[i].View() != 2 {
			t.Fatalf("replica %d: view %d primary %d, want view 2 primary 4", i, c.reps[i].View(), got)
		}
	}
	if !c.reps[4].IsPrimary() || c.reps[1].IsPrimary() {
		t.Fatal("replica 4 must be the primary of view 2, not replica 1")
	}
	submit(t, c.reps[4], "placed", 1000, "a")
	c.settle()
	for range 60 { // a commit heartbeat tells the backups
		for _, r := range c.reps {
			r.Tick()
		}
		c.settle()
	}
	for _, i := range []int{1, 3, 4} {
		if c.reps[i].CommitMax() != 1 {
			t.Fatalf("replica %d: commit_max %d, want 1", i, c.reps[i].CommitMax())
		}
	}
}
