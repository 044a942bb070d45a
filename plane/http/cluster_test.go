package httpplane_test

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"iggynode/actors"
	"iggynode/config"
	replicaplane "iggynode/plane/replica"
)

// startHTTPCluster starts n in-process replicas on loopback port 0 with
// cluster auth (so the JWT key is cluster-wide, http.md 1.3.2) and
// failover timeouts of about a second, and gives every node the roster's
// HTTP ports (for forwarding to the primary, 2.7).
func startHTTPCluster(t *testing.T, n int) []*actors.Node {
	t.Helper()
	var nodes []*actors.Node
	for i := range n {
		cfg := nodeConfig(t.TempDir())
		cfg.Cluster.Enabled, cfg.Cluster.Name, cfg.Cluster.ReplicaID = true, "http-cluster", i
		cfg.Cluster.Auth.Enabled, cfg.Cluster.Auth.SharedSecret = true, strings.Repeat("k", 32)
		cfg.Cluster.HeartbeatTimeout, cfg.Cluster.CommitBroadcastInterval = config.Duration(time.Second), config.Duration(100*time.Millisecond)
		cfg.Cluster.ViewChangeStatusTimeout = config.Duration(2 * time.Second)
		cfg.Cluster.RequestStartViewRetransmitInterval = config.Duration(200 * time.Millisecond)
		for j := range n {
			cfg.Cluster.Nodes = append(cfg.Cluster.Nodes, config.Node{Name: fmt.Sprintf("node-%d", j), IP: "127.0.0.1", ReplicaID: j})
		}
		node, err := actors.Start(actors.Options{Config: cfg, RootUsername: "iggy", RootPassword: "iggy", Logger: logger(),
			ReplicaListen: "127.0.0.1:0", ReconnectPeriod: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, node)
	}
	var peers []replicaplane.Peer
	var roster []config.Node
	for i, node := range nodes {
		peers = append(peers, replicaplane.Peer{ID: uint8(i), Addr: node.ReplicaAddr()})
		port := func(addr string) uint16 {
			_, p, _ := net.SplitHostPort(addr)
			v, _ := strconv.Atoi(p)
			return uint16(v)
		}
		roster = append(roster, config.Node{Name: fmt.Sprintf("node-%d", i), IP: "127.0.0.1", ReplicaID: i,
			Ports: config.Ports{TCP: port(node.TCPAddr()), HTTP: port(node.HTTPAddr())}})
	}
	for _, node := range nodes {
		if err := node.SetReplicaRoster(peers); err != nil {
			t.Fatal(err)
		}
		node.SetClientRoster(roster)
	}
	return nodes
}

// eventually retries fn until it reports true or the deadline passes.
func eventually(t *testing.T, what string, within time.Duration, fn func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ok, last := fn()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still %s after %v", what, last, within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// pollCount polls partition 0 from the start and returns how many
// messages it holds.
func pollCount(t *testing.T, base, tok string) (int, string) {
	r := do(t, base, "GET", "/streams/orders/topics/events/messages?kind=first&count=100", tok, nil)
	if r.status != 200 {
		return -1, fmt.Sprintf("%d %s", r.status, r.body)
	}
	var p struct{ Count int }
	r.json(t, &p)
	return p.Count, string(r.body)
}

// http.md 2.7 in a cluster: any node answers any route. A client logs in
// on a backup, creates a stream and a topic there (relayed to the
// primary), sends and polls there (the binary plane forwards partition
// writes); then the primary dies and the same token goes on working on
// the survivors, reads included.
func TestClusterAnyNodeAndFailover(t *testing.T) {
	nodes := startHTTPCluster(t, 3)
	closed := make([]bool, 3)
	t.Cleanup(func() {
		for i, n := range nodes {
			if !closed[i] {
				_ = n.Close()
			}
		}
	})
	backup := nodes[2].HTTPURL()
	var tok string
	eventually(t, "login on a backup", 20*time.Second, func() (bool, string) {
		r := do(t, backup, "POST", "/users/login", "", map[string]string{"username": "iggy", "password": "iggy"})
		if r.status != 200 {
			return false, fmt.Sprintf("%d %s", r.status, r.body)
		}
		var id struct {
			AccessToken struct{ Token string } `json:"access_token"`
		}
		r.json(t, &id)
		tok = id.AccessToken.Token
		return true, ""
	})
	for _, step := range []struct{ path, body string }{
		{"/streams", `{"name":"orders"}`},
		{"/streams/orders/topics", `{"name":"events","partitions_count":1}`},
	} {
		eventually(t, "create "+step.path+" on a backup", 20*time.Second, func() (bool, string) {
			r := do(t, backup, "POST", step.path, tok, step.body)
			return r.status == 200, fmt.Sprintf("%d %s", r.status, r.body)
		})
	}
	send := func(base, payload string) (bool, string) {
		r := do(t, base, "POST", "/streams/orders/topics/events/messages", tok,
			`{"partitioning":{"kind":"partition_id","value":"AAAAAA=="},"messages":[{"payload":"`+payload+`"}]}`)
		return r.status == 201, fmt.Sprintf("%d %s", r.status, r.body)
	}
	eventually(t, "send on a backup", 20*time.Second, func() (bool, string) { return send(backup, "b25l") })
	eventually(t, "send again", 20*time.Second, func() (bool, string) { return send(backup, "dHdv") })
	eventually(t, "poll on the backup", 20*time.Second, func() (bool, string) {
		n, body := pollCount(t, backup, tok)
		return n == 2, body
	})
	// What made the backup's writes work is the relay: a request that says
	// it was relayed already is not relayed again, and a backup refuses it
	// with 58 (2.7.2).
	if r := do(t, backup, "POST", "/streams", tok, `{"name":"not-relayed"}`, "Iggy-Forwarded", "1"); r.status != 503 ||
		!strings.Contains(string(r.body), `"id":58`) || r.header.Get("Retry-After") != "1" {
		t.Fatalf("relayed request on a backup: %d %v %s", r.status, r.header, r.body)
	}
	// Every node knows the stream (reads are local).
	for i, n := range nodes {
		eventually(t, fmt.Sprintf("stream on node %d", i), 10*time.Second, func() (bool, string) {
			r := do(t, n.HTTPURL(), "GET", "/streams/orders", tok, nil)
			return r.status == 200, fmt.Sprintf("%d %s", r.status, r.body)
		})
	}

	// The primary (replica 0 in view 0) dies.
	_ = nodes[0].Close()
	closed[0] = true
	// 60 s, as the e2e failovers allow: under .ci/run's parallel race
	// tests on two cores the metadata group's election has taken over 30.
	eventually(t, "create a stream after the failover", 60*time.Second, func() (bool, string) {
		r := do(t, backup, "POST", "/streams", tok, `{"name":"after"}`)
		if r.status == 400 && strings.Contains(string(r.body), "already_exists") {
			return true, "" // an earlier attempt committed
		}
		return r.status == 200, fmt.Sprintf("%d %s", r.status, r.body)
	})
	eventually(t, "send after the failover", 60*time.Second, func() (bool, string) { return send(backup, "dGhyZWU=") })
	for _, i := range []int{1, 2} {
		eventually(t, fmt.Sprintf("poll on node %d after the failover", i), 20*time.Second, func() (bool, string) {
			n, body := pollCount(t, nodes[i].HTTPURL(), tok)
			return n == 3, body
		})
	}
	r := do(t, nodes[1].HTTPURL(), "GET", "/cluster/metadata", tok, nil)
	if r.status != 200 || !strings.Contains(string(r.body), `"http":`) {
		t.Fatalf("cluster metadata: %d %s", r.status, r.body)
	}
}
