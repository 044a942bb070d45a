package e2e

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"iggynode/actors"
	"iggynode/client"
	"iggynode/config"
	"iggynode/internal/faultcheck"
	replicaplane "iggynode/plane/replica"
	"iggynode/wire"
)

// TestHelperClusterNodeProcess is not a test: it is one replica of the
// three-process cluster TestKill9BackupRejoinsByRepair starts and kills.
// E2E_CLUSTER_PEERS lists the replica-plane addresses, in id order.
func TestHelperClusterNodeProcess(t *testing.T) {
	dir := os.Getenv("E2E_CLUSTER_DIR")
	if dir == "" {
		t.Skip("helper process only")
	}
	self, _ := strconv.Atoi(os.Getenv("E2E_CLUSTER_REPLICA"))
	peers := strings.Split(os.Getenv("E2E_CLUSTER_PEERS"), ",")
	cfg := config.Default()
	cfg.System.Path = dir
	cfg.TCP.Address, cfg.QUIC.Enabled, cfg.WebSocket.Enabled = "127.0.0.1:0", false, false
	cfg.HTTP.Address = "127.0.0.1:0"
	cfg.Cluster.Enabled, cfg.Cluster.Name, cfg.Cluster.ReplicaID = true, "kill-cluster", self
	// E2E_CLUSTER_JOIN=1 boots it as a joiner of the cluster the other
	// peers form (cluster.join).
	cfg.Cluster.Join = os.Getenv("E2E_CLUSTER_JOIN") == "1"
	// A silent primary is replaced after 1 s instead of 5 (the spec's
	// defaults are kept in every other test).
	cfg.Cluster.HeartbeatTimeout, cfg.Cluster.CommitBroadcastInterval = config.Duration(time.Second), config.Duration(100*time.Millisecond)
	cfg.Cluster.ViewChangeStatusTimeout = config.Duration(2 * time.Second)
	cfg.Cluster.RequestStartViewRetransmitInterval = config.Duration(200 * time.Millisecond)
	// E2E_CLUSTER_JOURNAL_SLOTS, when set, makes the metadata checkpoint
	// (and compact its journal) that often less 64 ops.
	if v, err := strconv.Atoi(os.Getenv("E2E_CLUSTER_JOURNAL_SLOTS")); err == nil {
		cfg.Metadata.JournalSlots = uint32(v)
	}
	// E2E_CLUSTER_CLIENTS, when set, fixes every node's client address so
	// the roster names them and the SDK can follow the leader.
	var clients []string
	if v := os.Getenv("E2E_CLUSTER_CLIENTS"); v != "" {
		clients = strings.Split(v, ",")
		cfg.TCP.Address = clients[self]
	}
	var roster []replicaplane.Peer
	for i, addr := range peers {
		node := config.Node{Name: fmt.Sprintf("node-%d", i), IP: "127.0.0.1", ReplicaID: i}
		if clients != nil {
			_, port, _ := net.SplitHostPort(clients[i])
			p, _ := strconv.Atoi(port)
			node.Ports.TCP = uint16(p)
		}
		cfg.Cluster.Nodes = append(cfg.Cluster.Nodes, node)
		roster = append(roster, replicaplane.Peer{ID: uint8(i), Addr: addr})
	}
	n, err := actors.Start(actors.Options{Config: cfg, RootUsername: "iggy", RootPassword: "iggy", Logger: logger(),
		ReplicaListen: peers[self], ReconnectPeriod: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.SetReplicaRoster(roster); err != nil {
		t.Fatal(err)
	}
	serveUntilTerminated(n)
}

// startClusterChild starts replica self of the cluster whose replica-plane
// addresses are peers, with its data in dir, and returns its client address.
func startClusterChild(t *testing.T, dir string, self int, peers []string, env ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd, addr := startHelperProcess(t, "TestHelperClusterNodeProcess", append([]string{"E2E_CLUSTER_DIR=" + dir,
		"E2E_CLUSTER_REPLICA=" + strconv.Itoa(self), "E2E_CLUSTER_PEERS=" + strings.Join(peers, ",")}, env...)...)
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, addr
}

// loopbackAddrs reserves n loopback ports for processes that must know
// each other's address before they start. The ports lie below the
// kernel's ephemeral range, so no socket another test opens meanwhile
// (a port-0 listener, the source port of a connection) can take one
// between the reservation and the child's bind: a CI run lost a
// cluster test to that once. Each is checked free by listening on it,
// and none is handed out twice in this process.
func loopbackAddrs(t *testing.T, n int) []string {
	t.Helper()
	reservedMu.Lock()
	defer reservedMu.Unlock()
	lo, hi := reservablePorts()
	var addrs []string
	for tries := 0; len(addrs) < n; tries++ {
		if tries > 10000 {
			t.Fatalf("no free loopback port in %d-%d", lo, hi)
		}
		port := lo + rand.IntN(hi-lo+1)
		if reserved[port] {
			continue
		}
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		_ = ln.Close()
		reserved[port] = true
		addrs = append(addrs, ln.Addr().String())
	}
	return addrs
}

var (
	reservedMu sync.Mutex
	reserved   = map[int]bool{}
)

// reservablePorts is the range loopbackAddrs draws from: the 12000 ports
// under the ephemeral range's start (32768 on Linux by default), read
// from /proc where it can be.
func reservablePorts() (lo, hi int) {
	ephemeral := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if v, err := strconv.Atoi(f[0]); err == nil && v > 2048 {
				ephemeral = v
			}
		}
	}
	return max(1024, ephemeral-12000), ephemeral - 1
}

// Three node processes; a backup is killed with SIGKILL under load and
// restarted on its data. Writes go on committing on the other two while it
// is gone; once back it catches up by repair (its journal was in memory,
// its segments on disk), and every acknowledged message is then present
// exactly once, in order, on every replica (fault-tolerance issue: real
// processes).
func TestKill9BackupRejoinsByRepair(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three child processes")
	}
	peers := loopbackAddrs(t, 3)
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	addrs := make([]string, 3)
	var cmds [3]*exec.Cmd
	for i := range 3 {
		cmds[i], addrs[i] = startClusterChild(t, dirs[i], i, peers)
	}
	ctx := ctxWithin(t, 2*time.Minute)
	admin := streamWithTopic(t, ctx, addrs[0], "kill", 1)
	defer admin.Close()

	var mu sync.Mutex
	var acked [][]byte // payloads in offset order
	writeErr := make(chan error, 1)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := client.Connect(ctx, client.Options{Address: addrs[0], Username: "iggy", Password: "iggy", RequestTimeout: 5 * time.Second})
		if err != nil {
			writeErr <- err
			return
		}
		defer c.Close()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			msgs, payloads := faultcheck.Batch(uint64(i))
			conf, err := c.SendMessages(ctx, wire.ID(0), wire.ID(0), wire.PartitionID(0), msgs)
			if err != nil {
				writeErr <- fmt.Errorf("send %d: %w", i, err)
				return
			}
			mu.Lock()
			if conf[0].BaseOffset != uint64(len(acked)) {
				mu.Unlock()
				writeErr <- fmt.Errorf("send %d acknowledged at offset %d, after %d messages", i, conf[0].BaseOffset, len(acked))
				return
			}
			acked = append(acked, payloads...)
			mu.Unlock()
			// Paced so the ops committed while replica 2 is away stay within
			// the primary's repair ring (4096 ops): beyond it a rejoining
			// replica needs state transfer, which is not there yet.
			time.Sleep(2 * time.Millisecond)
		}
	}()
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(acked) }

	time.Sleep(700 * time.Millisecond)
	before := count()
	if err := cmds[2].Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmds[2].Wait()
	time.Sleep(700 * time.Millisecond)
	whileDown := count() - before
	cmds[2], addrs[2] = startClusterChild(t, dirs[2], 2, peers)
	time.Sleep(700 * time.Millisecond)
	close(stop)
	<-done
	select {
	case err := <-writeErr:
		t.Fatalf("the writer failed: %v", err)
	default:
	}
	if before == 0 || whileDown == 0 {
		t.Fatalf("%d messages acknowledged before the kill and %d while the backup was down: the test did not load the cluster", before, whileDown)
	}

	want := acked
	for i, addr := range addrs {
		got := replicaPayloads(t, addr, len(want))
		if len(got) != len(want) {
			t.Fatalf("replica %d holds %d messages, %d were acknowledged", i, len(got), len(want))
		}
		for j := range want {
			if !bytes.Equal(got[j], want[j]) {
				t.Fatalf("replica %d: message at offset %d differs", i, j)
			}
		}
	}
	t.Logf("%d messages acknowledged (%d while replica 2 was down), identical on all three replicas", len(want), whileDown)
}

// replicaPayloads reads partition 0 of topic 0 of stream 0 from the node at
// addr alone (no leader redirect), from offset 0, until it holds at least
// want messages or 15 s pass (faultcheck.ReadPartition checks the offsets
// are contiguous).
func replicaPayloads(t *testing.T, addr string, want int) [][]byte {
	t.Helper()
	ctx := ctxWithin(t, 2*time.Minute)
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		got, err := faultcheck.ReadPartition(ctx, client.Options{Address: addr, Username: "iggy", Password: "iggy"}, wire.ID(0), wire.ID(0))
		if err != nil {
			t.Fatalf("%s: %v", addr, err)
		}
		if len(got) >= want || time.Now().After(deadline) {
			return got
		}
	}
}
