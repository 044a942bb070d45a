package sim

import (
	"encoding/binary"
	"fmt"

	"iggynode/vsr"
	"iggynode/wire"
)

// State transfer in the simulator (replica-plane.md 7.6, 7.7). The
// protocol runs for real: a replica whose core asks for a transfer runs a
// vsr.TransferSession over the simulated network, and the server side
// offers and serves chunks as the node's shells do, only from a caught-up
// primary. The artifacts are stand-ins (the simulator's ops are opaque):
// a metadata offer carries a "snapshot" and a "client table" naming the
// commit point, a partition offer its ICO1 offsets with next_offset =
// commit point (one message per op). What an install makes durable is the
// server's applied prefix at the offer, which the offer keeps: the
// receiver takes it as its applied ops, after checking it agrees with
// every op it applied itself.

type simOffer struct {
	*vsr.Offer
	applied []applied // the server's applied ops up to CommitOp
}

type offerKey struct {
	server, requester int
	nonce             wire.U128
}

// transferFrame handles commands 22-25 addressed to replica to.
func (g *group) transferFrame(from, to int, frame []byte) {
	h := wire.HeaderOf(frame)
	rp := g.reps[to]
	switch h.Command() {
	case wire.CmdRequestStateTransfer:
		q, err := wire.DecodeRequestStateTransferHeader(h)
		if err == nil && int(q.Replica) == from {
			g.serveOffer(to, from, q.Nonce)
		}
	case wire.CmdRequestStateChunk:
		q, err := wire.DecodeRequestStateChunkHeader(h)
		if err == nil && int(q.Replica) == from {
			g.serveChunk(to, from, q)
		}
	case wire.CmdStateTransferTarget:
		if rp.transfer == nil || int(rp.transfer.Peer) != from {
			return
		}
		next, err := rp.transfer.OnTarget(frame)
		if err != nil {
			g.abandonTransfer(to, err)
			return
		}
		g.transferProgress(to, next)
	case wire.CmdStateChunk:
		if rp.transfer == nil || int(rp.transfer.Peer) != from {
			return
		}
		next, err := rp.transfer.OnChunk(frame)
		if err != nil {
			g.abandonTransfer(to, err)
			return
		}
		g.transferProgress(to, next)
	}
}

// server is replica i as its StateTransferTargets name it.
func (g *group) server(i int) vsr.Server {
	c := g.reps[i].core
	return vsr.Server{Cluster: wire.U128{Lo: 0x51}, View: c.View(), Replica: uint8(i), Group: g.id, CommitMax: c.CommitMax()}
}

func (g *group) serveOffer(server, requester int, nonce wire.U128) {
	r := g.r
	rp := g.reps[server]
	key := offerKey{server, requester, nonce}
	o := g.offers[key]
	if o == nil && g.servesTransferTo(server, requester) && rp.core.CommitMax() > 0 {
		commit := rp.core.CommitMin()
		o = &simOffer{Offer: &vsr.Offer{CommitOp: commit, CommitMax: rp.core.CommitMax()},
			applied: append([]applied(nil), rp.applied[:commit]...)}
		if r.cfg.PartitionPlane {
			o.Add(wire.ArtifactConsumerOffsets, commit, wire.ConsumerOffsetsArtifact{NextOffset: commit}.AppendTo(nil))
		} else {
			o.Add(wire.ArtifactMetadataSnapshot, commit, binary.LittleEndian.AppendUint64([]byte("sim-snapshot:"), commit))
			o.Add(wire.ArtifactClientTable, commit, binary.LittleEndian.AppendUint64([]byte("sim-table:"), commit))
		}
		g.offers[key] = o
	}
	var offer *vsr.Offer
	if o != nil {
		offer = o.Offer
	}
	head, body := g.server(server).Target(nonce, offer, true)
	r.net.send(r.now, server, requester, append(head, body...))
}

func (g *group) serveChunk(server, requester int, q wire.RequestStateChunkHeader) {
	o := g.offers[offerKey{server, requester, q.Nonce}]
	if o == nil {
		return
	}
	if head, body, _, err := g.server(server).Chunk(o.Offer, q, q.Len); err == nil {
		g.r.net.send(g.r.now, server, requester, append(head, body...))
	}
}

// maybeStartTransfer arms a session when replica i's core asks for one.
func (g *group) maybeStartTransfer(i int) {
	r := g.r
	rp := g.reps[i]
	if rp.down || rp.transfer != nil || rp.core.NeedTransfer < 0 || rp.core.Transferring() {
		return
	}
	rp.transfer = rp.core.NewTransfer(uint8(rp.core.NeedTransfer), 4096)
	rp.transfer.ChunkMax = 7 // several chunks even for the small stand-in artifacts
	rp.core.SetTransferring(true)
	r.event(i, "%sstate transfer from r%d started (commit %d/%d)", g.name(), rp.core.NeedTransfer, rp.core.CommitMin(), rp.core.CommitMax())
	e := rp.transfer.Request()
	r.net.send(r.now, i, int(e.To), append([]byte(nil), e.Head...))
}

func (g *group) tickTransfer(i int) {
	r := g.r
	rp := g.reps[i]
	if rp.transfer != nil && !rp.core.Transferring() {
		rp.transfer = nil // the core left the view it was for
	}
	if rp.transfer == nil {
		return
	}
	next, err := rp.transfer.Tick(100)
	switch {
	case err != nil:
		g.abandonTransfer(i, err)
	case next != nil:
		r.net.send(r.now, i, int(next.To), append([]byte(nil), next.Head...))
	}
}

func (g *group) abandonTransfer(i int, err error) {
	rp := g.reps[i]
	g.r.event(i, "%sstate transfer abandoned: %v", g.name(), err)
	rp.transfer = nil
	rp.core.SetTransferring(false)
	g.drive(i)
}

// transferProgress sends the next chunk request or installs.
func (g *group) transferProgress(i int, next *vsr.Envelope) {
	r := g.r
	rp := g.reps[i]
	if next != nil {
		r.net.send(r.now, i, int(next.To), append([]byte(nil), next.Head...))
	}
	if rp.transfer == nil || !rp.transfer.Complete() {
		return
	}
	s := rp.transfer
	if !rp.core.Transferring() {
		rp.transfer = nil // outdated by a view change
		return
	}
	o := g.offers[offerKey{int(s.Peer), i, s.Nonce}]
	var ro vsr.Roster
	if g.plan != nil {
		ro = g.plan.initial
		if o != nil {
			ro = rosterAt(o.applied, ro)
		}
	}
	if g.plan == nil && !rp.core.InstallAllowed(s.CommitOp) || g.plan != nil && !rp.core.InstallAllowedEpoch(s.CommitOp, ro) {
		g.abandonTransfer(i, fmt.Errorf("not installable now (%s, commit %d)", rp.core.Status(), rp.core.CommitMin()))
		return
	}
	if err := g.install(i, s); err != nil {
		g.abandonTransfer(i, err)
		return
	}
	rp.transfer = nil
	if g.plan != nil {
		rp.core.InstalledEpoch(s.CommitOp, s.CommitMax, ro)
	} else {
		rp.core.Installed(s.CommitOp, s.CommitMax)
	}
	rp.commit = rp.core.CommitMin()
	r.res.Transfers++
	r.event(i, "%sstate transfer installed at commit %d", g.name(), s.CommitOp)
	g.drive(i)
}

// install checks the artifacts as the node does and makes the offer's
// applied prefix this replica's durable state.
func (g *group) install(i int, s *vsr.TransferSession) error {
	r := g.r
	rp := g.reps[i]
	if r.cfg.PartitionPlane {
		if offsets, err := s.VerifyPartition(); err != nil {
			return err
		} else if offsets.NextOffset != s.CommitOp {
			return fmt.Errorf("offsets end at %d, offer commit %d", offsets.NextOffset, s.CommitOp)
		}
	} else if _, _, _, _, err := s.Verify(); err != nil {
		return err
	}
	o := g.offers[offerKey{int(s.Peer), i, s.Nonce}]
	if o == nil || o.CommitOp != s.CommitOp {
		return fmt.Errorf("no offer at commit %d", s.CommitOp)
	}
	if s.CommitOp <= rp.core.CommitMin() {
		return fmt.Errorf("offer commit %d not ahead of %d", s.CommitOp, rp.core.CommitMin())
	}
	for j, a := range rp.applied {
		if j >= len(o.applied) || !sameOp(a.frame, o.applied[j].frame) {
			r.violate(fmt.Sprintf("%sreplica %d: transferred state disagrees with its applied op %d", g.name(), i, a.op))
			return fmt.Errorf("divergent transfer")
		}
	}
	rp.applied = append(rp.applied[:0:0], o.applied...)
	for _, a := range rp.applied {
		if _, ok := g.canon[a.op]; !ok {
			g.canon[a.op] = a.frame
		}
	}
	rp.journal, rp.lastJournaled, rp.snapshotOp = make(map[uint64][]byte), 0, s.CommitOp
	if r.cfg.PartitionPlane {
		rp.core.SetOffsetFrontier(uint64(len(rp.applied)))
	}
	return nil
}
