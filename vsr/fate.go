package vsr

import (
	"maps"
	"slices"

	"iggynode/wire"
)

// Awaiting the fate of cancelled prepares (Config.AwaitFate).
//
// A primary that loses its view (a view change, a planned hand-over, a
// new epoch) cancels its pipeline: whether each prepare commits is up to
// the next view, which may keep it or replace it. The metadata plane
// answers such a request TransientNotCommitted (57) and the client table
// deduplicates the replay (replica-plane.md 5.12). Partition groups keep
// no client table, and their requests reuse the client's request number
// (client-plane.md 5.3), so a replay of a prepare the next view kept is
// stored twice. With AwaitFate the core keeps each cancelled prepare's tag
// with its identity instead, for at most FateTicks:
//
//   - when this replica commits that op (as a backup of the next view, or
//     as its primary again) and it is the same prepare (same checksum,
//     which leaves the view out, 2.2), the Committed carries the tag: the
//     request is answered with its result, as if nothing had happened;
//   - when a different prepare commits at that op, the request did not
//     commit and never will: its tag goes to Ready.Rejected (the client
//     may re-issue it anywhere, TransientNotAccepted);
//   - when the wait runs out, a state transfer moves the commit point past
//     it, or this replica leaves the group, the outcome is unknown: the
//     tag goes to Ready.Canceled, as without AwaitFate.
//
// The fates are at most a pipeline's worth (PrepareQueueDepth) per view
// lost, and each lives FateTicks.

// fate is a cancelled prepare waiting for its op to commit.
type fate struct {
	tag      any
	checksum wire.U128
	ticks    int // left until the outcome is given up as unknown
}

// awaitFate keeps the tag of op's cancelled prepare; false: not kept (no
// AwaitFate), the caller cancels it.
func (r *Replica) awaitFate(op uint64, e *entry) bool {
	if !r.cfg.AwaitFate || !r.Member() {
		return false
	}
	if r.fates == nil {
		r.fates = map[uint64]fate{}
	}
	if old, ok := r.fates[op]; ok {
		r.ready.Canceled = append(r.ready.Canceled, old.tag) // cannot happen twice for one op; never lose a tag
	}
	r.fates[op] = fate{tag: e.tag, checksum: e.hdr.Checksum, ticks: r.cfg.FateTicks}
	return true
}

// fateAtCommit resolves the fate waiting on op, which commits with e: the
// tag if it is the same prepare, else (Rejected) nil.
func (r *Replica) fateAtCommit(op uint64, e *entry) any {
	f, ok := r.fates[op]
	if !ok {
		return nil
	}
	delete(r.fates, op)
	if f.checksum == e.hdr.Checksum {
		return f.tag
	}
	r.ready.Rejected = append(r.ready.Rejected, f.tag)
	return nil
}

// tickFates counts the waits down and gives up those that ran out.
func (r *Replica) tickFates() {
	expired := false
	for op, f := range r.fates {
		f.ticks--
		r.fates[op] = f
		expired = expired || f.ticks <= 0
	}
	if expired {
		r.giveUpFates(func(op uint64, f fate) bool { return f.ticks <= 0 })
	}
}

// cancelFates gives up every wait on an op at or below upTo (every one:
// ^uint64(0)): their outcome can no longer be seen here.
func (r *Replica) cancelFates(upTo uint64) {
	r.giveUpFates(func(op uint64, _ fate) bool { return op <= upTo })
}

// giveUpFates cancels the waits that match, in op order (the core is
// deterministic; map order is not).
func (r *Replica) giveUpFates(match func(op uint64, f fate) bool) {
	for _, op := range slices.Sorted(maps.Keys(r.fates)) {
		if f := r.fates[op]; match(op, f) {
			r.ready.Canceled = append(r.ready.Canceled, f.tag)
			delete(r.fates, op)
		}
	}
}

// fateWork is tickWork's share: ticks until the first wait runs out (0:
// none waits).
func (r *Replica) fateWork() int {
	n := 0
	for _, f := range r.fates {
		if n == 0 || f.ticks < n {
			n = max(f.ticks, 1)
		}
	}
	return n
}

// Awaiting reports how many cancelled prepares wait for their fate.
func (r *Replica) Awaiting() int { return len(r.fates) }

// Abandon gives up every admitted request this replica holds a tag for
// (queued, in the pipeline, awaiting its fate): the shell is about to stop
// it for good (its partition deleted, or moved off this node), so their
// outcome is unknown here. The tags go to Ready.Canceled, in op order and
// then in arrival order; the ops themselves stay (a replica that goes on
// would still commit them, answering no one).
func (r *Replica) Abandon() {
	for _, op := range slices.Sorted(maps.Keys(r.log)) {
		if e := r.log[op]; e.tag != nil {
			r.ready.Canceled = append(r.ready.Canceled, e.tag)
			e.tag = nil
		}
	}
	for i := range r.queue {
		if t := r.queue[i].Tag; t != nil {
			r.ready.Canceled = append(r.ready.Canceled, t)
			r.queue[i].Tag = nil
		}
	}
	r.cancelFates(^uint64(0))
}
