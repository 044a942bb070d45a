package actors

import (
	"cmp"
	"slices"

	"iggynode/internal/framebuf"
	"iggynode/partition"
	"iggynode/vsr"
	"iggynode/wire"
)

// Pooled request buffers (internal/framebuf): a SendMessages request is
// read into a pooled buffer, its prepare is built in place and its batch
// is cached by the partition in place (no copy). The buffer goes back to
// the pool once nothing reads it:
//
//   - the edge hands its reference to the connection with the frame, and
//     the partition takes it over when it caches the batch (pooledOwner);
//   - on a backup, the replica plane reads a peer's prepare into a pooled
//     buffer; the partition takes its reference once the core journals
//     the prepare (adoptPeerBuffer) and hands it to the log at commit
//     (takeAdopted), after which it goes the way of a request's;
//   - every poll reply that carries the batch by reference pins it until
//     the connection's writer has written it (partition.Log,
//     wire.Splice.Pin);
//   - every frame that carries the prepare to a peer (replication, repair,
//     a view change's resends) pins it until the replica plane's writer
//     has written or dropped it (pinFor, replicaplane.Node.SendPinned);
//   - the partition drops its own reference once the cache has evicted
//     the batch and neither the core (vsr.Replica.HoldsMemoryOf: the
//     pipeline, the committed prepares retained for repair) nor a segment
//     write holds its bytes; evicted while they do, the buffer waits in
//     deferred until they no longer do (releaseEvicted).
//
// Only a batch in the request's own buffer takes part (not one sealed
// into a new frame for encryption at rest, nor a forwarded request's),
// and a buffer that misses a step (a request canceled by a view change,
// one forwarded to the primary) is left to the garbage collector: the
// cost of a missed recycle is an allocation, never bytes reused under a
// reader. State transfer reads the segment files, never these buffers.

// pooledPrepare is a submitted prepare whose frame lies in a pooled
// buffer, kept while the core may send it to a peer.
type pooledPrepare struct {
	buf *framebuf.Buf
	key *byte  // the first byte of the prepare's body: the map key
	op  uint64 // its op once journaled, or adopted (0 before)
	// adopted: a peer's prepare this replica journaled, whose buffer
	// reference the entry holds until apply hands it to the log
	// (takeAdopted); a request's is held by the request.
	adopted bool
}

// pooledPrepares finds the pooled buffer of a prepare the core sends.
type pooledPrepares struct {
	byBody    map[*byte]*pooledPrepare
	byBuf     map[*framebuf.Buf]*pooledPrepare
	journaled []*pooledPrepare // in op order, for pruning
}

// add registers a submitted prepare whose body (its batch) lies in buf.
func (pp *pooledPrepares) add(buf *framebuf.Buf, body []byte) *pooledPrepare {
	if pp.byBody == nil {
		pp.byBody, pp.byBuf = make(map[*byte]*pooledPrepare), make(map[*framebuf.Buf]*pooledPrepare)
	}
	e := &pooledPrepare{buf: buf, key: &body[0]}
	pp.byBody[e.key], pp.byBuf[buf] = e, e
	return e
}

// adopt registers a peer's prepare the core journaled, read into buf
// (replicaplane.Handler): the entry holds buf's reference until apply
// takes it (takeAdopted). Forgotten before that (its op truncated by a
// view change, or applied as already stored), the reference is left to
// the collector.
func (pp *pooledPrepares) adopt(buf *framebuf.Buf, frame []byte) {
	e := pp.add(buf, frame[wire.HeaderSize:])
	e.adopted = true
	// Its op from the frame, not from a Ready's Journal: the core may
	// hold a frame it never journals (a RepairPrepare out of order,
	// dropped by a view change or a refused repair), and prune forgets
	// it once the commit point passes that op.
	e.op = wire.HeaderOf(frame).Prepare().Op
	pp.insertJournaled(e)
}

// insertJournaled keeps journaled in op order (a repair adopts ops out of
// order), so that prune forgets every entry below its bound.
func (pp *pooledPrepares) insertJournaled(e *pooledPrepare) {
	n := len(pp.journaled)
	if n == 0 || pp.journaled[n-1].op <= e.op {
		pp.journaled = append(pp.journaled, e)
		return
	}
	i, _ := slices.BinarySearchFunc(pp.journaled, e.op, func(x *pooledPrepare, op uint64) int { return cmp.Compare(x.op, op) })
	pp.journaled = slices.Insert(pp.journaled, i, e)
}

// takeAdopted hands the log the reference of the adopted prepare whose
// body is batch (nil: none, or a request's, which pooledOwner hands).
func (pp *pooledPrepares) takeAdopted(batch []byte) partition.Owner {
	if len(batch) == 0 {
		return nil
	}
	e := pp.byBody[&batch[0]]
	if e == nil || !e.adopted || !e.buf.Holds(batch) {
		return nil
	}
	e.adopted = false
	return e.buf
}

// forget drops e (its request was canceled or its op taken by another).
func (pp *pooledPrepares) forget(e *pooledPrepare) {
	if pp.byBody[e.key] == e {
		delete(pp.byBody, e.key)
	}
	if pp.byBuf[e.buf] == e {
		delete(pp.byBuf, e.buf)
	}
}

// released forgets the prepare in b, which goes back to the pool: however
// the bookkeeping of ops went, no frame is pinned to a released buffer.
func (pp *pooledPrepares) released(b *framebuf.Buf) {
	if e := pp.byBuf[b]; e != nil {
		pp.forget(e)
	}
}

// journal notes the ops of a Ready's journaled prepares.
func (pp *pooledPrepares) journal(frames [][]byte) {
	for _, f := range frames {
		if len(f) <= wire.HeaderSize {
			continue
		}
		if e := pp.byBody[&f[wire.HeaderSize]]; e != nil && e.op == 0 {
			e.op = wire.HeaderOf(f).Prepare().Op
			pp.insertJournaled(e)
		}
	}
}

// prune forgets the prepares below heldFrom (vsr.Replica.HeldFrom): the
// core sends them no more.
func (pp *pooledPrepares) prune(heldFrom uint64) {
	n := 0
	for n < len(pp.journaled) && pp.journaled[n].op < heldFrom {
		pp.forget(pp.journaled[n])
		n++
	}
	if n > 0 {
		clear(pp.journaled[:n])
		pp.journaled = pp.journaled[n:]
	}
}

// pinFor takes a reference on the pooled buffer an outgoing frame's body
// lies in (nil: none). A prepare's body is looked up by its first byte:
// the core sends a prepare as its frame's body (vsr sendPrepare, repair),
// so one not found is in no pooled buffer (a small batch's, a peer's
// frame this replica did not adopt) and costs no search; any other body
// is checked against every buffer held.
func (pp *pooledPrepares) pinFor(e vsr.Envelope) wire.Pin {
	if len(e.Body) == 0 || len(pp.byBody) == 0 {
		return nil
	}
	if p := pp.byBody[&e.Body[0]]; p != nil && p.buf.Holds(e.Body) {
		return p.buf.Pin()
	}
	if c := wire.HeaderOf(e.Head).Command(); c == wire.CmdPrepare || c == wire.CmdRepairPrepare {
		return nil
	}
	for _, p := range pp.byBody {
		if p.buf.Holds(e.Body) || p.buf.Holds(e.Head) {
			return p.buf.Pin()
		}
	}
	return nil
}

// registerPooled keeps a submitted send's pooled prepare (the batch is
// the prepare's body) for pinFor, and returns it for the request's
// pending tag; nil when its frame is not in its pooled buffer.
func (p *partitionActor) registerPooled(req *clientRequest, frame []byte) *pooledPrepare {
	if req.owner == nil || req.relay != nil || len(frame) <= wire.HeaderSize || !req.owner.Holds(frame) {
		return nil
	}
	return p.pooled.add(req.owner, frame[wire.HeaderSize:])
}

// forgetPooled drops a canceled or rejected request's prepare: the core
// holds it no more.
func (p *partitionActor) forgetPooled(pd *pending) {
	if pd.pooled != nil {
		p.pooled.forget(pd.pooled)
		pd.pooled = nil
	}
}

// sendPrepares hands a Ready's frames to the peers, each pinned to the
// pooled buffer it reads.
func (p *partitionActor) sendPrepares(envs []vsr.Envelope) {
	p.node.sendPinned(envs, p.pooled.pinFor)
}

// adoptPeerBuffer keeps the pooled buffer of a peer's prepare (m.owner)
// that the core has just journaled, so that once applied and evicted it
// goes back to the pool like a request's; one the core did not keep (a
// duplicate, a stale view, a gap) is left to the collector.
func (p *partitionActor) adoptPeerBuffer(m *peerFrame) {
	owner := m.owner
	m.owner = nil
	if owner == nil || len(m.frame) <= wire.HeaderSize || !owner.Holds(m.frame) || !p.core.HoldsMemoryOf(owner.Memory()) {
		return
	}
	p.pooled.adopt(owner, m.frame)
}

// pooledOwner takes over a committed SendMessages request's buffer for the
// partition log (nil when it is not to be recycled).
func (p *partitionActor) pooledOwner(req *clientRequest, frame []byte) partition.Owner {
	o := req.owner
	req.owner = nil
	if o == nil || req.relay != nil || !o.Holds(frame) {
		return nil
	}
	return o
}

// releaseEvicted drops the partition's reference on the buffers of the
// batches the cache let go since the last turn, once nothing else of the
// partition reads them. The deferred ones are looked at again when the
// core's held range or the write in flight has changed.
func (p *partitionActor) releaseEvicted() {
	if p.plog == nil || p.core == nil {
		return
	}
	if p.core.HasReady() {
		// A Ready not taken yet (a drive deferred behind the mailbox or
		// a write in flight) may send a prepare the core no longer names
		// (a retained one shed since the send was queued): nothing is
		// forgotten or released until it is taken and its frames pinned.
		return
	}
	heldFrom := p.core.HeldFrom()
	p.pooled.prune(heldFrom)
	p.plog.DrainEvicted(func(o partition.Owner) {
		b, ok := o.(*framebuf.Buf)
		if !ok {
			return
		}
		if p.pooledHeld(b) {
			p.deferred = append(p.deferred, b) // at most what the core retains and two writes
			return
		}
		p.release(b)
	})
	at := deferredCheck{heldFrom: heldFrom, toStore: len(p.toStore)}
	if p.writing != nil {
		at.writeSeq = p.writing.seq
	}
	if len(p.deferred) == 0 || at == p.deferredAt {
		return
	}
	p.deferredAt = at
	keep := p.deferred[:0]
	for _, b := range p.deferred {
		if p.pooledHeld(b) {
			keep = append(keep, b)
		} else {
			p.release(b)
		}
	}
	clear(p.deferred[len(keep):])
	p.deferred = keep
}

// deferredCheck is what the deferred buffers were last checked against.
type deferredCheck struct {
	heldFrom, writeSeq uint64
	toStore            int
}

// release drops the partition's reference on b.
func (p *partitionActor) release(b *framebuf.Buf) {
	p.pooled.released(b)
	b.Release()
}

// pooledHeld reports whether the core or a segment write (in flight, or
// gathered for the next) reads b.
func (p *partitionActor) pooledHeld(b *framebuf.Buf) bool {
	if p.core.HoldsMemoryOf(b.Memory()) {
		return true
	}
	holds := func(batches [][]byte) bool {
		for _, f := range batches {
			if b.Holds(f) {
				return true
			}
		}
		return false
	}
	return holds(p.toStore) || (p.writing != nil && holds(p.writing.toStore))
}
