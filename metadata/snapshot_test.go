package metadata

import (
	"bytes"
	"encoding/binary"
	"testing"

	"iggynode/wire"
)

// busyHarness commits a log that touches every command in scope.
func busyHarness(t *testing.T) *harness {
	t.Helper()
	h := newHarness(t)
	h.createStream("orders")
	h.createStream("audit")
	h.createTopic(wire.Named("orders"), "eu", 3, wire.Options{str("segment_size", "16 MiB"), str("enforce_fsync", "true")})
	h.createTopic(wire.ID(0), "us", 1, nil)
	h.createTopic(wire.ID(1), "log", 2, wire.Options{str("message_expiry", "7 days")})
	h.ok(wire.OpUpdateTopic, wire.UpdateTopic{Stream: wire.ID(0), Topic: wire.ID(1), Name: "usa",
		Options: wire.Options{u64opt("max_topic_size", 0), str("compression_algorithm", "gzip")}}.AppendTo(nil))
	h.ok(wire.OpCreatePartitions, wire.CreatePartitions{Stream: wire.ID(0), Topic: wire.ID(0), PartitionsCount: 2}.AppendTo(nil))
	h.ok(wire.OpDeletePartitions, wire.DeletePartitions{Stream: wire.ID(0), Topic: wire.ID(0), PartitionsCount: 1}.AppendTo(nil))
	h.sealed[partitionGroup(0, 0, 1)] = 41
	h.ok(wire.OpDeleteSegments, wire.DeleteSegments{Stream: wire.ID(0), Topic: wire.ID(0), PartitionID: 1, SegmentsCount: 2}.AppendTo(nil))
	h.ok(wire.OpPurgeTopic, wire.PurgeTopic{Stream: wire.ID(1), Topic: wire.ID(0)}.AppendTo(nil))
	h.ok(wire.OpUpdateStream, wire.UpdateStream{Stream: wire.ID(1), Name: "audit-log"}.AppendTo(nil))
	h.rejected(0, wire.OpCreateStream, wire.CreateStream{Name: "orders"}.AppendTo(nil), wire.ErrStreamNameAlreadyExists)
	h.createStream("tmp")
	h.ok(wire.OpDeleteStream, wire.DeleteStream{Stream: wire.Named("tmp")}.AppendTo(nil))
	h.client = wire.U128{Lo: 0xBEEF}
	h.register(RootUserID)
	h.ok(wire.OpPurgeStream, wire.PurgeStream{Stream: wire.ID(0)}.AppendTo(nil))
	h.submit(0, wire.OpLogout, nil)
	h.client = wire.U128{Lo: 0xCAFE}
	h.register(RootUserID)
	return h
}

// Two replicas applying the same committed log produce the same replies
// and byte-identical snapshots (replica-plane.md 5.11, 13).
func TestDeterminism(t *testing.T) {
	h := busyHarness(t)
	b := New(Config{})
	if err := b.Bootstrap("iggy", testHash); err != nil {
		t.Fatal(err)
	}
	a := New(Config{})
	if err := a.Bootstrap("iggy", testHash); err != nil {
		t.Fatal(err)
	}
	for i, f := range h.log {
		ra, rb := a.Apply(f), b.Apply(f)
		if !bytes.Equal(ra.Reply, rb.Reply) {
			t.Fatalf("op %d: replies differ", i+1)
		}
	}
	sa, sb, sh := a.Snapshot(), b.Snapshot(), h.s.Snapshot()
	if !bytes.Equal(sa, sb) || !bytes.Equal(sa, sh) {
		t.Fatal("snapshots differ between replicas")
	}
	if binary.LittleEndian.Uint64(sa[8:]) != h.op || binary.LittleEndian.Uint64(sa[16:]) != h.ts {
		t.Fatal("snapshot sequence_number / timestamp")
	}
}

// replica-plane.md 13.2: Restore(Snapshot()) reproduces the state: the same
// snapshot bytes, the same reads, the same client-table answers.
func TestSnapshotRoundTrip(t *testing.T) {
	h := busyHarness(t)
	s := h.s
	// Parts no command in scope creates yet: a user with permissions and
	// tokens, and a consumer group with members.
	s.addUser(&User{ID: 1, CreatedAt: 77, Status: wire.UserInactive, Username: "bob", PasswordHash: testHash,
		Permissions: &wire.Permissions{Global: wire.GlobalPermissions{ReadServers: true},
			Streams: map[uint32]wire.StreamPermissions{3: {ReadStream: true, Topics: map[uint32]wire.TopicPermissions{0: {SendMessages: true}}}}},
		Tokens: map[string]*Token{
			"b": {Name: "b", Hash: string(bytes.Repeat([]byte("ab"), 32)), ExpiryAt: 9},
			"a": {Name: "a", Hash: string(bytes.Repeat([]byte("0f"), 32))},
		}})
	s.addUser(&User{ID: 4, CreatedAt: 78, Status: wire.UserActive, Username: "nop", PasswordHash: testHash})
	topic := s.streams[0].topics[0]
	topic.NextGroupID = 3
	topic.addGroup(&ConsumerGroup{ID: 2, Generation: 5, Name: "g", Members: []*GroupMember{
		{Slot: 0, Client: clientA, Partitions: []uint32{1, 0}, Revocations: []Revocation{{PartitionID: 0, TargetSlot: 1, Since: 100}}},
		{Slot: 1, Client: clientB},
	}})
	topic.addGroup(&ConsumerGroup{ID: 0, Name: "empty"})
	snap := s.Snapshot()
	r, err := Restore(Config{}, snap)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Snapshot(); !bytes.Equal(got, snap) {
		t.Fatal("re-encoded snapshot differs")
	}
	for _, read := range []struct {
		code wire.CommandCode
		body []byte
	}{
		{wire.CodeGetStreams, nil},
		{wire.CodeGetStream, wire.GetStream{Stream: wire.ID(0)}.AppendTo(nil)},
		{wire.CodeGetTopic, wire.GetTopic{Stream: wire.ID(0), Topic: wire.ID(1)}.AppendTo(nil)},
		{wire.CodeGetTopics, wire.GetTopics{Stream: wire.ID(1)}.AppendTo(nil)},
		{wire.CodeGetUser, wire.GetUser{User: wire.ID(1)}.AppendTo(nil)},
		{wire.CodeGetUsers, nil},
	} {
		s1, p1, _ := s.Read(0, read.code, read.body)
		s2, p2, _ := r.Read(0, read.code, read.body)
		if s1 != s2 || !bytes.Equal(p1, p2) {
			t.Errorf("%v differs after restore", read.code)
		}
	}
	if a, b := s.TopicSettings(0, 0); a != must(r.TopicSettings(0, 0)) || !b {
		t.Error("settings differ after restore")
	}
	if pa, pb := s.Partitions(), r.Partitions(); len(pa) != len(pb) || pa[1] != pb[1] {
		t.Error("partitions differ after restore")
	}
	// The allocator continues past the stored next_creation_id.
	if r.nextCreationID != s.nextCreationID || r.allocator != s.nextCreationID {
		t.Errorf("allocator %d next %d", r.allocator, r.nextCreationID)
	}
	pf1 := s.Preflight(wire.U128{Lo: 0xCAFE}, h.op, 0, wire.U128{})
	pf2 := r.Preflight(wire.U128{Lo: 0xCAFE}, h.op, 0, wire.U128{})
	if pf1.Verdict != VerdictDuplicate || !bytes.Equal(pf1.Reply, pf2.Reply) {
		t.Errorf("client table after restore: %v %v", pf1.Verdict, pf2.Verdict)
	}
}

func must[T any](v T, _ bool) T { return v }

// replica-plane.md 13.2 decode rules: trailer first, magic, version,
// section count and order, exact lengths.
func TestSnapshotDecodeRules(t *testing.T) {
	snap := busyHarness(t).s.Snapshot()
	if !bytes.Equal(snap[:8], hx("494d4431 0100 0000")) {
		t.Fatalf("header % x", snap[:8])
	}
	body := snap[:len(snap)-8]
	// The users section starts at 28: tag 1, its length, then the count.
	if snap[28] != tagUsers || binary.LittleEndian.Uint32(snap[33:]) != 1 {
		t.Fatalf("users section % x", snap[28:40])
	}
	usersLen := int(binary.LittleEndian.Uint32(snap[29:]))
	streamsAt := 28 + 5 + usersLen
	bad := map[string][]byte{
		"trailer":        patch(snap, len(snap)-1, snap[len(snap)-1]^0xFF),
		"magic":          sealH64(patch(body, 3, '2')),
		"version":        sealH64(patch(body, 4, 2)),
		"reserved":       sealH64(patch(body, 6, 1)),
		"section count":  sealH64(patch(body, 24, 2)),
		"section order":  sealH64(patch(body, streamsAt, tagClientTable)),
		"section length": sealH64(patch(body, 29, byte(usersLen+1))),
		"trailing":       sealH64(append(append([]byte(nil), body...), 0)),
		"empty":          nil,
	}
	for name, b := range bad {
		if _, err := Restore(Config{}, b); err == nil {
			t.Errorf("%s: restored", name)
		}
	}
}

// replica-plane.md 5.11, 13.2: a log of user, token and group commands
// (rejections, a pending hand-off and its completion, a logout included)
// gives the same replies and byte-identical snapshots on two replicas,
// and Restore reproduces users, tokens, groups, members and revocations.
func TestDeterminismUsersTokensGroups(t *testing.T) {
	h := groupHarness(t, 3)
	h.ok(wire.OpCreateUser, createUserBody("alice", "pw", 1, unorderedPerms))
	h.ok(wire.OpCreateUser, createUserBody("bob", "pw", 2, nil))
	h.rejected(0, wire.OpCreateUser, createUserBody("bob", "pw", 1, nil), wire.ErrUserAlreadyExists)
	h.ok(wire.OpUpdatePermissions, append(idb(2), 1, 11, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
	h.ok(wire.OpChangePassword, wire.ChangePassword{User: wire.ID(1), CurrentPassword: "pw", NewPassword: "pw2"}.AppendTo(nil))
	raw := h.createToken(1, "ci", 0)
	h.createToken(1, "short", 50_000)
	h.createToken(0, "root", 1)
	h.ok(wire.OpDeletePersonalAccessToken, wire.DeletePersonalAccessToken{Name: "root"}.AppendTo(nil))
	h.join(clientA, "g")
	h.join(clientB, "g")
	h.inFlight[GroupRef{}] = []uint32{1}
	h.join(clientC, "g") // A: [0, 1] with 1 pending toward C
	h.ok(wire.OpCreateConsumerGroup, wire.CreateConsumerGroup{Stream: wire.ID(0), Topic: wire.ID(0), Name: "other"}.AppendTo(nil))
	h.join(clientD, "other")
	h.as(clientD, func() { h.submit(0, wire.OpLogout, nil) })
	h.join(clientE, "g")
	if len(h.s.PendingRevocations()) != 1 {
		t.Fatalf("pending %+v", h.s.PendingRevocations())
	}
	snapWithPending, pendingAt := h.s.Snapshot(), len(h.log)
	h.commitInternal(h.s.PendingRevocations()[0].Completion())
	h.leave(clientB, "g")

	a, b := New(Config{}), New(Config{})
	for _, s := range []*State{a, b} {
		if err := s.Bootstrap("iggy", testHash); err != nil {
			t.Fatal(err)
		}
	}
	var mid []byte
	for i, f := range h.log {
		ra, rb := a.Apply(f), b.Apply(f)
		if !bytes.Equal(ra.Reply, rb.Reply) || ra.Code != rb.Code {
			t.Fatalf("op %d: replies differ", i+1)
		}
		if i+1 == pendingAt {
			mid = a.Snapshot()
		}
	}
	if !bytes.Equal(mid, snapWithPending) {
		t.Fatal("snapshot with a pending revocation differs between replicas")
	}
	snap := a.Snapshot()
	if !bytes.Equal(snap, b.Snapshot()) || !bytes.Equal(snap, h.s.Snapshot()) {
		t.Fatal("snapshots differ between replicas")
	}
	for _, payload := range [][]byte{snap, snapWithPending} {
		r, err := Restore(Config{}, payload)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(r.Snapshot(), payload) {
			t.Fatal("restore round trip")
		}
	}
	r, _ := Restore(Config{}, snapWithPending)
	if p := r.PendingRevocations(); len(p) != 1 || p[0].Partition != 1 || p[0].Source != clientA {
		t.Fatalf("restored pending %+v", p)
	}
	r, _ = Restore(Config{}, snap)
	for _, read := range []struct {
		user uint32
		code wire.CommandCode
		body []byte
	}{
		{0, wire.CodeGetUsers, nil},
		{0, wire.CodeGetUser, idb(1)},
		{0, wire.CodeGetUser, idb(2)},
		{1, wire.CodeGetPersonalAccessTokens, nil},
		{0, wire.CodeGetConsumerGroup, groupIDs("g")},
		{0, wire.CodeGetConsumerGroups, wire.GetConsumerGroups{Stream: wire.ID(0), Topic: wire.ID(0)}.AppendTo(nil)},
		{0, wire.CodeSyncConsumerGroup, groupIDs("g")},
	} {
		s1, p1, _ := h.s.ReadAs(read.user, clientC, read.code, read.body)
		s2, p2, _ := r.ReadAs(read.user, clientC, read.code, read.body)
		if s1 != s2 || !bytes.Equal(p1, p2) || p1 == nil {
			t.Errorf("%v differs after restore (or is empty)", read.code)
		}
	}
	if id, reason := r.LoginWithToken(raw, h.ts); id != 1 || reason != 0 {
		t.Fatalf("token login after restore: %d %v", id, reason)
	}
	if id, reason := r.Login("alice", "pw2"); id != 1 || reason != 0 {
		t.Fatalf("password login after restore: %d %v", id, reason)
	}
}
