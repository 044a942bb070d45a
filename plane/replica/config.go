package replicaplane

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"iggynode/internal/netaddr"
	"iggynode/wire"
)

// Defaults (replica-plane.md 3.1, 3.2, 10.3).
const (
	// DefaultPeerQueueCapacity is larger than the spec's 256 (3.2): one
	// link carries the traffic of every group the two nodes share, and a
	// mass election of thousands of quiet groups (a node lost, a cluster
	// restarted) overflowed 256 frames in a storm of retransmissions that
	// never settled. The queue grows as frames queue, so the bound costs
	// nothing idle; DefaultPeerQueueBytes bounds its memory.
	DefaultPeerQueueCapacity    = 16384
	DefaultPeerQueueBytes       = 256 << 20
	DefaultMaxBatch             = 256
	DefaultReconnectPeriod      = 5 * time.Second
	DefaultHandshakeGrace       = 10 * time.Second
	DefaultMaxInboundHandshakes = 256
	// MaxReplicas is the largest roster, and replica ids are below it
	// (Appendix B; vsr.MaxReplicas).
	MaxReplicas = 32
	// MinSharedSecretLen is the floor on cluster.auth secrets (10.1).
	MinSharedSecretLen = 32
)

// Peer is one roster entry as the replica plane needs it: the replica id
// (0..31, vsr.MaxReplicas) and the host:port of its tcp_replica port
// (10.2). The host is an IP or a host name, looked up at every dial
// (resolve.go), and is the TLS server name (3.7 rule 2). An empty Addr
// means "not known yet": the node is not dialed until SetRoster gives one.
type Peer struct {
	ID   uint8
	Addr string
}

// Config configures a Node. Zero values take the defaults above.
type Config struct {
	// Self is this node's replica id, 0..31.
	Self uint8
	// Roster is the first roster: distinct ids below MaxReplicas, at least
	// one, not necessarily contiguous (replica 1 removed from 0..4 leaves
	// {0,2,3,4}). It need not name Self: a node joining a running cluster
	// starts with the cluster's bootstrap roster, which does not, and
	// binds Listen. An entry for Self only gives the default listen
	// address. SetRoster replaces the roster while the node runs.
	Roster []Peer
	// Listen overrides the address to bind (default: Self's roster Addr).
	// Tests bind 127.0.0.1:0 and learn Addr() before the other nodes'
	// rosters are built; a joiner binds it because no roster names it yet.
	Listen string
	// ClusterName is hashed into the cluster id (3.3).
	ClusterName string

	// AuthEnabled turns on the MAC handshake of 3.6; SharedSecret (and
	// PreviousSharedSecret during a rotation) are the raw UTF-8 bytes of
	// cluster.auth.shared_secret / previous_shared_secret, each at least
	// 32 bytes, and different from each other.
	AuthEnabled          bool
	SharedSecret         []byte
	PreviousSharedSecret []byte
	// TLS, when set, wraps every replica connection in TLS 1.3 with ALPN
	// iggy-replica (3.7); it requires AuthEnabled. The same config serves
	// both roles: Certificates for the acceptor, RootCAs (or
	// InsecureSkipVerify for self_signed mode) for the dialer. MinVersion,
	// MaxVersion, NextProtos and (on the dialer) ServerName are overwritten.
	TLS *tls.Config
	// AllowInsecure lets a node without AuthEnabled listen beyond
	// loopback (cluster.allow_insecure). Start refuses that otherwise:
	// any process that reaches the port could join the replica plane.
	AllowInsecure bool

	// MaxFrameSize is message_bus.max_message_size (64 MiB).
	MaxFrameSize uint32
	// PeerQueueCapacity bounds each peer's outbound queue in frames
	// (16384), PeerQueueBytes in bytes (256 MiB; one frame is always let
	// in).
	PeerQueueCapacity int
	PeerQueueBytes    int
	// MaxBatch is the most frames one write coalesces (256).
	MaxBatch int
	// ReconnectPeriod is message_bus.reconnect_period (5 s).
	ReconnectPeriod time.Duration
	// HandshakeGrace bounds TLS plus the replica handshake (10 s).
	HandshakeGrace time.Duration
	// MaxInboundHandshakes bounds inbound handshakes in flight (256).
	MaxInboundHandshakes int

	// Resolver looks up the peers named by host name, at every dial
	// (default net.DefaultResolver).
	Resolver Resolver

	// Logger receives connection events (default slog.Default()).
	Logger *slog.Logger
}

func (c *Config) defaults() {
	if c.MaxFrameSize == 0 {
		c.MaxFrameSize = wire.DefaultMaxFrameSize
	}
	if c.PeerQueueCapacity <= 0 {
		c.PeerQueueCapacity = DefaultPeerQueueCapacity
	}
	if c.PeerQueueBytes <= 0 {
		c.PeerQueueBytes = DefaultPeerQueueBytes
	}
	if c.MaxBatch <= 0 {
		c.MaxBatch = DefaultMaxBatch
	}
	if c.ReconnectPeriod <= 0 {
		c.ReconnectPeriod = DefaultReconnectPeriod
	}
	if c.HandshakeGrace <= 0 {
		c.HandshakeGrace = DefaultHandshakeGrace
	}
	if c.MaxInboundHandshakes <= 0 {
		c.MaxInboundHandshakes = DefaultMaxInboundHandshakes
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Resolver == nil {
		c.Resolver = net.DefaultResolver
	}
}

// listenAddr is the address Start binds: Listen, else Self's roster
// entry, else "" (a joiner must say where it listens).
func (c *Config) listenAddr() string {
	if c.Listen != "" {
		return c.Listen
	}
	for _, p := range c.Roster {
		if p.ID == c.Self {
			return p.Addr
		}
	}
	return ""
}

func (c *Config) validate() error {
	if c.Self >= MaxReplicas {
		return fmt.Errorf("replicaplane: self id %d outside 0..%d", c.Self, MaxReplicas-1)
	}
	if err := validateRoster(c.Roster); err != nil {
		return err
	}
	if c.MaxFrameSize <= wire.HeaderSize {
		return fmt.Errorf("replicaplane: max frame size %d must exceed %d", c.MaxFrameSize, wire.HeaderSize)
	}
	if c.listenAddr() == "" {
		return errors.New("replicaplane: no listen address: neither Listen nor the own roster entry has one")
	}
	if !c.AuthEnabled && !c.AllowInsecure && !IsLoopback(c.listenAddr()) {
		return fmt.Errorf("replicaplane: refusing to listen on %s without cluster auth: any process that reaches it could join "+
			"the cluster; set cluster.auth (enabled, shared_secret) or, knowingly, cluster.allow_insecure = true", c.listenAddr())
	}
	if c.TLS != nil && !c.AuthEnabled {
		return errors.New("replicaplane: cluster TLS requires cluster auth (replica-plane.md 3.7)")
	}
	if c.TLS != nil && len(c.TLS.Certificates) == 0 && c.TLS.GetCertificate == nil {
		return errNoCertificate
	}
	if !c.AuthEnabled {
		return nil
	}
	if len(c.SharedSecret) < MinSharedSecretLen {
		return fmt.Errorf("replicaplane: shared secret must be at least %d bytes", MinSharedSecretLen)
	}
	// Empty means none: the TOML key left blank arrives as "", not nil.
	if len(c.PreviousSharedSecret) != 0 {
		if len(c.PreviousSharedSecret) < MinSharedSecretLen {
			return fmt.Errorf("replicaplane: previous shared secret must be at least %d bytes", MinSharedSecretLen)
		}
		if bytes.Equal(c.PreviousSharedSecret, c.SharedSecret) {
			return errors.New("replicaplane: previous shared secret equals the shared secret")
		}
	}
	return nil
}

// validateRoster checks a roster: at least one entry, every id below
// MaxReplicas and listed once. The ids need not be contiguous, and Self
// need not be among them (Config.Roster).
func validateRoster(roster []Peer) error {
	if len(roster) == 0 {
		return errors.New("replicaplane: empty roster, want at least one replica")
	}
	var seen [MaxReplicas]bool
	for _, p := range roster {
		if p.ID >= MaxReplicas {
			return fmt.Errorf("replicaplane: replica id %d outside 0..%d", p.ID, MaxReplicas-1)
		}
		if seen[p.ID] {
			return fmt.Errorf("replicaplane: replica id %d listed twice", p.ID)
		}
		seen[p.ID] = true
	}
	return nil
}

// IsLoopback reports whether a host:port binds loopback only
// (netaddr.IsLoopback, the rule every listener shares).
func IsLoopback(addr string) bool { return netaddr.IsLoopback(addr) }
