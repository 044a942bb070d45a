package vsr

// Virtual time without a tick per 10 ms (DESIGN.md "Timers, not sweeps").
//
// A node carries thousands of groups; ticking each every 10 ms costs in
// proportion to the groups that exist. Most ticks of an idle group only
// count a timer down. IdleTicks tells the shell how many ticks may pass
// before anything but a countdown happens, and Advance takes that many at
// once, so a shell that keeps a deadline per group (a heap or a wheel)
// touches a group only when one of its timers is due. Advance(k) with
// k <= IdleTicks() is exactly k calls of Tick: the k-1 skipped ticks
// would only have decremented running timers, none of which reaches zero
// before the k-th (each has left >= k), and the work Tick does besides
// the timers (repair stall counts, an elect's progress, the state write
// backoff) makes IdleTicks 1, so it runs tick by tick. The simulator runs
// the same cores both ways and checks the runs are identical
// (sim.TestDeadlineTickingMatchesTicks).

// IdleTicks reports how many ticks may pass before the next one that does
// more than count running timers down: the smallest time left on a
// running timer, or 1 while tick-driven work is pending. ok is false when
// nothing is armed: no tick does anything until the next input.
func (r *Replica) IdleTicks() (ticks int, ok bool) {
	if r.tickWorkPending() {
		return 1, true
	}
	ticks = 0
	for _, t := range r.timers() {
		if t.running && (ticks == 0 || t.left < ticks) {
			ticks = t.left
		}
	}
	return ticks, ticks > 0
}

// Advance is k ticks of virtual time, k between 1 and IdleTicks().
func (r *Replica) Advance(k int) {
	limit, ok := r.IdleTicks()
	assert(k >= 1 && ok && k <= limit, "advance within the idle ticks")
	r.advance(k)
}

// advance is Advance without the check (Elapse computed k itself).
func (r *Replica) advance(k int) {
	if k > 1 {
		for _, t := range r.timers() {
			if t.running {
				t.left -= k - 1
			}
		}
	}
	r.Tick()
}

// Elapse is n ticks of virtual time, taken in the fewest Advance steps:
// what a shell calls with the ticks since it last advanced this replica,
// before it hands it any input. It returns how many Advance steps it
// took (ticks that did work).
func (r *Replica) Elapse(n int) (steps int) {
	for n > 0 {
		k, ok := r.IdleTicks()
		if !ok {
			return steps
		}
		k = min(k, n)
		r.advance(k)
		n -= k
		steps++
	}
	return steps
}

// timers lists every timer of the replica (4.7).
func (r *Replica) timers() [7]*timer {
	return [7]*timer{&r.prepareTimer, &r.commitTimer, &r.heartbeatTimer,
		&r.svcTimer, &r.dvcTimer, &r.vcStatusTimer, &r.rsvTimer}
}

// tickWorkPending reports whether the next Tick does work besides
// counting timers: it mirrors the branches of Tick, tickViewChange and
// tickRepair that run without a timer firing.
func (r *Replica) tickWorkPending() bool {
	if r.vc.merged != nil || r.stateBackoff > 0 || r.stateFailures > 0 {
		return true // electProgress and tickRepair run; the state write backs off
	}
	if r.IsPrimary() {
		return false // tickRepair runs for a primary-elect only
	}
	return r.repairBackoff > 0 || r.repair.open || r.repairWanted()
}

// repairWanted is maybeRepair's guard: a session would be looked for.
func (r *Replica) repairWanted() bool {
	target := max(r.commitMax, r.knownHead)
	return !(r.transferring || r.repair.open || r.repairBackoff > 0 || r.status != StatusNormal || r.IsPrimary() ||
		r.sequencer >= target && r.commitMin >= r.commitMax)
}
