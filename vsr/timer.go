package vsr

// timer counts ticks (4.7). Only the Prepare timer backs off.
type timer struct {
	after    int // base delay in ticks
	left     int
	attempts int
	running  bool
}

func (t *timer) start() { t.running, t.left, t.attempts = true, t.after, 0 }
func (t *timer) stop()  { t.running = false }

// tick advances one tick and reports whether the timer fired. A fired timer
// stops; the handler restarts or backs it off.
func (t *timer) tick() bool {
	if !t.running {
		return false
	}
	t.left--
	if t.left > 0 {
		return false
	}
	t.running = false
	return true
}

// backoffCapped re-arms with base = after << min(attempts, maxShift)
// plus uniform jitter in [0, base/2] (the view-change retransmissions).
func (t *timer) backoffCapped(rand func() uint64, maxShift int) {
	t.attempts++
	base := t.after << min(t.attempts, maxShift)
	t.left = base + int(rand()%uint64(base/2+1))
	t.running = true
}

// startJittered arms with after << shift plus uniform jitter in
// [0, after/2]; attempts restart.
func (t *timer) startJittered(rand func() uint64, shift int) {
	base := t.after << shift
	t.running, t.attempts = true, 0
	t.left = base + int(rand()%uint64(t.after/2+1))
}

// backoff re-arms with base = after << min(attempts, 4) plus uniform jitter
// in [0, base].
func (t *timer) backoff(rand func() uint64) {
	t.attempts++
	base := t.after << min(t.attempts, 4)
	t.left = base + int(rand()%uint64(base+1))
	t.running = true
}
