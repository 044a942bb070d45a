package actors

import (
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"iggynode/config"
	clientplane "iggynode/plane/client"
	replicaplane "iggynode/plane/replica"
	"iggynode/storage"
	"iggynode/vsr"
	"iggynode/wire"
)

// cluster is a node's view of its replica set: who it is, how many
// replicas there are, and the replica-plane links (nil on a single node,
// which is a cluster of one with no links).
type cluster struct {
	self     uint8
	n        int
	id       wire.U128
	links    *replicaplane.Node
	tickStop chan struct{}
	// peers are the peer actors, one per other replica, indexed by id.
	peers []*actor.PID
}

// peerFrame is one replica-plane frame from peer `from`.
type peerFrame struct {
	from  uint8
	frame []byte
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
	quiesce := !metadata && n.cluster.n > 1 && c.Cluster.Quiescence
	var live func(uint8) bool
	if quiesce {
		live = n.peerLive.live
	}
	return vsr.Config{
		Quiesce: quiesce, Live: live,
		Cluster: n.cluster.id, Group: group, Replica: n.cluster.self, ReplicaCount: n.cluster.n,
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

// setupCluster reads the [cluster] section: this node's id and the roster
// size (a disabled cluster is a cluster of one).
func (n *Node) setupCluster() error {
	c := n.opts.Config.Cluster
	n.cluster = &cluster{n: 1, id: wire.ClusterID(c.Name)}
	if !c.Enabled {
		return nil
	}
	if len(c.Nodes) == 0 || len(c.Nodes) > replicaplane.MaxReplicas {
		return fmt.Errorf("cluster: %d nodes in the roster", len(c.Nodes))
	}
	seen := make(map[int]bool)
	for _, node := range c.Nodes {
		if node.ReplicaID < 0 || node.ReplicaID >= len(c.Nodes) || seen[node.ReplicaID] {
			return fmt.Errorf("cluster: replica ids must cover 0..%d exactly once", len(c.Nodes)-1)
		}
		seen[node.ReplicaID] = true
	}
	if c.ReplicaID < 0 || c.ReplicaID >= len(c.Nodes) {
		return fmt.Errorf("cluster: this node's replica id %d is not in the roster", c.ReplicaID)
	}
	n.cluster.self, n.cluster.n = uint8(c.ReplicaID), len(c.Nodes)
	return nil
}

// roster is the replica-plane roster of the configuration.
func (n *Node) roster() []replicaplane.Peer {
	var peers []replicaplane.Peer
	for _, node := range n.opts.Config.Cluster.Nodes {
		addr := ""
		if node.Ports.TCPReplica != 0 {
			addr = net.JoinHostPort(node.IP, strconv.Itoa(int(node.Ports.TCPReplica)))
		}
		peers = append(peers, replicaplane.Peer{ID: uint8(node.ReplicaID), Addr: addr})
	}
	return peers
}

// startReplicaPlane opens the replica-plane links and the consensus tick
// (cluster mode only).
func (n *Node) startReplicaPlane() error {
	if n.cluster.n == 1 {
		return nil
	}
	// One peer actor per link, supervised and restarted like the
	// metadata actor; they exist before the links deliver frames.
	root := n.system.Root.WithGuardian(restartStrategy(n.refs, n.log))
	n.cluster.peers = make([]*actor.PID, n.cluster.n)
	for id := 0; id < n.cluster.n; id++ {
		if uint8(id) == n.cluster.self {
			continue
		}
		peer := uint8(id)
		pid, err := root.SpawnNamed(n.props(func() actor.Actor { return &peerActor{n: n, id: peer} }),
			"peer-"+strconv.Itoa(id))
		if err != nil {
			return err
		}
		n.cluster.peers[id] = pid
	}
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
	n.log.Info("replica plane up", "address", links.Addr().String(), "replica", n.cluster.self, "replicas", n.cluster.n,
		"auth", auth.Enabled, "tls", tlsMode)
	if c.Cluster.Quiescence {
		pid, err := root.SpawnNamed(n.props(func() actor.Actor { return newLivenessActor(n) }), "liveness")
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
	return n.cluster.links.SetRoster(peers)
}

// replicaHandler hands each link's frames to that link's peer actor.
type replicaHandler struct{ n *Node }

func (h replicaHandler) PeerUp(id uint8) { h.n.log.Info("replica link up", "peer", id) }
func (h replicaHandler) PeerDown(id uint8) {
	h.n.log.Info("replica link down", "peer", id)
}
func (h replicaHandler) Frame(from uint8, frame []byte) {
	if int(from) < len(h.n.cluster.peers) && h.n.cluster.peers[from] != nil {
		h.n.root().Send(h.n.cluster.peers[from], &peerFrame{from: from, frame: frame})
	}
}

// announceRoute tells every peer actor where a partition group lives now.
func (m *metadataActor) announceRoute(ctx actor.Context, group uint64, pid *actor.PID) {
	for _, peer := range m.n.cluster.peers {
		if peer != nil {
			ctx.Send(peer, &routeUpdate{group: group, pid: pid})
		}
	}
	if l := m.n.refs.liveness.Load(); l != nil {
		ctx.Send(l, &routeUpdate{group: group, pid: pid})
	}
}

// send carries a core's outgoing frames to the peers.
func (n *Node) send(envs []vsr.Envelope) {
	if n.cluster.links == nil {
		return
	}
	for _, e := range envs {
		n.cluster.links.Send(e.To, e.Head, e.Body)
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
