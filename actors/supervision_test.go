package actors

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"iggynode/client"
	"iggynode/config"
	"iggynode/wire"
)

func startTestNode(t *testing.T) *Node { t.Helper(); return startTestNodeWith(t, nil) }

// startTestNodeWith is startTestNode with the configuration changed by
// tune first (nil: the defaults).
func startTestNodeWith(t *testing.T, tune func(*config.Config)) *Node {
	t.Helper()
	cfg := config.Default()
	cfg.System.Path = t.TempDir()
	cfg.TCP.Address = "127.0.0.1:0"
	cfg.HTTP.Address = "127.0.0.1:0"
	cfg.QUIC.Address = "127.0.0.1:0"
	cfg.WebSocket.Address = "127.0.0.1:0"
	if tune != nil {
		tune(&cfg)
	}
	n, err := Start(Options{Config: cfg, RootUsername: "iggy", RootPassword: "iggy",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close() })
	return n
}

// A panic in a partition actor is contained: its supervisor restarts it
// from durable state, acknowledged messages are still served, and the node
// keeps serving every connection.
func TestPartitionPanicIsContained(t *testing.T) {
	n := startTestNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.Connect(ctx, client.Options{Address: n.TCPAddr(), Username: "iggy", Password: "iggy"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.CreateStream(ctx, "s", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, wire.ID(0), "t", 1, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SendMessages(ctx, wire.ID(0), wire.ID(0), wire.PartitionID(0), []wire.Message{client.NewMessage([]byte("kept"))}); err != nil {
		t.Fatal(err)
	}
	ch := make(chan map[uint64]*actor.PID, 1)
	n.root().Send(n.refs.metadata, &listPartitions{reply: ch})
	pids := <-ch
	if len(pids) != 1 {
		t.Fatalf("%d partition actors", len(pids))
	}
	before := n.Restarts()
	for _, pid := range pids {
		n.root().Send(pid, &partitionCrash{})
	}
	waitFor(t, func() bool { return n.Restarts() > before })
	// The restarted partition rebuilt itself from storage.
	p, err := c.PollMessages(ctx, wire.SingleConsumer(wire.ID(1)), wire.ID(0), wire.ID(0), wire.Partition(0), wire.FirstStrategy(), 10, false)
	if err != nil || len(client.Messages(p)) != 1 || string(client.Messages(p)[0].Payload) != "kept" {
		t.Fatalf("after the restart: %v", err)
	}
	if _, err := c.SendMessages(ctx, wire.ID(0), wire.ID(0), wire.PartitionID(0), []wire.Message{client.NewMessage([]byte("more"))}); err != nil {
		t.Fatalf("send after the restart: %v", err)
	}
}

// A panic in a connection actor closes that connection only.
func TestConnectionPanicIsContained(t *testing.T) {
	n := startTestNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	victim, err := client.Connect(ctx, client.Options{Address: n.TCPAddr(), Username: "iggy", Password: "iggy"})
	if err != nil {
		t.Fatal(err)
	}
	defer victim.Close()
	conns := make(chan []*actor.PID, 1)
	n.root().Send(n.refs.metadata, &listConns{reply: conns})
	victims := <-conns
	if len(victims) != 1 {
		t.Fatalf("%d connections", len(victims))
	}
	other, err := client.Connect(ctx, client.Options{Address: n.TCPAddr(), Username: "iggy", Password: "iggy"})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	before := n.Restarts()
	n.root().Send(victims[0], &connCrash{})
	waitFor(t, func() bool { return n.Restarts() > before })
	if err := other.Ping(ctx); err != nil {
		t.Fatalf("another connection was affected: %v", err)
	}
	// The victim's transport was closed; its SDK reconnects on demand.
	if _, err := other.CreateStream(ctx, "still-serving", nil); err != nil {
		t.Fatal(err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("condition not reached in time")
}
