package replicaplane

import (
	"bytes"
	"fmt"
	"net"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"iggynode/wire"
)

// The roster changes at run time (docs/reconfiguration.md, "Links"): the
// peer set follows SetRoster, links open and close with it, and the
// acceptor's "replica < replica_count" (3.5 step 2) is "replica is in the
// current roster".

func setRosterAll(t *testing.T, roster []Peer, nodes ...testNode) {
	t.Helper()
	for _, n := range nodes {
		if err := n.SetRoster(roster); err != nil {
			t.Fatalf("replica %d: SetRoster: %v", n.cfg.Self, err)
		}
	}
}

// meshed waits until every pair of nodes is connected on both ends.
func meshed(t *testing.T, nodes ...testNode) {
	t.Helper()
	for _, a := range nodes {
		for _, b := range nodes {
			if a.cfg.Self != b.cfg.Self {
				eventually(t, fmt.Sprintf("%d connected to %d", a.cfg.Self, b.cfg.Self),
					func() bool { return connected(a, b.cfg.Self) })
			}
		}
	}
}

// hasFrame reports whether n received whole from replica from.
func hasFrame(n testNode, from uint8, whole []byte) bool {
	return slices.ContainsFunc(n.rec.got(from), func(f []byte) bool { return bytes.Equal(f, whole) })
}

// exchangeAll sends one frame numbered seq along every ordered pair and
// waits for each to arrive.
func exchangeAll(t *testing.T, seq uint64, nodes ...testNode) {
	t.Helper()
	for _, a := range nodes {
		for _, b := range nodes {
			if a.cfg.Self == b.cfg.Self {
				continue
			}
			head, whole := frameOf(9, a.cfg.Self, seq, nil)
			sendAll(t, a, b.cfg.Self, [][2][]byte{{head, nil}})
			eventually(t, fmt.Sprintf("frame %d from %d at %d", seq, a.cfg.Self, b.cfg.Self),
				func() bool { return hasFrame(b, a.cfg.Self, whole) })
		}
	}
}

// peerIDs are the ids Stats lists, ascending.
func peerIDs(n testNode) []uint8 {
	var ids []uint8
	for id := range n.Stats() {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// A three-node mesh grows to four with id 5 (ids need not be contiguous):
// every node dials the higher ids of the new roster, accepts the lower
// ones, and frames flow along every pair.
func TestRosterGrowsWithANonContiguousID(t *testing.T) {
	nodes := startCluster(t, 3, nil)
	meshed(t, nodes...)
	n5 := startNode(t, rosterConfig(5, 0, 1, 2, 5))
	head, _ := frameOf(9, 0, 1, nil)
	if nodes[0].Send(5, head, nil) {
		t.Fatal("Send to 5 before it is in the roster succeeded")
	}
	if _, ok := nodes[0].Stats()[5]; ok {
		t.Fatal("Stats lists 5 before it is in the roster")
	}

	all := append(slices.Clone(nodes), n5)
	setRosterAll(t, peersOf(all...), all...)
	meshed(t, all...)
	exchangeAll(t, 1, all...)
	for _, n := range all {
		var want []uint8
		for _, m := range all {
			if m.cfg.Self != n.cfg.Self {
				want = append(want, m.cfg.Self)
			}
		}
		if got := peerIDs(n); !slices.Equal(got, want) {
			t.Errorf("replica %d: Stats lists %v, want %v", n.cfg.Self, got, want)
		}
		if s, ok := n.Stats()[5]; n.cfg.Self != 5 && (!ok || !s.Outbound) {
			t.Errorf("replica %d -> 5: %+v, want an outbound link (3.1 rule 2)", n.cfg.Self, s)
		}
	}
	if hs := n5.Handshakes(); hs.Accepted != 3 || hs.Dialed != 0 {
		t.Errorf("replica 5: accepted %d dialed %d, want 3 and 0", hs.Accepted, hs.Dialed)
	}
	if hs := nodes[0].Handshakes(); hs.Dialed != 3 {
		t.Errorf("replica 0: dialed %d, want 3 (1, 2 and 5)", hs.Dialed)
	}
}

// A peer removed from every other node's roster loses its links and is
// not linked again: its Hellos are refused (with auth, a Challenge
// carrying DirectionalRule, 3.6 step 2), nobody dials it, and Send to it
// returns false. The rest of the mesh is untouched.
func TestRemovedPeerIsClosedAndUnreachable(t *testing.T) {
	nodes := startCluster(t, 4, withAuth(secretOld, nil))
	meshed(t, nodes...)
	exchangeAll(t, 1, nodes...)

	rest := []testNode{nodes[0], nodes[2], nodes[3]}
	setRosterAll(t, peersOf(rest...), rest...)
	for _, n := range rest {
		eventually(t, fmt.Sprintf("%d sees 1 down", n.cfg.Self), func() bool { return n.rec.downs(1) == 1 })
		eventually(t, fmt.Sprintf("1 sees %d down", n.cfg.Self), func() bool { return nodes[1].rec.downs(n.cfg.Self) == 1 })
	}
	for _, n := range nodes[2:] { // the ids 1 dials
		eventually(t, fmt.Sprintf("%d refuses 1's redial", n.cfg.Self), func() bool {
			return n.Handshakes().Refused[wire.HandshakeDirectionalRule] > 0
		})
	}
	before := len(nodes[1].rec.got(0))
	head, _ := frameOf(9, 0, 2, nil)
	for _, n := range rest {
		if n.Send(1, head, nil) {
			t.Errorf("replica %d: Send to the removed 1 succeeded", n.cfg.Self)
		}
		if _, ok := n.Stats()[1]; ok {
			t.Errorf("replica %d: Stats still lists the removed 1", n.cfg.Self)
		}
	}
	never(t, "the removed 1 linked again", 300*time.Millisecond, func() bool {
		return connected(nodes[1], 0) || connected(nodes[1], 2) || connected(nodes[1], 3)
	})
	if hs := nodes[1].Handshakes(); hs.PeerRefused[wire.HandshakeDirectionalRule] == 0 {
		t.Errorf("replica 1: no DirectionalRule Challenge received, handshakes %+v", hs)
	}
	exchangeAll(t, 3, rest...)
	if got := len(nodes[1].rec.got(0)); got != before {
		t.Errorf("replica 1 received %d frames from 0 after its removal", got-before)
	}
}

// Frames a removed peer's link still held are dropped with the link and
// counted: the id's counters survive, so adding it again shows them.
func TestRemovedPeerCountsItsQueuedFramesAsDropped(t *testing.T) {
	ln, conns := fakePeer(t)
	cfg := rosterConfig(0, 0, 1)
	cfg.PeerQueueCapacity = 4
	n := startNode(t, cfg)
	linkToFakePeer(t, n, ln, conns)
	// The fake peer never reads: the queue fills and stays full.
	body := make([]byte, 1<<20)
	head, _ := frameOf(25, 0, 0, body)
	refused := 0
	for i := 0; i < 2000 && refused < 10; i++ {
		if !n.Send(1, head, body) {
			refused++
		}
	}
	if refused < 10 {
		t.Fatal("the queue never filled")
	}
	before := n.Stats()[1].Dropped

	if err := n.SetRoster([]Peer{{0, ""}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "PeerDown(1)", func() bool { return n.rec.downs(1) == 1 })
	if n.Send(1, head, body) {
		t.Fatal("Send to the removed 1 succeeded")
	}
	if len(n.Stats()) != 0 {
		t.Fatalf("Stats %v, want no peers", n.Stats())
	}
	if err := n.SetRoster([]Peer{{0, ""}, {1, ""}}); err != nil {
		t.Fatal(err)
	}
	s := n.Stats()[1]
	if s.Connected || s.Dropped < before+uint64(cfg.PeerQueueCapacity) {
		t.Fatalf("after removal and re-adding: %+v, want unconnected and at least %d dropped (%d before plus the full queue)",
			s, before+uint64(cfg.PeerQueueCapacity), before)
	}
}

// A replica moved to another host (3.1; docs/reconfiguration.md, "Links"):
// node 2 stops, a new node 2 starts on another port, and once the others'
// rosters carry its address frames reach it both ways.
func TestPeerAtANewAddressIsReached(t *testing.T) {
	nodes := startCluster(t, 3, nil)
	meshed(t, nodes...)
	exchangeAll(t, 1, nodes...)

	moved := startNode(t, baseConfig(2, 3)) // started first: its port differs from the old one's
	if err := nodes[2].Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "0 and 1 see the old 2 down", func() bool { return nodes[0].rec.downs(2) == 1 && nodes[1].rec.downs(2) == 1 })
	nodes[2] = moved
	setRosterAll(t, rosterOf(nodes), nodes...)
	meshed(t, nodes...)
	exchangeAll(t, 2, nodes...)
	if moved.rec.ups(0) != 1 || moved.rec.ups(1) != 1 {
		t.Fatalf("new 2: PeerUp(0) %d PeerUp(1) %d, want 1 each", moved.rec.ups(0), moved.rec.ups(1))
	}
}

// An address change closes the connection this node dialed, even while
// the old host still answers, so the new host is reached; a connection
// accepted from a peer whose address changed stays (the acceptor cannot
// tell which host dialed it).
func TestAddressChangeClosesTheDialedLinkAndKeepsTheAcceptedOne(t *testing.T) {
	nodes := startCluster(t, 3, nil)
	meshed(t, nodes...)
	old2 := nodes[2]
	moved := startNode(t, baseConfig(2, 3))
	nodes[2] = moved
	roster := rosterOf(nodes)
	setRosterAll(t, roster, nodes[0], nodes[1])

	eventually(t, "the old 2 loses both links", func() bool { return old2.rec.downs(0) == 1 && old2.rec.downs(1) == 1 })
	meshed(t, nodes...)
	exchangeAll(t, 1, nodes...)
	if got := len(old2.rec.got(0)) + len(old2.rec.got(1)); got != 0 {
		t.Fatalf("the old 2 received %d frames", got)
	}

	// Node 1 learns another address for 0, which dials 1: the accepted
	// link stays.
	roster[0].Addr = "127.0.0.1:1"
	if err := nodes[1].SetRoster(roster); err != nil {
		t.Fatal(err)
	}
	never(t, "1 closes the link accepted from 0", 300*time.Millisecond, func() bool {
		return nodes[1].rec.downs(0) != 0 || !connected(nodes[1], 0)
	})
	exchangeAll(t, 2, nodes[0], nodes[1])
}

// 3.5 step 2 with a roster that changes: a Hello from a lower id that is
// not in the roster is refused like any other (DirectionalRule, counted);
// once SetRoster adds it, it is accepted; removed again, its link closes
// and its next Hello is refused.
func TestHelloFromOutsideTheRosterIsRefused(t *testing.T) {
	var zero [32]byte
	n := startNode(t, rosterConfig(3, 0, 2, 3))
	refusals := func() uint64 { return n.Handshakes().Refused[wire.HandshakeDirectionalRule] }

	c := rawDial(t, n.Addr())
	mustWrite(t, c, helloBytes(clusterIDBytes(t), 1, zero))
	expectClosed(t, c)
	eventually(t, "refusal counted", func() bool { return refusals() == 1 })
	if n.rec.ups(1) != 0 {
		t.Fatal("a Hello from 1, not in the roster, was installed")
	}
	c0 := rawDial(t, n.Addr())
	mustWrite(t, c0, helloBytes(clusterIDBytes(t), 0, zero))
	eventually(t, "0, in the roster, installed", func() bool { return n.rec.ups(0) == 1 })

	if err := n.SetRoster([]Peer{{ID: 0}, {ID: 1}, {ID: 2}, {ID: 3}}); err != nil {
		t.Fatal(err)
	}
	c1 := rawDial(t, n.Addr())
	mustWrite(t, c1, helloBytes(clusterIDBytes(t), 1, zero))
	eventually(t, "1, added, installed", func() bool { return n.rec.ups(1) == 1 })

	if err := n.SetRoster([]Peer{{ID: 0}, {ID: 2}, {ID: 3}}); err != nil {
		t.Fatal(err)
	}
	expectClosed(t, c1)
	eventually(t, "PeerDown(1)", func() bool { return n.rec.downs(1) == 1 })
	again := rawDial(t, n.Addr())
	mustWrite(t, again, helloBytes(clusterIDBytes(t), 1, zero))
	expectClosed(t, again)
	eventually(t, "second refusal counted", func() bool { return refusals() == 2 })
	if n.rec.downs(0) != 0 || !connected(n, 0) {
		t.Fatal("removing 1 closed 0's link")
	}

	// With auth, a dialer that offered a nonce is told why (3.6 step 2).
	cfg := rosterConfig(3, 0, 2, 3)
	withAuth(secretOld, nil)(&cfg)
	a := startNode(t, cfg)
	ca := rawDial(t, a.Addr())
	mustWrite(t, ca, helloBytes(clusterIDBytes(t), 1, nonceOf(0x22)))
	checkChallengeReject(t, read256(t, ca), 3, byte(wire.HandshakeDirectionalRule))
	expectClosed(t, ca)
	eventually(t, "refusal counted with auth", func() bool { return a.Handshakes().Refused[wire.HandshakeDirectionalRule] == 1 })
}

// A joiner starts with the cluster's bootstrap roster, which does not name
// it, and its own Listen address; it dials nobody lower and is dialed by
// the lower ids once their rosters carry its address.
func TestJoinerNotInItsRosterIsDialedByLowerIDs(t *testing.T) {
	nodes := startCluster(t, 3, nil)
	meshed(t, nodes...)
	cfg := baseConfig(3, 0)
	cfg.Roster = rosterOf(nodes)
	joiner := startNode(t, cfg)
	never(t, "the joiner linked before any roster names it", 200*time.Millisecond, func() bool {
		return connected(joiner, 0) || connected(joiner, 1) || connected(joiner, 2)
	})

	all := append(slices.Clone(nodes), joiner)
	setRosterAll(t, peersOf(all...), nodes...)
	meshed(t, all...)
	exchangeAll(t, 1, all...)
	if got := peerIDs(joiner); !slices.Equal(got, []uint8{0, 1, 2}) {
		t.Errorf("joiner: Stats lists %v, want [0 1 2]", got)
	}
	if hs := joiner.Handshakes(); hs.Accepted != 3 || hs.Dialed != 0 {
		t.Errorf("joiner: accepted %d dialed %d, want 3 and 0", hs.Accepted, hs.Dialed)
	}
}

// silentAcceptor accepts every connection and reads nothing: an auth
// dialer's handshake with it waits for a Challenge that never comes.
func silentAcceptor(t *testing.T) (net.Listener, chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan struct{}, 64)
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			accepted <- struct{}{}
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return ln, accepted
}

// Peers added and removed in a loop leave no goroutine behind: a removed
// peer's link ends (reader, writer), and so does a dial whose handshake is
// in flight, at once rather than at HandshakeGrace (one minute here).
func TestRosterChurnLeavesNoGoroutines(t *testing.T) {
	silent, accepted := silentAcceptor(t)
	mod := func(c *Config) {
		withAuth(secretOld, nil)(c)
		c.HandshakeGrace = time.Minute
	}
	cfg0, cfg1 := rosterConfig(0, 0), rosterConfig(1, 1)
	mod(&cfg0)
	mod(&cfg1)
	n0, n1 := startNode(t, cfg0), startNode(t, cfg1)
	start := runtime.NumGoroutine()

	const rounds = 10
	head, _ := frameOf(9, 0, 1, nil)
	// Send and Stats race SetRoster throughout (go test -race checks the
	// peer table's lock-free reads).
	stop, sending := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sending)
		for {
			select {
			case <-stop:
				return
			default:
			}
			for to := range uint8(3) {
				n0.Send(to, head, nil)
			}
			_ = n0.Stats()
			runtime.Gosched()
		}
	}()
	for i := range rounds {
		if err := n0.SetRoster([]Peer{{0, ""}, {1, n1.Addr().String()}, {2, silent.Addr().String()}}); err != nil {
			t.Fatal(err)
		}
		if err := n1.SetRoster([]Peer{{0, n0.Addr().String()}, {1, ""}}); err != nil {
			t.Fatal(err)
		}
		eventually(t, "link up", func() bool { return connected(n0, 1) && connected(n1, 0) })
		select {
		case <-accepted: // 0's handshake with 2 now waits for a Challenge
		case <-time.After(waitLimit):
			t.Fatal("0 never dialed the silent 2")
		}
		sendAll(t, n0, 1, [][2][]byte{{head, nil}})
		if err := n0.SetRoster([]Peer{{0, ""}}); err != nil {
			t.Fatal(err)
		}
		if err := n1.SetRoster([]Peer{{1, ""}}); err != nil {
			t.Fatal(err)
		}
		eventually(t, "link down", func() bool { return n0.rec.downs(1) == i+1 && n1.rec.downs(0) == i+1 })
	}
	close(stop)
	<-sending
	const slack = 3
	deadline := time.Now().Add(waitLimit)
	for runtime.NumGoroutine() > start+slack {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines after %d rounds, %d at the start:\n%s", runtime.NumGoroutine(), rounds, start,
				strings.Join(leakedGoroutines(), "\n\n"))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if hs := n0.Handshakes(); hs.Dialed != rounds {
		t.Errorf("0: dialed %d, want %d", hs.Dialed, rounds)
	}
}
