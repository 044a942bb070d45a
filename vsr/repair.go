package vsr

import "iggynode/wire"

// Journal repair (replica-plane.md 7.2-7.5): a backup whose commit walk
// stops at a hole below commit_max pulls the missing prepares from the
// primary in windows of at most RepairChunk ops.
//
// Choices where the spec leaves room:
//   - Every replica keeps its committed prepares in memory for serving, up
//     to RetainOps entries and RetainBytes bytes (the partition plane's
//     evicted ring of 5.13 rule 6). Below that, a partition server answers
//     RangeEvicted; a metadata server reads older ops back from its journal
//     (Config.ReadJournal) down to the last checkpoint, as 7.3 says.
//   - RepairPrepares may arrive in any order: each one inside the window is
//     held where it belongs and handed to the shell's journal in op order
//     once the ops below it are journaled (a partition shell checks each
//     batch's stamp against its next offset), sequencer advances along the
//     contiguous journaled run, and the commit walk runs as soon as the run
//     reaches an op (every op of a window is at or below commit_max, so
//     committed on a quorum); RepairDone then only decides between closing,
//     pulling the next window, and waiting for the stall retry.
//   - Partition groups follow 7.5's floor rule: a RangeEvicted sets the
//     floor, and at RepairDone the window "connects" when its lowest
//     repaired batch starts at or below this replica's durable offset
//     frontier (SetOffsetFrontier), so a backup restarted with its segments
//     jumps commit_min to the floor and repairs only the rest; the shell
//     skips batches it already holds.
//   - State transfer (7.6, 7.7) is not here yet: a metadata RangeEvicted,
//     or a partition window that cannot connect, closes the session and is
//     counted; the replica stays behind until a server that still holds the
//     range can repair it.

// repairSession is the open repair of 7.2 rule 1.
type repairSession struct {
	open  bool
	nonce wire.U128
	peer  uint8
	toOp  uint64
	idle  int
	// pending counts ingested RepairPrepares not yet Journaled; done is set
	// by a RepairDone whose walk waits for them.
	pending int
	done    bool
	// emitted is the highest repaired op handed to the journal.
	emitted uint64
	// askedFrom is the from_op of the last RequestPrepares: a RepairDone that
	// finds commit_min at or above it made progress; so did one that finds
	// sequencer above askedHead (ops above commit_max, journaled only).
	askedFrom, askedHead, askedTo uint64
	// Partition sessions (7.2 rule 1): floor from RangeEvicted (0: none).
	floor uint64
}

// retained is the ring of committed prepares kept for serving repair.
type retained struct {
	from   uint64 // lowest op held; the ring holds from .. from+len(frames)-1
	frames [][]byte
	bytes  int
}

func (rt *retained) at(op uint64) []byte {
	if op < rt.from || op >= rt.from+uint64(len(rt.frames)) {
		return nil
	}
	return rt.frames[op-rt.from]
}

// keep appends the frame of op, the next committed op, and evicts the
// oldest entries beyond the bounds.
func (rt *retained) keep(op uint64, frame []byte, maxOps, maxBytes int) {
	if len(rt.frames) == 0 || rt.from+uint64(len(rt.frames)) != op {
		clear(rt.frames)
		rt.frames, rt.from, rt.bytes = rt.frames[:0], op, 0
	}
	rt.frames = append(rt.frames, frame)
	rt.bytes += len(frame)
	drop := 0
	for len(rt.frames)-drop > maxOps || (rt.bytes > maxBytes && len(rt.frames)-drop > 1) {
		rt.bytes -= len(rt.frames[drop])
		rt.frames[drop] = nil
		drop++
	}
	if drop > 0 {
		rt.frames = rt.frames[drop:]
		rt.from += uint64(drop)
	}
}

// shed drops the oldest entries until at most keep bytes stay.
func (rt *retained) shed(keep int) {
	drop := 0
	for drop < len(rt.frames) && rt.bytes > keep {
		rt.bytes -= len(rt.frames[drop])
		rt.frames[drop] = nil
		drop++
	}
	rt.frames = rt.frames[drop:]
	rt.from += uint64(drop)
	if len(rt.frames) == 0 {
		rt.frames, rt.bytes = nil, 0
	}
}

// RetainedBytes is the size of the committed prepares kept for serving
// repair (5.13 rule 6).
func (r *Replica) RetainedBytes() int { return r.retained.bytes }

// ShedRetained drops the oldest committed prepares kept for repair until
// at most keep bytes stay (a node-wide memory budget asks): a backup that
// then asks for them gets RangeEvicted and moves to state transfer (7.5).
func (r *Replica) ShedRetained(keep int) { r.retained.shed(max(keep, 0)) }

// frameAt is the journaled prepare at op, committed or not, if still held.
func (r *Replica) frameAt(op uint64) []byte {
	if e := r.log[op]; e != nil {
		if e.journaled {
			return e.frame
		}
		return nil
	}
	if f := r.retained.at(op); f != nil {
		return f
	}
	if r.cfg.ReadJournal != nil && op <= r.commitMin && op >= r.cfg.JournalFloor() {
		return r.cfg.ReadJournal(op)
	}
	return nil
}

// maybeRepair opens a session when the commit walk is stuck on a hole
// below commit_max (7.2 rule 2).
func (r *Replica) maybeRepair() {
	if !r.repairWanted() {
		return
	}
	target := max(r.commitMax, r.knownHead)
	r.emitRepaired()  // entries held from a closed session are journaled first
	r.commitJournal() // the periodic backstop of 5.9
	if op := r.commitMin + 1; r.sequencer >= target && op <= r.commitMax && r.unprovable(op) {
		r.drop("committed repaired op nothing can prove: asked again")
		r.truncateFrom(op)
	}
	if r.sequencer >= target || r.log[r.sequencer+1] != nil {
		return // nothing missing, or the next op is on its way to the journal
	}
	r.repair = repairSession{open: true, peer: r.Primary(), toOp: target,
		nonce: wire.U128{Lo: r.random(), Hi: r.random()}}
	r.Repairs++
	r.requestPrepares()
}

func (r *Replica) requestPrepares() {
	from := r.commitMin + 1
	if r.vc.merged != nil {
		from = max(r.commitMin, r.sequencer) + 1 // the primary-elect's own journal is proven
	}
	if from > r.repair.toOp {
		return
	}
	// Ask from the first op not held, for at most repairPace ops: a window
	// larger than the peer's send queue would overrun it (3.2) and lose
	// part of every window.
	if r.repair.floor >= from {
		from = r.repair.floor + 1 // below the server's ring: the floor rule joins the rest (7.5)
	}
	for from <= r.repair.toOp && r.log[from] != nil {
		// Held already (an earlier window, or journaled but not yet proven
		// for this view: the ops above it, once here, prove it).
		from++
	}
	if from > r.repair.toOp {
		// Everything is held already (its RepairDone came before the last
		// of its prepares): finish the window now. Recorded as asked, so
		// that finishing it without progress does not ask again at once
		// (which would come straight back here).
		r.repair.askedFrom, r.repair.askedHead = from, r.sequencer
		if !r.repair.done && r.repair.pending == 0 {
			r.repair.done = true
			r.finishWindow()
		}
		return
	}
	to := min(r.repair.toOp, from+uint64(r.repairPace())-1)
	r.repair.askedFrom, r.repair.askedHead, r.repair.askedTo = from, r.sequencer, to
	rp := wire.RequestPreparesHeader{Cluster: r.cfg.Cluster, Replica: r.cfg.Replica,
		Nonce: r.repair.nonce, FromOp: from, ToOp: to, Group: r.cfg.Group}
	head := make([]byte, wire.HeaderSize)
	rp.Encode(wire.HeaderOf(head))
	r.ready.Send = append(r.ready.Send, Envelope{To: r.repair.peer, Head: head})
}

// tickRepair is the stall retry of 7.2 rule 4.
func (r *Replica) tickRepair() {
	if r.repairBackoff > 0 {
		r.repairBackoff--
	}
	if r.repair.open && r.repairComplete() {
		r.repair, r.refusedInARow = repairSession{}, 0 // the live chain or a heartbeat got it there first
	}
	if !r.repair.open {
		r.maybeRepair()
		return
	}
	if r.status != StatusNormal && r.vc.merged == nil {
		return
	}
	r.repair.idle++
	if r.repair.idle >= r.cfg.RepairRetryTicks {
		r.repair.idle = 0
		if r.vc.merged != nil && r.repair.askedHead == r.sequencer {
			// A primary-elect's source that brings nothing (it lacks the
			// op after all, or holds another identity) is left for the
			// next one, instead of waiting for the view to escalate.
			r.vc.tried |= 1 << r.repair.peer
			r.repair = repairSession{}
			r.electProgress()
			return
		}
		r.requestPrepares()
	}
}

// onRequestPrepares serves a window (7.3): the held prepares from the
// request's from_op, preceded by RangeEvicted when the oldest are gone,
// then RepairDone with the last op sent.
func (r *Replica) onRequestPrepares(req wire.RequestPreparesHeader) {
	if r.status == StatusRecovering || req.Group != r.cfg.Group || req.Replica == r.cfg.Replica ||
		req.Replica >= MaxReplicas {
		r.drop("request_prepares not servable")
		return
	}
	to := min(req.ToOp, max(r.commitMax, r.sequencer))
	from := req.FromOp
	if oldest := r.oldestHeld(); from < oldest {
		from = oldest
		r.sendRepairReply(req, wire.CmdRangeEvicted, from)
		if r.cfg.Metadata && from > to {
			r.sendRepairReply(req, wire.CmdRepairDone, req.FromOp-1) // 7.3 metadata rule 4
			return
		}
	}
	last := from - 1
	for op := from; op <= to && op < from+uint64(r.cfg.RepairChunk); op++ {
		frame := r.frameAt(op)
		if frame == nil {
			break
		}
		head := make([]byte, wire.HeaderSize)
		copy(head, frame[:wire.HeaderSize])
		wire.HeaderOf(head).SetCommand(wire.CmdRepairPrepare) // identity unaffected (7.3 step 6)
		if r.status == StatusNormal && r.logView == r.view && r.proven(op) {
			// Served from this view's log: the view says so (see proven).
			// An op this replica has not proven itself keeps its stored
			// view, so no proof is passed on that was never made.
			wire.HeaderOf(head).SetView(r.view)
		}
		r.ready.Send = append(r.ready.Send, Envelope{To: req.Replica, Head: head, Body: frame[wire.HeaderSize:]})
		last = op
	}
	r.sendRepairReply(req, wire.CmdRepairDone, last)
}

// OldestServable is the lowest op this replica can serve to repair.
func (r *Replica) OldestServable() uint64 { return r.oldestHeld() }

// oldestHeld is the lowest op this replica can serve.
func (r *Replica) oldestHeld() uint64 {
	if r.cfg.ReadJournal != nil {
		return max(r.cfg.JournalFloor(), 1)
	}
	if len(r.retained.frames) > 0 {
		return r.retained.from
	}
	return r.commitMin + 1
}

func (r *Replica) sendRepairReply(req wire.RequestPreparesHeader, cmd wire.Command, op uint64) {
	rr := wire.RepairRangeReplyHeader{Command: cmd, Cluster: r.cfg.Cluster, Replica: r.cfg.Replica,
		Nonce: req.Nonce, Op: op, Group: r.cfg.Group}
	head := make([]byte, wire.HeaderSize)
	rr.Encode(wire.HeaderOf(head))
	r.ready.Send = append(r.ready.Send, Envelope{To: req.Replica, Head: head})
}

// onRepairPrepare ingests one served prepare (7.4): journaled, never acked
// or forwarded, applied by the commit walk on RepairDone.
func (r *Replica) onRepairPrepare(frame []byte, p wire.PrepareHeader) {
	switch {
	case !r.repair.open:
		r.drop("repair_prepare without a session")
		return
	case p.Op > r.repair.toOp || p.Op <= r.commitMin:
		r.drop("repair_prepare out of the window")
		return
	case r.status != StatusNormal && r.vc.merged == nil:
		r.drop("repair_prepare while not normal")
		return
	}
	if m := r.vc.merged; m != nil {
		if h, ok := m.header(p.Op); ok && h.Checksum != p.Checksum {
			r.drop("repair_prepare differs from the merged log")
			return
		}
	}
	if h, ok := r.adopted[p.Op]; ok && r.vc.merged == nil && h.Prepare().Checksum != p.Checksum {
		r.drop("repair_prepare differs from the adopted view")
		return
	}
	if !r.cfg.Metadata {
		r.repair.idle = 0 // 7.2 rule 4: every in-window RepairPrepare
	}
	if r.log[p.Op] != nil {
		return // already held
	}
	wire.HeaderOf(frame).SetCommand(wire.CmdPrepare) // journaled as the prepare it is
	r.log[p.Op] = &entry{frame: frame, hdr: p, repaired: true, provenView: r.view,
		proven: r.status == StatusNormal && p.View == r.view && r.logView == r.view}
	r.emitRepaired()
}

// identityAt is the identity of op as this replica knows it: the held
// entry's, or the committed op's at commit_min.
func (r *Replica) identityAt(op uint64) (wire.U128, bool) {
	if e := r.log[op]; e != nil {
		return e.hdr.Checksum, true
	}
	if op == r.commitMin {
		return r.committedChecksum, true
	}
	return wire.U128{}, false
}

// proofView is the view a proof is made for: the log_view, or, while a
// primary-elect holds a merged log, the view it is starting (its old
// log_view's proofs say nothing about the new log).
func (r *Replica) proofView() uint32 {
	if r.vc.merged != nil {
		return r.view
	}
	return r.logView
}

// proven reports whether the entry held at op is this view's op, so may
// be applied or reported present in a DVC. A RepairPrepare carries no
// nonce, and duplication can deliver one served in an older view long
// after (11.2): such an op may have been discarded since, and its number
// reused. So a repaired entry is applied only when proven (the choice of
// this package; 7.4 trusts the session): served by a replica in Normal in
// this very view (our servers stamp the view they serve from, which the
// prepare identity does not cover, 2.2 rule 3), named by the view's
// headers (adopted StartView, merged log), or named as parent by a proven
// entry above it. Live entries are proven by construction.
//
// A proof holds for the log of one view: it counts while log_view is that
// view (so an op acknowledged in view v is reported present in the DVCs
// that leave v), and must be made again for the next view's log.
func (r *Replica) proven(op uint64) bool {
	e := r.log[op]
	if e == nil {
		return op <= r.commitMin
	}
	pv := r.proofView()
	if !e.repaired || e.proven && e.provenView == pv || e.mergedProof && e.mergedProofView == pv {
		return true
	}
	ok := false
	if h, found := r.viewHeader(op); found {
		ok = h.Checksum == e.hdr.Checksum
	} else if above := r.log[op+1]; above != nil {
		ok = above.hdr.Parent == e.hdr.Checksum && r.proven(op+1)
	} else if h, found := r.viewHeader(op + 1); found {
		ok = h.Parent == e.hdr.Checksum
	}
	if ok {
		r.markProven(e)
	}
	return ok
}

// markProven records that e is the op of the log proofView names: the
// log_view's, or the merged log of the view a primary-elect is starting.
func (r *Replica) markProven(e *entry) {
	if r.vc.merged != nil {
		e.mergedProof, e.mergedProofView = true, r.view
		return
	}
	e.proven, e.provenView = true, r.logView
}

// unprovable reports whether the repaired entry at op, which the commit
// walk stops at, can never be proven where it is: no header of the view
// names it or an op above it, and the entries above it up to the first
// missing one are repaired ones nothing proved either. A backup that
// holds everything its view's primary announced is then stuck below
// commit_max for good (the StartView's suffix has a blank there when the
// primary, restarted from its segments, kept no frame of that committed
// op, and no op above comes while the group is idle: a learner never
// caught up, and its move never finished, simulator seed 7019 of
// --placement 3 --replicas 5 --groups 6 --handover 0.01). maybeRepair
// drops it and asks the primary again, which serves it proven, or
// reports it evicted (the floor rule, then state transfer).
func (r *Replica) unprovable(op uint64) bool {
	if e := r.log[op]; e == nil || !e.repaired || !e.journaled || r.proven(op) {
		return false
	}
	for o := op; ; o++ {
		if _, ok := r.viewHeader(o); ok {
			return false
		}
		e := r.log[o]
		if e == nil {
			return true
		}
		if o > op && (!e.repaired || r.proven(o)) {
			return false
		}
	}
}

// refuted reports whether the repaired entry at op is proven not to be
// this view's op: the view's header at op, or the proven entry above it,
// names another identity. The commit walk drops it, and repair asks again.
func (r *Replica) refuted(op uint64) bool {
	e := r.log[op]
	if e == nil || !e.repaired {
		return false
	}
	if h, ok := r.viewHeader(op); ok {
		return h.Checksum != e.hdr.Checksum
	}
	if above := r.log[op+1]; above != nil && r.proven(op+1) {
		return above.hdr.Parent != e.hdr.Checksum
	}
	if h, ok := r.viewHeader(op + 1); ok {
		return h.Parent != e.hdr.Checksum
	}
	return false
}

// viewHeader is the header the log proofs are made for names at op
// (proofView): the primary-elect's merged log, or else the StartView of
// the log_view this replica adopted.
func (r *Replica) viewHeader(op uint64) (wire.PrepareHeader, bool) {
	if m := r.vc.merged; m != nil {
		return m.header(op) // the adopted headers are the old view's log
	}
	return r.adoptedHeader(op)
}

// emitRepaired hands held repaired entries to the journal in op order,
// starting right above everything journaled or already handed over.
//
// The journal never gets a broken hash chain (a restart would refuse it,
// 9.3 step 3): an entry whose parent is not the identity of the op below
// is not handed over. If the op below is a repaired one nothing proved,
// it is the suspect and is truncated (repair asks again); otherwise the
// new entry is dropped.
func (r *Replica) emitRepaired() {
	for next := max(r.sequencer, r.repair.emitted) + 1; ; next++ {
		e := r.log[next]
		if e == nil || !e.repaired || e.emitted {
			return
		}
		if below, ok := r.identityAt(next - 1); ok && !below.IsZero() && !e.hdr.Parent.IsZero() && e.hdr.Parent != below {
			if b := r.log[next-1]; b != nil && b.repaired && !r.proven(next-1) && next-1 > r.commitMin {
				r.drop("repaired op below does not chain: truncated")
				r.truncateFrom(next - 1)
			} else {
				r.drop("repaired op does not chain onto the one below")
				delete(r.log, next)
			}
			return
		}
		e.emitted = true
		r.repair.emitted = next
		r.repair.pending++
		r.ready.Journal = append(r.ready.Journal, e.frame)
	}
}

// SetOffsetFrontier tells a partition group's core the next offset after
// its durable data (its segments), for the floor rule of 7.5.
func (r *Replica) SetOffsetFrontier(next uint64) { r.offsetFrontier = next }

// applyFloor is 7.5 partition rule 2 for a window that starts above this
// replica's commit_min: if the lowest repaired batch connects to the
// durable data, commit_min jumps to the floor (those ops are in the
// segments already); otherwise the session ends, FloorRefused, which state
// transfer (7.7) would take over.
func (r *Replica) applyFloor() bool {
	floor := min(r.repair.floor, r.commitMax)
	connects, decided := r.floorConnects(floor)
	if !decided {
		return false // an op above the floor is still missing: the stall retry asks again
	}
	if !connects {
		if !r.transferring {
			r.NeedTransfer = int(r.repair.peer) // FloorRefused: partition state transfer (7.7)
		}
		r.refuseRepair("repair floor does not connect: state transfer needed")
		return false
	}
	for o := r.commitMin + 1; o <= floor; o++ {
		delete(r.log, o)
	}
	r.commitMin, r.sequencer = floor, max(r.sequencer, floor)
	if e := r.log[floor+1]; e != nil {
		r.lastChecksum = e.hdr.Parent
	}
	r.committedChecksum = r.lastChecksum
	r.repair.floor = 0
	return true
}

// floorConnects is 7.5's test, on the entries held right above the floor
// (never on batches of an earlier window): the contiguous run from floor+1
// must reach a SendMessages batch that starts at or below the durable
// offset frontier, which proves every batch of the skipped ops is stored
// here. Stricter than 7.5: a window holding no batch never connects (the
// skipped ops' offsets would be unknown), nor does an empty one. As 7.5
// says, a window with an op still missing before that batch is not decided
// yet: the session waits for the stall retry instead of being refused.
func (r *Replica) floorConnects(floor uint64) (connects, decided bool) {
	for op := floor + 1; op <= r.repair.toOp; op++ {
		e := r.log[op]
		if e == nil {
			return false, false
		}
		if e.hdr.Operation == wire.OpSendMessages {
			body := e.frame[wire.HeaderSize:]
			return len(body) >= wire.BatchHeaderSize && wire.Batch(body).BaseOffset() <= r.offsetFrontier, true
		}
	}
	return false, true
}

// refuseRepair ends a session that cannot complete here (state transfer's
// case): held entries nobody will journal are dropped, and no new session
// opens for a retry interval that doubles with each refusal in a row (up
// to 64 intervals), so the primary is not asked for the same window every
// tick and a replica that cannot be served asks ever less often.
func (r *Replica) refuseRepair(reason string) {
	r.drop(reason)
	r.RepairsRefused++
	for op, e := range r.log {
		if e.repaired && !e.emitted && op > r.sequencer {
			delete(r.log, op)
		}
	}
	r.repair = repairSession{}
	r.repairBackoff = r.cfg.RepairRetryTicks << min(r.refusedInARow, 6)
	r.refusedInARow++
}

// advanceSequencer moves sequencer along the contiguous run of journaled
// entries above it (7.4 rule 8): never over a hole.
func (r *Replica) advanceSequencer() {
	for {
		r.emitRepaired()
		e := r.log[r.sequencer+1]
		if e == nil || !e.journaled {
			return
		}
		r.sequencer, r.lastChecksum = e.hdr.Op, e.hdr.Checksum
		r.lastTimestamp = max(r.lastTimestamp, e.hdr.Timestamp)
	}
}

// onRepairReply handles the terminators (7.5).
func (r *Replica) onRepairReply(rr wire.RepairRangeReplyHeader) {
	if !r.repair.open || rr.Nonce != r.repair.nonce || rr.Group != r.cfg.Group {
		r.drop("repair reply for no open session")
		return
	}
	if rr.Command == wire.CmdRangeEvicted {
		if !r.cfg.Metadata && rr.Op > 0 {
			r.repair.floor = rr.Op - 1 // 7.5 partition rule 1
			return
		}
		// State transfer takes over (7.5 metadata rule 2): the shell
		// starts one against the sender when it can.
		if r.cfg.Metadata && !r.transferring {
			r.NeedTransfer = int(rr.Replica)
		}
		r.refuseRepair("range evicted: state transfer needed")
		return
	}
	r.repair.done = true
	r.finishWindow()
}

// repairedJournaled is Journaled for an op that arrived as a RepairPrepare.
// A window whose last op arrives after its RepairDone (reordering) is
// finished here instead of waiting for the stall retry.
func (r *Replica) repairedJournaled() {
	r.advanceSequencer()
	r.commitJournal()
	if r.repair.open && r.repair.pending > 0 {
		r.repair.pending--
		if r.repair.pending == 0 && r.sequencer >= r.repair.askedTo {
			r.repair.done = true
		}
		r.finishWindow()
	}
}

// repairPace is the most ops one RequestPrepares asks for: the repair
// chunk, and at most half the peer send queue (PeerQueueCapacity).
func (r *Replica) repairPace() int {
	pace := r.cfg.RepairChunk
	if q := r.cfg.PeerQueueCapacity / 2; q > 0 {
		pace = min(pace, q)
	}
	return max(pace, 1)
}

// finishWindow is the RepairDone step of 7.5, run once the window's
// prepares are journaled (the shell may append them after RepairDone
// arrived): commit walk, then close, pull the next window, or wait for the
// stall retry.
func (r *Replica) finishWindow() {
	if !r.repair.done || r.repair.pending > 0 {
		return
	}
	r.repair.done = false
	if r.repair.floor > r.commitMin && !r.applyFloor() {
		return
	}
	r.commitJournal()
	switch {
	case r.repairComplete():
		r.repair, r.refusedInARow = repairSession{}, 0
		if r.vc.merged != nil {
			r.electProgress()
		} else {
			r.maybeRepair() // commit_max may have moved on meanwhile
		}
	case r.commitMin > r.repair.askedFrom-1 || r.sequencer > r.repair.askedHead || r.repair.floor >= r.repair.askedFrom:
		r.repair.idle = 0
		r.requestPrepares()
	}
}

// repairComplete: the window is journaled, and committed as far as
// commit_max reaches into it.
func (r *Replica) repairComplete() bool {
	return r.sequencer >= r.repair.toOp && r.commitMin >= min(r.repair.toOp, r.commitMax)
}

// HoldsMemoryOf reports whether the core still holds a prepare frame
// whose bytes lie within buf (wire.Aliases): a journaled or uncommitted
// op, or a committed one retained for repair. The shell recycles a
// request buffer (internal/framebuf) only once the core no longer does.
func (r *Replica) HoldsMemoryOf(buf []byte) bool {
	for _, e := range r.log {
		if wire.Aliases(buf, e.frame) {
			return true
		}
	}
	for _, f := range r.retained.frames {
		if wire.Aliases(buf, f) {
			return true
		}
	}
	return false
}

// HeldFrom is the lowest op whose prepare the core may still hold: the
// oldest retained for repair, else the first not committed. No prepare
// of an op below it is held or sent again (HoldsMemoryOf is false for
// its memory), so the shell forgets what it keeps per prepare below it.
func (r *Replica) HeldFrom() uint64 {
	if len(r.retained.frames) > 0 {
		return r.retained.from
	}
	return r.commitMin + 1
}
