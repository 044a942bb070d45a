package metadata

import (
	"bytes"
	"testing"

	"iggynode/wire"
)

// fuzzState is a small state with streams, topics and partitions to aim at.
func fuzzState(t testing.TB) *State {
	s := New(Config{ClientsTableMax: 4})
	if err := s.Bootstrap("iggy", testHash); err != nil {
		t.Fatal(err)
	}
	h := &harness{s: s, client: wire.U128{Lo: 1}, ts: 1000, sealed: map[uint64]uint64{}}
	for _, f := range [][]byte{
		h.frame(wire.OpRegister, nil, 0, 0),
		h.frame(wire.OpCreateStream, wire.CreateStream{Name: "s"}.AppendTo(nil), 0, 1),
	} {
		s.Apply(f)
	}
	p, _ := s.Admit(Request{Operation: wire.OpCreateTopic, Body: wire.CreateTopic{Stream: wire.ID(0), PartitionsCount: 2, Name: "t"}.AppendTo(nil)}, AdmitEnv{})
	s.Apply(h.frame(p.Operation, p.Body, 0, 2))
	// A group with a member holding a pending hand-off, a user with a token.
	s.Apply(h.frame(wire.OpCreateConsumerGroup, wire.CreateConsumerGroup{Stream: wire.ID(0), Topic: wire.ID(0), Name: "g"}.AppendTo(nil), 0, 3))
	s.Apply(h.frame(wire.OpJoinConsumerGroup, joinBody{Stream: wire.ID(0), Topic: wire.ID(0), Group: wire.ID(0), Client: wire.U128{Lo: 1}}.AppendTo(nil), 0, 4))
	s.Apply(h.frame(wire.OpJoinConsumerGroup, joinBody{Stream: wire.ID(0), Topic: wire.ID(0), Group: wire.ID(0), Client: wire.U128{Lo: 2},
		InFlight: []uint32{1}}.AppendTo(nil), 0, 5))
	s.Apply(h.frame(wire.OpCreateUser, createUserBody("alice", testHash, 1, nil), 0, 6))
	s.Apply(h.frame(wire.OpCreatePersonalAccessToken, tokenCreateBody{UserID: 1, Name: "tok", Hash: TokenHash("raw")}.AppendTo(nil), 0, 7))
	return s
}

// FuzzAdmitApply: any operation and body, admitted or applied raw, never
// panics; every applied prepare answers with a well-formed reply frame.
func FuzzAdmitApply(f *testing.F) {
	seeds := []struct {
		op   wire.Operation
		body []byte
	}{
		{wire.OpCreateStream, wire.CreateStream{Name: "x"}.AppendTo(nil)},
		{wire.OpUpdateTopic, wire.UpdateTopic{Stream: wire.ID(0), Topic: wire.ID(0), Name: "u", Options: wire.Options{str("message_expiry", "1 day")}}.AppendTo(nil)},
		{wire.OpCreateTopic, wire.CreateTopic{Stream: wire.ID(0), PartitionsCount: 3, Name: "n", Options: wire.Options{str("segment_size", "2 MiB")}}.AppendTo(nil)},
		{wire.OpCreatePartitions, wire.CreatePartitions{Stream: wire.ID(0), Topic: wire.ID(0), PartitionsCount: 2}.AppendTo(nil)},
		{wire.OpDeletePartitions, wire.DeletePartitions{Stream: wire.ID(0), Topic: wire.ID(0), PartitionsCount: 1}.AppendTo(nil)},
		{wire.OpDeleteSegments, wire.DeleteSegments{Stream: wire.ID(0), Topic: wire.ID(0), SegmentsCount: 1}.AppendTo(nil)},
		{wire.OpTruncatePartition, wire.TruncatePartition{Stream: wire.ID(0), Topic: wire.ID(0), UpToOffset: 5}.AppendTo(nil)},
		{wire.OpCreateTopicWithAssignments, nil},
		{wire.OpPurgeStream, wire.PurgeStream{Stream: wire.ID(0)}.AppendTo(nil)},
		{wire.OpLogout, nil},
		{wire.OpRegister, nil},
		{wire.OpCreateUser, createUserBody("bob", "pw", 2, unorderedPerms)},
		{wire.OpUpdateUser, wire.UpdateUser{User: wire.ID(1), Username: new(string)}.AppendTo(nil)},
		{wire.OpDeleteUser, idb(1)},
		{wire.OpChangePassword, wire.ChangePassword{User: wire.ID(1), NewPassword: testHash}.AppendTo(nil)},
		{wire.OpUpdatePermissions, append(idb(1), 1, 11, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0)},
		{wire.OpCreatePersonalAccessToken, wire.CreatePersonalAccessToken{Name: "tok", Expiry: 5}.AppendTo(nil)},
		{wire.OpCreatePersonalAccessToken, tokenCreateBody{UserID: 1, Name: "t2", Expiry: 9, Hash: TokenHash("x")}.AppendTo(nil)},
		{wire.OpDeletePersonalAccessToken, tokenDeleteBody{UserID: 1, Name: "tok", OnlyIfExpired: true}.AppendTo(nil)},
		{wire.OpCreateConsumerGroup, wire.CreateConsumerGroup{Stream: wire.ID(0), Topic: wire.ID(0), Name: "h"}.AppendTo(nil)},
		{wire.OpDeleteConsumerGroup, wire.DeleteConsumerGroup{Stream: wire.ID(0), Topic: wire.ID(0), Group: wire.ID(0)}.AppendTo(nil)},
		{wire.OpJoinConsumerGroup, joinBody{Stream: wire.ID(0), Topic: wire.ID(0), Group: wire.ID(0), Client: wire.U128{Lo: 3}, InFlight: []uint32{0, 1}}.AppendTo(nil)},
		{wire.OpLeaveConsumerGroup, leaveBody{Stream: wire.ID(0), Topic: wire.ID(0), Group: wire.ID(0), Client: wire.U128{Lo: 2}}.AppendTo(nil)},
		{wire.OpCompleteConsumerGroupRevocation, revocationBody{Stream: wire.ID(0), Topic: wire.ID(0), Source: wire.U128{Lo: 1}, Partition: 1}.AppendTo(nil)},
	}
	for _, s := range seeds {
		f.Add(uint8(s.op), uint32(0), s.body)
		f.Add(uint8(s.op), uint32(7), s.body)
	}
	f.Fuzz(func(t *testing.T, op uint8, user uint32, body []byte) {
		s := fuzzState(t)
		h := &harness{s: s, client: wire.U128{Lo: 1}, op: s.AppliedOp(), ts: 5000, sealed: map[uint64]uint64{}}
		env := AdmitEnv{SealedUpTo: func(PartitionRef, uint32) (uint64, bool, error) { return 3, true, nil }}
		frames := [][]byte{h.frame(wire.Operation(op), body, user, 9)}
		if p, d := s.Admit(Request{Client: h.client, UserID: user, Operation: wire.Operation(op), Body: body}, env); d == nil {
			frames = append(frames, h.frame(p.Operation, p.Body, user, 10))
		} else if n := btoi(d.Status != 0) + btoi(d.Evict != 0) + btoi(d.Result != 0); n != 1 {
			t.Fatalf("denial sets %d channels: %+v", n, d)
		}
		for _, f := range frames {
			res := s.Apply(f)
			if len(res.Reply) < wire.HeaderSize || int(wire.HeaderOf(res.Reply).Size()) != len(res.Reply) {
				t.Fatalf("reply of %d bytes", len(res.Reply))
			}
			// The log only carries defined operations (DecodePrepareHeader);
			// an undefined one is still answered, with the byte echoed.
			rh := wire.HeaderOf(res.Reply).Reply()
			_, err := wire.DecodeReplyHeader(wire.HeaderOf(res.Reply))
			if !wire.Operation(op).Defined() && rh.Operation == wire.Operation(op) {
				err = nil
			}
			if err != nil || res.Reply[60] != 8 || rh.Status != 0 || rh.Operation != wire.HeaderOf(f).Prepare().Operation {
				t.Fatalf("reply header %+v %v", rh, err)
			}
			if rh.Operation.ResultFramed() {
				if _, err := wire.SplitResult(res.Reply[wire.HeaderSize:]); err != nil && res.Code == 0 {
					t.Fatalf("success reply does not frame: %v", err)
				}
			}
		}
		// The state still snapshots and restores to the same bytes.
		snap := s.Snapshot()
		r, err := Restore(Config{ClientsTableMax: 4}, snap)
		if err != nil {
			t.Fatalf("restore after %v: %v", wire.Operation(op), err)
		}
		if !bytes.Equal(r.Snapshot(), snap) {
			t.Fatal("snapshot round trip")
		}
	})
}

// FuzzRestore: snapshot decode never panics, and whatever decodes
// re-encodes to the same bytes (the encoding is canonical).
func FuzzRestore(f *testing.F) {
	s := fuzzState(f)
	f.Add(s.Snapshot())
	s.addUser(&User{ID: 3, Username: "u", Status: wire.UserActive, PasswordHash: "h", Permissions: &wire.Permissions{},
		Tokens: map[string]*Token{"t": {Name: "t", Hash: string(bytes.Repeat([]byte("a"), 64))}}})
	s.streams[0].topics[0].NextGroupID = 1
	s.streams[0].topics[0].addGroup(&ConsumerGroup{Name: "g", Members: []*GroupMember{{Client: clientA, Partitions: []uint32{0}}}})
	f.Add(s.Snapshot())
	f.Add(New(Config{}).Snapshot())
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := Restore(Config{}, b)
		if err != nil {
			return
		}
		if got := r.Snapshot(); !bytes.Equal(got, b) {
			t.Fatalf("re-encoding differs:\n got % x\nwant % x", got, b)
		}
	})
}

// FuzzRestoreBody: the same property with the trailer fixed up, so the
// fuzzer reaches the section decoders.
func FuzzRestoreBody(f *testing.F) {
	s := fuzzState(f)
	snap := s.Snapshot()
	f.Add(snap[:len(snap)-8])
	s.placement[7] = Placement{StartVoters: 0b111, StartView: 1, Voters: 0b1011, Leader: 3}
	snap = s.Snapshot()
	f.Add(snap[:len(snap)-8])
	f.Fuzz(func(t *testing.T, body []byte) {
		b := sealH64(body)
		r, err := Restore(Config{}, b)
		if err != nil {
			return
		}
		if got := r.Snapshot(); !bytes.Equal(got, b) {
			t.Fatalf("re-encoding differs:\n got % x\nwant % x", got, b)
		}
	})
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
