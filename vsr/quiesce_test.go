package vsr

import (
	"testing"

	"iggynode/wire"
)

// newQuietCluster is a cluster of n replicas of one partition group with
// quiescence on; a replica in dead is not live to the others (the
// node-level heartbeat lost it).
func newQuietCluster(n int) (*cluster, map[uint8]bool) {
	dead := map[uint8]bool{}
	c := newClusterWith(n, func(cfg *Config) {
		cfg.Quiesce = true
		cfg.Live = func(rep uint8) bool { return !dead[rep] }
	})
	return c, dead
}

// countSends counts the frames the replicas send during n ticks.
func (c *cluster) countSends(n int) (sends int) {
	for range n {
		for i, r := range c.reps {
			if c.down[uint8(i)] {
				continue
			}
			r.Tick()
			sends += len(r.ready.Send)
		}
		c.settle()
	}
	return sends
}

func allQuiet(c *cluster) bool {
	for i, r := range c.reps {
		if !c.down[uint8(i)] && !r.Quiet() {
			return false
		}
	}
	return true
}

// tickUntilQuiet ticks until every live replica is quiet, at most limit ticks.
func tickUntilQuiet(t *testing.T, c *cluster, limit int) int {
	t.Helper()
	for n := 0; n < limit; n++ {
		if allQuiet(c) {
			return n
		}
		c.ticks(1)
	}
	for i, r := range c.reps {
		t.Logf("r%d %s view %d commit %d/%d op %d quiet %v", i, r.Status(), r.View(), r.CommitMin(), r.CommitMax(), r.Op(), r.Quiet())
	}
	t.Fatalf("not quiet after %d ticks", limit)
	return 0
}

// quiesce.go rule 7: a new group is quiet everywhere and arms no timer.
func TestNewGroupStartsQuiet(t *testing.T) {
	c, _ := newQuietCluster(3)
	for i, r := range c.reps {
		if !r.Quiet() {
			t.Fatalf("replica %d of a new group is awake", i)
		}
		if k, ok := r.IdleTicks(); ok {
			t.Fatalf("replica %d of a quiet group has a timer due in %d ticks", i, k)
		}
	}
	if sends := c.countSends(2000); sends != 0 {
		t.Fatalf("a quiet group sent %d frames in 20 s", sends)
	}
}

// Rules 1-3: writes wake the group, it commits as usual, and once idle it
// goes quiet on every replica, the backups at the primary's commit point;
// from then on it sends nothing.
func TestIdleGroupGoesQuietAtItsCommitPoint(t *testing.T) {
	c, _ := newQuietCluster(3)
	for i := 0; i < 5; i++ {
		submit(t, c.reps[0], "op", uint64(100+i), i)
		c.settle()
	}
	if c.reps[0].Quiet() {
		t.Fatal("a primary with a write stayed quiet")
	}
	took := tickUntilQuiet(t, c, 400)
	for i, r := range c.reps {
		if r.CommitMin() != 5 || len(c.committed[i]) != 5 {
			t.Fatalf("replica %d quiet at commit %d with %d applied, want 5", i, r.CommitMin(), len(c.committed[i]))
		}
		if _, ok := r.IdleTicks(); ok {
			t.Fatalf("quiet replica %d still has a timer armed", i)
		}
	}
	if took > 2*50+10 {
		t.Errorf("quiet after %d ticks, want within two commit intervals", took)
	}
	if sends := c.countSends(2000); sends != 0 {
		t.Fatalf("a quiet group sent %d frames", sends)
	}
	sameCommits(t, c, 1)
	sameCommits(t, c, 2)
}

// Rule 2: a backup that never hears the Commit heartbeat learns the commit
// point from the primary's notice before it goes quiet.
func TestNoticeCarriesTheCommitPoint(t *testing.T) {
	c, _ := newQuietCluster(3)
	c.lose = func(e Envelope) bool { return wire.HeaderOf(e.Head).Command() == wire.CmdCommit }
	submit(t, c.reps[0], "op", 100, "a")
	c.settle()
	if c.reps[2].CommitMin() != 0 {
		t.Fatalf("the chain's tail committed %d before any commit point reached it", c.reps[2].CommitMin())
	}
	tickUntilQuiet(t, c, 400)
	sameCommits(t, c, 2)
}

// Rule 2: a backup that lacks ops repairs before it confirms; the primary
// notifies again until it does.
func TestBackupBehindRepairsBeforeItConfirms(t *testing.T) {
	c, _ := newQuietCluster(3)
	lost := 0
	c.lose = func(e Envelope) bool {
		if wire.HeaderOf(e.Head).Command() == wire.CmdPrepare && e.To == 2 && lost < 100 {
			lost++
			return true
		}
		return false
	}
	for i := 0; i < 3; i++ {
		submit(t, c.reps[0], "op", uint64(100+i), i)
		c.settle()
	}
	tickUntilQuiet(t, c, 2000)
	if c.reps[2].Repairs == 0 {
		t.Fatal("the backup that missed every prepare went quiet without repairing")
	}
	sameCommits(t, c, 2)
}

// Rule 5: when the node-level heartbeat loses the primary's node, its
// quiet groups elect a new primary, which takes writes.
func TestPeerLostElectsANewPrimary(t *testing.T) {
	c, dead := newQuietCluster(3)
	submit(t, c.reps[0], "op", 100, "a")
	c.settle()
	tickUntilQuiet(t, c, 400)
	c.down = map[uint8]bool{0: true}
	dead[0] = true
	c.reps[1].PeerLost(0)
	c.reps[2].PeerLost(0)
	c.settle()
	for n := 0; n < 300 && !c.reps[1].Leading(); n++ {
		c.ticks(1)
	}
	if !c.reps[1].Leading() || c.reps[1].View() != 1 {
		t.Fatalf("replica 1 is %s in view %d, want the primary of view 1", c.reps[1].Status(), c.reps[1].View())
	}
	submit(t, c.reps[1], "after", 200, "b")
	c.settle()
	if c.reps[1].CommitMin() != 2 {
		t.Fatalf("the new primary committed %d, want 2", c.reps[1].CommitMin())
	}
	tickUntilQuiet(t, c, 400)
	sameCommitsBetween(t, c, 1, 2)
}

// Rules 3-4: a stray frame wakes a quiet backup; with its primary quiet
// and live it goes quiet again at its heartbeat timeout instead of
// electing.
func TestWokenBackupNapsAgainInsteadOfElecting(t *testing.T) {
	c, _ := newQuietCluster(3)
	var dup []byte
	c.journaled = func(i int, _ uint64, f []byte) {
		if i == 2 && f != nil {
			dup = append([]byte(nil), f...)
		}
	}
	submit(t, c.reps[0], "op", 100, "a")
	c.settle()
	tickUntilQuiet(t, c, 400)
	c.reps[2].Step(dup) // a late duplicate of the prepare it holds
	c.settle()
	if c.reps[2].Quiet() {
		t.Fatal("a frame did not wake the quiet backup")
	}
	c.ticks(600)
	if !c.reps[2].Quiet() || c.reps[2].View() != 0 || c.reps[2].Status() != StatusNormal {
		t.Fatalf("woken backup: quiet %v, %s in view %d; want quiet again in view 0", c.reps[2].Quiet(), c.reps[2].Status(), c.reps[2].View())
	}
}

// Rules 1 and 6: a primary goes quiet without a backup whose node is not
// live, and wakes to bring it up to date when its node is found again.
func TestFoundBackupGetsTheCommitPointItMissed(t *testing.T) {
	c, dead := newQuietCluster(3)
	c.down = map[uint8]bool{2: true}
	dead[2] = true
	submit(t, c.reps[0], "op", 100, "a")
	c.settle()
	for n := 0; n < 400 && !(c.reps[0].Quiet() && c.reps[1].Quiet()); n++ {
		c.ticks(1)
	}
	if !c.reps[0].Quiet() {
		t.Fatal("the primary waited for a backup on a dead node")
	}
	c.down, dead[2] = nil, false
	c.reps[0].PeerFound(2)
	c.settle()
	tickUntilQuiet(t, c, 2000)
	sameCommits(t, c, 2)
}

// A stale or duplicated notice wakes nothing.
func TestStaleNoticeIsIgnored(t *testing.T) {
	c, _ := newQuietCluster(3)
	submit(t, c.reps[0], "a", 100, 1)
	c.settle()
	tickUntilQuiet(t, c, 400)
	c.reps[1].OnQuiet(0, QuietNotice, 0, 0)
	c.reps[1].OnQuiet(0, QuietNotice, 0, 1) // a duplicate of the last
	c.settle()
	if !c.reps[1].Quiet() || c.reps[1].CommitMin() != 1 {
		t.Fatalf("quiet %v commit %d after stale notices", c.reps[1].Quiet(), c.reps[1].CommitMin())
	}
}

// 6.12 extension (recoveringQuorum): a whole-cluster restart elects after
// the probers hear each other, not after view_probe_attempts_max probes.
func TestRecoveringQuorumElectsEarly(t *testing.T) {
	c := newCluster(3)
	for i, r := range c.reps {
		c.reps[i] = New(r.cfg)
		c.reps[i].Recover(Recovery{View: 4, LogView: 4})
	}
	ticks := 0
	for ; ticks < 1000; ticks++ {
		if l := c.leader(); l >= 0 {
			break
		}
		c.ticks(1)
	}
	probeCeiling := c.reps[0].cfg.ViewProbeAttemptsMax * c.reps[0].cfg.RequestStartViewTicks
	if ticks >= probeCeiling {
		t.Fatalf("a leader after %d ticks, the probe ceiling is %d", ticks, probeCeiling)
	}
	if v := c.reps[c.leader()].View(); v != 5 {
		t.Fatalf("elected view %d, want 5", v)
	}
}

func (c *cluster) leader() int {
	for i, r := range c.reps {
		if r.Leading() {
			return i
		}
	}
	return -1
}

// sameCommitsBetween fails unless replicas a and b applied the same frames.
func sameCommitsBetween(t *testing.T, c *cluster, a, b int) {
	t.Helper()
	if len(c.committed[a]) != len(c.committed[b]) {
		t.Fatalf("replica %d applied %d ops, replica %d %d", a, len(c.committed[a]), b, len(c.committed[b]))
	}
	for j := range c.committed[a] {
		if c.committed[a][j].Op != c.committed[b][j].Op || string(c.committed[a][j].Frame[wire.HeaderSize:]) != string(c.committed[b][j].Frame[wire.HeaderSize:]) {
			t.Fatalf("op %d differs between replicas %d and %d", c.committed[a][j].Op, a, b)
		}
	}
}

// A replica outside the group's roster (a node the partition is not
// placed on, issue 23) does nothing when the group's primary is lost: it
// neither probes nor elects.
func TestPeerLostOutsideTheRosterIsIgnored(t *testing.T) {
	ro := Roster{Voters: 0b11100, Target: 0b11100}
	r := New(Config{Group: 5, Replica: 0, ReplicaCount: 5, Roster: &ro, Quiesce: true})
	r.PeerLost(2)
	if r.Status() != StatusNormal || r.HasReady() {
		t.Fatalf("a non-member reacted to its group's primary being lost: status %v, ready %v", r.Status(), r.HasReady())
	}
}
