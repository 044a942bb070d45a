package replicaplane

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"iggynode/internal/framebuf"
)

const (
	testCluster = "iggy-cluster"
	// clusterIDHex is replica-plane.md Appendix A2: the header bytes 32..48
	// of cluster name "iggy-cluster".
	clusterIDHex = "21bb05c88727bab88d0ec27be8a72d46"
	waitLimit    = 5 * time.Second
)

var (
	secretOld = []byte("0123456789abcdef0123456789abcdef")
	secretNew = []byte("fedcba9876543210fedcba9876543210-new")
)

// recorder is a Handler that keeps every event.
type recorder struct {
	mu     sync.Mutex
	up     map[uint8]int
	down   map[uint8]int
	frames map[uint8][][]byte
	events []string // "up 0", "down 0", "frame 0": the order per node
	onUp   func(id uint8)
}

func newRecorder() *recorder {
	return &recorder{up: map[uint8]int{}, down: map[uint8]int{}, frames: map[uint8][][]byte{}}
}

func (r *recorder) PeerUp(id uint8) {
	r.mu.Lock()
	r.up[id]++
	r.events = append(r.events, "up "+string('0'+rune(id)))
	f := r.onUp
	r.mu.Unlock()
	if f != nil {
		f(id)
	}
}

func (r *recorder) PeerDown(id uint8) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.down[id]++
	r.events = append(r.events, "down "+string('0'+rune(id)))
}

func (r *recorder) Frame(from uint8, frame []byte, _ *framebuf.Buf) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.frames[from] = append(r.frames[from], frame)
}

func (r *recorder) ups(id uint8) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.up[id]
}

func (r *recorder) downs(id uint8) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.down[id]
}

func (r *recorder) got(from uint8) [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]byte(nil), r.frames[from]...)
}

// eventually polls cond every few milliseconds until it holds or waitLimit
// passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// never checks that cond stays false for d.
func never(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			t.Fatalf("unexpected: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func testLogger() *slog.Logger {
	if os.Getenv("REPLICAPLANE_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// baseConfig is a fast-reconnecting config for replica self of count,
// listening on an ephemeral loopback port.
func baseConfig(self uint8, count int) Config {
	roster := make([]Peer, count)
	for i := range roster {
		roster[i] = Peer{ID: uint8(i)}
	}
	return Config{
		Self:            self,
		Roster:          roster,
		Listen:          "127.0.0.1:0",
		ClusterName:     testCluster,
		ReconnectPeriod: 30 * time.Millisecond,
		HandshakeGrace:  2 * time.Second,
		Logger:          testLogger(),
	}
}

type testNode struct {
	*Node
	rec *recorder
}

// startNode starts one node and closes it at the end of the test.
func startNode(t *testing.T, cfg Config) testNode {
	t.Helper()
	rec := newRecorder()
	n, err := Start(cfg, rec)
	if err != nil {
		t.Fatalf("Start(replica %d): %v", cfg.Self, err)
	}
	t.Cleanup(func() { _ = n.Close() })
	return testNode{n, rec}
}

// startCluster starts count nodes (config tweaked per node by mod), then
// hands every node the full roster of bound addresses.
func startCluster(t *testing.T, count int, mod func(c *Config)) []testNode {
	t.Helper()
	return startClusterPrep(t, count, mod, nil)
}

// startClusterPrep is startCluster with a hook run before any node knows
// another's address, so before any connection exists.
func startClusterPrep(t *testing.T, count int, mod func(c *Config), prep func(nodes []testNode)) []testNode {
	t.Helper()
	nodes := make([]testNode, count)
	for i := range nodes {
		cfg := baseConfig(uint8(i), count)
		if mod != nil {
			mod(&cfg)
		}
		nodes[i] = startNode(t, cfg)
	}
	if prep != nil {
		prep(nodes)
	}
	roster := rosterOf(nodes)
	for _, n := range nodes {
		if err := n.SetRoster(roster); err != nil {
			t.Fatalf("SetRoster: %v", err)
		}
	}
	return nodes
}

// rosterConfig is baseConfig for replica self with a roster of ids (no
// addresses yet), which need not be contiguous nor name self.
func rosterConfig(self uint8, ids ...uint8) Config {
	cfg := baseConfig(self, 0)
	for _, id := range ids {
		cfg.Roster = append(cfg.Roster, Peer{ID: id})
	}
	return cfg
}

// peersOf is the roster of the given nodes at their bound addresses.
func peersOf(nodes ...testNode) []Peer {
	roster := make([]Peer, len(nodes))
	for i, n := range nodes {
		roster[i] = Peer{ID: n.cfg.Self, Addr: n.Addr().String()}
	}
	return roster
}

func rosterOf(nodes []testNode) []Peer {
	roster := make([]Peer, len(nodes))
	for i, n := range nodes {
		roster[i] = Peer{ID: uint8(i), Addr: n.Addr().String()}
	}
	return roster
}

func connected(n testNode, peer uint8) bool { return n.Stats()[peer].Connected }

// frameOf builds a replica frame by hand (replica-plane.md 1.2): size at
// 48, command at 60, replica at 61, a sequence number at 128..136. The
// plane does not judge seals, so none is set.
func frameOf(cmd byte, replica uint8, seq uint64, body []byte) (head, whole []byte) {
	head = make([]byte, 256)
	binary.LittleEndian.PutUint32(head[48:], uint32(256+len(body)))
	head[60] = cmd
	head[61] = replica
	binary.LittleEndian.PutUint64(head[128:], seq)
	return head, append(append([]byte(nil), head...), body...)
}

func clusterIDBytes(t *testing.T) []byte {
	t.Helper()
	b, err := hex.DecodeString(clusterIDHex)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// helloBytes is a ReplicaHello written from 3.4's offsets: checksums 0,
// cluster at 32, size 256 at 48, view/release 0, command 14 at 60, replica
// at 61, nonce at 128..160, the rest zero.
func helloBytes(cluster []byte, replica uint8, nonce [32]byte) []byte {
	h := make([]byte, 256)
	copy(h[32:48], cluster)
	copy(h[48:52], []byte{0x00, 0x01, 0x00, 0x00})
	h[60] = 14
	h[61] = replica
	copy(h[128:160], nonce[:])
	return h
}

// finishBytes is a ReplicaFinish (16) with mac_d at 160..192.
func finishBytes(cluster []byte, replica uint8, mac [32]byte) []byte {
	h := make([]byte, 256)
	copy(h[32:48], cluster)
	copy(h[48:52], []byte{0x00, 0x01, 0x00, 0x00})
	h[60] = 16
	h[61] = replica
	copy(h[160:192], mac[:])
	return h
}

func rawDial(t *testing.T, addr net.Addr) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr.String(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(waitLimit))
	return c
}

func mustWrite(t *testing.T, c net.Conn, b []byte) {
	t.Helper()
	if _, err := c.Write(b); err != nil {
		t.Fatalf("write: %v", err)
	}
}

// read256 reads one 256-byte frame.
func read256(t *testing.T, c net.Conn) []byte {
	t.Helper()
	h := make([]byte, 256)
	if _, err := io.ReadFull(c, h); err != nil {
		t.Fatalf("reading a frame: %v", err)
	}
	return h
}

// expectClosed asserts that the peer closes c without sending a byte.
func expectClosed(t *testing.T, c net.Conn) {
	t.Helper()
	var b [1]byte
	n, err := c.Read(b[:])
	if n != 0 || err == nil {
		t.Fatalf("expected the connection closed with no frame, read %d bytes, err %v", n, err)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("expected the connection closed, it stayed open: %v", err)
	}
}

func isZero(b []byte) bool { return bytes.Count(b, []byte{0}) == len(b) }

// leakedGoroutines lists goroutines running code of this package other
// than the tests themselves.
func leakedGoroutines() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "plane/replica.(*") && !strings.Contains(g, "testing.tRunner") {
			out = append(out, g)
		}
	}
	return out
}
