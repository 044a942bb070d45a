package metadata

import (
	"bytes"
	"testing"

	"iggynode/vsr"
	"iggynode/wire"
)

func testRoster(epoch uint32) Roster {
	return Roster{Roster: vsr.Roster{Epoch: epoch, Voters: 0b0111, Learners: 0b1000, Target: 0b1011},
		Nodes: []RosterNode{{ID: 3, Address: "10.0.0.4:8091", Name: "n3", IP: "10.0.1.4", Ports: NodePorts{TCP: 8090, QUIC: 8080, HTTP: 3000, WebSocket: 8092}}, {ID: 0, Address: "10.0.0.1:8091"}, {ID: 1, Address: "10.0.0.2:8091"}, {ID: 2, Address: "10.0.0.3:8091"}}}
}

// Issue 22: the metadata OpReconfigure carries the core's roster, which
// the core reads from its first bytes, and every member's address.
func TestRosterBodyRoundTrip(t *testing.T) {
	r := testRoster(1)
	b := EncodeRoster(nil, r)
	if ro, err := vsr.DecodeRoster(b); err != nil || ro != r.Roster {
		t.Fatalf("the core reads %v, %v", ro, err)
	}
	got, err := DecodeRoster(b)
	if n3, _ := got.Node(3); n3 != r.Nodes[0] {
		t.Fatalf("node 3 %+v, want %+v", n3, r.Nodes[0])
	}
	if err != nil || got.Roster != r.Roster || len(got.Nodes) != 4 || got.Nodes[0].ID != 0 || got.Address(3) != "10.0.0.4:8091" ||
		got.Role(3) != "learner" || got.Role(1) != "voter" || got.Role(5) != "" {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	bad := r
	bad.Nodes = []RosterNode{{ID: 0, Address: "a:1"}, {ID: 1, Address: "b:1"}, {ID: 2, Address: "c:1"}}
	if _, err := DecodeRoster(EncodeRoster(nil, bad)); err == nil {
		t.Fatal("a roster that leaves a member without an address must not decode")
	}
	extra := r
	extra.Nodes = append(append([]RosterNode(nil), r.Nodes...), RosterNode{ID: 7, Address: "x:1"})
	if got, err := DecodeRoster(EncodeRoster(nil, extra)); err != nil || len(got.Nodes) != 4 || got.Address(7) != "" {
		t.Fatalf("a node the roster does not name is dropped: %+v %v", got, err)
	}
	if _, err := DecodeRoster(append(EncodeRoster(nil, r), 0)); err == nil {
		t.Fatal("trailing bytes must not decode")
	}
}

// One node's entry, byte by byte as the package doc lays it out.
func TestRosterBodyGolden(t *testing.T) {
	r := Roster{Roster: vsr.Roster{Epoch: 2, Voters: 0b1, Target: 0b1}, FromVoters: 0x0203,
		Nodes: []RosterNode{{ID: 0, Address: "h:1", Name: "n", IP: "ip", Ports: NodePorts{TCP: 0x0102, QUIC: 3, HTTP: 4, WebSocket: 5}}}}
	want := []byte{
		0x03, 0x02, 0x00, 0x00, // from_voters
		0x01, 0x00, // node count
		0x00,                      // id
		0x03, 0x00, 'h', ':', '1', // address
		0x01, 'n', // name
		0x02, 'i', 'p', // ip
		0x02, 0x01, 0x03, 0x00, 0x04, 0x00, 0x05, 0x00, // tcp, quic, http, websocket
	}
	got := EncodeRoster(nil, r)
	if !bytes.Equal(got[vsr.RosterBodySize:], want) {
		t.Fatalf("after the vsr roster\n got % x\nwant % x", got[vsr.RosterBodySize:], want)
	}
	back, err := DecodeRoster(append(vsr.EncodeRoster(nil, r.Roster), want...))
	if err != nil || back.Nodes[0] != r.Nodes[0] || back.FromVoters != r.FromVoters {
		t.Fatalf("decode %+v %v", back, err)
	}
}

// The state machine keeps the last committed roster, refuses one not of
// the next epoch (on every replica alike), and carries it in the
// snapshot; a state that never reconfigured snapshots as before.
func TestReconfigureAppliesAndSnapshots(t *testing.T) {
	h := newHarness(t)
	before := h.s.Snapshot()
	if _, ok := h.s.Roster(); ok {
		t.Fatal("a fresh state has no committed roster")
	}
	res := h.commit(h.frame(wire.OpReconfigure, EncodeRoster(nil, testRoster(1)), 0, 0))
	if res.Code != 0 {
		t.Fatalf("apply: code %v", res.Code)
	}
	got, ok := h.s.Roster()
	if !ok || got.Epoch != 1 || got.Address(0) != "10.0.0.1:8091" {
		t.Fatalf("roster %+v", got)
	}
	if res := h.commit(h.frame(wire.OpReconfigure, EncodeRoster(nil, testRoster(1)), 0, 0)); res.Code != wire.ErrInvalidCommand {
		t.Fatalf("a second R of epoch 1: code %v", res.Code)
	}
	if res := h.commit(h.frame(wire.OpReconfigure, []byte("junk"), 0, 0)); res.Code != wire.ErrInvalidCommand {
		t.Fatalf("an R that does not decode: code %v", res.Code)
	}
	snap := h.s.Snapshot()
	r, err := Restore(Config{}, snap)
	if err != nil {
		t.Fatal(err)
	}
	if rr, ok := r.Roster(); !ok || rr.Roster != got.Roster || rr.Address(3) != got.Address(3) {
		t.Fatalf("restored roster %+v", rr)
	}
	if !bytes.Equal(r.Snapshot(), snap) {
		t.Fatal("re-encoded snapshot differs")
	}
	if _, err := Restore(Config{}, before); err != nil {
		t.Fatalf("a three-section snapshot still restores: %v", err)
	}
	if bytes.Count(before, []byte("10.0.0.1")) != 0 || !bytes.Contains(snap, []byte("10.0.0.1:8091")) {
		t.Fatal("the roster section is written only once a roster committed")
	}
}

// DecodeRoster never panics, and what it accepts re-encodes to itself.
func FuzzDecodeRoster(f *testing.F) {
	f.Add(EncodeRoster(nil, testRoster(1)))
	f.Add([]byte("junk"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeRoster(b)
		if err != nil {
			return
		}
		back, err := DecodeRoster(EncodeRoster(nil, r))
		if err != nil || back.Roster != r.Roster || len(back.Nodes) != len(r.Nodes) {
			t.Fatalf("re-encoded roster %+v %v, was %+v", back, err, r)
		}
		for i := range r.Nodes {
			if back.Nodes[i] != r.Nodes[i] {
				t.Fatalf("node %d: %+v, was %+v", i, back.Nodes[i], r.Nodes[i])
			}
		}
	})
}

// Partition groups start on the voters of their time: those existing at
// the first R on the voters it changes (FromVoters), those created later
// on the committed roster's voters; the snapshot keeps them and a
// deleted topic's groups are forgotten.
func TestPartitionVotersFollowTheRoster(t *testing.T) {
	h := newHarness(t)
	s := h.createStream("s")
	h.createTopic(wire.ID(s), "before", 2, nil)
	before := h.s.Partitions()
	if _, ok := h.s.PartitionVoters(before[0].Group); ok {
		t.Fatal("voters known before any roster committed")
	}
	r := testRoster(1)
	r.FromVoters = 0b0111
	if res := h.commit(h.frame(wire.OpReconfigure, EncodeRoster(nil, r), 0, 0)); res.Code != 0 {
		t.Fatalf("apply R: %v", res.Code)
	}
	for _, p := range before {
		if v, ok := h.s.PartitionVoters(p.Group); !ok || v != 0b0111 {
			t.Fatalf("partition %d of the configured roster's time: %b %v", p.Partition, v, ok)
		}
	}
	after := h.createTopic(wire.ID(s), "after", 1, nil)
	var created uint64
	for _, p := range h.s.Partitions() {
		if p.Topic == after {
			created = p.Group
		}
	}
	if v, ok := h.s.PartitionVoters(created); !ok || v != r.Voters {
		t.Fatalf("a partition created in epoch 1 started on %b %v, want the roster's voters %b", v, ok, r.Voters)
	}
	restored, err := Restore(Config{}, h.s.Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := restored.PartitionVoters(created); !ok || v != r.Voters {
		t.Fatalf("restored voters %b %v", v, ok)
	}
	if !bytes.Equal(restored.Snapshot(), h.s.Snapshot()) {
		t.Fatal("the snapshot does not re-encode to itself")
	}
	h.ok(wire.OpDeleteTopic, appendIDs(nil, wire.ID(s), wire.ID(after)))
	if _, ok := h.s.PartitionVoters(created); ok {
		t.Fatal("a deleted partition's voters are kept")
	}
}
