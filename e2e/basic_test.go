package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"iggynode/client"
	"iggynode/wire"
)

func TestLoginPingAndIdentity(t *testing.T) {
	n := startNode(t)
	c := connect(t, n)
	ctx := ctxT(t)
	if err := c.Ping(ctx); err != nil {
		t.Fatalf("ping: %v", err)
	}
	session, user := c.Session()
	if session == 0 || user != 0 {
		t.Fatalf("session %d user %d: root logs in as user 0 with a nonzero epoch", session, user)
	}
	me, err := c.GetMe(ctx)
	want := map[string]wire.TransportKind{client.TransportTCP: wire.TransportTCP, client.TransportQUIC: wire.TransportQUIC,
		client.TransportWS: wire.TransportWebSocket}[transportFor(t).kind]
	if err != nil || me.UserID != 0 || me.Transport != want {
		t.Fatalf("GetMe = %+v, %v", me, err)
	}
	cm, err := c.GetClusterMetadata(ctx)
	if err != nil || len(cm.Nodes) != 1 || cm.Nodes[0].Role != wire.RoleLeader || cm.Nodes[0].Status != wire.NodeHealthy {
		t.Fatalf("cluster metadata = %+v, %v", cm, err)
	}
}

func TestWrongPasswordIsEvicted(t *testing.T) {
	n := startNode(t)
	o := clientOptions(t, n)
	o.Username, o.Password = "iggy", "nope"
	_, err := client.Connect(ctxT(t), o)
	var ev *wire.EvictionError
	if !errors.As(err, &ev) || ev.Reason != wire.EvictInvalidCredentials || !errors.Is(err, wire.ErrInvalidCredentials) {
		t.Fatalf("got %v, want eviction InvalidCredentials (9)", err)
	}
}

func TestStreamTopicSendPoll(t *testing.T) {
	n := startNode(t)
	c := connect(t, n)
	ctx := ctxT(t)
	s, err := c.CreateStream(ctx, "orders", nil)
	if err != nil || s.ID != 0 || s.Name != "orders" {
		t.Fatalf("create stream: %+v %v", s, err)
	}
	tp, err := c.CreateTopic(ctx, wire.ID(0), "events", 3, nil)
	if err != nil || tp.ID != 0 || len(tp.Partitions) != 3 {
		t.Fatalf("create topic: %+v %v", tp, err)
	}
	var sent [][]byte
	for b := 0; b < 5; b++ {
		var msgs []wire.Message
		for i := 0; i < 10; i++ {
			p := []byte(fmt.Sprintf("msg-%d-%d", b, i))
			sent = append(sent, p)
			msgs = append(msgs, client.NewMessage(p))
		}
		conf, err := c.SendMessages(ctx, wire.Named("orders"), wire.Named("events"), wire.PartitionID(1), msgs)
		if err != nil || len(conf) != 1 || conf[0].PartitionID != 1 || conf[0].BaseOffset != uint64(b*10) {
			t.Fatalf("send %d: %+v %v", b, conf, err)
		}
	}
	polled, err := c.PollMessages(ctx, wire.SingleConsumer(wire.ID(7)), wire.ID(0), wire.ID(0), wire.Partition(1),
		wire.OffsetStrategy(0), 100, false)
	if err != nil {
		t.Fatalf("poll: %v", err)
	}
	got := client.Messages(polled)
	if len(got) != len(sent) || polled.CurrentOffset != 49 {
		t.Fatalf("polled %d messages, current %d", len(got), polled.CurrentOffset)
	}
	for i, m := range got {
		if m.Offset != uint64(i) || !bytes.Equal(m.Payload, sent[i]) {
			t.Fatalf("message %d: offset %d payload %q", i, m.Offset, m.Payload)
		}
	}
}
