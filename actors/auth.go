package actors

import (
	"context"
	"log/slog"
	"net"
	"net/netip"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"iggynode/config"
	"iggynode/metadata"
	"iggynode/wire"
)

// Logins off the metadata path (issue 17; DESIGN.md "Scale and budgets":
// Argon2id runs on a bounded pool off the metadata actor).
//
// The metadata actor decodes a Register and gates its version as before
// (client-plane.md 5.2 steps 1-2), asks the throttle whether the remote
// address may try now, reads what the check needs from committed state
// (metadata.PreparePasswordLogin: the user's PHC string, or the dummy
// hash for an unknown user) and hands the job to the pool. A worker runs
// Argon2id (and the BLAKE3 digest of a token) and sends the job back as a
// loginVerified message. The actor then judges it against committed state
// as it is now (ConfirmPasswordLogin: a user deleted, renamed, deactivated
// or with a new password meanwhile never binds on the old check; a stale
// check is verified again, twice at most; LoginWithTokenHash looks the
// digest up now) and continues the Register path exactly as before: the
// same evictions, the same bound-connection answer, forwarding to the
// primary on a backup, the same admission and binding. Meanwhile the actor
// serves reads, routes partition traffic and runs consensus.
//
// Answers this path adds, where the spec has no "too many requests" code:
//   - busy (the address already has max_in_flight_per_address checks
//     running): the login waits its turn, in arrival order, up to
//     max_waiting_per_address logins per address (an application's pool
//     of connections logs in at once from one host); beyond that it is
//     answered as throttled.
//   - throttled (the address or the (user, address) pair failed recently,
//     or too many of the address's logins wait already): the
//     result-framed rejection [1][0][58] TransientNotAccepted with class D
//     header fields (5.2 step 8's "cannot accept now"), held back until the
//     throttle's delay is over (MaxDelay at most). Not an eviction: the
//     credentials were not judged, and InvalidCredentials would lie to a
//     user whose password is right. Holding the reply keeps a lockstep
//     client (every SDK) from spinning on cheap refusals; the SDKs replay
//     58 with a short backoff, so a user who mistyped once gets in on the
//     retry without noticing.
//   - pool full (verify_queue checks already waiting): the same 58 at
//     once; another node has its own pool.
//   - abandoned (the connection closed before the login was judged, as
//     when an SDK times the login out and redials): no answer; out of its
//     address's queue at once, or skipped by the worker if not started,
//     so a client that gave up costs no Argon2id and no turn.
//
// Only the metadata actor calls the throttle (admit, finish), so it needs
// no lock; it lives on the node, not in the actor, so it survives a
// restart of the actor, as do jobs in flight (a result reaching the
// restarted actor is judged against its rebuilt state).

// loginOutcome labels iggy.login.attempts.
type loginOutcome int

const (
	loginOK loginOutcome = iota
	loginBadCredentials
	loginThrottled
	loginPoolFull
	loginAbandoned
	loginOutcomeCount
)

var loginOutcomeNames = [loginOutcomeCount]string{"ok", "bad_credentials", "throttled", "pool_full", "abandoned"}

// maxLoginRechecks bounds how often a check made stale by a concurrent
// user change is verified again before the login is refused.
const maxLoginRechecks = 2

// loginJob is one Register's credential check on its way through the pool.
type loginJob struct {
	req      *clientRequest
	password *metadata.PasswordCheck // nil: the body is not a password login
	token    *string                 // raw token when the body decodes as a token login
	address  string                  // throttle key of the remote address
	user     string                  // throttle's user key: the presented name ("" for a token)
	admitted bool                    // counted in flight by the throttle
	rechecks int
	body     wire.RegisterBody
	// abandoned: the connection closed before the login was judged
	// (authService.abandon); a worker that has not started skips the check.
	abandoned atomic.Bool

	// Set by the worker.
	matched   bool
	skipped   bool // abandoned before the check ran: nothing was verified
	tokenHash string
}

// needsWorker reports whether the job has expensive work: a password whose
// lengths are out of bounds is refused without a hash.
func (j *loginJob) needsWorker() bool {
	return (j.password != nil && j.password.NeedsHash()) || j.token != nil
}

// loginVerified brings a verified job back to the metadata actor.
type loginVerified struct{ job *loginJob }

// authService is the node's verification pool and failed-login throttle.
type authService struct {
	log      *slog.Logger
	tel      *nodeTelemetry
	throttle *metadata.LoginThrottle // nil when login.throttle.enabled is off
	jobs     chan *loginJob
	// waiting are the logins of busy addresses, in arrival order, at
	// most maxWaiting per address (metadata actor only).
	waiting    map[string][]*loginJob
	maxWaiting int
	// byConn is the login not yet judged of each client connection
	// (metadata actor only): when the connection closes, the login is
	// abandoned, so a client that gave up (its SDK timed out and
	// reconnects) costs no Argon2id and no turn of its address. Without
	// it a flood of timed-out retries fills the address's queue with
	// checks nobody waits for, and under a slow CPU no login ever
	// finishes within the client's timeout.
	byConn  map[uint32]*loginJob
	verify  func(hash, password string) bool
	deliver func(*loginVerified)
	stop    chan struct{}
	wg      sync.WaitGroup
	// full: a submit found the queue full and it has not drained to half
	// since (metadata actor only; the hysteresis logs each change once
	// instead of on every flap at the edge).
	full bool
}

// newAuthService starts cfg's workers. deliver sends a verified job to the
// metadata actor.
func newAuthService(cfg config.Login, log *slog.Logger, tel *nodeTelemetry, verify func(hash, password string) bool,
	deliver func(*loginVerified)) *authService {
	workers := int(cfg.VerifyWorkers)
	if workers == 0 {
		workers = max(1, runtime.GOMAXPROCS(0)/2)
	}
	queue := int(cfg.VerifyQueue)
	if queue == 0 {
		queue = 64
	}
	if verify == nil {
		verify = metadata.VerifyPassword
	}
	a := &authService{log: log.With("component", "login"), tel: tel, jobs: make(chan *loginJob, queue),
		verify: verify, deliver: deliver, stop: make(chan struct{}), waiting: map[string][]*loginJob{}, byConn: map[uint32]*loginJob{},
		maxWaiting: int(max(cfg.Throttle.MaxWaitingPerAddress, 1))}
	if t := cfg.Throttle; t.Enabled {
		a.throttle = metadata.NewLoginThrottle(metadata.ThrottleConfig{BaseDelay: t.BaseDelay.D(), MaxDelay: t.MaxDelay.D(),
			QuietPeriod: t.QuietPeriod.D(), AddressFreeFailures: int(t.AddressFreeFailures),
			MaxInFlightPerAddress: int(t.MaxInFlightPerAddress), MaxTracked: int(t.MaxTracked)})
	}
	for range workers {
		a.wg.Add(1)
		go a.work()
	}
	return a
}

// close stops the workers after their current check; queued jobs are
// dropped with the node.
func (a *authService) close() {
	close(a.stop)
	a.wg.Wait()
}

func (a *authService) work() {
	defer a.wg.Done()
	for {
		select {
		case <-a.stop:
			return
		case j := <-a.jobs:
			a.tel.loginQueued.Add(-1)
			if j.abandoned.Load() {
				j.skipped = true
				a.deliver(&loginVerified{job: j})
				continue
			}
			start := time.Now()
			if j.password != nil {
				j.matched = j.password.Verify(a.verify)
			}
			if j.token != nil {
				j.tokenHash = metadata.TokenHash(*j.token)
			}
			a.tel.loginVerifyLat.Record(context.Background(), time.Since(start).Seconds())
			a.deliver(&loginVerified{job: j})
		}
	}
}

// submit queues j for a worker; false when the queue is full.
func (a *authService) submit(j *loginJob) bool {
	a.tel.loginQueued.Add(1)
	select {
	case a.jobs <- j:
		if a.full && len(a.jobs) <= cap(a.jobs)/2 {
			a.full = false
			a.log.Info("login verification queue accepting again")
		}
		return true
	default:
		a.tel.loginQueued.Add(-1)
		if !a.full {
			a.full = true
			a.log.Warn("login verification queue full; logins answered TransientNotAccepted", "queue", cap(a.jobs))
		}
		return false
	}
}

// admit asks the throttle whether j may be verified now.
func (a *authService) admit(j *loginJob) (refusal metadata.ThrottleRefusal, retryAfter time.Duration) {
	if a.throttle == nil {
		return metadata.ThrottleAdmitted, 0
	}
	refusal, retryAfter = a.throttle.Admit(time.Now(), j.address, j.user)
	j.admitted = refusal == metadata.ThrottleAdmitted
	a.tel.loginTracked.Store(int64(a.throttle.Tracked()))
	return refusal, retryAfter
}

// release ends an admitted job that was never verified.
func (a *authService) release(j *loginJob) {
	if a.throttle != nil && j.admitted {
		j.admitted = false
		a.throttle.Release(time.Now(), j.address)
		a.tel.loginTracked.Store(int64(a.throttle.Tracked()))
	}
}

// wait parks j until its address has a check free; false when the
// address has too many waiting already.
func (a *authService) wait(j *loginJob) bool {
	q := a.waiting[j.address]
	if len(q) >= a.maxWaiting {
		return false
	}
	a.waiting[j.address] = append(q, j)
	a.tel.loginWaiting.Add(1)
	return true
}

// track records j as its connection's login not yet judged; a login of
// the HTTP plane or relayed by another replica has no connection here.
func (a *authService) track(j *loginJob) {
	if r := j.req; r.http == nil && r.relay == nil {
		a.byConn[r.connID] = j
	}
}

// untrack ends what track recorded, once j is judged or dropped.
func (a *authService) untrack(j *loginJob) {
	if r := j.req; a.byConn[r.connID] == j {
		delete(a.byConn, r.connID)
	}
}

// abandon drops the login of a closed connection, if any: out of its
// address's queue if it waits there (its slot is free for a live one),
// else marked for the worker and the judgement.
func (a *authService) abandon(connID uint32) {
	j := a.byConn[connID]
	if j == nil {
		return
	}
	delete(a.byConn, connID)
	j.abandoned.Store(true)
	q := a.waiting[j.address]
	if i := slices.Index(q, j); i >= 0 {
		if q = slices.Delete(q, i, i+1); len(q) == 0 {
			delete(a.waiting, j.address)
		} else {
			a.waiting[j.address] = q
		}
		a.tel.loginWaiting.Add(-1)
		a.count(loginAbandoned)
	}
}

// next takes the oldest login waiting for address, if any.
func (a *authService) next(address string) *loginJob {
	q := a.waiting[address]
	if len(q) == 0 {
		return nil
	}
	j := q[0]
	q[0] = nil
	a.tel.loginWaiting.Add(-1)
	if q = q[1:]; len(q) == 0 {
		delete(a.waiting, address)
	} else {
		a.waiting[address] = q
	}
	return j
}

// finish records a judged job: the outcome metric, and the throttle
// (logging a key that starts to be delayed, once).
func (a *authService) finish(j *loginJob, failed bool) {
	if failed {
		a.count(loginBadCredentials)
	} else {
		a.count(loginOK)
	}
	if a.throttle == nil || !j.admitted {
		return
	}
	j.admitted = false
	started := a.throttle.Done(time.Now(), j.address, j.user, failed)
	a.tel.loginTracked.Store(int64(a.throttle.Tracked()))
	if started.Address {
		a.log.Warn("login throttling started for an address after repeated failures", "address", j.address)
	}
	if started.User {
		a.log.Info("login throttling started for a user from an address", "user", j.user, "address", j.address)
	}
}

func (a *authService) count(o loginOutcome) { a.tel.loginOutcomes[o].Add(1) }

// throttleAddress is the throttle's key for a remote address: the IP
// without the port; an IPv6 address by its /64, which one host or site
// usually holds whole (a per-address limit would be free to dodge
// otherwise). Anything unparsable is its own key.
func throttleAddress(remote string) string {
	host := remote
	if h, _, err := net.SplitHostPort(remote); err == nil {
		host = h
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	ip = ip.Unmap().WithZone("")
	if ip.Is6() {
		if p, err := ip.Prefix(64); err == nil {
			return p.String()
		}
	}
	return ip.String()
}

// startLogin runs the throttle and hands the credential check to the pool
// (client-plane.md 5.2 steps 3-5 continue in onLoginVerified).
func (m *metadataActor) startLogin(ctx actor.Context, req *clientRequest, rb wire.RegisterBody) {
	j := &loginJob{req: req, address: throttleAddress(req.address), body: rb}
	if rb.Password != nil {
		j.user = rb.Password.Username
	}
	m.n.auth.track(j)
	m.admitLogin(ctx, j)
}

// admitLogin asks the throttle for j: verified now, waiting its address's
// turn, or refused.
func (m *metadataActor) admitLogin(ctx actor.Context, j *loginJob) {
	a := m.n.auth
	refusal, after := a.admit(j)
	if refusal == metadata.ThrottleAddressBusy && a.wait(j) {
		return // the address's running check hands it on (loginTurn)
	}
	if refusal != metadata.ThrottleAdmitted {
		a.count(loginThrottled)
		a.untrack(j)
		req := j.req
		m.replyLater(req, &replyOut{frame: rejectReply(&req.hdr, req.hdr.Client, m.commit(), wire.OpRegister, wire.ErrTransientNotAccepted)}, after)
		m.loginTurn(ctx, j.address) // the next waiting login is judged now too (a delayed address refuses them all)
		return
	}
	if rb := j.body; rb.Password != nil {
		c := m.state.PreparePasswordLogin(rb.Password.Username, rb.Password.Password)
		j.password = &c
	}
	if rb := j.body; rb.Token != nil {
		tok := rb.Token.Token
		j.token = &tok
	}
	m.verifyLogin(ctx, j)
}

// loginTurn admits the next login waiting for address, once one of its
// checks ended.
func (m *metadataActor) loginTurn(ctx actor.Context, address string) {
	if j := m.n.auth.next(address); j != nil {
		m.admitLogin(ctx, j)
	}
}

// verifyLogin sends j to a worker, or judges it at once when it has no
// expensive work.
func (m *metadataActor) verifyLogin(ctx actor.Context, j *loginJob) {
	if !j.needsWorker() {
		m.onLoginVerified(ctx, &loginVerified{job: j})
		return
	}
	a := m.n.auth
	if !a.submit(j) {
		a.release(j)
		a.untrack(j)
		a.count(loginPoolFull)
		m.reply(ctx, j.req, &replyOut{frame: rejectReply(&j.req.hdr, j.req.hdr.Client, m.commit(), wire.OpRegister, wire.ErrTransientNotAccepted)})
		m.loginTurn(ctx, j.address)
	}
}

// onLoginVerified judges a verified check against committed state now
// (client-plane.md 5.2 steps 3-5) and continues the Register path.
func (m *metadataActor) onLoginVerified(ctx actor.Context, v *loginVerified) {
	j := v.job
	if j.skipped {
		a := m.n.auth
		a.release(j)
		a.count(loginAbandoned)
		m.loginTurn(ctx, j.address)
		return
	}
	userID, reason := uint32(0), wire.EvictMalformedLogin
	if j.password != nil {
		id, r, stale := m.state.ConfirmPasswordLogin(*j.password, j.matched)
		if stale && j.rechecks < maxLoginRechecks {
			j.rechecks++
			c := m.state.PreparePasswordLogin(j.password.Username, j.password.Password)
			j.password, j.matched = &c, false
			m.verifyLogin(ctx, j)
			return
		}
		userID, reason = id, r
	}
	if reason != 0 && j.token != nil {
		// A body that decodes as a token login is judged as one; its
		// verdict is final (5.2 step 4).
		userID, reason = m.state.LoginWithTokenHash(j.tokenHash, m.n.opts.Clock())
	}
	m.n.auth.finish(j, reason != 0) // a check that ran counts for the throttle, abandoned or not
	m.n.auth.untrack(j)
	m.loginTurn(ctx, j.address)
	if j.abandoned.Load() {
		return // its connection is gone: nothing to answer or bind
	}
	if reason != 0 {
		m.reply(ctx, j.req, &replyOut{frame: eviction(j.req.hdr.Client, reason)})
		return
	}
	m.registerVerified(ctx, j.req, userID)
}

// replyLater answers req after d (a throttled login's held reply). The
// connection is busy with this request meanwhile, so a lockstep client
// waits instead of spinning; one timer per connection at most.
func (m *metadataActor) replyLater(req *clientRequest, r *replyOut, d time.Duration) {
	root, conn := m.n.root(), req.conn
	if d <= 0 {
		root.Send(conn, r)
		return
	}
	time.AfterFunc(d, func() { root.Send(conn, r) })
}
