package client

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"iggynode/wire"
)

// sendVector is the SendMessages body of client-plane.md 17.5 (335 bytes).
func sendVector(t *testing.T) []byte {
	return unhex(t, `16 00 00 00  01 04 00 00 00 00  01 04 00 00 00 00  02 04 00 00 00 00  01 00 00 00
		00 00 00 00 00 00 00 00  00 00 00 00 00 00 00 00  00 00 00 00 00 00 00 00
		00 40 1e 18 24 0a 06 00  35 01 00 00 00 00 00 00  c3 0f 94 7c 3d c3 37 89  01 00 00 00`+
		strings.Repeat(" 00", 204)+`
		8e 5c a5 9e db bd bf b9  01 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
		00 00 00 00  00 00 00 00  00 00 00 00  05 00 00 00  00 00 00 00 00 00 00 00
		68 65 6c 6c 6f`)
}

func helloMessage() wire.Message {
	return wire.Message{ID: wire.U128{Lo: 1}, OriginTimestamp: 1_700_000_000_000_000, Payload: []byte("hello")}
}

// confirmation is SendConfirmations (7.18) with one entry.
func confirmation(stream, topic, partition uint32, offset uint64) []byte {
	var b lb
	return b.u32(1).u32(stream).u32(topic).u32(partition).u64(offset).out()
}

// topicDetails is TopicDetails (7.3, 7.4) with dense partitions.
func topicDetails(name string, partitions uint32) []byte {
	var b lb
	b.u32(0).u64(1000).u32(partitions).u64(^uint64(0)).u8(1).u64(^uint64(0)).u64(0).u64(0).name(name).u32(0).u32(0)
	for i := range partitions {
		b.u32(i).u64(1000).u32(1).u64(0).u64(0).u64(0)
	}
	return b.out()
}

// 17.5: SendMessages with PartitionId(0) sends the vector body byte for
// byte under operation 160 and decodes the confirmation.
func TestSendMessagesVector(t *testing.T) {
	forEachTransport(t, func(t *testing.T, transport string) {
		f := newFakeOn(t, transport)
		f.setScript(func(fc *fakeConn, r fakeRequest) bool {
			if r.operation == 160 {
				fc.reply(r, 160, 0, confirmation(0, 0, 0, 17))
				return true
			}
			return false
		})
		c := loggedIn(t, f, testOptions(f))
		conf, err := c.SendMessages(t.Context(), wire.ID(0), wire.ID(0), wire.PartitionID(0), []wire.Message{helloMessage()})
		if err != nil {
			t.Fatal(err)
		}
		if len(conf) != 1 || conf[0].BaseOffset != 17 {
			t.Fatalf("confirmation %+v", conf)
		}
		sent, _ := f.last(160, 0)
		if want := sendVector(t); !bytes.Equal(sent.body, want) {
			t.Fatalf("send body\n got %x\nwant %x", sent.body, want)
		}
		if sent.request != 1 || sent.session != 42 || sent.code != 0 {
			t.Fatalf("send header %+v", sent)
		}
	})
}

// 14.2: Balanced and MessagesKey are resolved client-side from the topic's
// cached partition count and sent as PartitionId; S 3007 drops the cache.
func TestClientSideRouting(t *testing.T) {
	f := newFake(t)
	var partitions atomic.Uint32
	partitions.Store(3)
	var failNext atomic.Bool
	f.setScript(func(fc *fakeConn, r fakeRequest) bool {
		switch {
		case r.operation == 2 && r.code == 300:
			fc.reply(r, 2, 0, topicDetails("t", partitions.Load()))
		case r.operation == 160 && failNext.Swap(false):
			fc.reply(r, 160, 3007, nil)
		case r.operation == 160:
			fc.reply(r, 160, 0, confirmation(0, 0, binary.LittleEndian.Uint32(r.body[18:]), 0))
		case r.operation == 136:
			fc.reply(r, 65, 0, ok(nil))
		default:
			return false
		}
		return true
	})
	c := loggedIn(t, f, testOptions(f))
	ctx := t.Context()
	send := func(p wire.Partitioning) uint32 {
		t.Helper()
		if _, err := c.SendMessages(ctx, wire.ID(0), wire.ID(0), p, []wire.Message{helloMessage()}); err != nil {
			t.Fatal(err)
		}
		r, _ := f.last(160, 0)
		if r.body[16] != 2 || r.body[17] != 4 {
			t.Fatalf("partitioning sent as kind %d len %d, want PartitionId", r.body[16], r.body[17])
		}
		return binary.LittleEndian.Uint32(r.body[18:])
	}
	for i, want := range []uint32{0, 1, 2, 0} {
		if got := send(wire.Balanced()); got != want {
			t.Fatalf("balanced send %d went to %d, want %d", i, got, want)
		}
	}
	// 17.1: XXH32("order-42") is index 1 of 3; "user-1" index 0 of 3.
	if got := send(wire.MessagesKey([]byte("order-42"))); got != 1 {
		t.Fatalf("order-42 -> %d", got)
	}
	if got := send(wire.MessagesKey([]byte("user-1"))); got != 0 {
		t.Fatalf("user-1 -> %d", got)
	}
	countTopicReads := func() int {
		n := 0
		for _, r := range f.requests() {
			if r.operation == 2 && r.code == 300 {
				n++
			}
		}
		return n
	}
	if n := countTopicReads(); n != 1 {
		t.Fatalf("%d GetTopic reads, want 1 (cached)", n)
	}
	failNext.Store(true)
	_, err := c.SendMessages(ctx, wire.ID(0), wire.ID(0), wire.Balanced(), []wire.Message{helloMessage()})
	if !isErr(err, wire.ErrPartitionNotFound) {
		t.Fatalf("got %v", err)
	}
	partitions.Store(10)
	if got := send(wire.MessagesKey([]byte("order-42"))); got != 9 || countTopicReads() != 2 {
		t.Fatalf("after S 3007: order-42 -> %d with %d topic reads", got, countTopicReads())
	}
	// Changing partitions drops the cache too.
	partitions.Store(4)
	if err := c.CreatePartitions(ctx, wire.ID(0), wire.ID(0), 1); err != nil {
		t.Fatal(err)
	}
	if got := send(wire.MessagesKey([]byte("order-42"))); got != 1 || countTopicReads() != 3 {
		t.Fatalf("after CreatePartitions: order-42 -> %d with %d topic reads", got, countTopicReads())
	}
}

// 14.2: a topic without partitions, or none at all, fails locally.
func TestRoutingWithoutPartitions(t *testing.T) {
	f := newFake(t)
	f.setScript(func(fc *fakeConn, r fakeRequest) bool {
		if r.operation == 2 && r.code == 300 {
			if r.body[len(r.body)-1] == 'x' {
				fc.reply(r, 2, 0, nil) // not found: empty body
			} else {
				fc.reply(r, 2, 0, topicDetails("t", 0))
			}
			return true
		}
		return false
	})
	c := loggedIn(t, f, testOptions(f))
	for _, topic := range []string{"t", "x"} {
		_, err := c.SendMessages(t.Context(), wire.ID(0), wire.Named(topic), wire.Balanced(), []wire.Message{helloMessage()})
		if !isErr(err, wire.ErrTopicIdNotFound) {
			t.Fatalf("topic %s: got %v", topic, err)
		}
	}
	if _, found := f.last(160, 0); found {
		t.Fatal("a send went out")
	}
}

// 7.17, 8.4.1: the poll request body and a hand-built reply with one
// record; the result owns its bytes.
func TestPollMessages(t *testing.T) {
	forEachTransport(t, func(t *testing.T, transport string) {
		record := sendVector(t)[26:]
		binary.LittleEndian.PutUint64(record[8:], 5)       // base_offset
		binary.LittleEndian.PutUint64(record[16:], 123456) // base_timestamp
		binary.LittleEndian.PutUint32(record[256+28:], 3)  // timestamp_delta
		var body lb
		body.u32(2).u64(5).u32(1).raw(record)
		f := newFakeOn(t, transport)
		f.setScript(func(fc *fakeConn, r fakeRequest) bool {
			if r.operation == 2 && r.code == 100 {
				fc.reply(r, 2, 0, body.out())
				return true
			}
			return false
		})
		c := loggedIn(t, f, testOptions(f))
		polled, err := c.PollMessages(t.Context(), wire.SingleConsumer(wire.ID(1)), wire.ID(0), wire.ID(0), wire.Partition(2), wire.NextStrategy(), 10, true)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := f.last(2, 100)
		want := unhex(t, `01 01 04 01 00 00 00  01 04 00 00 00 00  01 04 00 00 00 00  01 02 00 00 00
			05 00 00 00 00 00 00 00 00  0a 00 00 00  01`)
		if !bytes.Equal(req.body, want) {
			t.Fatalf("poll body %x, want %x", req.body, want)
		}
		if err := c.Ping(t.Context()); err != nil { // reuses the read buffer
			t.Fatal(err)
		}
		msgs := Messages(polled)
		if polled.PartitionID != 2 || polled.CurrentOffset != 5 || len(msgs) != 1 {
			t.Fatalf("poll %+v, %d messages", polled, len(msgs))
		}
		m := msgs[0]
		if m.Offset != 5 || m.Timestamp != 123456 || m.OriginTimestamp != 1_700_000_000_000_003 || string(m.Payload) != "hello" || m.ID.Lo != 1 {
			t.Fatalf("message %+v", m)
		}
	})
}

// 8.10: join, sync and the group polling helper, with the re-sync sentinel.
func TestConsumerGroupPolling(t *testing.T) {
	f := newFake(t)
	var resync atomic.Bool
	f.setScript(func(fc *fakeConn, r fakeRequest) bool {
		switch {
		case r.operation == 148:
			fc.reply(r, 148, 0, ok(nil))
		case r.operation == 2 && r.code == 606:
			fc.reply(r, 2, 0, (&lb{}).u64(3).u32(2).u32(1).u32(2).out())
		case r.operation == 2 && r.code == 100 && resync.Swap(false):
			fc.reply(r, 2, 0, (&lb{}).u32(0xFFFFFFFF).u64(0).u32(0).out())
		case r.operation == 2 && r.code == 100:
			partition := binary.LittleEndian.Uint32(r.body[len(r.body)-18:])
			fc.reply(r, 2, 0, (&lb{}).u32(partition).u64(0).u32(0).out())
		default:
			return false
		}
		return true
	})
	c := loggedIn(t, f, testOptions(f))
	ctx := t.Context()
	s, tp, g := wire.ID(0), wire.ID(0), wire.Named("g")
	if err := c.JoinConsumerGroup(ctx, s, tp, g); err != nil {
		t.Fatal(err)
	}
	a, err := c.SyncConsumerGroup(ctx, s, tp, g)
	if err != nil || a.Generation != 3 || len(a.Partitions) != 2 {
		t.Fatalf("sync %+v %v", a, err)
	}
	var got []uint32
	for range 3 {
		p, err := c.PollConsumerGroup(ctx, s, tp, g, wire.NextStrategy(), 1, false)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, p.PartitionID)
	}
	if got[0] != 1 || got[1] != 2 || got[2] != 1 {
		t.Fatalf("polled partitions %v", got)
	}
	poll, _ := f.last(2, 100)
	if poll.body[0] != 2 { // consumer kind group
		t.Fatalf("group poll consumer kind %d", poll.body[0])
	}
	syncs := func() int {
		n := 0
		for _, r := range f.requests() {
			if r.operation == 2 && r.code == 606 {
				n++
			}
		}
		return n
	}
	before := syncs()
	resync.Store(true)
	if _, err := c.PollConsumerGroup(ctx, s, tp, g, wire.NextStrategy(), 1, false); err != nil {
		t.Fatal(err)
	}
	if syncs() != before+1 {
		t.Fatal("the sentinel did not trigger a re-sync")
	}
}

// 8.5: offsets: the store body ends with the ack byte; a stored offset
// decodes; nothing stored is nil; a deny on delete is a StatusError.
func TestConsumerOffsets(t *testing.T) {
	f := newFake(t)
	var stored atomic.Bool
	f.setScript(func(fc *fakeConn, r fakeRequest) bool {
		switch {
		case r.operation == 161:
			fc.reply(r, 161, 0, ok(nil))
		case r.operation == 162:
			fc.reply(r, 162, 3021, nil)
		case r.operation == 2 && r.code == 120 && stored.Load():
			fc.reply(r, 2, 0, (&lb{}).u32(0).u64(9).u64(4).out())
		case r.operation == 2 && r.code == 120:
			fc.reply(r, 2, 0, nil)
		default:
			return false
		}
		return true
	})
	c := loggedIn(t, f, testOptions(f))
	ctx := t.Context()
	cons := wire.SingleConsumer(wire.Named("my-consumer"))
	off, err := c.GetConsumerOffset(ctx, cons, wire.ID(0), wire.ID(0), wire.OptionalPartition{})
	if err != nil || off != nil {
		t.Fatalf("nothing stored: %+v %v", off, err)
	}
	if err := c.StoreConsumerOffset(ctx, cons, wire.ID(0), wire.ID(0), wire.Partition(0), 4, wire.AckQuorum); err != nil {
		t.Fatal(err)
	}
	store, _ := f.last(161, 0)
	want := unhex(t, `01 02 0b 6d 79 2d 63 6f 6e 73 75 6d 65 72  01 04 00 00 00 00  01 04 00 00 00 00
		01 00 00 00 00  04 00 00 00 00 00 00 00  01`)
	if !bytes.Equal(store.body, want) {
		t.Fatalf("store body %x, want %x", store.body, want)
	}
	stored.Store(true)
	off, err = c.GetConsumerOffset(ctx, cons, wire.ID(0), wire.ID(0), wire.Partition(0))
	if err != nil || off == nil || off.CurrentOffset != 9 || off.StoredOffset != 4 {
		t.Fatalf("offset %+v %v", off, err)
	}
	err = c.DeleteConsumerOffset(ctx, cons, wire.ID(0), wire.ID(0), wire.Partition(0), wire.AckNone)
	if !isErr(err, wire.ErrConsumerOffsetNotFound) {
		t.Fatalf("got %v", err)
	}
}

// One typed method per family end to end against scripted replies.
func TestTypedCommandsEndToEnd(t *testing.T) {
	replies := map[uint32]func(r fakeRequest) []byte{ // keyed by code (operation 2) or operation
		128 + 1000: func(fakeRequest) []byte { // CreateStream, 17.6
			return replyFrame(0, 128, 0, ok((&lb{}).u32(0).u64(77).u32(0).u64(0).u64(0).name("s1").u32(0).out()))
		},
		200:        func(fakeRequest) []byte { return replyFrame(0, 2, 0, nil) }, // GetStream: not found
		201:        func(fakeRequest) []byte { return replyFrame(0, 2, 0, nil) }, // GetStreams: none
		132 + 1000: func(fakeRequest) []byte { return replyFrame(0, 64, 0, ok([]byte(topicDetails("t", 2)))) },
		301: func(fakeRequest) []byte {
			return replyFrame(0, 2, 0, (&lb{}).u32(1).raw(topicDetails("t", 0)).out())
		},
		137 + 1000: func(fakeRequest) []byte { return replyFrame(0, 137, 0, ok(nil)) },
		138 + 1000: func(fakeRequest) []byte { return replyFrame(0, 68, 0, ok(nil)) },
		139 + 1000: func(fakeRequest) []byte {
			return replyFrame(0, 139, 0, ok((&lb{}).u32(0).u32(2).u32(0).name("g").out()))
		},
		601:        func(fakeRequest) []byte { return replyFrame(0, 2, 0, (&lb{}).u32(0).u32(2).u32(1).name("g").out()) },
		149 + 1000: func(fakeRequest) []byte { return replyFrame(0, 149, 0, rejection(5006)) },
		31:         func(fakeRequest) []byte { return replyFrame(0, 2, 0, nil) },
		144 + 1000: func(fakeRequest) []byte { return replyFrame(0, 144, 0, ok(nil)) },
		146 + 1000: func(fakeRequest) []byte { return replyFrame(0, 146, 0, ok((&lb{}).name("raw-token").out())) },
		41:         func(fakeRequest) []byte { return replyFrame(0, 2, 0, (&lb{}).name("a").u64(0).name("b").u64(9).out()) },
		10:         func(fakeRequest) []byte { return replyFrame(0, 2, 41, nil) },
		11:         func(fakeRequest) []byte { return replyFrame(0, 2, 0, []byte("PK\x03\x04")) },
		13:         func(fakeRequest) []byte { return replyFrame(0, 2, 0, (&lb{}).u32(0).out()) },
		20: func(fakeRequest) []byte {
			return replyFrame(0, 2, 0, (&lb{}).u32(5).u32(7).u8(1).str32("1.2.3.4:5").u32(1).u32(0).u32(0).u32(0).out())
		},
		21:  func(fakeRequest) []byte { return replyFrame(0, 2, 0, nil) },
		22:  func(fakeRequest) []byte { return replyFrame(0, 2, 0, nil) },
		102: func(fakeRequest) []byte { return replyFrame(0, 2, 5, nil) },
	}
	f := newFake(t)
	f.setScript(func(fc *fakeConn, r fakeRequest) bool {
		key := r.code
		if r.operation != 2 {
			key = uint32(r.operation) + 1000
		}
		if r.operation == 1 || r.operation == 3 || (r.operation == 2 && (r.code == 1 || r.code == 12)) {
			return false
		}
		build, found := replies[key]
		if !found {
			return false
		}
		frame := build(r)
		binary.LittleEndian.PutUint64(frame[200:], r.request)
		fc.send(frame)
		return true
	})
	c := loggedIn(t, f, testOptions(f))
	ctx := t.Context()
	check := func(name string, err error, want error) {
		t.Helper()
		if (want == nil && err != nil) || (want != nil && !errors.Is(err, want)) {
			t.Errorf("%s: got %v, want %v", name, err, want)
		}
	}
	sd, err := c.CreateStream(ctx, "s1", nil)
	check("CreateStream", err, nil)
	if err == nil && (sd.Name != "s1" || sd.CreatedAt != 77 || sd.ID != 0) {
		t.Errorf("CreateStream %+v", sd)
	}
	if r, _ := f.last(128, 0); !bytes.Equal(r.body, []byte{2, 's', '1'}) {
		t.Errorf("CreateStream body %x", r.body)
	}
	_, err = c.GetStream(ctx, wire.ID(4))
	check("GetStream", err, wire.ErrStreamIdNotFound)
	streams, err := c.GetStreams(ctx)
	check("GetStreams", err, nil)
	if len(streams) != 0 {
		t.Errorf("GetStreams %v", streams)
	}
	td, err := c.CreateTopic(ctx, wire.ID(0), "t", 2, nil)
	check("CreateTopic", err, nil)
	if err == nil && len(td.Partitions) != 2 {
		t.Errorf("CreateTopic %+v", td)
	}
	if r, _ := f.last(132, 0); !bytes.Equal(r.body, unhex(t, "01 04 00 00 00 00 02 00 00 00 01 74")) {
		t.Errorf("CreateTopic body %x", r.body)
	}
	topics, err := c.GetTopics(ctx, wire.ID(0))
	check("GetTopics", err, nil)
	if len(topics) != 1 || topics[0].Name != "t" {
		t.Errorf("GetTopics %+v", topics)
	}
	check("DeletePartitions", c.DeletePartitions(ctx, wire.ID(0), wire.ID(0), 1), nil)
	check("DeleteSegments", c.DeleteSegments(ctx, wire.ID(0), wire.ID(0), 0, 2), nil)
	if r, _ := f.last(138, 0); !bytes.Equal(r.body, unhex(t, "01 04 00 00 00 00 01 04 00 00 00 00 00 00 00 00 02 00 00 00")) {
		t.Errorf("DeleteSegments body %x", r.body)
	}
	g, err := c.CreateConsumerGroup(ctx, wire.ID(0), wire.ID(0), "g")
	check("CreateConsumerGroup", err, nil)
	if err == nil && (g.Name != "g" || g.PartitionsCount != 2) {
		t.Errorf("CreateConsumerGroup %+v", g)
	}
	groups, err := c.GetConsumerGroups(ctx, wire.ID(0), wire.ID(0))
	check("GetConsumerGroups", err, nil)
	if len(groups) != 1 || groups[0].MembersCount != 1 {
		t.Errorf("GetConsumerGroups %+v", groups)
	}
	check("LeaveConsumerGroup", c.LeaveConsumerGroup(ctx, wire.ID(0), wire.ID(0), wire.ID(0)), wire.ErrConsumerGroupMemberNotFound)
	_, err = c.GetUser(ctx, wire.ID(3))
	check("GetUser", err, wire.ErrResourceNotFound)
	_, err = c.CreateUser(ctx, "ab", "secret", wire.UserActive, nil)
	check("CreateUser short name", err, wire.ErrInvalidUsername)
	check("ChangePassword", c.ChangePassword(ctx, wire.ID(1), "old", "new"), nil)
	if r, _ := f.last(144, 0); !bytes.Equal(r.body, unhex(t, "01 04 01 00 00 00 03 6f 6c 64 03 6e 65 77")) {
		t.Errorf("ChangePassword body %x", r.body)
	}
	check("ChangePassword short", c.ChangePassword(ctx, wire.ID(1), "old", "no"), wire.ErrInvalidPassword)
	tok, err := c.CreatePersonalAccessToken(ctx, "pat", 0)
	check("CreatePersonalAccessToken", err, nil)
	if tok != "raw-token" {
		t.Errorf("token %q", tok)
	}
	pats, err := c.GetPersonalAccessTokens(ctx)
	check("GetPersonalAccessTokens", err, nil)
	if len(pats) != 2 || pats[1].ExpiryAt != 9 {
		t.Errorf("tokens %+v", pats)
	}
	_, err = c.GetStats(ctx)
	check("GetStats", err, wire.ErrUnauthorized)
	zip, err := c.GetSnapshot(ctx, 1, []uint8{100})
	check("GetSnapshot", err, nil)
	if string(zip) != "PK\x03\x04" {
		t.Errorf("snapshot %q", zip)
	}
	cat, err := c.DescribeOptions(ctx, 2)
	check("DescribeOptions", err, nil)
	if len(cat) != 0 {
		t.Errorf("catalog %+v", cat)
	}
	me, err := c.GetMe(ctx)
	check("GetMe", err, nil)
	if err == nil && (me.ClientID != 5 || me.Address != "1.2.3.4:5" || len(me.ConsumerGroups) != 1) {
		t.Errorf("me %+v", me)
	}
	_, err = c.GetClient(ctx, 99)
	check("GetClient", err, wire.ErrClientNotFound)
	clients, err := c.GetClients(ctx)
	check("GetClients", err, nil)
	if len(clients) != 0 {
		t.Errorf("clients %+v", clients)
	}
	roster, err := c.GetClusterMetadata(ctx)
	check("GetClusterMetadata", err, nil)
	if err == nil && (roster.Name != "single-node" || len(roster.Nodes) != 1) {
		t.Errorf("roster %+v", roster)
	}
	check("FlushUnsavedBuffer", c.FlushUnsavedBuffer(ctx, wire.ID(0), wire.ID(0), 0, true), wire.ErrFeatureUnavailable)
}

// 6 "Raw requests": unknown codes ride operation 2 with the code at 196 and
// the unconsumed request number; replicated codes their own operation; the
// login codes are refused locally.
func TestSendRaw(t *testing.T) {
	f := newFake(t)
	f.setScript(func(fc *fakeConn, r fakeRequest) bool {
		switch {
		case r.operation == 2 && (r.code == 60000 || r.code == 0):
			fc.reply(r, 2, 3, nil)
		case r.operation == 128:
			fc.reply(r, 128, 0, ok([]byte{0xAB}))
		default:
			return false
		}
		return true
	})
	c := loggedIn(t, f, testOptions(f))
	ctx := t.Context()
	for _, code := range []wire.CommandCode{60000, 0} {
		_, err := c.SendRaw(ctx, code, []byte{1, 2, 3})
		var se *wire.StatusError
		if !errors.As(err, &se) || se.Code != wire.ErrInvalidCommand {
			t.Fatalf("code %d: got %v", code, err)
		}
		r, _ := f.last(2, uint32(code))
		if r.request != 1 || r.session != 42 || !bytes.Equal(r.body, []byte{1, 2, 3}) {
			t.Fatalf("raw %d header %+v", code, r)
		}
	}
	body, err := c.SendRaw(ctx, wire.CodeCreateStream, []byte{2, 's', '1'})
	if err != nil || !bytes.Equal(body, []byte{0xAB}) {
		t.Fatalf("raw CreateStream: %x %v", body, err)
	}
	if r, _ := f.last(128, 0); r.request != 1 || r.code != 0 {
		t.Fatalf("raw CreateStream header %+v", r)
	}
	n := len(f.requests())
	for _, code := range []wire.CommandCode{38, 39, 40, 44, 45} {
		if _, err := c.SendRaw(ctx, code, nil); !isErr(err, wire.ErrInvalidCommand) {
			t.Fatalf("code %d: got %v", code, err)
		}
	}
	if len(f.requests()) != n {
		t.Fatal("a refused code went out")
	}
	if err := c.Ping(ctx); err != nil || f.connections() != 1 {
		t.Fatalf("session unusable after raw requests: %v", err)
	}
}

// Options.ServerBalanced: Balanced travels as kind 1 (server-behaviour.md
// 5.1) with no GetTopic read, so the server's shared cursor picks.
func TestServerBalancedSendsBalanced(t *testing.T) {
	f := newFake(t)
	f.setScript(func(fc *fakeConn, r fakeRequest) bool {
		if r.operation == 160 {
			fc.reply(r, 160, 0, confirmation(0, 0, 0, 0))
			return true
		}
		return false
	})
	o := testOptions(f)
	o.ServerBalanced = true
	c := loggedIn(t, f, o)
	if _, err := c.SendMessages(t.Context(), wire.ID(0), wire.ID(0), wire.Balanced(), []wire.Message{helloMessage()}); err != nil {
		t.Fatal(err)
	}
	r, _ := f.last(160, 0)
	if r.body[16] != 1 || r.body[17] != 0 {
		t.Fatalf("partitioning sent as kind %d len %d, want Balanced", r.body[16], r.body[17])
	}
	for _, r := range f.requests() {
		if r.operation == 2 && r.code == 300 {
			t.Fatal("GetTopic read for a server-balanced send")
		}
	}
}
