package clientplane

import (
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Limits keep a hostile client from exhausting the node (package doc,
// "Limits"). Zero caps and timeouts are disabled; a zero FrameBudget takes
// DefaultFrameBudget.
type Limits struct {
	MaxConnections           int // per node, every transport together
	MaxConnectionsPerAddress int // per remote IP
	// LoginTimeout bounds the time from a connection being up (or its
	// last logout) to a successful Register.
	LoginTimeout time.Duration
	// IdleTimeout closes a logged-in connection that sent no frame for
	// this long and has no request waiting for its reply.
	IdleTimeout time.Duration
	// FrameTimeout bounds reading one frame once its header is in
	// (slowloris).
	FrameTimeout time.Duration
	// FrameBudget caps the bytes held by partially read frames on the
	// whole node.
	FrameBudget int64
}

// DefaultFrameBudget is the node-wide cap on bytes held by partially read
// frames: four maximum-size frames.
const DefaultFrameBudget = 256 << 20

// DefaultLimits are the shipped `[limits]` values (config package doc).
func DefaultLimits() Limits {
	return Limits{
		MaxConnections:           8192,
		MaxConnectionsPerAddress: 1024,
		LoginTimeout:             30 * time.Second,
		IdleTimeout:              5 * time.Minute,
		FrameTimeout:             30 * time.Second,
		FrameBudget:              DefaultFrameBudget,
	}
}

// PreLoginMaxFrameSize is the largest frame accepted before login: the
// largest Register request (client-plane.md 5.2) with every field at its
// codec maximum:
//
//	header                                          256
//	ClientVersionInfo: u32 + Name + Name            4 + 256 + 256 = 516
//	password shape: username Name + password Str8   256 + 256 = 512
//	  (the token shape, one Str8, is smaller: 256)
//	context Str32: u32 length + contextAllowance    4 + 1024
//	                                                ----
//	                                                2312
//
// context has no bound in the spec; the SDKs send it empty, and 1 KiB is
// room for any client metadata. Ping, Logout and the requests answered
// Unauthenticated or NoSession before login need no more.
const PreLoginMaxFrameSize = 256 + (4 + 256 + 256) + (256 + 256) + (4 + contextAllowance)

const contextAllowance = 1024

// Reason says why the edge refused or closed a connection (or, on QUIC,
// abandoned a stream) at a limit.
type Reason uint8

const (
	ReasonNodeCap       Reason = iota // MaxConnections reached
	ReasonAddressCap                  // MaxConnectionsPerAddress reached
	ReasonLoginDeadline               // no Register within LoginTimeout
	ReasonIdleTimeout                 // logged in, no frame within IdleTimeout
	ReasonFrameDeadline               // a frame not complete within FrameTimeout
	ReasonPreLoginFrame               // a frame over PreLoginMaxFrameSize before login
	ReasonBudget                      // no FrameBudget left within the frame deadline
	numReasons
)

// Reasons lists every Reason, for metrics.
var Reasons = []Reason{ReasonNodeCap, ReasonAddressCap, ReasonLoginDeadline, ReasonIdleTimeout,
	ReasonFrameDeadline, ReasonPreLoginFrame, ReasonBudget}

func (r Reason) String() string {
	switch r {
	case ReasonNodeCap:
		return "node_cap"
	case ReasonAddressCap:
		return "address_cap"
	case ReasonLoginDeadline:
		return "login_deadline"
	case ReasonIdleTimeout:
		return "idle_timeout"
	case ReasonFrameDeadline:
		return "frame_deadline"
	case ReasonPreLoginFrame:
		return "pre_login_frame"
	case ReasonBudget:
		return "budget"
	}
	return "unknown"
}

// limitError is the error a connection (or QUIC stream) ends with at a
// limit.
type limitError struct{ reason Reason }

func (e *limitError) Error() string { return "limit reached: " + e.reason.String() }

func limitErr(r Reason) error { return &limitError{reason: r} }

// reasonOf is the Reason of a limit error.
func reasonOf(err error) (Reason, bool) {
	var le *limitError
	if errors.As(err, &le) {
		return le.reason, true
	}
	return 0, false
}

// Guard is the node-wide state of the limits, shared by every listener of
// a node: connection counts, the frame budget and the counters that
// telemetry reads.
type Guard struct {
	limits Limits
	log    *slog.Logger
	budget frameBudget

	mu     sync.Mutex
	total  int
	byAddr map[netip.Addr]int

	counts   [numReasons]atomic.Int64
	lastWarn [numReasons]atomic.Int64 // monotonic ns of the last Warn per reason
	warned   [numReasons]atomic.Int64 // count at the last Warn
	epoch    time.Time                // the monotonic clock's origin
}

// NewGuard makes the shared state for limits; log may be nil.
func NewGuard(l Limits, log *slog.Logger) *Guard {
	if l.FrameBudget <= 0 {
		l.FrameBudget = DefaultFrameBudget
	}
	if log == nil {
		log = slog.Default()
	}
	g := &Guard{limits: l, log: log, byAddr: map[netip.Addr]int{}, epoch: time.Now()}
	g.budget.init(l.FrameBudget)
	return g
}

// Limits are the limits the guard applies.
func (g *Guard) Limits() Limits { return g.limits }

// Count is how many connections (QUIC: streams, for the frame reasons)
// were refused or closed for r.
func (g *Guard) Count(r Reason) int64 { return g.counts[r].Load() }

// PartialFrameBytes is the budget in use: bytes held by frames being read.
func (g *Guard) PartialFrameBytes() int64 { return g.budget.held.Load() }

// Connections is the number of admitted connections.
func (g *Guard) Connections() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.total
}

// now is the monotonic clock in ns since the guard was made.
func (g *Guard) now() int64 { return int64(time.Since(g.epoch)) }

// warnEvery is how often a limit reached again is logged at Warn.
const warnEvery = time.Minute

// hit counts one refusal for r: Debug per connection, Warn at most once
// a minute per reason with the count since the last Warn.
func (g *Guard) hit(r Reason, transport Transport, remote string) {
	n := g.counts[r].Add(1)
	g.log.Debug("client connection refused at a limit", "reason", r, "transport", transport, "remote", remote)
	now := g.now()
	last := g.lastWarn[r].Load()
	if last != 0 && now-last < int64(warnEvery) {
		return
	}
	if !g.lastWarn[r].CompareAndSwap(last, max(now, 1)) {
		return
	}
	since := n - g.warned[r].Swap(n)
	g.log.Warn("client connections refused or closed at a limit", "reason", r, "count", since, "total", n, "transport", transport)
}

// admit takes a connection slot for remote; release gives it back. It
// reports the cap that refused it otherwise.
func (g *Guard) admit(remote net.Addr) (release func(), reason Reason, ok bool) {
	ip := addrIP(remote)
	g.mu.Lock()
	defer g.mu.Unlock()
	if m := g.limits.MaxConnections; m > 0 && g.total >= m {
		return nil, ReasonNodeCap, false
	}
	if m := g.limits.MaxConnectionsPerAddress; m > 0 && ip.IsValid() && g.byAddr[ip] >= m {
		return nil, ReasonAddressCap, false
	}
	g.total++
	if ip.IsValid() {
		g.byAddr[ip]++
	}
	var once sync.Once
	return func() { once.Do(func() { g.leave(ip) }) }, 0, true
}

func (g *Guard) leave(ip netip.Addr) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.total--
	if !ip.IsValid() {
		return
	}
	if g.byAddr[ip]--; g.byAddr[ip] <= 0 {
		delete(g.byAddr, ip)
	}
}

// addrIP is the IP of a TCP or UDP address (an IPv4-mapped IPv6 address
// counts as its IPv4 one); invalid for anything else.
func addrIP(a net.Addr) netip.Addr {
	var ip net.IP
	switch a := a.(type) {
	case *net.TCPAddr:
		ip = a.IP
	case *net.UDPAddr:
		ip = a.IP
	default:
		if ap, err := netip.ParseAddrPort(a.String()); err == nil {
			return ap.Addr().Unmap()
		}
		return netip.Addr{}
	}
	addr, _ := netip.AddrFromSlice(ip)
	return addr.Unmap()
}
