package e2e

import (
	"context"
	"errors"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"iggynode/client"
	"iggynode/internal/faultcheck"
	"iggynode/wire"
)

// Reconfiguration on real processes (issue 22): the cluster's roster
// changes under a write load; the partition groups follow it, and the
// partition's copies are checked on every node of the final roster.

// reconfigCluster is a three-process cluster with room for joiners
// (ids 3 and up) that join it.
type reconfigCluster struct {
	*procCluster
	// allPeers and allClients are every node's addresses, joiners too.
	allPeers, allClients []string
	joinerDirs           map[int]string
	joiners              map[int]*exec.Cmd
}

// startReconfigCluster starts three nodes and reserves addresses for
// joiners more.
func startReconfigCluster(t *testing.T, joiners int) *reconfigCluster {
	t.Helper()
	peers, clients := loopbackAddrs(t, 3+joiners), loopbackAddrs(t, 3+joiners)
	pc := &procCluster{peers: peers[:3], clients: clients[:3], dirs: []string{t.TempDir(), t.TempDir(), t.TempDir()}}
	pc.env = []string{"E2E_CLUSTER_CLIENTS=" + strings.Join(pc.clients, ",")}
	for i := range 3 {
		pc.start(t, i)
	}
	rc := &reconfigCluster{procCluster: pc, allPeers: peers, allClients: clients, joinerDirs: map[int]string{}, joiners: map[int]*exec.Cmd{}}
	for id := 3; id < 3+joiners; id++ {
		rc.joinerDirs[id] = t.TempDir()
	}
	return rc
}

// startJoiner starts node id with cluster.join, knowing every node (on
// its data directory: a restart keeps it).
func (rc *reconfigCluster) startJoiner(t *testing.T, id int) {
	t.Helper()
	rc.joiners[id], _ = startClusterChild(t, rc.joinerDirs[id], id, rc.allPeers[:id+1], "E2E_CLUSTER_JOIN=1",
		"E2E_CLUSTER_CLIENTS="+strings.Join(rc.allClients[:id+1], ","))
}

// cmd is node id's process.
func (rc *reconfigCluster) cmd(id int) *exec.Cmd {
	if id < 3 {
		return rc.cmds[id]
	}
	return rc.joiners[id]
}

// addJoiner asks the cluster to add node id, retrying while the admin
// client has not found the primary yet.
func (rc *reconfigCluster) addJoiner(ctx context.Context, t *testing.T, admin *client.Client, id int) wire.ClusterStatusReply {
	t.Helper()
	_, port, _ := net.SplitHostPort(rc.allClients[id])
	p, _ := strconv.Atoi(port)
	spec := wire.NodeSpec{ID: uint8(id), ReplicaAddress: rc.allPeers[id], Name: "node-" + strconv.Itoa(id), IP: "127.0.0.1", TCPPort: uint16(p)}
	return retryAdmin(ctx, t, "ClusterAdd", func() (wire.ClusterStatusReply, error) { return admin.ClusterAdd(ctx, spec) })
}

// startLoad creates stream (one partition) through node 1, starts the
// faultcheck writer on it every interval and waits for its first 50
// acknowledgements; the caller stops both.
func (rc *reconfigCluster) startLoad(ctx context.Context, t *testing.T, stream string, interval time.Duration) (*client.Client, *faultcheck.Writer) {
	t.Helper()
	admin := streamWithTopic(t, ctx, rc.clients[1], stream, 1)
	w := faultcheck.StartWriter(ctx, writerOptions(rc.clients[1]), wire.ID(0), wire.ID(0), interval)
	if err := w.WaitAcked(ctx, 50, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	return admin, w
}

// primaryOf is the metadata primary a status names (-1: none).
func primaryOf(s wire.ClusterStatusReply) int {
	for _, n := range s.Nodes {
		if n.Primary {
			return int(n.Spec.ID)
		}
	}
	return -1
}

// retryAdmin runs an admin command until it is not answered 57/58 (the
// SDK moves to the new primary after a few seconds of those).
func retryAdmin(ctx context.Context, t *testing.T, what string, run func() (wire.ClusterStatusReply, error)) wire.ClusterStatusReply {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		st, err := run()
		if err == nil {
			return st
		}
		if !errors.Is(err, wire.ErrTransientNotAccepted) && !errors.Is(err, wire.ErrTransientNotCommitted) || time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
	}
}

// statusAt polls ClusterStatus at addr (staying on that node) until ok.
func statusAt(ctx context.Context, t *testing.T, addr, what string, ok func(wire.ClusterStatusReply) bool) wire.ClusterStatusReply {
	t.Helper()
	var last wire.ClusterStatusReply
	var err error
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		var c *client.Client
		c, err = client.Connect(ctx, client.Options{Address: addr, Username: "iggy", Password: "iggy", StayOnNode: true, RequestTimeout: 5 * time.Second})
		if err != nil {
			continue
		}
		last, err = c.ClusterStatus(ctx)
		_ = c.Close()
		if err == nil && ok(last) {
			return last
		}
	}
	t.Fatalf("%s: last status %+v, err %v", what, last, err)
	return last
}

// Three processes grow to four and shrink back to three, removing the
// node that led every group, while a writer sends: no acknowledged write
// is lost, and the partition's copies on the nodes that still serve it
// are identical.
func TestGrowThreeToFourAndRemoveThePrimaryUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("starts four child processes")
	}
	rc := startReconfigCluster(t, 1)
	ctx := ctxWithin(t, 4*time.Minute)
	admin, w := rc.startLoad(ctx, t, "reconfig", 2*time.Millisecond)
	defer admin.Close()
	defer w.Stop()

	rc.startJoiner(t, 3)
	if st := rc.addJoiner(ctx, t, admin, 3); st.Learners != 0b1000 {
		t.Fatalf("ClusterAdd answered %+v", st)
	}
	statusAt(ctx, t, rc.clients[1], "node 3 promoted", func(s wire.ClusterStatusReply) bool { return s.Voters == 0b1111 && s.Learners == 0 })
	if err := w.WaitAcked(ctx, w.Acked()+50, 30*time.Second); err != nil {
		t.Fatalf("writes after the grow: %v", err)
	}

	retryAdmin(ctx, t, "ClusterRemove", func() (wire.ClusterStatusReply, error) { return admin.ClusterRemove(ctx, 0) })
	st := statusAt(ctx, t, rc.clients[1], "node 0 removed", func(s wire.ClusterStatusReply) bool { return s.Voters == 0b1110 && s.Learners == 0 })
	if _, named := st.Node(0); named {
		t.Fatalf("the roster still names node 0: %+v", st.Nodes)
	}
	if err := w.WaitAcked(ctx, w.Acked()+50, 30*time.Second); err != nil {
		t.Fatalf("writes after the removal: %v", err)
	}
	w.Stop()

	// The removed node says so to a client that reaches it.
	c0, err := client.Connect(ctx, client.Options{Address: rc.clients[0], Username: "iggy", Password: "iggy", StayOnNode: true, RequestTimeout: 5 * time.Second})
	if err == nil {
		_, err = c0.CreateStream(ctx, "on the removed node", nil)
		_ = c0.Close()
	}
	if !errors.Is(err, wire.ErrNodeRemoved) {
		t.Fatalf("the removed node answered %v, want NodeRemoved", err)
	}
	h := w.History()
	lists := checkReplicas(t, rc.allClients[1:4], h)
	t.Logf("%d sends acknowledged, %d failed around the changes; %d messages identical on replicas 1, 2 and 3 (the new one)", len(h.Order), h.Failures, len(lists[0]))
}

// kill -9 of the metadata primary while node 3 is still a learner: the
// two other voters of the learner epoch elect a primary, which promotes
// node 3 once it holds the log; the killed node restarts on its data and
// rejoins as a voter of the new epoch; nothing acknowledged is lost.
func TestKill9PrimaryDuringAChange(t *testing.T) {
	if testing.Short() {
		t.Skip("starts four child processes")
	}
	rc := startReconfigCluster(t, 1)
	ctx := ctxWithin(t, 4*time.Minute)
	admin, w := rc.startLoad(ctx, t, "reconfig-kill", 2*time.Millisecond)
	defer admin.Close()
	defer w.Stop()
	// The joiner is not started yet: the change stays at its learner
	// epoch until it is.
	if st := rc.addJoiner(ctx, t, admin, 3); st.Learners != 0b1000 {
		t.Fatalf("ClusterAdd answered %+v", st)
	}
	st := statusAt(ctx, t, rc.clients[1], "a primary of the learner epoch", func(s wire.ClusterStatusReply) bool {
		return primaryOf(s) >= 0 && s.Learners == 0b1000
	})
	primary := uint8(primaryOf(st))
	if err := rc.cmds[primary].Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = rc.cmds[primary].Wait()
	rc.startJoiner(t, 3)
	other := rc.clients[(int(primary)+1)%3]
	statusAt(ctx, t, other, "node 3 promoted without the killed primary", func(s wire.ClusterStatusReply) bool {
		return s.Voters == 0b1111 && s.Learners == 0 && s.Epoch > st.Epoch
	})
	rc.start(t, int(primary))
	statusAt(ctx, t, rc.clients[primary], "the killed primary back in the new epoch", func(s wire.ClusterStatusReply) bool {
		n, ok := s.Node(primary)
		return s.Voters == 0b1111 && ok && n.Role == wire.MemberVoter && n.Commit >= s.EpochOp && s.EpochOp > 0
	})
	if err := w.WaitAcked(ctx, w.Acked()+50, 30*time.Second); err != nil {
		t.Fatalf("writes after the change: %v", err)
	}
	w.Stop()
	h := w.History()
	lists := checkReplicas(t, rc.allClients, h)
	t.Logf("%d sends acknowledged, %d failed around the kill; %d messages identical on all four replicas", len(h.Order), h.Failures, len(lists[0]))
}

// 3 -> 5 -> 3 under load: two joiners added one after the other, then
// two voters removed, the metadata primary of the moment first; the
// writer's leader-following SDK goes on throughout, nothing acknowledged
// is lost and the three left hold identical copies.
func TestGrowThreeToFiveAndBackUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("starts five child processes")
	}
	rc := startReconfigCluster(t, 2)
	ctx := ctxWithin(t, 5*time.Minute)
	admin, w := rc.startLoad(ctx, t, "reconfig-5", 2*time.Millisecond)
	defer admin.Close()
	defer w.Stop()
	voters := uint32(0b111)
	for _, id := range []int{3, 4} {
		rc.startJoiner(t, id)
		rc.addJoiner(ctx, t, admin, id)
		voters |= 1 << id
		statusAt(ctx, t, rc.clients[1], "node "+strconv.Itoa(id)+" promoted", func(s wire.ClusterStatusReply) bool { return s.Voters == voters && s.Learners == 0 })
		if err := w.WaitAcked(ctx, w.Acked()+30, 30*time.Second); err != nil {
			t.Fatalf("writes after adding %d: %v", id, err)
		}
	}
	st := statusAt(ctx, t, rc.allClients[4], "a primary of five", func(s wire.ClusterStatusReply) bool { return primaryOf(s) >= 0 })
	first := primaryOf(st)
	second := 4
	if first == 4 {
		second = 3
	}
	var left []string
	for _, id := range []int{first, second} {
		retryAdmin(ctx, t, "ClusterRemove", func() (wire.ClusterStatusReply, error) { return admin.ClusterRemove(ctx, uint8(id)) })
		voters &^= 1 << id
		watch := 0
		for voters&(1<<watch) == 0 {
			watch++
		}
		statusAt(ctx, t, rc.allClients[watch], "node "+strconv.Itoa(id)+" removed", func(s wire.ClusterStatusReply) bool { return s.Voters == voters && s.Learners == 0 })
		if err := w.WaitAcked(ctx, w.Acked()+30, 30*time.Second); err != nil {
			t.Fatalf("writes after removing %d: %v", id, err)
		}
	}
	w.Stop()
	for id := range 5 {
		if voters&(1<<id) != 0 {
			left = append(left, rc.allClients[id])
		}
	}
	h := w.History()
	lists := checkReplicas(t, left, h)
	t.Logf("removed %d (the primary) and %d; %d sends acknowledged, %d failed around the changes; %d messages identical on %v",
		first, second, len(h.Order), h.Failures, len(lists[0]), left)
}

// A joiner killed (SIGKILL) while it catches up (its transfer, or the
// repair after it) and started again on its data: the change waits for
// it, it comes back, catches up and is promoted; nothing acknowledged is
// lost and all four hold identical copies.
func TestJoinerKilledWhileItCatchesUp(t *testing.T) {
	if testing.Short() {
		t.Skip("starts four child processes")
	}
	rc := startReconfigCluster(t, 1)
	ctx := ctxWithin(t, 4*time.Minute)
	admin, w := rc.startLoad(ctx, t, "reconfig-joiner", time.Millisecond)
	defer admin.Close()
	defer w.Stop()
	// Enough data that the transfer takes more than an instant.
	if err := w.WaitAcked(ctx, 1500, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	rc.startJoiner(t, 3)
	rc.addJoiner(ctx, t, admin, 3)
	time.Sleep(30 * time.Millisecond)
	if err := rc.joiners[3].Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = rc.joiners[3].Wait()
	if s := statusAt(ctx, t, rc.clients[1], "the change waiting", func(wire.ClusterStatusReply) bool { return true }); s.Voters == 0b1111 {
		t.Logf("node 3 was promoted before the kill (its catch-up was quicker than 30 ms)")
	}
	if err := w.WaitAcked(ctx, w.Acked()+50, 30*time.Second); err != nil {
		t.Fatalf("writes while the joiner is down: %v", err)
	}
	rc.startJoiner(t, 3)
	statusAt(ctx, t, rc.clients[1], "node 3 promoted after its restart", func(s wire.ClusterStatusReply) bool { return s.Voters == 0b1111 && s.Learners == 0 })
	if err := w.WaitAcked(ctx, w.Acked()+50, 30*time.Second); err != nil {
		t.Fatalf("writes after the promotion: %v", err)
	}
	w.Stop()
	h := w.History()
	lists := checkReplicas(t, rc.allClients, h)
	t.Logf("%d sends acknowledged, %d failed; %d messages identical on all four", len(h.Order), h.Failures, len(lists[0]))
}
