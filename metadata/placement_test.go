package metadata

import (
	"bytes"
	"math/bits"
	"testing"

	"iggynode/vsr"
	"iggynode/wire"
)

// newClusterHarness is a harness whose configured roster has the given
// voters (placement.go places on them until a roster commits).
func newClusterHarness(t *testing.T, voters uint32) *harness {
	h := newHarness(t)
	h.s.cfg.Voters = voters
	return h
}

// counts are the replicas and preferred primaries each node holds.
func counts(s *State) (load, leads [vsr.MaxReplicas]int) {
	_, ps := s.Placements()
	for _, p := range ps {
		for m := p.Voters; m != 0; m &= m - 1 {
			load[bits.TrailingZeros32(m)]++
		}
		leads[p.Leader]++
	}
	return load, leads
}

func checkSpread(t *testing.T, s *State, voters uint32, wantLoad, wantLeads int) {
	t.Helper()
	load, leads := counts(s)
	for id := uint8(0); id < vsr.MaxReplicas; id++ {
		if voters&(1<<id) == 0 {
			if load[id] != 0 || leads[id] != 0 {
				t.Fatalf("node %d is not a voter yet holds %d replicas, leads %d", id, load[id], leads[id])
			}
			continue
		}
		if load[id] < wantLoad-1 || load[id] > wantLoad+1 || leads[id] < wantLeads-1 || leads[id] > wantLeads+1 {
			t.Fatalf("node %d holds %d replicas (want %d+-1) and leads %d (want %d+-1); all: %v %v", id, load[id], wantLoad, leads[id], wantLeads, load[:5], leads[:5])
		}
	}
	groups, ps := s.Placements()
	for i, p := range ps {
		if p.Voters&(1<<p.Leader) == 0 || p.Voters&^voters != 0 {
			t.Fatalf("group %d: voters %b leader %d outside the set or the roster %b", groups[i], p.Voters, p.Leader, voters)
		}
	}
}

// Issue 23: 30 partitions with R = 3 on 5 nodes: each node holds 18
// replicas and is the preferred primary of 6, and each group starts in the
// view its preferred primary leads.
func TestPlacementSpreadsReplicasAndLeaders(t *testing.T) {
	h := newClusterHarness(t, 0b11111)
	s := h.createStream("s")
	h.createTopic(wire.ID(s), "a", 10, nil)
	b := h.createTopic(wire.ID(s), "b", 20, nil)
	checkSpread(t, h.s, 0b11111, 18, 6)
	groups, ps := h.s.Placements()
	if len(groups) != 30 {
		t.Fatalf("%d partitions placed, want 30", len(groups))
	}
	for i, p := range ps {
		if bits.OnesCount32(p.Voters) != 3 || p.StartVoters != p.Voters {
			t.Fatalf("group %d: %b (start %b), want 3 voters", groups[i], p.Voters, p.StartVoters)
		}
		ro := vsr.Roster{Voters: p.StartVoters, Target: p.StartVoters}
		if ro.Primary(p.StartView) != p.Leader {
			t.Fatalf("group %d: view %d of %b is led by %d, the preferred primary is %d", groups[i], p.StartView, p.Voters, ro.Primary(p.StartView), p.Leader)
		}
		if v, ok := h.s.PartitionVoters(groups[i]); !ok || v != p.StartVoters {
			t.Fatalf("group %d starts on %b %v, placed on %b", groups[i], v, ok, p.StartVoters)
		}
	}
	// The snapshot keeps it, byte for byte.
	r, err := Restore(Config{Voters: 0b11111}, h.s.Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(r.Snapshot(), h.s.Snapshot()) {
		t.Fatal("the placement does not survive the snapshot")
	}
	if p, _ := r.Placement(groups[7]); p != ps[7] {
		t.Fatalf("restored %+v, was %+v", p, ps[7])
	}
	// A deleted topic frees its nodes.
	h.ok(wire.OpDeleteTopic, appendIDs(nil, wire.ID(s), wire.ID(b)))
	if g, _ := h.s.Placements(); len(g) != 10 {
		t.Fatalf("%d placed after deleting 20 partitions, want 10", len(g))
	}
}

// A single node places nothing: its snapshot is the three sections it
// always was.
func TestPlacementSingleNodePlacesNothing(t *testing.T) {
	h := newHarness(t)
	h.createTopic(wire.ID(h.createStream("s")), "t", 4, nil)
	if g, _ := h.s.Placements(); len(g) != 0 {
		t.Fatalf("a single node placed %d partitions", len(g))
	}
	if _, ok := h.s.PartitionVoters(h.s.Partitions()[0].Group); ok {
		t.Fatal("a single node's partition has voters of its own")
	}
}

func reconfigure(t *testing.T, h *harness, epoch, voters uint32) {
	t.Helper()
	r := Roster{Roster: vsr.Roster{Epoch: epoch, Voters: voters, Target: voters}}
	for m := voters; m != 0; m &= m - 1 {
		r.Nodes = append(r.Nodes, RosterNode{ID: uint8(bits.TrailingZeros32(m)), Address: "127.0.0.1:1"})
	}
	if res := h.commit(h.frame(wire.OpReconfigure, EncodeRoster(nil, r), 0, 0)); res.Code != 0 {
		t.Fatalf("R to %b: %v", voters, res.Code)
	}
}

// moved counts the replicas that changed node between two placements.
func moved(before, after map[uint64]Placement) int {
	n := 0
	for g, p := range after {
		n += bits.OnesCount32(p.Voters &^ before[g].Voters)
	}
	return n
}

// Growing 3 -> 5 moves only what the spread needs (the three old nodes go
// from 30 replicas to 18: 36 moves), shrinking 5 -> 4 moves only the
// replicas of the node that left, and leadership is even after each.
func TestPlacementRebalancesOnRosterChanges(t *testing.T) {
	h := newClusterHarness(t, 0b111)
	s := h.createStream("s")
	h.createTopic(wire.ID(s), "t", 30, nil)
	checkSpread(t, h.s, 0b111, 30, 10)
	before := clonePlacement(h.s)
	reconfigure(t, h, 1, 0b11111)
	checkSpread(t, h.s, 0b11111, 18, 6)
	if n := moved(before, h.s.placement); n != 36 {
		t.Fatalf("%d replicas moved growing 3 -> 5, want the 36 the spread needs", n)
	}
	for g, p := range h.s.placement {
		if p.StartVoters != before[g].StartVoters || p.StartView != before[g].StartView {
			t.Fatalf("group %d: a move changed where the group started (%+v, was %+v)", g, p, before[g])
		}
	}
	before = clonePlacement(h.s)
	reconfigure(t, h, 2, 0b11011) // node 2 leaves
	checkSpread(t, h.s, 0b11011, 22, 7)
	load, _ := counts(h.s)
	if n := moved(before, h.s.placement); n > 18+4 {
		t.Fatalf("%d replicas moved when one node of 18 left (load %v)", n, load[:5])
	}
	// A roster that only renews the epoch (same voters) moves nothing.
	before = clonePlacement(h.s)
	reconfigure(t, h, 3, 0b11011)
	if n := moved(before, h.s.placement); n != 0 {
		t.Fatalf("renewing the epoch moved %d replicas", n)
	}
}

func clonePlacement(s *State) map[uint64]Placement {
	out := make(map[uint64]Placement, len(s.placement))
	for g, p := range s.placement {
		out[g] = p
	}
	return out
}

// replication_factor (an extension key of CreateTopic): R of the topic,
// 0 the default, more than the nodes or than 32 InvalidReplicationFactor,
// a value of the wrong kind 4042, not updatable (4041), and absent from
// the derived block when not sent.
func TestReplicationFactorOption(t *testing.T) {
	h := newClusterHarness(t, 0b11111)
	s := h.createStream("s")
	rf := func(kind wire.HeaderKind, v []byte) wire.Options {
		return wire.Options{{Key: wire.OptReplicationFactor, Kind: kind, Value: v}}
	}
	one := h.createTopic(wire.ID(s), "one", 5, rf(wire.KindUint8, []byte{1}))
	for _, ref := range h.s.TopicPartitions(s, one) {
		if p, _ := h.s.Placement(ref.Group); bits.OnesCount32(p.Voters) != 1 {
			t.Fatalf("R=1 partition on %b", p.Voters)
		}
	}
	five := h.createTopic(wire.ID(s), "five", 2, rf(wire.KindString, []byte("5")))
	for _, ref := range h.s.TopicPartitions(s, five) {
		if p, _ := h.s.Placement(ref.Group); p.Voters != 0b11111 {
			t.Fatalf("R=5 partition on %b", p.Voters)
		}
	}
	def := h.createTopic(wire.ID(s), "default", 1, rf(wire.KindUint32, u32le(0)))
	if p, _ := h.s.Placement(h.s.TopicPartitions(s, def)[0].Group); bits.OnesCount32(p.Voters) != DefaultReplicationFactor {
		t.Fatalf("R=0 (default) partition on %b", p.Voters)
	}
	ct := func(name string, opts wire.Options) []byte {
		return wire.CreateTopic{Stream: wire.ID(s), PartitionsCount: 1, Name: name, Options: opts}.AppendTo(nil)
	}
	h.denied(RootUserID, wire.OpCreateTopic, ct("six", rf(wire.KindUint8, []byte{6})), wire.ErrInvalidReplicationFactor)
	h.denied(RootUserID, wire.OpCreateTopic, ct("many", rf(wire.KindUint32, u32le(300))), wire.ErrInvalidReplicationFactor)
	h.denied(RootUserID, wire.OpCreateTopic, ct("bool", rf(wire.KindBool, []byte{1})), wire.ErrInvalidOptionValue)
	h.denied(RootUserID, wire.OpCreateTopic, ct("text", rf(wire.KindString, []byte("three"))), wire.ErrInvalidOptionValue)
	h.denied(RootUserID, wire.OpUpdateTopic, wire.UpdateTopic{Stream: wire.ID(s), Topic: wire.ID(one), Name: "one",
		Options: rf(wire.KindUint8, []byte{2})}.AppendTo(nil), wire.ErrUnsupportedOptionKey)
	ts, _ := h.s.TopicSettings(s, one)
	if ts.ReplicationFactor != 1 {
		t.Fatalf("settings R %d", ts.ReplicationFactor)
	}
	if _, ok := h.s.streams[s].topics[def].Derived.Get(wire.OptReplicationFactor); ok {
		t.Fatal("replication_factor in the derived block of a topic that did not send it")
	}
	// A single node refuses more than one copy.
	single := newHarness(t)
	ss := single.createStream("s")
	single.denied(RootUserID, wire.OpCreateTopic, wire.CreateTopic{Stream: wire.ID(ss), PartitionsCount: 1, Name: "t",
		Options: rf(wire.KindUint8, []byte{2})}.AppendTo(nil), wire.ErrInvalidReplicationFactor)
}
