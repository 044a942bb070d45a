package clientplane

import (
	"errors"
	"io"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"iggynode/internal/framebuf"
	"iggynode/internal/stages"
	"iggynode/wire"
)

// Body buffers start at firstChunk (or the frame's size if smaller) and
// grow by growthFactor as bytes arrive: a client makes the node hold at
// most growthFactor times what it actually sent (plus firstChunk), and a
// large frame costs about a third of its size in copies. The steps below
// the frame's size are pool classes (pool.go), so they are recycled.
const (
	firstChunk   = 64 << 10
	growthFactor = 4
)

// errStopped ends a read that the connection's end interrupted.
var errStopped = errors.New("connection ending")

// connGuard applies the limits to one connection: its login state, the
// watchdog of its deadlines, and the frame reader that sizes buffers by
// the login state and the node's frame budget. Every transport uses it.
type connGuard struct {
	g         *Guard
	transport Transport
	remote    string

	loggedIn atomic.Bool
	// Guard-clock times: the header of the frame being read (0: none),
	// the header of the last frame read, when the connection came up or
	// last logged out.
	frameStart, lastFrame, loggedOutAt atomic.Int64
	// waitingBudget: the reader waits for budget; its own deadline ends
	// the wait (counted as ReasonBudget), not the watchdog.
	waitingBudget atomic.Bool
	// held is the budget the reader holds for the frame being read or
	// delivered; only the reader touches it.
	held int64
	// lastSize is the size of the last frame this connection delivered
	// whole (reader only): the next body starts at that much, since the
	// connection has shown it sends it, so a steady producer's frames are
	// read into one buffer without the growth copies.
	lastSize int
	// send checks a SendMessages batch as its bytes arrive, so its
	// messages are hashed while the rest is read (wire.SendCheck);
	// verdict is its verdict on the last frame read (reader only).
	send    wire.SendCheck
	verdict wire.SendVerdict
	// owner holds the last frame read when it is pooled (reader only).
	owner *framebuf.Buf

	// expire is the transport's action at a deadline; it reports whether
	// the connection ends (QUIC survives a frame deadline: only the
	// stream is abandoned).
	expire func(Reason) bool
	// pending counts requests delivered but not answered (nil: none
	// tracked): a client waiting for a reply is not idle.
	pending func() int
	// settle waits, before refusing a frame too large for a connection
	// not logged in, until the requests in flight are answered: one of
	// them may be the Register that logs it in (nil: no pipelining).
	settle func()

	mu       sync.Mutex
	timer    *time.Timer
	stopped  bool
	stop     chan struct{} // closed when the connection ends
	stopOnce sync.Once
	loginSig chan struct{} // a login-state change, for settle
}

func newConnGuard(g *Guard, t Transport, remote string, expire func(Reason) bool) *connGuard {
	c := &connGuard{g: g, transport: t, remote: remote, expire: expire,
		stop: make(chan struct{}), loginSig: make(chan struct{}, 1)}
	now := g.now()
	c.lastFrame.Store(now)
	c.loggedOutAt.Store(now)
	return c
}

// start arms the watchdog; the login deadline counts from now.
func (c *connGuard) start() {
	now := c.g.now()
	c.lastFrame.Store(now)
	c.loggedOutAt.Store(now)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.timer = time.AfterFunc(time.Hour, c.check)
	c.arm(now)
}

// close stops the watchdog, ends every wait and gives back the budget the
// reader still holds; the reader has returned.
func (c *connGuard) close() {
	c.stopWaits()
	c.mu.Lock()
	c.stopped = true
	if c.timer != nil {
		c.timer.Stop()
	}
	c.mu.Unlock()
	c.releaseHeld()
}

// stopWaits ends the reader's waits for budget or for a login to settle.
func (c *connGuard) stopWaits() { c.stopOnce.Do(func() { close(c.stop) }) }

func (c *connGuard) setLoggedIn(v bool) {
	if c.loggedIn.Swap(v) == v {
		return
	}
	now := c.g.now()
	if v {
		c.lastFrame.Store(now) // idle counts from the login
	} else {
		c.loggedOutAt.Store(now)
		c.poke() // the login deadline may now be the nearest
	}
	select {
	case c.loginSig <- struct{}{}:
	default:
	}
}

// poke makes the watchdog look again now.
func (c *connGuard) poke() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.stopped && c.timer != nil {
		c.timer.Reset(0)
	}
}

// check is the watchdog: it expires the connection at the first deadline
// passed, else sleeps until the nearest one.
func (c *connGuard) check() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return
	}
	now := c.g.now()
	if r, due := c.due(now); due {
		if r == ReasonFrameDeadline {
			c.frameStart.Store(0) // expired once; the reader starts the next
		}
		if c.expire(r) {
			c.stopped = true
			return
		}
	}
	c.arm(now)
}

// due reports the first deadline passed at now.
func (c *connGuard) due(now int64) (Reason, bool) {
	l := &c.g.limits
	if fs := c.frameStart.Load(); fs != 0 && l.FrameTimeout > 0 && !c.waitingBudget.Load() && now-fs >= int64(l.FrameTimeout) {
		return ReasonFrameDeadline, true
	}
	if !c.loggedIn.Load() {
		if l.LoginTimeout > 0 && now-c.loggedOutAt.Load() >= int64(l.LoginTimeout) {
			return ReasonLoginDeadline, true
		}
		return 0, false
	}
	if l.IdleTimeout > 0 && c.idle() && now-c.lastFrame.Load() >= int64(l.IdleTimeout) {
		return ReasonIdleTimeout, true
	}
	return 0, false
}

func (c *connGuard) idle() bool {
	return c.frameStart.Load() == 0 && (c.pending == nil || c.pending() == 0)
}

// arm sets the timer to the nearest deadline, and at most FrameTimeout
// ahead: a frame whose header arrives later is then still checked on time
// without the reader touching the timer.
func (c *connGuard) arm(now int64) {
	l := &c.g.limits
	next := int64(math.MaxInt64)
	if l.FrameTimeout > 0 {
		next = now + int64(l.FrameTimeout)
		if fs := c.frameStart.Load(); fs != 0 {
			next = min(next, fs+int64(l.FrameTimeout))
		}
	}
	switch {
	case !c.loggedIn.Load() && l.LoginTimeout > 0:
		next = min(next, c.loggedOutAt.Load()+int64(l.LoginTimeout))
	case c.loggedIn.Load() && l.IdleTimeout > 0 && c.idle():
		next = min(next, c.lastFrame.Load()+int64(l.IdleTimeout))
	case c.loggedIn.Load() && l.IdleTimeout > 0:
		next = min(next, now+int64(l.IdleTimeout)) // busy: look again later
	}
	if next == math.MaxInt64 {
		return
	}
	c.timer.Reset(time.Duration(max(next-now, int64(time.Millisecond))))
}

// readFrame checks a header that has arrived (transports.md 1.2 against
// limit, then the pre-login size) and reads the rest of the frame from
// body into a buffer that grows as bytes arrive, within the frame budget.
// The caller hands the frame on and then calls delivered.
func (c *connGuard) readFrame(hdr *wire.Header, body io.Reader, limit uint32) ([]byte, error) {
	if err := checkHeader(hdr, limit); err != nil {
		return nil, err
	}
	start := c.g.now()
	c.frameStart.Store(start)
	defer func() {
		c.frameStart.Store(0)
		c.lastFrame.Store(start)
	}()
	if hdr.Size() > PreLoginMaxFrameSize && !c.loggedIn.Load() {
		if c.settle != nil {
			c.settle()
		}
		if !c.loggedIn.Load() {
			c.g.hit(ReasonPreLoginFrame, c.transport, c.remote)
			return nil, limitErr(ReasonPreLoginFrame)
		}
	}
	large := hdr.Size() >= stages.LargeFrame
	if large {
		stages.Mark(stages.Header)
	}
	buf, err := c.readBody(hdr, body, start)
	if large && err == nil {
		stages.Mark(stages.BodyRead)
	}
	if err != nil {
		c.releaseHeld()
	}
	return buf, err
}

// readBody copies the header and reads size-256 body bytes, growing the
// buffer by growthFactor from firstChunk.
func (c *connGuard) readBody(hdr *wire.Header, body io.Reader, start int64) ([]byte, error) {
	size := int(hdr.Size())
	buf, err := c.grow(nil, min(size, max(firstChunk, c.lastSize)), size, start)
	if err != nil {
		return nil, err
	}
	copy(buf, hdr[:])
	filled := wire.HeaderSize
	c.send.Start(hdr)
	for filled < size {
		if filled == len(buf) {
			if buf, err = c.grow(buf, min(size, len(buf)*growthFactor), size, start); err != nil {
				return nil, err
			}
		}
		n, err := body.Read(buf[filled:])
		if filled += n; n > 0 && filled < size {
			c.send.Advance(buf[:filled])
		}
		switch {
		case err == nil:
		case filled == size && errors.Is(err, io.EOF):
		case errors.Is(err, io.EOF):
			c.dropFrame(buf)
			return nil, io.ErrUnexpectedEOF
		default:
			c.dropFrame(buf)
			return nil, err
		}
	}
	c.lastSize = size
	c.verdict = c.send.Verdict(buf)
	return buf, nil
}

// takeOwner is what holds the frame just read when its buffer is pooled
// (nil: a plain allocation); the session takes over its reference.
func (c *connGuard) takeOwner() *framebuf.Buf {
	o := c.owner
	c.owner = nil
	return o
}

// dropFrame recycles a frame that will not be delivered.
func (c *connGuard) dropFrame(buf []byte) {
	if o := c.owner; o != nil && o.Holds(buf) {
		c.owner = nil
		o.Release() // nobody else has seen it
		return
	}
	putFrame(buf)
}

// takeVerdict is the SendCheck verdict on the frame just read.
func (c *connGuard) takeVerdict() wire.SendVerdict {
	v := c.verdict
	c.verdict = wire.SendVerdict{}
	return v
}

// grow replaces buf by one of n bytes holding its contents, reserving the
// new buffer in the budget first (waiting until the frame deadline) and
// releasing the old one after the copy. The last step (n == size) is
// exact; the others come from the pool.
func (c *connGuard) grow(buf []byte, n, size int, start int64) ([]byte, error) {
	// Reserved before it is allocated: a header alone never makes the node
	// allocate past the budget.
	want := n
	if class, ok := poolClass(n); ok && n != size {
		want = 1 << (class + minPoolShift)
	} else if pooled, ok := framebuf.SizeOf(n); ok && n == size {
		want = pooled
	}
	if err := c.reserve(int64(want), start); err != nil {
		return nil, err
	}
	var next []byte
	switch {
	case n != size:
		next = GetFrame(n)[:n]
	default:
		// The frame itself: from the pool of request buffers, which the
		// partition recycles once it no longer needs the bytes.
		if c.owner = framebuf.Get(n); c.owner != nil {
			next = c.owner.Bytes()
		} else {
			next = make([]byte, n)
		}
	}
	copy(next, buf)
	if buf != nil {
		putFrame(buf)
		c.g.budget.release(int64(cap(buf)))
		c.held -= int64(cap(buf))
	}
	return next, nil
}

// reserve takes n bytes of budget, waiting at most until the frame
// deadline (no wait without one).
func (c *connGuard) reserve(n int64, start int64) error {
	var deadline time.Time
	if ft := c.g.limits.FrameTimeout; ft > 0 {
		deadline = c.g.epoch.Add(time.Duration(start) + ft)
	}
	ok, _ := c.g.budget.reserve(n, c.held, time.Time{}, nil)
	if !ok && !deadline.IsZero() {
		c.waitingBudget.Store(true)
		var timedOut bool
		ok, timedOut = c.g.budget.reserve(n, c.held, deadline, c.stop)
		c.waitingBudget.Store(false)
		if !ok && !timedOut {
			return errStopped
		}
	}
	if !ok {
		c.g.hit(ReasonBudget, c.transport, c.remote)
		return limitErr(ReasonBudget)
	}
	c.held += n
	return nil
}

// delivered gives back the budget of the frame just handed on (or
// dropped): it is no longer the edge's.
func (c *connGuard) delivered() { c.releaseHeld() }

func (c *connGuard) releaseHeld() {
	c.g.budget.release(c.held)
	c.held = 0
}
