package vsr

import "iggynode/wire"

// Quiescence (an extension; DESIGN.md "Scale and budgets"). A node hosts
// thousands of partition groups, and a group with nothing in flight need
// not heartbeat: it goes quiet, with no timer armed, and any input wakes
// it. The models are CockroachDB's quiesced ranges and TiKV's hibernating
// regions. Quiescence is a matter of timers only: it never changes what a
// replica journals, acknowledges, commits or votes for, so every safety
// argument of the protocol stands untouched; what it must not break is
// liveness, and the rules below are there for that.
//
// The exchange rides the node-level heartbeat (Liveness), one frame per
// peer link per interval, as entries of (group, kind, view, commit):
//
//  1. A primary in Normal whose pipeline and request queue are empty, with
//     its view state durable and no newer view observed, is idle. When its
//     CommitMessage timer fires while idle it posts a Notice (view,
//     commit_min) to every live backup that has not confirmed that point
//     yet, and keeps heartbeating; once every live backup confirmed it
//     goes quiet: the timer stops. A live backup is one whose node the
//     node-level heartbeat hears (Config.Live); a backup on a dead node is
//     not waited for, and is poked when its node is heard again (rule 6).
//  2. A backup in Normal receiving its primary's Notice for its own view
//     takes the commit point (as from a Commit heartbeat, 5.10 rule 4). If
//     it then holds and has applied everything up to it (commit_min ==
//     commit_max == op == the notice's commit, no repair or transfer
//     running) it goes quiet (NormalHeartbeat stops) and answers Confirm
//     (view, commit). Otherwise it stays awake and repairs; the primary
//     posts the Notice again at its next timer while it waits.
//  3. Any input wakes a quiet replica (Step, Submit), re-arming the timer
//     its role runs in Normal, except a Commit heartbeat from its primary
//     that brings nothing new, which a quiet backup takes silently. A
//     primary's confirmations stay valid while (view, commit_min) does not
//     move, so a primary woken by a stray frame goes quiet again at its
//     next timer without a new round of notices.
//  4. A woken backup whose NormalHeartbeat then fires while it is still at
//     the point it confirmed, in the same view, with its primary's node
//     live, goes quiet again instead of electing: its primary is quiet, not
//     gone (a primary that woke and moved on heartbeats, or its prepares
//     move this backup off that point).
//  5. Failure detection for quiet groups is per node: when the node-level
//     heartbeat stops hearing a node, the shell calls PeerLost, and every
//     group whose primary that node is leaves Normal exactly as its
//     NormalHeartbeat timeout would (6.2 rule 1): an election, or a probe
//     when a newer view was observed.
//  6. When a node is heard again (PeerFound), a primary that had not
//     counted that backup's confirmation at its current point wakes, so
//     the backup gets the Notice it missed (its commit point, or a repair).
//  7. A new group (view 0, nothing journaled, created by a committed
//     metadata op on every replica) starts quiet on every replica, as if
//     the exchange had run at (0, 0): creating thousands of partitions
//     sends nothing. A restarted replica never starts quiet: it probes
//     (6.12).
//  8. Notices and confirmations advertise the view, so they are gated on
//     durable view state like Commit (6.14).
//
// Invariants (assertQuiet): a quiet primary is leading with an empty
// pipeline and queue and no CommitMessage or Prepare timer armed; a quiet
// backup is Normal with no NormalHeartbeat armed. The simulator checks
// besides that every group converges, quiet, to its primary's commit
// point, and that a dead primary's quiet groups elect a new one.

// QuietKind is the kind of a quiescence entry.
type QuietKind uint8

const (
	// QuietNotice: the primary of View is idle at Commit (rule 1).
	QuietNotice QuietKind = 1
	// QuietConfirm: the backup holds and applied View's log up to Commit
	// and is quiet (rule 2).
	QuietConfirm QuietKind = 2
)

// QuietEntry is one quiescence entry for the node-level heartbeat to
// carry to replica To (the shell adds the group).
type QuietEntry struct {
	To     uint8
	Kind   QuietKind
	View   uint32
	Commit uint64
}

// quiescence is a replica's part of the exchange.
type quiescence struct {
	quiet bool
	// Primary: the backups that confirmed (view, commit).
	acks   uint32
	view   uint32
	commit uint64
	// Backup: the primary's point this backup confirmed last.
	confirmed           bool
	confirmedView       uint32
	confirmedCommit     uint64
	noticesPosted, naps uint64
}

// Quiet reports whether the group is quiet: no timer armed by its role,
// waiting for input.
func (r *Replica) Quiet() bool { return r.q.quiet }

// QuietNotices counts the notices this replica posted as primary; Naps
// counts the times it went quiet.
func (r *Replica) QuietNotices() uint64 { return r.q.noticesPosted }
func (r *Replica) Naps() uint64         { return r.q.naps }

// live reports whether replica rep's node is live (Config.Live).
func (r *Replica) live(rep uint8) bool { return r.cfg.Live == nil || r.cfg.Live(rep) }

// startQuiet is rule 7: a new group is quiet at (0, 0) everywhere.
func (r *Replica) startQuiet() {
	if !r.cfg.Quiesce || r.solo() {
		return
	}
	if r.IsPrimary() {
		r.q.acks = r.othersMask()
	} else {
		r.q.confirmed, r.q.confirmedView, r.q.confirmedCommit = true, 0, 0
	}
	r.nap()
}

// othersMask has a bit for every replica but this one.
func (r *Replica) othersMask() uint32 {
	return r.roster.Members() &^ (1 << r.cfg.Replica)
}

// idle is rule 1's condition for a primary. A primary in a roster
// change is never idle: its heartbeat nudges the learners and promotes
// them (reconfig.go S5), which a quiet group would never do; nor is one
// still hinting a removed replica that it is (reconfig.go, hintDeparted).
func (r *Replica) idle() bool {
	return r.cfg.Quiesce && r.Leading() && r.PipelineLen() == 0 && len(r.queue) == 0 && !r.roster.Changing() && !r.hintingDeparted() &&
		!r.transferring && r.stateBackoff == 0 && r.stateFailures == 0 && !r.stateChanged() &&
		r.observedNewerView <= r.view
}

// confirmedAll reports whether every live backup confirmed the primary's
// current point; confirmations of an older point are forgotten first.
func (r *Replica) confirmedAll() bool {
	if r.q.view != r.view || r.q.commit != r.commitMin {
		r.q.acks, r.q.view, r.q.commit = 0, r.view, r.commitMin
	}
	for rep := 0; rep < MaxReplicas; rep++ {
		if uint8(rep) != r.cfg.Replica && r.roster.Member(uint8(rep)) && r.q.acks&(1<<rep) == 0 && r.live(uint8(rep)) {
			return false
		}
	}
	return true
}

// quiesceOrNotify runs at the primary's CommitMessage timer while idle: go
// quiet, or post notices to the live backups still unconfirmed. It
// reports whether the primary went quiet.
func (r *Replica) quiesceOrNotify() bool {
	if r.confirmedAll() {
		r.nap()
		return true
	}
	for rep := 0; rep < MaxReplicas; rep++ {
		if uint8(rep) != r.cfg.Replica && r.roster.Member(uint8(rep)) && r.q.acks&(1<<rep) == 0 && r.live(uint8(rep)) {
			r.ready.Quiet = append(r.ready.Quiet, QuietEntry{To: uint8(rep), Kind: QuietNotice, View: r.view, Commit: r.commitMin})
			r.q.noticesPosted++
		}
	}
	return false
}

// nap stops the timers of the replica's role: the group is quiet.
func (r *Replica) nap() {
	r.q.quiet = true
	r.q.naps++
	r.commitTimer.stop()
	r.heartbeatTimer.stop()
	if r.PipelineLen() == 0 {
		// Idle: nothing to retransmit (a failed append may have emptied the
		// pipeline under a running timer, which would stop at its firing).
		r.prepareTimer.stop()
	}
	r.assertQuiet()
}

// wake re-arms the timer of the replica's role (rule 3).
func (r *Replica) wake() {
	if !r.q.quiet {
		return
	}
	r.q.quiet = false
	if r.status != StatusNormal {
		return
	}
	if r.Leading() {
		r.commitTimer.start()
	} else {
		r.heartbeatTimer.start()
	}
}

// leaveQuiet forgets quiescence at a change of status or view: the
// timers are the new status's.
func (r *Replica) leaveQuiet() {
	r.q.quiet = false
	r.q.confirmed = false
}

// idleCommit reports whether frame is a Commit heartbeat from this
// backup's primary that brings nothing new (rule 3's exception).
func (r *Replica) idleCommit(frame []byte) bool {
	h := wire.HeaderOf(frame)
	if h.Command() != wire.CmdCommit {
		return false
	}
	c, err := wire.DecodeCommitHeader(h)
	return err == nil && c.Group == r.cfg.Group && !r.IsPrimary() && r.status == StatusNormal &&
		c.View == r.view && c.Replica == r.Primary() && c.Commit <= r.commitMin
}

// OnQuiet takes a quiescence entry from replica from, carried by the
// node-level heartbeat (rules 1-2).
func (r *Replica) OnQuiet(from uint8, kind QuietKind, view uint32, commit uint64) {
	if !r.cfg.Quiesce || !r.roster.Member(from) || from == r.cfg.Replica {
		r.drop("quiet entry from an unknown replica")
		return
	}
	switch kind {
	case QuietNotice:
		r.onQuietNotice(from, view, commit)
	case QuietConfirm:
		r.onQuietConfirm(from, view, commit)
	default:
		r.drop("quiet entry of an unknown kind")
	}
}

func (r *Replica) onQuietNotice(from uint8, view uint32, commit uint64) {
	if view > r.view {
		// The sender leads a view this replica has not seen: wake, so the
		// heartbeat timeout finds the newer view and probes (6.2 rule 1).
		r.observedNewerView = max(r.observedNewerView, view)
		r.wake()
		return
	}
	if view < r.view || r.status != StatusNormal || r.IsPrimary() || from != r.Primary() || commit < r.commitMin {
		return // not this view's primary, or a stale notice
	}
	if commit > r.commitMax {
		r.commitMax = commit
		r.commitJournal()
		r.maybeRepair()
	}
	if !r.caughtUpTo(commit) {
		r.wake() // behind: repair runs awake; the primary notifies again
		return
	}
	r.q.confirmed, r.q.confirmedView, r.q.confirmedCommit = true, view, commit
	if !r.q.quiet {
		r.nap()
	}
	r.ready.Quiet = append(r.ready.Quiet, QuietEntry{To: from, Kind: QuietConfirm, View: view, Commit: commit})
}

// caughtUpTo reports whether this backup holds and applied its view's log
// up to commit and nothing beyond, with no repair or transfer running.
func (r *Replica) caughtUpTo(commit uint64) bool {
	return r.commitMin == commit && r.commitMax == commit && r.sequencer == commit &&
		!r.repair.open && !r.transferring && r.NeedTransfer < 0 && r.observedNewerView <= r.view
}

func (r *Replica) onQuietConfirm(from uint8, view uint32, commit uint64) {
	if !r.Leading() || view != r.view || commit != r.commitMin {
		return // a confirmation of another point: the next notice asks again
	}
	r.confirmedAll() // forgets confirmations of an older point
	r.q.acks |= 1 << from
	if !r.q.quiet && r.idle() && r.confirmedAll() {
		r.nap()
	}
}

// mayNapAgain is rule 4.
func (r *Replica) mayNapAgain() bool {
	return r.cfg.Quiesce && !r.IsPrimary() && r.q.confirmed && r.q.confirmedView == r.view &&
		r.caughtUpTo(r.q.confirmedCommit) && r.live(r.Primary())
}

// PeerLost reports that the node-level heartbeat stopped hearing peer's
// node (rule 5): a group it leads leaves Normal as a heartbeat timeout
// would make it.
func (r *Replica) PeerLost(peer uint8) {
	if !r.roster.Member(peer) || peer == r.cfg.Replica || r.status != StatusNormal || r.Primary() != peer ||
		!r.roster.Member(r.cfg.Replica) || r.removed {
		return // a replica outside the group never acts in it (a placement's other nodes, S6)
	}
	r.q.quiet = false
	r.primaryGone()
}

// PeerFound reports that peer's node is heard again after PeerLost
// (rule 6).
func (r *Replica) PeerFound(peer uint8) {
	if peer < MaxReplicas && r.departed&(1<<peer) != 0 {
		r.departedHints[peer] = 0 // hint it again (reconfig.go, hintDeparted)
		if r.Leading() {
			r.wake()
		}
	}
	if !r.roster.Member(peer) || peer == r.cfg.Replica || !r.Leading() {
		return
	}
	if r.q.acks&(1<<peer) != 0 && r.q.view == r.view && r.q.commit == r.commitMin {
		return // it confirmed this very point: it holds everything
	}
	r.q.acks &^= 1 << peer
	r.wake()
}

// QuietConfirmed reports whether this primary counts rep's confirmation
// of its current point (the simulator checks it is true).
func (r *Replica) QuietConfirmed(rep uint8) bool {
	return r.Leading() && r.q.acks&(1<<rep) != 0 && r.q.view == r.view && r.q.commit == r.commitMin
}

// forgetConfirmation drops a restarted backup's confirmation: its memory
// of the point went with the restart.
func (r *Replica) forgetConfirmation(rep uint8) { r.q.acks &^= 1 << rep }

// assertQuiet checks the invariants of a quiet replica.
func (r *Replica) assertQuiet() {
	if broken := r.QuietCheck(); broken != "" {
		assert(false, broken)
	}
}

// QuietCheck reports a broken quiescence invariant, or "" (the simulator
// checks it every tick).
func (r *Replica) QuietCheck() string {
	if !r.q.quiet {
		return ""
	}
	if r.IsPrimary() {
		if !r.Leading() || r.PipelineLen() != 0 || len(r.queue) != 0 || r.commitTimer.running || r.prepareTimer.running {
			return "quiet primary with something in flight or a timer armed"
		}
		return ""
	}
	if r.status != StatusNormal || r.heartbeatTimer.running {
		return "quiet backup not normal or with its heartbeat timer armed"
	}
	return ""
}
