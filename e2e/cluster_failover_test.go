package e2e

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"iggynode/client"
	"iggynode/wire"
)

// Three node processes; the primary of every group (node 0) is killed
// with SIGKILL under load. The two others elect a new primary (view
// change, replica-plane.md 6), the writer's leader-aware SDK finds it and
// goes on, and no acknowledged message is lost. The old primary is then
// restarted on its data: it rejoins as a backup through the view probe
// (6.12) and catches up by repair, and all three replicas end with the
// same messages (fault-tolerance issue: real processes).
func TestKill9PrimaryFailsOver(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three child processes")
	}
	peers, clients := loopbackAddrs(t, 3), loopbackAddrs(t, 3)
	env := "E2E_CLUSTER_CLIENTS=" + strings.Join(clients, ",")
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	var cmds [3]*exec.Cmd
	for i := range 3 {
		cmds[i], _ = startClusterChild(t, dirs[i], i, peers, env)
	}
	ctx := ctxT(t)
	admin, err := client.Connect(ctx, client.Options{Address: clients[1], Username: "iggy", Password: "iggy"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CreateStream(ctx, "failover", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CreateTopic(ctx, wire.ID(0), "t", 1, nil); err != nil {
		t.Fatal(err)
	}
	_ = admin.Close()

	// The writer tags each attempt; an attempt that failed may or may not
	// have committed (its reply was lost with the primary), so it may
	// appear at most once; an acknowledged one must appear exactly once,
	// in acknowledgement order.
	var mu sync.Mutex
	acked := map[uint64]bool{}
	var ackOrder []uint64
	var failures int
	var lastAck time.Time
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		c, err := client.Connect(ctx, client.Options{Address: clients[1], Username: "iggy", Password: "iggy",
			RequestTimeout: 3 * time.Second, Reconnect: client.ReconnectOptions{Retries: -1, Interval: 100 * time.Millisecond}})
		if err != nil {
			t.Errorf("writer: %v", err)
			return
		}
		defer c.Close()
		for attempt := uint64(1); ; attempt++ {
			select {
			case <-stop:
				return
			default:
			}
			msgs, _ := taggedBatch(attempt << 8)
			if _, err := c.SendMessages(ctx, wire.ID(0), wire.ID(0), wire.PartitionID(0), msgs); err != nil {
				mu.Lock()
				failures++
				mu.Unlock()
				time.Sleep(50 * time.Millisecond)
				continue
			}
			mu.Lock()
			acked[attempt] = true
			ackOrder = append(ackOrder, attempt)
			lastAck = time.Now()
			mu.Unlock()
			time.Sleep(2 * time.Millisecond)
		}
	}()
	ackCount := func() int { mu.Lock(); defer mu.Unlock(); return len(ackOrder) }
	waitAcks := func(n int, within time.Duration) {
		t.Helper()
		for deadline := time.Now().Add(within); ackCount() < n; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("only %d sends acknowledged, waiting for %d", ackCount(), n)
			}
		}
	}

	waitAcks(50, 20*time.Second)
	before := ackCount()
	killed := time.Now()
	if err := cmds[0].Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmds[0].Wait()
	waitAcks(before+1, 30*time.Second) // a new primary, found by the SDK
	mu.Lock()
	failover := lastAck.Sub(killed)
	mu.Unlock()
	waitAcks(before+50, 20*time.Second)

	cmds[0], _ = startClusterChild(t, dirs[0], 0, peers, env) // the old primary rejoins as a backup
	afterRestart := ackCount()
	waitAcks(afterRestart+50, 20*time.Second)
	close(stop)
	<-done

	mu.Lock()
	defer mu.Unlock()
	var lists [3][][]byte
	for i, addr := range clients {
		lists[i] = replicaPayloads(t, addr, len(ackOrder)*20)
	}
	for i := 1; i < 3; i++ {
		if len(lists[i]) != len(lists[0]) {
			t.Fatalf("replica %d holds %d messages, replica 0 %d", i, len(lists[i]), len(lists[0]))
		}
		for j := range lists[0] {
			if string(lists[i][j]) != string(lists[0][j]) {
				t.Fatalf("replica %d differs from replica 0 at offset %d", i, j)
			}
		}
	}
	// Every attempt's 20 messages are together, each attempt at most once,
	// acknowledged ones in order and all present.
	seen := map[uint64]bool{}
	var order []uint64
	for j := 0; j < len(lists[0]); j += 20 {
		attempt := binary.LittleEndian.Uint64(lists[0][j]) >> 8
		for k := range 20 {
			if j+k >= len(lists[0]) || binary.LittleEndian.Uint64(lists[0][j+k]) != attempt<<8|uint64(k) {
				t.Fatalf("offset %d: attempt %d is not whole", j+k, attempt)
			}
		}
		if seen[attempt] {
			t.Fatalf("attempt %d stored twice", attempt)
		}
		seen[attempt] = true
		if acked[attempt] {
			order = append(order, attempt)
		}
	}
	if len(order) != len(ackOrder) {
		t.Fatalf("%d acknowledged sends, %d of them stored", len(ackOrder), len(order))
	}
	for i := range order {
		if order[i] != ackOrder[i] {
			t.Fatalf("acknowledged send %d stored out of order", ackOrder[i])
		}
	}
	t.Logf("%d sends acknowledged (%d before the kill), %d failed around it; first acknowledgement %v after the kill; %d messages identical on all three replicas",
		len(ackOrder), before, failures, failover.Round(time.Millisecond), len(lists[0]))
}

// Three node processes; one backup is killed, its data directory deleted,
// and it is started again empty. The metadata primary has checkpointed
// and compacted its journal (every 16 ops here) past the start of the
// log, so journal repair cannot rebuild the wiped node's metadata: it
// comes back by metadata state transfer (snapshot and client table,
// replica-plane.md 7.6), then repairs the metadata tail and its
// partition's log, and ends with every stream and every message the
// others hold.
func TestWipedNodeCatchesUpByStateTransfer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three child processes")
	}
	peers, clients := loopbackAddrs(t, 3), loopbackAddrs(t, 3)
	env := []string{"E2E_CLUSTER_CLIENTS=" + strings.Join(clients, ","), "E2E_CLUSTER_JOURNAL_SLOTS=80"}
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	var cmds [3]*exec.Cmd
	for i := range 3 {
		cmds[i], _ = startClusterChild(t, dirs[i], i, peers, env...)
	}
	ctx := ctxT(t)
	c, err := client.Connect(ctx, client.Options{Address: clients[0], Username: "iggy", Password: "iggy"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.CreateStream(ctx, "wipe", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, wire.ID(0), "t", 1, nil); err != nil {
		t.Fatal(err)
	}
	var want [][]byte
	send := func(n int) {
		for i := range n {
			msgs, payloads := taggedBatch(uint64(len(want)+i) << 8)
			if _, err := c.SendMessages(ctx, wire.ID(0), wire.ID(0), wire.PartitionID(0), msgs); err != nil {
				t.Fatal(err)
			}
			want = append(want, payloads...)
		}
	}
	send(10)
	if err := cmds[2].Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmds[2].Wait()
	if err := os.RemoveAll(dirs[2]); err != nil {
		t.Fatal(err)
	}
	for i := range 40 { // past two checkpoints of the metadata journal
		if _, err := c.CreateStream(ctx, fmt.Sprintf("more-%d", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	send(10)
	cmds[2], _ = startClusterChild(t, dirs[2], 2, peers, env...)
	send(5)

	streams := func(addr string) []string {
		n, err := client.Connect(ctx, client.Options{Address: addr, Username: "iggy", Password: "iggy", StayOnNode: true})
		if err != nil {
			t.Fatalf("%s: %v", addr, err)
		}
		defer n.Close()
		list, err := n.GetStreams(ctx)
		if err != nil {
			t.Fatalf("%s: %v", addr, err)
		}
		var names []string
		for _, s := range list {
			names = append(names, s.Name)
		}
		return names
	}
	wantStreams := streams(clients[0])
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		got := streams(clients[2])
		if fmt.Sprint(got) == fmt.Sprint(wantStreams) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the wiped node lists %d streams, the primary %d", len(got), len(wantStreams))
		}
	}
	got := replicaPayloads(t, clients[2], len(want))
	if len(got) != len(want) {
		t.Fatalf("the wiped node holds %d messages, %d were acknowledged", len(got), len(want))
	}
	for j := range want {
		if string(got[j]) != string(want[j]) {
			t.Fatalf("the wiped node differs at offset %d", j)
		}
	}
	t.Logf("the wiped node is back with %d streams and %d messages", len(wantStreams), len(got))
}
