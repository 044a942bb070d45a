package actors

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/zeebo/blake3"

	"iggynode/config"
	"iggynode/metadata"
	"iggynode/storage"
	"iggynode/vsr"
	"iggynode/wire"
)

// metadataActor owns the metadata consensus group (a vsr.Replica), the
// metadata state machine and the node's connection list. It admits
// metadata requests (client-table preflight, pre-consensus checks),
// journals prepares durably before acknowledging them, applies committed
// ops and answers. It also resolves partition requests against committed
// metadata and routes them to the partition actors it supervises
// (replica-plane.md 13.4).
type metadataActor struct {
	n          *Node
	log        *slog.Logger
	state      *metadata.State
	core       *vsr.Replica
	partitions map[uint64]*actor.PID
	// routed are the partitions' routes for connections (routing.go),
	// kept with partitions; publishedRoutes and partsChanged say when the
	// view is to be published again.
	routed          map[uint64]*partitionRoute
	publishedRoutes *metadata.Routes
	partsChanged    bool
	conns           map[uint32]*connInfo
	inflight        map[wire.U128]bool
	booted          chan error
	snapshotOp      uint64 // op of the last metadata snapshot
	repairs         repairWatch
	tr              *groupTrace // spans and gauges (telemetry.go)
	// progress is each group's polled and committed offsets per partition
	// on this node (server-behaviour.md 7.4.5), for cooperative hand-offs.
	progress map[groupPartition]*groupProgress
	// forwards are logins parked while their Register commits on the
	// primary (replica-plane.md 8.2); nonceCounter numbers them.
	forwards     map[forwardKey]*forwardWait
	logouts      map[forwardKey]*clientRequest
	nonceCounter uint64
	// rosterNodes replaces the configured roster's client addresses (tests
	// learn the bound ports after start).
	rosterNodes []config.Node
	// departed are nodes a committed roster removed, linked until their
	// drain ends (reconfig.go).
	departed map[uint8]departedNode
	// adminWaits are cluster admin requests waiting for their R.
	adminWaits []adminWait
	// groups drives the local partition groups toward the roster.
	groups groupFollower
	// pushedPlacement is what each local partition was last told of its
	// placement; balance the leadership balancer (placement.go).
	pushedPlacement map[uint64]metadata.Placement
	balance         balancer
	// drainChecks counts a removed node's drain re-checks.
	drainChecks int
	// transfers serves and receives the group's state transfers.
	transfers *transferShell
	// dropping: groups whose deleted partition is still removing its
	// data, with the partitions waiting to start on them; stopping: the
	// group of each such actor, by PID, until its Terminated.
	dropping map[uint64][]metadata.PartitionRef
	stopping map[string]uint64
	beh      *statusBehaviour
	time     timeKeeper // the core's tick and next wake-up (clock.go)
}

type groupPartition struct {
	ref       metadata.GroupRef
	partition uint32
}

// partitionStats carries a partition's figures to the metadata actor.
type partitionStats struct {
	group uint64
	stats metadata.PartitionStats
}

// internalLogout is the replicated logout of a closed connection's session
// (request number u64::MAX, replica-plane.md 5.12.3 rule 5).
type internalLogout struct {
	client wire.U128
	epoch  uint64
}

// metaPending tags an admitted metadata prepare with the request it
// answers, and the raw token a CreatePersonalAccessToken minted (it never
// enters the log; only this node can put it in the reply).
type metaPending struct {
	req      *clientRequest
	rawToken string
}

func newMetadataActor(n *Node) (*metadataActor, error) {
	return &metadataActor{n: n, log: n.log.With("actor", "metadata"), booted: make(chan error, 1)}, nil
}

// producer hands protoactor a fresh instance on every (re)start; each one
// rebuilds from durable state.
func (m *metadataActor) producer() actor.Producer {
	first := true
	return func() actor.Actor {
		if first {
			first = false
			return m
		}
		return &metadataActor{n: m.n, log: m.log, booted: make(chan error, 1)}
	}
}

func (m *metadataActor) waitReady(timeout time.Duration) error {
	select {
	case err := <-m.booted:
		return err
	case <-time.After(timeout):
		return errors.New("metadata actor did not start in time")
	}
}

// Receive is the metadata actor's current behaviour (behaviour.go): in a
// view change or a recovery its requests take the same paths, which answer
// writes with TransientNotAccepted; the behaviours make the status the
// actor is in explicit and logged.
func (m *metadataActor) Receive(ctx actor.Context) {
	if m.beh == nil {
		m.beh = newStatusBehaviour(m.receive, m.receive, m.receive)
	}
	// The core keeps the node's time (clock.go): advanced by the ticks
	// that passed, woken by the clock when a timer is due.
	if m.core != nil && elapseTo(m.core, &m.time, m.n.clock.now()) && m.core.HasReady() {
		m.drive(ctx)
	}
	m.beh.Receive(ctx)
	if m.core != nil {
		k, armed := m.core.IdleTicks()
		if m.transfers.busy() {
			k, armed = 1, true
		}
		m.time.arm(m.n.clock, wire.MetadataGroup, ctx.Self(), k, armed)
	}
	m.publishRoutes()
}

func (m *metadataActor) receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		err := m.boot(ctx)
		m.booted <- err
		if err != nil {
			m.log.Error("metadata boot failed", "err", err)
			ctx.Stop(ctx.Self())
		}
	case *clientRequest:
		m.onRequest(ctx, msg)
	case *loginVerified:
		m.onLoginVerified(ctx, msg)
	case *internalLogout:
		m.onInternalLogout(ctx, msg)
	case *partitionStats:
		m.state.SetPartitionStats(msg.group, msg.stats)
	case *countEntities:
		if m.state != nil {
			ctx.Respond(m.entityCounts())
		}
	case *connInfo:
		m.conns[msg.id] = msg
	case *connBound:
		if c := m.conns[msg.id]; c != nil {
			c.userID, c.client = msg.userID, msg.client
		}
	case *connGone:
		delete(m.conns, msg.id)
		m.n.auth.abandon(msg.id)
	case *peerFrame:
		m.routePeerFrame(ctx, msg)
	case *transferDone, *transferFailed, *actor.Terminated:
		if t, ok := msg.(*actor.Terminated); ok && m.partitionStopped(ctx, t.Who) {
			return
		}
		if m.transfers != nil && m.transfers.onOutcome(ctx, msg) {
			m.drive(ctx)
		}
	case *requestRoutes:
		table := make(map[uint64]*actor.PID, len(m.partitions))
		for g, pid := range m.partitions {
			table[g] = pid
		}
		ctx.Send(msg.peer, &routeTable{partitions: table})
	case *setClientRoster:
		m.rosterNodes = msg.nodes
	case *rosterDrainCheck:
		m.followRoster()
		m.scheduleDrainCheck(ctx)
		m.followGroups(ctx)
	case *removedDrainOver:
		m.onRemovedDrainOver(ctx)
	case *groupFollowed:
		m.onGroupFollowed(ctx, msg)
	case *groupWantsFollow:
		m.onGroupWantsFollow(ctx, msg)
	case *groupFollowTimeout:
		m.onGroupFollowTimeout(ctx, msg)
	case *forwardTimeout:
		m.onForwardTimeout(ctx, msg)
	case *groupProgress:
		m.onGroupProgress(ctx, msg)
	case *partitionLeads:
		m.onPartitionLeads(ctx, msg)
	case *balanceTick:
		m.balanceLeaders(ctx)
	case *partitionLeft:
		m.onPartitionLeft(ctx, msg)
	case *inspectMetadata:
		msg.fn(m)
		close(msg.done)
	case *tick:
		m.onTick(ctx)
	case *heartbeatTick:
		m.verifyHeartbeats(msg.nowUs)
	case *maintainNow:
		m.maintain(ctx, msg.nowUs, msg.done)
	case *listConns:
		var pids []*actor.PID
		for _, c := range m.conns {
			pids = append(pids, c.pid)
		}
		msg.reply <- pids
	case *listPartitions:
		out := make(map[uint64]*actor.PID, len(m.partitions))
		for g, pid := range m.partitions {
			out[g] = pid
		}
		msg.reply <- out
	}
}

const rootKey = "metadata/root"

// boot restores the root user, replays the metadata journal, restores the
// consensus core at the journal head (a cluster of one commits everything
// it journaled, replica-plane.md 9.3 step 4) and starts the partitions.
// stateConfig configures the metadata state machine from the node's
// configuration.
func (m *metadataActor) stateConfig() metadata.Config {
	cfg := metadata.Config{ClientsTableMax: int(m.n.opts.Config.Metadata.ClientsTableMax),
		MaxTokensPerUser: int(m.n.opts.Config.PersonalAccessToken.MaxTokensPerUser)}
	if m.n.cluster.clustered() {
		cfg.Voters = m.n.cluster.bootstrap.Voters
	}
	return cfg
}

func (m *metadataActor) boot(ctx actor.Context) error {
	st := m.n.store
	cfg := m.stateConfig()
	m.partitions, m.conns, m.inflight = map[uint64]*actor.PID{}, map[uint32]*connInfo{}, map[wire.U128]bool{}
	m.routed, m.partsChanged = map[uint64]*partitionRoute{}, true
	snap, ok, err := st.LoadSnapshot(wire.MetadataGroup)
	if err != nil {
		return fmt.Errorf("metadata snapshot: %w", err)
	}
	if ok {
		if m.state, err = metadata.Restore(cfg, snap); err != nil {
			return fmt.Errorf("metadata snapshot: %w", err)
		}
	} else {
		m.state = metadata.New(cfg)
		if err := m.bootstrapRoot(); err != nil {
			return err
		}
	}
	// Replay the journal above the snapshot (replica-plane.md 9.3). The
	// entry at the snapshot's op is kept by compaction so the hash chain
	// can be checked from it; it is not applied again.
	floor := m.state.AppliedOp()
	m.snapshotOp = floor
	clustered := m.n.cluster.clustered()
	var head, highestCommit, breakAt uint64
	var headChecksum wire.U128
	var headTs uint64
	var unapplied [][]byte // a cluster member's journal above the snapshot, applied below up to W
	err = st.ScanPrepares(wire.MetadataGroup, max(floor, 1), func(op uint64, frame []byte) error {
		if err := wire.VerifyPrepare(frame); err != nil {
			return fmt.Errorf("metadata journal op %d: %w", op, err)
		}
		ph := wire.HeaderOf(frame).Prepare()
		if head != 0 && (ph.Op != head+1 || ph.Parent != headChecksum) {
			breakAt = op // 9.3 step 3: the suffix from the break is truncated
			return storage.ErrStopScan
		}
		if head == 0 && floor == 0 && (ph.Op != 1 || !ph.Parent.IsZero()) {
			return fmt.Errorf("metadata journal does not start at op 1")
		}
		if ph.Op > floor {
			if clustered {
				unapplied = append(unapplied, bytes.Clone(frame)) // the scan reuses its buffer
			} else {
				m.state.Apply(frame)
			}
		}
		head, headChecksum, headTs = ph.Op, ph.Checksum, ph.Timestamp
		highestCommit = max(highestCommit, ph.Commit)
		return nil
	})
	if err != nil {
		return err
	}
	if breakAt != 0 {
		m.log.Warn("metadata journal breaks its hash chain: truncating from the break", "op", breakAt)
		if err := st.TruncatePrepares(wire.MetadataGroup, breakAt); err != nil {
			return err
		}
	}
	if head == 0 && floor > 0 {
		head = floor // the journal was emptied by an installed state transfer (7.9.4)
	}
	if head < floor {
		return fmt.Errorf("metadata journal ends at op %d below the snapshot at %d", head, floor)
	}
	vc := m.n.coreConfig(wire.MetadataGroup, true)
	// Repair beyond the in-memory ring reads the journal back (7.3).
	vc.ReadJournal = func(op uint64) []byte {
		f, ok, err := m.n.store.GetPrepare(wire.MetadataGroup, op)
		if err != nil || !ok {
			return nil
		}
		return f
	}
	vc.JournalFloor = func() uint64 { return m.snapshotOp + 1 }
	m.core = vsr.New(vc)
	m.time = timeKeeper{lastTick: m.n.clock.now()}
	m.transfers = newTransferShell(m.n, m.log, wire.MetadataGroup, m.core)
	m.tr.close() // a restarted actor boots again
	m.tr = m.n.refs.tel.group(wire.MetadataGroup)
	m.transfers.tr = m.tr
	m.transfers.build = m.metadataOffer
	m.transfers.rosterOf = m.metadataRoster
	m.transfers.install = func(s *vsr.TransferSession, _ *storage.TransferStage) error { return m.installMetadata(ctx, s) }
	if clustered {
		if err := m.recover(floor, head, highestCommit, unapplied); err != nil {
			return err
		}
	} else if head > 0 {
		m.core.Restore(0, 0, head, headChecksum, headTs)
	}
	m.n.refs.commit.Store(m.core.CommitMin())
	if !clustered {
		m.n.metadataCaughtUp.Store(true) // a cluster of one is its own metadata
	}
	for _, ref := range m.state.Partitions() {
		if err := m.startPartition(ctx, ref); err != nil {
			return err
		}
	}
	m.log.Info("metadata recovered", "snapshot_op", floor, "op", head, "partitions", len(m.partitions))
	m.endOrphanedSessions(ctx)
	return nil
}

// recover is 9.3 steps 4-8 for a cluster member: apply the journal up to
// W, the highest commit its headers name (a lower bound of the commit
// point at the crash), and hand the core the rest; a member with prior
// life rejoins Recovering and probes for the view (6.12). A fresh member
// (no journal, no superblock) starts Normal in view 0.
func (m *metadataActor) recover(floor, head, highestCommit uint64, unapplied [][]byte) error {
	st, ok, err := m.n.store.LoadVsrState(wire.MetadataGroup)
	if err != nil {
		return fmt.Errorf("metadata superblock: %w", err)
	}
	rec, reconfigured, err := m.n.loadRoster(wire.MetadataGroup)
	if err != nil {
		return fmt.Errorf("metadata roster: %w", err)
	}
	// Once a roster committed, it (not the configured node count) says
	// who the members are (docs/reconfiguration.md, item 1).
	if ok && (st.Cluster != m.n.cluster.id || int(st.ReplicaID) != int(m.n.cluster.self) ||
		!reconfigured && int(st.ReplicaCount) != m.n.cluster.n) {
		return fmt.Errorf("metadata superblock is of cluster %v replica %d of %d, this node is replica %d of %d",
			st.Cluster, st.ReplicaID, st.ReplicaCount, m.n.cluster.self, m.n.cluster.n)
	}
	if !ok && head == 0 && floor == 0 {
		return nil // no prior life
	}
	viewHead, viewHeaders, err := m.n.loadViewHead(wire.MetadataGroup)
	if err != nil {
		return err
	}
	rc := vsr.Recovery{View: st.View, LogView: st.LogView, CommitMax: st.CommitMax}
	if reconfigured {
		rc.Roster, rc.EpochOp, rc.Removed = &rec.roster, rec.epochOp, rec.removed
	}
	// The state machine may hold a newer roster than the record (the
	// record is written before the superblock, not synced): the
	// snapshot's, opened at or below its op, or one the replay applies.
	took := func(ro vsr.Roster, op uint64) {
		if rc.Roster != nil && ro.Epoch <= rc.Roster.Epoch {
			return
		}
		was := rc.Removed || (rc.Roster == nil && m.n.cluster.bootstrap.Member(m.n.cluster.self)) || (rc.Roster != nil && rc.Roster.Member(m.n.cluster.self))
		rc.Roster, rc.EpochOp, rc.Removed = &ro, op, was && !ro.Member(m.n.cluster.self)
	}
	if sr, has := m.state.Roster(); has {
		took(sr.Roster, floor)
	}
	w := min(max(highestCommit, floor, rc.EpochOp), head)
	var inc [16]byte
	_, _ = rand.Read(inc[:]) // a fresh incarnation at every boot (6.12 rule 2)
	rc.Commit = w
	rc.Incarnation = wire.U128{Lo: binary.LittleEndian.Uint64(inc[:]), Hi: binary.LittleEndian.Uint64(inc[8:])}
	rc.ViewHead, rc.ViewHeaders = viewHead, viewHeaders
	if !ok && len(unapplied) > 0 {
		last := wire.HeaderOf(unapplied[len(unapplied)-1]).Prepare()
		rc.View, rc.LogView = last.View, last.View // 9.3 step 6
	}
	for _, f := range unapplied {
		ph := wire.HeaderOf(f).Prepare()
		if ph.Op <= w {
			m.state.Apply(f)
			if ro, isR := vsr.RosterOf(f); isR {
				took(ro, ph.Op)
			}
		} else {
			rc.Journal = append(rc.Journal, f)
		}
	}
	if w > 0 {
		f, found, err := m.n.store.GetPrepare(wire.MetadataGroup, w)
		switch {
		case err != nil:
			return fmt.Errorf("metadata journal at the commit point %d: %w", w, err)
		case found:
			ph := wire.HeaderOf(f).Prepare()
			rc.CommitChecksum, rc.CommitTimestamp = ph.Checksum, ph.Timestamp
		case w != floor:
			return fmt.Errorf("metadata journal lacks the entry at the commit point %d", w)
		}
		// A snapshot installed by a transfer comes without its op's
		// prepare: the identity is unknown (zero), as after the install.
	}
	m.core.Recover(rc)
	m.followRoster()
	m.log.Info("metadata rejoining the cluster", "view", rc.View, "log_view", rc.LogView, "commit", w, "op", head,
		"roster", m.core.Roster().String(), "removed", m.core.Removed())
	return nil
}

// endOrphanedSessions logs out every session a restarted cluster of one
// recovered: no connection survives the restart of the only node, and a
// session left in the table would keep its consumer-group partitions
// forever (no connection exists to time it out). The logouts are
// replicated ops like a disconnect's (replica-plane.md 5.12.3 rule 5). In
// a cluster, sessions may live on other nodes and are left alone.
func (m *metadataActor) endOrphanedSessions(ctx actor.Context) {
	if m.n.cluster.clustered() {
		return
	}
	var ops []metadata.Internal
	for _, client := range m.state.Clients().Clients() {
		ops = append(ops, metadata.Internal{Client: client, Request: ^uint64(0), Operation: wire.OpLogout})
	}
	if len(ops) > 0 {
		m.log.Info("ending sessions of the previous run", "sessions", len(ops))
		m.submitInternal(ctx, ops)
	}
}

// checkpointEvery is how many ops the journal may hold above the last
// snapshot: metadata.journal_slots less max(64, prepare_queue_depth)
// (replica-plane.md 9.1).
func (m *metadataActor) checkpointEvery() uint64 {
	c := m.n.opts.Config.Metadata
	return uint64(max(int(c.JournalSlots)-max(64, int(c.PrepareQueueDepth)), 16))
}

// checkpoint snapshots the state at commit_min and drains the journal
// below it, keeping the entry at the snapshot's op (9.1). A failure keeps
// the journal: nothing is lost, the next checkpoint retries.
func (m *metadataActor) checkpoint() {
	op := m.state.AppliedOp()
	if err := m.n.store.SaveSnapshot(wire.MetadataGroup, m.state.Snapshot()); err != nil {
		m.log.Error("metadata checkpoint", "err", err)
		return
	}
	if err := m.n.store.CompactPrepares(wire.MetadataGroup, op); err != nil {
		m.log.Error("metadata journal compaction", "err", err)
	}
	m.snapshotOp = op
	m.log.Debug("metadata checkpoint", "op", op)
}

// bootstrapRoot creates the root user (server-behaviour.md 2.1): on first
// start from the configured credentials, stored so later starts recover
// the same root whatever the environment says.
func (m *metadataActor) bootstrapRoot() error {
	v, ok, err := m.n.store.Get(rootKey)
	if err != nil {
		return err
	}
	if !ok {
		salt := make([]byte, 16)
		if m.n.cluster.clustered() {
			// Every replica bootstraps the same root outside the log
			// (server-behaviour.md 2.1.1), so the hash must be identical:
			// the salt is derived from the cluster id.
			sum := blake3.Sum256(append(wire.AppendU128(nil, m.n.cluster.id), "root-salt"...))
			copy(salt, sum[:])
		} else {
			_, _ = rand.Read(salt)
		}
		v = []byte(m.n.opts.RootUsername + "\x00" + metadata.HashPassword(m.n.opts.RootPassword, salt))
		if err := m.n.store.Put(rootKey, v, true); err != nil {
			return err
		}
	}
	for i, c := range v {
		if c == 0 {
			return m.state.Bootstrap(string(v[:i]), string(v[i+1:]))
		}
	}
	return errors.New("corrupt root user record")
}

func (m *metadataActor) startPartition(ctx actor.Context, ref metadata.PartitionRef) error {
	voters, _ := m.state.PartitionVoters(ref.Group) // 0: the configured roster's
	placed, ok := m.state.Placement(ref.Group)
	m.publishClusterNodes()
	if ok {
		if m.pushedPlacement == nil {
			m.pushedPlacement = map[uint64]metadata.Placement{}
		}
		m.pushedPlacement[ref.Group] = placed
	}
	route := &partitionRoute{}
	props := m.n.props(newPartitionActor(m.n, ref, m.partitionSettings(ref.Stream, ref.Topic), voters, placed, ok, route))
	pid, err := ctx.SpawnNamed(props, "p-"+strconv.FormatUint(ref.Group, 16)+"-"+strconv.FormatUint(ref.CreationID, 10))
	if err != nil {
		return err
	}
	route.pid = pid // before the view that holds it is published
	m.partitions[ref.Group] = pid
	m.routed[ref.Group], m.partsChanged = route, true
	m.announceRoute(ctx, ref.Group, pid)
	return nil
}

// partitionSettings are the topic settings a partition of (stream, topic)
// acts on.
func (m *metadataActor) partitionSettings(stream, topic uint32) partitionSettings {
	ts, _ := m.state.TopicSettings(stream, topic)
	count := uint32(m.state.PartitionCount(stream, topic))
	return partitionSettings{enforceFsync: ts.EnforceFsync, segmentSize: ts.SegmentSize,
		messageExpiryUs: ts.MessageExpiry, maxTopicSize: ts.MaxTopicSize, partitionsCount: count,
		maxMessageSize: uint64(m.n.opts.Config.MessageBus.MaxMessageSize)}
}

// reconfigure sends a topic's current settings to its partitions.
func (m *metadataActor) reconfigure(ctx actor.Context, stream, topic uint32) {
	s := m.partitionSettings(stream, topic)
	for _, ref := range m.state.TopicPartitions(stream, topic) {
		if pid := m.partitions[ref.Group]; pid != nil {
			ctx.Send(pid, &partitionConfigure{settings: s})
		}
	}
}

// maintain runs the periodic background work once: the segment cleaner on
// every partition (server-behaviour.md 5.7). done is closed when all of it
// finished.
func (m *metadataActor) maintain(ctx actor.Context, nowUs uint64, done chan<- struct{}) {
	m.submitInternal(ctx, m.housekeeping(nowUs))
	var wg sync.WaitGroup
	for group, pid := range m.partitions {
		if ref, ok := m.state.Partition(group); ok {
			if ts, ok := m.state.TopicSettings(ref.Stream, ref.Topic); ok && ts.MessageExpiry == metadata.Never && ts.MaxTopicSize == metadata.Never {
				continue // nothing can expire: no pass (thousands of idle partitions cost nothing)
			}
		}
		wg.Add(1)
		m.n.root().Send(pid, &partitionMaintain{nowUs: nowUs, done: wg.Done})
	}
	go func() {
		wg.Wait()
		if done != nil {
			close(done)
		}
	}()
}

// onRequest dispatches a request handed over by a connection actor.
func (m *metadataActor) onRequest(ctx actor.Context, req *clientRequest) {
	if req.http != nil && m.refuseHTTP(ctx, req) {
		return
	}
	switch op := req.hdr.Operation; {
	case op == wire.OpNonReplicated:
		m.onRead(ctx, req)
	case op == wire.OpRegister:
		m.onRegister(ctx, req)
	case op.Partition():
		m.onPartitionWrite(ctx, req)
	default:
		m.onMetadataWrite(ctx, req)
	}
}

func (m *metadataActor) reply(ctx actor.Context, req *clientRequest, r *replyOut) {
	ctx.Send(req.conn, r)
}

func (m *metadataActor) commit() uint64 { return m.core.CommitMax() }

// onRegister is the login handshake (client-plane.md 5.2).
func (m *metadataActor) onRegister(ctx actor.Context, req *clientRequest) {
	hdr := &req.hdr
	evict := func(reason wire.EvictionReason) {
		m.reply(ctx, req, &replyOut{frame: eviction(hdr.Client, reason)})
	}
	rb, err := wire.DecodeRegister(req.frame[wire.HeaderSize:])
	if err != nil {
		evict(wire.EvictMalformedLogin)
		return
	}
	if !wire.ProtocolVersion.Accepts(rb.ClientInfo.Version) {
		evict(wire.EvictIncompatibleProtocol)
		return
	}
	if rb.Password == nil && rb.Token == nil {
		evict(wire.EvictMalformedLogin) // neither shape decodes (5.2 step 5)
		return
	}
	// Steps 3-5 verify off this actor (auth.go); onLoginVerified comes
	// back to registerVerified.
	m.startLogin(ctx, req, rb)
}

// registerVerified continues the login handshake once the credentials
// verified as userID (client-plane.md 5.2 steps 6-10).
func (m *metadataActor) registerVerified(ctx actor.Context, req *clientRequest, userID uint32) {
	hdr := &req.hdr
	if req.http != nil && req.http.verifyOnly {
		m.reply(ctx, req, &replyOut{frame: loginReply(hdr, 0, m.commit(), uint64(userID))}) // http.go
		return
	}
	if b := req.bound; b != nil {
		// Already bound: the existing session, nothing committed (5.2 step 6).
		m.reply(ctx, req, &replyOut{frame: loginReply(hdr, b.epoch, m.commit(), uint64(userID))})
		return
	}
	if m.shouldForward() {
		m.forwardRegister(ctx, req, userID)
		return
	}
	if m.inflight[hdr.Client] {
		m.reply(ctx, req, &replyOut{frame: rejectReply(hdr, hdr.Client, m.commit(), wire.OpRegister, wire.ErrTransientNotCommitted)})
		return
	}
	p, denial := m.state.Admit(metadata.Request{Client: hdr.Client, UserID: userID, Operation: wire.OpRegister}, m.admitEnv())
	if denial != nil {
		m.answerDenial(ctx, req, hdr.Client, denial)
		return
	}
	m.submit(ctx, req, hdr.Client, userID, p)
}

// onMetadataWrite runs the metadata preflight (client-plane.md 5.3) and
// admission (4.2 step 10) for Logout and 128..=149.
func (m *metadataActor) onMetadataWrite(ctx actor.Context, req *clientRequest) {
	hdr := &req.hdr
	b := req.bound
	if b == nil {
		m.reply(ctx, req, &replyOut{frame: eviction(hdr.Client, wire.EvictNoSession)})
		return
	}
	isLogout := hdr.Operation == wire.OpLogout
	if isLogout && m.shouldForward() {
		// Logout on a backup commits on the primary (replica-plane.md 8.4).
		if !m.forwardLogout(ctx, req, b.client, b.epoch, hdr.Request) {
			m.reply(ctx, req, &replyOut{frame: denyReply(hdr, req.connID, m.commit(), wire.ErrTransientNotAccepted)})
		}
		return
	}
	transient := func(code wire.ErrorCode) {
		m.reply(ctx, req, &replyOut{frame: m.notAdmittedReply(req, b.client, code)})
	}
	switch {
	case !m.core.Leading():
		transient(wire.ErrTransientNotAccepted)
		return
	case m.inflight[b.client] || !m.core.CaughtUpPrimary():
		transient(wire.ErrTransientNotCommitted)
		return
	}
	pf := m.state.Preflight(b.client, b.epoch, hdr.Request, hdr.RequestChecksum)
	if isLogout && pf.Verdict != metadata.VerdictNew {
		// The session is already gone or fenced: logout is idempotent and
		// is never answered with an eviction (client-plane.md 5.5, 19 #15).
		m.reply(ctx, req, &replyOut{frame: logoutReply(hdr, b.client, b.epoch, m.commit()), unbind: true})
		return
	}
	switch pf.Verdict {
	case metadata.VerdictNoSession:
		m.reply(ctx, req, &replyOut{frame: eviction(b.client, wire.EvictNoSession)})
		return
	case metadata.VerdictFenced:
		m.reply(ctx, req, &replyOut{frame: eviction(b.client, wire.EvictSessionTooLow)})
		return
	case metadata.VerdictEpochAhead, metadata.VerdictChecksumMismatch:
		// The reference sends nothing (a client bug); a compatible server
		// must not leave a lockstep client hanging: evict the session.
		m.reply(ctx, req, &replyOut{frame: eviction(b.client, wire.EvictInvalidRequestBody)})
		return
	case metadata.VerdictDuplicate:
		if pf.Code != 0 {
			transient(pf.Code)
		} else {
			m.reply(ctx, req, &replyOut{frame: append([]byte(nil), pf.Reply...)})
		}
		return
	case metadata.VerdictAlreadyApplied:
		transient(pf.Code)
		return
	}
	if refusedOnLowDisk(hdr.Operation) && !m.n.acceptsClientWrites() {
		// Before admission, so nothing is committed (diskspace.go); a
		// pre-commit failure travels in the header (server-behaviour.md 12.2).
		m.reply(ctx, req, &replyOut{frame: denyReply(hdr, req.connID, m.commit(), m.n.refusedForSpace())})
		return
	}
	p, denial := m.state.Admit(metadata.Request{Client: b.client, UserID: b.userID, Operation: hdr.Operation,
		Body: req.frame[wire.HeaderSize:]}, m.admitEnv())
	if denial != nil {
		m.answerDenial(ctx, req, b.client, denial)
		return
	}
	m.submit(ctx, req, b.client, b.userID, p)
}

// replyOperation is the operation a result-framed reply to op carries
// (client-plane.md 4.4 note on class C; DeleteSegments must use 68).
func replyOperation(op wire.Operation) wire.Operation {
	if c, ok := wire.CodeForOperation(op); ok {
		if info, _ := c.Info(); info.ReplyOp != 0 {
			return info.ReplyOp
		}
	}
	return op
}

func (m *metadataActor) answerDenial(ctx actor.Context, req *clientRequest, client wire.U128, d *metadata.Denial) {
	hdr := &req.hdr
	switch {
	case d.Evict != 0:
		m.reply(ctx, req, &replyOut{frame: eviction(client, d.Evict)})
	case d.Result != 0:
		op := d.ReplyOp
		if op == 0 {
			op = replyOperation(hdr.Operation)
		}
		m.reply(ctx, req, &replyOut{frame: rejectReply(hdr, client, m.commit(), op, d.Result)})
	default:
		m.reply(ctx, req, &replyOut{frame: denyReply(hdr, req.connID, m.commit(), d.Status)})
	}
}

func (m *metadataActor) admitEnv() metadata.AdmitEnv {
	return metadata.AdmitEnv{
		Random:   func(b []byte) { _, _ = rand.Read(b) },
		InFlight: m.inFlight,
		SealedUpTo: func(p metadata.PartitionRef, count uint32) (uint64, bool, error) {
			pid := m.partitions[p.Group]
			if pid == nil {
				return 0, false, errors.New("partition not running")
			}
			ch := make(chan segmentsAnswer, 1)
			m.n.root().Send(pid, &partitionSegments{count: count, reply: ch})
			select {
			case a := <-ch:
				return a.upTo, a.ok, nil
			case <-time.After(2 * time.Second):
				return 0, false, errors.New("partition did not answer")
			}
		},
	}
}

// notAdmittedReply answers a metadata request that was not admitted or
// whose outcome is unknown (57, 58): a result-section rejection (class D),
// except for Logout, which is not result-framed, so a status-0 reply would
// read as a successful logout: it gets the deny frame (client-plane.md 5.5).
func (m *metadataActor) notAdmittedReply(req *clientRequest, client wire.U128, code wire.ErrorCode) []byte {
	if req.hdr.Operation == wire.OpLogout {
		return denyReply(&req.hdr, req.connID, m.commit(), code)
	}
	return rejectReply(&req.hdr, client, m.commit(), replyOperation(req.hdr.Operation), code)
}

// submit hands an admitted prepare to the consensus core. The prepare
// frame is built in a fresh buffer: metadata bodies are small and may
// have been rewritten by admission.
func (m *metadataActor) submit(ctx actor.Context, req *clientRequest, client wire.U128, userID uint32, p metadata.Prepare) {
	hdr := &req.hdr
	frame := make([]byte, wire.HeaderSize+len(p.Body))
	copy(frame[wire.HeaderSize:], p.Body)
	m.tr.admit(req)
	err := m.core.Submit(vsr.Request{Client: client, Request: hdr.Request, RequestChecksum: hdr.RequestChecksum,
		Operation: p.Operation, Release: hdr.Release, UserID: userID, Frame: frame,
		Tag: &metaPending{req: req, rawToken: p.RawToken}}, m.n.opts.Clock())
	if err != nil {
		m.reply(ctx, req, &replyOut{frame: m.notAdmittedReply(req, client, wire.ErrTransientNotAccepted)})
		return
	}
	m.inflight[client] = true
	m.drive(ctx)
}

// drive carries out the core's outputs: journal durably (one sync for the
// whole Ready, shared by every prepare in it), then apply and answer.
func (m *metadataActor) drive(ctx actor.Context) {
	for m.core.HasReady() {
		rd := m.core.Ready()
		// Truncate before the view state is written: a restart that finds
		// log_view v trusts its journal as view v's log (vsr reconcile).
		if rd.Truncate != 0 {
			m.tr.truncateFrom(rd.Truncate)
			if err := m.n.store.TruncatePrepares(wire.MetadataGroup, rd.Truncate); err != nil {
				m.log.Error("metadata journal truncation", "from_op", rd.Truncate, "err", err)
				if rd.State != nil {
					m.core.StateFailed() // keep the old log_view on disk with the old journal
					rd.State, rd.Send = nil, nil
				}
			}
		}
		if rd.State != nil && !m.n.persistState(m.log, m.core, wire.MetadataGroup, *rd.State, 0) {
			rd.Send = nil // 6.13: nothing that advertises the view before it is durable
		}
		leading := m.core.Leading()
		if len(rd.Journal) > 0 {
			err := m.journal(rd.Journal)
			for _, f := range rd.Journal {
				ph := wire.HeaderOf(f).Prepare()
				if err == nil {
					m.tr.journaled(ph, leading)
					// Backups lift their creation-id allocator from the
					// assignments they journal (replica-plane.md 5.4).
					m.state.ObservePrepare(ph.Operation, f[wire.HeaderSize:])
				}
				m.core.Journaled(ph.Op, err)
			}
		}
		m.tr.sent(rd.Send)
		m.n.send(rd.Send)
		for _, c := range rd.Commit {
			_, replies := c.Tag.(*metaPending)
			m.tr.committed(c, leading)
			m.apply(ctx, c)
			m.tr.applied(c.Op, replies)
		}
		if m.state.AppliedOp()-m.snapshotOp >= m.checkpointEvery() {
			m.checkpoint()
		}
		for _, t := range rd.Canceled {
			if f, ok := t.(*forwardedRegister); ok {
				delete(m.inflight, f.client)
				m.sendForwardResult(f.from, f.nonce, f.client, wire.ForwardRegisterCanceled, 0, 0)
				continue
			}
			if f, ok := t.(*forwardedLogout); ok {
				delete(m.inflight, f.client)
				m.sendLogoutResult(f.from, f.nonce, f.client, wire.ForwardLogoutCanceled, 0)
				continue
			}
			if p, ok := t.(*metaPending); ok {
				delete(m.inflight, p.req.hdr.Client)
				if p.req.bound != nil {
					delete(m.inflight, p.req.bound.client)
				}
				m.reply(ctx, p.req, &replyOut{frame: m.notAdmittedReply(p.req, p.req.hdr.Client, wire.ErrTransientNotCommitted)})
			}
		}
	}
	m.repairs.observe(m.log, m.core, m.tr)
	m.observeRemoval(ctx)
	m.abandonReconfigs(ctx)
	m.transfers.maybeStart(ctx)
	m.beh.follow(m.core, m.log, wire.MetadataGroup, m.tr)
	m.tr.publish(m.core)
	if !m.n.metadataCaughtUp.Load() && (!m.n.cluster.clustered() || m.core.Status() == vsr.StatusNormal &&
		m.core.CommitMin() == m.core.CommitMax() && !m.core.Transferring()) {
		m.n.metadataCaughtUp.Store(true)
		if m.n.cluster.clustered() {
			m.log.Info("metadata caught up: partitions join their consensus groups", "commit", m.core.CommitMin())
			for _, pid := range m.partitions {
				ctx.Send(pid, &tick{}) // their time starts now: the clock learns their deadlines
			}
		}
	}
	m.n.readiness.observe(m.n, m.core, m.log)
}

func (m *metadataActor) journal(frames [][]byte) error {
	for _, f := range frames {
		if err := m.n.store.AppendPrepare(wire.MetadataGroup, wire.HeaderOf(f).Prepare().Op, f, false); err != nil {
			return err
		}
	}
	return m.n.store.Sync()
}

// apply applies one committed op, carries out its effects and answers the
// connection that submitted it.
func (m *metadataActor) apply(ctx actor.Context, c vsr.Committed) {
	res := m.state.Apply(c.Frame)
	m.n.refs.commit.Store(c.Op)
	delete(m.inflight, res.Client)
	m.carryOut(ctx, res.Effects)
	m.publishRoutes() // before the reply: what it changed routes from now on (routing.go)
	if _, isR := vsr.RosterOf(c.Frame); isR {
		m.rosterCommitted(ctx)
	}
	if f, ok := c.Tag.(*forwardedRegister); ok {
		m.committedForward(f, c.Op)
		return
	}
	if f, ok := c.Tag.(*forwardedLogout); ok {
		m.sendLogoutResult(f.from, f.nonce, f.client, wire.ForwardLogoutOk, c.Op)
		return
	}
	p, _ := c.Tag.(*metaPending)
	if p == nil {
		return
	}
	out := &replyOut{frame: res.WireReply(p.rawToken)}
	switch res.Operation {
	case wire.OpRegister:
		out.bind = &binding{client: res.Client, epoch: res.Op, userID: res.UserID}
		// The binding is recorded here, not only when the connection
		// confirms it (connBound): a second registration of the same id
		// committing before that confirmation arrived would otherwise not
		// find this connection to fence.
		if ci := m.conns[p.req.connID]; ci != nil {
			ci.client, ci.userID = res.Client, res.UserID
		}
		// A newer registration of the same client id fences every other
		// local connection bound to it (client-plane.md 5.4).
		for _, ci := range m.conns {
			if ci.client == res.Client && ci.pid != nil && !ci.pid.Equal(p.req.conn) {
				ctx.Send(ci.pid, &unbindClient{client: res.Client})
			}
		}
	case wire.OpLogout:
		out.unbind = true
	}
	m.reply(ctx, p.req, out)
}

// dropPartition has a deleted partition's actor remove its data and stop.
// A topic created meanwhile may get the same group id (replica-plane.md
// 4.1): its partition starts only once the old actor terminated (its
// data gone, its name free), so it never boots on the old files.
func (m *metadataActor) dropPartition(ctx actor.Context, group uint64) {
	pid := m.partitions[group]
	if pid == nil {
		return
	}
	delete(m.balance.leading, group)
	delete(m.balance.seen, group)
	m.stopPartition(ctx, group, pid, false, nil)
}

// stopPartition sends pid its partitionDrop and forgets it; restart, if
// any, starts once it terminated (partitionStopped).
func (m *metadataActor) stopPartition(ctx actor.Context, group uint64, pid *actor.PID, left bool, restart []metadata.PartitionRef) {
	if r := m.routed[group]; r != nil {
		r.close() // the sends that took it are ahead of the drop (routing.go)
		delete(m.routed, group)
		m.partsChanged = true
	}
	ctx.Send(pid, &partitionDrop{left: left})
	delete(m.partitions, group)
	delete(m.pushedPlacement, group)
	m.announceRoute(ctx, group, nil)
	if m.dropping == nil {
		m.dropping, m.stopping = map[uint64][]metadata.PartitionRef{}, map[string]uint64{}
	}
	m.dropping[group] = append(m.dropping[group][:0], restart...)
	m.stopping[pid.Id] = group
}

// partitionStopped reports whether who was a partition actor that
// stopPartition stopped, and starts the partitions that waited for it.
func (m *metadataActor) partitionStopped(ctx actor.Context, who *actor.PID) bool {
	group, ok := m.stopping[who.Id]
	if !ok {
		return false
	}
	delete(m.stopping, who.Id)
	waiting := m.dropping[group]
	delete(m.dropping, group)
	for _, ref := range waiting {
		m.startPartitionWhenFree(ctx, ref)
	}
	return true
}

// startPartitionWhenFree starts ref's partition, or queues it while the
// group's previous partition is still removing its data.
func (m *metadataActor) startPartitionWhenFree(ctx actor.Context, ref metadata.PartitionRef) {
	if waiting, busy := m.dropping[ref.Group]; busy {
		m.dropping[ref.Group] = append(waiting, ref)
		return
	}
	if err := m.startPartition(ctx, ref); err != nil {
		m.log.Error("start partition", "group", ref.Group, "err", err)
	}
}

func (m *metadataActor) carryOut(ctx actor.Context, e metadata.Effects) {
	for _, ref := range e.DeletedPartitions {
		m.dropPartition(ctx, ref.Group)
	}
	for _, ref := range e.CreatedPartitions {
		m.startPartitionWhenFree(ctx, ref)
	}
	for _, ref := range e.PurgedPartitions {
		if pid := m.partitions[ref.Group]; pid != nil {
			ctx.Send(pid, &partitionPurge{})
		}
	}
	for _, g := range e.DeletedGroups {
		for _, ref := range m.state.TopicPartitions(g.Stream, g.Topic) {
			if pid := m.partitions[ref.Group]; pid != nil {
				ctx.Send(pid, &partitionForgetConsumer{kind: wire.ConsumerGroup, key: g.Group})
			}
		}
	}
	touched := map[metadata.TopicRef]bool{}
	for _, t := range e.UpdatedTopics {
		touched[t] = true
	}
	for _, refs := range [][]metadata.PartitionRef{e.CreatedPartitions, e.DeletedPartitions} {
		for _, ref := range refs {
			touched[metadata.TopicRef{Stream: ref.Stream, Topic: ref.Topic}] = true
		}
	}
	for t := range touched {
		m.reconfigure(ctx, t.Stream, t.Topic)
	}
	for _, t := range e.Truncated {
		if pid := m.partitions[t.Partition.Group]; pid != nil {
			ctx.Send(pid, &partitionTruncate{upTo: t.UpToOffset})
		}
	}
}

// onInternalLogout commits the logout of a closed connection's session.
func (m *metadataActor) onInternalLogout(ctx actor.Context, l *internalLogout) {
	if m.shouldForward() {
		// A disconnect on a backup: the primary commits the logout and
		// checks the epoch against its own table, which may be ahead of
		// this backup's (replica-plane.md 8.4 rule 1).
		m.forwardLogout(ctx, nil, l.client, l.epoch, ^uint64(0))
		return
	}
	if e, ok := m.state.Clients().Lookup(l.client); !ok || e.Epoch != l.epoch {
		return
	}
	if !m.core.Leading() {
		return
	}
	frame := make([]byte, wire.HeaderSize)
	err := m.core.Submit(vsr.Request{Client: l.client, Request: ^uint64(0), Operation: wire.OpLogout, Frame: frame},
		m.n.opts.Clock())
	if err != nil {
		m.log.Warn("internal logout not admitted", "err", err)
		return
	}
	m.drive(ctx)
}

// clusterMetadata is the roster as the client at remote (its connection's
// remote address) is to see it; on a single node (client-plane.md 7.15,
// server-behaviour.md 8.7.1) one node, Leader and Healthy, with the bound
// port of every transport (0 when disabled). lastHeard adds iggynode's
// extension (wire.ClusterMetadata.LastHeardUs) for a client that asked.
func (m *metadataActor) clusterMetadata(remote string, lastHeard bool) []byte {
	if m.n.cluster.clustered() {
		return m.clusterRoster(config.ClientIP(remote), lastHeard)
	}
	node := wire.ClusterNode{Name: "iggy-node", IP: "127.0.0.1", Role: wire.RoleLeader, Status: wire.NodeHealthy}
	port := func(addr string) uint16 {
		if addr == "" {
			return 0
		}
		host, p, _ := net.SplitHostPort(addr)
		if node.IP == "127.0.0.1" && host != "" && host != "0.0.0.0" && host != "::" {
			node.IP = host
		}
		v, _ := strconv.Atoi(p)
		return uint16(v)
	}
	node.TCPPort = port(m.n.TCPAddr())
	node.QUICPort = port(m.n.QUICAddr())
	node.WebSocketPort = port(m.n.WebSocketAddr())
	node.HTTPPort = port(m.n.HTTPAddr())
	md := wire.ClusterMetadata{Name: "single-node", Nodes: []wire.ClusterNode{node}}
	if lastHeard {
		md.LastHeardUs = []uint64{m.n.opts.Clock()}
	}
	return md.AppendTo(nil)
}

// clusterRoster is the configured roster with the metadata primary of this
// node's current view as the one Leader (replica-plane.md 10.4); a node
// that is not in normal status names no leader. Each node's host and ports
// are those it advertises to the client's network (config.Node.AdvertisedTo).
// A peer the node-level heartbeat has not heard within
// cluster.heartbeat_timeout is Unreachable (rosterStatus).
func (m *metadataActor) clusterRoster(client netip.Addr, lastHeard bool) []byte {
	c := m.n.opts.Config.Cluster
	md := wire.ClusterMetadata{Name: c.Name}
	nodes := c.Nodes
	if m.rosterNodes != nil {
		nodes = m.rosterNodes
	}
	if r, ok := m.state.Roster(); ok {
		nodes = clientNodes(r, nodes)
	}
	for _, node := range nodes {
		adv := node.AdvertisedTo(client)
		cn := wire.ClusterNode{Name: node.Name, IP: adv.Host, TCPPort: adv.Ports.TCP, QUICPort: adv.Ports.QUIC,
			HTTPPort: adv.Ports.HTTP, WebSocketPort: adv.Ports.WebSocket, Role: wire.RoleFollower, Status: wire.NodeHealthy}
		if m.core.Status() == vsr.StatusNormal && uint8(node.ReplicaID) == m.core.Primary() {
			cn.Role = wire.RoleLeader
		}
		cn.Status = m.rosterStatus(uint8(node.ReplicaID))
		md.Nodes = append(md.Nodes, cn)
		if lastHeard {
			md.LastHeardUs = append(md.LastHeardUs, m.rosterLastHeard(uint8(node.ReplicaID)))
		}
	}
	return md.AppendTo(nil)
}

// rosterStatus is a roster node's status as this node sees it
// (client-plane.md 7.15): Unreachable when the node-level heartbeat
// (liveness.go) lost it, else Healthy. The reference server reports every
// node Healthy, so first-party SDKs keep dead nodes as reconnect
// candidates; this is an improvement on it. Without a node-level heartbeat
// (cluster.quiescence off) nothing is known and every node is Healthy, as
// there.
func (m *metadataActor) rosterStatus(replica uint8) wire.NodeStatus {
	live := &m.n.peerLive
	if replica != m.n.cluster.self && live.tracked.Load() && !live.live(replica) {
		return wire.NodeUnreachable
	}
	return wire.NodeHealthy
}

// rosterLastHeard is when this node last heard from replica: now for
// itself, 0 when never or not tracked.
func (m *metadataActor) rosterLastHeard(replica uint8) uint64 {
	if replica == m.n.cluster.self {
		return m.n.opts.Clock()
	}
	return m.n.peerLive.lastHeard(replica)
}

// verifyHeartbeats asks every bound connection whose client is a member of
// a consumer group to evict itself if it has been idle for more than 1.2 x
// heartbeat.interval (server-behaviour.md 8.5.2).
func (m *metadataActor) verifyHeartbeats(nowUs uint64) {
	idle := uint64(m.n.opts.Config.Heartbeat.Interval.D().Microseconds()) * 6 / 5
	for _, c := range m.conns {
		if c.userID != noUser && c.pid != nil && len(m.state.Memberships(c.client)) > 0 {
			m.n.root().Send(c.pid, &staleCheck{nowUs: nowUs, idleUs: idle})
		}
	}
}

// housekeeping lists the server-originated prepares due at nowUs: deletes
// of expired personal access tokens (server-behaviour.md 3) and completions
// of consumer-group hand-offs pending longer than
// consumer_group.rebalancing_timeout (7.4).
func (m *metadataActor) housekeeping(nowUs uint64) []metadata.Internal {
	if !m.core.CaughtUpPrimary() {
		return nil
	}
	var out []metadata.Internal
	if m.n.opts.Config.PersonalAccessToken.Cleaner.Enabled {
		for _, t := range m.state.ExpiredTokens(nowUs) {
			out = append(out, metadata.CleanupToken(t))
		}
	}
	timeout := uint64(m.n.opts.Config.ConsumerGroup.RebalancingTimeout.D().Microseconds())
	for _, r := range m.state.PendingRevocations() {
		if nowUs >= r.Since+timeout {
			out = append(out, r.Completion())
		}
	}
	return out
}

// submitInternal submits server-originated prepares (user 0, no reply).
func (m *metadataActor) submitInternal(ctx actor.Context, ops []metadata.Internal) {
	for _, op := range ops {
		frame := make([]byte, wire.HeaderSize+len(op.Body))
		copy(frame[wire.HeaderSize:], op.Body)
		if err := m.core.Submit(vsr.Request{Client: op.Client, Request: op.Request, Operation: op.Operation,
			Frame: frame}, m.n.opts.Clock()); err != nil {
			m.log.Warn("internal operation not admitted", "operation", op.Operation, "err", err)
		}
	}
	if m.core.HasReady() {
		m.drive(ctx)
	}
}

// onGroupProgress records a group's progress on a partition and completes a
// pending hand-off of that partition once the group committed what it
// polled (server-behaviour.md 7.4.6).
func (m *metadataActor) onGroupProgress(ctx actor.Context, g *groupProgress) {
	if m.progress == nil {
		m.progress = map[groupPartition]*groupProgress{}
	}
	k := groupPartition{g.ref, g.partition}
	cur := m.progress[k]
	if cur == nil {
		cur = &groupProgress{ref: g.ref, partition: g.partition}
		m.progress[k] = cur
	}
	if g.hasPolled {
		cur.polled, cur.hasPolled = g.polled, true
	}
	if g.hasCommitted {
		cur.committed, cur.hasCommitted = g.committed, true
	}
	if cur.hasPolled && cur.hasCommitted && cur.committed < cur.polled {
		return
	}
	if !m.core.CaughtUpPrimary() {
		return
	}
	var due []metadata.Internal
	for _, r := range m.state.PendingRevocations() {
		if r.Stream == g.ref.Stream && r.Topic == g.ref.Topic && r.Group == g.ref.Group && r.Partition == g.partition {
			due = append(due, r.Completion())
		}
	}
	m.submitInternal(ctx, due)
}

// inFlight lists the partitions of group g whose last polled offset is
// above the group's committed offset on this node (7.4.5).
func (m *metadataActor) inFlight(g metadata.GroupRef) []uint32 {
	var out []uint32
	for k, p := range m.progress {
		if k.ref == g && p.hasPolled && (!p.hasCommitted || p.committed < p.polled) {
			out = append(out, k.partition)
		}
	}
	return out
}
