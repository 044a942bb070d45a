package actors

import (
	"math/bits"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"iggynode/metadata"
	"iggynode/vsr"
	"iggynode/wire"
)

// Placement in the shell (issue 23). metadata/placement.go decides, in
// the metadata state machine, which R nodes hold each partition and which
// of them should lead it; this file carries that out:
//
//   - Every node runs an actor for every partition, but only the nodes of
//     its replica set run the group (the core's roster names them); on
//     any other node the actor's core is a non-member that never hears
//     the group, and the actor forwards what the client sent it: writes
//     as before (partition_forward.go), and reads (PollMessages,
//     GetConsumerOffset) as a routed NonReplicated request with
//     forwardedReadCode, which a member serves from its log and relays
//     back. A non-member forwards to its guess of the primary (the
//     preferred primary at first); a voter that is not the primary
//     forwards a request relayed from a non-member once more, to its
//     primary (never a request relayed from another voter: at most two
//     hops, no loops). When a forward times out or comes back 58, the
//     guess moves to the next node of the replica set.
//   - A fresh group starts in the view its preferred primary leads
//     (vsr.Config.StartView). The balancer (metadataActor.balanceLeaders)
//     moves primaryship back to the preferred primary with a planned view
//     change (vsr.Replica.HandOver): every cluster.leader_balance_interval
//     it looks at the groups this node leads whose preferred primary is
//     another node that has been live for a whole interval, and hands at
//     most cluster.leader_balance_max_moves of them over. So leadership
//     spreads after a failure and the return of the failed node by itself,
//     and a hand-over is a view change like any other: nothing in the
//     core's safety argument depends on why it happened.
//   - When a roster change settles, the placement moves replicas; the
//     group follower (reconfig.go) takes each group to its placement's
//     voters instead of the whole roster: the new replica joins as a
//     learner, catches up by state transfer (throttled by
//     cluster.transfer_bandwidth), then the old one is removed and drops
//     the partition's data once the group no longer needs it.

// forwardedReadCode marks a routed read (a vendor code outside the
// command catalogue); its relayed answer rides forwardedReadReplyCode.
const (
	forwardedReadCode      wire.CommandCode = 0x49470002
	forwardedReadReplyCode wire.CommandCode = 0x49470003
)

// Routed read kinds (the first byte of a forwardedReadCode body).
const (
	routedPoll      = 1
	routedGetOffset = 2
)

// partitionPlacement tells a partition actor where its group lives now.
type partitionPlacement struct{ placement metadata.Placement }

// placedGroup is a partition actor's knowledge of its placement.
type placedGroup struct {
	placement metadata.Placement
	placed    bool
	guess     uint8 // where a non-member forwards (the primary, it hopes)
}

func (p *partitionActor) onPlacement(m *partitionPlacement) {
	old := p.placed.placement
	p.placed.placement, p.placed.placed = m.placement, true
	if !p.placed.placedOn(p.placed.guess) || old.Leader != m.placement.Leader {
		p.placed.guess = m.placement.Leader
	}
}

func (g *placedGroup) placedOn(id uint8) bool {
	return id < vsr.MaxReplicas && g.placement.Voters&(1<<id) != 0
}

// nextGuess moves the guess to the next node of the replica set that
// the node-level heartbeat hears (any next one when it hears none).
func (g *placedGroup) nextGuess(self uint8, live func(uint8) bool) {
	for _, needLive := range []bool{true, false} {
		for i := 1; i <= vsr.MaxReplicas; i++ {
			c := uint8((int(g.guess) + i) % vsr.MaxReplicas)
			if g.placedOn(c) && c != self && (!needLive || live(c)) {
				g.guess = c
				return
			}
		}
	}
}

// servesLocally reports whether this replica holds the partition's log:
// it votes in the group (a learner is still catching up, a removed or
// never-added replica holds nothing it may serve).
func (p *partitionActor) servesLocally() bool {
	return !p.placed.placed || (p.core.Roster().Voter(p.node.cluster.self) && !p.core.Removed())
}

// forwardTarget is where req goes when this replica cannot take it (see
// the file comment); ok false: nowhere, answer 58.
func (p *partitionActor) forwardTarget(req *clientRequest) (uint8, bool) {
	self := p.node.cluster.self
	if !p.servesLocally() {
		if req.relay != nil {
			return 0, false // a stale guess of the origin: it tries the next
		}
		if g := p.placed.guess; !p.placed.placedOn(g) || g == self || !p.node.peerLive.live(g) {
			p.placed.nextGuess(self, p.node.peerLive.live)
		}
		if g := p.placed.guess; !p.placed.placedOn(g) || g == self {
			return 0, false
		}
		return p.placed.guess, true
	}
	if p.core.Status() != vsr.StatusNormal || p.core.IsPrimary() {
		return 0, false
	}
	if req.relay != nil && (!p.placed.placed || p.core.Roster().Member(req.relay.to)) {
		return 0, false // one hop between members
	}
	return p.core.Primary(), true
}

// forwardRead sends a poll or an offset read to a member of the group.
func (p *partitionActor) forwardRead(ctx actor.Context, req *clientRequest, body []byte, poll *partitionPoll) {
	frame := make([]byte, wire.HeaderSize, wire.HeaderSize+len(body))
	frame = append(frame, body...)
	hdr := req.hdr
	hdr.Operation, hdr.Code = wire.OpNonReplicated, forwardedReadCode
	fw := &clientRequest{hdr: hdr, frame: frame, bound: req.bound, connID: req.connID, conn: req.conn}
	if !p.forward(fw, frame) {
		p.replyTo(ctx, req, denyReply(&req.hdr, req.connID, 0, wire.ErrTransientNotAccepted))
		return
	}
	// A timeout answers the client's own request; the reply carries what
	// the poll served for the consumer group's progress here.
	parked := p.parked[p.nonce]
	parked.req, parked.poll = req, poll
}

// routedPollBody is a forwarded poll: kind, the request's code, the
// consumer, the partition and the poll's strategy, count and auto-commit.
func routedPollBody(code wire.CommandCode, m *partitionPoll) []byte {
	b := []byte{routedPoll}
	b = wire.AppendU32(b, uint32(code))
	b = append(b, byte(m.kind))
	b = wire.AppendU32(b, m.key)
	b = wire.AppendU32(b, m.partition)
	b = append(b, byte(m.poll.Strategy.Kind))
	b = wire.AppendU64(b, m.poll.Strategy.Value)
	b = wire.AppendU32(b, m.poll.Count)
	auto := byte(0)
	if m.poll.AutoCommit {
		auto = 1
	}
	return append(b, auto)
}

func routedGetOffsetBody(code wire.CommandCode, m *partitionGetOffset) []byte {
	b := []byte{routedGetOffset}
	b = wire.AppendU32(b, uint32(code))
	b = append(b, byte(m.kind))
	return wire.AppendU32(b, m.key)
}

// serveRoutedRead decodes a forwarded read and serves it here; the
// answer goes back through replyTo/relayPoll (req.relay is set).
func (p *partitionActor) serveRoutedRead(ctx actor.Context, req *clientRequest) {
	if !p.servesLocally() {
		// A stale guess of the forwarder: this replica holds nothing it
		// may serve (a learner, a removed or never-placed one). 58: the
		// forwarder moves its guess on and the client asks again.
		p.replyTo(ctx, req, denyReply(&req.hdr, req.connID, 0, wire.ErrTransientNotAccepted))
		return
	}
	rd := wire.NewReader(req.frame[wire.HeaderSize:])
	kind, code := rd.U8("kind"), rd.U32("code")
	consumer, key := wire.ConsumerKind(rd.U8("consumer_kind")), rd.U32("consumer")
	req.hdr.Code = wire.CommandCode(code)
	switch kind {
	case routedPoll:
		m := &partitionPoll{req: req, kind: consumer, key: key, partition: rd.U32("partition")}
		m.poll.Strategy = wire.PollingStrategy{Kind: wire.PollingKind(rd.U8("strategy")), Value: rd.U64("value")}
		m.poll.Count = rd.U32("count")
		m.poll.AutoCommit = rd.U8("auto_commit") == 1
		if rd.Err() != nil || rd.Len() != 0 {
			break
		}
		p.onPoll(ctx, m)
		return
	case routedGetOffset:
		if rd.Err() != nil || rd.Len() != 0 {
			break
		}
		p.onGetOffset(ctx, &partitionGetOffset{req: req, kind: consumer, key: key})
		return
	}
	p.replyTo(ctx, req, denyReply(&req.hdr, req.connID, 0, wire.ErrInvalidCommand))
}

// relayPoll sends a poll's reply to the forwarder, with what the poll
// served in front (has u8, last u64) so the forwarder reports the
// consumer group's progress where the client is.
func (n *Node) relayPoll(r *relay, built []byte, splices []wire.Splice, polledLast uint64, polled bool) {
	out := make([]byte, wire.HeaderSize, wire.HeaderSize+9+wire.SplicedLen(built, splices))
	has := byte(0)
	if polled {
		has = 1
	}
	out = append(out, has)
	out = wire.AppendU64(out, polledLast)
	out, err := wire.JoinSpliced(out, built, splices)
	wire.UnpinSplices(splices) // copied
	if err != nil {
		return // not sent: the forwarder's timeout answers its client
	}
	n.sendRelayedFrame(r, out, forwardedReadReplyCode)
}

// pushPlacements pushes each local partition its placement when it
// differs from what it was last told.
func (m *metadataActor) pushPlacements(ctx actor.Context) {
	m.publishClusterNodes()
	groups, ps := m.state.Placements()
	if m.pushedPlacement == nil {
		m.pushedPlacement = map[uint64]metadata.Placement{}
	}
	for i, g := range groups {
		pid := m.partitions[g]
		if pid == nil || m.pushedPlacement[g] == ps[i] {
			continue
		}
		m.pushedPlacement[g] = ps[i]
		ctx.Send(pid, &partitionPlacement{placement: ps[i]})
	}
}

// publishClusterNodes records the roster's nodes for the partitions.
func (m *metadataActor) publishClusterNodes() {
	nodes := m.state.ClusterVoters()
	if r, ok := m.state.Roster(); ok {
		nodes |= r.Learners
	}
	m.n.clusterNodes.Store(nodes)
}

// partitionStatsCode marks a primary's statistics for the nodes its
// partition does not live on (a vendor code: u32 segments_count, u64
// current_offset, u64 size_bytes, u64 messages_count), at most once per
// statsGossipInterval while they change and once when the group goes
// quiet, so GetTopic and GetStats on any node report the partition.
const partitionStatsCode wire.CommandCode = 0x49470004

const statsGossipInterval = time.Second

// gossipStats sends the primary's statistics to the nodes that do not
// hold the partition (force: now, else at most once per interval).
func (p *partitionActor) gossipStats(force bool) {
	if !p.placed.placed || !p.core.Leading() {
		return
	}
	self := p.node.cluster.self
	to := p.node.clusterNodes.Load() &^ p.core.Roster().Members() &^ (1 << self)
	if to == 0 || (!force && !p.statsDirty) {
		return
	}
	now := time.Now()
	if !force && now.Sub(p.statsSentAt) < statsGossipInterval {
		return
	}
	p.statsDirty, p.statsSentAt = false, now
	s := p.plog.Stats()
	frame := make([]byte, wire.HeaderSize, wire.HeaderSize+28)
	frame = wire.AppendU32(frame, s.SegmentsCount)
	frame = wire.AppendU64(frame, s.CurrentOffset)
	frame = wire.AppendU64(frame, s.SizeBytes)
	frame = wire.AppendU64(frame, s.MessagesCount)
	// A routed request needs a client (1.4.19): the node itself.
	h := wire.RequestHeader{Cluster: p.node.cluster.id, Size: uint32(len(frame)), Replica: self,
		Client: wire.U128{Lo: uint64(self) + 1, Hi: 0x1994_57a7}, Operation: wire.OpNonReplicated, Code: partitionStatsCode, Group: p.ref.Group}
	h.Encode(wire.HeaderOf(frame))
	var out []vsr.Envelope
	for m := to; m != 0; m &= m - 1 {
		out = append(out, vsr.Envelope{To: uint8(bits.TrailingZeros32(m)), Head: frame[:wire.HeaderSize], Body: frame[wire.HeaderSize:]})
	}
	p.node.send(out)
}

// onStatsGossip takes a primary's statistics where the partition does not
// live; the sender leads the group, so it is the best guess to forward to.
func (p *partitionActor) onStatsGossip(f *peerFrame) {
	if p.servesLocally() {
		return
	}
	rd := wire.NewReader(f.frame[wire.HeaderSize:])
	st := metadata.PartitionStats{SegmentsCount: rd.U32("segments_count"), CurrentOffset: rd.U64("current_offset"),
		SizeBytes: rd.U64("size_bytes"), MessagesCount: rd.U64("messages_count")}
	if rd.Err() != nil || rd.Len() != 0 {
		return
	}
	if p.placed.placedOn(f.from) {
		p.placed.guess = f.from
	}
	p.node.root().Send(p.parent, &partitionStats{group: p.ref.Group, stats: st})
}

// countMoving publishes how many local groups this node is a member of
// run on voters other than their placement's (a move in progress).
func (m *metadataActor) countMoving() {
	n := 0
	for g, s := range m.balance.seen {
		if p, ok := m.state.Placement(g); ok && s.voters != 0 && s.voters != p.Voters {
			n++
		}
	}
	m.n.refs.tel.moving.Store(int64(n))
}

// statusPartitions is ClusterStatus's placement section: every placed
// partition, its replica set and preferred primary, and its roster and
// primary as this node last heard from its replica here.
func (m *metadataActor) statusPartitions() []wire.ClusterStatusPartition {
	groups, ps := m.state.Placements()
	out := make([]wire.ClusterStatusPartition, 0, len(groups))
	for i, g := range groups {
		st, tp, pa := wire.SplitPartitionGroup(g)
		e := wire.ClusterStatusPartition{Stream: st, Topic: tp, Partition: pa, Replicas: ps[i].Voters, Preferred: ps[i].Leader, Primary: wire.NoPrimary}
		if s, ok := m.balance.seen[g]; ok {
			e.Voters, e.Primary = s.voters, s.primary
		}
		out = append(out, e)
	}
	return out
}

// outsideAtBoot reports a replica with nothing of its group to recover:
// placed elsewhere, holding no batches, and either never named by the
// group (its start voters and roster record leave it out) or moved out of
// it (its roster record says removed).
func (p *partitionActor) outsideAtBoot(hasBatches bool) (bool, error) {
	self := p.node.cluster.self
	if !p.placed.placed || p.placed.placedOn(self) || hasBatches {
		return false, nil
	}
	rec, ok, err := p.node.loadRoster(p.ref.Group)
	if err != nil {
		return false, err
	}
	if ok {
		return rec.removed || !rec.roster.Member(self), nil
	}
	return p.startVoters&(1<<self) == 0, nil
}

// partitionLeaveCheck: a replica moved out of its group may drop its
// data now, if it still is out.
type partitionLeaveCheck struct{}

// scheduleLeave runs once this replica is removed from its group and the
// placement leaves it out: after cluster.removed_drain_interval (the
// members that catch up may still ask it for repair or a transfer) the
// data goes (onLeaveCheck).
func (p *partitionActor) scheduleLeave(ctx actor.Context) {
	if p.leaveScheduled || !p.core.Removed() || !p.placed.placed || p.placed.placedOn(p.node.cluster.self) {
		return
	}
	p.leaveScheduled = true
	self, root := ctx.Self(), p.node.root()
	time.AfterFunc(p.node.opts.Config.Cluster.RemovedDrainInterval.D(), func() { root.Send(self, &partitionLeaveCheck{}) })
}

func (p *partitionActor) onLeaveCheck(ctx actor.Context) {
	p.leaveScheduled = false
	if !p.core.Removed() || !p.placed.placed || p.placed.placedOn(p.node.cluster.self) || p.transfers.busy() || p.parent == nil {
		return
	}
	p.log.Info("moved out of the partition's group: dropping its data", "roster", p.core.Roster().String(), "messages", p.plog.Stats().MessagesCount)
	ctx.Send(p.parent, &partitionLeft{group: p.ref.Group})
}

// partitionLeft asks the metadata actor to restart a moved-out partition
// without its data.
type partitionLeft struct{ group uint64 }

func (m *metadataActor) onPartitionLeft(ctx actor.Context, msg *partitionLeft) {
	pid := m.partitions[msg.group]
	ref, ok := m.state.Partition(msg.group)
	if pid == nil || !ok {
		return
	}
	m.stopPartition(ctx, msg.group, pid, true, []metadata.PartitionRef{ref}) // starts again once the old actor is gone
}

// groupTarget is the voters the group follower takes group to: its
// placement's, else the whole roster's.
func (m *metadataActor) groupTarget(group uint64, r metadata.Roster) uint32 {
	if p, ok := m.state.Placement(group); ok {
		return p.Voters
	}
	return r.Voters
}

// partitionLeads is a partition actor's report of its group as this
// replica sees it, sent when it changes: whether it leads (the balancer's
// index of what this node leads), the group's voters (0: not a member)
// and its primary (wire.NoPrimary: not known), for ClusterStatus.
type partitionLeads struct {
	group   uint64
	leading bool
	seen    seenGroup
}

// seenGroup is a group's roster and primary as a replica last saw them.
type seenGroup struct {
	voters  uint32
	primary uint8
}

// handOverTo asks a partition actor to hand its primaryship to a node.
type handOverTo struct{ to uint8 }

// reportLeading tells the metadata actor when this replica's leadership
// of its group changed.
func (p *partitionActor) reportLeading(ctx actor.Context) {
	if p.parent == nil {
		return
	}
	l, seen := p.core.Leading(), p.seen()
	if l == p.reportedLeading && seen == p.reportedSeen {
		return
	}
	became := l && !p.reportedLeading
	p.reportedLeading, p.reportedSeen = l, seen
	ctx.Send(p.parent, &partitionLeads{group: p.ref.Group, leading: l, seen: seen})
	if became {
		p.gossipStats(true) // the nodes without it learn the new primary
	}
}

// seen is the group as this replica knows it: a voter knows its roster
// and, in normal status, the primary; another node its guess.
func (p *partitionActor) seen() seenGroup {
	if !p.servesLocally() {
		if p.placed.placed {
			return seenGroup{primary: p.placed.guess}
		}
		return seenGroup{primary: wire.NoPrimary}
	}
	s := seenGroup{voters: p.core.Roster().Voters, primary: wire.NoPrimary}
	if p.core.Status() == vsr.StatusNormal {
		s.primary = p.core.Primary()
	}
	return s
}

func (p *partitionActor) onHandOver(ctx actor.Context, m *handOverTo) {
	ro := p.core.Roster()
	if !p.core.Leading() || ro.Changing() || !ro.Voter(m.to) {
		return
	}
	if err := p.core.HandOver(m.to); err != nil {
		p.log.Debug("hand-over refused", "to", m.to, "err", err)
		return
	}
	p.log.Info("handing the partition's primaryship to its preferred primary", "to", m.to, "view", p.core.View())
	p.node.refs.tel.handOvers.Add(1)
	p.drive(ctx)
}

// balancer is the metadata actor's part: which local groups lead, and
// which peers were live at the last pass.
type balancer struct {
	leading   map[uint64]bool
	seen      map[uint64]seenGroup // each local group's last report
	liveAt    uint32               // peers live at the previous pass
	scheduled bool
}

type balanceTick struct{}

func (m *metadataActor) onPartitionLeads(ctx actor.Context, msg *partitionLeads) {
	if m.balance.leading == nil {
		m.balance.leading, m.balance.seen = map[uint64]bool{}, map[uint64]seenGroup{}
	}
	m.balance.seen[msg.group] = msg.seen
	m.countMoving()
	if msg.leading {
		m.balance.leading[msg.group] = true
	} else {
		delete(m.balance.leading, msg.group)
	}
	m.n.refs.tel.leading.Store(int64(len(m.balance.leading)))
	m.scheduleBalance(ctx)
}

func (m *metadataActor) scheduleBalance(ctx actor.Context) {
	every := m.n.opts.Config.Cluster.LeaderBalanceInterval.D()
	if m.balance.scheduled || every <= 0 || !m.n.cluster.clustered() {
		return
	}
	m.balance.scheduled = true
	self, root := ctx.Self(), m.n.root()
	time.AfterFunc(every, func() { root.Send(self, &balanceTick{}) })
}

// balanceLeaders is one pass of the balancer (see the file comment).
func (m *metadataActor) balanceLeaders(ctx actor.Context) {
	m.balance.scheduled = false
	self := m.n.cluster.self
	live := uint32(0)
	for id := uint8(0); id < vsr.MaxReplicas; id++ {
		if id != self && m.n.peerLive.live(id) {
			live |= 1 << id
		}
	}
	steady := live & m.balance.liveAt
	m.balance.liveAt = live
	budget := int(max(m.n.opts.Config.Cluster.LeaderBalanceMaxMoves, 1))
	pending := 0
	for g := range m.balance.leading {
		p, ok := m.state.Placement(g)
		if !ok || p.Leader == self {
			continue
		}
		pending++
		if steady&(1<<p.Leader) == 0 || budget == 0 {
			continue
		}
		if pid := m.partitions[g]; pid != nil {
			budget--
			ctx.Send(pid, &handOverTo{to: p.Leader})
		}
	}
	m.n.refs.tel.leadersAway.Store(int64(pending))
	if pending > 0 {
		m.scheduleBalance(ctx)
	}
}
