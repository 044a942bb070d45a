package e2e

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"iggynode/client"
	"iggynode/config"
	"iggynode/wire"
)

// Every group test works on stream 0 ("gs") and its topic 0 ("gt").
var gs, gt = wire.ID(0), wire.ID(0)

// groupTopic creates gs/gt with the given partitions and, when perPartition
// > 0, that many messages in each ("p<partition>-<i>").
func groupTopic(t *testing.T, root *client.Client, partitions uint32, perPartition int) {
	t.Helper()
	ctx := ctxT(t)
	if _, err := root.CreateStream(ctx, "gs", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := root.CreateTopic(ctx, gs, "gt", partitions, nil); err != nil {
		t.Fatal(err)
	}
	for p := uint32(0); p < partitions; p++ {
		var msgs []wire.Message
		for i := 0; i < perPartition; i++ {
			msgs = append(msgs, client.NewMessage([]byte(fmt.Sprintf("p%d-%d", p, i))))
		}
		if len(msgs) > 0 {
			if _, err := root.SendMessages(ctx, gs, gt, wire.PartitionID(p), msgs); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// assignment is one member's expected pollable partitions.
type assignment struct {
	c          *client.Client
	slot       uint32
	partitions []uint32
}

// checkAssignments asserts, after a rebalance, the group's generation and
// every member's partitions, both as each member's SyncConsumerGroup
// answer (7.5) and as GetConsumerGroup reports them (7.7.1).
func checkAssignments(t *testing.T, root *client.Client, group wire.Identifier, generation uint64, want []assignment) {
	t.Helper()
	ctx := ctxT(t)
	for _, w := range want {
		a, err := w.c.SyncConsumerGroup(ctx, gs, gt, group)
		if err != nil || a.Generation != generation || !slices.Equal(a.Partitions, w.partitions) {
			t.Fatalf("member %d sync: %+v %v, want generation %d partitions %v", w.slot, a, err, generation, w.partitions)
		}
	}
	g, err := root.GetConsumerGroup(ctx, gs, gt, group)
	if err != nil || int(g.MembersCount) != len(want) || len(g.Members) != len(want) {
		t.Fatalf("group: %+v %v, want %d members", g, err, len(want))
	}
	bySlot := map[uint32][]uint32{}
	for _, m := range g.Members {
		bySlot[m.ID] = m.Partitions
	}
	for _, w := range want {
		if got, ok := bySlot[w.slot]; !ok || !slices.Equal(got, w.partitions) {
			t.Fatalf("group member %d owns %v (present %v), want %v; members %+v", w.slot, got, ok, w.partitions, g.Members)
		}
	}
}

// Create, get, list, join, sync, leave and delete (client-plane.md 8.10;
// server-behaviour.md 7.1, 7.2, 7.5, 7.7): group ids are never reused,
// joining twice is a no-op, leaving without membership is 5006, and a
// deleted group takes its memberships and offsets with it.
func TestConsumerGroupLifecycle(t *testing.T) {
	n := startNode(t)
	root := connect(t, n)
	ctx := ctxT(t)
	groupTopic(t, root, 3, 5)

	g0, err := root.CreateConsumerGroup(ctx, gs, gt, "g0")
	if err != nil || g0.ID != 0 || g0.Name != "g0" || g0.PartitionsCount != 3 || g0.MembersCount != 0 || len(g0.Members) != 0 {
		t.Fatalf("create g0: %+v %v", g0, err)
	}
	if g1, err := root.CreateConsumerGroup(ctx, gs, gt, "g1"); err != nil || g1.ID != 1 {
		t.Fatalf("create g1: %+v %v", g1, err)
	}
	_, err = root.CreateConsumerGroup(ctx, gs, gt, "g0")
	mustReject(t, err, wire.ErrConsumerGroupNameAlreadyExists, "duplicate group name")
	_, err = root.CreateConsumerGroup(ctx, wire.ID(5), gt, "x")
	mustReject(t, err, wire.ErrStreamIdNotFound, "group in a missing stream")
	_, err = root.CreateConsumerGroup(ctx, gs, wire.ID(5), "x")
	mustReject(t, err, wire.ErrTopicIdNotFound, "group in a missing topic")
	if err := root.DeleteConsumerGroup(ctx, gs, gt, wire.Named("g1")); err != nil {
		t.Fatal(err)
	}
	mustReject(t, root.DeleteConsumerGroup(ctx, gs, gt, wire.ID(1)), wire.ErrConsumerGroupIdNotFound, "delete a deleted group")
	for i, want := range []uint32{2, 3} {
		name := []string{"g2", "g1"}[i]
		if g, err := root.CreateConsumerGroup(ctx, gs, gt, name); err != nil || g.ID != want {
			t.Fatalf("create %s: %+v %v, want id %d (group ids are never reused)", name, g, err, want)
		}
	}
	list, err := root.GetConsumerGroups(ctx, gs, gt)
	if err != nil || len(list) != 3 || list[0].Name != "g0" || list[1].ID != 2 || list[2].ID != 3 || list[2].Name != "g1" {
		t.Fatalf("GetConsumerGroups: %+v %v", list, err)
	}
	for _, id := range []wire.Identifier{wire.ID(3), wire.Named("g1")} {
		if g, err := root.GetConsumerGroup(ctx, gs, gt, id); err != nil || g.ID != 3 || g.Name != "g1" || g.PartitionsCount != 3 {
			t.Fatalf("GetConsumerGroup(%v): %+v %v", id, g, err)
		}
	}
	if _, err := root.GetConsumerGroup(ctx, gs, gt, wire.ID(1)); !errors.Is(err, wire.ErrConsumerGroupIdNotFound) {
		t.Fatalf("GetConsumerGroup of a deleted group: %v (want the empty reply)", err)
	}
	_, err = root.GetConsumerGroup(ctx, gs, wire.ID(5), wire.ID(0))
	mustDeny(t, err, wire.ErrTopicIdNotFound, "GetConsumerGroup in a missing topic")
	_, err = root.GetConsumerGroups(ctx, wire.ID(5), gt)
	mustDeny(t, err, wire.ErrStreamIdNotFound, "GetConsumerGroups in a missing stream")

	// Membership is per session: root's second connection is a second member.
	a, b := connect(t, n), connect(t, n)
	if _, err := a.SyncConsumerGroup(ctx, gs, gt, wire.ID(0)); !errors.Is(err, wire.ErrConsumerGroupMemberNotFound) {
		t.Fatalf("sync before joining: %v (want the empty non-member reply)", err)
	}
	mustReject(t, a.LeaveConsumerGroup(ctx, gs, gt, wire.ID(0)), wire.ErrConsumerGroupMemberNotFound, "leave without membership")
	mustReject(t, a.JoinConsumerGroup(ctx, gs, gt, wire.ID(1)), wire.ErrConsumerGroupIdNotFound, "join a deleted group")
	if err := a.JoinConsumerGroup(ctx, gs, gt, wire.Named("g0")); err != nil {
		t.Fatal(err)
	}
	checkAssignments(t, root, wire.ID(0), 1, []assignment{{a, 0, []uint32{0, 1, 2}}})
	if err := a.JoinConsumerGroup(ctx, gs, gt, wire.ID(0)); err != nil {
		t.Fatalf("join again: %v", err)
	}
	checkAssignments(t, root, wire.ID(0), 1, []assignment{{a, 0, []uint32{0, 1, 2}}}) // no-op: same generation
	if err := b.JoinConsumerGroup(ctx, gs, gt, wire.ID(0)); err != nil {
		t.Fatal(err)
	}
	if err := b.JoinConsumerGroup(ctx, gs, gt, wire.ID(3)); err != nil {
		t.Fatal(err)
	}
	// 3 partitions over 2 members: fair 1, remainder 1 (7.4.3): a keeps 2.
	checkAssignments(t, root, wire.ID(0), 2, []assignment{{a, 0, []uint32{0, 1}}, {b, 1, []uint32{2}}})
	me, err := b.GetMe(ctx)
	if err != nil || me.ConsumerGroupsCount != 2 || len(me.ConsumerGroups) != 2 {
		t.Fatalf("GetMe of a member of two groups: %+v %v", me, err)
	}
	if gids := []uint32{me.ConsumerGroups[0].GroupID, me.ConsumerGroups[1].GroupID}; !slices.Contains(gids, 0) || !slices.Contains(gids, 3) {
		t.Fatalf("GetMe groups %+v", me.ConsumerGroups)
	}
	if rm, err := root.GetMe(ctx); err != nil || rm.ConsumerGroupsCount != 0 {
		t.Fatalf("root is in no group: %+v %v", rm, err)
	}

	// b stores a group offset on its partition; deleting the group drops
	// the memberships, and a new group with the old name gets a new id and
	// no offsets (6.6).
	if err := b.StoreConsumerOffset(ctx, wire.GroupConsumer(wire.ID(0)), gs, gt, wire.Partition(2), 3, wire.AckQuorum); err != nil {
		t.Fatal(err)
	}
	if err := root.DeleteConsumerGroup(ctx, gs, gt, wire.Named("g0")); err != nil {
		t.Fatal(err)
	}
	if _, err := a.SyncConsumerGroup(ctx, gs, gt, wire.ID(0)); !errors.Is(err, wire.ErrConsumerGroupMemberNotFound) {
		t.Fatalf("sync in a deleted group: %v", err)
	}
	if me, err := b.GetMe(ctx); err != nil || me.ConsumerGroupsCount != 1 || me.ConsumerGroups[0].GroupID != 3 {
		t.Fatalf("GetMe after the group was deleted: %+v %v", me, err)
	}
	g4, err := root.CreateConsumerGroup(ctx, gs, gt, "g0")
	if err != nil || g4.ID != 4 {
		t.Fatalf("recreate g0: %+v %v", g4, err)
	}
	waitFor(t, "the deleted group's offsets are purged", func() bool {
		off, err := root.GetConsumerOffset(ctx, wire.GroupConsumer(wire.ID(0)), gs, gt, wire.Partition(2))
		return err == nil && off == nil
	})
	if off, err := root.GetConsumerOffset(ctx, wire.GroupConsumer(wire.ID(4)), gs, gt, wire.Partition(2)); err != nil || off != nil {
		t.Fatalf("the recreated group inherited an offset: %+v %v", off, err)
	}
	if err := b.LeaveConsumerGroup(ctx, gs, gt, wire.ID(3)); err != nil {
		t.Fatal(err)
	}
	if g, err := root.GetConsumerGroup(ctx, gs, gt, wire.ID(3)); err != nil || g.MembersCount != 0 || len(g.Members) != 0 {
		t.Fatalf("after the last member left: %+v %v", g, err)
	}
}

// The rebalances of server-behaviour.md 7.3 (full, after leave, disconnect
// and partition count changes) and 7.4 (cooperative, on join) with several
// members, each on its own connection. No partition has been polled, so
// every hand-off is immediate.
func TestConsumerGroupRebalance(t *testing.T) {
	n := startNode(t)
	root := connect(t, n)
	ctx := ctxT(t)
	groupTopic(t, root, 4, 0)
	if _, err := root.CreateConsumerGroup(ctx, gs, gt, "g"); err != nil {
		t.Fatal(err)
	}
	g := wire.Named("g")
	m := make([]*client.Client, 6)
	for i := range m {
		m[i] = connect(t, n)
	}
	join := func(c *client.Client) {
		t.Helper()
		if err := c.JoinConsumerGroup(ctx, gs, gt, g); err != nil {
			t.Fatal(err)
		}
	}
	p := func(ids ...uint32) []uint32 { return ids }

	join(m[0]) // 7.4.2: everything unowned goes to the idle member
	checkAssignments(t, root, g, 1, []assignment{{m[0], 0, p(0, 1, 2, 3)}})
	join(m[1]) // fair 2: m0's excess, from the end of its list, moves
	checkAssignments(t, root, g, 2, []assignment{{m[0], 0, p(0, 1)}, {m[1], 1, p(2, 3)}})
	join(m[2]) // fair 1, remainder 1: m0 keeps 2, m1 gives up 3
	checkAssignments(t, root, g, 3, []assignment{{m[0], 0, p(0, 1)}, {m[1], 1, p(2)}, {m[2], 2, p(3)}})
	join(m[3])
	checkAssignments(t, root, g, 4, []assignment{{m[0], 0, p(0)}, {m[1], 1, p(2)}, {m[2], 2, p(3)}, {m[3], 3, p(1)}})
	join(m[4]) // more members than partitions: the newcomer owns nothing (7.5.5)
	checkAssignments(t, root, g, 5, []assignment{{m[0], 0, p(0)}, {m[1], 1, p(2)}, {m[2], 2, p(3)}, {m[3], 3, p(1)}, {m[4], 4, nil}})

	// Leave: full round robin over the remaining slots 0, 2, 3, 4 (7.3).
	if err := m[1].LeaveConsumerGroup(ctx, gs, gt, g); err != nil {
		t.Fatal(err)
	}
	checkAssignments(t, root, g, 6, []assignment{{m[0], 0, p(0)}, {m[2], 2, p(1)}, {m[3], 3, p(2)}, {m[4], 4, p(3)}})
	if _, err := m[1].SyncConsumerGroup(ctx, gs, gt, g); !errors.Is(err, wire.ErrConsumerGroupMemberNotFound) {
		t.Fatalf("sync after leaving: %v", err)
	}

	// Disconnect: closing m3's client logs its session out, which removes
	// it and rebalances over slots 0, 2, 4 (7.8.1).
	_ = m[3].Close()
	waitFor(t, "the disconnected member is removed", func() bool {
		gr, err := root.GetConsumerGroup(ctx, gs, gt, g)
		return err == nil && gr.MembersCount == 3
	})
	checkAssignments(t, root, g, 7, []assignment{{m[0], 0, p(0, 3)}, {m[2], 2, p(1)}, {m[4], 4, p(2)}})

	// A newcomer takes the lowest free slot (1) and m0's excess.
	join(m[5])
	checkAssignments(t, root, g, 8, []assignment{{m[0], 0, p(0)}, {m[5], 1, p(3)}, {m[2], 2, p(1)}, {m[4], 4, p(2)}})
	// m1 comes back as slot 3 with nothing to take.
	join(m[1])
	checkAssignments(t, root, g, 9, []assignment{{m[0], 0, p(0)}, {m[5], 1, p(3)}, {m[2], 2, p(1)}, {m[1], 3, nil}, {m[4], 4, p(2)}})

	// A partition count change fully rebalances (7.3).
	if err := root.CreatePartitions(ctx, gs, gt, 2); err != nil {
		t.Fatal(err)
	}
	checkAssignments(t, root, g, 10, []assignment{{m[0], 0, p(0, 5)}, {m[5], 1, p(1)}, {m[2], 2, p(2)}, {m[1], 3, p(3)}, {m[4], 4, p(4)}})
	if err := root.DeletePartitions(ctx, gs, gt, 3); err != nil {
		t.Fatal(err)
	}
	checkAssignments(t, root, g, 11, []assignment{{m[0], 0, p(0)}, {m[5], 1, p(1)}, {m[2], 2, p(2)}, {m[1], 3, nil}, {m[4], 4, nil}})
}

// 7.4.5/7.4.6: a partition polled beyond the group's committed offset is
// in flight; a join that would move it parks it as a pending revocation
// (still owned and committable by the source, no longer pollable by it)
// until the source commits up to what it polled, then it moves with a
// generation bump.
func TestConsumerGroupPendingRevocation(t *testing.T) {

	n := startNode(t)
	root := connect(t, n)
	ctx := ctxT(t)
	groupTopic(t, root, 2, 10)
	if _, err := root.CreateConsumerGroup(ctx, gs, gt, "g"); err != nil {
		t.Fatal(err)
	}
	g := wire.ID(0)
	a, b := connect(t, n), connect(t, n)
	if err := a.JoinConsumerGroup(ctx, gs, gt, g); err != nil {
		t.Fatal(err)
	}
	checkAssignments(t, root, g, 1, []assignment{{a, 0, []uint32{0, 1}}})
	// a polls partition 1 without committing: offsets 0..4 are in flight.
	polled, err := a.PollMessages(ctx, wire.GroupConsumer(g), gs, gt, wire.Partition(1), wire.NextStrategy(), 5, false)
	if err != nil || polled.MessagesCount != 5 {
		t.Fatalf("group poll: %+v %v", polled, err)
	}
	if err := b.JoinConsumerGroup(ctx, gs, gt, g); err != nil {
		t.Fatal(err)
	}
	// Partition 1 is pending: a still owns it (GetConsumerGroup) but no
	// longer syncs it; b gets nothing yet.
	if sa, err := a.SyncConsumerGroup(ctx, gs, gt, g); err != nil || sa.Generation != 2 || !slices.Equal(sa.Partitions, []uint32{0}) {
		t.Fatalf("a's pollable partitions while 1 is pending: %+v %v", sa, err)
	}
	if sb, err := b.SyncConsumerGroup(ctx, gs, gt, g); err != nil || sb.Generation != 2 || len(sb.Partitions) != 0 {
		t.Fatalf("b's partitions while 1 is pending: %+v %v", sb, err)
	}
	if gr, err := root.GetConsumerGroup(ctx, gs, gt, g); err != nil || len(gr.Members) != 2 || !slices.Equal(gr.Members[0].Partitions, []uint32{0, 1}) {
		t.Fatalf("a still owns the pending partition: %+v %v", gr, err)
	}
	resync, err := a.PollMessages(ctx, wire.GroupConsumer(g), gs, gt, wire.Partition(1), wire.NextStrategy(), 5, false)
	if err != nil || !resync.Resync() {
		t.Fatalf("a polls its pending partition: %+v %v, want the re-sync sentinel", resync, err)
	}
	// Committing up to the last polled offset completes the hand-off.
	if err := a.StoreConsumerOffset(ctx, wire.GroupConsumer(g), gs, gt, wire.Partition(1), 4, wire.AckQuorum); err != nil {
		t.Fatalf("the source commits its pending partition: %v", err)
	}
	waitFor(t, "the hand-off completes", func() bool {
		sb, err := b.SyncConsumerGroup(ctx, gs, gt, g)
		return err == nil && slices.Equal(sb.Partitions, []uint32{1})
	})
	checkAssignments(t, root, g, 3, []assignment{{a, 0, []uint32{0}}, {b, 1, []uint32{1}}})
	next, err := b.PollMessages(ctx, wire.GroupConsumer(g), gs, gt, wire.Partition(1), wire.NextStrategy(), 100, false)
	if ms := client.Messages(next); err != nil || len(ms) != 5 || ms[0].Offset != 5 {
		t.Fatalf("b continues after the committed offset: %v", err)
	}
}

// Group polling hands every message to exactly one member (7.5.4, 7.6),
// including across a leave that moves partitions between members.
func TestConsumerGroupPollExactlyOnce(t *testing.T) {
	n := startNode(t)
	root := connect(t, n)
	ctx := ctxT(t)
	const partitions, perPartition = 3, 40
	groupTopic(t, root, partitions, perPartition)
	if _, err := root.CreateConsumerGroup(ctx, gs, gt, "g"); err != nil {
		t.Fatal(err)
	}
	g := wire.Named("g")
	members := []*client.Client{connect(t, n), connect(t, n), connect(t, n)}
	for _, c := range members {
		if err := c.JoinConsumerGroup(ctx, gs, gt, g); err != nil {
			t.Fatal(err)
		}
	}
	// Each member refreshes its assignment when it changes (the SDK
	// contract of 7.5.4); a served partition must be one of them.
	assigned := map[*client.Client][]uint32{}
	resync := func(cs []*client.Client) {
		t.Helper()
		for _, c := range cs {
			a, err := c.SyncConsumerGroup(ctx, gs, gt, g)
			if err != nil {
				t.Fatal(err)
			}
			assigned[c] = a.Partitions
		}
	}
	seen := map[string]int{}
	poll := func(round int, cs []*client.Client) {
		t.Helper()
		for _, c := range cs {
			p, err := c.PollConsumerGroup(ctx, gs, gt, g, wire.NextStrategy(), 7, true)
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			if p.MessagesCount > 0 && !slices.Contains(assigned[c], p.PartitionID) {
				t.Fatalf("round %d: served partition %d, the member owns %v", round, p.PartitionID, assigned[c])
			}
			for _, m := range client.Messages(p) {
				seen[string(m.Payload)]++
			}
		}
	}
	resync(members)
	for round := 0; round < 3; round++ { // each member owns one partition: 21 of its 40 messages
		poll(round, members)
	}
	if len(seen) != 3*3*7 {
		t.Fatalf("%d messages after three rounds, want 63", len(seen))
	}
	// The middle member leaves: its partition, half consumed, moves on
	// with the group's committed offset.
	if err := members[1].LeaveConsumerGroup(ctx, gs, gt, g); err != nil {
		t.Fatal(err)
	}
	rest := []*client.Client{members[0], members[2]}
	resync(rest)
	for round := 3; round < 60 && len(seen) < partitions*perPartition; round++ {
		poll(round, rest)
	}
	if len(seen) != partitions*perPartition {
		t.Fatalf("%d distinct messages delivered, want %d", len(seen), partitions*perPartition)
	}
	for payload, count := range seen {
		if count != 1 {
			t.Fatalf("%s delivered %d times", payload, count)
		}
	}
	// Nothing is left for anyone.
	for _, c := range rest {
		for i := 0; i < partitions; i++ {
			if p, err := c.PollConsumerGroup(ctx, gs, gt, g, wire.NextStrategy(), 7, true); err != nil || p.MessagesCount != 0 {
				t.Fatalf("a drained group still delivers: %+v %v", p, err)
			}
		}
	}
}

// The group offset fence (6.3.3, 7.6): only the member that owns a
// partition may store or delete the group's offset on it (else header
// status 20); polls of a partition one does not own get the re-sync
// sentinel; anyone may read a group's offset (6.2.1).
func TestConsumerGroupOffsetFence(t *testing.T) {
	n := startNode(t)
	root := connect(t, n)
	ctx := ctxT(t)
	groupTopic(t, root, 2, 10)
	if _, err := root.CreateConsumerGroup(ctx, gs, gt, "g"); err != nil {
		t.Fatal(err)
	}
	g := wire.ID(0)
	group := wire.GroupConsumer(g)
	a, b := connect(t, n), connect(t, n)
	for _, c := range []*client.Client{a, b} {
		if err := c.JoinConsumerGroup(ctx, gs, gt, g); err != nil {
			t.Fatal(err)
		}
	}
	checkAssignments(t, root, g, 2, []assignment{{a, 0, []uint32{0}}, {b, 1, []uint32{1}}})
	if err := a.StoreConsumerOffset(ctx, group, gs, gt, wire.Partition(0), 3, wire.AckQuorum); err != nil {
		t.Fatalf("owner stores: %v", err)
	}
	if err := b.StoreConsumerOffset(ctx, group, gs, gt, wire.Partition(1), 6, wire.AckNone); err != nil {
		t.Fatalf("owner stores without ack: %v", err)
	}
	mustDeny(t, a.StoreConsumerOffset(ctx, group, gs, gt, wire.Partition(1), 1, wire.AckQuorum), wire.ErrResourceNotFound, "store on another member's partition")
	mustDeny(t, root.StoreConsumerOffset(ctx, group, gs, gt, wire.Partition(0), 1, wire.AckQuorum), wire.ErrResourceNotFound, "store by a non-member")
	mustDeny(t, b.DeleteConsumerOffset(ctx, group, gs, gt, wire.Partition(0), wire.AckQuorum), wire.ErrResourceNotFound, "delete on another member's partition")
	mustDeny(t, a.StoreConsumerOffset(ctx, group, gs, gt, wire.Partition(0), 10, wire.AckQuorum), wire.ErrInvalidOffset, "owner stores past the newest offset")
	for p, want := range []uint64{3, 6} {
		off, err := root.GetConsumerOffset(ctx, group, gs, gt, wire.Partition(uint32(p)))
		if err != nil || off == nil || off.StoredOffset != want || off.CurrentOffset != 9 {
			t.Fatalf("a non-member reads partition %d's group offset: %+v %v", p, off, err)
		}
	}
	resync, err := a.PollMessages(ctx, group, gs, gt, wire.Partition(1), wire.NextStrategy(), 10, false)
	if err != nil || !resync.Resync() {
		t.Fatalf("poll of a partition a does not own: %+v %v, want the re-sync sentinel", resync, err)
	}
	resync, err = root.PollMessages(ctx, group, gs, gt, wire.Partition(0), wire.NextStrategy(), 10, false)
	if err != nil || !resync.Resync() {
		t.Fatalf("group poll by a non-member: %+v %v, want the re-sync sentinel", resync, err)
	}
	next, err := b.PollMessages(ctx, group, gs, gt, wire.Partition(1), wire.NextStrategy(), 10, false)
	if ms := client.Messages(next); err != nil || len(ms) != 3 || ms[0].Offset != 7 {
		t.Fatalf("the owner polls next after its stored offset: %v", err)
	}
	if err := a.DeleteConsumerOffset(ctx, group, gs, gt, wire.Partition(0), wire.AckQuorum); err != nil {
		t.Fatal(err)
	}
	if off, err := root.GetConsumerOffset(ctx, group, gs, gt, wire.Partition(0)); err != nil || off != nil {
		t.Fatalf("after delete: %+v %v", off, err)
	}
	// After a rebalance the fence follows the new owner.
	if err := b.LeaveConsumerGroup(ctx, gs, gt, g); err != nil {
		t.Fatal(err)
	}
	if err := a.StoreConsumerOffset(ctx, group, gs, gt, wire.Partition(1), 8, wire.AckQuorum); err != nil {
		t.Fatalf("the new owner stores: %v", err)
	}
	mustDeny(t, b.StoreConsumerOffset(ctx, group, gs, gt, wire.Partition(1), 9, wire.AckQuorum), wire.ErrResourceNotFound, "the former owner stores")
}

// Groups, their id counter and their offsets survive a graceful restart.
func TestConsumerGroupsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	n := startNodeIn(t, dir)
	root := connect(t, n)
	ctx := ctxT(t)
	groupTopic(t, root, 2, 10)
	for _, name := range []string{"keep", "drop"} {
		if _, err := root.CreateConsumerGroup(ctx, gs, gt, name); err != nil {
			t.Fatal(err)
		}
	}
	if err := root.DeleteConsumerGroup(ctx, gs, gt, wire.Named("drop")); err != nil {
		t.Fatal(err)
	}
	m := connect(t, n)
	if err := m.JoinConsumerGroup(ctx, gs, gt, wire.Named("keep")); err != nil {
		t.Fatal(err)
	}
	group := wire.GroupConsumer(wire.ID(0))
	if err := m.StoreConsumerOffset(ctx, group, gs, gt, wire.Partition(0), 4, wire.AckQuorum); err != nil {
		t.Fatal(err)
	}
	if p, err := m.PollMessages(ctx, group, gs, gt, wire.Partition(1), wire.NextStrategy(), 7, true); err != nil || p.MessagesCount != 7 {
		t.Fatalf("auto-committing poll: %+v %v", p, err)
	}
	// The node stops with m still a member: its session is in the
	// recovered table, and only the node itself can end it.
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	_ = m.Close()
	_ = root.Close()

	n2 := startNodeIn(t, dir)
	t.Cleanup(func() { _ = n2.Close() })
	root2 := connect(t, n2)
	list, err := root2.GetConsumerGroups(ctx, gs, gt)
	if err != nil || len(list) != 1 || list[0].ID != 0 || list[0].Name != "keep" || list[0].PartitionsCount != 2 {
		t.Fatalf("groups after restart: %+v %v", list, err)
	}
	for p, want := range []uint64{4, 6} {
		off, err := root2.GetConsumerOffset(ctx, group, gs, gt, wire.Partition(uint32(p)))
		if err != nil || off == nil || off.StoredOffset != want {
			t.Fatalf("group offset of partition %d after restart: %+v %v, want %d", p, off, err, want)
		}
	}
	if g, err := root2.CreateConsumerGroup(ctx, gs, gt, "drop"); err != nil || g.ID != 2 {
		t.Fatalf("next group id after restart: %+v %v, want 2 (never reused)", g, err)
	}
	// A member after the restart continues from the stored offsets.
	m2 := connect(t, n2)
	if err := m2.JoinConsumerGroup(ctx, gs, gt, wire.ID(0)); err != nil {
		t.Fatal(err)
	}
	sync, err := m2.SyncConsumerGroup(ctx, gs, gt, wire.ID(0))
	if err != nil || !slices.Equal(sync.Partitions, []uint32{0, 1}) {
		t.Fatalf("the only live member after restart owns %+v (%v); sessions of the old process must not hold partitions", sync, err)
	}
	for p, first := range []uint64{5, 7} {
		next, err := m2.PollMessages(ctx, group, gs, gt, wire.Partition(uint32(p)), wire.NextStrategy(), 1, false)
		if ms := client.Messages(next); err != nil || len(ms) != 1 || ms[0].Offset != first {
			t.Fatalf("partition %d after restart: %v, want offset %d first", p, err, first)
		}
	}
}

// Heartbeats (server-behaviour.md 8.5): a group member idle for more than
// 1.2 x heartbeat.interval on the node's clock is evicted by the verifier
// (StaleClient), its session is logged out and its partitions are
// redistributed; an idle client in no group, and a member that keeps
// talking, are left alone.
func TestHeartbeatEvictsIdleGroupMembers(t *testing.T) {
	const interval = time.Second
	clock := &fakeClock{}
	clock.us.Store(uint64(time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC).UnixMicro()))
	n := startNodeWith(t, t.TempDir(), func(c *config.Config) {
		c.Heartbeat.Enabled = true
		c.Heartbeat.Interval = config.Duration(interval)
		c.DataMaintenance.Messages.CleanerEnabled = false
	}, clock.now)
	t.Cleanup(func() { _ = n.Close() })
	root := connect(t, n)
	ctx := ctxT(t)
	groupTopic(t, root, 2, 0)
	if _, err := root.CreateConsumerGroup(ctx, gs, gt, "g"); err != nil {
		t.Fatal(err)
	}
	g := wire.ID(0)
	idleMember, activeMember, idleLoner := connect(t, n), connect(t, n), connect(t, n)
	for _, c := range []*client.Client{idleMember, activeMember} {
		if err := c.JoinConsumerGroup(ctx, gs, gt, g); err != nil {
			t.Fatal(err)
		}
	}
	checkAssignments(t, root, g, 2, []assignment{{idleMember, 0, []uint32{0}}, {activeMember, 1, []uint32{1}}})

	// Not yet: idle for 0.7 x interval. (The node's own ticker may run the
	// verifier at any moment too; no member is ever idle past the
	// threshold except idleMember, so that cannot change the outcome.)
	clock.advance(interval * 7 / 10)
	if err := activeMember.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if err := root.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	n.VerifyHeartbeats()
	if gr, err := root.GetConsumerGroup(ctx, gs, gt, g); err != nil || gr.MembersCount != 2 {
		t.Fatalf("a member idle below the threshold was evicted: %+v %v", gr, err)
	}
	// Now idleMember and idleLoner have been silent for 1.4 x interval,
	// activeMember and root for 0.7 x.
	clock.advance(interval * 7 / 10)
	n.VerifyHeartbeats()
	waitFor(t, "the idle member is evicted and its partition redistributed", func() bool {
		gr, err := root.GetConsumerGroup(ctx, gs, gt, g)
		return err == nil && gr.MembersCount == 1 && len(gr.Members) == 1 && gr.Members[0].ID == 1 &&
			slices.Equal(gr.Members[0].Partitions, []uint32{0, 1})
	})
	if a, err := activeMember.SyncConsumerGroup(ctx, gs, gt, g); err != nil || a.Generation != 3 || !slices.Equal(a.Partitions, []uint32{0, 1}) {
		t.Fatalf("the active member after the eviction: %+v %v", a, err)
	}
	// The evicted client learns it on its next request...
	err := idleMember.Ping(ctx)
	mustEvict(t, err, wire.EvictStaleClient, "next request of the evicted member")
	if !errors.Is(err, wire.ErrStaleClient) {
		t.Fatalf("StaleClient maps to %v, want 30", err)
	}
	// ...and the one after dials and logs in again, as a new session in no
	// group.
	me, err := idleMember.GetMe(ctx)
	if err != nil || me.ConsumerGroupsCount != 0 {
		t.Fatalf("re-login after the eviction: %+v %v", me, err)
	}
	if _, err := idleMember.SyncConsumerGroup(ctx, gs, gt, g); !errors.Is(err, wire.ErrConsumerGroupMemberNotFound) {
		t.Fatalf("the re-logged-in client is still a member: %v", err)
	}
	// The idle client that is in no group kept its session.
	session, _ := idleLoner.Session()
	if err := idleLoner.Ping(ctx); err != nil {
		t.Fatalf("idle non-member was evicted: %v", err)
	}
	if after, _ := idleLoner.Session(); after != session || session == 0 {
		t.Fatalf("idle non-member's session changed %d -> %d", session, after)
	}
	if _, err := idleLoner.GetStreams(ctx); err != nil {
		t.Fatalf("idle non-member lost its login: %v", err)
	}
}
