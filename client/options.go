package client

import (
	"time"

	"iggynode/wire"
)

// Transport names, as connection strings spell them (transports.md 8.1).
const (
	TransportTCP  = "tcp"
	TransportQUIC = "quic"
	TransportWS   = "ws"
	TransportHTTP = "http"
)

// Defaults (transports.md 1.3, 8.2-8.4; client-plane.md 5.6).
const (
	DefaultRequestTimeout    = 30 * time.Second
	DefaultHeartbeatInterval = 5 * time.Second
	DefaultReconnectInterval = 1 * time.Second
	DefaultReestablishAfter  = 5 * time.Second
	DefaultSDKName           = "iggynode-go"
	DefaultSDKVersion        = "0.1.0"
)

// Options configures a Client. The zero value is usable: plain TCP, no
// reconnect, no heartbeat, 30 s request deadline. DefaultOptions and
// ParseConnectionString give the SDK defaults of transports.md 8.
type Options struct {
	// Transport is "tcp" (default when empty), "quic", "ws" or "http".
	Transport string
	// Address is host:port of the server to dial first.
	Address string

	// Username and Password, or PersonalAccessToken, enable auto-login on
	// connect and re-login after a reconnect.
	Username            string
	Password            string
	PersonalAccessToken string

	// TLS applies to TCP (TCP+TLS) and WebSocket (WSS); QUIC, always
	// encrypted, takes its settings from QUIC.
	TLS TLSOptions
	// NoDelay sets TCP_NODELAY on TCP sockets.
	NoDelay bool

	Reconnect ReconnectOptions
	// HeartbeatInterval is the idle time after which the client pings; 0
	// disables the heartbeat.
	HeartbeatInterval time.Duration
	// RequestTimeout bounds each request, including its replays; 0 means
	// DefaultRequestTimeout. A context deadline that is earlier wins.
	RequestTimeout time.Duration
	// LoginTimeout bounds a login (Register, including its replays) in
	// place of RequestTimeout: Argon2id on the server and, in a cluster, a
	// commit on the metadata group, both slow on a loaded node, so a client
	// that times sends out quickly need not retry logins forever; 0 means
	// RequestTimeout.
	LoginTimeout time.Duration
	// MaxFrameSize bounds reply frames; 0 means 64 MiB.
	MaxFrameSize uint32
	// StampRequestChecksums stamps Register, Logout and metadata requests
	// with XXH3-64(body), like the Rust SDK (client-plane.md 12.3). Off by
	// default, like the Go SDK.
	StampRequestChecksums bool
	// StayOnNode keeps the connection on the dialled node after login
	// instead of following the roster to the leader: reads are served by
	// any replica, partition writes are forwarded to the partition's
	// primary, and metadata writes on a backup are answered
	// TransientNotAccepted.
	StayOnNode bool
	// ServerBalanced sends Balanced partitioning to the server as is, so
	// the topic's server-side round-robin cursor (server-behaviour.md 5.1)
	// picks the partition, instead of this client's own cursor
	// (client-plane.md 14.2). A client's cursor starts at 0, so clients
	// that each send once (one CLI invocation per message) would all land
	// on partition 0; the server's cursor is shared by every connection.
	ServerBalanced bool
	// SDKName and SDKVersion travel in the login's ClientVersionInfo.
	SDKName    string
	SDKVersion string

	QUIC      QUICOptions
	WebSocket WebSocketOptions
	HTTP      HTTPOptions

	// Dialer, when set, replaces the built-in transport chosen by Transport
	// (how tests and other carriages plug in).
	Dialer Transport
}

// TLSOptions configures TCP+TLS and WSS (transports.md 3.3).
type TLSOptions struct {
	Enabled bool
	// Domain is the server name sent and verified; empty means the host
	// part of the address.
	Domain string
	// CAFile is a PEM file of trusted CAs; empty means the system roots.
	CAFile string
	// InsecureSkipVerify turns certificate verification off. TCP+TLS built
	// from a connection string always verifies; WSS verifies only with
	// tls_validate_certificate=true.
	InsecureSkipVerify bool
}

// ReconnectOptions governs redialing after a dropped connection.
type ReconnectOptions struct {
	// Retries is the number of redial attempts after the first one fails;
	// negative means unlimited. Zero disables reconnecting.
	Retries int
	// Interval is the pause between attempts.
	Interval time.Duration
	// ReestablishAfter is the minimum time since the last connect before a
	// reconnect dials again (the client waits out the remainder).
	ReestablishAfter time.Duration
}

// QUICOptions are the iggy+quic:// options (transports.md 8.3);
// NewQUICTransport says how each maps onto quic-go. A zero numeric field
// leaves quic-go's default, except MaxIdleTimeout, where 0 disables the
// client's idle timeout as the connection string's 0 does.
type QUICOptions struct {
	ResponseBufferSize       uint64
	MaxConcurrentBidiStreams uint64
	DatagramSendBufferSize   uint64
	InitialMTU               uint16
	SendWindow               uint64
	ReceiveWindow            uint64
	KeepAliveInterval        time.Duration // 0 disables
	MaxIdleTimeout           time.Duration // 0 disables
	// ValidateCertificate forces verification on. SkipCertificateVerification
	// turns it off: the zero Options verify (against CAFile or the system
	// roots), while connection strings and DefaultOptions follow
	// transports.md 8.3 (validate_certificate defaults to false).
	ValidateCertificate         bool
	SkipCertificateVerification bool
	// ServerName (empty: "localhost"), ClientAddress (the UDP ip:port the
	// client binds; empty: "127.0.0.1:0") and CAFile (PEM CAs trusted when
	// ValidateCertificate is set; empty: the system roots) cannot be set
	// from a connection string.
	ServerName    string
	ClientAddress string
	CAFile        string
}

// WebSocketOptions are the iggy+ws:// frame-layer options (transports.md
// 8.4); NewWSTransport says how each maps onto gorilla/websocket. Zero
// leaves the library default.
type WebSocketOptions struct {
	ReadBufferSize       uint64
	WriteBufferSize      uint64
	MaxWriteBufferSize   uint64 // 0 = unlimited
	MaxMessageSize       uint64
	MaxFrameSize         uint64
	AcceptUnmaskedFrames bool
}

// HTTPOptions are the iggy+http:// options (transports.md 8.4).
type HTTPOptions struct {
	Retries uint32
}

// DefaultOptions returns the SDK defaults for a transport (transports.md
// 8.2-8.4): unlimited reconnects every 1 s, reestablish after 5 s, heartbeat
// 5 s, TLS verification on for TCP and off for WSS.
func DefaultOptions(transport string) Options {
	o := Options{
		Transport:         transport,
		Reconnect:         ReconnectOptions{Retries: -1, Interval: DefaultReconnectInterval, ReestablishAfter: DefaultReestablishAfter},
		HeartbeatInterval: DefaultHeartbeatInterval,
		RequestTimeout:    DefaultRequestTimeout,
		MaxFrameSize:      wire.DefaultMaxFrameSize,
		SDKName:           DefaultSDKName,
		SDKVersion:        DefaultSDKVersion,
		QUIC: QUICOptions{
			ResponseBufferSize: 10_000_000, MaxConcurrentBidiStreams: 10_000, DatagramSendBufferSize: 100_000,
			InitialMTU: 1200, SendWindow: 100_000, ReceiveWindow: 100_000,
			KeepAliveInterval: 5 * time.Second, MaxIdleTimeout: 10 * time.Second,
			ServerName: "localhost", ClientAddress: "127.0.0.1:0",
			SkipCertificateVerification: true,
		},
		WebSocket: WebSocketOptions{
			ReadBufferSize: 128 << 10, WriteBufferSize: 128 << 10,
			MaxMessageSize: 64 << 20, MaxFrameSize: 16 << 20,
		},
		HTTP: HTTPOptions{Retries: 3},
	}
	// WSS does not verify certificates unless asked (transports.md 3.3).
	o.TLS.InsecureSkipVerify = transport == TransportWS
	return o
}

// withDefaults fills the zero values that have no "off" meaning.
func (o Options) withDefaults() Options {
	if o.Transport == "" {
		o.Transport = TransportTCP
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.LoginTimeout <= 0 {
		o.LoginTimeout = o.RequestTimeout
	}
	if o.MaxFrameSize == 0 {
		o.MaxFrameSize = wire.DefaultMaxFrameSize
	}
	if o.SDKName == "" {
		o.SDKName = DefaultSDKName
	}
	if o.SDKVersion == "" {
		o.SDKVersion = DefaultSDKVersion
	}
	return o
}
