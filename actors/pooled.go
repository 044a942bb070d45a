package actors

import (
	"iggynode/internal/framebuf"
	"iggynode/partition"
	"iggynode/wire"
)

// Pooled request buffers (internal/framebuf): a SendMessages request is
// read into a pooled buffer, and its batch is cached by the partition in
// place (no copy). The buffer goes back to the pool once nothing reads
// it: the edge hands its reference to the connection with the frame, the
// partition takes it over when it caches the batch (pooledOwner), every
// poll reply that carries the batch by reference pins it until the
// connection's writer has written it (partition.Log, wire.Splice.Pin),
// and the partition drops its reference when the cache evicts the batch
// (releaseEvicted). Everyone else who may read a prepare's bytes keeps
// them without counting, so the partition recycles only where nobody
// else can hold them:
//
//   - only in a group of one (vsr.Replica.Solo), from its first turn on:
//     a group with peers hands its prepares to the replica plane's
//     writers, to repair and to state transfer, which count nothing. A
//     partition actor that has ever been in a group with peers recycles
//     nothing more (poolOff);
//   - only a batch in the request's own buffer (not one sealed into a new
//     frame for encryption at rest, nor a forwarded request's);
//   - and, as a last check when the cache lets it go, only if neither
//     the core (vsr.Replica.HoldsMemoryOf) nor a segment write in flight
//     holds its bytes.
//
// A buffer that fails a check is left to the garbage collector, as every
// buffer was before: the cost of a missed recycle is an allocation, never
// bytes reused under a reader.

// pooledOwner takes over a committed SendMessages request's buffer for the
// partition log (nil when it is not to be recycled).
func (p *partitionActor) pooledOwner(req *clientRequest, frame []byte) partition.Owner {
	o := req.owner
	req.owner = nil
	if o == nil || !p.poolingAllowed() || req.relay != nil || !o.Holds(frame) {
		return nil
	}
	return o
}

// poolingAllowed says whether the partition may recycle request buffers,
// turning it off for good once its group has had peers.
func (p *partitionActor) poolingAllowed() bool {
	if p.poolOff || p.core == nil {
		return false
	}
	if !p.core.Solo() {
		p.poolOff = true
		return false
	}
	return true
}

// releaseEvicted drops the partition's reference on the buffers of the
// batches the cache let go since the last turn.
func (p *partitionActor) releaseEvicted() {
	if p.plog == nil {
		return
	}
	p.plog.DrainEvicted(func(o partition.Owner) {
		b, ok := o.(*framebuf.Buf)
		if !ok || !p.poolingAllowed() || p.core.HoldsMemoryOf(b.Memory()) || p.writingHolds(b) {
			return // left to the collector
		}
		b.Release()
	})
}

// writingHolds reports whether the segment write in flight reads b.
func (p *partitionActor) writingHolds(b *framebuf.Buf) bool {
	if p.writing == nil {
		return false
	}
	for _, f := range p.writing.toStore {
		if wire.Aliases(b.Memory(), f) {
			return true
		}
	}
	return false
}
