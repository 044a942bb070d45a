package actors

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"iggynode/client"
	"iggynode/config"
	replicaplane "iggynode/plane/replica"
	"iggynode/vsr"
	"iggynode/wire"
)

// joinerOptions are the options of node id joining the cluster of nodes:
// cluster.join, the cluster's nodes and its own entry listed.
func joinerOptions(t *testing.T, id int, nodes []*Node, dir string) Options {
	opts := clusterNodeOptions(id, len(nodes), dir)
	opts.Config.Cluster.Nodes = append(opts.Config.Cluster.Nodes, config.Node{Name: fmt.Sprintf("node-%d", id), IP: "127.0.0.1", ReplicaID: id})
	opts.Config.Cluster.Join = true
	return opts
}

// tcpPort is the bound client TCP port of n.
func tcpPort(t *testing.T, n *Node) uint16 {
	_, port, _ := net.SplitHostPort(n.TCPAddr())
	p, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	return uint16(p)
}

// rootOn logs in as root at node n without following the leader.
func rootOn(t *testing.T, n *Node) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var c *client.Client
	var err error
	for { // a node still probing for its view answers logins 58
		c, err = client.Connect(ctx, client.Options{Address: n.TCPAddr(), Username: "iggy", Password: "iggy", StayOnNode: true})
		if err == nil || !errors.Is(err, wire.ErrTransientNotAccepted) || ctx.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// waitStatus polls ClusterStatus at c until ok accepts it.
func waitStatus(t *testing.T, c *client.Client, what string, ok func(wire.ClusterStatusReply) bool) wire.ClusterStatusReply {
	t.Helper()
	var last wire.ClusterStatusReply
	var err error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		last, err = c.ClusterStatus(ctx)
		cancel()
		if err == nil && ok(last) {
			return last
		}
	}
	t.Fatalf("%s: last status %+v, err %v", what, last, err)
	return last
}

// Issue 22 in one process: a three-node cluster grows to four (a joiner
// started empty with cluster.join, added by ClusterAdd, taking the state
// by transfer and promoted), then removes its primary (node 0): the
// others go on in the next epoch, the removed node refuses clients with
// NodeRemoved, GetClusterMetadata lists the new roster, and the joiner,
// restarted, recovers its roster from disk and still counts.
func TestClusterGrowsAndRemovesItsPrimary(t *testing.T) {
	nodes := startCluster(t, 3)
	advertiseClientPorts(nodes)
	c0 := rootOn(t, nodes[0])
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var err error
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err = c0.CreateStream(ctx, "before", nil); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c0.CreateTopic(ctx, wire.Named("before"), "t", 2, nil); err != nil {
		t.Fatal(err)
	}
	send := func(c *client.Client, n int) {
		t.Helper()
		for i := range n {
			msgs := []wire.Message{client.NewMessage([]byte(fmt.Sprintf("m%d", i)))}
			var err error
			for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				if _, err = c.SendMessages(ctx, wire.Named("before"), wire.Named("t"), wire.PartitionID(uint32(i%2)), msgs); err == nil || time.Now().After(deadline) {
					break
				}
			}
			if err != nil {
				t.Fatalf("send %d: %v", i, err)
			}
		}
	}
	send(c0, 20)

	// A leader-following client, on node 0 (the primary) now: it has to
	// find the primary of every later epoch by itself.
	follower, err := client.Connect(ctx, client.Options{Address: nodes[1].TCPAddr(), Username: "iggy", Password: "iggy"})
	if err != nil {
		t.Fatal(err)
	}
	defer follower.Close()

	dir := t.TempDir()
	joiner := startNode(t, joinerOptions(t, 3, nodes, dir))
	roster := append(replicaRoster(nodes), replicaplane.Peer{ID: 3, Addr: joiner.ReplicaAddr()})
	if err := joiner.SetReplicaRoster(roster[:3]); err != nil {
		t.Fatal(err)
	}
	c1 := rootOn(t, nodes[1])
	if _, err := c1.ClusterAdd(ctx, wire.NodeSpec{ID: 3, ReplicaAddress: joiner.ReplicaAddr()}); !errors.Is(err, wire.ErrTransientNotAccepted) {
		t.Fatalf("ClusterAdd on a backup: %v", err)
	}
	byID := map[uint8]*client.Client{0: c0, 1: c1, 2: rootOn(t, nodes[2])}
	// The primary moves with the epoch (an epoch's first view has its
	// own primary, the view mod the voters): found through the status.
	primary := func(what string) *client.Client {
		t.Helper()
		st := waitStatus(t, c1, what, func(s wire.ClusterStatusReply) bool {
			return slices.ContainsFunc(s.Nodes, func(n wire.ClusterStatusNode) bool { return n.Primary })
		})
		for _, n := range st.Nodes {
			if n.Primary {
				return byID[n.Spec.ID]
			}
		}
		return nil
	}
	// An add whose node never comes (nothing listens there) stays a
	// learner: a second change is refused meanwhile, and removing the
	// learner calls it off.
	st, err := c0.ClusterAdd(ctx, wire.NodeSpec{ID: 4, ReplicaAddress: "127.0.0.1:1"})
	if err != nil || st.Epoch != 1 || st.Voters != 0b111 || st.Learners != 0b10000 || st.Target != 0b10111 {
		t.Fatalf("ClusterAdd answered %+v %v, want epoch 1 with 4 a learner", st, err)
	}
	// (58 while the status names a primary that just lost its view: ask
	// again.)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		_, err := primary("a primary in epoch 1").ClusterAdd(ctx, wire.NodeSpec{ID: 3, ReplicaAddress: joiner.ReplicaAddr()})
		if errors.Is(err, wire.ErrReconfigurationInProgress) {
			break
		}
		if !errors.Is(err, wire.ErrTransientNotAccepted) || time.Now().After(deadline) {
			t.Fatalf("a second change while one runs: %v", err)
		}
	}
	if st, err = primary("a primary in epoch 1").ClusterRemove(ctx, 4); err != nil || st.Voters != 0b111 || st.Learners != 0 || st.Target != 0b111 {
		t.Fatalf("calling the add off: %+v %v", st, err)
	}
	st, err = primary("a primary in epoch 2").ClusterAdd(ctx, wire.NodeSpec{ID: 3, ReplicaAddress: joiner.ReplicaAddr(), IP: "127.0.0.1", TCPPort: tcpPort(t, joiner)})
	if err != nil || st.Voters != 0b111 || st.Learners != 0b1000 {
		t.Fatalf("ClusterAdd answered %+v %v, want 3 a learner", st, err)
	}
	waitStatus(t, c0, "node 3 promoted", func(s wire.ClusterStatusReply) bool { return s.Voters == 0b1111 && s.Learners == 0 })
	cj := rootOn(t, joiner) // a member now: it commits its login
	byID[3] = cj
	waitStatus(t, cj, "the joiner in the epoch", func(s wire.ClusterStatusReply) bool { return s.Voters == 0b1111 && s.Epoch >= 2 })
	streams, err := cj.GetStreams(ctx)
	if err != nil || len(streams) != 1 || streams[0].Name != "before" {
		t.Fatalf("the joiner's streams %+v %v: the transfer did not bring the state", streams, err)
	}
	// Its partition groups follow their placement (issue 23: R = 3 of
	// the 4), one at a time: node 3 becomes a voter of those placed on it
	// and holds their messages (10 each).
	placed := waitPlaced(t, append(nodes, joiner))
	want := uint64(0)
	for _, p := range placed {
		if p.Voters&(1<<3) != 0 {
			want += 10
		}
	}
	if want == 0 {
		t.Fatal("no partition moved to node 3: 6 replicas over 4 nodes")
	}
	if got := waitStored(t, joiner, want); got != want {
		t.Fatalf("node 3 holds %d messages, want %d (placement %v)", got, want, placed)
	}
	send(follower, 10)

	if _, err := primary("a primary after the promotion").ClusterRemove(ctx, 0); err != nil {
		t.Fatalf("removing node 0: %v", err)
	}
	st = waitStatus(t, c1, "node 0 removed", func(s wire.ClusterStatusReply) bool {
		_, named := s.Node(0)
		return s.Voters == 0b1110 && !named && s.Learners == 0
	})
	// (58 again while the status names a primary that just lost its
	// view under load.)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		_, err := primary("a primary without node 0").CreateStream(ctx, "after", nil)
		if err == nil || errors.Is(err, wire.ErrStreamNameAlreadyExists) {
			break
		}
		if !errors.Is(err, wire.ErrTransientNotAccepted) || time.Now().After(deadline) {
			t.Fatalf("a write in the new epoch: %v", err)
		}
	}
	waitGroups(t, []*Node{nodes[1], nodes[2], joiner}, 0b1110)
	send(follower, 10)
	if got := waitStored(t, joiner, 40); got != 40 {
		t.Fatalf("node 3 holds %d messages of 40 after node 0 left", got)
	}
	if _, err := follower.CreateStream(ctx, "by the follower", nil); err != nil {
		t.Fatalf("the leader-following client after the primary left: %v", err)
	}
	if _, err := c0.CreateStream(ctx, "on the removed node", nil); !errors.Is(err, wire.ErrNodeRemoved) {
		t.Fatalf("the removed node answers a write with %v, want NodeRemoved", err)
	}
	if s0, err := c0.ClusterStatus(ctx); err != nil {
		t.Fatalf("ClusterStatus on the removed node: %v", err)
	} else if n, ok := s0.Node(0); !ok || n.Role != wire.MemberRemoved {
		t.Fatalf("the removed node reports itself %+v", s0.Nodes)
	}
	md, err := c1.GetClusterMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(md.Nodes) != 3 || md.Nodes[2].TCPPort != tcpPort(t, joiner) {
		t.Fatalf("GetClusterMetadata after the change: %+v", md.Nodes)
	}

	// The joiner restarts on its data: the roster comes from its disk,
	// not from its configuration (which still says join).
	_ = cj.Close()
	replicaAddr := joiner.ReplicaAddr()
	_ = joiner.Close()
	opts := joinerOptions(t, 3, nodes, dir)
	opts.ReplicaListen = replicaAddr // where the roster says it is
	joiner = startNode(t, opts)
	if err := joiner.SetReplicaRoster(roster[1:3]); err != nil {
		t.Fatal(err)
	}
	cj = rootOn(t, joiner)
	waitStatus(t, cj, "the restarted joiner back in its epoch", func(s wire.ClusterStatusReply) bool {
		n, ok := s.Node(3)
		return s.Voters == 0b1110 && ok && n.Role == wire.MemberVoter && n.Commit >= st.EpochOp
	})
	streams, err = cj.GetStreams(ctx)
	if err != nil || len(streams) != 3 {
		t.Fatalf("the restarted joiner's streams %+v %v", streams, err)
	}
}

// waitGroups waits until every partition group on each node runs on
// voters (the node's core of it says so).
func waitGroups(t *testing.T, nodes []*Node, voters uint32) {
	t.Helper()
	var last string
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		ok := true
		last = ""
		for i, n := range nodes {
			for _, ro := range partitionRosters(t, n) {
				if ro.Voters != voters || ro.Changing() {
					ok = false
					last += fmt.Sprintf(" node %d: %v", i, ro)
				}
			}
		}
		if ok {
			return
		}
	}
	t.Fatalf("partition groups not on voters %b:%s", voters, last)
}

// askPartitions runs fn on each of node n's partition actors and waits
// for it (at most 5 s each; one that does not answer is reported).
func askPartitions[T any](t *testing.T, n *Node, fn func(p *partitionActor) T) []T {
	t.Helper()
	var pids []*actor.PID
	inspect(n, func(m *metadataActor) {
		for _, pid := range m.partitions {
			pids = append(pids, pid)
		}
	})
	var out []T
	for _, pid := range pids {
		done := make(chan T, 1)
		n.root().Send(pid, &inspectPartition{fn: func(p *partitionActor) { done <- fn(p) }})
		select {
		case v := <-done:
			out = append(out, v)
		case <-time.After(5 * time.Second):
			t.Fatal("a partition actor did not answer")
		}
	}
	return out
}

// partitionRosters reads each local partition core's roster.
func partitionRosters(t *testing.T, n *Node) []vsr.Roster {
	return askPartitions(t, n, func(p *partitionActor) vsr.Roster { return p.core.Roster() })
}

// waitStored waits (a backup learns the commit point with the next
// heartbeat) until node n's partitions hold want messages, and returns
// what they hold.
func waitStored(t *testing.T, n *Node, want uint64) uint64 {
	t.Helper()
	got := storedOn(t, n)
	for deadline := time.Now().Add(10 * time.Second); got != want && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		got = storedOn(t, n)
	}
	return got
}

// storedOn counts the messages node n's partitions hold.
func storedOn(t *testing.T, n *Node) uint64 {
	total := uint64(0)
	for _, hw := range askPartitions(t, n, func(p *partitionActor) uint64 { return p.plog.HighWatermark() }) {
		total += hw
	}
	return total
}
