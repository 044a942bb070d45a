package actors

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"iggynode/client"
	"iggynode/config"
	"iggynode/wire"
)

// Group commit (partition.go, driveSoon and drive): sends that queue at
// one partition while it writes share one segment write and, under
// enforce_fsync, one fsync. Sixteen producers in lockstep on one
// partition of a topic that enforces fsync: every batch is stored once,
// at contiguous offsets, in fewer writes than batches (one write per
// send, the design without group commit, fails this), on a single node
// (stored at journal time) and on every replica of a cluster (stored at
// commit), whose segments end identical.
func TestSendsQueuedAtOnePartitionShareOneWrite(t *testing.T) {
	t.Run("single node", func(t *testing.T) {
		n := startTestNode(t)
		sendsShareWrites(t, []*Node{n})
	})
	t.Run("three replicas", func(t *testing.T) {
		sendsShareWrites(t, startCluster(t, 3))
	})
}

func sendsShareWrites(t *testing.T, nodes []*Node) {
	const producers, sends, perBatch = 16, 25, 10
	ctx, c := rootClient(t, nodes[0])
	if _, err := c.CreateStream(ctx, "gc", nil); err != nil {
		t.Fatal(err)
	}
	fsync := wire.Options{{Key: wire.OptEnforceFsync, Kind: wire.KindBool, Value: []byte{1}}}
	if _, err := c.CreateTopic(ctx, wire.ID(0), "t", 1, fsync); err != nil {
		t.Fatal(err)
	}
	writes0, batches0 := make([]int64, len(nodes)), make([]int64, len(nodes))
	for i, n := range nodes {
		writes0[i], batches0[i] = n.refs.tel.storeWrites.Load(), n.refs.tel.storedBatches.Load()
	}
	var mu sync.Mutex
	bases := map[uint64]bool{}
	conns := make([]*client.Client, producers)
	for p := range conns {
		pc, err := client.Connect(ctx, client.Options{Address: nodes[0].TCPAddr(), Username: "iggy", Password: "iggy"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = pc.Close() })
		conns[p] = pc
	}
	// The partition is held busy (a maintenance pass that waits) while
	// every producer's first send reaches its mailbox, so at least those
	// queue whatever the machine's speed; the rest queue as they may.
	ch := make(chan map[uint64]*actor.PID, 1)
	nodes[0].root().Send(nodes[0].refs.metadata, &listPartitions{reply: ch})
	release := make(chan struct{})
	for _, pid := range <-ch {
		nodes[0].root().Send(pid, &partitionMaintain{done: func() { <-release }})
	}
	time.AfterFunc(300*time.Millisecond, func() { close(release) })
	var wg sync.WaitGroup
	errs := make(chan error, producers)
	for p, pc := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := range sends {
				msgs := make([]wire.Message, perBatch)
				for j := range msgs {
					msgs[j] = client.NewMessage(fmt.Appendf(bytes.Repeat([]byte{'x'}, 1000), "p%d-s%d-m%d", p, s, j))
				}
				conf, err := pc.SendMessages(ctx, wire.ID(0), wire.ID(0), wire.PartitionID(0), msgs)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				bases[conf[0].BaseOffset] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	const total = producers * sends
	for b := uint64(0); b < total*perBatch; b += perBatch {
		if !bases[b] {
			t.Fatalf("no send was confirmed at base offset %d (%d confirmations)", b, len(bases))
		}
	}
	group, _ := wire.PartitionGroup(0, 0, 0)
	deadline := time.Now().Add(20 * time.Second)
	for i, n := range nodes {
		for n.refs.tel.storedBatches.Load()-batches0[i] < total && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		writes, batches := n.refs.tel.storeWrites.Load()-writes0[i], n.refs.tel.storedBatches.Load()-batches0[i]
		if batches != total {
			t.Fatalf("node %d stored %d batches, want %d", i, batches, total)
		}
		if writes > batches-producers/2 {
			t.Fatalf("node %d: %d writes for %d batches: queued sends were not grouped", i, writes, batches)
		}
		t.Logf("node %d: %d batches in %d writes", i, batches, writes)
	}
	first, count := storedBatches(nodes[0], group)
	if count != total {
		t.Fatalf("segments hold %d batches, want %d", count, total)
	}
	for i, n := range nodes[1:] {
		if rec, _ := storedBatches(n, group); !bytes.Equal(rec, first) {
			t.Fatalf("node %d's segments differ from node 0's", i+1)
		}
	}
	polled, err := c.PollMessages(context.Background(), wire.SingleConsumer(wire.ID(1)), wire.ID(0), wire.ID(0),
		wire.Partition(0), wire.OffsetStrategy(0), total*perBatch, false)
	if err != nil || polled.MessagesCount != total*perBatch {
		t.Fatalf("poll: %v, %d messages", err, polled.MessagesCount)
	}
}

// Deferring drives never refuses a send a single node would take: with
// more sends queued at a held partition than its pipeline and queue hold
// (depth 2: 2 + 4), every one is committed, none answered
// TransientNotAccepted (found by review: the deferral filled the
// pipeline before any drive).
func TestQueuedSendsBeyondThePipelineAreNotRefused(t *testing.T) {
	n := startTestNodeWith(t, func(c *config.Config) { c.Partition.PrepareQueueDepth = 2 })
	ctx, c := rootClient(t, n)
	if _, err := c.CreateStream(ctx, "busy", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, wire.ID(0), "t", 1, nil); err != nil {
		t.Fatal(err)
	}
	const producers = 12
	conns := make([]*client.Client, producers)
	for i := range conns {
		pc, err := client.Connect(ctx, client.Options{Address: n.TCPAddr(), Username: "iggy", Password: "iggy"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = pc.Close() })
		conns[i] = pc
	}
	refusedBefore := sendsAnswered(n, uint32(wire.ErrTransientNotAccepted))
	ch := make(chan map[uint64]*actor.PID, 1)
	n.root().Send(n.refs.metadata, &listPartitions{reply: ch})
	release := make(chan struct{})
	for _, pid := range <-ch {
		n.root().Send(pid, &partitionMaintain{done: func() { <-release }})
	}
	time.AfterFunc(300*time.Millisecond, func() { close(release) })
	var wg sync.WaitGroup
	for _, pc := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := pc.SendMessages(ctx, wire.ID(0), wire.ID(0), wire.PartitionID(0), []wire.Message{client.NewMessage([]byte("x"))}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if refused := sendsAnswered(n, uint32(wire.ErrTransientNotAccepted)) - refusedBefore; refused != 0 {
		t.Fatalf("%d of %d queued sends were refused TransientNotAccepted", refused, producers)
	}
}

// sendsAnswered is how many SendMessages requests n answered with status
// (the iggy.requests series by command and status, telemetry.go).
func sendsAnswered(n *Node, status uint32) int64 {
	t := n.refs.tel
	t.cmdMu.RLock()
	defer t.cmdMu.RUnlock()
	var total int64
	for _, cmd := range sendKeys {
		if c := t.byStatus[uint64(cmd)<<32|uint64(status)]; c != nil {
			total += c.n.Load()
		}
	}
	return total
}
