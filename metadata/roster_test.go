package metadata

import (
	"bytes"
	"testing"

	"iggynode/vsr"
	"iggynode/wire"
)

func testRoster(epoch uint32) Roster {
	return Roster{Roster: vsr.Roster{Epoch: epoch, Voters: 0b0111, Learners: 0b1000, Target: 0b1011},
		Nodes: []RosterNode{{3, "10.0.0.4:8091"}, {0, "10.0.0.1:8091"}, {1, "10.0.0.2:8091"}, {2, "10.0.0.3:8091"}}}
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
	if err != nil || got.Roster != r.Roster || len(got.Nodes) != 4 || got.Nodes[0].ID != 0 || got.Address(3) != "10.0.0.4:8091" ||
		got.Role(3) != "learner" || got.Role(1) != "voter" || got.Role(5) != "" {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	bad := r
	bad.Nodes = []RosterNode{{0, "a:1"}, {1, "b:1"}, {2, "c:1"}}
	if _, err := DecodeRoster(EncodeRoster(nil, bad)); err == nil {
		t.Fatal("a roster that leaves a member without an address must not decode")
	}
	extra := r
	extra.Nodes = append(append([]RosterNode(nil), r.Nodes...), RosterNode{7, "x:1"})
	if got, err := DecodeRoster(EncodeRoster(nil, extra)); err != nil || len(got.Nodes) != 4 || got.Address(7) != "" {
		t.Fatalf("a node the roster does not name is dropped: %+v %v", got, err)
	}
	if _, err := DecodeRoster(append(EncodeRoster(nil, r), 0)); err == nil {
		t.Fatal("trailing bytes must not decode")
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
