package actors

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"iggynode/client"
	"iggynode/config"
	"iggynode/metadata"
	"iggynode/wire"
)

// clientFrom is client options that dial n from the local address ip
// (127.0.0.0/8 is all loopback), so one process plays several remote
// addresses.
func clientFrom(n *Node, ip, username, password string) client.Options {
	return client.Options{Address: n.TCPAddr(), Username: username, Password: password, StayOnNode: true,
		Dialer: &client.TCPTransport{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}}
}

// loginAttempts reads iggy.login.attempts by outcome.
func loginAttempts(t *testing.T, reader *sdkmetric.ManualReader) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if sum, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == "iggy.login.attempts" {
				for _, dp := range sum.DataPoints {
					v, _ := dp.Attributes.Value("outcome")
					out[v.AsString()] = dp.Value
				}
			}
		}
	}
	return out
}

// startAuthNode starts one node with tune applied to its [login] section
// and a meter reader.
func startAuthNode(t *testing.T, tune func(*config.Login), verify func(hash, password string) bool) (*Node, *sdkmetric.ManualReader) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	nodes := startNodes(t, 1, func(o *Options) {
		if tune != nil {
			tune(&o.Config.Login)
		}
		o.MeterProvider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
		o.verifyPassword = verify
	})
	return nodes[0], reader
}

// Issue 17: a flood of wrong-password logins for root from 127.0.0.2 is
// throttled (the flooders are answered TransientNotAccepted), while root
// logs in from 127.0.0.1 and a logged-in connection reads: one address
// costs the others nothing, even guessing the same user's password.
func TestLoginFloodFromOneAddressCostsOthersNothing(t *testing.T) {
	n, reader := startAuthNode(t, func(l *config.Login) { l.Throttle.MaxDelay = config.Duration(time.Second) }, nil)
	ctx, reader0 := rootClient(t, n)
	if _, err := reader0.CreateStream(ctx, "kept", nil); err != nil {
		t.Fatal(err)
	}

	floodCtx, stopFlood := context.WithTimeout(context.Background(), 30*time.Second)
	defer stopFlood()
	var throttled, refused, wrong atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := client.New(clientFrom(n, "127.0.0.2", "", ""))
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			for floodCtx.Err() == nil {
				_, err := c.Login(floodCtx, "iggy", "not-the-password")
				var ev *wire.EvictionError
				switch {
				case errors.Is(err, wire.ErrTransientNotAccepted):
					throttled.Add(1)
				case errors.As(err, &ev) && ev.Reason == wire.EvictInvalidCredentials:
					refused.Add(1)
				case err == nil:
					t.Error("a wrong password logged in")
				default:
					wrong.Add(1)
				}
			}
		}()
	}
	for deadline := time.Now().Add(20 * time.Second); throttled.Load() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the flood was never throttled (%d refused)", refused.Load())
		}
	}

	// During the flood: root logs in from 127.0.0.1, and the connection
	// that was logged in before reads.
	for i := range 3 {
		c, err := client.Connect(ctx, clientFrom(n, "127.0.0.1", "iggy", "iggy"))
		if err != nil {
			t.Fatalf("login %d from another address during the flood: %v", i, err)
		}
		c.Close()
		if streams, err := reader0.GetStreams(ctx); err != nil || len(streams) != 1 {
			t.Fatalf("read %d during the flood: %v, %v", i, streams, err)
		}
	}
	stopFlood()
	wg.Wait()
	if refused.Load() == 0 {
		t.Error("no flood attempt was verified and refused")
	}
	got := loginAttempts(t, reader)
	if got["throttled"] == 0 || got["bad_credentials"] == 0 || got["ok"] < 4 {
		t.Errorf("iggy.login.attempts = %v; want throttled, bad_credentials and at least 4 ok", got)
	}
	t.Logf("flood: %d throttled, %d refused, %d other errors; metrics %v", throttled.Load(), refused.Load(), wrong.Load(), got)
}

// blockingVerifier holds the verification of one password until release
// is closed; entered is closed when it starts. Every other check is the
// real one.
type blockingVerifier struct {
	password    string
	once        sync.Once
	releaseOnce sync.Once
	entered     chan struct{}
	release     chan struct{}
}

// open lets the held verification finish (idempotent). Tests register it
// as a cleanup after starting the node, so a failing test cannot leave
// the node's Close waiting on the worker.
func (b *blockingVerifier) open() { b.releaseOnce.Do(func() { close(b.release) }) }

func newBlockingVerifier(password string) *blockingVerifier {
	return &blockingVerifier{password: password, entered: make(chan struct{}), release: make(chan struct{})}
}

func (b *blockingVerifier) verify(hash, password string) bool {
	if password == b.password {
		first := false
		b.once.Do(func() { first = true })
		if first {
			close(b.entered)
			<-b.release
		}
	}
	return metadata.VerifyPassword(hash, password)
}

func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(20 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// loginInBackground connects with opts (closing the client at once) and
// reports the outcome on the channel.
func loginInBackground(ctx context.Context, opts client.Options) <-chan error {
	done := make(chan error, 1)
	go func() {
		c, err := client.Connect(ctx, opts)
		if err == nil {
			c.Close()
		}
		done <- err
	}()
	return done
}

// waitUntil polls cond for 10 s, failing with what when it stays false.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal(what)
		}
	}
}

// The metadata actor keeps serving reads and committing writes while a
// login's verification is stuck on the pool: the check runs off its
// mailbox (DESIGN.md "Scale and budgets").
func TestMetadataServesWhileAVerificationIsSlow(t *testing.T) {
	slow := newBlockingVerifier("slow-password")
	n, _ := startAuthNode(t, func(l *config.Login) { l.VerifyWorkers = 1 }, slow.verify)
	t.Cleanup(slow.open)
	ctx, root := rootClient(t, n)

	loginDone := loginInBackground(ctx, clientFrom(n, "127.0.0.2", "iggy", "slow-password"))
	waitClosed(t, slow.entered, "the slow verification to start")

	if _, err := root.CreateStream(ctx, "while-verifying", nil); err != nil {
		t.Fatalf("write while a verification is slow: %v", err)
	}
	if streams, err := root.GetStreams(ctx); err != nil || len(streams) != 1 {
		t.Fatalf("read while a verification is slow: %v, %v", streams, err)
	}
	select {
	case err := <-loginDone:
		t.Fatalf("the slow login finished before its verification: %v", err)
	default:
	}
	slow.open()
	var ev *wire.EvictionError
	if err := <-loginDone; !errors.As(err, &ev) || ev.Reason != wire.EvictInvalidCredentials {
		t.Fatalf("slow wrong password: %v, want Eviction(InvalidCredentials)", err)
	}
}

// A password changed while a login's verification is in flight: the
// check verified against the old hash is stale when it comes back, is
// verified again against the new one, and the old password does not bind
// (issue 17: nothing stale binds).
func TestLoginVerifiedAgainstAChangedPasswordDoesNotBind(t *testing.T) {
	slow := newBlockingVerifier("old-password")
	n, _ := startAuthNode(t, nil, slow.verify)
	t.Cleanup(slow.open)
	ctx, root := rootClient(t, n)
	if _, err := root.CreateUser(ctx, "alice", "old-password", wire.UserActive, nil); err != nil {
		t.Fatal(err)
	}

	loginDone := loginInBackground(ctx, clientFrom(n, "127.0.0.2", "alice", "old-password"))
	waitClosed(t, slow.entered, "alice's verification to start")
	if err := root.ChangePassword(ctx, wire.Named("alice"), "old-password", "new-password"); err != nil {
		t.Fatal(err)
	}
	slow.open()
	var ev *wire.EvictionError
	if err := <-loginDone; !errors.As(err, &ev) || ev.Reason != wire.EvictInvalidCredentials {
		t.Fatalf("login with the replaced password: %v, want Eviction(InvalidCredentials)", err)
	}
	c, err := client.Connect(ctx, clientFrom(n, "127.0.0.3", "alice", "new-password"))
	if err != nil {
		t.Fatalf("login with the new password: %v", err)
	}
	c.Close()
}

// With every worker busy and the queue full, a login is answered
// TransientNotAccepted at once (client-plane.md 5.2 step 8's "cannot
// accept now"), counted as pool_full.
func TestLoginWithTheVerificationQueueFullIsNotAccepted(t *testing.T) {
	slow := newBlockingVerifier("slow-password")
	n, reader := startAuthNode(t, func(l *config.Login) {
		l.VerifyWorkers, l.VerifyQueue, l.Throttle.Enabled = 1, 1, false
	}, slow.verify)
	t.Cleanup(slow.open)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	holder := loginInBackground(ctx, clientFrom(n, "127.0.0.2", "iggy", "slow-password")) // holds the only worker
	waitClosed(t, slow.entered, "the worker to be held")
	queued := loginInBackground(ctx, clientFrom(n, "127.0.0.3", "iggy", "iggy")) // fills the queue
	waitUntil(t, "the second login never queued", func() bool { return n.refs.tel.loginQueued.Load() == 1 })
	_, err := client.Connect(ctx, clientFrom(n, "127.0.0.4", "iggy", "iggy"))
	if !errors.Is(err, wire.ErrTransientNotAccepted) {
		t.Fatalf("login with the queue full: %v, want TransientNotAccepted", err)
	}
	if got := loginAttempts(t, reader); got["pool_full"] == 0 {
		t.Errorf("iggy.login.attempts = %v, want pool_full counted", got)
	}
	slow.open()
	<-holder
	<-queued
}

// The throttle keys an address without its port, and an IPv6 address by
// its /64.
func TestThrottleAddressKeys(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.2:5000":                 "127.0.0.2",
		"[::ffff:10.1.2.3]:80":           "10.1.2.3",
		"[2001:db8:1:2:3:4:5:6]:443":     "2001:db8:1:2::/64",
		"[2001:db8:1:2:ffff::1%eth0]:80": "2001:db8:1:2::/64",
		"not an address":                 "not an address",
	} {
		if got := throttleAddress(in); got != want {
			t.Errorf("throttleAddress(%q) = %q, want %q", in, got, want)
		}
	}
}

// countingVerifier counts the checks of each password and holds the
// first check of held until open is called; every check is the real one.
type countingVerifier struct {
	*blockingVerifier
	mu     sync.Mutex
	checks map[string]int
}

func (c *countingVerifier) verify(hash, password string) bool {
	c.mu.Lock()
	c.checks[password]++
	c.mu.Unlock()
	return c.blockingVerifier.verify(hash, password)
}

func (c *countingVerifier) count(password string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.checks[password]
}

// A login whose client gave up (its connection closed while the login
// waited for its address's turn, or for a worker) is never verified and
// holds no turn: the address's next login is judged as soon as the check
// ahead of it ends. Without this a client that times out and reconnects
// piles checks nobody waits for in front of its own retry, and on a slow
// CPU no login finishes within the client's timeout.
func TestALoginWhoseConnectionClosedIsNeverVerified(t *testing.T) {
	v := &countingVerifier{blockingVerifier: newBlockingVerifier("slow-password"), checks: map[string]int{}}
	n, reader := startAuthNode(t, func(l *config.Login) { l.VerifyWorkers = 1 }, v.verify)
	t.Cleanup(v.open)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	held := loginInBackground(ctx, clientFrom(n, "127.0.0.2", "iggy", "slow-password"))
	waitClosed(t, v.entered, "the worker and 127.0.0.2's turn to be held")

	// giveUp starts a login and closes its connection once until says it
	// reached the node.
	giveUp := func(ip, password, where string, until func() bool) {
		t.Helper()
		loginCtx, stop := context.WithCancel(ctx)
		done := loginInBackground(loginCtx, clientFrom(n, ip, "iggy", password))
		waitUntil(t, "the login never got "+where, until)
		stop()
		if err := <-done; err == nil {
			t.Fatalf("the login %s logged in", where)
		}
	}
	tel := n.refs.tel
	giveUp("127.0.0.2", "iggy", "in its address's queue", func() bool { return tel.loginWaiting.Load() == 1 })
	waitUntil(t, "the closed connection's login still waits for its address's turn", func() bool { return tel.loginWaiting.Load() == 0 })
	giveUp("127.0.0.3", "gone-queued", "in the worker's queue", func() bool { return tel.loginQueued.Load() == 1 })

	v.open()
	var ev *wire.EvictionError
	if err := <-held; !errors.As(err, &ev) || ev.Reason != wire.EvictInvalidCredentials {
		t.Fatalf("held wrong password: %v, want Eviction(InvalidCredentials)", err)
	}
	// 127.0.0.2's turn passed on: a new login from it is judged at once.
	c, err := client.Connect(ctx, clientFrom(n, "127.0.0.2", "iggy", "iggy"))
	if err != nil {
		t.Fatalf("login after the abandoned ones: %v", err)
	}
	c.Close()
	if got := v.count("iggy"); got != 1 {
		t.Errorf("the right password was verified %d times, want once (the abandoned waiting login never)", got)
	}
	if got := v.count("gone-queued"); got != 0 {
		t.Errorf("the abandoned queued login was verified %d times, want never", got)
	}
	waitUntil(t, "iggy.login.attempts counts no 2 abandoned", func() bool { return loginAttempts(t, reader)["abandoned"] == 2 })
}
