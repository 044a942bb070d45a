package actors

import (
	"testing"
	"time"

	"iggynode/client"
	"iggynode/config"
	"iggynode/wire"
)

// The node-level heartbeat keeps every peer of an idle cluster live past
// the timeout (here 1 s).
func TestNodeHeartbeatKeepsPeersLive(t *testing.T) {
	nodes := startClusterWith(t, 3, func(o *Options) { o.Config.Cluster.HeartbeatTimeout = config.Duration(time.Second) })
	time.Sleep(2500 * time.Millisecond)
	for i, n := range nodes {
		if live := n.refs.tel.peersLive.Load(); live != 2 {
			t.Errorf("node %d hears %d peers, want 2", i, live)
		}
	}
}

// quietGroups counts the partition groups on n that are quiet, and all of
// them.
func quietGroups(n *Node) (quiet, all int) {
	t := n.refs.tel
	t.mu.Lock()
	defer t.mu.Unlock()
	for g, gg := range t.groups {
		if kindIndex(g) == kindIndex(0) {
			all++
			if gg.quiet.Load() {
				quiet++
			}
		}
	}
	return quiet, all
}

// vsr/quiesce.go on real nodes: after writes, every partition group goes
// quiet on every node (the notices and confirmations cross the replica
// plane in node heartbeats), and then no partition has a timer for the
// clock to run.
func TestIdleGroupsGoQuietOnEveryNode(t *testing.T) {
	nodes := startCluster(t, 3)
	ctx, c := rootClient(t, nodes[0])
	s, err := c.CreateStream(ctx, "quiet", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, wire.ID(s.ID), "t", 8, nil); err != nil {
		t.Fatal(err)
	}
	for p := uint32(0); p < 8; p += 2 {
		if _, err := c.SendMessages(ctx, wire.ID(s.ID), wire.ID(0), wire.PartitionID(p), []wire.Message{client.NewMessage([]byte("x"))}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		settled := true
		for _, n := range nodes {
			if q, all := quietGroups(n); q != all || all != 8 {
				settled = false
			}
		}
		if settled {
			break
		}
		if time.Now().After(deadline) {
			for i, n := range nodes {
				q, all := quietGroups(n)
				t.Errorf("node %d: %d of %d partition groups quiet", i, q, all)
			}
			t.FailNow()
		}
		time.Sleep(100 * time.Millisecond)
	}
	for i, n := range nodes {
		if p := n.clock.pending(); p != 0 {
			t.Errorf("node %d: %d partition groups still have a timer with every group quiet", i, p)
		}
	}
}
