package metadata

import (
	"container/list"
	"time"
)

// LoginThrottle slows down credential guessing (issue 17): failed logins
// delay the next ones exponentially per remote address and per (user
// name, remote address), and an address may have only a few verifications
// in flight at once, so one address can never occupy the whole
// verification pool. Nothing is ever locked per user alone: a flood from
// one address that guesses a user's password costs that user's logins
// from other addresses nothing.
//
// Rules, for each key (the address, and the address with the user name):
//   - a failure raises the key's level by one; past the key's free
//     failures (none for a (user, address) key, AddressFreeFailures for an
//     address, since many users may share one behind a NAT) it blocks the
//     key for BaseDelay doubling per level, capped at MaxDelay (the level
//     stops growing there, so forgiveness never takes longer than needed);
//   - every QuietPeriod without a failure, counted from the end of the
//     block, lowers the level by one (the delay halves); a key at level 0
//     with nothing in flight is forgotten;
//   - a success forgets the (user, address) key; the address key only
//     decays, so an attacker cannot wash its address with an account of
//     its own while it sprays other users;
//   - a refused attempt changes nothing (a client retrying politely never
//     extends its own delay).
//
// Memory is bounded: at most MaxTracked keys, least recently used first
// out, skipping addresses with a verification in flight (their count must
// survive until Done). A count nobody ended (the caller failed between
// Admit and Done) lapses after inFlightLapse, so it cannot lock an
// address out. It is pure: time is an argument, no goroutines, not
// safe for concurrent use (the metadata actor owns it).
type LoginThrottle struct {
	cfg     ThrottleConfig
	records map[throttleKey]*list.Element
	lru     *list.List // of *throttleRecord, most recently used first
}

// ThrottleConfig parameterises a LoginThrottle (config [login.throttle]).
type ThrottleConfig struct {
	BaseDelay             time.Duration
	MaxDelay              time.Duration
	QuietPeriod           time.Duration
	AddressFreeFailures   int
	MaxInFlightPerAddress int
	MaxTracked            int
}

// ThrottleRefusal says why an attempt may not be verified now.
type ThrottleRefusal uint8

const (
	ThrottleAdmitted       ThrottleRefusal = iota
	ThrottleAddressDelayed                 // the address failed recently
	ThrottleUserDelayed                    // this user name failed recently from this address
	ThrottleAddressBusy                    // the address has MaxInFlightPerAddress verifications running
)

func (r ThrottleRefusal) String() string {
	return [...]string{"admitted", "address delayed", "user delayed", "address busy"}[r]
}

// ThrottleStarted reports which keys a failure started to delay (each is
// true once per quiet-to-delayed change, for logging).
type ThrottleStarted struct{ Address, User bool }

type throttleKey struct{ address, user string } // user "": the address's own key

// inFlightLapse is how long an address's verifications in flight count
// without a Done or Release: far above any real verification (a full
// queue of Argon2id checks takes seconds), so only a lost one lapses.
const inFlightLapse = time.Minute

type throttleRecord struct {
	key          throttleKey
	free         int // failures that do not block yet
	level        int
	decayedAt    time.Time // quiet time counts from here: the end of the last block, or the last decay
	blockedUntil time.Time
	inFlight     int       // address keys only
	admittedAt   time.Time // the latest admission, for inFlightLapse
}

// NewLoginThrottle returns a throttle; zero or negative fields take
// BaseDelay 100 ms, MaxDelay 5 s, QuietPeriod 10 s, one verification in
// flight per address and 16384 tracked keys (AddressFreeFailures 0 is
// taken as given: an address is delayed from its first failure).
func NewLoginThrottle(cfg ThrottleConfig) *LoginThrottle {
	if cfg.BaseDelay <= 0 {
		cfg.BaseDelay = 100 * time.Millisecond
	}
	if cfg.MaxDelay < cfg.BaseDelay {
		cfg.MaxDelay = max(cfg.BaseDelay, 5*time.Second)
	}
	if cfg.QuietPeriod <= 0 {
		cfg.QuietPeriod = 10 * time.Second
	}
	if cfg.MaxInFlightPerAddress <= 0 {
		cfg.MaxInFlightPerAddress = 1
	}
	if cfg.MaxTracked <= 0 {
		cfg.MaxTracked = 16384
	}
	cfg.AddressFreeFailures = max(0, cfg.AddressFreeFailures)
	return &LoginThrottle{cfg: cfg, records: map[throttleKey]*list.Element{}, lru: list.New()}
}

// Config is the effective configuration (defaults filled in).
func (t *LoginThrottle) Config() ThrottleConfig { return t.cfg }

// Tracked is the number of keys held.
func (t *LoginThrottle) Tracked() int { return len(t.records) }

// Admit decides whether a login for user (empty for a token login) from
// address may be verified at now. Admitted, it counts one verification in
// flight for the address, which Done or Release ends. Refused, retryAfter
// is how long until the refusal may lift (MaxDelay at most; BaseDelay for
// a busy address).
func (t *LoginThrottle) Admit(now time.Time, address, user string) (refusal ThrottleRefusal, retryAfter time.Duration) {
	a := t.get(now, throttleKey{address: address})
	if a != nil && a.inFlight > 0 && now.Sub(a.admittedAt) >= inFlightLapse {
		a.inFlight = 0
	}
	switch {
	case a != nil && a.inFlight >= t.cfg.MaxInFlightPerAddress:
		return ThrottleAddressBusy, t.cfg.BaseDelay
	case a != nil && now.Before(a.blockedUntil):
		return ThrottleAddressDelayed, min(a.blockedUntil.Sub(now), t.cfg.MaxDelay)
	}
	if user != "" {
		if u := t.get(now, throttleKey{address, user}); u != nil && now.Before(u.blockedUntil) {
			return ThrottleUserDelayed, min(u.blockedUntil.Sub(now), t.cfg.MaxDelay)
		}
	}
	if a == nil {
		a = t.add(now, throttleKey{address: address})
	}
	a.inFlight++
	a.admittedAt = now
	return ThrottleAdmitted, 0
}

// Release ends an admitted verification that never ran (the pool was
// full): nothing is learnt about the credentials.
func (t *LoginThrottle) Release(now time.Time, address string) {
	if a := t.get(now, throttleKey{address: address}); a != nil && a.inFlight > 0 {
		a.inFlight--
		t.forgetIfIdle(a)
	}
}

// Done ends an admitted verification with its outcome.
func (t *LoginThrottle) Done(now time.Time, address, user string, failed bool) ThrottleStarted {
	a := t.get(now, throttleKey{address: address})
	if a != nil && a.inFlight > 0 {
		a.inFlight--
	}
	if !failed {
		if e := t.records[throttleKey{address, user}]; e != nil && user != "" {
			t.remove(e.Value.(*throttleRecord))
		}
		if a != nil {
			t.forgetIfIdle(a)
		}
		return ThrottleStarted{}
	}
	if a == nil {
		a = t.add(now, throttleKey{address: address})
	}
	started := ThrottleStarted{Address: t.fail(now, a)}
	if user != "" {
		u := t.get(now, throttleKey{address, user})
		if u == nil {
			u = t.add(now, throttleKey{address, user})
		}
		started.User = t.fail(now, u)
	}
	return started
}

// fail raises r's level and blocks it past its free failures; true when
// r starts delaying.
func (t *LoginThrottle) fail(now time.Time, r *throttleRecord) bool {
	started := r.level == r.free
	if t.delay(r.level-r.free) < t.cfg.MaxDelay {
		r.level++
	}
	r.blockedUntil = now.Add(t.delay(r.level - r.free))
	// Quiet time counts from the end of the block, so a MaxDelay longer
	// than QuietPeriod cannot forgive a key while it is still blocked.
	r.decayedAt = r.blockedUntil
	return started
}

// delay is the block after the n-th failure past the free ones: none for
// n <= 0, then BaseDelay doubling, capped at MaxDelay.
func (t *LoginThrottle) delay(n int) time.Duration {
	if n <= 0 {
		return 0
	}
	d := t.cfg.BaseDelay
	for i := 1; i < n && d < t.cfg.MaxDelay; i++ {
		d *= 2
	}
	return min(d, t.cfg.MaxDelay)
}

// get returns key's record with its decay applied and marks it used; nil
// when the key is not held (or was just forgotten).
func (t *LoginThrottle) get(now time.Time, key throttleKey) *throttleRecord {
	e := t.records[key]
	if e == nil {
		return nil
	}
	r := e.Value.(*throttleRecord)
	if quiet := now.Sub(r.decayedAt); r.level > 0 && quiet >= t.cfg.QuietPeriod {
		periods := int(quiet / t.cfg.QuietPeriod)
		r.level = max(0, r.level-periods)
		r.decayedAt = r.decayedAt.Add(time.Duration(periods) * t.cfg.QuietPeriod)
	}
	if t.forgetIfIdle(r) {
		return nil
	}
	t.lru.MoveToFront(e)
	return r
}

// forgetIfIdle drops a record that delays nothing and counts nothing.
func (t *LoginThrottle) forgetIfIdle(r *throttleRecord) bool {
	if r.level == 0 && r.inFlight == 0 {
		t.remove(r)
		return true
	}
	return false
}

func (t *LoginThrottle) add(now time.Time, key throttleKey) *throttleRecord {
	for len(t.records) >= t.cfg.MaxTracked {
		t.evictOne(now)
	}
	r := &throttleRecord{key: key, decayedAt: now}
	if key.user == "" {
		r.free = t.cfg.AddressFreeFailures
	}
	t.records[key] = t.lru.PushFront(r)
	return r
}

// evictOne drops the least recently used record without a verification
// in flight; those are at most the pool's capacity, so the walk is short.
// When every record has one (MaxTracked below the pool's capacity) the
// oldest goes anyway: memory stays bounded, and its address may get one
// verification more than its share.
func (t *LoginThrottle) evictOne(now time.Time) {
	for e := t.lru.Back(); e != nil; e = e.Prev() {
		if r := e.Value.(*throttleRecord); r.inFlight == 0 || now.Sub(r.admittedAt) >= inFlightLapse {
			t.remove(r)
			return
		}
	}
	t.remove(t.lru.Back().Value.(*throttleRecord))
}

func (t *LoginThrottle) remove(r *throttleRecord) {
	if e := t.records[r.key]; e != nil {
		t.lru.Remove(e)
		delete(t.records, r.key)
	}
}
