package actors

import (
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"iggynode/config"
	"iggynode/internal/framebuf"
	clientplane "iggynode/plane/client"
	replicaplane "iggynode/plane/replica"
	"iggynode/storage"
	"iggynode/vsr"
	"iggynode/wire"
)

// cluster is a node's view of its replica set: who it is, the roster it
// booted with, and the replica-plane links (nil on a single node, which
// is a cluster of one with no links).
//
// n is the number of configured nodes (1 without a cluster) and only
// says whether this node is clustered; the members are the metadata
// group's roster (vsr.Roster, docs/reconfiguration.md), which a
// committed reconfiguration changes at run time.
type cluster struct {
	self uint8
	n    int
	// joiner: this node boots outside the roster (cluster.join).
	joiner bool
	// bootstrap is the epoch-0 roster of the configuration: voters
	// 0..n-1, or for a joiner the listed nodes but itself.
	bootstrap vsr.Roster
	id        wire.U128
	links     *replicaplane.Node
	tickStop  chan struct{}
	// peers are the peer actors, one per other member, by id; read by
	// the links' goroutines, replaced when the roster changes.
	peers [vsr.MaxReplicas]atomic.Pointer[actor.PID]
	// peerMu serializes spawning peer actors (the metadata actor and
	// startReplicaPlane).
	peerMu sync.Mutex
	// addrs are the replica-plane addresses the links were last given.
	addrMu sync.Mutex
	addrs  [vsr.MaxReplicas]string
}

// clustered reports whether this node runs with peers (a cluster of one
// has no replica plane).
func (c *cluster) clustered() bool { return c.n > 1 || c.joiner }

// peerFrame is one replica-plane frame from peer `from`.
type peerFrame struct {
	from  uint8
	frame []byte
	// owner is the pooled buffer a prepare's frame was read into (nil:
	// none). A partition that journals the prepare takes it over
	// (adoptPeerBuffer); any other receiver leaves it to the collector.
	owner *framebuf.Buf
}

// tick is 10 ms of consensus time (replica-plane.md 4.7).
type tick struct{}

// tickInterval is the consensus tick (4.7).
const tickInterval = 10 * time.Millisecond

// ticks converts a configured duration into ticks: max(1, ms/10).
func ticks(d config.Duration) int { return max(1, int(d.D()/tickInterval)) }

// coreConfig is the vsr configuration of one group on this node.
func (n *Node) coreConfig(group uint64, metadata bool) vsr.Config {
	c := n.opts.Config
	depth := c.Partition.PrepareQueueDepth
	if metadata {
		depth = c.Metadata.PrepareQueueDepth
	}
	quiesce := !metadata && n.cluster.clustered() && c.Cluster.Quiescence
	bootstrap := n.cluster.bootstrap // the core keeps the pointer's copy
	var live func(uint8) bool
	if quiesce {
		live = n.peerLive.live
	}
	return vsr.Config{
		Quiesce: quiesce, Live: live,
		// Partition groups have no client table (vsr/fate.go).
		AwaitFate: !metadata, FateTicks: ticks(c.Cluster.OutcomeWait),
		Cluster: n.cluster.id, Group: group, Replica: n.cluster.self, ReplicaCount: n.cluster.n, Roster: &bootstrap,
		PrepareQueueDepth: int(depth), Metadata: metadata,
		PrepareRetransmitTicks: ticks(c.Cluster.PrepareRetransmitInterval),
		CommitBroadcastTicks:   ticks(c.Cluster.CommitBroadcastInterval),
		HeartbeatTimeoutTicks:  ticks(c.Cluster.HeartbeatTimeout),
		RepairRetryTicks:       ticks(c.Cluster.RepairRetryInterval),
		// 10.1 ranges: chunk 1..1024 and below the peer queue, ring
		// 1..65536 entries, bytes up to 256 MiB.
		RepairChunk:               int(min(max(c.Cluster.RepairChunkMax, 1), 1024, max(c.MessageBus.PeerQueueCapacity, 2)-1)),
		PeerQueueCapacity:         int(c.MessageBus.PeerQueueCapacity),
		ViewChangeRetransmitTicks: ticks(c.Cluster.ViewChangeRetransmitInterval),
		ViewChangeStatusTicks:     ticks(c.Cluster.ViewChangeStatusTimeout),
		RequestStartViewTicks:     ticks(c.Cluster.RequestStartViewRetransmitInterval),
		ViewProbeAttemptsMax:      int(max(c.Cluster.ViewProbeAttemptsMax, 1)),
		RetainOps:                 int(min(max(c.Partition.EvictedRingCapacity, 1), 65536)),
		RetainBytes:               int(min(max(uint64(c.Partition.EvictedRingBytesMax), 1), 256<<20)),
		Seed:                      uint64(n.cluster.self)<<32 ^ group,
	}
}

// persistState writes a group's superblock before the core's view-scoped
// sends go out (replica-plane.md 6.13) and reports the outcome to the
// core; false means the Ready's sends must be dropped.
func (n *Node) persistState(log *slog.Logger, core *vsr.Replica, group uint64, s vsr.State, frontier uint64) bool {
	// The view head first (not synced; the superblock's sync covers it):
	// a restart reads it with the superblock it goes with.
	head := binary.LittleEndian.AppendUint64(make([]byte, 0, 8+len(s.ViewHeaders)), s.ViewHead)
	err := n.store.Put(viewHeadKey(group), append(head, s.ViewHeaders...), false)
	if err == nil {
		err = n.persistRoster(group, s)
	}
	if err == nil {
		err = n.store.SaveVsrState(group, storage.VsrState{Cluster: n.cluster.id, ReplicaID: n.cluster.self,
			ReplicaCount: uint8(n.cluster.n), View: s.View, LogView: s.LogView, CommitMax: s.CommitMax, OffsetFrontier: frontier}, true)
	}
	if err != nil {
		log.Error("superblock write failed: view-scoped sends held back", "group", group, "view", s.View, "err", err)
		core.StateFailed()
		if limit := n.opts.Config.Cluster.SuperblockWedgedFatalTimeout.D(); limit > 0 && core.StateFailingFor() >= ticks(config.Duration(limit)) {
			n.opts.FailStop(fmt.Sprintf("superblock of group %d unwritable for %v: %v", group, limit, err))
		}
		return false
	}
	core.StatePersisted()
	log.Debug("view state durable", "group", group, "view", s.View, "log_view", s.LogView, "status", core.Status().String())
	return true
}

// rosterRecord is a group's vsr.State.Roster, EpochOp and Removed, kept
// under rosterKey beside its superblock (written, not synced, before it,
// like the view head): vsr.EncodeRoster, u64 epoch op, u8 removed.
type rosterRecord struct {
	roster  vsr.Roster
	epochOp uint64
	removed bool
}

func rosterKey(group uint64) string { return fmt.Sprintf("vsr/%d/roster", group) }

// persistRoster writes the record when it differs from the last one
// written: a group on the bootstrap roster writes nothing, so the
// per-commit superblock writes of partitions cost no extra put.
func (n *Node) persistRoster(group uint64, s vsr.State) error {
	rec := rosterRecord{s.Roster, s.EpochOp, s.Removed}
	if last, ok := n.rosters.Load(group); ok && last.(rosterRecord) == rec {
		return nil
	} else if !ok && rec == (rosterRecord{roster: n.cluster.bootstrap}) {
		return nil
	}
	b := vsr.EncodeRoster(make([]byte, 0, vsr.RosterBodySize+9), rec.roster)
	b = binary.LittleEndian.AppendUint64(b, rec.epochOp)
	if rec.removed {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	if err := n.store.Put(rosterKey(group), b, false); err != nil {
		return err
	}
	n.rosters.Store(group, rec)
	return nil
}

// loadRoster reads a group's record back (ok false: the bootstrap
// roster, never changed).
func (n *Node) loadRoster(group uint64) (rosterRecord, bool, error) {
	v, ok, err := n.store.Get(rosterKey(group))
	if err != nil || !ok {
		return rosterRecord{}, false, err
	}
	if len(v) != vsr.RosterBodySize+9 {
		return rosterRecord{}, false, fmt.Errorf("group %d: roster record of %d bytes", group, len(v))
	}
	ro, err := vsr.DecodeRoster(v[:vsr.RosterBodySize])
	if err != nil {
		return rosterRecord{}, false, fmt.Errorf("group %d: %w", group, err)
	}
	rec := rosterRecord{ro, binary.LittleEndian.Uint64(v[vsr.RosterBodySize:]), v[vsr.RosterBodySize+8] == 1}
	n.rosters.Store(group, rec)
	return rec, true, nil
}

// forgetRoster drops a deleted group's record (dropPartitionData).
func (n *Node) forgetRoster(group uint64) {
	n.rosters.Delete(group)
	_ = n.store.Delete(rosterKey(group))
}

// viewHeadKey holds a group's vsr.State.ViewHead and ViewHeaders next to
// its superblock: the head (u64 LE), then the StartView suffix.
func viewHeadKey(group uint64) string { return fmt.Sprintf("vsr/%d/view_head", group) }

// loadViewHead reads them back (0 and nil when absent).
func (n *Node) loadViewHead(group uint64) (uint64, []byte, error) {
	v, ok, err := n.store.Get(viewHeadKey(group))
	if err != nil || !ok || len(v) < 8 {
		return 0, nil, err
	}
	return binary.LittleEndian.Uint64(v), v[8:], nil
}

// setupCluster reads the [cluster] section: this node's id and the
// bootstrap roster (a disabled cluster is a cluster of one). The nodes of
// a cluster's first start cover ids 0..n-1 (10.2); a joiner
// (cluster.join) lists the cluster it joins, any ids below 32, and its
// own entry.
func (n *Node) setupCluster() error {
	c := n.opts.Config.Cluster
	n.cluster = &cluster{n: 1, id: wire.ClusterID(c.Name), bootstrap: vsr.DefaultRoster(1)}
	if !c.Enabled {
		if c.Join {
			return errors.New("cluster: join needs cluster.enabled")
		}
		return nil
	}
	if len(c.Nodes) == 0 || len(c.Nodes) > replicaplane.MaxReplicas {
		return fmt.Errorf("cluster: %d nodes in the roster", len(c.Nodes))
	}
	var listed uint32
	for _, node := range c.Nodes {
		if node.ReplicaID < 0 || node.ReplicaID >= vsr.MaxReplicas || listed&(1<<node.ReplicaID) != 0 ||
			(!c.Join && node.ReplicaID >= len(c.Nodes)) {
			if c.Join {
				return fmt.Errorf("cluster: replica ids must be distinct and below %d", vsr.MaxReplicas)
			}
			return fmt.Errorf("cluster: replica ids must cover 0..%d exactly once", len(c.Nodes)-1)
		}
		listed |= 1 << node.ReplicaID
	}
	if c.ReplicaID < 0 || c.ReplicaID >= vsr.MaxReplicas || listed&(1<<c.ReplicaID) == 0 {
		return fmt.Errorf("cluster: this node's replica id %d is not in the roster", c.ReplicaID)
	}
	n.cluster.self, n.cluster.n = uint8(c.ReplicaID), len(c.Nodes)
	n.cluster.bootstrap = vsr.DefaultRoster(len(c.Nodes))
	if c.Join {
		others := listed &^ (1 << c.ReplicaID)
		if others == 0 {
			return errors.New("cluster: a joiner lists the nodes of the cluster it joins")
		}
		n.cluster.joiner = true
		n.cluster.bootstrap = vsr.Roster{Voters: others, Target: others}
	}
	return nil
}

// ensurePeer spawns the peer actor of replica id unless it runs.
func (n *Node) ensurePeer(id uint8) error {
	if id == n.cluster.self || id >= vsr.MaxReplicas {
		return nil
	}
	n.cluster.peerMu.Lock()
	defer n.cluster.peerMu.Unlock()
	if n.cluster.peers[id].Load() != nil {
		return nil
	}
	pid, err := n.supervised.SpawnNamed(n.props(func() actor.Actor { return &peerActor{n: n, id: id} }), "peer-"+strconv.Itoa(int(id)))
	if err != nil {
		return err
	}
	n.cluster.peers[id].Store(pid)
	return nil
}

// peerPIDs lists the running peer actors.
func (n *Node) peerPIDs() []*actor.PID {
	var out []*actor.PID
	for i := range n.cluster.peers {
		if p := n.cluster.peers[i].Load(); p != nil {
			out = append(out, p)
		}
	}
	return out
}

// roster is the replica-plane roster of the configuration.
func (n *Node) roster() []replicaplane.Peer {
	return configuredReplicaAddrs(n.opts.Config.Cluster.Nodes)
}

// startReplicaPlane opens the replica-plane links and the consensus tick
// (cluster mode only).
func (n *Node) startReplicaPlane() error {
	if !n.cluster.clustered() {
		return nil
	}
	// One peer actor per link, supervised and restarted like the
	// metadata actor; they exist before the links deliver frames.
	for _, p := range n.roster() {
		if err := n.ensurePeer(p.ID); err != nil {
			return err
		}
	}
	n.cluster.setReplicaAddrs(n.roster())
	c := n.opts.Config
	auth := c.Cluster.Auth
	tlsConf, tlsMode, err := n.replicaTLS()
	if err != nil {
		return fmt.Errorf("replica plane: %w", err)
	}
	links, err := replicaplane.Start(replicaplane.Config{
		Self: n.cluster.self, Roster: n.roster(), Listen: n.opts.ReplicaListen, ClusterName: c.Cluster.Name,
		AuthEnabled: auth.Enabled, SharedSecret: []byte(auth.SharedSecret), PreviousSharedSecret: []byte(auth.PreviousSharedSecret),
		TLS: tlsConf, AllowInsecure: c.Cluster.AllowInsecure,
		MaxFrameSize: uint32(c.MessageBus.MaxMessageSize), PeerQueueCapacity: int(c.MessageBus.PeerQueueCapacity),
		PeerQueueBytes: int(c.MessageBus.PeerQueueBytes),
		MaxBatch:       int(c.MessageBus.MaxBatch), ReconnectPeriod: n.opts.ReconnectPeriod, HandshakeGrace: c.MessageBus.HandshakeGrace.D(),
		Logger: n.log.With("plane", "replica"),
	}, replicaHandler{n})
	if err != nil {
		return fmt.Errorf("replica plane: %w", err)
	}
	n.cluster.links = links
	// A committed roster, recovered before the links existed, replaces
	// the configured one now.
	n.root().Send(n.refs.metadata, &rosterDrainCheck{})
	n.log.Info("replica plane up", "address", links.Addr().String(), "replica", n.cluster.self, "replicas", n.cluster.n,
		"auth", auth.Enabled, "tls", tlsMode)
	if c.Cluster.Quiescence {
		pid, err := n.supervised.SpawnNamed(n.props(func() actor.Actor { return newLivenessActor(n) }), "liveness")
		if err != nil {
			return err
		}
		n.refs.liveness.Store(pid)
	}
	go n.runClock()
	return nil
}

// replicaTLS builds the replica plane's TLS from [cluster.tls] and names
// its mode for the start-up line: mutual TLS under ca_file, or in
// self_signed mode an ephemeral certificate with no verification either
// way (replica-plane.md 3.7; plane/replica's doc).
func (n *Node) replicaTLS() (*tls.Config, string, error) {
	t := n.opts.Config.Cluster.TLS
	switch {
	case !t.Enabled:
		return nil, "off", nil
	case t.SelfSigned:
		if t.CertFile != "" || t.KeyFile != "" || t.CAFile != "" {
			n.log.Warn("cluster.tls.self_signed is set: ignoring cert_file, key_file and ca_file")
		}
		s, err := clientplane.GenerateSelfSigned()
		if err != nil {
			return nil, "", err
		}
		n.log.Warn("replica plane TLS is self_signed: peer certificates are not verified; only cluster.auth keeps strangers out")
		return replicaplane.AnyPeerTLS(s.Certificate), "self_signed", nil
	}
	conf, err := replicaplane.MutualTLS(t.CertFile, t.KeyFile, t.CAFile)
	return conf, "mutual", err
}

// ReplicaAddr is the bound replica-plane address ("" on a single node).
func (n *Node) ReplicaAddr() string {
	if n.cluster == nil || n.cluster.links == nil {
		return ""
	}
	return n.cluster.links.Addr().String()
}

// SetReplicaRoster gives the replica-plane addresses of every replica
// (tests start nodes on port 0 and learn the addresses afterwards).
func (n *Node) SetReplicaRoster(peers []replicaplane.Peer) error {
	if n.cluster.links == nil {
		return errors.New("not a cluster node")
	}
	if err := n.cluster.links.SetRoster(peers); err != nil {
		return err
	}
	n.cluster.setReplicaAddrs(peers)
	n.root().Send(n.refs.metadata, &rosterDrainCheck{}) // a committed roster still wins
	return nil
}

// replicaHandler hands each link's frames to that link's peer actor.
type replicaHandler struct{ n *Node }

func (h replicaHandler) PeerUp(id uint8) { h.n.log.Info("replica link up", "peer", id) }
func (h replicaHandler) PeerDown(id uint8) {
	h.n.log.Info("replica link down", "peer", id)
}
func (h replicaHandler) Frame(from uint8, frame []byte, owner *framebuf.Buf) {
	if int(from) < len(h.n.cluster.peers) {
		if pid := h.n.cluster.peers[from].Load(); pid != nil {
			h.n.root().Send(pid, &peerFrame{from: from, frame: frame, owner: owner})
		}
	}
}

// announceRoute tells every peer actor where a partition group lives now.
func (m *metadataActor) announceRoute(ctx actor.Context, group uint64, pid *actor.PID) {
	for _, peer := range m.n.peerPIDs() {
		ctx.Send(peer, &routeUpdate{group: group, pid: pid})
	}
	if l := m.n.refs.liveness.Load(); l != nil {
		ctx.Send(l, &routeUpdate{group: group, pid: pid})
	}
}

// send carries a core's outgoing frames to the peers.
func (n *Node) send(envs []vsr.Envelope) { n.sendPinned(envs, nil) }

// sendPinned is send with each frame pinned to the pooled buffer it
// reads (pinOf, when set; nil: none), which the replica plane drops once
// the frame is written or discarded.
func (n *Node) sendPinned(envs []vsr.Envelope, pinOf func(vsr.Envelope) wire.Pin) {
	if n.cluster.links == nil {
		return
	}
	for _, e := range envs {
		var pin wire.Pin
		if pinOf != nil {
			pin = pinOf(e)
		}
		n.cluster.links.SendPinned(e.To, e.Head, e.Body, pin)
	}
}

// routePeerFrame handles the replica-plane frames a peer actor hands the
// metadata actor: session forwarding and the metadata group's consensus.
func (m *metadataActor) routePeerFrame(ctx actor.Context, f *peerFrame) {
	h := wire.HeaderOf(f.frame)
	group, ok := wire.GroupOf(h)
	if !ok {
		return
	}
	if c := h.Command(); c >= wire.CmdForwardRegister && c <= wire.CmdForwardLogoutResult {
		m.onForwardFrame(ctx, f)
		return
	}
	if c := h.Command(); c >= wire.CmdRequestStateTransfer && c <= wire.CmdStateChunk {
		if group == wire.MetadataGroup {
			m.transfers.onFrame(ctx, f.from, f.frame)
		}
		return
	}
	if group == wire.MetadataGroup {
		m.tr.peerFrame(f.from, f.frame)
		m.core.Step(f.frame)
		m.n.readiness.stepped(m.core, f.from, h.View())
		m.drive(ctx)
	}
}

// onTick is the clock's wake-up: Receive advanced the core already.
func (m *metadataActor) onTick(ctx actor.Context) {
	m.time.scheduled = 0
	m.drive(ctx)
	m.transfers.tick(ctx)
}

// setClientRoster replaces the client-facing roster GetClusterMetadata reports.
type setClientRoster struct{ nodes []config.Node }

// SetClientRoster gives the client-facing address and ports of every
// replica, for nodes whose listeners bound port 0 (tests).
func (n *Node) SetClientRoster(nodes []config.Node) {
	n.root().Send(n.refs.metadata, &setClientRoster{nodes: append([]config.Node(nil), nodes...)})
}
