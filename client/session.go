package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"iggynode/wire"
)

// Leader redirection after login (client-plane.md 7.15; transports.md 8.6).
const (
	maxRedirects       = 3
	leaderlessPoll     = 250 * time.Millisecond
	leaderlessPatience = 5 * time.Second
)

// Login authenticates with a username and password through the register
// handshake (client-plane.md 5.2). A bound session is logged out first (a
// failed logout aborts the login). The credentials are kept for automatic
// re-login after a reconnect. After the login the client reads the cluster
// roster and moves to the leader if it is elsewhere.
func (c *Client) Login(ctx context.Context, username, password string) (*wire.LoginRegisterResponse, error) {
	return c.loginWith(ctx, credentials{username: username, password: password})
}

// LoginWithToken authenticates with a personal access token (code 45).
func (c *Client) LoginWithToken(ctx context.Context, token string) (*wire.LoginRegisterResponse, error) {
	return c.loginWith(ctx, credentials{token: token})
}

func (c *Client) loginWith(ctx context.Context, cr credentials) (*wire.LoginRegisterResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, wire.ErrClientShutdown
	}
	if c.conn == nil {
		// Dial only: these credentials replace the stored ones.
		if err := c.dial(ctx, c.addr); err != nil {
			return nil, err
		}
	}
	return c.login(ctx, cr)
}

// Logout ends the bound session (operation 3, the next metadata request
// number, empty body; client-plane.md 5.5) and forgets the stored
// credentials. Without a session it does nothing.
func (c *Client) Logout(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return wire.ErrClientShutdown
	}
	if err := c.logout(ctx); err != nil {
		return err
	}
	c.creds = credentials{}
	return nil
}

// Ping sends code 1; it works before login (8.1.1).
func (c *Client) Ping(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, err := c.exchange(ctx, call{code: wire.CodePing, op: wire.OpNonReplicated, buf: c.frame(&c.wbuf, wire.Empty{}), retry: true})
	return err
}

// login registers on the current connection, then follows the leader.
// Lock held; the connection exists.
func (c *Client) login(ctx context.Context, cr credentials) (*wire.LoginRegisterResponse, error) {
	if c.session != 0 {
		if err := c.logout(ctx); err != nil {
			return nil, fmt.Errorf("client: logout before login: %w", err)
		}
	}
	for redirects := 0; ; redirects++ {
		resp, err := c.register(ctx, cr)
		if err != nil || redirects == maxRedirects || c.opts.StayOnNode {
			return resp, err
		}
		leader, err := c.leaderAddress(ctx)
		if err != nil {
			return nil, err
		}
		if leader == "" || sameAddress(leader, c.addr) {
			return resp, nil
		}
		if err := c.dial(ctx, leader); err != nil {
			return nil, fmt.Errorf("client: redirect to leader %s: %w", leader, err)
		}
	}
}

// register runs the handshake with a fresh client id: operation 1,
// request 0, session 0, body ClientVersionInfo + credentials; the reply's
// result count is stripped by the generic framing rules. Lock held.
func (c *Client) register(ctx context.Context, cr credentials) (*wire.LoginRegisterResponse, error) {
	info := wire.ClientVersionInfo{Version: wire.ProtocolVersion, SDKName: c.opts.SDKName, SDKVersion: c.opts.SDKVersion}
	var body request
	if cr.token != "" {
		body = wire.LoginRegisterWithPAT{ClientInfo: info, Token: cr.token}
	} else {
		body = wire.LoginRegister{ClientInfo: info, Username: cr.username, Password: cr.password}
	}
	if err := validate(body); err != nil {
		return nil, err
	}
	c.clientID = newClientID()
	c.session, c.userID = 0, 0
	rep, err := c.exchange(ctx, call{code: body.Code(), op: wire.OpRegister, buf: c.frame(&c.sbuf, body)})
	if err != nil {
		return nil, err
	}
	resp := new(wire.LoginRegisterResponse)
	if err := resp.Decode(rep.body); err != nil {
		return nil, fmt.Errorf("client: login reply: %w: %w", wire.ErrInvalidCommand, err)
	}
	if resp.Session == 0 {
		return nil, fmt.Errorf("client: login reply carries session 0: %w", wire.ErrInvalidSession)
	}
	c.session, c.userID, c.nextRequest = resp.Session, resp.UserID, 1
	c.creds = cr
	return resp, nil
}

// logout sends Logout when a session is bound and mints a fresh client id
// afterwards, like the Go SDK. Lock held.
func (c *Client) logout(ctx context.Context) error {
	if c.session == 0 || c.conn == nil {
		return nil
	}
	if _, err := c.exchange(ctx, call{code: wire.CodeLogoutUser, op: wire.OpLogout, buf: c.frame(&c.sbuf, wire.Empty{})}); err != nil {
		return err
	}
	c.session, c.userID, c.nextRequest = 0, 0, 1
	c.clientID = newClientID()
	return nil
}

// leaderAddress reads the roster (code 12) and returns the healthy
// leader's address for this transport when the roster has 2+ nodes, or ""
// to stay. A roster without a healthy leader is re-read every 250 ms for up
// to 5 s. A deny or an undecodable roster means stay; only a lost
// connection or an eviction is an error. Lock held.
func (c *Client) leaderAddress(ctx context.Context) (string, error) {
	deadline := time.Now().Add(leaderlessPatience)
	for {
		rep, err := c.exchange(ctx, call{code: wire.CodeGetClusterMetadata, op: wire.OpNonReplicated, buf: c.frame(&c.sbuf, wire.Empty{})})
		if err != nil {
			if sessionLost(err) {
				return "", err
			}
			return "", nil
		}
		var roster wire.ClusterMetadata
		if roster.Decode(rep.body) != nil || len(roster.Nodes) < 2 {
			return "", nil
		}
		c.rememberNodes(roster.Nodes)
		for _, n := range roster.Nodes {
			if n.Role == wire.RoleLeader && n.Status == wire.NodeHealthy {
				port := c.portOf(n)
				if port == 0 {
					return "", nil
				}
				return net.JoinHostPort(n.IP, strconv.Itoa(int(port))), nil
			}
		}
		if time.Now().Add(leaderlessPoll).After(deadline) || sleep(ctx, leaderlessPoll) != nil {
			return "", nil
		}
	}
}

// sessionLost reports errors after which the connection or the session is
// gone.
func sessionLost(err error) bool {
	var d *DisconnectedError
	var ev *wire.EvictionError
	var pe *ProtocolError
	return errors.As(err, &d) || errors.As(err, &ev) || (errors.As(err, &pe) && pe.Dropped)
}

// portOf picks a roster node's port for this client's transport.
func (c *Client) portOf(n wire.ClusterNode) uint16 {
	switch c.transport.Name() {
	case TransportQUIC:
		return n.QUICPort
	case TransportWS:
		return n.WebSocketPort
	case TransportHTTP:
		return n.HTTPPort
	}
	return n.TCPPort
}

// rememberNodes adds the healthy nodes' addresses to the reconnect
// candidates (7.15). Lock held.
func (c *Client) rememberNodes(nodes []wire.ClusterNode) {
	for _, n := range nodes {
		port := c.portOf(n)
		if n.Status != wire.NodeHealthy || port == 0 {
			continue
		}
		addr := net.JoinHostPort(n.IP, strconv.Itoa(int(port)))
		known := false
		for _, a := range c.candidates {
			known = known || sameAddress(a, addr)
		}
		if !known {
			c.candidates = append(c.candidates, addr)
		}
	}
}

// sameAddress compares host:port pairs as the Go SDK does (7.15): hosts
// lower-cased with localhost read as 127.0.0.1, IP literals by value, no
// DNS lookup; ports by number.
func sameAddress(a, b string) bool {
	ha, pa, errA := net.SplitHostPort(a)
	hb, pb, errB := net.SplitHostPort(b)
	if errA != nil || errB != nil {
		return strings.EqualFold(a, b)
	}
	na, errA := strconv.ParseUint(pa, 10, 16)
	nb, errB := strconv.ParseUint(pb, 10, 16)
	if errA != nil || errB != nil || na != nb {
		return false
	}
	return normalHost(ha) == normalHost(hb)
}

func normalHost(h string) string {
	h = strings.ToLower(h)
	if h == "localhost" {
		return "127.0.0.1"
	}
	if ip := net.ParseIP(h); ip != nil {
		return ip.String()
	}
	return h
}

// validate runs a request's codec checks before anything is sent.
func validate(body appender) error {
	if v, ok := body.(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			return fmt.Errorf("client: %w: %w", wire.ErrInvalidCommand, err)
		}
	}
	return nil
}
