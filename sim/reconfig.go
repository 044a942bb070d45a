package sim

import (
	"fmt"
	"math/bits"
	"math/rand/v2"

	"iggynode/vsr"
	"iggynode/wire"
)

// Membership changes (issue 22; vsr/reconfig.go) and partition placement
// (issue 23). A group with a plan starts with a roster that names some of
// the nodes; the others host a joiner, a fresh replica that knows a
// roster without it. At ticks the seed draws, the harness asks the
// group's leader to move to the plan's next target, retrying until the
// leader's roster names it, while every fault of the run goes on (the
// primary crashes mid-change, partitions cut old members from new, a
// joiner crashes during its transfer).
//
// With Config.Reconfig the metadata group alone runs one of three plans,
// by seed mod 3, from voters {0,1,2}:
//
//	0: grow 3 -> 5, then shrink to a random 3 of the 5 (often without the
//	   primary of the moment);
//	1: replace one of {0,1,2} by 3, then another by 4;
//	2: remove one of {0,1,2} (3 -> 2), then add 3 (2 -> 3).
//
// With Config.Placement R every partition group starts on R nodes of the
// run's Replicas, drawn for it from the seed, with its first primary
// spread by vsr.Config.StartView (group mod R), and moves up to three
// times: each move swaps one member (the primary too) for a node outside
// the group's set, so a node is in some groups and not others, leaves a
// group and may come back to it later, and moves of different groups
// overlap.
//
// Checked besides the invariants of every run, per group (one place per
// rule):
//   - one leading primary per view across all nodes, old and new members
//     alike (views of different epochs never share a number,
//     vsr.EpochOf): checkTick, which every group's every node is in;
//   - a replica acts only in epochs whose roster names it: every
//     view-scoped frame it sends (a vote or a StartView only as a voter),
//     and every op it applies (checkActs, checkApplier);
//   - a crash never takes more voters down or faulty than any roster in
//     use tolerates (mayCrash);
//   - no op committed before or during a move is lost: at the end every
//     final member holds every op any replica applied, at its op, the R
//     of every epoch among them (checkRosters);
//   - at quiescence every member holds the plan's last roster, the
//     leader's, with no change in progress and quiet where groups
//     quiesce; every other node that was ever a member says it is
//     removed, and one that never was has applied nothing
//     (settledMembers, checkRosters).

// reconfigPlan is the targets a group moves through, when, and what it
// did.
type reconfigPlan struct {
	nodes   int        // nodes the run needs (Config.Reconfig)
	initial vsr.Roster // every node's roster at start
	targets []uint32
	at      []int // the tick each target is first asked for
	step    int   // the next target to reach
	// epochOps: the op of each applied R, by the epoch it opens; rosters
	// the roster of every epoch entered (epoch 0: initial); members every
	// node some epoch's roster named.
	epochOps map[uint32]uint64
	rosters  map[uint32]vsr.Roster
	members  uint32
}

func newPlan(initial vsr.Roster) *reconfigPlan {
	return &reconfigPlan{initial: initial, epochOps: map[uint32]uint64{}, rosters: map[uint32]vsr.Roster{initial.Epoch: initial},
		members: initial.Members()}
}

// planFor is Config.Reconfig's plan for a seed.
func planFor(seed uint64) *reconfigPlan {
	rng := rand.New(rand.NewPCG(seed, 0x4ec0f))
	p := newPlan(vsr.DefaultRoster(3))
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

// placementPlan is Config.Placement's plan for group k: replicas of the
// nodes, and up to three moves of one replica each.
func placementPlan(seed uint64, k, nodes, replicas int) *reconfigPlan {
	rng := rand.New(rand.NewPCG(seed, 0x91ace^uint64(k)<<8))
	var voters uint32
	for _, id := range rng.Perm(nodes)[:replicas] {
		voters |= 1 << id
	}
	p := newPlan(vsr.Roster{Voters: voters, Target: voters})
	at := 150 + rng.IntN(1200)
	for range rng.IntN(4) {
		voters = voters&^(1<<nthNode(voters, rng.IntN(replicas))) | 1<<nthNode(allNodes(nodes)&^voters, rng.IntN(nodes-replicas))
		p.targets = append(p.targets, voters)
		p.at = append(p.at, at)
		at += 200 + rng.IntN(600)
	}
	return p
}

func allNodes(n int) uint32 { return uint32(1)<<n - 1 }

// nthNode is the id of the i-th set bit of m.
func nthNode(m uint32, i int) int {
	for ; i > 0; i-- {
		m &= m - 1
	}
	return bits.TrailingZeros32(m)
}

func (p *reconfigPlan) done() bool { return p.step == len(p.targets) }

// moveTicks is what the liveness phase gives each target a plan has
// left when the faults end (a group that lost its leader to the faults
// elects first; each move takes a learner's transfer and two commits):
// its budget is from healing, and those moves come after it.
const moveTicks = 1000

// movesLeft is the most targets any group's plan has left.
func (r *run) movesLeft() int {
	n := 0
	for _, g := range r.groups {
		if p := g.plan; p != nil {
			n = max(n, len(p.targets)-p.step)
		}
	}
	return n
}

// final is the voter set the plan ends at.
func (p *reconfigPlan) final() uint32 {
	if len(p.targets) == 0 {
		return p.initial.Voters
	}
	return p.targets[len(p.targets)-1]
}

// epochAt is the epoch whose log holds op: the R opening epoch e+1 is
// the last op of epoch e.
func (p *reconfigPlan) epochAt(op uint64) uint32 {
	e := p.initial.Epoch
	for {
		at, ok := p.epochOps[e+1]
		if !ok || at >= op {
			return e
		}
		e++
	}
}

// reconfigure asks the leader for the plan's next target when it is due.
func (g *group) reconfigure() {
	r := g.r
	p := g.plan
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
		r.event(l, "%sroster reached: %v", g.name(), ro)
		r.res.Moves++
		p.step++
		if !p.done() {
			p.at[p.step] = max(p.at[p.step], r.now+100)
		}
	case ro.Target == target:
		// R2 follows on its own once the learners hold the log.
	default:
		g.catchUp(l, r.now-1)
		if err := c.Reconfigure(target, uint64(r.now)*10_000); err == nil {
			r.event(l, "%sreconfiguration asked: voters %s from %v", g.name(), idsOf(target), ro)
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

// rostersInUse are the distinct voter sets of the group's members: a
// crash must leave each of them a replication quorum.
func (g *group) rostersInUse() []uint32 {
	var sets []uint32
	for _, rp := range g.reps {
		if !rp.core.Member() {
			continue // removed, or a joiner: it votes in no set
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

// mayCrash reports whether node i may go down now: in no group does a
// voter set in use lose more than it tolerates, counting the nodes down
// and the replicas that restarted without their memory journal and have
// not caught up (faulty, 9.4 rule 6).
func (r *run) mayCrash(i int) bool {
	for _, g := range r.groups {
		if g.plan == nil {
			continue
		}
		for _, s := range g.rostersInUse() {
			if s&(1<<i) == 0 {
				continue
			}
			n := bits.OnesCount32(s)
			faulty := 0
			for j, nd := range r.nodes {
				if j != i && s&(1<<j) != 0 && (nd.down || g.reps[j].amnesiac) {
					faulty++
				}
			}
			if faulty+1 > n-vsr.QuorumReplication(n) {
				return false
			}
		}
	}
	return true
}

// appliedRoster records an applied R (the plan's invariants) and reports
// whether the op was one.
func (g *group) appliedRoster(i int, op uint64, frame []byte) bool {
	ro, ok := vsr.RosterOf(frame)
	if !ok {
		return false
	}
	if p := g.plan; p != nil {
		if at, seen := p.epochOps[ro.Epoch]; !seen {
			p.epochOps[ro.Epoch], p.rosters[ro.Epoch] = op, ro
			p.members |= ro.Members()
			g.r.event(i, "%sepoch %d opens at op %d: %v", g.name(), ro.Epoch, op, ro)
		} else if at != op || p.rosters[ro.Epoch] != ro {
			g.r.violate(fmt.Sprintf("%sreplica %d applied the R of epoch %d at op %d (%v), another at %d (%v)", g.name(), i, ro.Epoch, op, ro, at, p.rosters[ro.Epoch]))
		}
	}
	return true
}

// checkActs: replica i sends a view-scoped frame (head) only in an epoch
// whose roster names it, as a voter for a vote or a StartView. The
// Commit hint of S3 (heartbeat counter 0), with which a removed replica
// answers a frame of an older epoch, is not taking part.
func (g *group) checkActs(i int, head []byte) {
	p := g.plan
	if p == nil {
		return
	}
	h := wire.HeaderOf(head)
	vote := false
	switch h.Command() {
	case wire.CmdStartViewChange, wire.CmdDoViewChange, wire.CmdStartView:
		vote = true
	case wire.CmdPrepare, wire.CmdPrepareOk, wire.CmdRequestStartView:
	case wire.CmdCommit:
		if c, err := wire.DecodeCommitHeader(h); err == nil && c.TimestampMonotonic == 0 {
			return
		}
	default:
		return
	}
	e := vsr.EpochOf(h.View())
	ro, ok := p.rosters[e]
	switch {
	case !ok:
		g.r.violate(fmt.Sprintf("%sreplica %d sent %v of epoch %d, which no applied R opened", g.name(), i, h.Command(), e))
	case !ro.Member(uint8(i)) || vote && !ro.Voter(uint8(i)):
		g.r.violate(fmt.Sprintf("%sreplica %d sent %v in view %d, whose roster (%v) does not name it", g.name(), i, h.Command(), h.View(), ro))
	}
}

// checkApplier: replica i applies op only if the roster of the epoch
// holding op names it.
func (g *group) checkApplier(i int, op uint64) {
	p := g.plan
	if p == nil {
		return
	}
	if e := p.epochAt(op); !p.rosters[e].Member(uint8(i)) {
		g.r.violate(fmt.Sprintf("%sreplica %d applied op %d of epoch %d, whose roster (%v) does not name it", g.name(), i, op, e, p.rosters[e]))
	}
}

// checkRosters is the end of a run with a plan: the final roster is the
// plan's, agreed by every member; every op any replica applied is
// applied by every member at its op, every epoch's R among them; every
// other node is removed, or never took part.
func (g *group) checkRosters() {
	r := g.r
	p := g.plan
	l := g.leader()
	if p == nil || l < 0 {
		return
	}
	final := g.reps[l].core.Roster()
	if final.Voters != p.final() || final.Changing() {
		r.violate(fmt.Sprintf("%sfinal roster %v, the plan ends at %s", g.name(), final, idsOf(p.final())))
		return
	}
	var top uint64
	for op := range g.canon {
		top = max(top, op)
	}
	for i, rp := range g.reps {
		if !final.Member(uint8(i)) {
			switch {
			case p.members&(1<<i) != 0 && !rp.core.Removed():
				r.violate(fmt.Sprintf("%sreplica %d is not in the final roster and does not know it", g.name(), i))
			case p.members&(1<<i) == 0 && (rp.core.Removed() || len(rp.applied) > 0):
				r.violate(fmt.Sprintf("%sreplica %d was never a member, yet applied %d ops (removed %v)", g.name(), i, len(rp.applied), rp.core.Removed()))
			}
			continue
		}
		if rp.core.Roster() != final {
			r.violate(fmt.Sprintf("%sreplica %d holds roster %v, the leader %v", g.name(), i, rp.core.Roster(), final))
			return
		}
		if n := uint64(len(rp.applied)); n < top {
			r.violate(fmt.Sprintf("%sreplica %d lacks committed op %d (applied %d)", g.name(), i, top, n))
			return
		}
		for e, op := range p.epochOps {
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
	r.res.Epochs += int(final.Epoch)
}

// settledMembers is settled's condition with a plan: the plan done, one
// roster, every member normal at the leader's view and commit (and
// quiet where groups quiesce), every other node that was ever a member
// removed.
func (g *group) settledMembers(l int) bool {
	p := g.plan
	lead := g.reps[l].core
	ro := lead.Roster()
	if !p.done() || ro.Changing() {
		return false
	}
	for i, rp := range g.reps {
		if !ro.Member(uint8(i)) {
			if p.members&(1<<i) != 0 && !rp.core.Removed() {
				return false
			}
			continue
		}
		if rp.core.CommitMin() != lead.CommitMin() || rp.core.View() != lead.View() || rp.core.Status() != vsr.StatusNormal ||
			rp.core.Roster() != ro || g.r.cfg.Quiesce && !rp.core.Quiet() {
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
	return g.plan != nil && s.Epoch() > q.Epoch() && s.CommitMin() > 0 // a removed replica too (S6)
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

// changing reports whether a membership change of g is under way: the
// plan has asked for a target not yet reached, or its members stand in
// different epochs.
func (g *group) changing() bool {
	p := g.plan
	if p == nil {
		return false
	}
	if !p.done() && g.r.now >= p.at[p.step] {
		return true
	}
	epoch := -1
	for _, rp := range g.reps {
		if !rp.core.Member() {
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

// countCrash counts the crash of node i (just taken down) against the
// changes in progress.
func (r *run) countCrash(i int) {
	for _, g := range r.groups {
		if !g.changing() {
			continue
		}
		rp := g.reps[i]
		if rp.core.Leading() {
			r.res.PrimaryCrashesMidChange++
			r.event(i, "%sthe primary goes down mid-change", g.name())
		}
		if rp.transfer != nil {
			r.res.TransferCrashes++
			r.event(i, "%sgoes down during its state transfer", g.name())
		}
	}
}

// countSplit counts a partition that cuts, in a group changing, an old
// voter (of the oldest epoch in use) from a member the change brings in.
func (r *run) countSplit() {
	for _, g := range r.groups {
		if g.changing() && g.splitsOldFromNew() {
			r.res.OldNewSplits++
			return
		}
	}
}

func (g *group) splitsOldFromNew() bool {
	oldest, newest := vsr.Roster{Epoch: ^uint32(0)}, vsr.Roster{}
	for _, rp := range g.reps {
		if ro := rp.core.Roster(); rp.core.Member() {
			if ro.Epoch < oldest.Epoch {
				oldest = ro
			}
			if ro.Epoch >= newest.Epoch {
				newest = ro
			}
		}
	}
	incoming := (newest.Target | newest.Members()) &^ oldest.Voters
	links := g.r.net.links
	for a := range g.r.nodes {
		for b := range g.r.nodes {
			if oldest.Voters&(1<<a) != 0 && incoming&(1<<b) != 0 && (links[a][b].cut || links[b][a].cut) {
				return true
			}
		}
	}
	return false
}
