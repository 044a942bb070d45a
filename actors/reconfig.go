package actors

import (
	"errors"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"iggynode/config"
	"iggynode/metadata"
	replicaplane "iggynode/plane/replica"
	"iggynode/vsr"
	"iggynode/wire"
)

// Reconfiguration, the node's shell (issue 22; the protocol is the
// core's, vsr/reconfig.go; the map is docs/reconfiguration.md).
//
//   - The metadata group's committed roster (metadata.State.Roster) is
//     the cluster's membership: once one committed, it replaces
//     [[cluster.nodes]] for the replica-plane links, the peer actors and
//     GetClusterMetadata. Before that the configuration is the roster
//     (epoch 0). Its core's part is persisted beside each group's
//     superblock (rosterRecord, cluster.go) and recovered with it.
//   - A node removed from the roster keeps its links and serves repair
//     and state transfer for cluster.removed_drain_interval (S6: it may
//     be the only one holding what a laggard needs), answers clients
//     NodeRemoved (except Ping, GetClusterMetadata and ClusterStatus, so
//     SDKs can move on), then calls Options.Removed (cmd/node exits).
//     The members keep their links to a departed node for the same
//     interval, then close them.
//   - A joiner (cluster.join) boots with the configured nodes but itself
//     as its roster: its cores do nothing until a frame of a newer epoch
//     reaches them, then transfer state (vsr/reconfig.go's joiners).

// rosterNow is the metadata roster in force: the committed one, or the
// configuration's as epoch 0 (the client-facing fields from the
// configuration, the replica-plane addresses from the links' roster).
func (m *metadataActor) rosterNow() metadata.Roster {
	if r, ok := m.state.Roster(); ok {
		return r
	}
	r := metadata.Roster{Roster: m.n.cluster.bootstrap}
	nodes := m.n.opts.Config.Cluster.Nodes
	if m.rosterNodes != nil {
		nodes = m.rosterNodes
	}
	for _, node := range nodes {
		id := uint8(node.ReplicaID)
		if !r.Member(id) {
			continue
		}
		r.Nodes = append(r.Nodes, rosterNodeOf(node, m.n.cluster.replicaAddr(id)))
	}
	return r
}

// rosterNodeOf is a configured node as a roster entry.
func rosterNodeOf(node config.Node, replicaAddr string) metadata.RosterNode {
	return metadata.RosterNode{ID: uint8(node.ReplicaID), Address: replicaAddr, Name: node.Name, IP: node.IP,
		Ports: metadata.NodePorts{TCP: node.Ports.TCP, QUIC: node.Ports.QUIC, HTTP: node.Ports.HTTP, WebSocket: node.Ports.WebSocket}}
}

// replicaAddr is the replica-plane address the links know for id.
func (c *cluster) replicaAddr(id uint8) string {
	c.addrMu.Lock()
	defer c.addrMu.Unlock()
	return c.addrs[id]
}

// setReplicaAddrs records the links' roster.
func (c *cluster) setReplicaAddrs(peers []replicaplane.Peer) {
	c.addrMu.Lock()
	defer c.addrMu.Unlock()
	c.addrs = [vsr.MaxReplicas]string{}
	for _, p := range peers {
		c.addrs[p.ID] = p.Addr
	}
}

// configuredReplicaAddrs are the replica-plane addresses the
// configuration gives.
func configuredReplicaAddrs(nodes []config.Node) []replicaplane.Peer {
	var peers []replicaplane.Peer
	for _, node := range nodes {
		addr := ""
		if node.Ports.TCPReplica != 0 {
			addr = net.JoinHostPort(node.IP, strconv.Itoa(int(node.Ports.TCPReplica)))
		}
		peers = append(peers, replicaplane.Peer{ID: uint8(node.ReplicaID), Addr: addr})
	}
	return peers
}

// departedNode is a node a committed roster removed: the links to it stay
// until the drain ends.
type departedNode struct {
	addr  string
	until time.Time
}

// followRoster brings the node in line with the committed metadata
// roster: the core's trailer (which R2 carries), the peer actors, and the
// replica-plane links (members, departed nodes within their drain, and
// this node itself when it was removed: its links to the members stay
// while it drains).
func (m *metadataActor) followRoster() {
	r, ok := m.state.Roster()
	if !ok {
		return
	}
	m.core.SetRosterTrailer(metadata.EncodeRoster(nil, r)[vsr.RosterBodySize:])
	if m.n.cluster.links == nil {
		return
	}
	now := time.Now()
	drain := m.n.opts.Config.Cluster.RemovedDrainInterval.D()
	named := map[uint8]bool{}
	var peers []replicaplane.Peer
	for _, node := range r.Nodes {
		named[node.ID] = true
		peers = append(peers, replicaplane.Peer{ID: node.ID, Addr: node.Address})
	}
	for id := uint8(0); id < vsr.MaxReplicas; id++ {
		if addr := m.n.cluster.replicaAddr(id); addr != "" && !named[id] && id != m.n.cluster.self {
			if _, ok := m.departed[id]; !ok {
				if m.departed == nil {
					m.departed = map[uint8]departedNode{}
				}
				m.departed[id] = departedNode{addr: addr, until: now.Add(drain)}
				m.log.Info("node left the roster: links kept while it drains", "replica", id, "drain", drain)
			}
		}
	}
	for id, d := range m.departed {
		switch {
		case named[id]:
			delete(m.departed, id) // named again
		case now.After(d.until):
			delete(m.departed, id)
			m.log.Info("departed node drained: link closed", "replica", id)
		default:
			peers = append(peers, replicaplane.Peer{ID: id, Addr: d.addr})
		}
	}
	for _, p := range peers {
		if err := m.n.ensurePeer(p.ID); err != nil {
			m.log.Error("peer actor for a roster node", "replica", p.ID, "err", err)
		}
	}
	if err := m.n.cluster.links.SetRoster(peers); err != nil {
		m.log.Error("replica links do not follow the roster", "roster", r.Roster.String(), "err", err)
		return
	}
	m.n.cluster.setReplicaAddrs(peers)
	if l := m.n.refs.liveness.Load(); l != nil {
		var mask uint32
		for _, p := range peers {
			mask |= 1 << p.ID
		}
		m.n.root().Send(l, &liveMembers{mask: mask &^ (1 << m.n.cluster.self)})
	}
}

// rosterDrainCheck is sent when a departed node's drain may have ended.
type rosterDrainCheck struct{}

// removedDrainOver is sent when this node's own drain ended.
type removedDrainOver struct{}

// observeRemoval notices, once, that the core left the roster: clients
// are refused from then on and the node stops after the drain.
func (m *metadataActor) observeRemoval(ctx actor.Context) {
	if !m.core.Removed() || m.n.refs.removed.Load() {
		return
	}
	m.n.refs.removed.Store(true)
	drain := m.n.opts.Config.Cluster.RemovedDrainInterval.D()
	m.log.Warn("this node was removed from the cluster: serving repair and transfer while it drains, then stopping",
		"roster", m.core.Roster().String(), "drain", drain)
	self, root := ctx.Self(), m.n.root()
	time.AfterFunc(drain, func() { root.Send(self, &removedDrainOver{}) })
}

// onRemovedDrainOver ends a removed node's drain once its partition
// replicas were handed over too (their groups follow the roster), or at
// removedDrainLimit drains whatever they say.
func (m *metadataActor) onRemovedDrainOver(ctx actor.Context) {
	if !m.core.Removed() {
		return // named again meanwhile
	}
	m.drainChecks++
	if left := m.localMembers(); left > 0 && m.drainChecks < removedDrainLimit {
		if m.drainChecks == 1 {
			m.log.Info("removed node waits for its partition groups to hand over", "groups", left)
		}
		self, root := ctx.Self(), m.n.root()
		time.AfterFunc(m.n.opts.Config.Cluster.RemovedDrainInterval.D()/4+time.Second, func() { root.Send(self, &removedDrainOver{}) })
		return
	}
	m.log.Warn("removed node drained: stopping", "partition_groups_still_member", m.localMembers())
	if m.n.opts.Removed != nil {
		go m.n.opts.Removed()
	}
}

// removedDrainLimit bounds the drain's re-checks (a quarter drain each).
const removedDrainLimit = 16

// scheduleDrainCheck re-runs followRoster when the first departed node's
// drain ends, so its link closes.
func (m *metadataActor) scheduleDrainCheck(ctx actor.Context) {
	var first time.Time
	for _, d := range m.departed {
		if first.IsZero() || d.until.Before(first) {
			first = d.until
		}
	}
	if first.IsZero() {
		return
	}
	self, root := ctx.Self(), m.n.root()
	time.AfterFunc(time.Until(first)+10*time.Millisecond, func() { root.Send(self, &rosterDrainCheck{}) })
}

// rosterCommitted follows a roster the state machine just applied.
func (m *metadataActor) rosterCommitted(ctx actor.Context) {
	r, _ := m.state.Roster()
	m.log.Info("cluster roster committed", "roster", r.Roster.String(), "nodes", len(r.Nodes))
	m.tr.rosterEvent(r.Roster)
	m.followRoster()
	m.scheduleDrainCheck(ctx)
	m.answerReconfigs(ctx)
	m.pushPlacements(ctx)
	m.countMoving()
	m.followGroups(ctx)
}

// clientNodes are the nodes GetClusterMetadata lists under a committed
// roster: its members, each as the roster describes it, but with the
// configured entry (its advertised-address selectors) where that entry
// is the same node (same id and replica-plane address).
func clientNodes(r metadata.Roster, configured []config.Node) []config.Node {
	out := make([]config.Node, 0, len(r.Nodes))
	for _, rn := range r.Nodes {
		node := config.Node{Name: rn.Name, IP: rn.IP, ReplicaID: int(rn.ID),
			Ports: config.Ports{TCP: rn.Ports.TCP, QUIC: rn.Ports.QUIC, HTTP: rn.Ports.HTTP, WebSocket: rn.Ports.WebSocket}}
		node.Name, node.IP = nodeDefaults(rn.ID, node.Name, node.IP, rn.Address)
		for _, c := range configured {
			if c.ReplicaID == int(rn.ID) && sameNode(c, node) {
				node = c
				break
			}
		}
		out = append(out, node)
	}
	return out
}

// sameNode: a configured entry still describes the roster's node when
// its client-facing IP and ports are the roster's.
func sameNode(c, rn config.Node) bool {
	return c.IP == rn.IP && c.Ports.TCP == rn.Ports.TCP && c.Ports.QUIC == rn.Ports.QUIC &&
		c.Ports.HTTP == rn.Ports.HTTP && c.Ports.WebSocket == rn.Ports.WebSocket
}

// adminWait is a cluster admin request answered once a roster of epoch
// (or a later one) committed.
type adminWait struct {
	req   *clientRequest
	epoch uint32
}

// onClusterAdmin serves 9001-9004 (docs/reconfiguration.md, "Admin
// surface"). A change is proposed by the metadata primary's core
// (ReconfigureWith, RenewEpoch) with every node's entry as the trailer,
// and answered with the status once its first R committed; the rest of
// the change (R2, once the learners hold the log) runs on its own.
func (m *metadataActor) onClusterAdmin(ctx actor.Context, req *clientRequest) {
	hdr := &req.hdr
	body := req.frame[wire.HeaderSize:]
	answer := func(code wire.ErrorCode, payload []byte) {
		m.reply(ctx, req, &replyOut{frame: readReply(hdr, m.commit(), code, payload)})
	}
	user := req.bound.userID
	if hdr.Code == wire.CodeClusterStatus {
		var x wire.ClusterStatus
		switch {
		case !m.state.Allowed(user, metadata.RuleServerRead, 0, 0):
			answer(wire.ErrUnauthorized, nil)
		case x.Decode(body) != nil:
			answer(wire.ErrInvalidCommand, nil)
		default:
			answer(0, m.clusterStatus().AppendTo(nil))
		}
		return
	}
	switch {
	case !m.state.Allowed(user, metadata.RuleServerManage, 0, 0):
		answer(wire.ErrUnauthorized, nil)
		return
	case m.core.Removed():
		answer(wire.ErrNodeRemoved, nil)
		return
	case !m.n.cluster.clustered():
		// A node without a replica plane cannot take peers (start it
		// with [cluster] enabled to grow it).
		answer(wire.ErrFeatureUnavailable, nil)
		return
	case !m.core.Leading():
		answer(wire.ErrTransientNotAccepted, nil)
		return
	case !m.core.CaughtUpPrimary():
		answer(wire.ErrTransientNotCommitted, nil)
		return
	}
	cur := m.rosterNow()
	ro := m.core.Roster()
	// One change at a time; removing a learner is how an operator calls
	// off an add whose node never caught up (the core redirects the
	// change to the smaller target).
	var abort wire.ClusterRemove
	aborting := hdr.Code == wire.CodeClusterRemove && abort.Decode(body) == nil && ro.Learner(abort.ID)
	if (ro.Changing() && !aborting) || len(m.adminWaits) > 0 {
		answer(wire.ErrReconfigurationInProgress, nil)
		return
	}
	nodes := slices.Clone(cur.Nodes)
	var target uint32
	renew := false
	switch hdr.Code {
	case wire.CodeClusterAdd:
		var x wire.ClusterAdd
		if x.Decode(body) != nil || x.Validate() != nil || ro.Member(x.Spec.ID) {
			answer(wire.ErrInvalidCommand, nil)
			return
		}
		nodes = append(nodes, rosterNodeOfSpec(x.Spec))
		target = ro.Voters | 1<<x.Spec.ID
	case wire.CodeClusterRemove:
		var x wire.ClusterRemove
		if x.Decode(body) != nil || x.Validate() != nil || !ro.Member(x.ID) || ro.Voters == 1<<x.ID {
			answer(wire.ErrInvalidCommand, nil)
			return
		}
		target = ro.Target &^ (1 << x.ID)
	case wire.CodeClusterReplace:
		var x wire.ClusterReplace
		if x.Decode(body) != nil || x.Validate() != nil || !ro.Voter(x.OldID) || (x.Spec.ID != x.OldID && ro.Member(x.Spec.ID)) {
			answer(wire.ErrInvalidCommand, nil)
			return
		}
		if x.Spec.ID == x.OldID {
			nodes = slices.DeleteFunc(nodes, func(n metadata.RosterNode) bool { return n.ID == x.OldID })
			renew, target = true, ro.Voters
		} else {
			target = ro.Voters&^(1<<x.OldID) | 1<<x.Spec.ID
		}
		nodes = append(nodes, rosterNodeOfSpec(x.Spec))
	}
	// Every member of either step needs its entry, or the state machine
	// would refuse the R the core takes.
	for id := uint8(0); id < vsr.MaxReplicas; id++ {
		if (ro.Members()|target)&(1<<id) == 0 {
			continue
		}
		if i := slices.IndexFunc(nodes, func(n metadata.RosterNode) bool { return n.ID == id }); i < 0 || nodes[i].Address == "" {
			m.log.Warn("cluster change refused: a member's replica address is unknown", "replica", id)
			answer(wire.ErrInvalidCommand, nil)
			return
		}
	}
	trailer := metadata.EncodeRoster(nil, metadata.Roster{FromVoters: ro.Voters, Nodes: nodes})[vsr.RosterBodySize:]
	var err error
	if renew {
		err = m.core.RenewEpoch(trailer, m.n.opts.Clock())
	} else {
		err = m.core.ReconfigureWith(target, trailer, m.n.opts.Clock())
	}
	switch {
	case errors.Is(err, vsr.ErrReconfiguring):
		answer(wire.ErrReconfigurationInProgress, nil)
		return
	case errors.Is(err, vsr.ErrRemoved):
		answer(wire.ErrNodeRemoved, nil)
		return
	case errors.Is(err, vsr.ErrNotPrimary), errors.Is(err, vsr.ErrBusy):
		answer(wire.ErrTransientNotAccepted, nil)
		return
	case err != nil:
		m.log.Warn("cluster change refused by the core", "err", err)
		answer(wire.ErrInvalidCommand, nil)
		return
	}
	if m.core.Roster() == ro && m.core.PipelineLen() == 0 {
		answer(0, m.clusterStatus().AppendTo(nil)) // already there
		return
	}
	m.log.Info("cluster change proposed", "command", hdr.Code.String(), "from", ro.String(), "target_voters", target)
	m.adminWaits = append(m.adminWaits, adminWait{req: req, epoch: ro.Epoch + 1})
	m.drive(ctx)
}

// answerReconfigs answers the admin requests whose R committed.
func (m *metadataActor) answerReconfigs(ctx actor.Context) {
	epoch := m.core.Epoch()
	kept := m.adminWaits[:0]
	for _, w := range m.adminWaits {
		if epoch >= w.epoch {
			m.reply(ctx, w.req, &replyOut{frame: readReply(&w.req.hdr, m.commit(), 0, m.clusterStatus().AppendTo(nil))})
			continue
		}
		kept = append(kept, w)
	}
	m.adminWaits = kept
}

// abandonReconfigs answers pending admin requests "outcome unknown" when
// this node stops leading: the R may still commit under the next
// primary, which ClusterStatus shows.
func (m *metadataActor) abandonReconfigs(ctx actor.Context) {
	if len(m.adminWaits) == 0 || m.core.Leading() {
		return
	}
	for _, w := range m.adminWaits {
		m.reply(ctx, w.req, &replyOut{frame: readReply(&w.req.hdr, m.commit(), wire.ErrTransientNotCommitted, nil)})
	}
	m.adminWaits = nil
}

// rosterNodeOfSpec is a NodeSpec as a roster entry (the defaults of the
// admin surface: name iggy-node-<id>, ip the replica address's host).
func rosterNodeOfSpec(s wire.NodeSpec) metadata.RosterNode {
	n := metadata.RosterNode{ID: s.ID, Address: s.ReplicaAddress, Name: s.Name, IP: s.IP,
		Ports: metadata.NodePorts{TCP: s.TCPPort, QUIC: s.QUICPort, HTTP: s.HTTPPort, WebSocket: s.WebSocketPort}}
	n.Name, n.IP = nodeDefaults(s.ID, n.Name, n.IP, s.ReplicaAddress)
	return n
}

// nodeDefaults fills what a NodeSpec may leave empty (the admin
// surface's contract): name iggy-node-<id>, ip the replica address's host.
func nodeDefaults(id uint8, name, ip, replicaAddr string) (string, string) {
	if name == "" {
		name = "iggy-node-" + strconv.Itoa(int(id))
	}
	if ip == "" {
		ip, _, _ = net.SplitHostPort(replicaAddr)
	}
	return name, ip
}

// clusterStatus is the ClusterStatus reply as this node sees it.
func (m *metadataActor) clusterStatus() wire.ClusterStatusReply {
	ro := m.core.Roster()
	st := wire.ClusterStatusReply{Epoch: ro.Epoch, Voters: ro.Voters, Learners: ro.Learners, Target: ro.Target,
		EpochOp: m.core.EpochOp(), View: m.core.View()}
	nodes := m.rosterNow().Nodes
	self := m.n.cluster.self
	if m.core.Removed() && !slices.ContainsFunc(nodes, func(n metadata.RosterNode) bool { return n.ID == self }) {
		name, ip := nodeDefaults(self, "", "", m.n.ReplicaAddr())
		nodes = append(nodes, metadata.RosterNode{ID: self, Address: m.n.ReplicaAddr(), Name: name, IP: ip})
		slices.SortFunc(nodes, func(a, b metadata.RosterNode) int { return int(a.ID) - int(b.ID) })
	}
	normal := m.core.Status() == vsr.StatusNormal
	for _, n := range nodes {
		e := wire.ClusterStatusNode{Spec: wire.NodeSpec{ID: n.ID, ReplicaAddress: n.Address, Name: n.Name, IP: n.IP,
			TCPPort: n.Ports.TCP, QUICPort: n.Ports.QUIC, HTTPPort: n.Ports.HTTP, WebSocketPort: n.Ports.WebSocket},
			Primary: normal && !ro.Learner(n.ID) && m.core.Primary() == n.ID}
		switch {
		case ro.Learner(n.ID):
			e.Role = wire.MemberLearner
			e.Commit = m.core.LearnerAck(n.ID)
		case n.ID == self && m.core.Removed():
			e.Role = wire.MemberRemoved
		default:
			e.Role = wire.MemberVoter
		}
		if n.ID == self {
			e.Commit = m.core.CommitMin()
		} else if m.rosterStatus(n.ID) == wire.NodeUnreachable {
			e.Status = wire.MemberUnreachable
		}
		st.Nodes = append(st.Nodes, e)
	}
	st.Partitions = m.statusPartitions()
	return st
}

// Partition groups follow the metadata roster (docs/reconfiguration.md
// item 5). Every node drives the groups it leads, one at a time: the
// metadata actor hands the target voters (the committed roster's, once no
// change runs in it) to one local partition actor, whose core proposes
// the change if it leads the group and reports when the group's roster
// reached it; then the next. A partition that is not its group's primary
// keeps the target and asks for its turn if it becomes primary later, so
// no node scans groups it does not lead and an idle cluster sends
// nothing. A group whose change does not finish within
// groupFollowPatience (its learner cannot catch up) gives its turn up;
// its R2 still comes on its own when the learner does.

// followVoters asks a partition actor to bring its group to voters.
type followVoters struct{ voters uint32 }

// groupFollowed is a partition actor's answer: done (the group's roster
// is voters), or not its to do (not the primary; it asks again with
// groupWantsFollow if it becomes one). member says whether this replica
// is still a member of its group (the removed node's drain waits for
// none).
type groupFollowed struct {
	group  uint64
	voters uint32
	done   bool
	member bool
}

// groupWantsFollow: a partition became its group's primary with a target
// its roster has not reached.
type groupWantsFollow struct{ group uint64 }

// groupFollowTimeout ends the turn of a group that did not report.
type groupFollowTimeout struct {
	group uint64
	turn  uint64
}

const groupFollowPatience = 60 * time.Second

// groupFollower is the metadata actor's part.
type groupFollower struct {
	epoch   uint32 // the settled roster epoch the queue was filled for
	queue   []uint64
	current uint64
	active  bool
	turn    uint64
	// notMember are the local groups whose replica here reported it is no
	// longer a member (a group that never reported still is one).
	notMember map[uint64]bool
}

// followGroups starts the next group's turn when the roster settled.
func (m *metadataActor) followGroups(ctx actor.Context) {
	r, ok := m.state.Roster()
	if !ok || r.Changing() || !m.n.cluster.clustered() {
		return
	}
	f := &m.groups
	if f.epoch != r.Epoch {
		f.epoch, f.queue = r.Epoch, f.queue[:0]
		for g := range m.partitions {
			f.queue = append(f.queue, g)
		}
		slices.Sort(f.queue)
		m.log.Info("partition groups follow the roster and their placement", "voters", vsr.Roster{Voters: r.Voters}.String(), "local_groups", len(f.queue))
	}
	for !f.active && len(f.queue) > 0 {
		g := f.queue[0]
		f.queue = f.queue[1:]
		pid := m.partitions[g]
		if pid == nil {
			continue
		}
		f.current, f.active = g, true
		f.turn++
		ctx.Send(pid, &followVoters{voters: m.groupTarget(g, r)})
		self, root, turn := ctx.Self(), m.n.root(), f.turn
		time.AfterFunc(groupFollowPatience, func() { root.Send(self, &groupFollowTimeout{group: g, turn: turn}) })
	}
}

// onGroupFollowed ends a group's turn.
func (m *metadataActor) onGroupFollowed(ctx actor.Context, msg *groupFollowed) {
	f := &m.groups
	if f.notMember == nil {
		f.notMember = map[uint64]bool{}
	}
	if msg.member {
		delete(f.notMember, msg.group)
	} else {
		f.notMember[msg.group] = true
	}
	if f.active && f.current == msg.group {
		f.active = false
		if msg.done {
			m.log.Debug("partition group follows the roster", "group", msg.group, "voters", msg.voters)
		}
	}
	m.followGroups(ctx)
}

// onGroupWantsFollow queues a group that became primary with work left.
func (m *metadataActor) onGroupWantsFollow(ctx actor.Context, msg *groupWantsFollow) {
	f := &m.groups
	if (f.active && f.current == msg.group) || slices.Contains(f.queue, msg.group) {
		return
	}
	f.queue = append(f.queue, msg.group)
	m.followGroups(ctx)
}

func (m *metadataActor) onGroupFollowTimeout(ctx actor.Context, msg *groupFollowTimeout) {
	f := &m.groups
	if f.active && f.current == msg.group && f.turn == msg.turn {
		m.log.Warn("partition group did not reach the roster in time: next group", "group", msg.group, "after", groupFollowPatience)
		f.active = false
		m.followGroups(ctx)
	}
}

// localMembers counts the local partition groups this node is still a
// member of.
func (m *metadataActor) localMembers() int {
	n := 0
	for g := range m.partitions {
		if !m.groups.notMember[g] {
			n++
		}
	}
	return n
}

// onFollowVoters is the partition actor's side: propose the change if
// this replica leads the group, and answer once its roster is there.
func (p *partitionActor) onFollowVoters(ctx actor.Context, msg *followVoters) {
	p.followTarget = msg.voters
	p.followAsked = true
	ro := p.core.Roster()
	switch {
	case !p.core.Leading():
		p.followAsked = false
		ctx.Send(p.parent, &groupFollowed{group: p.ref.Group, voters: ro.Voters, member: p.core.Member()})
		return
	case ro.Voters == msg.voters && !ro.Changing():
	case !ro.Changing():
		if err := p.core.Reconfigure(msg.voters, p.node.opts.Clock()); err != nil && !errors.Is(err, vsr.ErrReconfiguring) {
			p.log.Warn("partition group cannot follow the roster now", "voters", msg.voters, "err", err)
			p.followAsked = false
			ctx.Send(p.parent, &groupFollowed{group: p.ref.Group, voters: ro.Voters, member: p.core.Member()})
			return
		}
		p.log.Info("partition group reconfiguring", "from", ro.String(), "to_voters", msg.voters)
		p.drive(ctx)
		return
	}
	p.reportFollow(ctx)
}

// reportFollow runs after each drive: the answer to the metadata actor
// once the group reached its target (or this replica stopped leading),
// and the request for a turn when it leads with work left.
func (p *partitionActor) reportFollow(ctx actor.Context) {
	if p.followTarget == 0 || p.parent == nil {
		return
	}
	ro := p.core.Roster()
	reached := ro.Voters == p.followTarget && !ro.Changing()
	if p.core.Epoch() != p.reportedEpoch || p.core.Removed() != p.reportedRemoved {
		p.reportedEpoch, p.reportedRemoved = p.core.Epoch(), p.core.Removed()
		if !p.followAsked {
			ctx.Send(p.parent, &groupFollowed{group: p.ref.Group, voters: ro.Voters, member: p.core.Member()})
		}
	}
	switch {
	case p.followAsked && (reached || !p.core.Leading()):
		p.followAsked = false
		ctx.Send(p.parent, &groupFollowed{group: p.ref.Group, voters: ro.Voters, done: reached, member: p.core.Member()})
	case !p.followAsked && !reached && p.core.Leading() && !ro.Changing() && !p.wantsFollow:
		p.wantsFollow = true
		ctx.Send(p.parent, &groupWantsFollow{group: p.ref.Group})
	}
	if p.followAsked || !p.core.Leading() {
		p.wantsFollow = false
	}
}
