package client

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"iggynode/wire"
)

// Client is a connection to one iggynode (or Iggy) server with its session.
// It is safe for concurrent use: requests are serialised, one in flight per
// connection (lockstep, transports.md 1.3).
type Client struct {
	opts      Options
	transport Transport

	mu         sync.Mutex
	conn       Conn
	addr       string   // the address currently (or last) dialled
	candidates []string // reconnect targets: the configured address, then healthy roster nodes
	// next indexes the candidate a reconnect tries next: the one after the
	// node last connected to, then onwards after each failed attempt. A
	// node that hangs (paused, cut off) eats a whole request deadline per
	// attempt, so the rotation must outlive the request that started it.
	next        int
	connectedAt time.Time
	closed      bool

	clientID    wire.U128
	session     uint64 // bound epoch; 0 = not logged in
	userID      uint32
	nextRequest uint64 // 5.3: the value the next metadata request will use
	creds       credentials

	wbuf []byte // command frames
	sbuf []byte // session frames (login, logout, roster) sent while wbuf holds a command

	partitions map[topicKey]uint32 // cached partition counts for client-side routing
	cursors    map[topicKey]uint32 // Balanced cursors
	groups     map[groupKey]*groupCursor

	lastRequest   atomic.Int64 // unix ns of the last request, for the heartbeat
	heartbeatOnce sync.Once
	stop          chan struct{}
}

type credentials struct {
	username, password, token string
}

func (c credentials) set() bool { return c.username != "" || c.token != "" }

// zeroHeader seeds a frame buffer: the header is stamped over it at send time.
var zeroHeader [wire.HeaderSize]byte

// New validates the options and returns a client that has not dialled yet;
// the first request (or Connect) dials.
func New(opts Options) (*Client, error) {
	opts = opts.withDefaults()
	t := opts.Dialer
	if t == nil {
		switch opts.Transport {
		case TransportTCP:
			tcp, err := NewTCPTransport(opts)
			if err != nil {
				return nil, err
			}
			t = tcp
		case TransportQUIC:
			quic, err := NewQUICTransport(opts)
			if err != nil {
				return nil, err
			}
			t = quic
		case TransportWS:
			ws, err := NewWSTransport(opts)
			if err != nil {
				return nil, err
			}
			t = ws
		case TransportHTTP:
			h, err := NewHTTPTransport(opts)
			if err != nil {
				return nil, err
			}
			t = h
		default:
			return nil, fmt.Errorf("client: unknown transport %q: %w", opts.Transport, wire.ErrInvalidConfiguration)
		}
	}
	if opts.Address == "" {
		return nil, fmt.Errorf("client: no server address: %w", wire.ErrInvalidServerAddress)
	}
	c := &Client{
		opts:        opts,
		transport:   t,
		addr:        opts.Address,
		candidates:  []string{opts.Address},
		nextRequest: 1,
		creds:       credentials{opts.Username, opts.Password, opts.PersonalAccessToken},
		wbuf:        make([]byte, 0, 64<<10),
		sbuf:        make([]byte, 0, 1024),
		partitions:  map[topicKey]uint32{},
		cursors:     map[topicKey]uint32{},
		groups:      map[groupKey]*groupCursor{},
		stop:        make(chan struct{}),
	}
	return c, nil
}

// Connect creates a client and connects it (Connect method).
func Connect(ctx context.Context, opts Options) (*Client, error) {
	c, err := New(opts)
	if err != nil {
		return nil, err
	}
	if err := c.Connect(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// ConnectString parses a connection string (transports.md 8) and connects.
func ConnectString(ctx context.Context, s string) (*Client, error) {
	opts, err := ParseConnectionString(s)
	if err != nil {
		return nil, err
	}
	return Connect(ctx, opts)
}

// Connect dials the server (with the configured retries) and, when the
// options carry credentials, logs in. It is a no-op on a connected client.
// The first successful dial starts the heartbeat (if configured); Close
// stops it.
func (c *Client) Connect(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return wire.ErrClientShutdown
	}
	if c.conn == nil {
		return c.connect(ctx, false)
	}
	return nil
}

// Close tears the connection down. The server logs the session out when the
// transport closes (transports.md 7.3). A closed client refuses requests.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	close(c.stop)
	c.dropConn()
	return nil
}

// Session reports the bound session epoch and user id (0, 0 when not
// logged in).
func (c *Client) Session() (session uint64, userID uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.session, c.userID
}

// Address is the server address the client is (or was last) connected to;
// it changes after a leader redirect.
func (c *Client) Address() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.addr
}

// newClientID mints 128 random bits, never zero (client-plane.md 5.1).
func newClientID() wire.U128 {
	var b [16]byte
	for {
		_, _ = rand.Read(b[:])
		id := wire.U128{Lo: binary.LittleEndian.Uint64(b[:]), Hi: binary.LittleEndian.Uint64(b[8:])}
		if !id.IsZero() {
			return id
		}
	}
}

// dial opens a connection to addr and resets the per-connection state.
// Lock held.
func (c *Client) dial(ctx context.Context, addr string) error {
	c.dropConn()
	ctx, cancel := c.bound(ctx)
	defer cancel()
	conn, err := c.transport.Dial(ctx, addr)
	if err != nil {
		return err
	}
	c.conn, c.addr, c.connectedAt = conn, addr, time.Now()
	c.next = 0
	for i, a := range c.candidates {
		if sameAddress(a, addr) {
			c.next = i + 1
			break
		}
	}
	c.clientID = newClientID()
	c.session, c.userID, c.nextRequest = 0, 0, 1
	c.heartbeatOnce.Do(func() {
		if c.opts.HeartbeatInterval > 0 {
			go c.heartbeat(c.opts.HeartbeatInterval)
		}
	})
	return nil
}

// dropConn closes the connection; the server releases the session with it.
// Lock held.
func (c *Client) dropConn() {
	if c.conn != nil {
		_ = c.conn.Close()
		c.conn = nil
	}
	c.session, c.userID = 0, 0
}

// connect dials with the configured retries and logs in with the stored
// credentials. A reconnect first waits out ReestablishAfter since the last
// connect. Lock held.
func (c *Client) connect(ctx context.Context, reconnect bool) error {
	if reconnect && !c.connectedAt.IsZero() {
		if wait := c.opts.Reconnect.ReestablishAfter - time.Since(c.connectedAt); wait > 0 {
			if err := sleep(ctx, wait); err != nil {
				return err
			}
		}
	}
	retries := c.opts.Reconnect.Retries
	for attempt := 0; ; attempt++ {
		addr := c.addr
		if reconnect || attempt > 0 {
			addr = c.candidates[c.next%len(c.candidates)]
			c.next++
		}
		err := c.dial(ctx, addr)
		if err == nil && c.creds.set() {
			if _, err = c.login(ctx, c.creds); err != nil {
				c.dropConn()
			}
		}
		if err == nil {
			return nil
		}
		if !redialable(err) || (retries >= 0 && attempt >= retries) || ctx.Err() != nil {
			return err
		}
		if err := sleep(ctx, c.opts.Reconnect.Interval); err != nil {
			return err
		}
	}
}

// redialable reports whether a connect failure is worth another attempt:
// the transport failed, not the server's judgement of the login.
func redialable(err error) bool {
	var d *DisconnectedError
	return errors.As(err, &d) || errors.Is(err, wire.ErrCannotEstablishConnection) ||
		errors.Is(err, wire.ErrTransientNotAccepted) || errors.Is(err, wire.ErrTransientNotCommitted)
}

// deadline is the request deadline: RequestTimeout from now, or ctx's
// deadline when that is sooner.
func (c *Client) deadline(ctx context.Context) time.Time {
	return deadlineFrom(ctx, time.Now(), c.opts.RequestTimeout)
}

// deadlineFrom is now + timeout, or ctx's deadline when that is sooner.
func deadlineFrom(ctx context.Context, now time.Time, timeout time.Duration) time.Time {
	limit := now.Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(limit) {
		return d
	}
	return limit
}

// bound derives a context that ends at the request deadline, for the rare
// paths (dialing, reconnecting) that hand a context to other code.
func (c *Client) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	limit := c.deadline(ctx)
	if d, ok := ctx.Deadline(); ok && !d.After(limit) {
		return ctx, noop
	}
	return context.WithDeadline(ctx, limit)
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// pause waits d unless that would pass the deadline or ctx ends first.
func pause(ctx context.Context, deadline time.Time, d time.Duration) error {
	if time.Now().Add(d).After(deadline) {
		return context.DeadlineExceeded
	}
	return sleep(ctx, d)
}

// heartbeat pings when the connection has been idle for an interval
// (client-plane.md 5.6). It never dials and skips a beat while a request is
// in flight (that request is liveness enough). Each ping gets half the
// interval, like the Go SDK (transports.md 7.2).
func (c *Client) heartbeat(interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
		if time.Since(time.Unix(0, c.lastRequest.Load())) < interval || !c.mu.TryLock() {
			continue
		}
		if c.conn != nil && !c.closed {
			ctx, cancel := context.WithTimeout(context.Background(), interval/2)
			_, _ = c.exchange(ctx, call{code: wire.CodePing, op: wire.OpNonReplicated, buf: c.frame(&c.sbuf, wire.Empty{})})
			cancel()
		}
		c.mu.Unlock()
	}
}
