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

// reconfigCluster is a three-process cluster with room for a fourth
// node (id 3) that joins it.
type reconfigCluster struct {
	*procCluster
	// allPeers and allClients are the four nodes' addresses.
	allPeers, allClients []string
	joinerDir            string
	joiner               *exec.Cmd
}

func startReconfigCluster(t *testing.T) *reconfigCluster {
	t.Helper()
	peers, clients := loopbackAddrs(t, 4), loopbackAddrs(t, 4)
	pc := &procCluster{peers: peers[:3], clients: clients[:3], dirs: []string{t.TempDir(), t.TempDir(), t.TempDir()}}
	pc.env = []string{"E2E_CLUSTER_CLIENTS=" + strings.Join(pc.clients, ",")}
	for i := range 3 {
		pc.start(t, i)
	}
	rc := &reconfigCluster{procCluster: pc, joinerDir: t.TempDir()}
	rc.allPeers, rc.allClients = peers, clients
	return rc
}

// startJoiner starts node 3 with cluster.join, knowing the three others.
func (rc *reconfigCluster) startJoiner(t *testing.T) {
	t.Helper()
	rc.joiner, _ = startClusterChild(t, rc.joinerDir, 3, rc.allPeers, "E2E_CLUSTER_JOIN=1",
		"E2E_CLUSTER_CLIENTS="+strings.Join(rc.allClients, ","))
}

// addJoiner asks the cluster to add node 3, retrying while the admin
// client has not found the primary yet.
func (rc *reconfigCluster) addJoiner(ctx context.Context, t *testing.T, admin *client.Client) wire.ClusterStatusReply {
	t.Helper()
	_, port, _ := net.SplitHostPort(rc.allClients[3])
	p, _ := strconv.Atoi(port)
	spec := wire.NodeSpec{ID: 3, ReplicaAddress: rc.allPeers[3], Name: "node-3", IP: "127.0.0.1", TCPPort: uint16(p)}
	return retryAdmin(ctx, t, "ClusterAdd", func() (wire.ClusterStatusReply, error) { return admin.ClusterAdd(ctx, spec) })
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
	rc := startReconfigCluster(t)
	ctx := ctxWithin(t, 4*time.Minute)
	admin := streamWithTopic(t, ctx, rc.clients[1], "reconfig", 1)
	defer admin.Close()
	w := faultcheck.StartWriter(ctx, writerOptions(rc.clients[1]), wire.ID(0), wire.ID(0), 2*time.Millisecond)
	defer w.Stop()
	if err := w.WaitAcked(ctx, 50, 30*time.Second); err != nil {
		t.Fatal(err)
	}

	rc.startJoiner(t)
	if st := rc.addJoiner(ctx, t, admin); st.Learners != 0b1000 {
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
	rc := startReconfigCluster(t)
	ctx := ctxWithin(t, 4*time.Minute)
	admin := streamWithTopic(t, ctx, rc.clients[1], "reconfig-kill", 1)
	defer admin.Close()
	w := faultcheck.StartWriter(ctx, writerOptions(rc.clients[1]), wire.ID(0), wire.ID(0), 2*time.Millisecond)
	defer w.Stop()
	if err := w.WaitAcked(ctx, 50, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	// The joiner is not started yet: the change stays at its learner
	// epoch until it is.
	if st := rc.addJoiner(ctx, t, admin); st.Learners != 0b1000 {
		t.Fatalf("ClusterAdd answered %+v", st)
	}
	var primary uint8
	st := statusAt(ctx, t, rc.clients[1], "a primary of the learner epoch", func(s wire.ClusterStatusReply) bool {
		for _, n := range s.Nodes {
			if n.Primary {
				primary = n.Spec.ID
				return s.Learners == 0b1000
			}
		}
		return false
	})
	if err := rc.cmds[primary].Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = rc.cmds[primary].Wait()
	rc.startJoiner(t)
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
