package metadata

import (
	"testing"

	"iggynode/wire"
)

// routesAgree checks that Routes answers every probe exactly where the
// state succeeds, with the same partition, and refuses where it fails.
func routesAgree(t *testing.T, step string, s *State) {
	t.Helper()
	r := s.Routes()
	ids := []wire.Identifier{wire.ID(0), wire.ID(1), wire.ID(2), wire.ID(7), wire.Named("s"), wire.Named("t"), wire.Named("u"), wire.Named("renamed")}
	users := []uint32{RootUserID, 1, 2, 3, 99}
	for _, sid := range ids {
		for _, tid := range ids {
			for part := uint32(0); part < 4; part++ {
				want, code := s.ResolvePartition(sid, tid, part)
				got, ok := r.ResolvePartition(sid, tid, part)
				if ok != (code == 0) || ok && got != want {
					t.Fatalf("%s: ResolvePartition(%v, %v, %d): routes %+v %v, state %+v %d", step, sid, tid, part, got, ok, want, code)
				}
				if ok {
					for _, u := range users {
						for _, rule := range []Rule{RuleSend, RulePoll} {
							if r.Allowed(u, rule, got.Stream, got.Topic) != s.Allowed(u, rule, got.Stream, got.Topic) {
								t.Fatalf("%s: Allowed(%d, %v, %d, %d) differs", step, u, rule, got.Stream, got.Topic)
							}
						}
					}
				}
				for _, p := range []wire.Partitioning{wire.PartitionID(part), wire.MessagesKey([]byte{byte(part), 9})} {
					want, code := s.ResolveSend(sid, tid, p)
					for _, u := range users {
						got, ok := r.SendAs(u, sid, tid, p)
						allowed := code == 0 && s.Allowed(u, RuleSend, want.Stream, want.Topic)
						if ok != allowed || ok && got != want {
							t.Fatalf("%s: SendAs(%d, %v, %v, %v): routes %+v %v, state %+v %d", step, u, sid, tid, p, got, ok, want, code)
						}
					}
				}
			}
		}
	}
}

func TestRoutesFollowTheState(t *testing.T) {
	h := newHarness(t)
	routesAgree(t, "empty", h.s)
	h.createStream("s")
	h.createTopic(wire.ID(0), "t", 3, nil)
	h.createTopic(wire.ID(0), "u", 1, nil)
	h.createStream("other")
	h.createTopic(wire.Named("other"), "t", 2, nil)
	routesAgree(t, "created", h.s)
	const bob, carol = 1, 2
	h.ok(wire.OpCreateUser, wire.CreateUser{Username: "bob", Password: "secret12", Status: uint8(wire.UserActive),
		Permissions: &wire.Permissions{Streams: map[uint32]wire.StreamPermissions{0: {Topics: map[uint32]wire.TopicPermissions{1: {SendMessages: true}}}}}}.AppendTo(nil))
	h.ok(wire.OpCreateUser, wire.CreateUser{Username: "carol", Password: "secret12", Status: uint8(wire.UserActive),
		Permissions: &wire.Permissions{Global: wire.GlobalPermissions{PollMessages: true}}}.AppendTo(nil))
	routesAgree(t, "users", h.s)
	if r := h.s.Routes(); !r.Allowed(bob, RuleSend, 0, 1) || r.Allowed(bob, RuleSend, 0, 0) || !r.Allowed(carol, RulePoll, 1, 0) || r.Allowed(carol, RuleSend, 1, 0) {
		t.Fatal("the users' permissions did not reach the routes")
	}
	h.ok(wire.OpUpdatePermissions, wire.UpdatePermissions{User: wire.Named("bob"), Permissions: &wire.Permissions{}}.AppendTo(nil))
	if h.s.Routes().Allowed(bob, RuleSend, 0, 1) {
		t.Fatal("a revoked permission still routes")
	}
	h.ok(wire.OpUpdateStream, wire.UpdateStream{Stream: wire.ID(0), Name: "renamed"}.AppendTo(nil))
	h.ok(wire.OpCreatePartitions, wire.CreatePartitions{Stream: wire.ID(0), Topic: wire.ID(1), PartitionsCount: 2}.AppendTo(nil))
	h.ok(wire.OpDeletePartitions, wire.DeletePartitions{Stream: wire.ID(0), Topic: wire.ID(0), PartitionsCount: 1}.AppendTo(nil))
	routesAgree(t, "renamed and repartitioned", h.s)
	h.ok(wire.OpDeleteTopic, wire.DeleteTopic{Stream: wire.ID(1), Topic: wire.ID(0)}.AppendTo(nil))
	h.ok(wire.OpDeleteUser, wire.DeleteUser{User: wire.Named("carol")}.AppendTo(nil))
	routesAgree(t, "deleted", h.s)
	if h.s.Routes().Allowed(carol, RulePoll, 0, 0) {
		t.Fatal("a deleted user still routes")
	}
}

// A login or a consumer group op leaves the routes as they are (no
// O(partitions) rebuild per login); a topic create rebuilds them.
func TestRoutesRebuildOnlyForOpsThatRoute(t *testing.T) {
	h := newHarness(t)
	h.createStream("s")
	h.createTopic(wire.ID(0), "t", 2, nil)
	before := h.s.Routes()
	h.register(RootUserID)
	h.ok(wire.OpCreateConsumerGroup, wire.CreateConsumerGroup{Stream: wire.ID(0), Topic: wire.ID(0), Name: "g"}.AppendTo(nil))
	if h.s.Routes() != before {
		t.Fatal("a login or a consumer group create rebuilt the routes")
	}
	h.createTopic(wire.ID(0), "u", 1, nil)
	after := h.s.Routes()
	if after == before {
		t.Fatal("a topic create did not rebuild the routes")
	}
	if _, ok := after.ResolvePartition(wire.ID(0), wire.Named("u"), 0); !ok {
		t.Fatal("the new topic does not route")
	}
	if _, ok := before.ResolvePartition(wire.ID(0), wire.Named("u"), 0); ok {
		t.Fatal("an earlier copy changed: routes must be immutable")
	}
}

// The Balanced cursor is one per topic, whoever routes: the routes and the
// state advance the same one, modulo the count.
func TestBalancedCursorIsShared(t *testing.T) {
	h := newHarness(t)
	h.createStream("s")
	h.createTopic(wire.ID(0), "t", 3, nil)
	r := h.s.Routes()
	var got []uint32
	for i := range 7 {
		var ref PartitionRef
		if i%2 == 0 {
			ref, _ = r.SendAs(RootUserID, wire.ID(0), wire.ID(0), wire.Balanced())
		} else {
			ref, _ = h.s.ResolveSend(wire.ID(0), wire.ID(0), wire.Balanced())
		}
		got = append(got, ref.Partition)
	}
	for i, p := range got {
		if p != uint32(i%3) {
			t.Fatalf("balanced sends went to %v, want 0 1 2 0 1 2 0", got)
		}
	}
	if _, ok := r.SendAs(RootUserID, wire.ID(0), wire.ID(0), wire.PartitionID(3)); ok {
		t.Fatal("a partition id past the count routes")
	}
	// A user the routes refuse does not move the cursor: the state, which
	// answers that send, moves it once.
	if _, ok := r.SendAs(42, wire.ID(0), wire.ID(0), wire.Balanced()); ok {
		t.Fatal("an unknown user routes")
	}
	if ref, _ := h.s.ResolveSend(wire.ID(0), wire.ID(0), wire.Balanced()); ref.Partition != 1 {
		t.Fatalf("after a refused send the next balanced send went to %d, want 1", ref.Partition)
	}
}
