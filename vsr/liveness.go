package vsr

import (
	"iggynode/wire"
)

// Liveness is a node's side of the node-level heartbeat (an extension;
// the frame is wire.NodeHeartbeat, command 64): one per node, not per
// group. Every IntervalTicks it sends each peer one frame carrying the
// quiescence entries its groups posted for that peer since the last one
// (quiesce.go), deduplicated per group and kind, the latest winning. A
// peer not heard for TimeoutTicks is lost (Ready.Lost): the shell calls
// Replica.PeerLost on its groups, which elect where that peer led; a lost
// peer heard again is found (Ready.Found, Replica.PeerFound).
//
// Like Replica it is a value with no clock or socket: Tick is 10 ms of
// virtual time, Step takes a frame from a peer, Ready hands back what to
// send and what happened. Entries are not retransmitted here: the groups
// post them again until they are answered (quiesce.go rules 1-2), so a
// lost frame costs one interval. Peers start live, heard at boot, so a
// peer that never answers is lost one timeout after the start, as a
// group's NormalHeartbeat would be.
type Liveness struct {
	cfg   LivenessConfig
	now   int
	beat  uint64
	next  int // tick of the next send
	peers []livePeer
	ready LivenessReady
	// Dropped counts frames refused, by reason.
	Dropped map[string]uint64
}

// LivenessConfig configures a node's Liveness. Durations are in ticks.
type LivenessConfig struct {
	Cluster  wire.U128
	Self     uint8
	Replicas int
	// IntervalTicks is the send period (default 50: 500 ms, as
	// cluster.commit_broadcast_interval); TimeoutTicks how long a silent
	// peer stays live (default 500: cluster.heartbeat_timeout).
	IntervalTicks int
	TimeoutTicks  int
	// Incarnation is this boot's id (never zero: the shell draws it).
	Incarnation wire.U128
	// MaxEntries bounds one frame's entries (default and cap
	// wire.NodeHeartbeatMaxEntries); more go in further frames of the
	// same interval.
	MaxEntries int
	// Members are the peers heartbeated and watched, a bitmask over ids
	// below Replicas (0: all of them); SetMembers changes it as the
	// cluster's roster changes (reconfiguration).
	Members uint32
}

type livePeer struct {
	heard       int
	lost        bool
	incarnation wire.U128
	pending     []pendingEntry
	index       map[entryKey]int // position in pending
	// Restarts counts incarnations seen after the first.
	restarts uint64
}

type entryKey struct {
	group uint64
	kind  QuietKind
}

type pendingEntry struct {
	group uint64
	entry QuietEntry
}

// LivenessReady is what the shell must do after a call into Liveness.
type LivenessReady struct {
	Send    []Envelope // one or more NodeHeartbeat frames per peer, whole (Head holds the frame)
	Lost    []uint8
	Found   []uint8
	Entries []ReceivedQuiet
}

// ReceivedQuiet is a quiescence entry a peer sent, for group Group.
type ReceivedQuiet struct {
	From   uint8
	Group  uint64
	Kind   QuietKind
	View   uint32
	Commit uint64
}

// NewLiveness returns a node's Liveness at tick 0, every peer live.
func NewLiveness(cfg LivenessConfig) *Liveness {
	if cfg.IntervalTicks <= 0 {
		cfg.IntervalTicks = 50
	}
	if cfg.TimeoutTicks <= 0 {
		cfg.TimeoutTicks = 500
	}
	if cfg.MaxEntries <= 0 || cfg.MaxEntries > wire.NodeHeartbeatMaxEntries {
		cfg.MaxEntries = wire.NodeHeartbeatMaxEntries
	}
	if cfg.Incarnation.IsZero() {
		cfg.Incarnation = wire.U128{Lo: 1}
	}
	l := &Liveness{cfg: cfg, peers: make([]livePeer, cfg.Replicas), Dropped: map[string]uint64{}, next: cfg.IntervalTicks}
	for i := range l.peers {
		l.peers[i].index = map[entryKey]int{}
	}
	if l.cfg.Members == 0 {
		l.cfg.Members = ^uint32(0)
	}
	return l
}

// member reports whether peer i is heartbeated and watched.
func (l *Liveness) member(i int) bool {
	return i < 32 && l.cfg.Members&(1<<i) != 0 && uint8(i) != l.cfg.Self
}

// Members is the mask of peers heartbeated and watched.
func (l *Liveness) Members() uint32 { return l.cfg.Members }

// SetMembers changes the peers heartbeated and watched: a new member
// starts with a fresh timeout (as at boot), one that leaves is neither
// sent to nor lost from then on, and its pending entries are dropped.
func (l *Liveness) SetMembers(mask uint32) {
	for i := range l.peers {
		was, now := l.member(i), i < 32 && mask&(1<<i) != 0 && uint8(i) != l.cfg.Self
		p := &l.peers[i]
		switch {
		case now && !was:
			p.heard, p.lost = l.now, false
		case was && !now:
			p.pending = p.pending[:0]
			clear(p.index)
			p.lost = false
		}
	}
	l.cfg.Members = mask
}

// Alive reports whether peer's node is live: heard within the timeout
// (this node always is).
func (l *Liveness) Alive(peer uint8) bool {
	return int(peer) < len(l.peers) && (peer == l.cfg.Self || !l.peers[peer].lost)
}

// Post queues a quiescence entry of group for the next frame to e.To.
func (l *Liveness) Post(group uint64, e QuietEntry) {
	if int(e.To) >= len(l.peers) || !l.member(int(e.To)) {
		return
	}
	p := &l.peers[e.To]
	k := entryKey{group, e.Kind}
	if i, ok := p.index[k]; ok {
		p.pending[i].entry = e
		return
	}
	p.index[k] = len(p.pending)
	p.pending = append(p.pending, pendingEntry{group, e})
}

// IdleTicks is how many ticks may pass before the next one that sends a
// frame or loses a peer (at least 1): a shell that keeps deadlines ticks
// the node-level heartbeat only then.
func (l *Liveness) IdleTicks() int {
	k := l.next - l.now
	for i := range l.peers {
		if p := &l.peers[i]; l.member(i) && !p.lost {
			k = min(k, p.heard+l.cfg.TimeoutTicks-l.now)
		}
	}
	return max(k, 1)
}

// Pending is how many entries wait for the next frame to peer.
func (l *Liveness) Pending(peer uint8) int {
	if int(peer) >= len(l.peers) {
		return 0
	}
	return len(l.peers[peer].pending)
}

// Tick advances one tick: peers silent for the timeout are lost, and at
// each interval every peer gets its frame.
func (l *Liveness) Tick() {
	l.now++
	for i := range l.peers {
		p := &l.peers[i]
		if l.member(i) && !p.lost && l.now-p.heard >= l.cfg.TimeoutTicks {
			p.lost = true
			l.ready.Lost = append(l.ready.Lost, uint8(i))
		}
	}
	if l.now >= l.next {
		l.next = l.now + l.cfg.IntervalTicks
		for i := range l.peers {
			if l.member(i) {
				l.sendTo(uint8(i))
			}
		}
	}
}

// sendTo builds the frames of this interval for peer: at least one (the
// heartbeat itself), more while entries are left.
func (l *Liveness) sendTo(peer uint8) {
	p := &l.peers[peer]
	for first := true; first || len(p.pending) > 0; first = false {
		n := min(len(p.pending), l.cfg.MaxEntries)
		m := wire.NodeHeartbeat{Cluster: l.cfg.Cluster, Replica: l.cfg.Self, Incarnation: l.cfg.Incarnation}
		if n > 0 {
			m.Entries = make([]wire.NodeHeartbeatEntry, n)
		}
		for j, pe := range p.pending[:n] {
			m.Entries[j] = wire.NodeHeartbeatEntry{Group: pe.group, Commit: pe.entry.Commit, View: pe.entry.View, Kind: uint8(pe.entry.Kind)}
		}
		l.beat++
		m.Beat = l.beat
		l.ready.Send = append(l.ready.Send, Envelope{To: peer, Head: m.AppendTo(nil)})
		rest := copy(p.pending, p.pending[n:])
		clear(p.pending[rest:])
		p.pending = p.pending[:rest]
		clear(p.index)
		for j, pe := range p.pending {
			p.index[entryKey{pe.group, pe.entry.Kind}] = j
		}
	}
}

// Step takes a NodeHeartbeat frame from a peer and reports which peer it
// heard (ok false: dropped). A frame that does not decode, or names
// another cluster or an unknown replica, is dropped.
func (l *Liveness) Step(frame []byte) (from uint8, ok bool) {
	m, err := wire.DecodeNodeHeartbeat(frame)
	switch {
	case err != nil:
		l.drop("bad node heartbeat")
		return 0, false
	case m.Cluster != l.cfg.Cluster:
		l.drop("node heartbeat of another cluster")
		return 0, false
	case int(m.Replica) >= len(l.peers) || m.Replica == l.cfg.Self:
		l.drop("node heartbeat from an unknown replica")
		return 0, false
	}
	p := &l.peers[m.Replica]
	p.heard = l.now
	if p.lost {
		p.lost = false
		l.ready.Found = append(l.ready.Found, m.Replica)
	}
	if p.incarnation != m.Incarnation {
		if !p.incarnation.IsZero() {
			p.restarts++
		}
		p.incarnation = m.Incarnation
	}
	for _, e := range m.Entries {
		l.ready.Entries = append(l.ready.Entries, ReceivedQuiet{From: m.Replica, Group: e.Group, Kind: QuietKind(e.Kind), View: e.View, Commit: e.Commit})
	}
	return m.Replica, true
}

// Restarts is how many times peer was seen with a new incarnation.
func (l *Liveness) Restarts(peer uint8) uint64 {
	if int(peer) >= len(l.peers) {
		return 0
	}
	return l.peers[peer].restarts
}

// HasReady reports whether outputs are pending.
func (l *Liveness) HasReady() bool {
	return len(l.ready.Send)+len(l.ready.Lost)+len(l.ready.Found)+len(l.ready.Entries) > 0
}

// Ready returns and clears the pending outputs.
func (l *Liveness) Ready() LivenessReady {
	rd := l.ready
	l.ready = LivenessReady{}
	return rd
}

func (l *Liveness) drop(reason string) { l.Dropped[reason]++ }
