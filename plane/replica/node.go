package replicaplane

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v5"

	"iggynode/wire"
)

// Handler receives what the links deliver. Every method is called from a
// link's own goroutine and must not block: it hands the event to an actor
// (whose mailbox may drop on overload, 3.2 rule 2) and returns. For one
// peer the calls are strictly ordered: PeerUp, then that link's frames in
// arrival order, then PeerDown, before the next link's PeerUp.
type Handler interface {
	// PeerUp reports that a connection to peer id is installed: Send to it
	// may now succeed.
	PeerUp(id uint8)
	// PeerDown reports that the connection is gone (TCP error, EOF, a
	// connection-level framing error, or Close).
	PeerDown(id uint8)
	// Frame hands over one whole frame (256-byte header and body) that
	// passed the connection-level checks of 1.1 rules 1-5. The typed
	// decode, the seal and the validators (1.5) are the receiver's. The
	// slice is freshly allocated and owned by the callee.
	Frame(from uint8, frame []byte)
}

// PeerStats are one peer's counters since Start; they survive reconnects.
type PeerStats struct {
	Sent     uint64 // frames written to the socket
	Dropped  uint64 // frames refused by Send or lost with a link (3.2)
	Received uint64 // frames handed to Handler.Frame
	Ignored  uint64 // inbound frames dropped by 1.1 rule 5
	// Connected reports an installed connection; Outbound that this node
	// dialed it (it is the lower id, 3.1 rule 2).
	Connected bool
	Outbound  bool
	// TLS reports that the installed connection runs inside TLS (3.7).
	TLS bool
	// Remote is the installed connection's remote IP:port (for a peer
	// named by host name, the address the name resolved to).
	Remote string
}

// HandshakeStats count connection attempts since Start.
type HandshakeStats struct {
	Accepted   uint64 // inbound connections installed
	Dialed     uint64 // outbound connections installed
	Duplicates uint64 // handshaken, dropped: the peer had a connection (3.1 rule 5)
	// Refused counts handshakes this node refused, by reason: as acceptor
	// UnknownCommand, ClusterMismatch, DirectionalRule, AuthRequired and
	// MacMismatch; as dialer UnknownCommand (no Challenge) and MacMismatch.
	Refused map[wire.HandshakeStatus]uint64
	// PeerRefused counts Challenge statuses other than Ok this node received
	// as dialer.
	PeerRefused map[wire.HandshakeStatus]uint64
	// Failed counts attempts lost to I/O errors, timeouts, TLS or ALPN.
	Failed uint64
	// Shed counts inbound sockets closed unread because
	// MaxInboundHandshakes were in flight (3.1 rule 6).
	Shed uint64
}

// Node is one replica's end of the replica plane: a listener that accepts
// lower ids, a dialer for higher ids, and one link per connected peer.
type Node struct {
	cfg     Config
	h       Handler
	log     *slog.Logger
	cluster wire.U128
	keys    macKeys
	ln      net.Listener
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	kick    chan struct{} // SetRoster: sweep now
	lost    chan struct{} // a link went down: sweep one ramp step away

	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]struct{} // every socket not yet closed, for Close
	peers  []*peer               // by id; peers[Self] is nil

	inflight atomic.Int64 // inbound handshakes
	hs       handshakeCounters
}

type peer struct {
	id      uint8
	addr    string // guarded by Node.mu
	dialing bool   // guarded by Node.mu
	link    atomic.Pointer[link]

	sent, dropped, received, ignored atomic.Uint64

	// resolved is the IP its host name last led to (resolve.go); guarded
	// by Node.mu.
	resolved string
}

type handshakeCounters struct {
	accepted, dialed, duplicates, failed, shed atomic.Uint64
	refused, peerRefused                       [256]atomic.Uint64
}

// Start binds the listener and starts the dialer: at once, then on a ramp
// up to every ReconnectPeriod (dialLoop), it dials each higher peer with a
// known address that has neither an installed connection nor a handshake
// in flight (3.1 rule 3).
func Start(cfg Config, h Handler) (*Node, error) {
	if h == nil {
		return nil, errors.New("replicaplane: nil Handler")
	}
	cfg.Roster = slices.Clone(cfg.Roster)
	cfg.defaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	addr := cfg.listenAddr()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("replicaplane: listen: %w", err)
	}
	n := &Node{
		cfg:     cfg,
		h:       h,
		log:     cfg.Logger.With("replica", cfg.Self),
		cluster: wire.ClusterID(cfg.ClusterName),
		ln:      ln,
		kick:    make(chan struct{}, 1),
		lost:    make(chan struct{}, 1),
		conns:   make(map[net.Conn]struct{}),
		peers:   make([]*peer, len(cfg.Roster)),
	}
	if cfg.AuthEnabled {
		n.keys = deriveKeys(cfg.SharedSecret, cfg.PreviousSharedSecret)
	}
	for _, p := range cfg.Roster {
		if p.ID != cfg.Self {
			n.peers[p.ID] = &peer{id: p.ID, addr: p.Addr}
		}
	}
	if !cfg.AuthEnabled && !IsLoopback(addr) {
		n.log.Warn("replica plane listening beyond loopback without auth (cluster.allow_insecure): any process that reaches it can join",
			"address", ln.Addr().String())
	}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	n.wg.Add(2)
	go n.acceptLoop()
	go n.dialLoop()
	return n, nil
}

// Addr is the bound listen address.
func (n *Node) Addr() net.Addr { return n.ln.Addr() }

// SetRoster replaces the peers' addresses (the ids must be the same
// 0..n-1 as at Start) and dials at once. Installed connections are kept.
func (n *Node) SetRoster(roster []Peer) error {
	roster = slices.Clone(roster)
	if err := validateRoster(n.cfg.Self, roster); err != nil {
		return err
	}
	if len(roster) != len(n.peers) {
		return fmt.Errorf("replicaplane: roster of %d replicas, started with %d", len(roster), len(n.peers))
	}
	n.mu.Lock()
	for _, p := range roster {
		if pp := n.peers[p.ID]; pp != nil {
			pp.addr = p.Addr
		}
	}
	n.mu.Unlock()
	n.kickDialer()
	return nil
}

// Send queues one frame (a 256-byte header and an optional body, written
// without joining them) for peer `to`, and never blocks. It returns false,
// counting a drop, when the peer has no installed connection or its queue
// is full (3.2 rules 1, 4), or when the frame is malformed: head not 256
// bytes, size field not 256+len(body), or above MaxFrameSize. Head and body
// must not be modified afterwards; they are written from the caller's
// memory.
func (n *Node) Send(to uint8, head, body []byte) bool {
	if int(to) >= len(n.peers) || n.peers[to] == nil {
		return false
	}
	p := n.peers[to]
	if !n.wellFormed(head, body) {
		p.dropped.Add(1)
		return false
	}
	l := p.link.Load()
	if l == nil || !l.queue.push(outFrame{head: head, body: body}) {
		p.dropped.Add(1)
		return false
	}
	return true
}

func (n *Node) wellFormed(head, body []byte) bool {
	if len(head) != wire.HeaderSize {
		n.log.Error("replica send: header is not 256 bytes", "len", len(head))
		return false
	}
	size, _ := wire.FrameSize(head)
	if uint64(size) != uint64(wire.HeaderSize)+uint64(len(body)) || wire.CheckFrameSize(size, n.cfg.MaxFrameSize) != nil {
		n.log.Error("replica send: bad frame size", "size", size, "body", len(body))
		return false
	}
	return true
}

// Stats returns every peer's counters, keyed by replica id.
func (n *Node) Stats() map[uint8]PeerStats {
	out := make(map[uint8]PeerStats, len(n.peers))
	for _, p := range n.peers {
		if p == nil {
			continue
		}
		s := PeerStats{Sent: p.sent.Load(), Dropped: p.dropped.Load(),
			Received: p.received.Load(), Ignored: p.ignored.Load()}
		if l := p.link.Load(); l != nil {
			s.Connected, s.Outbound, s.TLS, s.Remote = true, l.outbound, l.tls, l.raw.RemoteAddr().String()
		}
		out[p.id] = s
	}
	return out
}

// Handshakes returns the handshake counters.
func (n *Node) Handshakes() HandshakeStats {
	c := &n.hs
	s := HandshakeStats{Accepted: c.accepted.Load(), Dialed: c.dialed.Load(),
		Duplicates: c.duplicates.Load(), Failed: c.failed.Load(), Shed: c.shed.Load(),
		Refused: map[wire.HandshakeStatus]uint64{}, PeerRefused: map[wire.HandshakeStatus]uint64{}}
	for i := range c.refused {
		if v := c.refused[i].Load(); v != 0 {
			s.Refused[wire.HandshakeStatus(i)] = v
		}
		if v := c.peerRefused[i].Load(); v != 0 {
			s.PeerRefused[wire.HandshakeStatus(i)] = v
		}
	}
	return s
}

// Close stops the listener and the dialer, closes every connection
// (Handler.PeerDown is called for each installed one) and waits for every
// goroutine of the node. It is safe to call more than once.
func (n *Node) Close() error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	n.closed = true
	conns := make([]net.Conn, 0, len(n.conns))
	for c := range n.conns {
		conns = append(conns, c)
	}
	n.mu.Unlock()
	n.cancel()
	err := n.ln.Close()
	for _, c := range conns {
		_ = c.Close()
	}
	n.wg.Wait()
	return err
}

// track registers a socket for Close; false once the node is closing.
func (n *Node) track(c net.Conn) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return false
	}
	n.conns[c] = struct{}{}
	return true
}

func (n *Node) untrack(c net.Conn) {
	n.mu.Lock()
	delete(n.conns, c)
	n.mu.Unlock()
	_ = c.Close()
}

// install makes l peer's connection unless the node is closing or one is
// installed already (the older wins, 3.1 rule 5: duplicate).
func (n *Node) install(p *peer, l *link) (ok, duplicate bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if l.outbound {
		p.dialing = false
	}
	switch {
	case n.closed:
		return false, false
	case p.link.Load() != nil:
		return false, true
	}
	p.link.Store(l)
	return true, false
}

func (n *Node) uninstall(p *peer, l *link) {
	n.mu.Lock()
	p.link.CompareAndSwap(l, nil)
	n.mu.Unlock()
}

func (n *Node) acceptLoop() {
	defer n.wg.Done()
	// Out of descriptors and the like: wait 5 ms doubling to 1 s, then go on.
	retry := &backoff.ExponentialBackOff{InitialInterval: 5 * time.Millisecond, Multiplier: 2, MaxInterval: time.Second}
	retry.Reset()
	for {
		c, err := n.ln.Accept()
		if err != nil {
			if n.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			wait := retry.NextBackOff()
			n.log.Warn("replica accept failed", "err", err, "retry_in", wait)
			select {
			case <-time.After(wait):
			case <-n.ctx.Done():
				return
			}
			continue
		}
		retry.Reset()
		if n.inflight.Add(1) > int64(n.cfg.MaxInboundHandshakes) {
			n.inflight.Add(-1)
			n.hs.shed.Add(1)
			_ = c.Close()
			continue
		}
		if !n.track(c) {
			n.inflight.Add(-1)
			_ = c.Close()
			return
		}
		setNoDelay(c)
		n.wg.Add(1)
		go n.serveInbound(c)
	}
}

// firstRedial is the first gap of the dial ramp: after Start, a kick or a
// lost link, sweeps come at firstRedial, doubling up to ReconnectPeriod.
const firstRedial = 100 * time.Millisecond

// dialLoop sweeps at Start, at once on SetRoster, and then on a ramp: while
// a higher peer is unlinked the gap doubles from firstRedial up to
// ReconnectPeriod; once every link is up it idles at ReconnectPeriod with
// the ramp reset, and a lost link schedules the next sweep one ramp step
// away. Nodes started together, or a peer restarting, link up within a
// fraction of a second instead of one full period later (a backup linked
// late has missed every op committed meanwhile), while a peer that keeps
// refusing or dropping us is dialed at most once per doubling gap.
func (n *Node) dialLoop() {
	defer n.wg.Done()
	period := n.cfg.ReconnectPeriod
	// The ramp: firstRedial doubling to period, no jitter (the peers' ids
	// already order who dials whom).
	ramp := &backoff.ExponentialBackOff{InitialInterval: min(firstRedial, period), Multiplier: 2, MaxInterval: period}
	restart := func() time.Duration { ramp.Reset(); return ramp.NextBackOff() }
	delay := restart()
	n.sweep()
	t := time.NewTimer(delay)
	defer t.Stop()
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
			if n.sweep() > 0 {
				delay = ramp.NextBackOff()
				t.Reset(delay)
			} else {
				delay = restart()
				t.Reset(period)
			}
		case <-n.kick:
			n.sweep()
			delay = restart()
			t.Reset(delay)
		case <-n.lost:
			t.Reset(delay)
		}
	}
}

func (n *Node) kickDialer() {
	select {
	case n.kick <- struct{}{}:
	default:
	}
}

// sweep starts a dial for every higher peer (3.1 rule 2) with an address,
// no installed connection and no handshake in flight (rule 3), and returns
// how many higher peers are not linked.
func (n *Node) sweep() (unlinked int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return 0
	}
	for _, p := range n.peers {
		if p == nil || p.id < n.cfg.Self || p.addr == "" || p.link.Load() != nil {
			continue
		}
		unlinked++
		if p.dialing {
			continue
		}
		p.dialing = true
		n.wg.Add(1)
		go n.dial(p, p.addr)
	}
	return unlinked
}

func (n *Node) dial(p *peer, addr string) {
	defer n.wg.Done()
	c, err := n.dialPeer(p, addr)
	if err == nil && !n.track(c) {
		_ = c.Close()
		err = net.ErrClosed
	}
	if err != nil {
		n.mu.Lock()
		p.dialing = false
		n.mu.Unlock()
		if n.ctx.Err() == nil {
			n.log.Debug("replica dial failed", "peer", p.id, "addr", addr, "err", err)
		}
		return
	}
	setNoDelay(c)
	l, err := n.dialHandshake(c, p.id, addr)
	if err != nil {
		n.mu.Lock()
		p.dialing = false
		n.mu.Unlock()
		n.handshakeFailed(err)
		n.untrack(c)
		return
	}
	n.run(p, l)
}

func (n *Node) serveInbound(c net.Conn) {
	defer n.wg.Done()
	l, err := n.acceptHandshake(c)
	n.inflight.Add(-1)
	if err != nil {
		n.handshakeFailed(err)
		n.untrack(c)
		return
	}
	n.run(n.peers[l.peer], l)
}

// run installs l and serves it until it ends.
func (n *Node) run(p *peer, l *link) {
	if ok, duplicate := n.install(p, l); !ok {
		if duplicate {
			n.hs.duplicates.Add(1)
			n.log.Info("replica connection dropped: peer already connected", "peer", p.id, "outbound", l.outbound)
		}
		n.untrack(l.raw)
		return
	}
	if l.outbound {
		n.hs.dialed.Add(1)
	} else {
		n.hs.accepted.Add(1)
	}
	n.log.Info("replica peer up", "peer", p.id, "outbound", l.outbound, "tls", l.tls)
	n.h.PeerUp(p.id)
	l.serve(n, p)
	n.log.Info("replica peer down", "peer", p.id, "err", l.err)
	n.h.PeerDown(p.id)
	n.uninstall(p, l)
	n.untrack(l.raw)
	select {
	case n.lost <- struct{}{}:
	default:
	}
}

func setNoDelay(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true) // 3.1 rule 3
	}
}
