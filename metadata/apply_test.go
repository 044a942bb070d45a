package metadata

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"iggynode/wire"
)

// wantReplyHeader writes a ReplyHeader by hand at the offsets of
// client-plane.md 4.4 / replica-plane.md 5.11, with the harness's prepare
// fields (cluster 0xC1, view 3, replica 1).
func wantReplyHeader(size uint32, client, reqChecksum wire.U128, op, commit, ts, request uint64, operation byte) []byte {
	h := make([]byte, 256)
	h[32] = 0xC1
	binary.LittleEndian.PutUint32(h[48:], size)
	binary.LittleEndian.PutUint32(h[52:], 3)
	h[60] = 8
	h[61] = 1
	binary.LittleEndian.PutUint64(h[128:], reqChecksum.Lo)
	binary.LittleEndian.PutUint64(h[136:], reqChecksum.Hi)
	binary.LittleEndian.PutUint64(h[160:], client.Lo)
	binary.LittleEndian.PutUint64(h[168:], client.Hi)
	binary.LittleEndian.PutUint64(h[176:], op)
	binary.LittleEndian.PutUint64(h[184:], commit)
	binary.LittleEndian.PutUint64(h[192:], ts)
	binary.LittleEndian.PutUint64(h[200:], request)
	h[208] = operation
	return h
}

// client-plane.md 17.6: CreateStream success for stream 0 "s1" at T, the
// whole reply frame built per replica-plane.md 5.11.
func TestCreateStreamReplyBytes(t *testing.T) {
	h := newHarness(t)
	body := hx("02 73 31")
	res := h.ok(wire.OpCreateStream, body)
	T := h.ts
	wantBody := hx(`
		00 00 00 00
		00 00 00 00`)
	wantBody = append(wantBody, u64le(T)...)
	wantBody = append(wantBody, hx(`
		00 00 00 00
		00 00 00 00 00 00 00 00
		00 00 00 00 00 00 00 00
		02 73 31
		00 00 00 00`)...)
	want := wantReplyHeader(uint32(256+len(wantBody)), h.client, wire.RequestChecksum(body), h.op, h.op, T, 1, 128)
	want = append(want, wantBody...)
	if !bytes.Equal(res.Reply, want) {
		t.Fatalf("reply\n got % x\nwant % x", res.Reply, want)
	}
}

// client-plane.md 17.6: the committed rejection for a taken name is exactly
// [01 00 00 00][00 00 00 00][f4 03 00 00], status 0, operation 128.
func TestCommittedRejectionBytes(t *testing.T) {
	h := newHarness(t)
	h.createStream("s1")
	body := wire.CreateStream{Name: "s1"}.AppendTo(nil)
	res := h.rejected(RootUserID, wire.OpCreateStream, body, wire.ErrStreamNameAlreadyExists)
	want := wantReplyHeader(268, h.client, wire.RequestChecksum(body), h.op, h.op, h.ts, 2, 128)
	want = append(want, hx("01 00 00 00  00 00 00 00  f4 03 00 00")...)
	if !bytes.Equal(res.Reply, want) {
		t.Fatalf("reply\n got % x\nwant % x", res.Reply, want)
	}
}

// client-plane.md 5.2 step 9-10, 7.12: Register commits with epoch = op;
// the reply is [00 00 00 00] + LoginRegisterResponse under operation 1,
// request 0. Logout (class H) has an empty body and op = the bound epoch.
func TestRegisterAndLogoutReplies(t *testing.T) {
	h := newHarness(t)
	reg := h.register(RootUserID)
	epoch := h.op
	wantBody := hx("00000000 00000000")
	wantBody = append(wantBody, u64le(epoch)...)
	wantBody = append(wantBody, hx("00 2c 00 00")...)
	wantBody = append(wantBody, byte(len(wire.ServerVersion)))
	wantBody = append(wantBody, wire.ServerVersion...)
	want := wantReplyHeader(uint32(256+len(wantBody)), h.client, wire.RequestChecksum(nil), epoch, epoch, h.ts, 0, 1)
	if !bytes.Equal(reg.Reply, append(want, wantBody...)) {
		t.Fatalf("register reply\n got % x\nwant % x", reg.Reply, append(want, wantBody...))
	}
	if e, ok := h.s.Clients().Lookup(h.client); !ok || e.Epoch != epoch || e.UserID != 0 {
		t.Fatalf("entry %+v after register at op %d", e, epoch)
	}
	res, d := h.submit(RootUserID, wire.OpLogout, nil)
	if d != nil {
		t.Fatal(d)
	}
	want = wantReplyHeader(256, h.client, wire.RequestChecksum(nil), epoch, h.op, h.ts, h.request, 3)
	if !bytes.Equal(res.Reply, want) {
		t.Fatalf("logout reply\n got % x\nwant % x", res.Reply, want)
	}
	if _, ok := h.s.Clients().Lookup(h.client); ok {
		t.Fatal("logout left the entry")
	}
}

// server-behaviour.md 1.2: streams and topics take the lowest free id.
func TestLowestFreeIDs(t *testing.T) {
	h := newHarness(t)
	for i, name := range []string{"a", "b", "c"} {
		if id := h.createStream(name); id != uint32(i) {
			t.Fatalf("stream %s got id %d", name, id)
		}
	}
	h.ok(wire.OpDeleteStream, wire.DeleteStream{Stream: wire.ID(1)}.AppendTo(nil))
	h.ok(wire.OpDeleteStream, wire.DeleteStream{Stream: wire.Named("a")}.AppendTo(nil))
	if id := h.createStream("d"); id != 0 {
		t.Fatalf("reused stream id %d, want 0", id)
	}
	if id := h.createStream("e"); id != 1 {
		t.Fatalf("reused stream id %d, want 1", id)
	}
	if id := h.createStream("f"); id != 3 {
		t.Fatalf("next stream id %d, want 3", id)
	}
	for i := 0; i < 3; i++ {
		if id := h.createTopic(wire.ID(0), string(rune('x'+i)), 1, nil); id != uint32(i) {
			t.Fatalf("topic id %d, want %d", id, i)
		}
	}
	h.ok(wire.OpDeleteTopic, wire.DeleteTopic{Stream: wire.ID(0), Topic: wire.ID(0)}.AppendTo(nil))
	if id := h.createTopic(wire.ID(0), "again", 0, nil); id != 0 {
		t.Fatalf("reused topic id %d, want 0", id)
	}
	if id := h.createTopic(wire.ID(1), "x", 0, nil); id != 0 {
		t.Fatalf("topic ids are per stream: got %d", id)
	}
}

// server-behaviour.md 1.1.3, 1.3, 1.3.1: names are byte-exact, unique in
// their scope, a rename to the own name is allowed; Name length 1..=255 is
// a decode rule (S 3).
func TestNameRules(t *testing.T) {
	h := newHarness(t)
	h.createStream("Orders")
	h.createStream("orders")
	h.createStream(" orders")
	h.rejected(0, wire.OpCreateStream, wire.CreateStream{Name: "Orders"}.AppendTo(nil), wire.ErrStreamNameAlreadyExists)
	h.ok(wire.OpUpdateStream, wire.UpdateStream{Stream: wire.Named("Orders"), Name: "Orders"}.AppendTo(nil))
	h.rejected(0, wire.OpUpdateStream, wire.UpdateStream{Stream: wire.ID(0), Name: "orders"}.AppendTo(nil), wire.ErrStreamNameAlreadyExists)
	h.ok(wire.OpUpdateStream, wire.UpdateStream{Stream: wire.ID(0), Name: "Renamed"}.AppendTo(nil))
	if id, ok := h.s.ResolveStream(wire.Named("Renamed")); !ok || id != 0 {
		t.Fatal("rename not visible by name")
	}
	if _, ok := h.s.ResolveStream(wire.Named("Orders")); ok {
		t.Fatal("old name still resolves")
	}
	h.createStream("Orders") // the freed name is usable again

	h.createTopic(wire.ID(0), "t", 0, nil)
	h.createTopic(wire.ID(1), "t", 0, nil) // same name, other stream
	h.createTopic(wire.ID(0), "T", 0, nil)
	h.rejected(0, wire.OpCreateTopic, wire.CreateTopic{Stream: wire.ID(0), Name: "t"}.AppendTo(nil), wire.ErrTopicNameAlreadyExists)
	h.rejected(0, wire.OpUpdateTopic, wire.UpdateTopic{Stream: wire.ID(0), Topic: wire.ID(0), Name: "T"}.AppendTo(nil), wire.ErrTopicNameAlreadyExists)
	h.ok(wire.OpUpdateTopic, wire.UpdateTopic{Stream: wire.ID(0), Topic: wire.ID(0), Name: "t"}.AppendTo(nil))

	// Raw bodies with an empty and a 256-byte name do not decode: S 3.
	h.denied(0, wire.OpCreateStream, hx("00"), wire.ErrInvalidCommand)
	long := append([]byte{255}, strings.Repeat("n", 255)...)
	h.ok(wire.OpCreateStream, long)
	h.denied(0, wire.OpCreateStream, append([]byte{255}, strings.Repeat("n", 254)...), wire.ErrInvalidCommand)
}

// client-plane.md 8.6, 8.7: committed not-found codes.
func TestNotFoundCodes(t *testing.T) {
	h := newHarness(t)
	h.createStream("s")
	h.createTopic(wire.ID(0), "t", 2, nil)
	cases := []struct {
		op   wire.Operation
		body []byte
		code wire.ErrorCode
	}{
		{wire.OpDeleteStream, wire.DeleteStream{Stream: wire.ID(9)}.AppendTo(nil), wire.ErrStreamIdNotFound},
		{wire.OpUpdateStream, wire.UpdateStream{Stream: wire.Named("x"), Name: "y"}.AppendTo(nil), wire.ErrStreamIdNotFound},
		{wire.OpPurgeStream, wire.PurgeStream{Stream: wire.ID(9)}.AppendTo(nil), wire.ErrStreamIdNotFound},
		{wire.OpCreateTopic, wire.CreateTopic{Stream: wire.ID(9), Name: "t"}.AppendTo(nil), wire.ErrStreamIdNotFound},
		{wire.OpDeleteTopic, wire.DeleteTopic{Stream: wire.ID(0), Topic: wire.ID(5)}.AppendTo(nil), wire.ErrTopicIdNotFound},
		{wire.OpUpdateTopic, wire.UpdateTopic{Stream: wire.ID(0), Topic: wire.Named("u"), Name: "v"}.AppendTo(nil), wire.ErrTopicIdNotFound},
		{wire.OpPurgeTopic, wire.PurgeTopic{Stream: wire.ID(3), Topic: wire.ID(0)}.AppendTo(nil), wire.ErrStreamIdNotFound},
		{wire.OpCreatePartitions, wire.CreatePartitions{Stream: wire.ID(0), Topic: wire.ID(1), PartitionsCount: 1}.AppendTo(nil), wire.ErrTopicIdNotFound},
		{wire.OpDeletePartitions, wire.DeletePartitions{Stream: wire.ID(1), Topic: wire.ID(0), PartitionsCount: 1}.AppendTo(nil), wire.ErrStreamIdNotFound},
		{wire.OpDeleteSegments, wire.DeleteSegments{Stream: wire.ID(0), Topic: wire.ID(0), PartitionID: 2, SegmentsCount: 1}.AppendTo(nil), wire.ErrPartitionNotFound},
	}
	for _, c := range cases {
		res := h.rejected(0, c.op, c.body, c.code)
		if c.op == wire.OpDeleteSegments && res.Reply[208] != 68 {
			t.Fatalf("DeleteSegments replied under operation %d, want 68", res.Reply[208])
		}
	}
}

// client-plane.md 8.8, 11.4; server-behaviour.md 5.10: partition counts.
func TestPartitionBounds(t *testing.T) {
	h := newHarness(t)
	h.createStream("s")
	h.createTopic(wire.ID(0), "t", 3, nil)
	cp := func(n uint32) []byte {
		return wire.CreatePartitions{Stream: wire.ID(0), Topic: wire.ID(0), PartitionsCount: n}.AppendTo(nil)
	}
	dp := func(n uint32) []byte {
		return wire.DeletePartitions{Stream: wire.ID(0), Topic: wire.ID(0), PartitionsCount: n}.AppendTo(nil)
	}
	h.denied(0, wire.OpCreatePartitions, cp(0), wire.ErrTooManyPartitions)
	h.denied(0, wire.OpCreatePartitions, cp(1001), wire.ErrTooManyPartitions)
	h.denied(0, wire.OpDeletePartitions, dp(0), wire.ErrTooManyPartitions)
	h.denied(0, wire.OpDeletePartitions, dp(1001), wire.ErrTooManyPartitions)
	h.denied(0, wire.OpCreatePartitions, cp(1)[:8], wire.ErrInvalidCommand)

	res := h.ok(wire.OpCreatePartitions, cp(2))
	if res.Reply[208] != 65 || !bytes.Equal(res.Reply[256:], hx("00000000")) {
		t.Fatalf("CreatePartitions reply op %d body % x", res.Reply[208], res.Reply[256:])
	}
	if got := res.Effects.CreatedPartitions; len(got) != 2 || got[0].Partition != 3 || got[1].Partition != 4 {
		t.Fatalf("created %+v, want partitions 3 and 4", got)
	}
	h.rejected(0, wire.OpDeletePartitions, dp(6), wire.ErrInvalidPartitionsCount)
	res = h.ok(wire.OpDeletePartitions, dp(2))
	if got := res.Effects.DeletedPartitions; len(got) != 2 || got[0].Partition != 3 || got[1].Partition != 4 {
		t.Fatalf("deleted %+v, want the highest ids 3 and 4", got)
	}
	// Deleted ids are re-minted, with fresh creation ids.
	res = h.ok(wire.OpCreatePartitions, cp(1))
	if got := res.Effects.CreatedPartitions; got[0].Partition != 3 || got[0].CreationID != 6 {
		t.Fatalf("re-created %+v, want partition 3 with creation id 6", got[0])
	}
	h.ok(wire.OpDeletePartitions, dp(4))
	res = h.ok(wire.OpCreatePartitions, cp(1))
	if got := res.Effects.CreatedPartitions; got[0].Partition != 0 {
		t.Fatalf("topic emptied then grown: partition %d, want 0", got[0].Partition)
	}
	// The id space ends at 999_999 (R 3013 beyond it). Stand-ins fill the
	// topic up to the edge so the test stays small.
	topic := h.s.streams[0].topics[0]
	topic.Partitions = append(topic.Partitions, make([]*Partition, MaxPartitionID-len(topic.Partitions))...)
	h.rejected(0, wire.OpCreatePartitions, cp(2), wire.ErrPartitionIdSpaceExhausted)
	if res := h.ok(wire.OpCreatePartitions, cp(1)); res.Effects.CreatedPartitions[0].Partition != MaxPartitionID {
		t.Fatalf("last partition id %d", res.Effects.CreatedPartitions[0].Partition)
	}
	h.rejected(0, wire.OpCreatePartitions, cp(1), wire.ErrPartitionIdSpaceExhausted)
}

// server-behaviour.md 5.9; client-plane.md 8.9: DeleteSegments commits as
// TruncatePartition (68) with the owner's offset; the watermark only moves
// forward; count 0 and nothing sealed are no-op successes; a lagging owner
// is R 58 under 68 without a commit.
func TestDeleteSegments(t *testing.T) {
	h := newHarness(t)
	h.createStream("s")
	h.createTopic(wire.ID(0), "t", 1, nil)
	ds := func(n uint32) []byte {
		return wire.DeleteSegments{Stream: wire.Named("s"), Topic: wire.Named("t"), SegmentsCount: n}.AppendTo(nil)
	}
	group := partitionGroup(0, 0, 0)
	res := h.ok(wire.OpDeleteSegments, ds(3)) // nothing sealed
	if res.Operation != wire.OpTruncatePartition || len(res.Effects.Truncated) != 0 || res.Reply[208] != 68 {
		t.Fatalf("no-op: %+v", res)
	}
	h.sealed[group] = 99
	res = h.ok(wire.OpDeleteSegments, ds(1))
	if tr := res.Effects.Truncated; len(tr) != 1 || tr[0].UpToOffset != 99 || h.s.DeleteBelow(group) != 100 {
		t.Fatalf("truncated %+v delete_below %d", tr, h.s.DeleteBelow(group))
	}
	wantBody := hx("02 01 73 02 01 74 00000000")
	wantBody = append(wantBody, u64le(99)...)
	if got := h.log[len(h.log)-1][256:]; !bytes.Equal(got, wantBody) {
		t.Fatalf("68 body % x, want % x", got, wantBody)
	}
	h.sealed[group] = 50
	res = h.ok(wire.OpDeleteSegments, ds(1))
	if tr := res.Effects.Truncated; tr[0].UpToOffset != 99 || h.s.DeleteBelow(group) != 100 {
		t.Fatal("watermark moved backwards")
	}
	h.ok(wire.OpDeleteSegments, ds(0))
	h.env.SealedUpTo = func(PartitionRef, uint32) (uint64, bool, error) { return 0, false, errLagging }
	_, d := h.submit(0, wire.OpDeleteSegments, ds(1))
	if d == nil || d.Result != wire.ErrTransientNotAccepted || d.ReplyOp != wire.OpTruncatePartition {
		t.Fatalf("lagging owner: %+v", d)
	}
	h.denied(0, wire.OpDeleteSegments, ds(1)[:5], wire.ErrInvalidCommand)
	// A client-sent 64..68 is refused with an eviction (client-plane.md 4.1).
	_, d = h.submit(0, wire.OpTruncatePartition, wire.TruncatePartition{Stream: wire.ID(0), Topic: wire.ID(0)}.AppendTo(nil))
	if d == nil || d.Evict != wire.EvictInvalidRequestOperation {
		t.Fatalf("client 68: %+v", d)
	}
}

var errLagging = bytes.ErrTooLarge // any error

// server-behaviour.md 5.8: purge keeps partitions, raises their purge
// generation, clears the truncation watermark and zeroes the statistics.
func TestPurgeAndDeleteCascade(t *testing.T) {
	h := newHarness(t)
	h.createStream("s")
	h.createTopic(wire.ID(0), "a", 2, nil)
	h.createTopic(wire.ID(0), "b", 1, nil)
	g := partitionGroup(0, 0, 1)
	h.s.SetPartitionStats(g, PartitionStats{SizeBytes: 10, MessagesCount: 2, CurrentOffset: 1, SegmentsCount: 3})
	h.sealed[g] = 7
	h.ok(wire.OpDeleteSegments, wire.DeleteSegments{Stream: wire.ID(0), Topic: wire.ID(0), PartitionID: 1, SegmentsCount: 1}.AppendTo(nil))
	res := h.ok(wire.OpPurgeTopic, wire.PurgeTopic{Stream: wire.ID(0), Topic: wire.ID(0)}.AppendTo(nil))
	if p := res.Effects.PurgedPartitions; len(p) != 2 || p[1].PurgeGeneration != 1 {
		t.Fatalf("purged %+v", p)
	}
	if h.s.DeleteBelow(g) != 0 || h.s.partitionStats(g) != (PartitionStats{}) {
		t.Fatal("purge kept the watermark or the statistics")
	}
	res = h.ok(wire.OpPurgeStream, wire.PurgeStream{Stream: wire.ID(0)}.AppendTo(nil))
	if len(res.Effects.PurgedPartitions) != 3 || res.Effects.PurgedPartitions[0].PurgeGeneration != 2 {
		t.Fatalf("purge stream %+v", res.Effects.PurgedPartitions)
	}
	res = h.ok(wire.OpDeleteStream, wire.DeleteStream{Stream: wire.ID(0)}.AppendTo(nil))
	if d := res.Effects.DeletedPartitions; len(d) != 3 || d[0].Group != 0 || d[2].Topic != 1 {
		t.Fatalf("delete cascade %+v", d)
	}
	if len(h.s.Partitions()) != 0 {
		t.Fatal("partitions survive their stream")
	}
}

// server-behaviour.md 2.6.1, 2.5; client-plane.md 8.6-8.9: metadata writes
// of a non-root user without grants commit R 41, not-found wins, and the
// grants of 2.4 let the right ones through.
func TestPermissionDenials(t *testing.T) {
	h := newHarness(t)
	h.createStream("s")
	h.createTopic(wire.ID(0), "t", 1, nil)
	h.createStream("other")
	const bob, carol, dave = 1, 2, 3
	h.s.addUser(&User{ID: bob, Username: "bob", Status: wire.UserActive, Permissions: &wire.Permissions{}})
	h.s.addUser(&User{ID: carol, Username: "carol", Status: wire.UserActive, Permissions: &wire.Permissions{
		Streams: map[uint32]wire.StreamPermissions{0: {ManageTopics: true}},
	}})
	h.s.addUser(&User{ID: dave, Username: "dave", Status: wire.UserActive, Permissions: &wire.Permissions{
		Streams: map[uint32]wire.StreamPermissions{0: {Topics: map[uint32]wire.TopicPermissions{0: {ManageTopic: true}}}},
	}})
	denied := []struct {
		op   wire.Operation
		body []byte
	}{
		{wire.OpCreateStream, wire.CreateStream{Name: "x"}.AppendTo(nil)},
		{wire.OpCreateStream, wire.CreateStream{Name: "s"}.AppendTo(nil)}, // not object-scoped: 41 before 1012
		{wire.OpUpdateStream, wire.UpdateStream{Stream: wire.ID(0), Name: "x"}.AppendTo(nil)},
		{wire.OpDeleteStream, wire.DeleteStream{Stream: wire.ID(0)}.AppendTo(nil)},
		{wire.OpPurgeStream, wire.PurgeStream{Stream: wire.ID(0)}.AppendTo(nil)},
		{wire.OpCreateTopic, wire.CreateTopic{Stream: wire.ID(0), Name: "x"}.AppendTo(nil)},
		{wire.OpUpdateTopic, wire.UpdateTopic{Stream: wire.ID(0), Topic: wire.ID(0), Name: "x"}.AppendTo(nil)},
		{wire.OpDeleteTopic, wire.DeleteTopic{Stream: wire.ID(0), Topic: wire.ID(0)}.AppendTo(nil)},
		{wire.OpPurgeTopic, wire.PurgeTopic{Stream: wire.ID(0), Topic: wire.ID(0)}.AppendTo(nil)},
		{wire.OpCreatePartitions, wire.CreatePartitions{Stream: wire.ID(0), Topic: wire.ID(0), PartitionsCount: 1}.AppendTo(nil)},
		{wire.OpDeletePartitions, wire.DeletePartitions{Stream: wire.ID(0), Topic: wire.ID(0), PartitionsCount: 1}.AppendTo(nil)},
		{wire.OpDeleteSegments, wire.DeleteSegments{Stream: wire.ID(0), Topic: wire.ID(0), SegmentsCount: 1}.AppendTo(nil)},
	}
	for _, c := range denied {
		h.rejected(bob, c.op, c.body, wire.ErrUnauthorized)
		h.rejected(99, c.op, c.body, wire.ErrUnauthorized) // a user that does not exist
	}
	// Not-found wins over unauthorized.
	h.rejected(bob, wire.OpDeleteStream, wire.DeleteStream{Stream: wire.ID(7)}.AppendTo(nil), wire.ErrStreamIdNotFound)
	h.rejected(bob, wire.OpDeleteTopic, wire.DeleteTopic{Stream: wire.ID(0), Topic: wire.ID(7)}.AppendTo(nil), wire.ErrTopicIdNotFound)
	// Pre-commit validations run before authorization (2.6.2).
	h.denied(bob, wire.OpCreatePartitions, wire.CreatePartitions{Stream: wire.ID(0), Topic: wire.ID(0)}.AppendTo(nil), wire.ErrTooManyPartitions)

	// carol manages topics of stream 0 only (stream-level manage_topics).
	h.submitAs(carol, wire.OpCreateTopic, wire.CreateTopic{Stream: wire.ID(0), Name: "c"}.AppendTo(nil), 0)
	h.submitAs(carol, wire.OpCreateTopic, wire.CreateTopic{Stream: wire.ID(1), Name: "c"}.AppendTo(nil), wire.ErrUnauthorized)
	h.submitAs(carol, wire.OpDeleteStream, wire.DeleteStream{Stream: wire.ID(0)}.AppendTo(nil), wire.ErrUnauthorized)
	// dave manages topic 0 of stream 0 only (topic-level manage_topic): no create.
	h.submitAs(dave, wire.OpCreatePartitions, wire.CreatePartitions{Stream: wire.ID(0), Topic: wire.ID(0), PartitionsCount: 1}.AppendTo(nil), 0)
	h.submitAs(dave, wire.OpPurgeTopic, wire.PurgeTopic{Stream: wire.ID(0), Topic: wire.ID(1)}.AppendTo(nil), wire.ErrUnauthorized)
	h.submitAs(dave, wire.OpCreateTopic, wire.CreateTopic{Stream: wire.ID(0), Name: "d"}.AppendTo(nil), wire.ErrUnauthorized)

	// Reads: S 41, after not-found (client-plane.md 8.6, 8.7.1).
	reads := []struct {
		code wire.CommandCode
		body []byte
		user uint32
		want wire.ErrorCode
		z    bool
	}{
		{wire.CodeGetStreams, nil, bob, wire.ErrUnauthorized, false},
		{wire.CodeGetStream, wire.GetStream{Stream: wire.ID(0)}.AppendTo(nil), bob, wire.ErrUnauthorized, false},
		{wire.CodeGetStream, wire.GetStream{Stream: wire.ID(9)}.AppendTo(nil), bob, 0, true},
		{wire.CodeGetTopic, wire.GetTopic{Stream: wire.ID(0), Topic: wire.ID(0)}.AppendTo(nil), bob, wire.ErrUnauthorized, false},
		{wire.CodeGetTopic, wire.GetTopic{Stream: wire.ID(0), Topic: wire.ID(0)}.AppendTo(nil), dave, 0, false},
		{wire.CodeGetTopic, wire.GetTopic{Stream: wire.ID(0), Topic: wire.ID(9)}.AppendTo(nil), bob, 0, true},
		{wire.CodeGetTopics, wire.GetTopics{Stream: wire.ID(0)}.AppendTo(nil), bob, wire.ErrUnauthorized, false},
		{wire.CodeGetTopics, wire.GetTopics{Stream: wire.ID(0)}.AppendTo(nil), carol, 0, false},
		{wire.CodeGetTopics, wire.GetTopics{Stream: wire.ID(1)}.AppendTo(nil), carol, wire.ErrUnauthorized, false},
		{wire.CodeGetUsers, nil, bob, wire.ErrUnauthorized, false},
		{wire.CodeGetUser, wire.GetUser{User: wire.ID(0)}.AppendTo(nil), bob, wire.ErrUnauthorized, false},
		{wire.CodeGetUser, wire.GetUser{User: wire.ID(9)}.AppendTo(nil), bob, wire.ErrUnauthorized, false},
		{wire.CodeGetUser, wire.GetUser{User: wire.Named("bob")}.AppendTo(nil), bob, 0, false},
		{wire.CodeDescribeOptions, []byte{1}, bob, 0, false},
	}
	for i, r := range reads {
		status, p, ok := h.s.Read(r.user, r.code, r.body)
		if !ok || status != r.want || (r.z != (p == nil && status == 0)) || (status != 0 && p != nil) {
			t.Errorf("read %d (%v): status %d payload %d bytes", i, r.code, status, len(p))
		}
	}
}

func (h *harness) submitAs(user uint32, op wire.Operation, body []byte, code wire.ErrorCode) {
	h.t.Helper()
	if code != 0 {
		h.rejected(user, op, body, code)
		return
	}
	res, d := h.submit(user, op, body)
	if d != nil || res.Code != 0 {
		h.t.Fatalf("%v as %d: denial %+v code %d", op, user, d, res.Code)
	}
}

// replica-plane.md 13.1: 66 is never prepared (the membership cleanup
// rides Logout); should one reach the log it commits R 5. A client body
// of a rewritten operation in the log (an unrewritten 132) is R 3.
func TestUnpreparedOperations(t *testing.T) {
	h := newHarness(t)
	if res := h.commit(h.frame(wire.OpRemoveConsumerGroupMember, u64le(1), 0, 99)); res.Code != wire.ErrFeatureUnavailable {
		t.Fatalf("66 committed %d", res.Code)
	}
	res := h.commit(h.frame(wire.OpCreateTopic, nil, 0, 100)) // an unrewritten 132
	if res.Code != wire.ErrInvalidCommand {
		t.Fatalf("raw 132 committed %d", res.Code)
	}
	// A client-shaped 146 body (no user id, no hash) does not decode.
	res = h.commit(h.frame(wire.OpCreatePersonalAccessToken, wire.CreatePersonalAccessToken{Name: "x"}.AppendTo(nil), 0, 101))
	if res.Code != wire.ErrInvalidCommand {
		t.Fatalf("raw 146 committed %d", res.Code)
	}
}

// replica-plane.md 5.4, 13.1: a backup lifts its allocator past the
// creation ids of prepares it journals, so as a later primary it never
// reissues one; the committed next_creation_id only moves at apply.
func TestCreationIDAllocator(t *testing.T) {
	primary := newHarness(t)
	primary.createStream("s")
	p, d := primary.s.Admit(Request{Operation: wire.OpCreateTopic,
		Body: wire.CreateTopic{Stream: wire.ID(0), PartitionsCount: 3, Name: "t"}.AppendTo(nil)}, primary.env)
	if d != nil {
		t.Fatal(d)
	}
	backup := New(Config{})
	backup.ObservePrepare(p.Operation, p.Body)
	if backup.allocator != 4 || backup.nextCreationID != 1 {
		t.Fatalf("backup allocator %d next %d", backup.allocator, backup.nextCreationID)
	}
	q, _ := backup.Admit(Request{Operation: wire.OpCreatePartitions,
		Body: wire.CreatePartitions{Stream: wire.ID(0), Topic: wire.ID(0), PartitionsCount: 1}.AppendTo(nil)}, AdmitEnv{})
	var x wire.CreatePartitionsWithAssignments
	if err := x.Decode(q.Body); err != nil || x.Assignments[0].ConsensusGroupID != 4 || x.Assignments[0].PartitionID != 0 {
		t.Fatalf("65 body %+v %v", x, err)
	}
	// Applying the 64 raises the committed value, even when it is rejected.
	primary.commit(primary.frame(p.Operation, p.Body, 0, 50))
	if primary.s.nextCreationID != 4 {
		t.Fatalf("next_creation_id %d", primary.s.nextCreationID)
	}
}

// replica-plane.md 5.9, 7.9.4: client-table mutations are skipped at or
// below the installed frontier; state-machine effects are not.
func TestClientTableFrontier(t *testing.T) {
	h := newHarness(t)
	h.s.SetClientTableFrontier(h.op + 1)
	before := h.s.Clients().EncodeICT2(true)
	res := h.ok(wire.OpCreateStream, wire.CreateStream{Name: "s"}.AppendTo(nil))
	if !bytes.Equal(h.s.Clients().EncodeICT2(true), before) {
		t.Fatal("table mutated at the frontier")
	}
	if _, ok := h.s.ResolveStream(wire.Named("s")); !ok || res.Code != 0 {
		t.Fatal("state-machine effect skipped")
	}
	h.ok(wire.OpCreateStream, wire.CreateStream{Name: "t"}.AppendTo(nil))
	if e, _ := h.s.Clients().Lookup(h.client); e.Watermark != h.request {
		t.Fatal("table not mutated above the frontier")
	}
}
