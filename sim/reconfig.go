package sim

import (
	"fmt"
	"math/bits"
	"math/rand/v2"

	"iggynode/vsr"
	"iggynode/wire"
)

// Membership changes (issue 22; vsr/reconfig.go). With Config.Reconfig
// the run starts with voters {0,1,2} on more nodes than that: the others
// are joiners, fresh replicas that know a roster without them. At ticks
// the seed draws, the harness asks the leader to move to the next target
// of a plan, retrying until the leader's roster names it, while every
// fault of the run goes on (the primary crashes mid-change, partitions
// cut old members from new, a joiner crashes during its transfer). The
// plans, by seed mod 3:
//
//	0: grow 3 -> 5, then shrink to a random 3 of the 5 (often without the
//	   primary of the moment);
//	1: replace one of {0,1,2} by 3, then another by 4;
//	2: remove one of {0,1,2} (3 -> 2), then add 3 (2 -> 3).
//
// Checked besides the invariants of every run: one leading primary per
// view across all nodes, old and new members alike (views of different
// epochs never share a number, vsr.EpochOf); a crash never takes more
// voters down than any roster in use tolerates; every committed R op
// stays at its op on every final member, and so does everything below it
// (no op committed by a quorum of the old membership lost); at
// quiescence every member holds the plan's last roster, the leader's, with
// no change in progress, and every other node says it is removed.

// reconfigPlan is the targets a seed moves through, and when it starts.
type reconfigPlan struct {
	nodes   int
	targets []uint32
	at      []int // the tick each target is first asked for
	step    int   // the next target to reach
	// epochOps: the op of each applied R, by the epoch it opens.
	epochOps map[uint32]uint64
}

func planFor(seed uint64) *reconfigPlan {
	rng := rand.New(rand.NewPCG(seed, 0x4ec0f))
	p := &reconfigPlan{epochOps: map[uint32]uint64{}}
	first := 200 + rng.IntN(600)
	second := first + 300 + rng.IntN(700)
	p.at = []int{first, second}
	switch seed % 3 {
	case 0:
		p.nodes = 5
		perm := rng.Perm(5)
		var shrink uint32
		for _, id := range perm[:3] {
			shrink |= 1 << id
		}
		p.targets = []uint32{0b11111, shrink}
	case 1:
		p.nodes = 5
		x := rng.IntN(3)
		y := (x + 1 + rng.IntN(2)) % 3
		a := uint32(0b111)&^(1<<x) | 1<<3
		p.targets = []uint32{a, a&^(1<<y) | 1<<4}
	default:
		p.nodes = 4
		x := rng.IntN(3)
		a := uint32(0b111) &^ (1 << x)
		p.targets = []uint32{a, a | 1<<3}
	}
	return p
}

func (p *reconfigPlan) done() bool { return p.step == len(p.targets) }

// reconfigure asks the leader for the plan's next target when it is due.
func (g *group) reconfigure() {
	r := g.r
	p := r.plan
	if p == nil || p.done() || r.now < p.at[p.step] {
		return
	}
	l := g.leader()
	if l < 0 {
		return
	}
	c := g.reps[l].core
	ro := c.Roster()
	target := p.targets[p.step]
	switch {
	case ro.Target == target && !ro.Changing():
		r.event(l, "roster reached: %v", ro)
		p.step++
		if !p.done() {
			p.at[p.step] = max(p.at[p.step], r.now+100)
		}
	case ro.Target == target:
		// R2 follows on its own once the learners hold the log.
	default:
		g.catchUp(l, r.now-1)
		if err := c.Reconfigure(target, uint64(r.now)*10_000); err == nil {
			r.event(l, "reconfiguration asked: voters %s from %v", idsOf(target), ro)
		}
		g.drive(l)
	}
}

func idsOf(m uint32) string {
	s := "{"
	for i := 0; i < vsr.MaxReplicas; i++ {
		if m&(1<<i) != 0 {
			if len(s) > 1 {
				s += ","
			}
			s += fmt.Sprint(i)
		}
	}
	return s + "}"
}

// initialRoster is the roster every node starts with in a reconfiguring
// run: voters {0,1,2}, epoch 0.
var initialRoster = vsr.DefaultRoster(3)

// rostersInUse are the distinct voter sets of the replicas that are not
// removed: a crash must leave each of them a replication quorum.
func (g *group) rostersInUse() []uint32 {
	var sets []uint32
	for _, rp := range g.reps {
		if rp.core.Removed() {
			continue
		}
		v := rp.core.Roster().Voters
		found := false
		for _, s := range sets {
			found = found || s == v
		}
		if !found {
			sets = append(sets, v)
		}
	}
	return sets
}

// mayCrash reports whether node i may go down with the nodes already
// down: no voter set in use loses more than it tolerates.
func (r *run) mayCrash(i int) bool {
	for _, g := range r.groups {
		for _, s := range g.rostersInUse() {
			if s&(1<<i) == 0 {
				continue
			}
			n := bits.OnesCount32(s)
			down := 0
			for j, nd := range r.nodes {
				if nd.down && s&(1<<j) != 0 {
					down++
				}
			}
			if down+1 > n-vsr.QuorumReplication(n) {
				return false
			}
		}
	}
	return true
}

// appliedRoster records an applied R (the plan's invariant) and reports
// whether the op was one.
func (g *group) appliedRoster(i int, op uint64, frame []byte) bool {
	ro, ok := vsr.RosterOf(frame)
	if !ok {
		return false
	}
	if p := g.r.plan; p != nil {
		if at, seen := p.epochOps[ro.Epoch]; !seen {
			p.epochOps[ro.Epoch] = op
			g.r.event(i, "%sepoch %d opens at op %d: %v", g.name(), ro.Epoch, op, ro)
		} else if at != op {
			g.r.violate(fmt.Sprintf("%sreplica %d applied the R of epoch %d at op %d, another at %d", g.name(), i, ro.Epoch, op, at))
		}
	}
	return true
}

// checkRosters is the end of a reconfiguring run: the final roster is
// the plan's, agreed by every member; every R and every op below it is
// applied by every member at its op; every other node is removed.
func (g *group) checkRosters() {
	r := g.r
	p := r.plan
	l := g.leader()
	if p == nil || l < 0 {
		return
	}
	final := g.reps[l].core.Roster()
	if final.Voters != p.targets[len(p.targets)-1] || final.Changing() {
		r.violate(fmt.Sprintf("%sfinal roster %v, the plan ends at %s", g.name(), final, idsOf(p.targets[len(p.targets)-1])))
		return
	}
	for i, rp := range g.reps {
		if !final.Member(uint8(i)) {
			if !rp.core.Removed() {
				r.violate(fmt.Sprintf("%sreplica %d is not in the final roster and does not know it", g.name(), i))
			}
			continue
		}
		if rp.core.Roster() != final {
			r.violate(fmt.Sprintf("%sreplica %d holds roster %v, the leader %v", g.name(), i, rp.core.Roster(), final))
			return
		}
		for e, op := range p.epochOps {
			if uint64(len(rp.applied)) < op {
				r.violate(fmt.Sprintf("%sreplica %d lacks op %d, the R of epoch %d", g.name(), i, op, e))
				return
			}
			if ro, ok := vsr.RosterOf(rp.applied[op-1].frame); !ok || ro.Epoch != e {
				r.violate(fmt.Sprintf("%sreplica %d has another op than the R of epoch %d at op %d", g.name(), i, e, op))
				return
			}
		}
		for j, a := range rp.applied {
			if c, ok := g.canon[a.op]; !ok || !sameOp(c, a.frame) || a.op != uint64(j+1) {
				r.violate(fmt.Sprintf("%sreplica %d op %d differs from the op committed there", g.name(), i, a.op))
				return
			}
		}
	}
	r.res.Epochs = int(final.Epoch)
}

// settledMembers is quiet()'s per-group condition with a plan: the plan
// done, one roster, every member normal at the leader's view and commit,
// every other node removed.
func (g *group) settledMembers(l int) bool {
	p := g.r.plan
	lead := g.reps[l].core
	ro := lead.Roster()
	if !p.done() || ro.Changing() {
		return false
	}
	for i, rp := range g.reps {
		if !ro.Member(uint8(i)) {
			if !rp.core.Removed() {
				return false
			}
			continue
		}
		if rp.core.CommitMin() != lead.CommitMin() || rp.core.View() != lead.View() || rp.core.Status() != vsr.StatusNormal ||
			rp.core.Roster() != ro {
			return false
		}
	}
	return true
}

// servesTransferTo: besides a caught-up primary, any replica of a newer
// epoch than the requester's, removed ones included, serves it its
// committed state (S3, S6).
func (g *group) servesTransferTo(server, requester int) bool {
	s, q := g.reps[server].core, g.reps[requester].core
	if s.CaughtUpPrimary() {
		return true
	}
	return g.r.plan != nil && s.Epoch() > q.Epoch() && s.CommitMin() > 0 // a removed replica too (S6)
}

// rosterAt is the roster an installed offer applied: the last R in it.
func rosterAt(ops []applied, initial vsr.Roster) vsr.Roster {
	for j := len(ops) - 1; j >= 0; j-- {
		if wire.HeaderOf(ops[j].frame).Prepare().Operation != wire.OpReconfigure {
			continue
		}
		if ro, ok := vsr.RosterOf(ops[j].frame); ok {
			return ro
		}
	}
	return initial
}

// changing reports whether a membership change is under way: the plan
// has asked for a target not yet reached, or the replicas stand in
// different epochs.
func (r *run) changing() bool {
	p := r.plan
	if p == nil {
		return false
	}
	if !p.done() && r.now >= p.at[p.step] {
		return true
	}
	epoch := -1
	for _, rp := range r.groups[0].reps {
		if rp.core.Removed() {
			continue
		}
		if e := int(rp.core.Epoch()); epoch >= 0 && e != epoch || rp.core.Roster().Changing() {
			return true
		} else {
			epoch = e
		}
	}
	return false
}

// countCrash counts the crash of node i (just taken down) against a
// change in progress.
func (r *run) countCrash(i int) {
	if !r.changing() {
		return
	}
	rp := r.groups[0].reps[i]
	if rp.core.Leading() {
		r.res.PrimaryCrashesMidChange++
		r.event(i, "the primary goes down mid-change")
	}
	if rp.transfer != nil {
		r.res.TransferCrashes++
		r.event(i, "goes down during its state transfer")
	}
}

// countSplit counts a partition that cuts an old voter (of the oldest
// epoch in use) from a member the change brings in.
func (r *run) countSplit() {
	if !r.changing() {
		return
	}
	g := r.groups[0]
	oldest, newest := vsr.Roster{Epoch: ^uint32(0)}, vsr.Roster{}
	for _, rp := range g.reps {
		if ro := rp.core.Roster(); !rp.core.Removed() && ro.Voters != 0 {
			if ro.Epoch < oldest.Epoch {
				oldest = ro
			}
			if ro.Epoch >= newest.Epoch {
				newest = ro
			}
		}
	}
	incoming := (newest.Target | newest.Members()) &^ oldest.Voters
	for a := range r.nodes {
		for b := range r.nodes {
			if oldest.Voters&(1<<a) != 0 && incoming&(1<<b) != 0 && (r.net.links[a][b].cut || r.net.links[b][a].cut) {
				r.res.OldNewSplits++
				return
			}
		}
	}
}
