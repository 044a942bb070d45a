package vsr

import (
	"math/bits"

	"iggynode/wire"
)

// View change (replica-plane.md 6.2-6.11) and the view probe of a
// restarted replica (6.12).
//
// Choices where the spec leaves room, each safer than the letter:
//   - A backup adopting a StartView keeps only the journal entries it can
//     prove belong to the new view: walking down from the view's head,
//     an entry is kept when its identity equals the suffix header at its
//     op or, below the suffix, the parent named by the kept entry above
//     it (the hash chain). Everything from the lowest unproven entry up is
//     truncated (never at or below commit_min) and repaired. 6.10 step 8
//     compares only the suffix, and an answer to RequestStartView carries
//     no suffix, so a replica that was primary of a view whose
//     uncommitted ops were discarded could otherwise apply them.
//   - The primary-elect does the same against the merged headers, and
//     counts as missing every op above commit_min (not only the merged
//     range) before it starts the view: a new primary with a hole below
//     commit_max would otherwise stall its commits forever (6.9 step 5).
//     It repairs from a DVC sender that holds the op (present bit), or
//     one whose reported commit covers it.
//   - StartViews answering RequestStartView or a stale primary's Commit
//     carry the suffix (head down to commit_max), which a receiver decodes
//     as 6.10 step 6 allows; upstream sends none.
//   - A backup accepts the first Commit of each view whatever its counter
//     and strictly increasing counters after it (5.10 rule 6 allows it):
//     a new primary's heartbeat never goes unheard because an old primary
//     counted higher.
//   - The suffix is built fresh from the journal at every send: a core is
//     single-threaded, so it is always coherent (6.5.4).
//   - Partition groups serve RequestPrepares in ViewChange as metadata
//     groups do (7.3), so a partition primary-elect can be repaired too.
//   - A DVC nacks every entry above its commit whose body this replica
//     does not hold, headers it only knows from an adopted StartView
//     included (6.5.2 gives those no bit). A replica acknowledges only
//     what it journaled, so the nack is true; without it, ops whose only
//     body was lost with a crashed primary could never be discarded, and
//     every later merge would wait for a body nobody has.
//   - The primary-elect refuses a merged log whose head is below the
//     commit_max it knows itself (a DVC reports min(commit_max, op), so a
//     replica that heard of a commit without holding the op cannot pass
//     that knowledge on): it waits for more DVCs or the next view instead
//     of reusing a committed op's number.
//   - The adopted view's head and StartView suffix are part of the durable
//     state (State.ViewHead, ViewHeaders; upstream sets sequencer to the
//     StartView's op instead): a restarted replica still announces its
//     view's log, so its commit point is not capped below the ops that
//     view committed and the others' copies do not look discarded.
//   - A partition replica restarted without its in-memory journal
//     announces the head that journal had reached (Recovery.JournalHead)
//     and nacks nothing up to it: it may have acknowledged those ops.
//     Its shell keeps recording that head (Replica.JournalHeadAfter)
//     until a view is adopted, so a second restart remembers it too.
//   - A primary receiving a RequestStartView forgets the sender's acks of
//     ops above commit_max (forgetAcks): the restart may have lost the
//     journal they stood for; 6.12 says nothing of them.
//   - A DVC's op is its suffix top, max(head, adopted view head): after a
//     StartView whose ops are not all journaled yet, head < top (6.5.2's
//     note), and 6.5.3 rule 3 numbers entries from the header's op.

// viewChange is the state of 6.3 step 2.
type viewChange struct {
	svc              uint64 // replicas whose SVC for view was seen, own included
	sentSVC, sentDVC bool
	dvcs             []*dvcRecord // by replica
	decided          bool
	merged           *mergedLog // the primary-elect's parked log
	tried            uint64     // repair sources that stalled for this merged log
}

// Retransmission and escalation (an extension of 4.7, which backs off only
// the Prepare timer): a node hosts thousands of groups, and when all of
// them elect at once (a node lost, a cluster restarted) fixed 500 ms
// resends of SVC, DVC and RSV and a fixed 5 s escalation multiplied the
// load while the nodes were still working through the first round, which
// then timed out and escalated in lockstep, round after round. So the
// resends back off (x2 per resend, at most x4, with jitter), a view
// change escalated by ViewChangeStatus waits longer before escalating
// again (x2, at most x4, reset in Normal), and the first probe of a
// restart is jittered. Timers decide only when messages go out, never
// what a replica accepts: safety is untouched.
const (
	retransmitShiftMax = 2
	escalationShiftMax = 2
)

// beginViewChange is 6.3: enter a view change at v.
func (r *Replica) beginViewChange(v uint32) {
	if !r.voter() || EpochOf(v) != r.roster.Epoch {
		return // S5: a learner never elects; a view never leaves its epoch
	}
	r.leaveQuiet()
	r.view, r.status = v, StatusViewChange
	r.resetViewChange()
	r.vc.sentSVC, r.vc.svc = true, 1<<r.cfg.Replica
	r.heartbeatTimer.stop()
	r.commitTimer.stop()
	r.prepareTimer.stop()
	r.dvcTimer.stop()
	r.svcTimer.start()
	r.vcStatusTimer.startJittered(r.random, min(r.escalations, escalationShiftMax))
	r.rsvTimer.start()
	r.ViewChangesStarted++
	r.broadcastSVC()
	r.maybeSendDVC()
}

// resetViewChange is 6.3 step 2: forget the previous attempt, cancel
// every waiting client and queued request, end any repair session, and
// abandon a state transfer: it was fetched for the view being left, and
// a replica that may become primary must not throw its log away for it
// (the shell sees Transferring turn false and drops the session).
func (r *Replica) resetViewChange() {
	if r.transferring {
		r.transferring, r.NeedTransfer = false, -1
	}
	r.vc = viewChange{dvcs: make([]*dvcRecord, MaxReplicas)}
	r.cancelSubscribers()
	for _, req := range r.queue {
		if req.Tag != nil {
			r.ready.Canceled = append(r.ready.Canceled, req.Tag)
		}
	}
	clear(r.queue)
	r.queue = r.queue[:0]
	r.closeRepair()
	r.knownHead = 0
}

// cancelSubscribers drops the pipeline's reply subscribers (their clients
// get TransientNotCommitted) and its acknowledgements.
func (r *Replica) cancelSubscribers() {
	for op, e := range r.log {
		if e.tag != nil {
			if !r.awaitFate(op, e) {
				r.ready.Canceled = append(r.ready.Canceled, e.tag)
			}
			e.tag = nil
		}
		e.acks, e.quorum = 0, false
	}
}

// closeRepair ends the repair session: held entries not yet handed to the
// journal are dropped (a later session asks again).
func (r *Replica) closeRepair() {
	for op, e := range r.log {
		if e.repaired && !e.emitted {
			delete(r.log, op)
		}
	}
	pending := r.repair.pending
	r.repair = repairSession{pending: pending}
}

func (r *Replica) broadcast(head, body []byte) {
	for rep := 0; rep < MaxReplicas; rep++ {
		if uint8(rep) != r.cfg.Replica && r.roster.Member(uint8(rep)) {
			r.ready.Send = append(r.ready.Send, Envelope{To: uint8(rep), Head: head, Body: body})
		}
	}
}

func (r *Replica) broadcastSVC() {
	s := wire.StartViewChangeHeader{Cluster: r.cfg.Cluster, View: r.view, Replica: r.cfg.Replica, Group: r.cfg.Group}
	head := make([]byte, wire.HeaderSize)
	s.Encode(wire.HeaderOf(head))
	r.broadcast(head, nil)
}

// maybeSendDVC is 6.4 step 4.
func (r *Replica) maybeSendDVC() {
	if r.status != StatusViewChange || r.vc.sentDVC || bits.OnesCount64(r.vc.svc&^(1<<r.cfg.Replica)) < Faults(r.roster.N()) {
		return
	}
	r.vc.sentDVC = true
	r.dvcTimer.start()
	r.broadcastDVC()
	if r.IsPrimary() {
		r.recordOwnDVC()
		r.tryMerge()
	}
}

// suffix builds this replica's suffix (6.5.2) down to max(commit, 1).
// unsaid marks the entries it leaves blank without a nack (see
// belowUnsealed): the caller must not nack them either.
func (r *Replica) suffix(commit uint64) (s wire.BuiltSuffix, unsaid wire.U128) {
	journal := func(op uint64) (*wire.Header, bool) {
		f := r.frameAt(op)
		if f == nil || !r.proven(op) {
			return nil, false // an unproven repaired op was never acknowledged here: nacked
		}
		return wire.HeaderOf(f), true
	}
	var adopted func(op uint64) (*wire.Header, bool)
	if r.adopted != nil {
		adopted = func(op uint64) (*wire.Header, bool) {
			h, ok := r.adopted[op]
			return &h, ok
		}
	}
	src := wire.SuffixSource{Commit: commit, Head: r.sequencer, AdoptedTop: max(r.adoptedTop, r.faultyHead),
		Journal: journal, Adopted: adopted}
	silent := belowUnsealed(src)
	if len(silent) > 0 {
		src.Journal = func(op uint64) (*wire.Header, bool) {
			if silent[op] {
				return nil, false
			}
			return journal(op)
		}
		if adopted != nil {
			src.Adopted = func(op uint64) (*wire.Header, bool) {
				if silent[op] {
					return nil, false
				}
				return adopted(op)
			}
		}
	}
	s = wire.BuildSuffix(src)
	for op := range silent {
		i := int(s.Top - op)
		s.Nack, unsaid = s.Nack.WithBit(i, false), unsaid.WithBit(i, true)
	}
	return s, unsaid
}

// belowUnsealed finds the entries of src a suffix must leave out to
// decode (6.5.3 rule 5: timestamps strictly fall, walking down).
//
// Why: a primary whose head came by state transfer knows neither the
// head's identity nor its timestamp (Installed, InstalledEpoch: they did
// not travel). It builds its next prepare on a zero parent, an unsealed
// link the chain checks accept (2.5 rule 3; merge.go, seed 3515), and
// with max(now_us, last_timestamp+1) from a last_timestamp that may be 0
// and a now_us that may be stale (an R of maybePromote on a core that
// never had a Submit: timestamp 1). A replica that holds that prepare and,
// from before, the op below it announced both, and its own DoViewChange
// did not decode (simulator seed 468 of --placement 3 --replicas 5
// --groups 6 --handover 0.01: op 2 at timestamp 1 above op 1 at 5.92 s).
// The ops below such a link are committed (the primary's commit point,
// which every prepare above names in its commit field), so the merge
// needs nothing of them (merge.go: the op at commit_max): they are left
// blank, neither present nor nacked (saying nothing is always safe). An
// entry out of order with no unsealed link above it is a broken log, left
// in for recordOwnDVC's assertion.
func belowUnsealed(src wire.SuffixSource) map[uint64]bool {
	top := max(src.Head, src.AdoptedTop)
	low := max(src.Commit, 1)
	if top == 0 || low > top {
		return nil
	}
	if top-low+1 > wire.MaxSuffixEntries {
		low = top - (wire.MaxSuffixEntries - 1)
	}
	var silent map[uint64]bool
	var higher uint64 // the timestamp of the last entry kept, walking down
	unsealed := false // a kept entry above builds on a zero parent
	for o := top; o >= low; o-- {
		h, ok := lookupHeader(src.Journal, o)
		if !ok {
			if h, ok = lookupHeader(src.Adopted, o); ok && wire.IsBlankPrepare(h) {
				ok = false
			}
		}
		if !ok {
			continue
		}
		p := h.Prepare()
		if higher != 0 && p.Timestamp >= higher && unsealed {
			if silent == nil {
				silent = map[uint64]bool{}
			}
			silent[o] = true
			continue
		}
		higher = p.Timestamp
		unsealed = unsealed || (o > 1 && p.Parent.IsZero())
	}
	return silent
}

func lookupHeader(f func(uint64) (*wire.Header, bool), op uint64) (*wire.Header, bool) {
	if f == nil {
		return nil, false
	}
	h, ok := f(op)
	return h, ok && h != nil
}

// top is the head a DVC announces: the journal head or, above it, the
// head of an adopted view not yet journaled.
func (r *Replica) top() uint64 { return max(r.sequencer, r.adoptedTop, r.faultyHead) }

func (r *Replica) ownDVC() (wire.DoViewChangeHeader, wire.BuiltSuffix) {
	r.dropRefutedViewHeaders()
	op := r.top()
	commit := min(r.commitMax, op)
	s, unsaid := r.suffix(commit)
	// Every entry above commit this replica does not hold is nacked,
	// adopted headers included: it never journaled them, so never
	// acknowledged them (see the choices above). Except up to the head
	// its journal reached before a restart lost it (faultyHead): it may
	// have acknowledged those, so it says nothing of them.
	for i := 0; uint64(i) < op-commit && i < MaxSuffix; i++ {
		switch {
		case s.Present.Bit(i), unsaid.Bit(i):
		case op-uint64(i) <= r.faultyHead:
			s.Nack = s.Nack.WithBit(i, false)
		default:
			s.Nack = s.Nack.WithBit(i, true)
		}
	}
	return wire.DoViewChangeHeader{Cluster: r.cfg.Cluster, View: r.view, Replica: r.cfg.Replica, Op: op,
		Commit: commit, Group: r.cfg.Group, LogView: r.logView, NackBitset: s.Nack, PresentBitset: s.Present}, s
}

func (r *Replica) broadcastDVC() {
	d, s := r.ownDVC()
	frame := wire.AppendDoViewChange(nil, d, s.Body)
	r.broadcast(frame[:wire.HeaderSize], frame[wire.HeaderSize:])
}

// recordOwnDVC is 6.6 step 5.
func (r *Replica) recordOwnDVC() {
	if r.vc.dvcs[r.cfg.Replica] != nil {
		return
	}
	d, s := r.ownDVC()
	entries, err := wire.DecodeSuffix(d.Op, s.Body, s.Nack, s.Present)
	if err != nil {
		// Our own journal must always make a valid suffix.
		assert(false, "own suffix decodes: "+err.Error())
	}
	r.vc.sentDVC = true
	r.vc.dvcs[r.cfg.Replica] = &dvcRecord{replica: r.cfg.Replica, logView: d.LogView, op: d.Op, commit: d.Commit, entries: entries}
}

// onStartViewChange is 6.4.
func (r *Replica) onStartViewChange(s wire.StartViewChangeHeader) {
	switch {
	case r.status == StatusRecovering || s.View < r.view:
		return
	case !r.roster.Voter(s.Replica) || s.Replica == r.cfg.Replica || !r.voter():
		r.drop("start_view_change from an unknown replica")
		return
	case s.View > r.view:
		r.beginViewChange(s.View)
	case r.status != StatusViewChange:
		return // a late SVC for the view this replica already settled
	}
	r.vc.svc |= 1 << s.Replica
	r.maybeSendDVC()
}

// onDoViewChange is 6.6.
func (r *Replica) onDoViewChange(frame []byte) {
	d, entries, err := wire.DecodeDoViewChange(frame)
	if err != nil || d.Group != r.cfg.Group {
		r.drop("bad do_view_change")
		return
	}
	switch {
	case r.status == StatusRecovering || d.View < r.view:
		return
	case !r.roster.Voter(d.Replica) || d.Replica == r.cfg.Replica || !r.voter():
		r.drop("do_view_change from an unknown replica")
		return
	case d.View > r.view:
		r.beginViewChange(d.View)
	}
	if !r.IsPrimary() || r.status != StatusViewChange {
		return
	}
	r.recordOwnDVC()
	if r.vc.dvcs[d.Replica] == nil {
		r.vc.dvcs[d.Replica] = &dvcRecord{replica: d.Replica, logView: d.LogView, op: d.Op, commit: d.Commit, entries: entries}
	}
	r.tryMerge()
}

// tryMerge is 6.6 step 7 and the Ready branch of 6.7.
func (r *Replica) tryMerge() {
	if r.vc.decided {
		return
	}
	var ds []*dvcRecord
	for _, d := range r.vc.dvcs {
		if d != nil {
			ds = append(ds, d)
		}
	}
	if len(ds) < QuorumViewChange(r.roster.N()) {
		return
	}
	m, out := merge(ds, r.roster.N())
	if out != mergeReady {
		r.drop("merge " + out.String())
		return
	}
	if r.commitMax > m.opHead {
		// This replica knows an op above the merged head committed (its
		// DVC's commit is capped at its own head, 6.5.1): starting the view
		// would reuse a committed op's number. More DVCs or the next view
		// bring a replica that holds it.
		r.drop("merged log ends below a known commit")
		return
	}
	if m.opHead-min(m.commitMax, m.opHead) > uint64(r.cfg.PrepareQueueDepth) {
		r.drop("merged log deeper than the prepare queue")
		return
	}
	r.vc.decided = true
	r.dvcTimer.stop()
	r.commitMax = max(r.commitMax, m.commitMax)
	r.vc.merged = m
	r.cancelSubscribers()
	r.electProgress()
}

// electProgress is 6.8: make the merged log local, then start the view.
func (r *Replica) electProgress() {
	m := r.vc.merged
	if m == nil || r.status != StatusViewChange {
		return
	}
	r.reconcile(m.header, max(m.opHead, r.commitMin), false, 0)
	r.emitRepaired()
	r.commitJournal()
	if r.vc.merged != m {
		return // the commit walk applied an R: the view change is of an epoch left (S4)
	}
	missing := uint64(0)
	for op := r.commitMin + 1; op <= m.opHead; op++ {
		if e := r.log[op]; e == nil || !e.journaled {
			missing = op
			break
		}
	}
	if missing == 0 {
		r.startView()
		return
	}
	if r.repair.open || r.repairBackoff > 0 || r.repair.pending > 0 {
		return
	}
	if e := r.log[missing]; e != nil {
		return // handed to the journal; Journaled comes back here
	}
	source := -1
	var best uint32
	untried := false
	for _, d := range r.vc.dvcs {
		untried = untried || d != nil && d.replica != r.cfg.Replica && r.vc.tried&(1<<d.replica) == 0
	}
	if !untried {
		r.vc.tried = 0 // every source stalled once: go round again
	}
	for _, d := range r.vc.dvcs {
		if d == nil || d.replica == r.cfg.Replica || r.vc.tried&(1<<d.replica) != 0 {
			continue
		}
		e := d.at(missing)
		if (e != nil && e.Present) || missing <= d.commit {
			if source < 0 || d.logView > best {
				source, best = int(d.replica), d.logView
			}
		}
	}
	if source < 0 {
		r.drop("no source for a missing op of the merged log")
		return // the ViewChangeStatus timer escalates
	}
	r.repair = repairSession{open: true, peer: uint8(source), toOp: m.opHead,
		nonce: wire.U128{Lo: r.random(), Hi: r.random()}}
	r.Repairs++
	r.requestPrepares()
}

// startView is 6.9.
func (r *Replica) startView() {
	m := r.vc.merged
	assert(r.IsPrimary() && m != nil, "start view as primary-elect")
	assert(r.sequencer == max(m.opHead, r.commitMin), "the merged log is journaled")
	r.vc.merged = nil
	clear(r.vc.dvcs)
	r.status, r.ceded, r.logView = StatusNormal, false, r.view
	r.adopted, r.adoptedTop, r.adoptedSuffix, r.knownHead, r.faultyHead = nil, 0, nil, 0, 0
	if e := r.log[r.sequencer]; e != nil {
		r.lastChecksum = e.hdr.Checksum
	} else if h, ok := m.headers[r.sequencer]; ok && r.lastChecksum.IsZero() {
		// The head is this replica's commit point, whose identity an
		// installed state transfer did not bring: the merge names it.
		r.lastChecksum = h.Prepare().Checksum
		r.committedChecksum = r.lastChecksum
	}
	for _, h := range m.headers {
		r.lastTimestamp = max(r.lastTimestamp, h.Prepare().Timestamp)
	}
	r.svcTimer.stop()
	r.dvcTimer.stop()
	r.vcStatusTimer.stop()
	r.rsvTimer.stop()
	r.enterNormal()
	for op := r.commitMin + 1; op <= r.sequencer; op++ {
		// Reconciled against the merged log with no hole: this view's.
		e := r.log[op]
		e.acks, e.quorum, e.repaired = 1<<r.cfg.Replica, false, false
	}
	epoch := r.roster.Epoch
	r.commitJournal()
	if r.roster.Epoch != epoch {
		return // the merged log committed an R: the epoch's first view follows (S4)
	}
	if r.PipelineLen() > 0 {
		r.prepareTimer.start()
	}
	r.ViewsStarted++
	r.broadcast(r.startViewFrame(wire.U128{}))
}

// startViewFrame builds this primary's StartView: head, commit_max and the
// suffix from the head down to max(commit_max, 1).
func (r *Replica) startViewFrame(incarnation wire.U128) (head, body []byte) {
	s, _ := r.suffix(r.commitMax)
	sv := wire.StartViewHeader{Cluster: r.cfg.Cluster, View: r.view, Replica: r.cfg.Replica, Op: r.sequencer,
		Commit: min(r.commitMax, r.sequencer), Group: r.cfg.Group, Incarnation: incarnation}
	frame := wire.AppendStartView(nil, sv, s.Body)
	return frame[:wire.HeaderSize], frame[wire.HeaderSize:]
}

// onStartView is 6.10.
func (r *Replica) onStartView(frame []byte) {
	h := wire.HeaderOf(frame)
	s, err := wire.DecodeStartViewHeader(h)
	if err != nil || s.Group != r.cfg.Group || int(s.Size) != len(frame) ||
		wire.VerifySuffixBodySeal(s.ChecksumBody, frame[wire.HeaderSize:]) != nil {
		r.drop("bad start_view")
		return
	}
	switch {
	case s.Replica != r.roster.Primary(s.View) || s.Replica == r.cfg.Replica || s.View < r.view:
		r.drop("start_view not from the primary of a current view")
		return
	case r.status == StatusRecovering && !r.incarnation.IsZero() && !s.Incarnation.IsZero() &&
		s.Incarnation != r.incarnation && s.View <= r.view && s.Op < r.sequencer:
		r.drop("start_view for another incarnation")
		return
	case s.View == r.logView && s.Op < r.commitMin:
		r.drop("stale start_view")
		return
	case r.status == StatusNormal && s.View == r.view && r.logView == r.view:
		// This view is adopted already: a late or duplicated StartView of
		// it must not truncate what was prepared in it since (6.10 step 4
		// only guards commit_min). Take its commit point alone.
		r.commitMax = max(r.commitMax, s.Commit)
		r.commitJournal()
		r.maybeRepair()
		return
	}
	entries, err := wire.DecodeSuffix(s.Op, frame[wire.HeaderSize:], wire.U128{}, wire.U128{})
	if err != nil {
		entries = nil // 6.10 step 6: the numbers are still adopted
	}
	// A replica that already served in this view (log_view == sv.view, as
	// after a restart) holds only that view's ops: what it journaled above
	// sv.op came later in the same view, not from a discarded one.
	head, oldLogView := s.Op, r.logView
	if s.View == r.logView {
		head = max(head, r.sequencer)
	}
	r.view, r.logView, r.status, r.ceded = s.View, s.View, StatusNormal, false
	r.commitMax = max(r.commitMax, s.Commit)
	r.resetViewChange()
	r.adopted, r.adoptedTop, r.adoptedSuffix = nil, 0, nil
	if len(entries) > 0 {
		r.adoptSuffix(s.Op, frame[wire.HeaderSize:])
	}
	r.knownHead = head
	r.faultyHead = 0 // the adopted view's log says what its head is now
	r.primaryBeat = 0
	r.svcTimer.stop()
	r.dvcTimer.stop()
	r.vcStatusTimer.stop()
	r.rsvTimer.stop()
	r.probeAttempts = 0
	r.enterNormal()
	r.ViewsAdopted++
	r.reconcile(r.adoptedHeader, head, s.View == oldLogView, s.Op)
	for op := s.Commit + 1; op <= min(head, r.sequencer); op++ {
		if f := r.frameAt(op); f != nil {
			r.ackPrepare(wire.HeaderOf(f).Prepare())
		}
	}
	r.commitJournal()
	r.maybeRepair()
}

// adoptSuffix parks a StartView's suffix (its body, entries from head
// down) as this replica's view log (6.10 step 6): from the StartView, or
// from the durable state after a restart. A body that does not decode
// parks nothing.
func (r *Replica) adoptSuffix(head uint64, body []byte) {
	r.adopted, r.adoptedTop, r.adoptedSuffix = nil, 0, nil
	if head == 0 || len(body) == 0 {
		r.adoptedTop = head
		return
	}
	entries, err := wire.DecodeSuffix(head, body, wire.U128{}, wire.U128{})
	if err != nil {
		r.adoptedTop = head
		return
	}
	r.adopted = make(map[uint64]wire.Header, len(entries))
	for i := range entries {
		if !entries[i].Blank {
			r.adopted[entries[i].Prepare.Op] = entries[i].Header
		}
	}
	r.adoptedTop, r.adoptedSuffix = head, body
}

// The adopted view headers and the journal of a primary-elect whose view
// change failed (simulator seed 4249 of --handover 0.01). A primary-elect
// makes the merged log of the view it elects local (6.8) while its
// log_view, and the headers it adopted from that log_view's StartView,
// still describe the older log (6.7: log_view is not raised before the
// view starts). Where the two logs differ, only memory told them apart:
// a repaired entry carries the proof of the merged log, not of log_view
// (repair.go, proven), so the replica's DoViewChange announced log_view's
// header there, and one log. Two ways lost that, and the DoViewChange
// then stitched the newer log's op below the older log's headers above
// it, a suffix that does not decode (the own-suffix assertion):
//
//   - a restart: the journal comes back without the repaired marks, so
//     the merged log's op at k looked acknowledged in log_view, under the
//     adopted headers of ops k+1.. of the older log. reconcileRecovered
//     truncates every journaled entry the durable view headers contradict
//     (and what was built on it): in its log_view a replica journals at
//     those ops only what the headers name (onPrepare, onRepairPrepare and
//     the StartView's reconcile refuse the rest), so such an entry was
//     never acknowledged there; it came from the failed view change.
//   - a commit: the merged log's ops up to its commit_max are committed,
//     and the primary-elect applies them before it starts the view. An
//     adopted header that the committed op at commit_min contradicts
//     belongs to ops a later view discarded, as does every header above
//     it (they chain onto it): dropRefutedViewHeaders forgets them
//     (durably, State.ViewHeaders) before a DoViewChange announces them.
//
// Raising log_view to the elected view as the merge decides (TigerBeetle
// does) would keep one log as well, but departs from 6.7 and changes what
// every later merge is given; this keeps the spec's log_view and makes
// the durable state, not memory, say which log the journal holds.

// reconcileRecovered is the restart half of the above: run by Recover on
// the recovered journal, view headers and commit point.
func (r *Replica) reconcileRecovered() {
	for op := r.commitMin + 1; op <= min(r.sequencer, r.adoptedTop); op++ {
		h, ok := r.adopted[op]
		if !ok {
			continue
		}
		e := r.log[op]
		if c := h.Prepare().Checksum; !c.IsZero() && !e.hdr.Checksum.IsZero() && c != e.hdr.Checksum {
			r.drop("recovered journal entry the view headers contradict")
			r.truncateFrom(op)
			break
		}
	}
	r.dropRefutedViewHeaders()
}

// dropRefutedViewHeaders forgets the adopted view headers when the op
// committed at commit_min contradicts them: its header there names
// another identity, or the header above names another parent.
func (r *Replica) dropRefutedViewHeaders() {
	c := r.committedChecksum
	if r.adopted == nil || c.IsZero() {
		return
	}
	refuted := false
	if h, ok := r.adopted[r.commitMin]; ok {
		id := h.Prepare().Checksum
		refuted = !id.IsZero() && id != c
	} else if h, ok := r.adopted[r.commitMin+1]; ok {
		parent := h.Prepare().Parent
		refuted = !parent.IsZero() && parent != c
	}
	if refuted {
		r.drop("adopted view headers a commit refutes")
		r.adopted, r.adoptedTop, r.adoptedSuffix = nil, 0, nil
	}
}

func (r *Replica) adoptedHeader(op uint64) (wire.PrepareHeader, bool) {
	h, ok := r.adopted[op]
	if !ok {
		return wire.PrepareHeader{}, false
	}
	return h.Prepare(), true
}

// reconcile is divergence reconciliation (6.8 step 1, 6.10 step 8) with
// the hash-chain proof described in the package choices: walking down
// from the highest held op to commit_min + 1, an entry stays only if its
// identity is the one the view names (known) or the parent the kept entry
// above it names; everything from the lowest entry that fails is
// truncated, and so is everything above head. sameView: the replica
// already served in this view (its log_view is the view's), so what it
// journaled above trustAbove (the StartView's head) came later in this
// view; below it every entry must be proven like any other (a restart
// does not tell an unproven repaired entry from a live one).
func (r *Replica) reconcile(known func(uint64) (wire.PrepareHeader, bool), head uint64, sameView bool, trustAbove uint64) {
	top := head
	for op := range r.log {
		top = max(top, op)
	}
	lowestBad := uint64(0)
	var expect wire.U128
	have := false
	for o := top; o > r.commitMin; o-- {
		h, ok := known(o)
		if o > head {
			ok = false
		}
		if ok {
			expect, have = h.Checksum, true
		}
		e := r.log[o]
		switch {
		case o > head:
			if e != nil {
				lowestBad = o
			}
			have = false
			continue
		case e != nil && have && e.hdr.Checksum == expect:
			expect = e.hdr.Parent
			r.markProven(e)
			continue
		case e != nil && !have && e.repaired:
			// Repaired above a hole that hides its expected identity: it
			// is proven (or refuted) once the ops above it arrive, and is
			// not applied before (proven).
		case e != nil && !have && sameView && !ok && o > trustAbove:
			expect, have = e.hdr.Parent, true
			r.markProven(e)
			continue
		case e != nil:
			lowestBad = o
		}
		if ok {
			expect = h.Parent
		} else {
			have = false
		}
	}
	if lowestBad != 0 {
		r.drop("divergent journal entries truncated")
		r.truncateFrom(lowestBad)
	}
}

// onRequestStartView is 6.12 rule 6.
func (r *Replica) onRequestStartView(q wire.RequestStartViewHeader) {
	if q.Replica == r.cfg.Replica || !r.roster.Member(q.Replica) {
		return
	}
	if r.status == StatusRecovering {
		if !r.roster.Voter(q.Replica) {
			return // S5: a learner's probe is not a vote
		}
		r.probing |= 1 << q.Replica // another prober: see recoveringQuorum
		r.probingViewMax = max(r.probingViewMax, q.View)
		if r.probeAttempts >= 1 && r.recoveringQuorum() {
			r.beginViewChange(max(r.view, r.probingViewMax) + 1) // at once, not at the next probe
		}
		return
	}
	if r.status != StatusNormal {
		return
	}
	if q.Replica == r.Primary() && q.View == r.view {
		r.beginViewChange(r.view + 1) // our primary restarted and cannot lead
		return
	}
	if r.IsPrimary() {
		r.forgetAcks(q.Replica)
		r.forgetConfirmation(q.Replica)
	}
	if !r.IsPrimary() || r.ceded || r.logView != r.view {
		return
	}
	head, body := r.startViewFrame(q.Incarnation)
	r.ready.Send = append(r.ready.Send, Envelope{To: q.Replica, Head: head, Body: body})
}

// forgetAcks drops the acknowledgements a restarted replica gave to ops
// not yet committed. Its journal may have been memory (a partition
// group's, 9.4 rule 1), lost with the restart, so they no longer stand
// for a copy: counting them let a primary commit an op that only it still
// held, which a later view without it then discarded (simulator seed
// 129056). The replica acknowledges again what it journals anew; the
// prepare timer resends to it.
func (r *Replica) forgetAcks(replica uint8) {
	for op := r.commitMax + 1; op <= r.sequencer; op++ {
		if e := r.log[op]; e != nil && e.acks&(1<<replica) != 0 {
			e.acks &^= 1 << replica
			e.quorum = r.replicated(e.acks)
		}
	}
}

// startProbe is 6.12 rule 3: Recovering until a StartView is adopted.
func (r *Replica) startProbe() {
	r.leaveQuiet()
	r.resetViewChange()
	r.status, r.probeAttempts, r.probing, r.probingViewMax = StatusRecovering, 0, 0, 0
	r.prepareTimer.stop()
	r.commitTimer.stop()
	r.heartbeatTimer.stop()
	r.svcTimer.stop()
	r.dvcTimer.stop()
	r.vcStatusTimer.stop()
	r.rsvTimer.startJittered(r.random, 0)
	r.Probes++
}

// recoveringQuorum reports whether so many replicas are probing (this one
// included, the others heard since this probe began) that no view can be
// working: fewer than q_rep replicas are left to form one. Then nobody
// will answer the probe, and waiting out view_probe_attempts_max firings
// only delays the election a whole-cluster restart needs (5 s by
// default, per group). An extension of 6.12 rule 4: an election is always
// safe, and the probers that hear each other pick the same view (one past
// the highest they heard).
func (r *Replica) recoveringQuorum() bool {
	n := r.roster.N()
	return r.voter() && bits.OnesCount32((r.probing|1<<r.cfg.Replica)&r.roster.Voters) >= n-QuorumReplication(n)+1
}

func (r *Replica) broadcastRSV() {
	q := wire.RequestStartViewHeader{Cluster: r.cfg.Cluster, View: r.view, Replica: r.cfg.Replica,
		Group: r.cfg.Group, Incarnation: r.incarnation}
	head := make([]byte, wire.HeaderSize)
	q.Encode(wire.HeaderOf(head))
	r.broadcast(head, nil)
}

// tickViewChange runs the timers of 4.7 that belong to view change and
// recovery.
func (r *Replica) tickViewChange() {
	if r.svcTimer.tick() {
		if r.status == StatusViewChange {
			r.broadcastSVC()
			r.svcTimer.backoffCapped(r.random, retransmitShiftMax)
		}
	}
	if r.dvcTimer.tick() {
		if r.status == StatusViewChange && r.vc.sentDVC && !r.vc.decided {
			r.broadcastDVC()
			r.dvcTimer.backoffCapped(r.random, retransmitShiftMax)
		}
	}
	if r.vcStatusTimer.tick() && r.status == StatusViewChange {
		r.escalations++
		r.beginViewChange(r.view + 1) // 6.2 rule 4
	}
	if r.rsvTimer.tick() {
		switch {
		case r.status == StatusRecovering && !r.voter():
			r.broadcastRSV() // S5: a learner probes until a StartView comes, and never elects
			r.rsvTimer.start()
		case r.status == StatusRecovering && r.probeAttempts >= r.cfg.ViewProbeAttemptsMax:
			r.beginViewChange(r.view + 1) // 6.12 rule 4
		case r.status == StatusRecovering && r.probeAttempts >= 1 && r.recoveringQuorum():
			r.beginViewChange(max(r.view, r.probingViewMax) + 1)
		case r.status == StatusRecovering:
			r.probeAttempts++
			r.broadcastRSV()
			r.rsvTimer.start()
		case r.status == StatusViewChange && !r.IsPrimary():
			r.broadcastRSV() // 6.12 rule 5
			r.rsvTimer.backoffCapped(r.random, retransmitShiftMax)
		}
	}
	if r.vc.merged != nil {
		r.electProgress()
	}
}
