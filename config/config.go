// Package config loads the node's configuration the way the reference
// server does (server-behaviour.md 11): compiled-in defaults, then a TOML
// file, then IGGY_* environment variables, later layers winning.
//
// Environment names are IGGY_ + the TOML path upper-cased with dots as
// underscores (IGGY_TCP_ADDRESS, IGGY_SYSTEM_LOGGING_LEVEL); array-of-table
// entries take a numeric segment (IGGY_CLUSTER_NODES_1_PORTS_TCP). Keys
// the reference server relocated to topic options refuse to load (11.4).
//
// Configuration says what it ignores. Upstream ignores unknown file keys
// silently (11.1.3); here each one is a warning naming it, as is every
// unknown IGGY_* variable, and every reference key the node accepts so
// that upstream files load but does not act on (keys.go: sharding, memory
// pool, log rotation, the web UI, ...), set in the file or the
// environment. With system.strict_config = true (IGGY_SYSTEM_STRICT_CONFIG,
// or --strict on cmd/node) any warning refuses boot instead.
//
// Validate refuses what the reference server refuses to boot with, for
// the keys the node reads (11.3 and replica-plane.md 10: the "true refuses
// boot" placeholders system.segment.archive_expired and
// system.recovery.recreate_missing_state, ranges, orderings, secret
// lengths, cluster TLS needing auth and its files), all violations in one
// error. Constraints on ignored keys are not checked: they only warn.
// system.encryption.enabled needs a key that decodes (Encryption.KeyBytes)
// or boot is refused. The [http] section (http.go) is validated as
// http.md 1.2, 1.3 and 8.5 say; different JWT encoding and decoding
// secrets refuse boot (the recommendation of 10 #18, upstream only warns).
//
// Keys of ours: cluster.replica_id (--replica-id), cluster.allow_insecure
// (an unauthenticated replica plane may listen beyond loopback),
// cluster.join (--join) and cluster.removed_drain_interval
// (reconfiguration, docs/reconfiguration.md),
// system.strict_config, system.disk (the disk space reserves, disk.go),
// http.metrics.token, http.max_sessions, http.session_idle_timeout,
// http.jwt.max_revoked_tokens, http.tls.self_signed, the telemetry
// extras, and the ports of an advertised address selector (below).
//
// # Advertised addresses
//
// What GetClusterMetadata tells a client to dial for each node depends on
// the network the client connects from (replica-plane.md 10.2, 10.4; the
// reference server's selectors by client CIDR, advertised.go): the
// selector of cluster.nodes.advertised_addresses whose client_cidr holds
// the client's address with the longest prefix, else advertised_address,
// else ip. A selector may also name ports (ours), for clients that reach
// the node through a NodePort or a load balancer:
//
//	[[cluster.nodes.advertised_addresses]]
//	client_cidr = "0.0.0.0/0"          # IGGY_CLUSTER_NODES_0_ADVERTISED_ADDRESSES_0_CLIENT_CIDR
//	address = "203.0.113.7"            # _ADDRESS: an IP or a host name, no port
//	ports = { tcp = 30090, quic = 0 }  # _PORTS_TCP, _PORTS_QUIC, _PORTS_HTTP, _PORTS_WEBSOCKET; 0: the node's
//
// At most 16 selectors per node. The roster ip may be a host name: the
// replica plane resolves it at every dial (plane/replica).
//
// Choices where the spec is silent or where the issue overrides it:
//   - the root user defaults to iggy/iggy on a single node (the issue's
//     embedded default), not a random password; IGGY_ROOT_USERNAME and
//     IGGY_ROOT_PASSWORD must be set together;
//   - the file is named by --config, else IGGY_CONFIG_PATH; a missing
//     default file is not an error;
//   - the standard OTEL_* variables that package telemetry honours are a
//     layer between the file and IGGY_*: IGGY_* wins when both are set;
//   - [login] (ours, login.go) sizes the credential verification pool and
//     the failed-login throttle: IGGY_LOGIN_VERIFY_WORKERS,
//     IGGY_LOGIN_VERIFY_QUEUE, IGGY_LOGIN_THROTTLE_ENABLED,
//     IGGY_LOGIN_THROTTLE_BASE_DELAY, _MAX_DELAY, _QUIET_PERIOD,
//     _ADDRESS_FREE_FAILURES, _MAX_IN_FLIGHT_PER_ADDRESS, _MAX_TRACKED.
//
// # Limits
//
// The `[limits]` section is ours (upstream has none of these limits,
// transports.md 1.5): what a client may hold on the node, described in
// the plane/client package doc ("Limits"). A zero cap or timeout disables
// it; each key has its IGGY_LIMITS_* name.
//
//	[limits]
//	max_connections = 8192             # per node, every transport (IGGY_LIMITS_MAX_CONNECTIONS)
//	max_connections_per_address = 1024 # per remote IP
//	login_timeout = "30 s"             # connection up (or logout) to login; the SDK's request budget
//	idle_timeout = "5 m"               # logged in, no frame; above 2 x heartbeat.interval
//	frame_timeout = "30 s"             # one frame once its header is in (slowloris)
//	frame_budget = "256 MiB"           # bytes held by partially read frames, node-wide
package config

import (
	"encoding/base64"
	"errors"
	"fmt"
	"path/filepath"
)

// Config is the whole node configuration.
type Config struct {
	System              System              `toml:"system"`
	TCP                 TCP                 `toml:"tcp"`
	QUIC                QUIC                `toml:"quic"`
	WebSocket           WebSocket           `toml:"websocket"`
	HTTP                HTTP                `toml:"http"`
	Heartbeat           Heartbeat           `toml:"heartbeat"`
	ConsumerGroup       ConsumerGroup       `toml:"consumer_group"`
	DataMaintenance     DataMaintenance     `toml:"data_maintenance"`
	PersonalAccessToken PersonalAccessToken `toml:"personal_access_token"`
	Metadata            Metadata            `toml:"metadata"`
	Partition           PartitionConfig     `toml:"partition"`
	MessageBus          MessageBus          `toml:"message_bus"`
	Limits              Limits              `toml:"limits"`
	Cluster             Cluster             `toml:"cluster"`
	Telemetry           Telemetry           `toml:"telemetry"`
	Login               Login               `toml:"login"`
}

type System struct {
	Path     string         `toml:"path"`
	Logging  Logging        `toml:"logging"`
	Runtime  PathOnly       `toml:"runtime"`
	Segment  Segment        `toml:"segment"`
	Sharding map[string]any `toml:"sharding"`
	// Encryption is at-rest encryption of message payloads and user
	// headers (11.3); enabled, it needs a valid key or refuses boot.
	Encryption Encryption `toml:"encryption"`
	// Recovery holds an unsupported placeholder of the reference server.
	Recovery Recovery `toml:"recovery"`
	// Disk is the disk space guard (ours, disk.go).
	Disk Disk `toml:"disk"`
	// StrictConfig (ours; also --strict on cmd/node) turns the loader's
	// warnings into a refusal to start.
	StrictConfig bool `toml:"strict_config"`
}

// Encryption is system.encryption: AES-256-GCM at rest of message
// payloads and user headers (wire/batch_crypt.go).
type Encryption struct {
	Enabled bool `toml:"enabled"`
	// Key is base64 of 32 bytes; secret (11.2.5).
	Key string `toml:"key"`
}

// EncryptionKeySize is the length system.encryption.key decodes to.
const EncryptionKeySize = 32

// KeyBytes decodes the key (standard base64 of 32 bytes). Its errors say
// what is wrong with the key, never what it is (a secret, 11.2.5).
func (e Encryption) KeyBytes() ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(e.Key)
	switch {
	case e.Key == "":
		return nil, errors.New("system.encryption.enabled needs system.encryption.key (base64 of 32 bytes)")
	case err != nil:
		return nil, errors.New("system.encryption.key is not valid base64 (want base64 of 32 bytes)")
	case len(key) != EncryptionKeySize:
		return nil, fmt.Errorf("system.encryption.key decodes to %d bytes, want %d", len(key), EncryptionKeySize)
	}
	return key, nil
}

// Recovery is system.recovery.
type Recovery struct {
	// RecreateMissingState is an unsupported placeholder: true refuses
	// boot, as upstream.
	RecreateMissingState bool `toml:"recreate_missing_state"`
}

type PathOnly struct {
	Path string `toml:"path"`
}

// UnderSystem resolves a configured path: relative to system.path unless
// absolute, as the reference server lays out local_data/logs and
// local_data/runtime (server-behaviour.md 11).
func (c Config) UnderSystem(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(c.System.Path, p)
}

// LogDir is where the node writes its log file: system.logging.path.
func (c Config) LogDir() string { return c.UnderSystem(c.System.Logging.Path) }

// RuntimeConfigPath is the node's copy of its effective configuration
// (server-behaviour.md 11.1.4), in system.runtime.path.
func (c Config) RuntimeConfigPath() string {
	return filepath.Join(c.UnderSystem(c.System.Runtime.Path), "current_config.toml")
}

// WithoutSecrets is c with every secret-flagged value blanked (11.2.5,
// plus our http.metrics.token): what may be written to the runtime copy.
func (c Config) WithoutSecrets() Config {
	c.Cluster.Auth.SharedSecret, c.Cluster.Auth.PreviousSharedSecret = "", ""
	c.System.Encryption.Key = ""
	c.HTTP.Metrics.Token = ""
	c.HTTP.JWT.EncodingSecret, c.HTTP.JWT.DecodingSecret = "", ""
	return c
}

type Logging struct {
	Path  string `toml:"path"`
	Level string `toml:"level"`
}

type Segment struct {
	ArchiveExpired bool `toml:"archive_expired"`
}

type TLS struct {
	Enabled    bool   `toml:"enabled"`
	SelfSigned bool   `toml:"self_signed"`
	CertFile   string `toml:"cert_file"`
	KeyFile    string `toml:"key_file"`
}

type TCP struct {
	Enabled bool   `toml:"enabled"`
	Address string `toml:"address"`
	TLS     TLS    `toml:"tls"`
}

type QUIC struct {
	Enabled                  bool     `toml:"enabled"`
	Address                  string   `toml:"address"`
	MaxConcurrentBidiStreams uint64   `toml:"max_concurrent_bidi_streams"`
	InitialMTU               Size     `toml:"initial_mtu"`
	SendWindow               Size     `toml:"send_window"`
	ReceiveWindow            Size     `toml:"receive_window"`
	StreamReceiveWindow      Size     `toml:"stream_receive_window"`
	KeepAliveInterval        Duration `toml:"keep_alive_interval"`
	MaxIdleTimeout           Duration `toml:"max_idle_timeout"`
	Certificate              TLS      `toml:"certificate"`
}

type WebSocket struct {
	Enabled              bool   `toml:"enabled"`
	Address              string `toml:"address"`
	ReadBufferSize       Size   `toml:"read_buffer_size"`
	WriteBufferSize      Size   `toml:"write_buffer_size"`
	MaxMessageSize       Size   `toml:"max_message_size"`
	MaxFrameSize         Size   `toml:"max_frame_size"`
	AcceptUnmaskedFrames bool   `toml:"accept_unmasked_frames"`
	TLS                  TLS    `toml:"tls"`
}

type Heartbeat struct {
	Enabled  bool     `toml:"enabled"`
	Interval Duration `toml:"interval"`
}

type ConsumerGroup struct {
	RebalancingTimeout Duration `toml:"rebalancing_timeout"`
}

type DataMaintenance struct {
	Messages Cleaner `toml:"messages"`
}

type Cleaner struct {
	CleanerEnabled bool     `toml:"cleaner_enabled"`
	Enabled        bool     `toml:"enabled"`
	Interval       Duration `toml:"interval"`
}

type PersonalAccessToken struct {
	MaxTokensPerUser uint32  `toml:"max_tokens_per_user"`
	Cleaner          Cleaner `toml:"cleaner"`
}

type Metadata struct {
	PrepareQueueDepth uint32 `toml:"prepare_queue_depth"`
	JournalSlots      uint32 `toml:"journal_slots"`
	ClientsTableMax   uint32 `toml:"clients_table_max"`
}

type PartitionConfig struct {
	PrepareQueueDepth uint32 `toml:"prepare_queue_depth"`
	// The committed prepares a partition replica keeps for serving journal
	// repair (replica-plane.md 5.13 rule 6, 10.1).
	EvictedRingCapacity uint32 `toml:"evicted_ring_capacity"`
	EvictedRingBytesMax Size   `toml:"evicted_ring_bytes_max"`
	// MemoryBudget bounds, node-wide, the committed batches partitions
	// keep in memory for polls and the committed prepares they keep for
	// serving repair, least recently used first (an extension; 0: an
	// eighth of the memory the process may use).
	MemoryBudget Size `toml:"memory_budget"`
	// MaxOpenFiles bounds the batch files the node keeps open, node-wide,
	// and apart from them the ones it keeps mapped for cold polls; the
	// least recently used idle one is closed beyond it (an extension; 0:
	// 256).
	MaxOpenFiles uint32 `toml:"max_open_files"`
	// TransferServedCacheBytesMax bounds, node-wide, the bytes of the
	// partition state-transfer offers this node holds for serving
	// (replica-plane.md 7.7 rule 2; read from the batch files, which the
	// offers hold open, not copied): an offer beyond it is refused
	// transiently, and a partition larger than all of it permanently.
	TransferServedCacheBytesMax Size `toml:"transfer_served_cache_bytes_max"`
}

type MessageBus struct {
	MaxBatch          uint32 `toml:"max_batch"`
	MaxMessageSize    Size   `toml:"max_message_size"`
	PeerQueueCapacity uint32 `toml:"peer_queue_capacity"`
	// PeerQueueBytes bounds a replica peer's outbound queue in bytes (an
	// extension: peer_queue_capacity counts frames of any size).
	PeerQueueBytes  Size     `toml:"peer_queue_bytes"`
	ReconnectPeriod Duration `toml:"reconnect_period"`
	CloseGrace      Duration `toml:"close_grace"`
	HandshakeGrace  Duration `toml:"handshake_grace"`
}

// Limits is the limits section: what a client may hold on the node
// (plane/client package doc, "Limits"). A zero cap or timeout disables it;
// a zero frame_budget takes the default.
type Limits struct {
	// MaxConnections caps client connections on the node, every
	// transport together.
	MaxConnections uint32 `toml:"max_connections"`
	// MaxConnectionsPerAddress caps them per remote IP.
	MaxConnectionsPerAddress uint32 `toml:"max_connections_per_address"`
	// LoginTimeout: time from a connection being up (or its last logout)
	// to a successful login.
	LoginTimeout Duration `toml:"login_timeout"`
	// IdleTimeout closes a logged-in connection that sent nothing for
	// this long; keep it above 2 x heartbeat.interval.
	IdleTimeout Duration `toml:"idle_timeout"`
	// FrameTimeout bounds reading one frame once its header arrived.
	FrameTimeout Duration `toml:"frame_timeout"`
	// FrameBudget caps the bytes held by partially read frames.
	FrameBudget Size `toml:"frame_budget"`
}

type Cluster struct {
	Enabled                            bool     `toml:"enabled"`
	Name                               string   `toml:"name"`
	ReplicaID                          int      `toml:"replica_id"`
	HeartbeatTimeout                   Duration `toml:"heartbeat_timeout"`
	CommitBroadcastInterval            Duration `toml:"commit_broadcast_interval"`
	PrepareRetransmitInterval          Duration `toml:"prepare_retransmit_interval"`
	ViewChangeRetransmitInterval       Duration `toml:"view_change_retransmit_interval"`
	ViewChangeStatusTimeout            Duration `toml:"view_change_status_timeout"`
	RequestStartViewRetransmitInterval Duration `toml:"request_start_view_retransmit_interval"`
	ViewProbeAttemptsMax               uint32   `toml:"view_probe_attempts_max"`
	RepairRetryInterval                Duration `toml:"repair_retry_interval"`
	RepairChunkMax                     uint32   `toml:"repair_chunk_max"`
	SuperblockWedgedFatalTimeout       Duration `toml:"superblock_wedged_fatal_timeout"`
	// Quiescence lets idle partition groups go quiet, with one node-level
	// heartbeat per peer link (an extension of iggynode, vsr/quiesce.go;
	// a cluster mixed with reference servers must turn it off).
	// NodeHeartbeatInterval is that heartbeat's period (0: the commit
	// broadcast interval, so a peer is heard ten times per heartbeat
	// timeout with the defaults); WakeBatch how many partition groups per
	// tick hear that a peer was lost or found.
	Quiescence            bool        `toml:"quiescence"`
	NodeHeartbeatInterval Duration    `toml:"node_heartbeat_interval"`
	WakeBatch             uint32      `toml:"wake_batch"`
	Auth                  ClusterAuth `toml:"auth"`
	Nodes                 []Node      `toml:"nodes"`
	// TLS wraps the replica plane in TLS 1.3 (replica-plane.md 3.7).
	TLS ClusterTLS `toml:"tls"`
	// AllowInsecure (ours) lets a node without cluster.auth listen on its
	// replica port beyond loopback; without it such a node refuses to start.
	AllowInsecure bool `toml:"allow_insecure"`
	// Join (ours, --join) boots a node that is not in the cluster's
	// roster yet: the listed nodes other than this one are the cluster it
	// joins, its own entry gives its ports, and it waits, empty, until a
	// ClusterAdd names it (docs/reconfiguration.md). Once a roster
	// committed, the durable roster replaces the list at every start.
	Join bool `toml:"join"`
	// RemovedDrainInterval (ours) is how long a node removed from the
	// roster keeps serving repair and state transfer to the members still
	// catching up before it stops.
	RemovedDrainInterval Duration `toml:"removed_drain_interval"`
	// LeaderBalanceInterval (ours, issue 23) is how often the leadership
	// balancer looks for partitions this node leads whose preferred
	// primary is another live node (0: never); LeaderBalanceMaxMoves how
	// many it hands over per pass.
	LeaderBalanceInterval Duration `toml:"leader_balance_interval"`
	LeaderBalanceMaxMoves uint32   `toml:"leader_balance_max_moves"`
	// TransferBandwidth (ours) caps the bytes per second this node serves
	// in state transfers (partition moves, replicas catching up); 0: no cap.
	TransferBandwidth Size `toml:"transfer_bandwidth"`
	// OutcomeWait (ours) is how long a partition primary that lost its
	// view keeps a write it had prepared, waiting for the next view to
	// commit (answered with its result) or replace it (58) before it
	// answers "outcome unknown" (57): partition groups keep no client
	// table, so a 57 the client replays may store the batch twice
	// (vsr/fate.go). At least 10 ms.
	OutcomeWait Duration `toml:"outcome_wait"`
}

// ClusterTLS is cluster.tls (replica-plane.md 10.1). Without self_signed
// it is mutual TLS: every node presents cert_file and verifies its peers'
// certificates against ca_file.
type ClusterTLS struct {
	Enabled    bool   `toml:"enabled"`
	SelfSigned bool   `toml:"self_signed"`
	CertFile   string `toml:"cert_file"`
	KeyFile    string `toml:"key_file"`
	CAFile     string `toml:"ca_file"`
}

type ClusterAuth struct {
	Enabled              bool   `toml:"enabled"`
	SharedSecret         string `toml:"shared_secret"`
	PreviousSharedSecret string `toml:"previous_shared_secret"`
}

// Node is one roster entry (replica-plane.md 10.2). IP is a literal IP
// or a host name: peers resolve a name at every dial (a Kubernetes pod
// keeps its name, not its IP, across a reschedule). What clients are told
// to dial is AdvertisedTo's choice among AdvertisedAddresses,
// AdvertisedAddress and IP (advertised.go).
type Node struct {
	Name                string              `toml:"name"`
	IP                  string              `toml:"ip"`
	ReplicaID           int                 `toml:"replica_id"`
	AdvertisedAddress   string              `toml:"advertised_address"`
	AdvertisedAddresses []AdvertisedAddress `toml:"advertised_addresses"`
	Ports               Ports               `toml:"ports"`
}

type Ports struct {
	TCP        uint16 `toml:"tcp"`
	QUIC       uint16 `toml:"quic"`
	HTTP       uint16 `toml:"http"`
	WebSocket  uint16 `toml:"websocket"`
	TCPReplica uint16 `toml:"tcp_replica"`
}

// Default is the embedded default configuration (server-behaviour.md 11.3):
// TCP on 8090, QUIC on 8080, WebSocket on 8092 and HTTP on 3000, all on
// loopback.
func Default() Config {
	return Config{
		System: System{Path: "local_data", Logging: Logging{Path: "logs", Level: "info"}, Runtime: PathOnly{Path: "runtime"}, Disk: defaultDisk()},
		TCP:    TCP{Enabled: true, Address: "127.0.0.1:8090", TLS: TLS{SelfSigned: true, CertFile: "core/certs/iggy_cert.pem", KeyFile: "core/certs/iggy_key.pem"}},
		QUIC: QUIC{Enabled: true, Address: "127.0.0.1:8080", MaxConcurrentBidiStreams: 1, InitialMTU: 1200,
			SendWindow: 64 << 20, ReceiveWindow: 64 << 20, StreamReceiveWindow: 64 << 20,
			KeepAliveInterval: Duration(10e9), MaxIdleTimeout: Duration(30e9), Certificate: TLS{SelfSigned: true}},
		WebSocket:           WebSocket{Enabled: true, Address: "127.0.0.1:8092", TLS: TLS{SelfSigned: true, CertFile: "core/certs/iggy_cert.pem", KeyFile: "core/certs/iggy_key.pem"}},
		HTTP:                defaultHTTP(),
		Heartbeat:           Heartbeat{Enabled: true, Interval: Duration(30e9)},
		ConsumerGroup:       ConsumerGroup{RebalancingTimeout: Duration(30e9)},
		DataMaintenance:     DataMaintenance{Messages: Cleaner{CleanerEnabled: true, Interval: Duration(60e9)}},
		PersonalAccessToken: PersonalAccessToken{MaxTokensPerUser: 100, Cleaner: Cleaner{Enabled: true, Interval: Duration(60e9)}},
		Metadata:            Metadata{PrepareQueueDepth: 32, JournalSlots: 1024, ClientsTableMax: 8192},
		Partition: PartitionConfig{PrepareQueueDepth: 32, EvictedRingCapacity: 4096, EvictedRingBytesMax: 16 << 20,
			TransferServedCacheBytesMax: 2176 << 20},
		MessageBus: MessageBus{MaxBatch: 256, MaxMessageSize: 64 << 20, PeerQueueCapacity: 16384, PeerQueueBytes: 256 << 20,
			ReconnectPeriod: Duration(5e9), CloseGrace: Duration(2e9), HandshakeGrace: Duration(10e9)},
		Limits: Limits{MaxConnections: 8192, MaxConnectionsPerAddress: 1024, LoginTimeout: Duration(30e9),
			IdleTimeout: Duration(300e9), FrameTimeout: Duration(30e9), FrameBudget: 256 << 20},
		Cluster: Cluster{Name: "iggy-cluster", HeartbeatTimeout: Duration(5e9), CommitBroadcastInterval: Duration(500e6),
			PrepareRetransmitInterval: Duration(250e6), ViewChangeRetransmitInterval: Duration(500e6),
			ViewChangeStatusTimeout: Duration(5e9), RequestStartViewRetransmitInterval: Duration(1e9),
			ViewProbeAttemptsMax: 5, RepairRetryInterval: Duration(1e9), RepairChunkMax: 128,
			SuperblockWedgedFatalTimeout: Duration(120e9), Quiescence: true, WakeBatch: 256, RemovedDrainInterval: Duration(60e9),
			LeaderBalanceInterval: Duration(5e9), LeaderBalanceMaxMoves: 8, OutcomeWait: Duration(1e9)},
		Telemetry: defaultTelemetry(),
		Login:     defaultLogin(),
	}
}
