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
	// MaxReplicas is the largest roster (Appendix B).
	MaxReplicas = 32
	// MinSharedSecretLen is the floor on cluster.auth secrets (10.1).
	MinSharedSecretLen = 32
)

// Peer is one roster entry as the replica plane needs it: the replica id
// and the host:port of its tcp_replica port (10.2). The host is an IP or
// a host name, looked up at every dial (resolve.go), and is the TLS
// server name (3.7 rule 2). An empty Addr means "not known yet": the node
// is not dialed until SetRoster gives one.
type Peer struct {
	ID   uint8
	Addr string
}

// Config configures a Node. Zero values take the defaults above.
type Config struct {
	// Self is this node's replica id; it must appear in Roster.
	Self uint8
	// Roster lists every replica, this one included, with ids 0..n-1 each
	// exactly once; n is replica_count (0.3, 10.2).
	Roster []Peer
	// Listen overrides the address to bind (default: Self's roster Addr),
	// so that tests can bind 127.0.0.1:0 and learn Addr() before the
	// other nodes' rosters are built.
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

// listenAddr is the address Start binds.
func (c *Config) listenAddr() string {
	if c.Listen != "" {
		return c.Listen
	}
	return c.Roster[c.Self].Addr
}

func (c *Config) validate() error {
	if err := validateRoster(c.Self, c.Roster); err != nil {
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

// validateRoster checks ids 0..n-1 each once, n <= 32, self among them,
// and returns nil with the roster sorted in place by id (so Roster[id] is
// that replica).
func validateRoster(self uint8, roster []Peer) error {
	n := len(roster)
	if n == 0 || n > MaxReplicas {
		return fmt.Errorf("replicaplane: roster of %d replicas, want 1..%d", n, MaxReplicas)
	}
	seen := make([]bool, n)
	for _, p := range roster {
		if int(p.ID) >= n {
			return fmt.Errorf("replicaplane: replica id %d outside 0..%d", p.ID, n-1)
		}
		if seen[p.ID] {
			return fmt.Errorf("replicaplane: replica id %d listed twice", p.ID)
		}
		seen[p.ID] = true
	}
	if int(self) >= n {
		return fmt.Errorf("replicaplane: self id %d not in the roster", self)
	}
	for i := 0; i < n; i++ {
		for roster[i].ID != uint8(i) {
			j := roster[i].ID
			roster[i], roster[j] = roster[j], roster[i]
		}
	}
	return nil
}

// IsLoopback reports whether a host:port binds loopback only
// (netaddr.IsLoopback, the rule every listener shares).
func IsLoopback(addr string) bool { return netaddr.IsLoopback(addr) }
