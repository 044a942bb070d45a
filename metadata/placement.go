package metadata

import (
	"math/bits"
	"slices"

	"iggynode/vsr"
	"iggynode/wire"
)

// Placement (issue 23): each partition's consensus group runs on a
// replica set of R of the cluster's N voters, not on all of them, and a
// preferred primary spreads leadership over the nodes. The metadata group
// decides both when it applies the op that creates the partition, and
// again when a roster change settles (applyReconfigure), so every replica
// computes the same placement from the same state: the rules below are
// plain functions of the applied state, with no clock, no traffic and no
// randomness.
//
//   - R is the topic's replication_factor (an extension option key of
//     CreateTopic, topicoptions.go; 0 or absent: DefaultReplicationFactor)
//     capped at N. A single node places nothing: every partition is on it.
//   - A new partition goes on the R nodes holding the fewest replicas
//     (ties: the nodes after the group's id in cyclic order, so equal loads
//     spread instead of piling on node 0); its preferred primary is the one
//     of those leading the fewest partitions. The group starts in the view
//     whose primary that is (vsr.Config.StartView), so a fresh topic is
//     led from every node without a single view change.
//   - When the roster settles on new voters, a partition drops the
//     replicas on nodes that left and takes the least loaded nodes in
//     their place; then single replicas move from the most to the least
//     loaded node until no two nodes differ by more than one; then
//     preferred primaries move the same way. Each move of a replica is a
//     reconfiguration of that group (the shell's group follower: the new
//     node joins as a learner, catches up by state transfer, the old one
//     leaves), so the fewer moves the better: nothing moves that the
//     spread does not need.
//
// The spread is by partition count, not by bytes: the state machine
// does not know how many bytes a partition will hold, and partitions of
// one topic take the same traffic when producers balance over them.
// Which replica leads at a given moment is the consensus core's business
// (views): the preferred primary is what the shell's balancer hands over
// to (a planned view change), never part of the safety argument.

// DefaultReplicationFactor is R when the topic does not say.
const DefaultReplicationFactor = 3

// Placement is where one partition group lives.
type Placement struct {
	// StartVoters and StartView are what the group was created with (every
	// replica, and a node that joins later, starts the group's epoch 0 on
	// them).
	StartVoters uint32
	StartView   uint32
	// Voters is the replica set the group should run on now, Leader its
	// preferred primary (one of Voters).
	Voters uint32
	Leader uint8
}

// Placement is partition group's placement (ok false: the group runs on
// every voter, as on a single node or for a partition placed by no rule).
func (s *State) Placement(group uint64) (Placement, bool) {
	p, ok := s.placement[group]
	return p, ok
}

// Placements lists every placed group's placement, by ascending group.
func (s *State) Placements() ([]uint64, []Placement) {
	groups := make([]uint64, 0, len(s.placement))
	for g := range s.placement {
		groups = append(groups, g)
	}
	slices.Sort(groups)
	out := make([]Placement, len(groups))
	for i, g := range groups {
		out[i] = s.placement[g]
	}
	return groups, out
}

// ClusterVoters are the voters partitions are placed on: the committed
// roster's, else the configured ones (Config.Voters).
func (s *State) ClusterVoters() uint32 {
	if s.roster != nil {
		return s.roster.Voters
	}
	return s.cfg.Voters
}

// ReplicationFactor is the R a partition of (stream, topic) gets on
// voters: the topic's, else the default, capped at the voter count.
func (s *State) ReplicationFactor(stream, topic uint32, voters uint32) int {
	r := DefaultReplicationFactor
	if ts, ok := s.TopicSettings(stream, topic); ok && ts.ReplicationFactor > 0 {
		r = int(ts.ReplicationFactor)
	}
	return min(r, bits.OnesCount32(voters))
}

// placer counts the replicas and preferred primaries each node holds.
type placer struct {
	voters uint32
	load   [vsr.MaxReplicas]int
	leads  [vsr.MaxReplicas]int
}

func (s *State) newPlacer(voters uint32) *placer {
	pl := &placer{voters: voters}
	for _, p := range s.placement {
		pl.add(p, 1)
	}
	return pl
}

func (pl *placer) add(p Placement, d int) {
	for m := p.Voters; m != 0; m &= m - 1 {
		pl.load[bits.TrailingZeros32(m)] += d
	}
	if p.Leader < vsr.MaxReplicas && p.Voters&(1<<p.Leader) != 0 {
		pl.leads[p.Leader] += d
	}
}

// order lists the ids of m by ascending key, ties in cyclic order from
// the one after rotate.
func order(m uint32, rotate uint64, key func(id uint8) int) []uint8 {
	var ids []uint8
	for ; m != 0; m &= m - 1 {
		ids = append(ids, uint8(bits.TrailingZeros32(m)))
	}
	cyc := func(id uint8) int { return (int(id) - int(rotate%vsr.MaxReplicas) + vsr.MaxReplicas) % vsr.MaxReplicas }
	slices.SortFunc(ids, func(a, b uint8) int {
		if ka, kb := key(a), key(b); ka != kb {
			return ka - kb
		}
		return cyc(a) - cyc(b)
	})
	return ids
}

// placeNew places a new group of r replicas.
func (pl *placer) placeNew(group uint64, r int) Placement {
	var set uint32
	for _, id := range order(pl.voters, group, func(id uint8) int { return pl.load[id] })[:r] {
		set |= 1 << id
	}
	leader := order(set, group, func(id uint8) int { return pl.leads[id] })[0]
	p := Placement{StartVoters: set, Voters: set, Leader: leader, StartView: uint32(bits.OnesCount32(set & (1<<leader - 1)))}
	pl.add(p, 1)
	return p
}

// placePartitions places the partitions an op created and forgets those
// it deleted (a cluster of one places nothing).
func (s *State) placePartitions(e Effects) {
	for _, p := range e.DeletedPartitions {
		delete(s.placement, p.Group)
	}
	voters := s.ClusterVoters()
	if len(e.CreatedPartitions) == 0 || bits.OnesCount32(voters) < 2 {
		return
	}
	pl := s.newPlacer(voters)
	for _, p := range e.CreatedPartitions {
		s.placement[p.Group] = pl.placeNew(p.Group, s.ReplicationFactor(p.Stream, p.Topic, voters))
	}
}

// rebalance re-places every partition over voters, the roster a change
// settled on (the rules in the comment at the top).
func (s *State) rebalance(voters uint32) {
	if bits.OnesCount32(voters) < 2 {
		return
	}
	parts := s.Partitions()
	pl := &placer{voters: voters}
	// Replicas on nodes still voting stay where they are.
	next := make(map[uint64]Placement, len(parts))
	for _, ref := range parts {
		p, ok := s.placement[ref.Group]
		if !ok {
			start := s.PartitionStartVoters(ref.Group)
			p = Placement{StartVoters: start, Voters: start, Leader: uint8(bits.TrailingZeros32(start))}
		}
		p.Voters &= voters
		next[ref.Group] = p
		pl.add(Placement{Voters: p.Voters, Leader: p.Leader}, 1)
	}
	// Each partition back to its R: the least loaded nodes fill in, the
	// most loaded give up what is over.
	for _, ref := range parts {
		p, r := next[ref.Group], s.ReplicationFactor(ref.Stream, ref.Topic, voters)
		for bits.OnesCount32(p.Voters) < r {
			id := order(voters&^p.Voters, ref.Group, func(id uint8) int { return pl.load[id] })[0]
			p.Voters |= 1 << id
			pl.load[id]++
		}
		for bits.OnesCount32(p.Voters) > r {
			ids := order(p.Voters, ref.Group, func(id uint8) int { return -pl.load[id] })
			p.Voters &^= 1 << ids[0]
			pl.load[ids[0]]--
		}
		next[ref.Group] = p
	}
	// Even out replicas, one at a time from the most to the least loaded.
	for range len(parts) * vsr.MaxReplicas {
		byLoad := order(voters, 0, func(id uint8) int { return pl.load[id] })
		lo, hi := byLoad[0], byLoad[len(byLoad)-1]
		if pl.load[hi]-pl.load[lo] <= 1 || !moveOne(parts, next, hi, lo, false) {
			break
		}
		pl.load[hi]--
		pl.load[lo]++
	}
	// Preferred primaries: on a member, then evened out the same way.
	pl.leads = [vsr.MaxReplicas]int{}
	for _, ref := range parts {
		if p := next[ref.Group]; p.Voters&(1<<p.Leader) != 0 {
			pl.leads[p.Leader]++
		}
	}
	for _, ref := range parts {
		p := next[ref.Group]
		if p.Voters&(1<<p.Leader) == 0 {
			p.Leader = order(p.Voters, ref.Group, func(id uint8) int { return pl.leads[id] })[0]
			pl.leads[p.Leader]++
			next[ref.Group] = p
		}
	}
	for range len(parts) * vsr.MaxReplicas {
		byLeads := order(voters, 0, func(id uint8) int { return pl.leads[id] })
		lo, hi := byLeads[0], byLeads[len(byLeads)-1]
		if pl.leads[hi]-pl.leads[lo] <= 1 || !moveOne(parts, next, hi, lo, true) {
			break
		}
		pl.leads[hi]--
		pl.leads[lo]++
	}
	s.placement = next
}

// moveOne moves one replica (or, with lead, one preferred primary) of the
// first partition that allows it from node from to node to.
func moveOne(parts []PartitionRef, next map[uint64]Placement, from, to uint8, lead bool) bool {
	for _, pass := range []bool{true, false} {
		for _, ref := range parts {
			p := next[ref.Group]
			switch {
			case lead && p.Leader == from && p.Voters&(1<<to) != 0:
				p.Leader = to
			case !lead && p.Voters&(1<<from) != 0 && p.Voters&(1<<to) == 0 && (!pass || p.Leader != from):
				// First pass: a replica that is not the preferred primary,
				// so the move needs no hand-over.
				p.Voters = p.Voters&^(1<<from) | 1<<to
			default:
				continue
			}
			next[ref.Group] = p
			return true
		}
		if lead {
			break
		}
	}
	return false
}

// PartitionStartVoters are the voters a partition group starts epoch 0
// on: its placement's, else those recorded at the first roster change,
// else the configured roster's (0).
func (s *State) PartitionStartVoters(group uint64) uint32 {
	if v, ok := s.PartitionVoters(group); ok {
		return v
	}
	return s.cfg.Voters
}

// appendPlacement is the snapshot's placement section (tag 5): u32 count,
// then by ascending group: u64 group, u32 start_voters, u32 start_view,
// u32 voters, u8 leader.
func (s *State) appendPlacement(b []byte) []byte {
	groups, ps := s.Placements()
	b = wire.AppendU32(b, uint32(len(groups)))
	for i, g := range groups {
		p := ps[i]
		b = wire.AppendU64(b, g)
		b = wire.AppendU32(b, p.StartVoters)
		b = wire.AppendU32(b, p.StartView)
		b = wire.AppendU32(b, p.Voters)
		b = append(b, p.Leader)
	}
	return b
}

const placementRecordSize = 8 + 4 + 4 + 4 + 1

func (s *State) decodePlacement(sec []byte) error {
	rd := wire.NewReader(sec)
	n := rd.U32("placement_count")
	if rd.Err() != nil || uint64(n)*placementRecordSize != uint64(rd.Len()) {
		return snapErr("placement: %d records in %d bytes", n, rd.Len())
	}
	out := make(map[uint64]Placement, n)
	last := uint64(0)
	for i := uint32(0); i < n; i++ {
		g := rd.U64("group")
		p := Placement{StartVoters: rd.U32("start_voters"), StartView: rd.U32("start_view"), Voters: rd.U32("voters"), Leader: rd.U8("leader")}
		switch {
		case i > 0 && g <= last:
			return snapErr("placement: groups not ascending at %d", g)
		case p.Voters == 0 || p.StartVoters == 0 || p.Leader >= vsr.MaxReplicas || p.Voters&(1<<p.Leader) == 0:
			return snapErr("placement: group %d: voters %b start %b leader %d", g, p.Voters, p.StartVoters, p.Leader)
		case p.StartView >= uint32(bits.OnesCount32(p.StartVoters)):
			return snapErr("placement: group %d: start view %d of %d voters", g, p.StartView, bits.OnesCount32(p.StartVoters))
		}
		out[g], last = p, g
	}
	s.placement = out
	return nil
}
