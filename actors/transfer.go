package actors

import (
	"fmt"

	"github.com/asynkron/protoactor-go/actor"

	"iggynode/metadata"
	"iggynode/vsr"
	"iggynode/wire"
)

// Metadata state transfer (replica-plane.md 7.6, 7.9.4), the shell's part:
// serving offers and chunks from the state machine, running the
// receiver's vsr.TransferSession, and installing what it fetched.
//
// Choices where the spec leaves room:
//   - An offer is built from the state at the primary's commit point when
//     it is asked for (a snapshot payload and the ICT2 table with every
//     reply ring), not from the last checkpoint file, and cached per
//     (requester, nonce) until it has been idle for 10 repair retry
//     intervals. Both artifacts therefore have frontier commit_op.
//   - A fetched snapshot that is not ahead of this replica's commit point
//     is not installed (no table-only install): the replica goes back to
//     journal repair, which that commit point can reach.
//   - Partition state transfer (7.7) is not here: a partition replica
//     behind every ring stays behind (see the vsr package).

// transferOffer is one served offer.
type transferOffer struct {
	manifest  []byte
	artifacts [][]byte
	commitOp  uint64
	commitMax uint64
	idle      int
}

type offerKey struct {
	requester uint8
	nonce     wire.U128
}

// onTransferFrame handles commands 22-25 for the metadata group.
func (m *metadataActor) onTransferFrame(ctx actor.Context, f *peerFrame) {
	h := wire.HeaderOf(f.frame)
	switch h.Command() {
	case wire.CmdRequestStateTransfer:
		q, err := wire.DecodeRequestStateTransferHeader(h)
		if err == nil && q.Replica == f.from {
			m.serveOffer(q)
		}
	case wire.CmdRequestStateChunk:
		q, err := wire.DecodeRequestStateChunkHeader(h)
		if err == nil && q.Replica == f.from {
			m.serveChunk(q)
		}
	case wire.CmdStateTransferTarget:
		if m.transfer == nil || f.from != m.transfer.Peer {
			return
		}
		next, err := m.transfer.OnTarget(f.frame)
		if err != nil {
			m.abandonTransfer(err)
			return
		}
		m.transferProgress(ctx, next)
	case wire.CmdStateChunk:
		if m.transfer == nil || f.from != m.transfer.Peer {
			return
		}
		m.transferProgress(ctx, m.transfer.OnChunk(f.frame))
	}
}

// serveOffer is 7.6 step 2 with this node's choices (see above).
func (m *metadataActor) serveOffer(q wire.RequestStateTransferHeader) {
	key := offerKey{q.Replica, q.Nonce}
	o := m.offers[key]
	if o == nil && m.core.CaughtUpPrimary() {
		snapshot := m.state.Snapshot()
		table := m.state.Clients().EncodeICT2(true)
		commit := m.core.CommitMin()
		manifest := wire.StateManifest{Entries: []wire.ManifestEntry{
			{Kind: wire.ArtifactMetadataSnapshot, Frontier: commit, Len: uint64(len(snapshot)), Checksum: wire.ArtifactChecksum(snapshot)},
			{Kind: wire.ArtifactClientTable, Frontier: commit, Len: uint64(len(table)), Checksum: wire.ArtifactChecksum(table)},
		}}
		o = &transferOffer{manifest: manifest.AppendTo(nil), artifacts: [][]byte{snapshot, table},
			commitOp: commit, commitMax: m.core.CommitMax()}
		m.offers[key] = o
		m.log.Info("state transfer offered", "to", q.Replica, "commit_op", commit, "bytes", len(snapshot)+len(table))
	}
	t := wire.StateTransferTargetHeader{Cluster: m.n.cluster.id, Size: wire.HeaderSize, View: m.core.View(),
		Replica: m.n.cluster.self, Nonce: q.Nonce, Group: wire.MetadataGroup, CommitMax: m.core.CommitMax()}
	var body []byte
	if o != nil {
		o.idle = 0
		t.Available, t.CommitOp, t.CommitMax = true, o.commitOp, o.commitMax
		t.Size += uint32(len(o.manifest))
		body = o.manifest
	} else {
		t.UnavailableTransient = true // not a caught-up primary now
	}
	head := make([]byte, wire.HeaderSize)
	t.Encode(wire.HeaderOf(head))
	m.n.send([]vsr.Envelope{{To: q.Replica, Head: head, Body: body}})
}

// serveChunk is 7.6 step 5.
func (m *metadataActor) serveChunk(q wire.RequestStateChunkHeader) {
	o := m.offers[offerKey{q.Replica, q.Nonce}]
	if o == nil {
		t := wire.StateTransferTargetHeader{Cluster: m.n.cluster.id, Size: wire.HeaderSize, View: m.core.View(),
			Replica: m.n.cluster.self, Nonce: q.Nonce, Group: wire.MetadataGroup, CommitMax: m.core.CommitMax(),
			UnavailableTransient: true}
		head := make([]byte, wire.HeaderSize)
		t.Encode(wire.HeaderOf(head))
		m.n.send([]vsr.Envelope{{To: q.Replica, Head: head}})
		return
	}
	if int(q.Artifact) >= len(o.artifacts) || q.Offset >= uint64(len(o.artifacts[q.Artifact])) {
		return
	}
	a := o.artifacts[q.Artifact]
	end := min(q.Offset+uint64(min(q.Len, transferChunkMax(m))), uint64(len(a)))
	c := wire.StateChunkHeader{Cluster: m.n.cluster.id, Size: uint32(wire.HeaderSize + end - q.Offset),
		Replica: m.n.cluster.self, Nonce: q.Nonce, Offset: q.Offset, Group: wire.MetadataGroup, Artifact: q.Artifact}
	head := make([]byte, wire.HeaderSize)
	c.Encode(wire.HeaderOf(head))
	o.idle = 0
	m.n.send([]vsr.Envelope{{To: q.Replica, Head: head, Body: a[q.Offset:end]}})
}

// transferChunkMax is C of 7.6 step 4.
func transferChunkMax(m *metadataActor) uint32 {
	return uint32(max(min(256<<10, int(m.n.opts.Config.MessageBus.MaxMessageSize)-wire.HeaderSize), 1))
}

// tickTransfers expires idle offers (7.6 step 9) and runs the receiver's
// stall retry (step 7).
func (m *metadataActor) tickTransfers(ctx actor.Context) {
	retry := ticks(m.n.opts.Config.Cluster.RepairRetryInterval)
	for k, o := range m.offers {
		if o.idle++; o.idle > 10*retry {
			delete(m.offers, k)
		}
	}
	if m.transfer == nil {
		return
	}
	next, err := m.transfer.Tick(retry)
	if err != nil {
		m.abandonTransfer(err)
		return
	}
	if next != nil {
		m.n.send([]vsr.Envelope{*next})
	}
}

// maybeStartTransfer arms a transfer when the core found the journal it
// needs compacted away (7.5 metadata rule 2).
func (m *metadataActor) maybeStartTransfer() {
	peer := m.core.NeedTransfer
	if peer < 0 || m.transfer != nil || m.core.Transferring() || m.n.cluster.n == 1 {
		return
	}
	m.transfer = m.core.NewTransfer(uint8(peer), int(m.n.opts.Config.MessageBus.MaxMessageSize))
	m.core.SetTransferring(true)
	m.log.Info("state transfer started", "from", peer, "commit_min", m.core.CommitMin(), "commit_max", m.core.CommitMax())
	m.n.send([]vsr.Envelope{m.transfer.Request()})
}

func (m *metadataActor) abandonTransfer(err error) {
	m.log.Warn("state transfer abandoned; back to journal repair", "err", err)
	m.transfer = nil
	m.core.SetTransferring(false)
}

// transferProgress sends the next chunk request or, once every artifact
// arrived, installs them.
func (m *metadataActor) transferProgress(ctx actor.Context, next *vsr.Envelope) {
	if next != nil {
		m.n.send([]vsr.Envelope{*next})
	}
	if m.transfer != nil && m.transfer.Complete() {
		if err := m.installTransfer(ctx); err != nil {
			m.abandonTransfer(err)
		}
		m.drive(ctx)
	}
}

// installTransfer is 7.9.4: verify, replace the state machine and the
// client table, make the journal start above the snapshot, and hand the
// new commit point to the core, which repairs the tail.
func (m *metadataActor) installTransfer(ctx actor.Context) error {
	tr := m.transfer
	snapshot, table, _, frontier, err := tr.Verify()
	if err != nil {
		return err
	}
	cfg := metadata.Config{ClientsTableMax: int(m.n.opts.Config.Metadata.ClientsTableMax),
		MaxTokensPerUser: int(m.n.opts.Config.PersonalAccessToken.MaxTokensPerUser)}
	st, err := metadata.Restore(cfg, snapshot)
	if err != nil {
		return fmt.Errorf("transferred snapshot: %w", err)
	}
	if _, err := metadata.DecodeICT2(table, cfg.ClientsTableMax); err != nil {
		return fmt.Errorf("transferred client table: %w", err)
	}
	op := st.AppliedOp()
	if op != frontier || op > tr.CommitOp {
		return fmt.Errorf("transferred snapshot at op %d, manifest says %d, offer commit %d", op, frontier, tr.CommitOp)
	}
	if op <= m.core.CommitMin() {
		return fmt.Errorf("transferred snapshot at op %d is not ahead of commit %d", op, m.core.CommitMin())
	}
	store := m.n.store
	if err := store.TruncatePrepares(wire.MetadataGroup, op+1); err != nil {
		return err
	}
	if err := store.SaveSnapshot(wire.MetadataGroup, snapshot); err != nil {
		return err
	}
	if err := store.CompactPrepares(wire.MetadataGroup, op+1); err != nil {
		m.log.Warn("compacting the journal below a transferred snapshot", "err", err)
	}
	m.state, m.snapshotOp = st, op
	for _, ref := range m.state.Partitions() {
		if m.partitions[ref.Group] == nil {
			if err := m.startPartition(ctx, ref); err != nil {
				m.log.Error("starting a transferred partition", "group", ref.Group, "err", err)
			}
		}
	}
	m.transfer = nil
	m.core.Installed(op, tr.CommitMax, tr.Peer)
	m.n.refs.commit.Store(m.core.CommitMin())
	m.TransfersInstalled++
	m.log.Info("state transfer installed", "snapshot_op", op, "commit_max", tr.CommitMax, "from", tr.Peer)
	return nil
}
