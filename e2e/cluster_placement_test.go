package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"iggynode/client"
	"iggynode/internal/faultcheck"
	"iggynode/wire"
)

// Placement on real processes (issue 23): five nodes, each partition on
// three of them (R = 3, the default), ten partitions (one per stream, so
// every faultcheck writer has its own), writers on four nodes. kill -9 of
// the fifth under load: the groups it led elect among their replica sets
// and the writers go on; after its return the balancer hands each group
// back to its preferred primary within a minute; nothing acknowledged is
// lost, and the copies on the three members of each partition are
// identical.
func TestKill9OneOfFiveWithPlacement(t *testing.T) {
	if testing.Short() {
		t.Skip("starts five child processes")
	}
	const nodes, partitions, victim = 5, 10, 4
	peers, clients := loopbackAddrs(t, nodes), loopbackAddrs(t, nodes)
	env := "E2E_CLUSTER_CLIENTS=" + strings.Join(clients, ",")
	dirs := make([]string, nodes)
	cmds := make([]*exec.Cmd, nodes)
	for i := range nodes {
		dirs[i] = t.TempDir()
		cmds[i], _ = startClusterChild(t, dirs[i], i, peers, env)
	}
	ctx := ctxWithin(t, 5*time.Minute)
	admin, err := client.Connect(ctx, client.Options{Address: clients[0], Username: "iggy", Password: "iggy"})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	for s := range partitions {
		if _, err := admin.CreateStream(ctx, fmt.Sprintf("placed-%d", s), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.CreateTopic(ctx, wire.ID(uint32(s)), "t", 1, nil); err != nil {
			t.Fatal(err)
		}
	}
	st := balancedStatus(ctx, t, clients, nil, partitions, "the groups start balanced")
	if led := ledBy(st, victim); led != 2 {
		t.Fatalf("node %d leads %d partitions at the start, want 2", victim, led)
	}
	var writers []*faultcheck.Writer
	for s := range partitions {
		w := faultcheck.StartWriter(ctx, writerOptions(clients[s%victim]), wire.ID(uint32(s)), wire.ID(0), 5*time.Millisecond)
		defer w.Stop()
		writers = append(writers, w)
	}
	waitAll := func(what string, more int) {
		t.Helper()
		for s, w := range writers {
			if err := w.WaitAcked(ctx, w.Acked()+more, 60*time.Second); err != nil {
				t.Fatalf("%s: writer of partition %d: %v", what, s, err)
			}
		}
	}
	waitAll("before the kill", 20)
	if err := cmds[victim].Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmds[victim].Wait()
	killed := time.Now()
	waitAll("with node 4 killed", 20)
	t.Logf("every partition acknowledged 20 more sends %v after the kill", time.Since(killed).Round(time.Millisecond))
	for s, w := range writers {
		t.Logf("partition of stream %d: longest gap between acknowledgements around the kill %v", s, w.History().LongestGap(killed.Add(-time.Second), time.Now()).Round(time.Millisecond))
	}
	cmds[victim], _ = startClusterChild(t, dirs[victim], victim, peers, env)
	back := time.Now()
	st = balancedStatus(ctx, t, clients, nil, partitions, "leadership balanced again after the return")
	t.Logf("leadership balanced %v after node 4 came back", time.Since(back).Round(time.Millisecond))
	if since := time.Since(back); since > time.Minute {
		t.Fatalf("leadership balanced only %v after the return, want within a minute", since)
	}
	waitAll("after the return", 20)
	for _, w := range writers {
		w.Stop()
	}
	for s, w := range writers {
		h := w.History()
		var members []string
		var names []string
		for _, p := range st.Partitions {
			if p.Stream != uint32(s) {
				continue
			}
			for id := range nodes {
				if p.Replicas&(1<<id) != 0 {
					members = append(members, clients[id])
					names = append(names, fmt.Sprintf("node %d", id))
				}
			}
		}
		if len(members) != 3 {
			t.Fatalf("partition of stream %d on %d nodes, want 3", s, len(members))
		}
		var copies [][][]byte
		for _, addr := range members {
			copies = append(copies, streamPayloads(t, addr, uint32(s), len(h.Order)*faultcheck.MessagesPerSend))
		}
		// Lost, out of order or differing copies fail. A send forwarded to
		// the primary that was killed may have committed there unanswered;
		// the SDK replays the 58 its forwarder answers, and partition groups
		// keep no client table (actors/partition_forward.go), so such a send
		// may be stored twice: counted, not failed.
		v := faultcheck.Check(h, names, copies)
		for _, p := range v.Problems {
			if !strings.HasSuffix(p, "stored twice") {
				t.Fatalf("stream %d: %+v", s, v)
			}
		}
		t.Logf("stream %d: %d sends acknowledged (%d failed, %d stored twice), lost %d, identical on %v", s, len(h.Order), h.Failures, v.Duplicates, v.Lost, names)
	}
}

// balancedStatus polls every node's ClusterStatus (skipping down ones)
// until, taking each partition's primary from a node that is a member of
// its group, every partition is led by its preferred primary and each of
// the n nodes leads partitions/n; it returns a status with the placement.
func balancedStatus(ctx context.Context, t *testing.T, clients []string, skip map[int]bool, partitions int, what string) wire.ClusterStatusReply {
	t.Helper()
	var last string
	// One session per node for the whole wait, made again only after an
	// error: a login every half second on five nodes (Argon2id each) was
	// most of a loaded machine's work, and starved the cluster it watched.
	conns := make([]*client.Client, len(clients))
	defer func() {
		for _, c := range conns {
			if c != nil {
				_ = c.Close()
			}
		}
	}()
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		primaries := map[uint64]uint8{}
		var any wire.ClusterStatusReply
		for i, addr := range clients {
			if skip[i] {
				continue
			}
			if conns[i] == nil {
				c, err := client.Connect(ctx, client.Options{Address: addr, Username: "iggy", Password: "iggy", StayOnNode: true, RequestTimeout: 3 * time.Second})
				if err != nil {
					continue
				}
				conns[i] = c
			}
			st, err := conns[i].ClusterStatus(ctx)
			if err != nil {
				_ = conns[i].Close()
				conns[i] = nil
				continue
			}
			any = st
			for _, p := range st.Partitions {
				if p.Voters&(1<<i) != 0 && p.Primary != wire.NoPrimary {
					primaries[uint64(p.Stream)<<32|uint64(p.Partition)] = p.Primary
				}
			}
		}
		last = fmt.Sprintf("%d partitions placed, primaries %v", len(any.Partitions), primaries)
		if len(any.Partitions) != partitions {
			continue
		}
		led := map[uint8]int{}
		ok := true
		for _, p := range any.Partitions {
			pr, known := primaries[uint64(p.Stream)<<32|uint64(p.Partition)]
			if !known || pr != p.Preferred || p.Moving() {
				ok = false
			}
			led[pr]++
		}
		for id := range clients {
			if led[uint8(id)] != partitions/len(clients) {
				ok = false
			}
		}
		if ok {
			st := any
			for i := range st.Partitions {
				st.Partitions[i].Primary = primaries[uint64(st.Partitions[i].Stream)<<32|uint64(st.Partitions[i].Partition)]
			}
			return st
		}
	}
	t.Fatalf("%s: %s", what, last)
	return wire.ClusterStatusReply{}
}

// ledBy counts the partitions a status (from balancedStatus) says id leads.
func ledBy(st wire.ClusterStatusReply, id uint8) int {
	n := 0
	for _, p := range st.Partitions {
		if p.Primary == id {
			n++
		}
	}
	return n
}

// streamPayloads reads partition 0 of stream's topic 0 at addr (a member
// serves its own copy) until it holds want messages or 15 s passed.
func streamPayloads(t *testing.T, addr string, stream uint32, want int) [][]byte {
	t.Helper()
	ctx := ctxWithin(t, 2*time.Minute)
	// Every attempt logs in (Argon2id): twice a second, not ten times,
	// so a loaded machine's retries do not starve the member they wait for.
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		got, err := faultcheck.ReadPartition(ctx, client.Options{Address: addr, Username: "iggy", Password: "iggy", StayOnNode: true}, wire.ID(stream), wire.ID(0))
		if err != nil {
			// A member still settling (a view change, a rejoin) answers
			// 58 or drops a slow read: asked again until the deadline.
			if time.Now().After(deadline) {
				t.Fatalf("%s: %v", addr, err)
			}
			continue
		}
		if len(got) >= want || time.Now().After(deadline) {
			return got
		}
	}
}
