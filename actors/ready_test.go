package actors

import (
	"fmt"
	"testing"
	"time"

	"iggynode/wire"
)

// A node that comes back (on its volume, or on an empty one) is not ready
// (CaughtUp, GET /ready) while it cannot catch up, and once it is ready it
// holds what was committed while it was away: a readiness probe keeps it
// out of the client Service until then, and a StatefulSet's rolling
// update waits for it before taking the next pod.
func TestReturningNodeIsReadyOnlyOnceCaughtUp(t *testing.T) {
	for _, wiped := range []bool{false, true} {
		t.Run(map[bool]string{false: "on its volume", true: "on an empty volume"}[wiped], func(t *testing.T) {
			returningNodeIsReadyOnlyOnceCaughtUp(t, wiped)
		})
	}
}

func returningNodeIsReadyOnlyOnceCaughtUp(t *testing.T, wiped bool) {
	nodes := startCluster(t, 3)
	waitReady := func(n *Node, what string) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !n.CaughtUp(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not ready after 30 s", what)
			}
		}
	}
	hasStream := func(n *Node, name string) (ok bool) {
		inspect(n, func(m *metadataActor) { _, ok = m.state.ResolveStream(wire.Named(name)) })
		return ok
	}
	waitStream := func(n *Node, name string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !hasStream(n, name); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("stream %s never applied", name)
			}
		}
	}
	for _, n := range nodes {
		waitReady(n, "a fresh cluster")
	}
	ctx, c := rootClient(t, nodes[0])
	if _, err := c.CreateStream(ctx, "before", nil); err != nil {
		t.Fatal(err)
	}
	waitStream(nodes[2], "before") // node 2's volume holds a committed op

	type stopped struct{ dir, addr string }
	stop := func(i int) stopped {
		t.Helper()
		s := stopped{nodes[i].opts.Config.System.Path, nodes[i].ReplicaAddr()}
		if err := nodes[i].Close(); err != nil {
			t.Fatal(err)
		}
		return s
	}
	start := func(i int, s stopped) {
		t.Helper()
		opts := clusterNodeOptions(i, len(nodes), s.dir)
		opts.ReplicaListen = s.addr
		nodes[i] = startNode(t, opts)
		if err := nodes[i].SetReplicaRoster(replicaRoster(nodes)); err != nil {
			t.Fatal(err)
		}
	}
	down2 := stop(2)
	if wiped {
		down2.dir = t.TempDir()
	}
	if _, err := c.CreateStream(ctx, "while-down", nil); err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
	waitStream(nodes[1], "while-down")
	down1, _ := stop(1), stop(0)

	// Alone, node 2 cannot learn what it missed: not ready, even when it
	// hears a peer that is itself recovering.
	start(2, down2)
	never := func(what string, d time.Duration) {
		t.Helper()
		for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if nodes[2].CaughtUp() {
				t.Fatalf("node 2 reports ready %s", what)
			}
		}
	}
	never("alone", 1500*time.Millisecond)
	// With node 1 back there is a quorum; ready means caught up.
	start(1, down1)
	waitReady(nodes[2], "node 2 with a quorum")
	for _, name := range []string{"before", "while-down"} {
		if !hasStream(nodes[2], name) {
			var st string
			inspect(nodes[2], func(m *metadataActor) {
				st = fmt.Sprintf("status %v view %d commit %d/%d op %d", m.core.Status(), m.core.View(), m.core.CommitMin(),
					m.core.CommitMax(), m.core.Op())
			})
			t.Fatalf("node 2 reports ready without stream %q (%s)", name, st)
		}
	}
}
