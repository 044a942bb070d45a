package metadata

import (
	"math"
	"sort"

	"iggynode/wire"
)

// Consumer groups (server-behaviour.md 7; client-plane.md 8.10). Every
// group command needs "read topic" on the group's topic; membership is
// keyed by the session's client id. Assignments change only at apply, so
// they are identical on every replica.

// GroupRef names a consumer group by numeric ids.
type GroupRef struct{ Stream, Topic, Group uint32 }

// PendingRevocation is a partition a member still owns but no longer
// polls, waiting to be handed to the member in TargetSlot
// (server-behaviour.md 7.4.5). The shell completes it with
// Completion() once the group's committed offset on the partition reaches
// its last polled offset, or after consumer_group.rebalancing_timeout
// counted from Since (7.4.6).
type PendingRevocation struct {
	Stream, Topic, Group uint32
	Partition            uint32
	PartitionGroup       uint64 // the partition's consensus group (replica-plane.md 4.1)
	Source               wire.U128
	SourceSlot           uint32
	TargetSlot           uint32
	Since                uint64 // µs, the prepare timestamp of the join that started it
}

func (t *Topic) group(id wire.Identifier) (*ConsumerGroup, bool) {
	return lookup(id, t.groups, t.groupByName)
}

func (g *ConsumerGroup) member(client wire.U128) *GroupMember {
	for _, m := range g.Members {
		if m.Client == client {
			return m
		}
	}
	return nil
}

func (g *ConsumerGroup) memberAt(slot uint32) *GroupMember {
	for _, m := range g.Members {
		if m.Slot == slot {
			return m
		}
	}
	return nil
}

// addMember inserts client at the lowest free slot, keeping slots ascending.
func (g *ConsumerGroup) addMember(client wire.U128) *GroupMember {
	slot := uint32(0)
	at := 0
	for at < len(g.Members) && g.Members[at].Slot == slot {
		slot++
		at++
	}
	m := &GroupMember{Slot: slot, Client: client}
	g.Members = append(g.Members, nil)
	copy(g.Members[at+1:], g.Members[at:])
	g.Members[at] = m
	return m
}

func (g *ConsumerGroup) removeMember(m *GroupMember) {
	kept := g.Members[:0]
	for _, x := range g.Members {
		if x != m {
			kept = append(kept, x)
		}
	}
	clear(g.Members[len(kept):])
	g.Members = kept
}

func (m *GroupMember) pending(p uint32) bool {
	for _, r := range m.Revocations {
		if r.PartitionID == p {
			return true
		}
	}
	return false
}

// pollable is the member's partitions not pending hand-off, in its order.
func (m *GroupMember) pollable() []uint32 {
	out := make([]uint32, 0, len(m.Partitions))
	for _, p := range m.Partitions {
		if !m.pending(p) {
			out = append(out, p)
		}
	}
	return out
}

func (m *GroupMember) owns(p uint32) bool {
	for _, x := range m.Partitions {
		if x == p {
			return true
		}
	}
	return false
}

func (m *GroupMember) drop(p uint32) {
	kept := m.Partitions[:0]
	for _, x := range m.Partitions {
		if x != p {
			kept = append(kept, x)
		}
	}
	m.Partitions = kept
}

// rebalance is the full round-robin rebalance (7.3): generation + 1,
// assignments and pending revocations cleared, partitions (ascending)
// dealt over members (ascending slot).
func (g *ConsumerGroup) rebalance(partitions int) {
	g.Generation++
	for _, m := range g.Members {
		m.Partitions, m.Revocations = nil, nil
	}
	if len(g.Members) == 0 {
		return
	}
	for p := 0; p < partitions; p++ {
		m := g.Members[p%len(g.Members)]
		m.Partitions = append(m.Partitions, uint32(p))
	}
}

// handOff is one partition the cooperative rebalance moves.
type handOff struct {
	from      *GroupMember
	partition uint32
}

// startedRevocation is a pending revocation a join started.
type startedRevocation struct {
	source *GroupMember
	rev    Revocation
}

// cooperativeRebalance runs after a join (7.4): generation + 1; unowned
// partitions are dealt round robin to idle members (7.4.2); each member
// keeps its allowance of fair or, for the first `remainder` members
// (ascending slot) holding more than fair, fair + 1 pollable partitions,
// and the excess, taken from the end of its list, goes round robin to the
// idle members that no pending revocation targets (7.4.3, 7.4.4). An
// excess partition in inFlight becomes a pending revocation (since now)
// instead of moving (7.4.5). It returns the revocations it started.
func (g *ConsumerGroup) cooperativeRebalance(partitions int, inFlight []uint32, now uint64) []startedRevocation {
	g.Generation++
	if len(g.Members) == 0 || partitions == 0 {
		return nil
	}
	owned := make(map[uint32]bool)
	for _, m := range g.Members {
		for _, p := range m.Partitions {
			owned[p] = true
		}
	}
	if idle := g.idle(nil); len(idle) > 0 {
		i := 0
		for p := uint32(0); int(p) < partitions; p++ {
			if !owned[p] {
				idle[i%len(idle)].Partitions = append(idle[i%len(idle)].Partitions, p)
				i++
			}
		}
	}
	fair, extra := partitions/len(g.Members), partitions%len(g.Members)
	var excess []handOff
	for _, m := range g.Members {
		active := m.pollable()
		allowance := fair
		if extra > 0 && len(active) > fair {
			allowance++
			extra--
		}
		for _, p := range active[min(allowance, len(active)):] {
			excess = append(excess, handOff{from: m, partition: p})
		}
	}
	targeted := make(map[uint32]bool)
	for _, m := range g.Members {
		for _, r := range m.Revocations {
			targeted[r.TargetSlot] = true
		}
	}
	targets := g.idle(targeted)
	if len(targets) == 0 {
		return nil
	}
	var started []startedRevocation
	for i, h := range excess {
		to := targets[i%len(targets)]
		if !containsU32(inFlight, h.partition) {
			h.from.drop(h.partition)
			to.Partitions = append(to.Partitions, h.partition)
			continue
		}
		r := Revocation{PartitionID: h.partition, TargetSlot: to.Slot, Since: now}
		h.from.Revocations = append(h.from.Revocations, r)
		sort.Slice(h.from.Revocations, func(a, b int) bool {
			return h.from.Revocations[a].PartitionID < h.from.Revocations[b].PartitionID
		})
		started = append(started, startedRevocation{source: h.from, rev: r})
	}
	return started
}

// idle lists the members owning nothing, ascending slot, except the slots
// in skip.
func (g *ConsumerGroup) idle(skip map[uint32]bool) []*GroupMember {
	var out []*GroupMember
	for _, m := range g.Members {
		if len(m.Partitions) == 0 && !skip[m.Slot] {
			out = append(out, m)
		}
	}
	return out
}

func containsU32(s []uint32, v uint32) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// rebalanceGroups fully rebalances every group of t after a partition
// count change (7.3).
func (t *Topic) rebalanceGroups() {
	for _, g := range t.groups {
		g.rebalance(len(t.Partitions))
	}
}

// leaveAllGroups removes client from every group it joined and fully
// rebalances each affected group (7.8.1).
func (s *State) leaveAllGroups(client wire.U128) {
	for _, st := range s.streams {
		for _, t := range st.topics {
			for _, g := range t.groups {
				if m := g.member(client); m != nil {
					g.removeMember(m)
					g.rebalance(len(t.Partitions))
				}
			}
		}
	}
}

// resolveGroupCmd is the committed check order of the group commands:
// stream 1009, topic 2010, "read topic" 41, then the group 5000.
func (s *State) resolveGroupCmd(c *applyCtx, stream, topic, group wire.Identifier) (*Stream, *Topic, *ConsumerGroup, wire.ErrorCode) {
	st, t, code := s.resolveTopic(stream, topic)
	if code != 0 {
		return nil, nil, nil, code
	}
	if !s.Allowed(c.ph.UserID, RuleTopicRead, st.ID, t.ID) {
		return nil, nil, nil, wire.ErrUnauthorized
	}
	g, ok := t.group(group)
	if !ok {
		return nil, nil, nil, wire.ErrConsumerGroupIdNotFound
	}
	return st, t, g, 0
}

func groupResponse(t *Topic, g *ConsumerGroup) wire.ConsumerGroupResponse {
	return wire.ConsumerGroupResponse{ID: g.ID, PartitionsCount: uint32(len(t.Partitions)),
		MembersCount: uint32(len(g.Members)), Name: g.Name}
}

func groupDetails(t *Topic, g *ConsumerGroup) wire.ConsumerGroupDetails {
	d := wire.ConsumerGroupDetails{ConsumerGroupResponse: groupResponse(t, g)}
	for _, m := range g.Members {
		d.Members = append(d.Members, wire.ConsumerGroupMember{ID: m.Slot, Partitions: append([]uint32(nil), m.Partitions...)})
	}
	return d
}

// applyCreateGroup (139): 1009, 2010, 41, 5004; the id is the topic's
// next_group_id (never reused). The id space ends below u32::MAX (the
// snapshot needs id < next_group_id): R 5002 past it.
func (s *State) applyCreateGroup(c *applyCtx) (wire.ErrorCode, []byte) {
	var req wire.CreateConsumerGroup
	if req.Decode(c.body) != nil {
		return wire.ErrInvalidCommand, nil
	}
	st, t, code := s.resolveTopic(req.Stream, req.Topic)
	if code != 0 {
		return code, nil
	}
	if !s.Allowed(c.ph.UserID, RuleTopicRead, st.ID, t.ID) {
		return wire.ErrUnauthorized, nil
	}
	if _, taken := t.groupByName[req.Name]; taken {
		return wire.ErrConsumerGroupNameAlreadyExists, nil
	}
	if t.NextGroupID == math.MaxUint32 {
		return wire.ErrInvalidConsumerGroupId, nil
	}
	g := &ConsumerGroup{ID: t.NextGroupID, Name: req.Name}
	t.NextGroupID++
	t.addGroup(g)
	return 0, groupDetails(t, g).AppendTo(nil)
}

// applyDeleteGroup (140): removes the group and its memberships; the
// shell purges its offsets (Effects.DeletedGroups, 6.6).
func (s *State) applyDeleteGroup(c *applyCtx) (wire.ErrorCode, []byte) {
	var req wire.DeleteConsumerGroup
	if req.Decode(c.body) != nil {
		return wire.ErrInvalidCommand, nil
	}
	st, t, g, code := s.resolveGroupCmd(c, req.Stream, req.Topic, req.Group)
	if code != 0 {
		return code, nil
	}
	delete(t.groups, g.ID)
	delete(t.groupByName, g.Name)
	c.effects.DeletedGroups = append(c.effects.DeletedGroups, GroupRef{Stream: st.ID, Topic: t.ID, Group: g.ID})
	return 0, nil
}

// applyJoinGroup (148): a member joining again is a no-op success;
// otherwise the client takes the lowest free slot and the group
// rebalances cooperatively with the in-flight list admission read.
func (s *State) applyJoinGroup(c *applyCtx) (wire.ErrorCode, []byte) {
	var req joinBody
	if req.Decode(c.body) != nil {
		return wire.ErrInvalidCommand, nil
	}
	st, t, g, code := s.resolveGroupCmd(c, req.Stream, req.Topic, req.Group)
	if code != 0 {
		return code, nil
	}
	if g.member(req.Client) != nil {
		return 0, nil
	}
	g.addMember(req.Client)
	for _, sr := range g.cooperativeRebalance(len(t.Partitions), req.InFlight, c.ph.Timestamp) {
		c.effects.Revocations = append(c.effects.Revocations, pendingOf(st, t, g, sr.source, sr.rev))
	}
	sortRevocations(c.effects.Revocations)
	return 0, nil
}

func pendingOf(st *Stream, t *Topic, g *ConsumerGroup, m *GroupMember, r Revocation) PendingRevocation {
	return PendingRevocation{Stream: st.ID, Topic: t.ID, Group: g.ID, Partition: r.PartitionID,
		PartitionGroup: partitionGroup(st.ID, t.ID, r.PartitionID), Source: m.Client, SourceSlot: m.Slot,
		TargetSlot: r.TargetSlot, Since: r.Since}
}

// applyLeaveGroup (149): 5006 for a non-member; otherwise the member goes
// and the group fully rebalances (7.2.2).
func (s *State) applyLeaveGroup(c *applyCtx) (wire.ErrorCode, []byte) {
	var req leaveBody
	if req.Decode(c.body) != nil {
		return wire.ErrInvalidCommand, nil
	}
	_, t, g, code := s.resolveGroupCmd(c, req.Stream, req.Topic, req.Group)
	if code != 0 {
		return code, nil
	}
	m := g.member(req.Client)
	if m == nil {
		return wire.ErrConsumerGroupMemberNotFound, nil
	}
	g.removeMember(m)
	g.rebalance(len(t.Partitions))
	return 0, nil
}

// applyCompleteRevocation (67, server-originated): moves the partition to
// the target member with generation + 1, or fully rebalances when the
// target has left (7.4.6). A stale completion is a committed no-op: 5000
// for a missing group, 5006 for a missing source member, 20 when the
// revocation is no longer pending. Only root (the server, user 0) may
// carry it.
func (s *State) applyCompleteRevocation(c *applyCtx) (wire.ErrorCode, []byte) {
	var req revocationBody
	if req.Decode(c.body) != nil {
		return wire.ErrInvalidCommand, nil
	}
	if c.ph.UserID != RootUserID {
		return wire.ErrUnauthorized, nil
	}
	_, t, code := s.resolveTopic(req.Stream, req.Topic)
	if code != 0 {
		return code, nil
	}
	if req.GroupID > math.MaxUint32 {
		return wire.ErrConsumerGroupIdNotFound, nil
	}
	g, ok := t.groups[uint32(req.GroupID)]
	if !ok {
		return wire.ErrConsumerGroupIdNotFound, nil
	}
	src := g.member(req.Source)
	if src == nil {
		return wire.ErrConsumerGroupMemberNotFound, nil
	}
	at := -1
	for i, r := range src.Revocations {
		if r.PartitionID == req.Partition {
			at = i
		}
	}
	if at < 0 {
		return wire.ErrResourceNotFound, nil
	}
	target := g.memberAt(src.Revocations[at].TargetSlot)
	src.Revocations = append(src.Revocations[:at:at], src.Revocations[at+1:]...)
	if target == nil {
		g.rebalance(len(t.Partitions))
		return 0, nil
	}
	g.Generation++
	src.drop(req.Partition)
	target.Partitions = append(target.Partitions, req.Partition)
	return 0, nil
}

// GetConsumerGroup (600): S 1009/2010 for the parents, S 41 without "read
// topic", Z for an unknown group; members with every partition they own
// (pending hand-offs included, 7.7.1).
func (s *State) GetConsumerGroup(userID uint32, req wire.GetConsumerGroup) (wire.ErrorCode, []byte) {
	st, t, code := s.resolveTopic(req.Stream, req.Topic)
	if code != 0 {
		return code, nil
	}
	if !s.Allowed(userID, RuleTopicRead, st.ID, t.ID) {
		return wire.ErrUnauthorized, nil
	}
	g, ok := t.group(req.Group)
	if !ok {
		return 0, nil
	}
	return 0, groupDetails(t, g).AppendTo(nil)
}

// GetConsumerGroups (601): S 1009/2010, S 41; the groups ascending by id
// (7.7.2 Recommended), an empty body when there are none.
func (s *State) GetConsumerGroups(userID uint32, req wire.GetConsumerGroups) (wire.ErrorCode, []byte) {
	st, t, code := s.resolveTopic(req.Stream, req.Topic)
	if code != 0 {
		return code, nil
	}
	if !s.Allowed(userID, RuleTopicRead, st.ID, t.ID) {
		return wire.ErrUnauthorized, nil
	}
	var b []byte
	for _, g := range t.sortedGroups() {
		b = groupResponse(t, g).AppendTo(b)
	}
	return 0, b
}

// SyncConsumerGroup (606): the generation and the caller's pollable
// partitions; Z for a non-member or anything that does not resolve. No
// permission check (7.5).
func (s *State) SyncConsumerGroup(client wire.U128, req wire.SyncConsumerGroup) []byte {
	_, t, code := s.resolveTopic(req.Stream, req.Topic)
	if code != 0 {
		return nil
	}
	g, ok := t.group(req.Group)
	if !ok {
		return nil
	}
	m := g.member(client)
	if m == nil {
		return nil
	}
	return wire.Assignment{Generation: g.Generation, Partitions: m.pollable()}.AppendTo(nil)
}

// ResolveGroup returns the numeric id of a consumer group identifier.
func (s *State) ResolveGroup(stream, topic, group wire.Identifier) (uint32, bool) {
	_, t, code := s.resolveTopic(stream, topic)
	if code != 0 {
		return 0, false
	}
	g, ok := t.group(group)
	if !ok {
		return 0, false
	}
	return g.ID, true
}

func (s *State) groupMember(stream, topic uint32, group wire.Identifier, client wire.U128) (*ConsumerGroup, *GroupMember) {
	st, ok := s.streams[stream]
	if !ok {
		return nil, nil
	}
	t, ok := st.topics[topic]
	if !ok {
		return nil, nil
	}
	g, ok := t.group(group)
	if !ok {
		return nil, nil
	}
	return g, g.member(client)
}

// GroupOwnsPartition is the offset-commit fence (server-behaviour.md 6.3.3,
// 7.6.2; replica-plane.md 13.4 rule 3): client is a member of the group
// and owns the partition, a pending hand-off included. It returns the
// group's numeric id.
func (s *State) GroupOwnsPartition(stream, topic uint32, group wire.Identifier, client wire.U128, partition uint32) (uint32, bool) {
	g, m := s.groupMember(stream, topic, group, client)
	if m == nil || !m.owns(partition) {
		return 0, false
	}
	return g.ID, true
}

// PollablePartition is the group-poll fence (7.6.1): client owns the
// partition and it is not pending hand-off. It returns the group's id.
func (s *State) PollablePartition(stream, topic uint32, group wire.Identifier, client wire.U128, partition uint32) (uint32, bool) {
	g, m := s.groupMember(stream, topic, group, client)
	if m == nil || !m.owns(partition) || m.pending(partition) {
		return 0, false
	}
	return g.ID, true
}

// PendingRevocations lists every pending hand-off, ascending by (stream,
// topic, group, partition), so a (new) primary can complete them.
func (s *State) PendingRevocations() []PendingRevocation {
	var out []PendingRevocation
	for _, st := range s.sortedStreams() {
		for _, t := range st.sortedTopics() {
			for _, g := range t.sortedGroups() {
				for _, m := range g.Members {
					for _, r := range m.Revocations {
						out = append(out, pendingOf(st, t, g, m, r))
					}
				}
			}
		}
	}
	sortRevocations(out)
	return out
}

func sortRevocations(rs []PendingRevocation) {
	sort.Slice(rs, func(i, j int) bool {
		a, b := rs[i], rs[j]
		switch {
		case a.Stream != b.Stream:
			return a.Stream < b.Stream
		case a.Topic != b.Topic:
			return a.Topic < b.Topic
		case a.Group != b.Group:
			return a.Group < b.Group
		}
		return a.Partition < b.Partition
	})
}

// inFlightOwned filters the shell's in-flight list to partitions a member
// of g owns, ascending without duplicates (replica-plane.md 13.1, 148).
func inFlightOwned(g *ConsumerGroup, list []uint32) []uint32 {
	var out []uint32
	for _, p := range list {
		for _, m := range g.Members {
			if m.owns(p) {
				out = append(out, p)
				break
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	kept := out[:0]
	for i, p := range out {
		if i == 0 || p != out[i-1] {
			kept = append(kept, p)
		}
	}
	return kept
}

// admitJoinGroup (148): the body of 13.1 with the requester's client id
// and the in-flight partitions the shell reports (empty when the group
// does not resolve or the shell cannot tell).
func (s *State) admitJoinGroup(req Request, env AdmitEnv) (Prepare, *Denial) {
	var x wire.JoinConsumerGroup
	if x.Decode(req.Body) != nil {
		return Prepare{}, deny(wire.ErrInvalidCommand)
	}
	body := joinBody{Stream: x.Stream, Topic: x.Topic, Group: x.Group, Client: req.Client}
	if st, t, code := s.resolveTopic(x.Stream, x.Topic); code == 0 && env.InFlight != nil {
		if g, ok := t.group(x.Group); ok {
			body.InFlight = inFlightOwned(g, env.InFlight(GroupRef{Stream: st.ID, Topic: t.ID, Group: g.ID}))
		}
	}
	return Prepare{Operation: wire.OpJoinConsumerGroup, Body: body.AppendTo(nil)}, nil
}

// admitLeaveGroup (149): [stream][topic][group][client].
func admitLeaveGroup(req Request) (Prepare, *Denial) {
	var x wire.LeaveConsumerGroup
	if x.Decode(req.Body) != nil {
		return Prepare{}, deny(wire.ErrInvalidCommand)
	}
	body := leaveBody{Stream: x.Stream, Topic: x.Topic, Group: x.Group, Client: req.Client}
	return Prepare{Operation: wire.OpLeaveConsumerGroup, Body: body.AppendTo(nil)}, nil
}

// Memberships lists the groups client belongs to, ascending by (stream,
// topic, group), for GetMe and GetClient (client-plane.md 7.10).
func (s *State) Memberships(client wire.U128) []wire.ConsumerGroupInfo {
	var out []wire.ConsumerGroupInfo
	for _, st := range s.sortedStreams() {
		for _, t := range st.sortedTopics() {
			for _, g := range t.sortedGroups() {
				if g.member(client) != nil {
					out = append(out, wire.ConsumerGroupInfo{StreamID: st.ID, TopicID: t.ID, GroupID: g.ID})
				}
			}
		}
	}
	return out
}
