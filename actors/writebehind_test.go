package actors

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"iggynode/client"
	"iggynode/config"
	"iggynode/wire"
)

// heldWrites holds a node's journal writes while armed: each one reports
// that it started and waits for release; then it fails with fail, if set.
type heldWrites struct {
	armed   atomic.Bool
	started chan struct{}
	release chan struct{}
	fail    atomic.Pointer[error]
}

func newHeldWrites() *heldWrites {
	return &heldWrites{started: make(chan struct{}, 16), release: make(chan struct{})}
}

func (h *heldWrites) hook(uint64) error {
	if h.armed.Load() {
		h.started <- struct{}{}
		<-h.release
		if err := h.fail.Load(); err != nil {
			return *err
		}
	}
	return nil
}

// waitStarted waits for a held write to start.
func (h *heldWrites) waitStarted(t *testing.T) {
	t.Helper()
	select {
	case <-h.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the send's journal write never started")
	}
}

// startHeldNode starts a single node in dir whose journal writes h holds.
func startHeldNode(t testing.TB, dir string, h *heldWrites, adjust ...func(*config.Config)) *Node {
	t.Helper()
	cfg := config.Default()
	cfg.System.Path = dir
	cfg.TCP.Address, cfg.HTTP.Address = "127.0.0.1:0", "127.0.0.1:0"
	cfg.QUIC.Enabled, cfg.WebSocket.Enabled = false, false
	for _, a := range adjust {
		a(&cfg)
	}
	opts := Options{Config: cfg, RootUsername: "iggy", RootPassword: "iggy",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if h != nil {
		opts.beforeJournalWrite = h.hook
	}
	return startNode(t, opts)
}

func pollAll(ctx context.Context, t *testing.T, c *client.Client) uint32 {
	t.Helper()
	p, err := c.PollMessages(ctx, wire.SingleConsumer(wire.ID(1)), wire.ID(0), wire.ID(0), wire.Partition(0), wire.OffsetStrategy(0), 100, false)
	if err != nil {
		t.Fatalf("poll: %v", err)
	}
	return p.MessagesCount
}

// A group of one writes its journal behind the mailbox: while a send's
// segment write is held, a poll of the partition is answered (with what
// is committed, not the batch being written) and the send is not; once
// the write returns the send is answered and its message polled.
func TestPollsAreServedWhileTheJournalIsWritten(t *testing.T) {
	h := newHeldWrites()
	n := startHeldNode(t, t.TempDir(), h)
	pollsDuringAHeldWrite(t, h, func() *client.Client { _, c := rootClient(t, n); return c }, 1, 1)
}

// pollsDuringAHeldWrite creates a topic with enforce_fsync through
// connect's clients, sends one message, then holds the next send's write
// (h): a poll must be answered meanwhile with least to most messages,
// the send must not, and once the write returns the send is answered and
// both messages are polled.
func pollsDuringAHeldWrite(t *testing.T, h *heldWrites, connect func() *client.Client, least, most uint32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := connect()
	if _, err := c.CreateStream(ctx, "wb", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, wire.ID(0), "t", 1, wire.Options{{Key: wire.OptEnforceFsync, Kind: wire.KindBool, Value: []byte{1}}}); err != nil {
		t.Fatal(err)
	}
	send := func(c *client.Client, payload string) error {
		_, err := c.SendMessages(ctx, wire.ID(0), wire.ID(0), wire.PartitionID(0), []wire.Message{client.NewMessage([]byte(payload))})
		return err
	}
	if err := send(c, "first"); err != nil {
		t.Fatal(err)
	}
	h.armed.Store(true)
	producer := connect()
	sent := make(chan error, 1)
	go func() { sent <- send(producer, "second") }()
	h.waitStarted(t)
	polled := make(chan uint32, 1)
	go func() { polled <- pollAll(ctx, t, c) }()
	select {
	case got := <-polled:
		if got < least || got > most {
			t.Fatalf("a poll during the write got %d messages, want %d to %d", got, least, most)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a poll waited for the partition's segment write")
	}
	select {
	case err := <-sent:
		t.Fatalf("the send was answered (%v) before its batch was written", err)
	case <-time.After(100 * time.Millisecond):
	}
	h.armed.Store(false)
	close(h.release)
	if err := <-sent; err != nil {
		t.Fatalf("the send after its write returned: %v", err)
	}
	if got := pollAll(ctx, t, c); got != 2 {
		t.Fatalf("after the write: %d messages, want 2", got)
	}
}

// What must not interleave with a write waits for it: a purge that
// arrives while a send's write is held runs after the write returned and
// the send committed, so the send is answered, the purge empties the
// partition, and a restart finds it empty and takes new sends.
func TestAPurgeWaitsForTheWriteInFlight(t *testing.T) {
	dir := t.TempDir()
	h := newHeldWrites()
	n := startHeldNode(t, dir, h)
	ctx, c := rootClient(t, n)
	if _, err := c.CreateStream(ctx, "wb", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, wire.ID(0), "t", 1, nil); err != nil {
		t.Fatal(err)
	}
	h.armed.Store(true)
	_, producer := rootClient(t, n)
	sent := make(chan error, 1)
	go func() {
		_, err := producer.SendMessages(ctx, wire.ID(0), wire.ID(0), wire.PartitionID(0), []wire.Message{client.NewMessage([]byte("held"))})
		sent <- err
	}()
	h.waitStarted(t)
	purged := make(chan error, 1)
	go func() { purged <- c.PurgeTopic(ctx, wire.ID(0), wire.ID(0)) }()
	time.Sleep(200 * time.Millisecond) // the purge reaches the partition and waits
	h.armed.Store(false)
	close(h.release)
	if err := <-sent; err != nil {
		t.Fatalf("the held send: %v", err)
	}
	if err := <-purged; err != nil {
		t.Fatalf("purge: %v", err)
	}
	if got := pollAll(ctx, t, c); got != 0 {
		t.Fatalf("after the purge: %d messages, want 0", got)
	}
	if r := n.Restarts(); r != 0 {
		t.Fatalf("%d actor restarts", r)
	}
	_ = n.Close()
	n = startHeldNode(t, dir, nil)
	ctx, c = rootClient(t, n)
	if got := pollAll(ctx, t, c); got != 0 {
		t.Fatalf("after a restart: %d messages, want 0", got)
	}
	if _, err := c.SendMessages(ctx, wire.ID(0), wire.ID(0), wire.PartitionID(0), []wire.Message{client.NewMessage([]byte("after"))}); err != nil {
		t.Fatal(err)
	}
	p, err := c.PollMessages(ctx, wire.SingleConsumer(wire.ID(1)), wire.ID(0), wire.ID(0), wire.Partition(0), wire.OffsetStrategy(0), 100, false)
	if err != nil || p.MessagesCount != 1 || string(client.Messages(p)[0].Payload) != "after" {
		t.Fatalf("a send after the restart: %v, %d messages", err, p.MessagesCount)
	}
}

// A group with backups stores its committed batches behind the mailbox:
// while the primary's write of a committed send is held, the primary
// answers a poll and holds the send's reply; once the write returns the
// send is answered and both messages are polled.
func TestAPrimaryServesPollsWhileItStoresCommittedBatches(t *testing.T) {
	h := newHeldWrites()
	nodes := startClusterWith(t, 3, func(o *Options) {
		if o.Config.Cluster.ReplicaID == 0 { // the partition's primary in view 0
			o.beforeJournalWrite = h.hook
		}
	})
	connect := func() *client.Client {
		c, err := client.Connect(context.Background(), client.Options{Address: nodes[0].TCPAddr(), Username: "iggy", Password: "iggy", StayOnNode: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	// The poll may see the held batch: it is committed on a quorum.
	pollsDuringAHeldWrite(t, h, connect, 1, 2)
	for i, n := range nodes {
		if r := n.Restarts(); r != 0 {
			t.Fatalf("node %d: %d actor restarts", i, r)
		}
	}
}

// A committed write behind that fails while a drop waits for it (the
// topic is deleted during the write) stops the replica only after the
// drop has run: the drop's work is not lost to the restart, so the
// partition's data is deleted on every node.
func TestADropWaitingForAFailedWriteStillDrops(t *testing.T) {
	h := newHeldWrites()
	nodes := startClusterWith(t, 3, func(o *Options) {
		if o.Config.Cluster.ReplicaID == 0 {
			o.beforeJournalWrite = h.hook
		}
	})
	ctx, c := rootClient(t, nodes[0])
	streamID, group := streamWithTopic(t, ctx, c, nodes[0], "drop")
	send := func(c *client.Client, payload string) error {
		_, err := c.SendMessages(ctx, wire.ID(streamID), wire.ID(0), wire.PartitionID(0), []wire.Message{client.NewMessage([]byte(payload))})
		return err
	}
	if err := send(c, "first"); err != nil {
		t.Fatal(err)
	}
	failure := errors.New("injected store failure")
	h.fail.Store(&failure)
	h.armed.Store(true)
	_, producer := rootClient(t, nodes[0])
	sent := make(chan error, 1)
	go func() { sent <- send(producer, "second") }()
	h.waitStarted(t)
	deleted := make(chan error, 1)
	go func() { deleted <- c.DeleteTopic(ctx, wire.ID(streamID), wire.ID(0)) }()
	time.Sleep(300 * time.Millisecond) // the drop reaches the partition and waits for the write
	h.armed.Store(false)
	close(h.release)
	if err := <-deleted; err != nil {
		t.Fatalf("DeleteTopic: %v", err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		left := 0
		for _, n := range nodes {
			_, b := storedBatches(n, group)
			left += b
		}
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d batches of the deleted topic's partition left on the nodes", left)
		}
	}
	select {
	case err := <-sent:
		if err == nil {
			t.Fatal("the send whose batch was not stored was answered as stored")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the send whose batch was not stored was not answered")
	}
}
