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

	"iggynode/internal/framebuf"
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
	// slice is owned by the callee. A Prepare or RepairPrepare large
	// enough to pool is read into a pooled buffer, owner (nil otherwise):
	// the callee holds its reference and releases it once nothing reads
	// the frame, or drops it for the garbage collector (framebuf).
	Frame(from uint8, frame []byte, owner *framebuf.Buf)
}

// PeerStats are one peer's counters since Start. They survive reconnects
// and roster changes: an id removed and added again goes on counting
// where it stopped (the frames its link still held when it was removed
// are in Dropped).
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
	// UnknownCommand, ClusterMismatch, DirectionalRule (a Hello from a
	// higher id, or from an id not in the roster), AuthRequired and
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
// lower ids of the roster, a dialer for its higher ids, and one link per
// connected peer. The roster changes at run time (SetRoster).
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
	// slots holds every peer the node has had, by id, for its lifetime
	// (at most 32 small structs): an id that leaves the roster keeps its
	// counters, and its link stays installed until that link's PeerDown
	// returns, so an id added again goes on counting and its new link's
	// PeerUp cannot overtake the old link's PeerDown (Handler).
	slots [MaxReplicas]*peer

	// peers is the current roster's peers by id (nil: not in the roster,
	// or Self). A published table is never modified: SetRoster builds the
	// next one under mu and swaps it in. Send reads it with one atomic load
	// and no lock because it runs for every frame of every group, from
	// many actors at once; a mutex, even a RWMutex's reader count, would
	// have them contend on one cache line for a table that changes only
	// when the cluster is reconfigured. A Send that loaded the old table
	// just before a removal pushes to a link being closed: the frame is
	// refused or discarded with the queue, counted as dropped either way.
	peers atomic.Pointer[peerTable]

	inflight atomic.Int64 // inbound handshakes
	hs       handshakeCounters
}

// peerTable is a roster's peers by id.
type peerTable [MaxReplicas]*peer

type peer struct {
	id   uint8
	addr string // guarded by Node.mu
	// dialing is the dial in flight (nil: none), guarded by Node.mu. A
	// roster change that removes the peer or moves it cancels it, and
	// only the current attempt may install its link.
	dialing *dialAttempt
	link    atomic.Pointer[link]

	sent, dropped, received, ignored atomic.Uint64

	// resolved is the IP its host name last led to (resolve.go); guarded
	// by Node.mu.
	resolved string
}

// dialAttempt is one dial and its handshake; cancel ends both at once.
type dialAttempt struct {
	ctx    context.Context
	cancel context.CancelFunc
}

// stopDial abandons the dial in flight, if any (Node.mu held).
func (p *peer) stopDial() {
	if p.dialing != nil {
		p.dialing.cancel()
		p.dialing = nil
	}
}

// Why SetRoster closes a link (logged, and the link's PeerDown reason).
var (
	errLeftRoster  = errors.New("removed from the roster")
	errReaddressed = errors.New("the roster moved the peer to another address")
)

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
	}
	if cfg.AuthEnabled {
		n.keys = deriveKeys(cfg.SharedSecret, cfg.PreviousSharedSecret)
	}
	n.peers.Store(&peerTable{})
	n.setPeers(cfg.Roster) // nothing is linked yet: nothing to close
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

// SetRoster replaces the roster: the peer set becomes exactly the ids it
// lists (distinct, below MaxReplicas, at least one; an entry for Self is
// allowed and ignored), and the dialer sweeps at once.
//   - An id that is new gets a peer: the node dials it if it is higher
//     and has an address, and accepts its Hello if it is lower (3.1).
//   - An id that is gone loses its peer: its link is closed (PeerDown is
//     called, its queued frames count as dropped), a dial in flight to it
//     is abandoned, and its Hellos are refused from now on.
//   - An id whose address changed is redialed there: a connection this
//     node dialed is closed so that the new host is reached, and a dial in
//     flight to the old address is abandoned. A connection accepted from
//     it stays until it fails: the acceptor cannot tell which host dialed.
//
// Other connections are kept. After Close it does nothing.
func (n *Node) SetRoster(roster []Peer) error {
	if err := validateRoster(roster); err != nil {
		return err
	}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	stale := n.setPeers(roster)
	n.mu.Unlock()
	for _, s := range stale {
		n.log.Info("replica link closed by a roster change", "peer", s.p.id, "outbound", s.l.outbound, "why", s.why)
		s.l.shutdown(s.p, s.why)
	}
	n.kickDialer()
	return nil
}

// staleLink is a link a roster change closes, and why.
type staleLink struct {
	p   *peer
	l   *link
	why error
}

// setPeers publishes the peer table of roster (Start, or n.mu held) and
// returns the links to close: every link of a peer that left, and the
// link this node dialed to a peer whose address changed.
func (n *Node) setPeers(roster []Peer) (stale []staleLink) {
	old := n.peers.Load()
	var next peerTable
	for _, e := range roster {
		if e.ID == n.cfg.Self {
			continue
		}
		p := n.slots[e.ID]
		if p == nil {
			p = &peer{id: e.ID}
			n.slots[e.ID] = p
		}
		switch {
		case old[e.ID] == nil:
			p.addr = e.Addr // joins (again): its dial was abandoned when it left
		case p.addr != e.Addr:
			p.addr = e.Addr
			p.stopDial()
			if l := p.link.Load(); l != nil && l.outbound {
				stale = append(stale, staleLink{p, l, errReaddressed})
			}
		}
		next[e.ID] = p
	}
	for id, p := range old {
		if p == nil || next[id] != nil {
			continue
		}
		p.stopDial()
		if l := p.link.Load(); l != nil {
			stale = append(stale, staleLink{p, l, errLeftRoster})
		}
	}
	n.peers.Store(&next)
	return stale
}

// peerOf is id's peer in the current roster, nil if it has none (Self
// has none). It takes no lock (Node.peers says why).
func (n *Node) peerOf(id uint8) *peer {
	if id >= MaxReplicas {
		return nil
	}
	return n.peers.Load()[id]
}

// Send queues one frame (a 256-byte header and an optional body, written
// without joining them) for peer `to`, and never blocks. It returns false,
// counting a drop, when the peer has no installed connection or its queue
// is full (3.2 rules 1, 4), or when the frame is malformed: head not 256
// bytes, size field not 256+len(body), or above MaxFrameSize. To Self, or
// to an id not in the current roster, it returns false without counting.
// Head and body must not be modified afterwards; they are written from the
// caller's memory. It takes no lock (Node.peers says why).
func (n *Node) Send(to uint8, head, body []byte) bool { return n.SendPinned(to, head, body, nil) }

// SendPinned is Send for a frame whose memory pin holds (a pooled request
// buffer): the link drops the pin once the frame is written, or when it
// discards the frame unwritten; a frame refused here has its pin dropped
// before SendPinned returns. Either way the caller's reference is taken
// over.
func (n *Node) SendPinned(to uint8, head, body []byte, pin wire.Pin) bool {
	f := outFrame{head: head, body: body, pin: pin}
	p := n.peerOf(to)
	if p == nil {
		f.unpin()
		return false
	}
	if !n.wellFormed(head, body) {
		p.dropped.Add(1)
		f.unpin()
		return false
	}
	l := p.link.Load()
	if l == nil || !l.queue.push(f) {
		p.dropped.Add(1)
		f.unpin()
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

// Stats returns the counters of the current roster's peers, keyed by
// replica id.
func (n *Node) Stats() map[uint8]PeerStats {
	out := make(map[uint8]PeerStats)
	for _, p := range n.peers.Load() {
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

// installResult says what install did with a link.
type installResult int

const (
	installed        installResult = iota
	installClosing                 // the node is closing
	installDuplicate               // the peer had a connection: the older wins (3.1 rule 5)
	installStale                   // the peer left the roster, or moved while it was dialed
)

// install makes l peer's connection unless the node is closing, the peer
// is no longer in the roster (or, for a dialed link, the roster moved it
// while it was dialed), or a connection is installed already.
func (n *Node) install(p *peer, l *link) installResult {
	n.mu.Lock()
	defer n.mu.Unlock()
	current := n.peers.Load()[p.id] == p
	if l.attempt != nil {
		current = current && p.dialing == l.attempt
		if p.dialing == l.attempt {
			p.dialing = nil
		}
	}
	switch {
	case n.closed:
		return installClosing
	case !current:
		return installStale
	case p.link.Load() != nil:
		return installDuplicate
	}
	p.link.Store(l)
	return installed
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
	for _, p := range n.peers.Load() {
		if p == nil || p.id < n.cfg.Self || p.addr == "" || p.link.Load() != nil {
			continue
		}
		unlinked++
		if p.dialing != nil {
			continue
		}
		ctx, cancel := context.WithCancel(n.ctx)
		p.dialing = &dialAttempt{ctx: ctx, cancel: cancel}
		n.wg.Add(1)
		go n.dial(p, p.dialing, p.addr)
	}
	return unlinked
}

// dial connects to addr and runs the handshake as attempt a, then serves
// the link. A roster change that cancels a ends the dial, or the
// handshake (its socket is closed), at once instead of at HandshakeGrace.
func (n *Node) dial(p *peer, a *dialAttempt, addr string) {
	defer n.wg.Done()
	defer a.cancel()
	c, err := n.dialPeer(a.ctx, p, addr)
	if err == nil && !n.track(c) {
		_ = c.Close()
		err = net.ErrClosed
	}
	if err != nil {
		n.endDial(p, a)
		if n.ctx.Err() == nil {
			n.log.Debug("replica dial failed", "peer", p.id, "addr", addr, "err", err)
		}
		return
	}
	setNoDelay(c)
	stop := context.AfterFunc(a.ctx, func() { _ = c.Close() })
	l, err := n.dialHandshake(c, p.id, addr)
	stop()
	if err != nil {
		n.endDial(p, a)
		if n.ctx.Err() == nil && a.ctx.Err() != nil {
			n.log.Debug("replica dial abandoned: the peer left the roster or moved", "peer", p.id, "addr", addr)
		} else {
			n.handshakeFailed(err)
		}
		n.untrack(c)
		return
	}
	l.attempt = a
	n.run(p, l)
}

// endDial clears a failed attempt unless a roster change replaced it.
func (n *Node) endDial(p *peer, a *dialAttempt) {
	n.mu.Lock()
	if p.dialing == a {
		p.dialing = nil
	}
	n.mu.Unlock()
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
	// checkHello found l.peer in the roster; a roster change may have
	// removed it since (install checks again, under the lock).
	p := n.peerOf(l.peer)
	if p == nil {
		n.log.Info("replica connection dropped: the peer left the roster during its handshake", "peer", l.peer)
		n.untrack(l.raw)
		return
	}
	n.run(p, l)
}

// run installs l and serves it until it ends.
func (n *Node) run(p *peer, l *link) {
	switch n.install(p, l) {
	case installed:
	case installDuplicate:
		n.hs.duplicates.Add(1)
		n.log.Info("replica connection dropped: peer already connected", "peer", p.id, "outbound", l.outbound)
		n.untrack(l.raw)
		return
	case installStale:
		n.log.Info("replica connection dropped: the roster changed during its handshake", "peer", p.id, "outbound", l.outbound)
		n.untrack(l.raw)
		return
	default:
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
