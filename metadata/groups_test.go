package metadata

import (
	"bytes"
	"fmt"
	"testing"

	"iggynode/wire"
)

var clientE = wire.U128{Lo: 0xE}

func groupIDs(g string) []byte {
	return wire.JoinConsumerGroup{Stream: wire.ID(0), Topic: wire.ID(0), Group: wire.Named(g)}.AppendTo(nil)
}

// groupHarness: stream 0 "s", topic 0 "t" with the given partitions, group
// 0 "g".
func groupHarness(t *testing.T, partitions uint32) *harness {
	t.Helper()
	h := newHarness(t)
	h.createStream("s")
	h.createTopic(wire.ID(0), "t", partitions, nil)
	h.ok(wire.OpCreateConsumerGroup, wire.CreateConsumerGroup{Stream: wire.ID(0), Topic: wire.ID(0), Name: "g"}.AppendTo(nil))
	return h
}

func (h *harness) join(client wire.U128, group string) Result {
	h.t.Helper()
	var res Result
	h.as(client, func() { res = h.ok(wire.OpJoinConsumerGroup, groupIDs(group)) })
	return res
}

func (h *harness) leave(client wire.U128, group string) {
	h.t.Helper()
	h.as(client, func() {
		h.ok(wire.OpLeaveConsumerGroup, wire.LeaveConsumerGroup{Stream: wire.ID(0), Topic: wire.ID(0), Group: wire.Named(group)}.AppendTo(nil))
	})
}

// expectGroup checks the generation and every member's slot and owned
// partitions, in order, through GetConsumerGroup.
func (h *harness) expectGroup(step string, generation uint64, members map[uint32][]uint32) {
	h.t.Helper()
	status, p, _ := h.s.Read(0, wire.CodeGetConsumerGroup, groupIDs("g"))
	var d wire.ConsumerGroupDetails
	if status != 0 || d.Decode(p) != nil {
		h.t.Fatalf("%s: GetConsumerGroup %d % x", step, status, p)
	}
	g := h.s.streams[0].topics[0].groups[d.ID]
	got := map[uint32][]uint32{}
	for _, m := range d.Members {
		got[m.ID] = m.Partitions
	}
	if g.Generation != generation || fmt.Sprint(got) != fmt.Sprint(members) {
		h.t.Fatalf("%s: generation %d members %v, want %d %v", step, g.Generation, got, generation, members)
	}
}

// sync is SyncConsumerGroup for client: nil for Z, else the assignment.
func (h *harness) sync(client wire.U128) *wire.Assignment {
	h.t.Helper()
	status, p, ok := h.s.ReadAs(1, client, wire.CodeSyncConsumerGroup, groupIDs("g"))
	if !ok || status != 0 {
		h.t.Fatalf("sync status %d", status)
	}
	if p == nil {
		return nil
	}
	var a wire.Assignment
	if err := a.Decode(p); err != nil {
		h.t.Fatal(err)
	}
	return &a
}

// client-plane.md 8.10, 7.6, 7.8; server-behaviour.md 7.1: create (reply
// bytes, monotonic ids never reused), delete, and their failure codes.
func TestCreateDeleteGroup(t *testing.T) {
	h := groupHarness(t, 3)
	body := wire.CreateConsumerGroup{Stream: wire.Named("s"), Topic: wire.Named("t"), Name: "g2"}.AppendTo(nil)
	res := h.ok(wire.OpCreateConsumerGroup, body)
	if got := res.Reply[wire.HeaderSize:]; !bytes.Equal(got, hx("00000000  01000000 03000000 00000000 02 6732")) {
		t.Fatalf("create reply % x", got)
	}
	h.rejected(0, wire.OpCreateConsumerGroup, body, wire.ErrConsumerGroupNameAlreadyExists)
	del := wire.DeleteConsumerGroup{Stream: wire.ID(0), Topic: wire.ID(0), Group: wire.Named("g2")}.AppendTo(nil)
	res = h.ok(wire.OpDeleteConsumerGroup, del)
	if d := res.Effects.DeletedGroups; len(d) != 1 || d[0] != (GroupRef{Stream: 0, Topic: 0, Group: 1}) {
		t.Fatalf("deleted groups %+v", d)
	}
	h.rejected(0, wire.OpDeleteConsumerGroup, del, wire.ErrConsumerGroupIdNotFound)
	res = h.ok(wire.OpCreateConsumerGroup, body)
	if got := payload(t, res); !bytes.Equal(got[:4], u32le(2)) {
		t.Fatalf("re-created group id % x, want 2 (ids are never reused)", got[:4])
	}
	for _, c := range []struct {
		op   wire.Operation
		body []byte
		code wire.ErrorCode
	}{
		{wire.OpCreateConsumerGroup, wire.CreateConsumerGroup{Stream: wire.ID(5), Topic: wire.ID(0), Name: "x"}.AppendTo(nil), wire.ErrStreamIdNotFound},
		{wire.OpCreateConsumerGroup, wire.CreateConsumerGroup{Stream: wire.ID(0), Topic: wire.ID(5), Name: "x"}.AppendTo(nil), wire.ErrTopicIdNotFound},
		{wire.OpDeleteConsumerGroup, wire.DeleteConsumerGroup{Stream: wire.ID(5), Topic: wire.ID(0), Group: wire.ID(0)}.AppendTo(nil), wire.ErrStreamIdNotFound},
		{wire.OpDeleteConsumerGroup, wire.DeleteConsumerGroup{Stream: wire.ID(0), Topic: wire.ID(5), Group: wire.ID(0)}.AppendTo(nil), wire.ErrTopicIdNotFound},
		{wire.OpJoinConsumerGroup, wire.JoinConsumerGroup{Stream: wire.ID(0), Topic: wire.ID(0), Group: wire.ID(9)}.AppendTo(nil), wire.ErrConsumerGroupIdNotFound},
		{wire.OpJoinConsumerGroup, wire.JoinConsumerGroup{Stream: wire.ID(0), Topic: wire.ID(9), Group: wire.ID(0)}.AppendTo(nil), wire.ErrTopicIdNotFound},
		{wire.OpLeaveConsumerGroup, wire.LeaveConsumerGroup{Stream: wire.ID(9), Topic: wire.ID(0), Group: wire.ID(0)}.AppendTo(nil), wire.ErrStreamIdNotFound},
		{wire.OpLeaveConsumerGroup, wire.LeaveConsumerGroup{Stream: wire.ID(0), Topic: wire.ID(0), Group: wire.Named("nope")}.AppendTo(nil), wire.ErrConsumerGroupIdNotFound},
		{wire.OpLeaveConsumerGroup, wire.LeaveConsumerGroup{Stream: wire.ID(0), Topic: wire.ID(0), Group: wire.ID(0)}.AppendTo(nil), wire.ErrConsumerGroupMemberNotFound},
	} {
		h.rejected(0, c.op, c.body, c.code)
	}
	for _, op := range []wire.Operation{wire.OpCreateConsumerGroup, wire.OpDeleteConsumerGroup, wire.OpJoinConsumerGroup, wire.OpLeaveConsumerGroup} {
		h.denied(0, op, hx("01 04 00000000 01 04 00000000 02 00"), wire.ErrInvalidCommand)
	}
	// Deleting the topic removes its groups.
	h.ok(wire.OpDeleteTopic, wire.DeleteTopic{Stream: wire.ID(0), Topic: wire.ID(0)}.AppendTo(nil))
	if _, ok := h.s.ResolveGroup(wire.ID(0), wire.ID(0), wire.ID(0)); ok {
		t.Fatal("group survived its topic")
	}
}

// server-behaviour.md 7.2-7.5, 7.8.1: several members joining (cooperative
// rebalance) and leaving (full rebalance), one removed by logout, and a
// join with an in-flight partition that becomes a pending hand-off,
// completed by operation 67.
func TestRebalanceScenario(t *testing.T) {
	h := groupHarness(t, 4)
	h.expectGroup("created", 0, map[uint32][]uint32{})
	if h.sync(clientA) != nil {
		t.Fatal("a non-member synced")
	}
	h.join(clientA, "g")
	h.expectGroup("A joins", 1, map[uint32][]uint32{0: {0, 1, 2, 3}})
	h.join(clientB, "g") // fair 2: A gives up its last two
	h.expectGroup("B joins", 2, map[uint32][]uint32{0: {0, 1}, 1: {2, 3}})
	h.join(clientC, "g") // fair 1 rem 1: A keeps 2, B gives 3
	h.expectGroup("C joins", 3, map[uint32][]uint32{0: {0, 1}, 1: {2}, 2: {3}})
	h.join(clientD, "g") // fair 1: A gives 1
	h.expectGroup("D joins", 4, map[uint32][]uint32{0: {0}, 1: {2}, 2: {3}, 3: {1}})
	h.join(clientD, "g") // again: a no-op
	h.expectGroup("D joins again", 4, map[uint32][]uint32{0: {0}, 1: {2}, 2: {3}, 3: {1}})
	if a := h.sync(clientD); a == nil || a.Generation != 4 || !equalU32(a.Partitions, 1) {
		t.Fatalf("D sync %+v", a)
	}
	h.leave(clientB, "g") // round robin over slots 0, 2, 3
	h.expectGroup("B leaves", 5, map[uint32][]uint32{0: {0, 3}, 2: {1}, 3: {2}})
	h.as(clientB, func() {
		h.rejected(0, wire.OpLeaveConsumerGroup, groupIDs("g"), wire.ErrConsumerGroupMemberNotFound)
	})
	h.as(clientC, func() { h.submit(0, wire.OpLogout, nil) })
	h.expectGroup("C logs out", 6, map[uint32][]uint32{0: {0, 2}, 3: {1, 3}})
	if h.sync(clientC) != nil {
		t.Fatal("C still a member after logout")
	}

	// E joins slot 1 while D's partition 3 is in flight (and 7, which the
	// group does not own, is filtered out at admission).
	h.inFlight[GroupRef{Group: 0}] = []uint32{7, 3, 3}
	var p Prepare
	h.as(clientE, func() {
		var d *Denial
		p, d = h.s.Admit(Request{Client: clientE, Operation: wire.OpJoinConsumerGroup, Body: groupIDs("g")}, h.env)
		if d != nil {
			t.Fatal(d)
		}
	})
	wantBody := append(groupIDs("g"), hx("0e000000000000000000000000000000 01000000 03000000")...)
	if !bytes.Equal(p.Body, wantBody) {
		t.Fatalf("148 body\n got % x\nwant % x", p.Body, wantBody)
	}
	res := h.join(clientE, "g")
	since := h.ts
	h.expectGroup("E joins", 7, map[uint32][]uint32{0: {0, 2}, 1: {}, 3: {1, 3}})
	want := PendingRevocation{Stream: 0, Topic: 0, Group: 0, Partition: 3, PartitionGroup: partitionGroup(0, 0, 3),
		Source: clientD, SourceSlot: 3, TargetSlot: 1, Since: since}
	if r := res.Effects.Revocations; len(r) != 1 || r[0] != want {
		t.Fatalf("revocations %+v", r)
	}
	if all := h.s.PendingRevocations(); len(all) != 1 || all[0] != want {
		t.Fatalf("pending %+v", all)
	}
	if a := h.sync(clientD); a.Generation != 7 || !equalU32(a.Partitions, 1) {
		t.Fatalf("D pollable %+v", a)
	}
	if a := h.sync(clientE); a == nil || a.Generation != 7 || len(a.Partitions) != 0 {
		t.Fatalf("E (owns nothing yet) %+v", a)
	}
	if _, p, _ := h.s.ReadAs(1, clientE, wire.CodeSyncConsumerGroup, groupIDs("g")); !bytes.Equal(p, hx("0700000000000000 00000000")) {
		t.Fatalf("E sync bytes % x", p)
	}
	if id, ok := h.s.GroupOwnsPartition(0, 0, wire.Named("g"), clientD, 3); !ok || id != 0 {
		t.Fatal("pending hand-off must still count for offset commits")
	}
	if _, ok := h.s.PollablePartition(0, 0, wire.Named("g"), clientD, 3); ok {
		t.Fatal("pending hand-off must not be pollable")
	}
	if _, ok := h.s.PollablePartition(0, 0, wire.ID(0), clientD, 1); !ok {
		t.Fatal("owned partition not pollable")
	}

	// Completion (67) from the reserved client id of 13.1.
	in := want.Completion()
	wantIn := append(hx("01 04 00000000 01 04 00000000 0000000000000000 0d000000000000000000000000000000"), hx("03000000")...)
	if in.Client != (wire.U128{Hi: ^uint64(0), Lo: 3}) || in.Request != ^uint64(0) ||
		in.Operation != wire.OpCompleteConsumerGroupRevocation || !bytes.Equal(in.Body, wantIn) {
		t.Fatalf("completion %+v", in)
	}
	if res := h.commitInternal(in); res.Code != 0 {
		t.Fatalf("67 committed %d", res.Code)
	}
	h.expectGroup("hand-off completes", 8, map[uint32][]uint32{0: {0, 2}, 1: {3}, 3: {1}})
	if res := h.commitInternal(in); res.Code != wire.ErrResourceNotFound {
		t.Fatalf("stale 67 committed %d", res.Code)
	}
	h.expectGroup("stale completion", 8, map[uint32][]uint32{0: {0, 2}, 1: {3}, 3: {1}})
	if len(h.s.PendingRevocations()) != 0 {
		t.Fatal("revocation still pending")
	}
	// A partition count change fully rebalances (7.3).
	h.ok(wire.OpCreatePartitions, wire.CreatePartitions{Stream: wire.ID(0), Topic: wire.ID(0), PartitionsCount: 1}.AppendTo(nil))
	h.expectGroup("partition added", 9, map[uint32][]uint32{0: {0, 3}, 1: {1, 4}, 3: {2}})
	m := h.s.Memberships(clientE)
	if len(m) != 1 || m[0] != (wire.ConsumerGroupInfo{}) {
		t.Fatalf("memberships %+v", m)
	}
}

// server-behaviour.md 7.4.4, 7.4.6: no idle member means nothing moves; a
// member that is already a hand-off target gets no more; a completion
// whose target left runs a full rebalance; a leave drops pending
// hand-offs.
func TestRevocationEdges(t *testing.T) {
	h := groupHarness(t, 4)
	h.join(clientA, "g")
	h.inFlight[GroupRef{}] = []uint32{2, 3}
	h.join(clientB, "g") // both excess partitions in flight: two pending hand-offs to B
	h.expectGroup("B joins", 2, map[uint32][]uint32{0: {0, 1, 2, 3}, 1: {}})
	if a := h.sync(clientA); !equalU32(a.Partitions, 0, 1) {
		t.Fatalf("A pollable %v", a.Partitions)
	}
	pend := h.s.PendingRevocations()
	if len(pend) != 2 || pend[0].Partition != 2 || pend[1].Partition != 3 || pend[1].TargetSlot != 1 {
		t.Fatalf("pending %+v", pend)
	}
	// C joins: B is idle but already a target; C is idle and takes the
	// excess over fair 1 (rem 1): A keeps 2 pollable (0, 1), nothing moves.
	h.inFlight[GroupRef{}] = nil
	h.join(clientC, "g")
	h.expectGroup("C joins", 3, map[uint32][]uint32{0: {0, 1, 2, 3}, 1: {}, 2: {}})
	// B leaves before the hand-off: full rebalance, pending dropped.
	h.leave(clientB, "g")
	h.expectGroup("B leaves", 4, map[uint32][]uint32{0: {0, 2}, 2: {1, 3}})
	if len(h.s.PendingRevocations()) != 0 {
		t.Fatal("leave kept pending hand-offs")
	}
	// A completion whose target has gone: full rebalance.
	h.inFlight[GroupRef{}] = []uint32{2}
	h.join(clientB, "g") // slot 1; fair 1 rem 1: A keeps 2, C gives 3 at once, nothing in flight for C
	h.expectGroup("B rejoins", 5, map[uint32][]uint32{0: {0, 2}, 1: {3}, 2: {1}})
	h.join(clientD, "g") // slot 3; fair 1: A's excess 2 is in flight
	h.expectGroup("D joins", 6, map[uint32][]uint32{0: {0, 2}, 1: {3}, 2: {1}, 3: {}})
	pend = h.s.PendingRevocations()
	if len(pend) != 1 || pend[0].Partition != 2 || pend[0].TargetSlot != 3 {
		t.Fatalf("pending %+v", pend)
	}
	h.as(clientD, func() { h.submit(0, wire.OpLogout, nil) })
	h.expectGroup("D logs out", 7, map[uint32][]uint32{0: {0, 3}, 1: {1}, 2: {2}})
	// D's logout dropped the hand-off; fake one whose target slot is empty.
	g := h.s.streams[0].topics[0].groups[0]
	g.Members[0].Revocations = []Revocation{{PartitionID: 3, TargetSlot: 9, Since: 1}}
	if res := h.commitInternal(h.s.PendingRevocations()[0].Completion()); res.Code != 0 {
		t.Fatalf("67 committed %d", res.Code)
	}
	h.expectGroup("target gone", 8, map[uint32][]uint32{0: {0, 3}, 1: {1}, 2: {2}})
	// Stale completions are committed no-ops.
	for _, c := range []struct {
		body revocationBody
		code wire.ErrorCode
	}{
		{revocationBody{Stream: wire.ID(0), Topic: wire.ID(0), GroupID: 1 << 40, Source: clientA}, wire.ErrConsumerGroupIdNotFound},
		{revocationBody{Stream: wire.ID(0), Topic: wire.ID(0), GroupID: 0, Source: clientD}, wire.ErrConsumerGroupMemberNotFound},
		{revocationBody{Stream: wire.ID(0), Topic: wire.ID(3), GroupID: 0, Source: clientA}, wire.ErrTopicIdNotFound},
	} {
		if res := h.commitInternal(Internal{Operation: wire.OpCompleteConsumerGroupRevocation, Body: c.body.AppendTo(nil)}); res.Code != c.code {
			t.Errorf("%+v committed %d, want %d", c.body, res.Code, c.code)
		}
	}
	// 67 is server-only: a client cannot send it, and a non-root prepare is 41.
	h.as(clientA, func() {
		_, d := h.s.Admit(Request{Client: clientA, Operation: wire.OpCompleteConsumerGroupRevocation}, h.env)
		if d == nil || d.Evict != wire.EvictInvalidRequestOperation {
			t.Fatalf("client 67: %+v", d)
		}
	})
	h.request++
	body := revocationBody{Stream: wire.ID(0), Topic: wire.ID(0), Source: clientA}.AppendTo(nil)
	if res := h.commit(h.frame(wire.OpCompleteConsumerGroupRevocation, body, 5, h.request)); res.Code != wire.ErrUnauthorized {
		t.Fatalf("non-root 67 committed %d", res.Code)
	}
}

// client-plane.md 8.10, 7.6-7.8, 7.20: group reads and their channels.
func TestGroupReads(t *testing.T) {
	h := groupHarness(t, 2)
	h.ok(wire.OpCreateConsumerGroup, wire.CreateConsumerGroup{Stream: wire.ID(0), Topic: wire.ID(0), Name: "a"}.AppendTo(nil))
	h.createTopic(wire.ID(0), "empty", 0, nil)
	h.join(clientA, "g")
	h.join(clientB, "g")
	bob := addUser(h, 1, "bob", &wire.Permissions{})
	get := func(s, t, g wire.Identifier) []byte {
		return wire.GetConsumerGroup{Stream: s, Topic: t, Group: g}.AppendTo(nil)
	}
	list := func(s, t wire.Identifier) []byte { return wire.GetConsumerGroups{Stream: s, Topic: t}.AppendTo(nil) }
	cases := []struct {
		user   uint32
		code   wire.CommandCode
		body   []byte
		status wire.ErrorCode
		want   []byte
	}{
		{0, wire.CodeGetConsumerGroup, get(wire.ID(0), wire.ID(0), wire.Named("g")), 0,
			hx("00000000 02000000 02000000 01 67  00000000 01000000 00000000  01000000 01000000 01000000")},
		{0, wire.CodeGetConsumerGroup, get(wire.ID(0), wire.ID(0), wire.ID(5)), 0, nil},
		{0, wire.CodeGetConsumerGroup, get(wire.ID(4), wire.ID(0), wire.ID(0)), wire.ErrStreamIdNotFound, nil},
		{0, wire.CodeGetConsumerGroup, get(wire.ID(0), wire.ID(4), wire.ID(0)), wire.ErrTopicIdNotFound, nil},
		{bob, wire.CodeGetConsumerGroup, get(wire.ID(0), wire.ID(0), wire.ID(0)), wire.ErrUnauthorized, nil},
		{bob, wire.CodeGetConsumerGroup, get(wire.ID(0), wire.ID(0), wire.ID(5)), wire.ErrUnauthorized, nil},
		{bob, wire.CodeGetConsumerGroup, get(wire.ID(0), wire.ID(7), wire.ID(0)), wire.ErrTopicIdNotFound, nil},
		{0, wire.CodeGetConsumerGroup, hx("01 04 00000000"), wire.ErrInvalidCommand, nil},
		{0, wire.CodeGetConsumerGroups, list(wire.ID(0), wire.ID(0)), 0,
			hx("00000000 02000000 02000000 01 67  01000000 02000000 00000000 01 61")},
		{0, wire.CodeGetConsumerGroups, list(wire.ID(0), wire.Named("empty")), 0, nil},
		{0, wire.CodeGetConsumerGroups, list(wire.ID(3), wire.ID(0)), wire.ErrStreamIdNotFound, nil},
		{0, wire.CodeGetConsumerGroups, list(wire.ID(0), wire.ID(3)), wire.ErrTopicIdNotFound, nil},
		{bob, wire.CodeGetConsumerGroups, list(wire.ID(0), wire.ID(0)), wire.ErrUnauthorized, nil},
		{0, wire.CodeGetConsumerGroups, hx("01"), wire.ErrInvalidCommand, nil},
	}
	for i, c := range cases {
		status, p, ok := h.s.Read(c.user, c.code, c.body)
		if !ok || status != c.status || !bytes.Equal(p, c.want) || (c.want == nil) != (p == nil) {
			t.Errorf("case %d (%v): status %d payload % x, want %d % x", i, c.code, status, p, c.status, c.want)
		}
	}
	// Sync: Z for a non-member, anything unresolved and an undecodable body;
	// no permission check (bob's session of client A syncs fine).
	for _, body := range [][]byte{
		wire.SyncConsumerGroup{Stream: wire.ID(9), Topic: wire.ID(0), Group: wire.ID(0)}.AppendTo(nil),
		wire.SyncConsumerGroup{Stream: wire.ID(0), Topic: wire.ID(0), Group: wire.ID(9)}.AppendTo(nil),
		hx("01 04"),
	} {
		if status, p, ok := h.s.ReadAs(bob, clientA, wire.CodeSyncConsumerGroup, body); !ok || status != 0 || p != nil {
			t.Errorf("sync % x: %d % x", body, status, p)
		}
	}
	if _, p, _ := h.s.ReadAs(bob, clientA, wire.CodeSyncConsumerGroup, groupIDs("g")); !bytes.Equal(p, hx("0200000000000000 01000000 00000000")) {
		t.Fatalf("sync A % x", p)
	}
	if _, _, ok := h.s.Read(0, wire.CodeSyncConsumerGroup, groupIDs("g")); ok {
		t.Fatal("Read must leave SyncConsumerGroup to ReadAs")
	}
	if id, ok := h.s.ResolveGroup(wire.Named("s"), wire.Named("t"), wire.Named("a")); !ok || id != 1 {
		t.Fatal("ResolveGroup")
	}
	if _, ok := h.s.GroupOwnsPartition(0, 0, wire.ID(0), clientA, 1); ok {
		t.Fatal("A does not own 1")
	}
	if _, ok := h.s.GroupOwnsPartition(0, 0, wire.ID(0), clientC, 0); ok {
		t.Fatal("C is no member")
	}
}
