package replicaplane

import (
	"bytes"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// replica-plane.md 3.1 rules 1-2: one connection per pair, dialed by the
// lower id; node i dials every j > i and accepts every j < i.
func TestMeshFollowsTheDirectionalRule(t *testing.T) {
	nodes := startCluster(t, 3, nil)
	for i, n := range nodes {
		for j := range nodes {
			if i == j {
				continue
			}
			eventually(t, fmt.Sprintf("%d connected to %d", i, j), func() bool { return connected(n, uint8(j)) })
		}
	}
	for i, n := range nodes {
		stats := n.Stats()
		if len(stats) != 2 {
			t.Fatalf("node %d: stats for %d peers, want 2", i, len(stats))
		}
		for j, s := range stats {
			if want := int(j) > i; s.Outbound != want {
				t.Errorf("node %d -> %d: outbound %v, want %v", i, j, s.Outbound, want)
			}
		}
		hs := n.Handshakes()
		wantDialed, wantAccepted := uint64(2-i), uint64(i)
		if hs.Dialed != wantDialed || hs.Accepted != wantAccepted || hs.Duplicates != 0 {
			t.Errorf("node %d: dialed %d accepted %d duplicates %d, want %d %d 0",
				i, hs.Dialed, hs.Accepted, hs.Duplicates, wantDialed, wantAccepted)
		}
		for j := range nodes {
			if j != i && n.rec.ups(uint8(j)) != 1 {
				t.Errorf("node %d: PeerUp(%d) called %d times, want 1", i, j, n.rec.ups(uint8(j)))
			}
		}
	}
}

// sendAll sends frames in order, retrying a frame the full queue refused.
func sendAll(t *testing.T, n testNode, to uint8, frames [][2][]byte) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for _, f := range frames {
		for !n.Send(to, f[0], f[1]) {
			if time.Now().After(deadline) {
				t.Fatalf("send to %d: queue never drained", to)
			}
			time.Sleep(100 * time.Microsecond)
		}
	}
}

// 3.1 rule 4 (both directions on one connection), 3.2 (order per link),
// and the Envelope shape: header and body sent separately, received whole.
func TestFramesFlowBothWaysInOrder(t *testing.T) {
	nodes := startCluster(t, 2, func(c *Config) { c.MaxBatch = 16 })
	eventually(t, "link up", func() bool { return connected(nodes[0], 1) && connected(nodes[1], 0) })

	const count = 600
	build := func(from uint8) (out [][2][]byte, want [][]byte) {
		for i := range count {
			body := bytes.Repeat([]byte{byte(i)}, (i*977)%70000) // every 70000th empty
			if i%5 == 0 {
				body = nil
			}
			head, whole := frameOf(6, from, uint64(i), body)
			out = append(out, [2][]byte{head, body})
			want = append(want, whole)
		}
		return out, want
	}
	out0, want0 := build(0)
	out1, want1 := build(1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sendAll(t, nodes[1], 0, out1)
	}()
	sendAll(t, nodes[0], 1, out0)
	<-done

	check := func(recv testNode, from uint8, want [][]byte) {
		t.Helper()
		eventually(t, fmt.Sprintf("all frames from %d", from), func() bool { return len(recv.rec.got(from)) == count })
		for i, f := range recv.rec.got(from) {
			if !bytes.Equal(f, want[i]) {
				t.Fatalf("frame %d from %d: got seq %d len %d, want seq %d len %d", i, from,
					binary.LittleEndian.Uint64(f[128:]), len(f), i, len(want[i]))
			}
		}
	}
	check(nodes[1], 0, want0)
	check(nodes[0], 1, want1)
	for i, n := range nodes {
		s := n.Stats()[uint8(1-i)]
		if s.Sent != count || s.Received != count {
			t.Errorf("node %d: sent %d received %d, want %d each", i, s.Sent, s.Received, count)
		}
	}
}

// 3.1 rules 3 and 7: a lost peer is noticed by EOF and redialed on the
// next sweep, whichever side restarts.
func TestRestartedPeerIsReconnected(t *testing.T) {
	nodes := startCluster(t, 2, nil)
	eventually(t, "link up", func() bool { return connected(nodes[0], 1) })

	restart := func(i int) testNode {
		t.Helper()
		addr := nodes[i].Addr().String()
		if err := nodes[i].Close(); err != nil {
			t.Fatalf("close %d: %v", i, err)
		}
		cfg := baseConfig(uint8(i), 2)
		cfg.Listen = addr
		n := startNode(t, cfg)
		if err := n.SetRoster(rosterOf(nodes)); err != nil {
			t.Fatal(err)
		}
		return n
	}
	exchange := func(seq uint64) {
		t.Helper()
		for from := range 2 {
			to := uint8(1 - from)
			head, whole := frameOf(9, uint8(from), seq, nil)
			sendAll(t, nodes[from], to, [][2][]byte{{head, nil}})
			eventually(t, "frame after reconnect", func() bool {
				got := nodes[to].rec.got(uint8(from))
				return len(got) > 0 && bytes.Equal(got[len(got)-1], whole)
			})
		}
	}
	exchange(1)

	// The acceptor (1) restarts: 0 sees EOF, then redials.
	nodes[1] = restart(1)
	eventually(t, "0 sees 1 down", func() bool { return nodes[0].rec.downs(1) == 1 })
	eventually(t, "0 redials 1", func() bool { return connected(nodes[0], 1) && connected(nodes[1], 0) })
	exchange(2)

	// The dialer (0) restarts: 1 sees EOF, the new 0 dials.
	nodes[0] = restart(0)
	eventually(t, "1 sees 0 down", func() bool { return nodes[1].rec.downs(0) == 1 })
	eventually(t, "new 0 dials 1", func() bool { return connected(nodes[0], 1) && connected(nodes[1], 0) })
	exchange(3)
	if got := nodes[1].rec.ups(0); got != 2 {
		t.Errorf("node 1: PeerUp(0) %d times, want 2", got)
	}
}

// fakePeer is a listener that plays replica `id` with auth disabled: it
// accepts one connection and reads the Hello, then reads nothing more.
// linkToFakePeer gives node 0 the fake peer (fakePeer) as replica 1 and
// waits until it has dialed it and installed the link.
func linkToFakePeer(t *testing.T, n testNode, ln net.Listener, conns chan net.Conn) {
	t.Helper()
	if err := n.SetRoster([]Peer{{0, ""}, {1, ln.Addr().String()}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-conns:
	case <-time.After(waitLimit):
		t.Fatal("node 0 never dialed the fake peer")
	}
	eventually(t, "link up", func() bool { return connected(n, 1) })
}

func fakePeer(t *testing.T) (net.Listener, chan net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	conns := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		t.Cleanup(func() { _ = c.Close() })
		h := make([]byte, 256)
		if _, err := io.ReadFull(c, h); err == nil {
			conns <- c
		}
	}()
	return ln, conns
}

// 3.2 rules 1 and 4: Send never blocks; an unconnected peer or a full
// queue drops the frame and counts it.
func TestFullQueueDropsInsteadOfBlocking(t *testing.T) {
	ln, conns := fakePeer(t)
	cfg := baseConfig(0, 2)
	cfg.PeerQueueCapacity = 4
	n := startNode(t, cfg)

	head, _ := frameOf(9, 0, 1, nil)
	if n.Send(1, head, nil) {
		t.Fatal("Send to an unconnected peer succeeded")
	}
	if s := n.Stats()[1]; s.Dropped != 1 || s.Connected {
		t.Fatalf("after a send to an unconnected peer: %+v, want 1 dropped", s)
	}

	linkToFakePeer(t, n, ln, conns)

	// The fake peer never reads: the socket buffers fill, the writer
	// blocks, the queue fills, and Send must start refusing, fast.
	body := make([]byte, 1<<20)
	head, _ = frameOf(25, 0, 0, body)
	accepted, refused := 0, 0
	for i := 0; i < 2000 && refused < 10; i++ {
		start := time.Now()
		if n.Send(1, head, body) {
			accepted++
		} else {
			refused++
		}
		if d := time.Since(start); d > 100*time.Millisecond {
			t.Fatalf("Send blocked for %v", d)
		}
	}
	if refused < 10 {
		t.Fatalf("%d frames accepted, none refused: the queue never filled", accepted)
	}
	s := n.Stats()[1]
	if s.Dropped != uint64(refused)+1 {
		t.Errorf("dropped %d, want %d", s.Dropped, refused+1)
	}
	if !s.Connected {
		t.Error("a full queue must not close the link")
	}
}

// 1.1 rules 1, 3, 5 on an installed link, checked with a hand-driven dialer
// (replica 0, auth disabled) against node 1.
func TestConnectionLevelFrameRules(t *testing.T) {
	const maxFrame = 4096
	type frameCase struct {
		name    string
		size    uint32
		cmd     byte
		closes  bool
		deliver bool
	}
	cases := []frameCase{
		{"largest frame", maxFrame, 6, false, true},
		{"header only", 256, 9, false, true},
		{"request 5 kept", 300, 5, false, true},
		{"oversize", maxFrame + 1, 6, true, false},
		{"huge", 0xFFFF_FFFF, 6, true, false},
		{"undersize", 255, 9, true, false},
		{"zero size", 0, 9, true, false},
		{"command 30", 256, 30, true, false},
		{"command 255", 256, 255, true, false},
	}
	for _, cmd := range []byte{0, 1, 2, 3, 4, 8, 13, 14, 15, 16} {
		cases = append(cases, frameCase{fmt.Sprintf("command %d dropped", cmd), 512, cmd, false, false})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := baseConfig(1, 2)
			cfg.MaxFrameSize = maxFrame
			n := startNode(t, cfg)
			c := rawDial(t, n.Addr())
			var zero [32]byte
			mustWrite(t, c, helloBytes(clusterIDBytes(t), 0, zero))
			eventually(t, "installed", func() bool { return n.rec.ups(0) == 1 })

			head := make([]byte, 256)
			binary.LittleEndian.PutUint32(head[48:], tc.size)
			head[60] = tc.cmd
			frame := head
			if tc.size > 256 && tc.size <= maxFrame {
				frame = append(head, bytes.Repeat([]byte{0xAB}, int(tc.size)-256)...)
			}
			mustWrite(t, c, frame)
			if tc.closes {
				eventually(t, "PeerDown", func() bool { return n.rec.downs(0) == 1 })
				_ = c.SetReadDeadline(time.Now().Add(time.Second))
				expectClosed(t, c)
				if got := len(n.rec.got(0)); got != 0 {
					t.Fatalf("%d frames delivered before the close", got)
				}
				return
			}
			// A header-only marker proves the link survived and the frame
			// before it was fully consumed.
			marker := make([]byte, 256)
			binary.LittleEndian.PutUint32(marker[48:], 256)
			marker[60], marker[128] = 9, 0x77
			mustWrite(t, c, marker)
			want := [][]byte{marker}
			if tc.deliver {
				want = [][]byte{frame, marker}
			}
			eventually(t, "marker delivered", func() bool { return len(n.rec.got(0)) == len(want) })
			for i, f := range n.rec.got(0) {
				if !bytes.Equal(f, want[i]) {
					t.Fatalf("frame %d differs", i)
				}
			}
			s := n.Stats()[0]
			wantIgnored := uint64(1)
			if tc.deliver {
				wantIgnored = 0
			}
			if s.Ignored != wantIgnored {
				t.Fatalf("ignored %d, want %d", s.Ignored, wantIgnored)
			}
			if n.rec.downs(0) != 0 || !s.Connected {
				t.Fatal("link closed, want kept")
			}
		})
	}
}

// 3.1 rule 6: a dialer that sends nothing is closed after HandshakeGrace;
// beyond MaxInboundHandshakes in flight, new sockets are closed at once.
func TestHandshakeGraceAndInboundLimit(t *testing.T) {
	cfg := baseConfig(2, 3)
	cfg.HandshakeGrace = 300 * time.Millisecond
	cfg.MaxInboundHandshakes = 2
	n := startNode(t, cfg)

	idle1, idle2 := rawDial(t, n.Addr()), rawDial(t, n.Addr())
	eventually(t, "two handshakes in flight", func() bool { return n.inflight.Load() == 2 })
	third := rawDial(t, n.Addr())
	expectClosed(t, third)
	if got := n.Handshakes().Shed; got != 1 {
		t.Fatalf("shed %d, want 1", got)
	}
	start := time.Now()
	expectClosed(t, idle1)
	expectClosed(t, idle2)
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("idle handshakes closed after %v, grace is 300ms", d)
	}
	eventually(t, "failures counted", func() bool { return n.Handshakes().Failed == 2 })
}

// Start refuses configurations the spec forbids.
func TestStartValidatesConfig(t *testing.T) {
	cases := []struct {
		name string
		mod  func(c *Config)
		want string
	}{
		{"self id beyond 31", func(c *Config) { c.Self = 32 }, "self id 32 outside"},
		{"joiner without a listen address", func(c *Config) { c.Self, c.Listen = 3, "" }, "no listen address"},
		{"duplicate id", func(c *Config) { c.Roster[1].ID = 0 }, "twice"},
		{"id beyond 31", func(c *Config) { c.Roster[2].ID = 32 }, "replica id 32 outside 0..31"},
		{"empty roster", func(c *Config) { c.Roster = nil }, "empty roster"},
		{"tls without auth", func(c *Config) { c.TLS = testTLS(t) }, "requires cluster auth"},
		{"short secret", func(c *Config) { c.AuthEnabled, c.SharedSecret = true, []byte("short") }, "at least 32"},
		{"previous equals secret", func(c *Config) {
			c.AuthEnabled, c.SharedSecret, c.PreviousSharedSecret = true, secretOld, secretOld
		}, "equals"},
		{"no listen address", func(c *Config) { c.Listen = "" }, "no listen address"},
		{"tls without a certificate", func(c *Config) {
			withAuth(secretOld, nil)(c)
			c.TLS = &tls.Config{}
		}, "no certificate"},
		{"every interface without auth", func(c *Config) { c.Listen = ":0" }, "allow_insecure"},
		{"routable address without auth", func(c *Config) { c.Listen = "0.0.0.0:0" }, "allow_insecure"},
		{"host name without auth", func(c *Config) { c.Listen = "node0.example:0" }, "allow_insecure"},
		{"roster address without auth", func(c *Config) { c.Listen, c.Roster[0].Addr = "", "10.1.2.3:9090" }, "allow_insecure"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := baseConfig(0, 3)
			tc.mod(&cfg)
			n, err := Start(cfg, newRecorder())
			if err == nil {
				_ = n.Close()
				t.Fatal("Start accepted the config")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q, want it to mention %q", err, tc.want)
			}
		})
	}
}

// A node without auth may listen beyond loopback only when told that it is
// insecure; with auth, or on loopback, it needs no permission. (Exposed
// cases are checked without binding: tests stay on loopback.)
func TestExposedListenerWithoutAuthNeedsAllowInsecure(t *testing.T) {
	for _, listen := range []string{"127.0.0.1:0", "localhost:0"} {
		cfg := baseConfig(0, 2)
		cfg.Listen = listen
		n, err := Start(cfg, newRecorder())
		if err != nil {
			t.Fatalf("loopback %s without auth: %v", listen, err)
		}
		_ = n.Close()
	}
	cases := []struct {
		name string
		mod  func(c *Config)
		ok   bool
	}{
		{"no auth", func(*Config) {}, false},
		{"auth", withAuth(secretOld, nil), true},
		{"allow_insecure", func(c *Config) { c.AllowInsecure = true }, true},
	}
	for _, tc := range cases {
		cfg := baseConfig(0, 2)
		cfg.Listen = "0.0.0.0:9090"
		tc.mod(&cfg)
		cfg.defaults()
		if err := cfg.validate(); (err == nil) != tc.ok {
			t.Errorf("%s on 0.0.0.0: validate = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
	for addr, want := range map[string]bool{"127.0.0.1:9090": true, "[::1]:9090": true, "LOCALHOST:1": true,
		"127.5.5.5": true, "0.0.0.0:9090": false, ":9090": false, "10.0.0.1:9090": false, "[::]:9090": false, "node0:9090": false} {
		if got := IsLoopback(addr); got != want {
			t.Errorf("IsLoopback(%q) = %v, want %v", addr, got, want)
		}
	}
}

// A blank previous secret (what config gives when the TOML key is unset)
// means no rotation in progress, not a too-short secret.
func TestStartTakesBlankPreviousSecretAsNone(t *testing.T) {
	cfg := baseConfig(0, 3)
	cfg.AuthEnabled, cfg.SharedSecret, cfg.PreviousSharedSecret = true, secretOld, []byte("")
	n, err := Start(cfg, newRecorder())
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if n.keys.hasPrev {
		t.Fatal("a blank previous secret was taken as a key")
	}
}

// Close stops every goroutine of the node: listener, dialer, handshakes in
// flight, readers and writers.
func TestCloseLeavesNoGoroutines(t *testing.T) {
	nodes := startCluster(t, 3, nil)
	for i, n := range nodes {
		for j := range nodes {
			if i != j {
				eventually(t, "mesh", func() bool { return connected(n, uint8(j)) })
			}
		}
	}
	head, _ := frameOf(9, 0, 1, nil)
	for range 100 {
		nodes[0].Send(1, head, nil)
		nodes[2].Send(0, head, nil)
	}
	_ = rawDial(t, nodes[2].Addr()) // a handshake in flight at Close
	for _, n := range nodes {
		if err := n.Close(); err != nil {
			t.Fatalf("close: %v", err)
		}
		_ = n.Close() // idempotent
	}
	for i, n := range nodes {
		for j := range nodes {
			if i != j && n.rec.downs(uint8(j)) != 1 {
				t.Errorf("node %d: PeerDown(%d) %d times, want 1", i, j, n.rec.downs(uint8(j)))
			}
		}
		if n.Send(uint8((i+1)%3), head, nil) {
			t.Errorf("node %d: Send after Close succeeded", i)
		}
	}
	// A goroutine that already ran its deferred WaitGroup.Done may still be
	// finishing its return; give those a moment.
	leaked := leakedGoroutines()
	for deadline := time.Now().Add(time.Second); len(leaked) > 0 && time.Now().Before(deadline); leaked = leakedGoroutines() {
		time.Sleep(10 * time.Millisecond)
	}
	if len(leaked) > 0 {
		t.Fatalf("%d goroutines left after Close:\n%s", len(leaked), strings.Join(leaked, "\n\n"))
	}
}

// 3.1 rule 5: a second connection handshaken for a peer that already has
// one is dropped; the installed one keeps working.
func TestOlderConnectionWins(t *testing.T) {
	n := startNode(t, baseConfig(1, 2))
	var zero [32]byte
	first := rawDial(t, n.Addr())
	mustWrite(t, first, helloBytes(clusterIDBytes(t), 0, zero))
	eventually(t, "first installed", func() bool { return connected(n, 0) })

	second := rawDial(t, n.Addr())
	mustWrite(t, second, helloBytes(clusterIDBytes(t), 0, zero))
	expectClosed(t, second)
	if hs := n.Handshakes(); hs.Duplicates != 1 || hs.Accepted != 1 {
		t.Fatalf("handshakes %+v, want 1 accepted and 1 duplicate", hs)
	}

	_, whole := frameOf(9, 0, 99, nil)
	mustWrite(t, first, whole)
	eventually(t, "frame on the first connection", func() bool {
		got := n.rec.got(0)
		return len(got) == 1 && bytes.Equal(got[0], whole)
	})
	if n.rec.ups(0) != 1 || n.rec.downs(0) != 0 {
		t.Fatalf("PeerUp %d PeerDown %d, want 1 and 0", n.rec.ups(0), n.rec.downs(0))
	}
}

// The dial ramp (doc.go, choices): with the default 5 s reconnect period,
// a node started before its higher peer listens, and a node whose peer
// restarts, link up well within one period instead of at the next sweep.
func TestLateOrRestartedPeerIsDialedBeforeTheReconnectPeriod(t *testing.T) {
	const period = 5 * time.Second
	reserve, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr1 := reserve.Addr().String()
	_ = reserve.Close() // refused until node 1 starts on it

	cfg0 := baseConfig(0, 2)
	cfg0.ReconnectPeriod = period
	n0 := startNode(t, cfg0)
	roster := []Peer{{ID: 0, Addr: n0.Addr().String()}, {ID: 1, Addr: addr1}}
	if err := n0.SetRoster(roster); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // a few refused dials

	start1 := func() (testNode, time.Time) {
		cfg1 := baseConfig(1, 2)
		cfg1.ReconnectPeriod = period
		cfg1.Listen = addr1
		n1 := startNode(t, cfg1)
		if err := n1.SetRoster(roster); err != nil {
			t.Fatal(err)
		}
		return n1, time.Now()
	}
	within := func(what string, since time.Time, cond func() bool) {
		t.Helper()
		eventually(t, what, cond)
		if took := time.Since(since); took > period/2 {
			t.Fatalf("%s took %v, the dial ramp should beat the %v period", what, took, period)
		}
	}
	n1, started := start1()
	within("0 dials the late 1", started, func() bool { return connected(n0, 1) && connected(n1, 0) })

	if err := n1.Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "0 sees 1 down", func() bool { return n0.rec.downs(1) == 1 })
	time.Sleep(300 * time.Millisecond)
	n1, started = start1()
	within("0 redials the restarted 1", started, func() bool { return connected(n0, 1) && connected(n1, 0) })
}
