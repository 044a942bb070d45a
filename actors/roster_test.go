package actors

import (
	"testing"
	"time"

	"iggynode/config"
	"iggynode/wire"
)

// client-plane.md 7.15 status values: a node the answering node has not
// heard from within cluster.heartbeat_timeout is Unreachable (the
// reference says Healthy for every node), and Healthy again once it is
// heard; the last-heard extension says when each node was last heard.
func TestRosterReportsAKilledNodeUnreachableUntilItReturns(t *testing.T) {
	fast := func(o *Options) {
		o.Config.Cluster.HeartbeatTimeout = config.Duration(time.Second)
		o.Config.Cluster.NodeHeartbeatInterval = config.Duration(100 * time.Millisecond)
	}
	nodes := startClusterWith(t, 3, fast)
	ctx, c := rootClient(t, nodes[0])
	statuses := func() ([]wire.NodeStatus, []uint64) {
		t.Helper()
		md, err := c.GetClusterMetadata(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []wire.NodeStatus
		for _, n := range md.Nodes {
			out = append(out, n.Status)
		}
		if len(md.LastHeardUs) != len(md.Nodes) {
			t.Fatalf("last heard %v for %d nodes", md.LastHeardUs, len(md.Nodes))
		}
		return out, md.LastHeardUs
	}
	// waitFor waits for the statuses, with every Healthy node heard.
	waitFor := func(what string, want [3]wire.NodeStatus) []uint64 {
		t.Helper()
		for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			got, heard := statuses()
			allHeard := true
			for i, s := range got {
				allHeard = allHeard && (s != wire.NodeHealthy || heard[i] != 0)
			}
			if len(got) == 3 && [3]wire.NodeStatus(got) == want && allHeard {
				return heard
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: statuses %v, want %v", what, got, want)
			}
		}
	}
	healthy := [3]wire.NodeStatus{wire.NodeHealthy, wire.NodeHealthy, wire.NodeHealthy}
	heard := waitFor("all up", healthy)
	now := uint64(time.Now().UnixMicro())
	for i, us := range heard {
		if us == 0 || us > now || now-us > 2e6 {
			t.Fatalf("node %d last heard at %d, now %d", i, us, now)
		}
	}

	dir, addr := nodes[2].opts.Config.System.Path, nodes[2].ReplicaAddr()
	if err := nodes[2].Close(); err != nil {
		t.Fatal(err)
	}
	closedUs := uint64(time.Now().UnixMicro())
	heard = waitFor("node 2 killed", [3]wire.NodeStatus{wire.NodeHealthy, wire.NodeHealthy, wire.NodeUnreachable})
	if heard[2] == 0 || heard[2] > closedUs {
		t.Fatalf("killed node last heard at %d, closed at %d", heard[2], closedUs)
	}

	opts := clusterNodeOptions(2, 3, dir)
	fast(&opts)
	opts.ReplicaListen = addr
	nodes[2] = startNode(t, opts)
	if err := nodes[2].SetReplicaRoster(replicaRoster(nodes)); err != nil {
		t.Fatal(err)
	}
	heard = waitFor("node 2 back", healthy)
	if heard[2] <= closedUs {
		t.Fatalf("returned node last heard at %d, before it closed (%d)", heard[2], closedUs)
	}
}
