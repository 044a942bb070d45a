package metadata

import (
	"fmt"
	"testing"
	"time"
)

// throttleClock is a hand-moved clock for LoginThrottle.
type throttleClock struct{ now time.Time }

func (c *throttleClock) advance(d time.Duration) { c.now = c.now.Add(d) }

func newTestThrottle(cfg ThrottleConfig) (*LoginThrottle, *throttleClock) {
	if cfg.BaseDelay == 0 {
		cfg.BaseDelay = 100 * time.Millisecond
	}
	if cfg.MaxDelay == 0 {
		cfg.MaxDelay = 1600 * time.Millisecond
	}
	if cfg.QuietPeriod == 0 {
		cfg.QuietPeriod = 10 * time.Second
	}
	return NewLoginThrottle(cfg), &throttleClock{now: time.Unix(1_000_000, 0)}
}

// failOnce admits and fails one attempt, which must be admitted.
func failOnce(t *testing.T, th *LoginThrottle, c *throttleClock, address, user string) ThrottleStarted {
	t.Helper()
	if r, after := th.Admit(c.now, address, user); r != ThrottleAdmitted {
		t.Fatalf("attempt from %s for %q refused: %v (retry after %v)", address, user, r, after)
	}
	return th.Done(c.now, address, user, true)
}

func mustRefuse(t *testing.T, th *LoginThrottle, c *throttleClock, address, user string, want ThrottleRefusal, wantAfter time.Duration) {
	t.Helper()
	r, after := th.Admit(c.now, address, user)
	if r != want || after != wantAfter {
		t.Fatalf("Admit(%s, %q) = %v after %v; want %v after %v", address, user, r, after, want, wantAfter)
	}
}

func mustAdmit(t *testing.T, th *LoginThrottle, c *throttleClock, address, user string) {
	t.Helper()
	if r, after := th.Admit(c.now, address, user); r != ThrottleAdmitted {
		t.Fatalf("Admit(%s, %q) = %v after %v; want admitted", address, user, r, after)
	}
}

// Each failure doubles the key's delay from BaseDelay up to MaxDelay; the
// key is refused until its delay has passed.
func TestThrottleDelayDoublesUpToTheCap(t *testing.T) {
	th, c := newTestThrottle(ThrottleConfig{})
	want := []time.Duration{100, 200, 400, 800, 1600, 1600, 1600}
	for _, d := range want {
		d *= time.Millisecond
		failOnce(t, th, c, "10.0.0.1", "")
		mustRefuse(t, th, c, "10.0.0.1", "", ThrottleAddressDelayed, d)
		c.advance(d - time.Millisecond)
		mustRefuse(t, th, c, "10.0.0.1", "", ThrottleAddressDelayed, time.Millisecond)
		c.advance(time.Millisecond)
		mustAdmit(t, th, c, "10.0.0.1", "")
		th.Release(c.now, "10.0.0.1")
	}
}

// A (user, address) key delays from the first failure; the address key
// only after AddressFreeFailures, so users sharing an address (NAT) do
// not pay for one another's typos, while a spray over many user names is
// still slowed.
func TestThrottleAddressHasFreeFailures(t *testing.T) {
	th, c := newTestThrottle(ThrottleConfig{AddressFreeFailures: 2})
	if s := failOnce(t, th, c, "10.0.0.2", "alice"); s != (ThrottleStarted{User: true}) {
		t.Fatalf("first failure started %+v, want the user key only", s)
	}
	mustRefuse(t, th, c, "10.0.0.2", "alice", ThrottleUserDelayed, 100*time.Millisecond)
	mustAdmit(t, th, c, "10.0.0.2", "bob")
	if s := th.Done(c.now, "10.0.0.2", "bob", true); s != (ThrottleStarted{User: true}) {
		t.Fatalf("second failure started %+v, want the user key only", s)
	}
	mustRefuse(t, th, c, "10.0.0.2", "bob", ThrottleUserDelayed, 100*time.Millisecond)
	mustAdmit(t, th, c, "10.0.0.2", "carol")
	if s := th.Done(c.now, "10.0.0.2", "carol", true); s != (ThrottleStarted{Address: true, User: true}) {
		t.Fatalf("third failure started %+v, want both", s)
	}
	mustRefuse(t, th, c, "10.0.0.2", "dave", ThrottleAddressDelayed, 100*time.Millisecond)
	c.advance(100 * time.Millisecond)
	failOnce(t, th, c, "10.0.0.2", "dave")
	mustRefuse(t, th, c, "10.0.0.2", "erin", ThrottleAddressDelayed, 200*time.Millisecond)
}

// A flood from one address never delays another address, nor the same
// user from another address: the user is never locked globally.
func TestThrottleIsPerAddressAndPerUserAndAddress(t *testing.T) {
	th, c := newTestThrottle(ThrottleConfig{AddressFreeFailures: 3})
	for range 10 {
		failOnce(t, th, c, "10.0.0.3", "alice")
		c.advance(2 * time.Second)
	}
	failOnce(t, th, c, "10.0.0.3", "alice")
	mustRefuse(t, th, c, "10.0.0.3", "alice", ThrottleAddressDelayed, 1600*time.Millisecond)
	mustRefuse(t, th, c, "10.0.0.3", "bob", ThrottleAddressDelayed, 1600*time.Millisecond)
	mustAdmit(t, th, c, "10.0.0.1", "alice")
	if started := th.Done(c.now, "10.0.0.1", "alice", false); started != (ThrottleStarted{}) {
		t.Fatalf("a success started throttling: %+v", started)
	}
	mustAdmit(t, th, c, "10.0.0.1", "alice")
	th.Release(c.now, "10.0.0.1")
	// A failure of alice from 10.0.0.1 delays alice there, not elsewhere.
	failOnce(t, th, c, "10.0.0.1", "alice")
	mustRefuse(t, th, c, "10.0.0.1", "alice", ThrottleUserDelayed, 100*time.Millisecond)
	mustAdmit(t, th, c, "10.0.0.1", "bob")
	mustAdmit(t, th, c, "10.0.0.4", "alice")
}

// A success forgets its own (user, address) key and nothing else: the
// address key only decays, so an attacker's own account cannot wash the
// address it sprays from.
func TestThrottleSuccessForgetsOnlyItsUserKey(t *testing.T) {
	th, c := newTestThrottle(ThrottleConfig{AddressFreeFailures: 1, QuietPeriod: time.Hour})
	failOnce(t, th, c, "10.0.0.5", "alice") // alice level 1; address level 1 (free)
	mustAdmit(t, th, c, "10.0.0.5", "mallory")
	th.Done(c.now, "10.0.0.5", "mallory", false)
	mustRefuse(t, th, c, "10.0.0.5", "alice", ThrottleUserDelayed, 100*time.Millisecond)
	c.advance(100 * time.Millisecond)
	mustAdmit(t, th, c, "10.0.0.5", "alice")
	th.Done(c.now, "10.0.0.5", "alice", false) // alice's key forgotten
	failOnce(t, th, c, "10.0.0.5", "alice")
	// alice starts over at level 1 (100 ms); the address, not washed by
	// the successes, goes on to level 2: its first blocking failure.
	mustRefuse(t, th, c, "10.0.0.5", "bob", ThrottleAddressDelayed, 100*time.Millisecond)
	c.advance(100 * time.Millisecond)
	failOnce(t, th, c, "10.0.0.5", "bob")
	mustRefuse(t, th, c, "10.0.0.5", "bob", ThrottleAddressDelayed, 200*time.Millisecond)
}

// Every quiet period without failures, counted from the end of the
// block, lowers the level by one (the delay halves); at level 0 the key is
// forgotten.
func TestThrottleDecaysAfterQuietPeriods(t *testing.T) {
	th, c := newTestThrottle(ThrottleConfig{QuietPeriod: 10 * time.Second})
	for range 5 {
		failOnce(t, th, c, "10.0.0.5", "alice")
		c.advance(2 * time.Second)
	}
	// Level 5 (1600 ms). One quiet period: level 4, the next failure goes
	// back to level 5 (1600 ms) instead of the capped 6.
	c.advance(10 * time.Second)
	failOnce(t, th, c, "10.0.0.5", "alice")
	mustRefuse(t, th, c, "10.0.0.5", "alice", ThrottleAddressDelayed, 1600*time.Millisecond)
	// Three quiet periods after the block: level 2, the next failure is
	// level 3 (400 ms).
	c.advance(1600*time.Millisecond + 30*time.Second)
	failOnce(t, th, c, "10.0.0.5", "alice")
	mustRefuse(t, th, c, "10.0.0.5", "alice", ThrottleAddressDelayed, 400*time.Millisecond)
	// Long quiet: both keys are forgotten.
	c.advance(400*time.Millisecond + time.Hour)
	mustAdmit(t, th, c, "10.0.0.5", "alice")
	th.Release(c.now, "10.0.0.5")
	if n := th.Tracked(); n != 0 {
		t.Fatalf("%d keys held after full decay, want 0", n)
	}
	if started := failOnce(t, th, c, "10.0.0.5", "alice"); started != (ThrottleStarted{Address: true, User: true}) {
		t.Fatalf("started = %+v after full decay, want both", started)
	}
}

// ThrottleStarted is reported once per change from quiet to delayed, so
// the shell logs once, not per attempt.
func TestThrottleReportsStartOnce(t *testing.T) {
	th, c := newTestThrottle(ThrottleConfig{})
	if s := failOnce(t, th, c, "10.0.0.6", "alice"); s != (ThrottleStarted{Address: true, User: true}) {
		t.Fatalf("first failure: %+v", s)
	}
	c.advance(time.Second)
	if s := failOnce(t, th, c, "10.0.0.6", "alice"); s != (ThrottleStarted{}) {
		t.Fatalf("second failure: %+v", s)
	}
	c.advance(time.Second)
	if s := failOnce(t, th, c, "10.0.0.6", "bob"); s != (ThrottleStarted{User: true}) {
		t.Fatalf("first failure for bob: %+v", s)
	}
}

// An address has at most MaxInFlightPerAddress verifications running; Done
// and Release give the slot back. Other addresses are not affected.
func TestThrottleBoundsVerificationsInFlightPerAddress(t *testing.T) {
	th, c := newTestThrottle(ThrottleConfig{MaxInFlightPerAddress: 2})
	mustAdmit(t, th, c, "10.0.0.7", "alice")
	mustAdmit(t, th, c, "10.0.0.7", "bob")
	mustRefuse(t, th, c, "10.0.0.7", "carol", ThrottleAddressBusy, 100*time.Millisecond)
	mustAdmit(t, th, c, "10.0.0.8", "carol")
	th.Release(c.now, "10.0.0.7")
	mustAdmit(t, th, c, "10.0.0.7", "carol")
	th.Done(c.now, "10.0.0.7", "alice", false)
	th.Done(c.now, "10.0.0.7", "carol", false)
	th.Done(c.now, "10.0.0.8", "carol", false)
	mustAdmit(t, th, c, "10.0.0.7", "dave")
	th.Done(c.now, "10.0.0.7", "bob", false)
	th.Done(c.now, "10.0.0.7", "dave", false)
	if n := th.Tracked(); n != 0 {
		t.Fatalf("%d keys held with nothing failed or in flight, want 0", n)
	}
}

// At most MaxTracked keys are held; the least recently used go first, but
// never an address with a verification in flight.
func TestThrottleMemoryIsBounded(t *testing.T) {
	th, c := newTestThrottle(ThrottleConfig{MaxTracked: 8, QuietPeriod: time.Hour})
	mustAdmit(t, th, c, "10.1.0.0", "busy") // in flight throughout
	for i := range 100 {
		failOnce(t, th, c, fmt.Sprintf("10.2.0.%d", i), "u")
		if n := th.Tracked(); n > 8 {
			t.Fatalf("%d keys held, limit 8", n)
		}
	}
	// The busy address kept its count: a second attempt is refused.
	mustRefuse(t, th, c, "10.1.0.0", "other", ThrottleAddressBusy, 100*time.Millisecond)
	// The oldest failures were evicted: that address is admitted again at
	// once; the latest one is still delayed.
	mustAdmit(t, th, c, "10.2.0.0", "u")
	mustRefuse(t, th, c, "10.2.0.99", "u", ThrottleAddressDelayed, 100*time.Millisecond)
	// Every key in flight and no room: the oldest goes anyway, memory
	// stays bounded.
	th2, c2 := newTestThrottle(ThrottleConfig{MaxTracked: 2})
	for i := range 5 {
		mustAdmit(t, th2, c2, fmt.Sprintf("10.3.0.%d", i), "")
	}
	if n := th2.Tracked(); n != 2 {
		t.Fatalf("%d keys held, limit 2", n)
	}
}

// Done and Release for an address the throttle no longer holds are
// harmless.
func TestThrottleForgetsUnknownAddressesQuietly(t *testing.T) {
	th, c := newTestThrottle(ThrottleConfig{})
	th.Release(c.now, "10.9.9.9")
	th.Done(c.now, "10.9.9.9", "x", false)
	if n := th.Tracked(); n != 0 {
		t.Fatalf("%d keys held", n)
	}
	th.Done(c.now, "10.9.9.9", "x", true)
	mustRefuse(t, th, c, "10.9.9.9", "", ThrottleAddressDelayed, 100*time.Millisecond)
}

// Zero fields take the documented defaults.
func TestThrottleDefaults(t *testing.T) {
	got := NewLoginThrottle(ThrottleConfig{}).Config()
	want := ThrottleConfig{BaseDelay: 100 * time.Millisecond, MaxDelay: 5 * time.Second, QuietPeriod: 10 * time.Second,
		MaxInFlightPerAddress: 1, MaxTracked: 16384}
	if got != want {
		t.Fatalf("defaults %+v, want %+v", got, want)
	}
	got = NewLoginThrottle(ThrottleConfig{AddressFreeFailures: -3}).Config()
	if got != want {
		t.Fatalf("defaults %+v, want %+v", got, want)
	}
}

// A verification whose Done never came (its caller failed) stops counting
// after inFlightLapse: it cannot lock its address out for good.
func TestThrottleLostVerificationLapses(t *testing.T) {
	th, c := newTestThrottle(ThrottleConfig{})
	mustAdmit(t, th, c, "10.0.0.9", "alice") // never ended
	c.advance(inFlightLapse - time.Second)
	mustRefuse(t, th, c, "10.0.0.9", "alice", ThrottleAddressBusy, 100*time.Millisecond)
	c.advance(time.Second)
	mustAdmit(t, th, c, "10.0.0.9", "alice")
	th.Done(c.now, "10.0.0.9", "alice", false)
	if n := th.Tracked(); n != 0 {
		t.Fatalf("%d keys held, want 0", n)
	}
}
