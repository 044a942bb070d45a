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
// before the k-th (each has left >= k). The work Tick does besides the
// timers counts too: a repair session's stall count and the backoff after
// a refused repair are counters that Advance moves on as it moves the
// timers (a backup repairing thousands of groups after a mass election
// would otherwise be ticked every 10 ms), while an elect's progress and
// the state write backoff make IdleTicks 1, so they run tick by tick. The simulator runs
// the same cores both ways and checks the runs are identical
// (sim.TestDeadlineTickingMatchesTicks).

// IdleTicks reports how many ticks may pass before the next one that does
// more than count running timers down: the smallest time left on a
// running timer, or 1 while tick-driven work is pending. ok is false when
// nothing is armed: no tick does anything until the next input.
func (r *Replica) IdleTicks() (ticks int, ok bool) {
	ticks = r.tickWork()
	if ticks == 1 {
		return 1, true
	}
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
		for op, f := range r.fates { // none runs out before the k-th (fateWork)
			f.ticks -= k - 1
			r.fates[op] = f
		}
		// The counters tickRepair would have moved on the silent ticks.
		if !r.IsPrimary() && r.vc.merged == nil {
			switch {
			case r.repairBackoff > 0:
				r.repairBackoff -= k - 1
			case r.repair.open && r.status == StatusNormal:
				r.repair.idle += k - 1
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

// tickWork is how many ticks until one does work besides counting timers
// and counters (1: the next), or 0 when none will: it mirrors the branches
// of Tick, tickViewChange and tickRepair that run without a timer firing.
func (r *Replica) tickWork() int {
	n := r.counterWork()
	if f := r.fateWork(); f > 0 && (n == 0 || f < n) {
		return f // a wait for a cancelled prepare's fate runs out (fate.go)
	}
	return n
}

// counterWork is tickWork without the fates.
func (r *Replica) counterWork() int {
	if r.vc.merged != nil || r.stateBackoff > 0 || r.stateFailures > 0 {
		return 1 // electProgress runs; the state write backs off
	}
	if r.IsPrimary() {
		return 0 // tickRepair runs for a primary-elect only
	}
	switch {
	case r.repairBackoff > 0:
		return r.repairBackoff // a refused repair may open again then
	case r.repair.open && r.repairComplete():
		return 1 // the session ends at the next tick
	case r.repair.open && r.status != StatusNormal:
		return 0 // the stall count stands still outside Normal
	case r.repair.open:
		return max(r.cfg.RepairRetryTicks-r.repair.idle, 1) // the stall retry
	case r.repairWanted():
		return 1
	}
	return 0
}

// repairWanted is maybeRepair's guard: a session would be looked for.
func (r *Replica) repairWanted() bool {
	target := max(r.commitMax, r.knownHead)
	return !(r.transferring || r.repair.open || r.repairBackoff > 0 || r.status != StatusNormal || r.IsPrimary() ||
		r.sequencer >= target && r.commitMin >= r.commitMax)
}
