package actors

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/time/rate"

	"iggynode/config"
	"iggynode/diag"
	"iggynode/internal/framebuf"
	clientplane "iggynode/plane/client"
	httpplane "iggynode/plane/http"
	"iggynode/storage"
	"iggynode/telemetry"
	"iggynode/wire"
)

// nodeRefs is what every actor of a node may reach.
type nodeRefs struct {
	metadata *actor.PID
	// commit is the metadata group's commit point, published for the
	// replies connections build themselves (client-plane.md 4.4 "commit").
	commit atomic.Uint64
	// restarts counts actor restarts and stops after a panic, for tests and
	// telemetry.
	restarts atomic.Uint64
	// tel is the node's instrumentation (telemetry.go).
	tel *nodeTelemetry
	// liveness is the node-level heartbeat's actor (cluster mode with
	// quiescence; nil otherwise), set once it started.
	liveness atomic.Pointer[actor.PID]
	// removed: the metadata roster no longer names this node; clients are
	// answered NodeRemoved (reconfig.go).
	removed atomic.Bool
	// routes is the routing view connections send partition traffic with
	// (routing.go), published by the metadata actor.
	routes atomic.Pointer[routeView]
}

// Options are the parts of a node that tests and cmd/node inject.
type Options struct {
	Config config.Config
	// RootUsername and RootPassword create the root user on first start.
	RootUsername, RootPassword string
	Logger                     *slog.Logger
	// Clock returns the wall clock in µs (prepare timestamps). Default: time.Now.
	Clock func() uint64
	// ReplicaListen overrides the replica-plane bind address (tests use
	// 127.0.0.1:0 and give the roster with SetReplicaRoster).
	ReplicaListen string
	// ReconnectPeriod overrides message_bus.reconnect_period for the
	// replica plane (tests reconnect faster).
	ReconnectPeriod time.Duration
	// TLS, when set, replaces the configured certificates of every TLS
	// listener (TCP+TLS and WSS when enabled, and QUIC).
	TLS *tls.Config
	// PartitionView, when set, starts a new partition group in the view it
	// returns instead of view 0 on every replica, so tests can place a
	// partition's primary away from the metadata leader (primary = view mod
	// n) without a view change.
	PartitionView func(group uint64) uint32
	// FailStop ends the process when a replica cannot go on consistently
	// (a superblock wedged past cluster.superblock_wedged_fatal_timeout,
	// replica-plane.md 6.13 rule 4). Default: log and exit with status 70.
	FailStop func(reason string)
	// Removed is called when this node, removed from the cluster's
	// roster, has drained (actors/reconfig.go); cmd/node exits. Nil: the
	// node stays up, refusing clients.
	Removed func()
	// TracerProvider and MeterProvider receive the node's spans and
	// metrics (telemetry.Setup builds them from [telemetry]; tests pass
	// in-memory ones). Nil: no-op providers.
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider
	// HTTPSurface is what package telemetry serves on the HTTP listener
	// (/ping, the metrics exposition, the request counter); nil: /ping only.
	HTTPSurface *telemetry.HTTPSurface
	// HTTPListen overrides http.address (tests use 127.0.0.1:0).
	HTTPListen string
	// verifyPassword replaces metadata.VerifyPassword on the login pool
	// (tests slow it down); nil: the real Argon2id check.
	verifyPassword func(hash, password string) bool
	// beforeJournalWrite runs in a partition's write behind before it
	// writes (tests hold the write); an error it returns is the write's
	// outcome, nothing written (tests fail it); nil: nothing.
	beforeJournalWrite func(group uint64) error
}

// Node is one running iggynode: an actor system, its storage and its
// client listeners.
type Node struct {
	opts   Options
	log    *slog.Logger
	system *actor.ActorSystem
	store  *storage.Store
	// rosters caches each group's last persisted rosterRecord (cluster.go).
	rosters sync.Map
	// atRest is system.encryption (encryption.go).
	atRest atRest
	// transferBudget paces the state-transfer chunks this node serves
	// (cluster.transfer_bandwidth; nil: unpaced).
	transferBudget *rate.Limiter
	// transferLimits bound the state transfers this node serves and
	// receives (transfer.go).
	transferLimits transferLimits
	// clusterNodes are the nodes of the metadata roster (voters and
	// learners), which the partition primaries tell their statistics
	// when the partition does not live there (placement.go).
	clusterNodes atomic.Uint32
	refs         *nodeRefs
	tcp          *clientplane.TCPListener
	quic         *clientplane.QUICListener
	ws           *clientplane.WSListener
	http         *httpplane.Server
	connID       atomic.Uint32
	// conns spawns connection actors (stopped after a panic), supervised
	// the metadata and peer actors (restarted). Each is a root context of
	// its own: WithGuardian sets the strategy on the context it is called
	// on, so calling it on the system's shared Root raced with every
	// spawn and left one strategy for all of them.
	conns, supervised *actor.RootContext
	// metadataCaughtUp: since boot, the metadata replica has once been in
	// normal status with everything it knows committed applied. Until
	// then partition groups stay out of consensus: the partitions a
	// restarted node starts come from its own, possibly stale, metadata,
	// and a group id a deleted topic used may meanwhile belong to a new
	// topic (replica-plane.md 4.1 packs ids into it) whose replicas must
	// not hear the old one's votes.
	metadataCaughtUp atomic.Bool
	// readiness is what GET /ready answers (ready.go).
	readiness readiness
	// collector answers GetStats with process and host figures.
	collector *diag.Collector

	// dispatcher runs every actor of the node (dispatcher.go).
	dispatcher *workerDispatcher

	closeOnce sync.Once
	stop      chan struct{}
	cluster   *cluster
	// clock is the consensus time and the partition groups' deadlines
	// (clock.go); peerLive the peers the node-level heartbeat hears.
	clock    *nodeClock
	peerLive peerLiveMask
	// memory is partition.memory_budget (membudget.go).
	memory *memoryBudget
	// auth verifies login credentials off the metadata actor (auth.go).
	auth *authService
	// diskWaits: partition replicas waiting for disk space (diskspace.go).
	diskWaits diskWaits
}

// Start opens storage, recovers state, spawns the actors and opens the
// listeners. The node is serving when Start returns.
func Start(opts Options) (*Node, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Clock == nil {
		opts.Clock = func() uint64 { return uint64(time.Now().UnixMicro()) }
	}
	if opts.FailStop == nil {
		log := opts.Logger
		opts.FailStop = func(reason string) {
			if log != nil {
				log.Error("fail-stop", "reason", reason)
			}
			os.Exit(70)
		}
	}
	cfg := opts.Config
	store, err := storage.Open(cfg.System.Path, storage.Options{Logger: opts.Logger, Space: spaceOptions(cfg.System.Disk),
		MaxOpenBatchFiles: int(cfg.Partition.MaxOpenFiles)})
	if err != nil {
		return nil, fmt.Errorf("open storage in %s: %w", cfg.System.Path, err)
	}
	enc, err := openAtRest(cfg.System.Encryption, store, opts.Logger)
	if err != nil {
		store.Close()
		return nil, err
	}
	n := &Node{opts: opts, log: opts.Logger, store: store, refs: &nodeRefs{}, collector: diag.NewCollector(cfg.System.Path), transferBudget: transferBudgetOf(cfg.Cluster.TransferBandwidth),
		stop: make(chan struct{}), clock: newNodeClock(), atRest: enc}
	n.peerLive.bits.Store(^uint32(0))
	n.transferLimits.servedMax = int64(cfg.Partition.TransferServedCacheBytesMax)
	n.system = actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return opts.Logger.With("component", "actors")
	}))

	if err := n.setupCluster(); err != nil {
		store.Close()
		return nil, err
	}
	var peerDrops func() map[uint8]uint64
	if n.cluster.clustered() {
		peerDrops = n.peerDrops
	}
	n.refs.tel = newNodeTelemetry(opts, n.cluster.self, n.cluster.id, &n.refs.restarts, peerDrops)
	n.refs.tel.disk.Store(store.Space())
	n.refs.tel.transfers.Store(&n.transferLimits)
	n.refs.tel.store.Store(store)
	budget := int64(cfg.Partition.MemoryBudget)
	if budget <= 0 {
		budget = defaultMemoryBudget()
	}
	n.memory = newMemoryBudget(budget, n.system.Root)
	n.refs.tel.memory.Store(n.memory)
	timers := n.clock.pending
	n.refs.tel.timers.Store(&timers)
	if n.opts.ReconnectPeriod == 0 {
		n.opts.ReconnectPeriod = cfg.MessageBus.ReconnectPeriod.D()
	}
	meta, err := newMetadataActor(n)
	if err != nil {
		store.Close()
		return nil, err
	}
	n.dispatcher = newWorkerDispatcher(dispatchWorkers, 300) // 300: protoactor's default throughput
	n.auth = newAuthService(cfg.Login, opts.Logger, n.refs.tel, opts.verifyPassword,
		func(v *loginVerified) { n.root().Send(n.refs.metadata, v) })
	// The metadata actor supervises the partition actors; a panic in it
	// restarts it from durable state.
	n.supervised = actor.NewRootContext(n.system, nil).WithGuardian(restartStrategy(n.refs, opts.Logger))
	n.refs.metadata, err = n.supervised.SpawnNamed(n.props(meta.producer(),
		actor.WithSupervisor(restartStrategy(n.refs, opts.Logger))), "metadata")
	if err != nil {
		n.auth.close()
		n.dispatcher.close()
		n.refs.tel.close()
		store.Close()
		return nil, err
	}
	if err := meta.waitReady(10 * time.Second); err != nil {
		n.Close()
		return nil, err
	}
	read := n.readEntityCounts
	n.refs.tel.entities.Store(&read)
	// Connections are stopped, never restarted, after a panic: the
	// transport is closed and the client reconnects (the session state
	// is not worth resurrecting).
	n.conns = actor.NewRootContext(n.system, nil).WithGuardian(stopStrategy(n.refs, opts.Logger))
	if err := n.startReplicaPlane(); err != nil {
		n.Close()
		return nil, err
	}
	if err := n.listen(); err != nil {
		n.Close()
		return nil, err
	}
	n.startMaintenance()
	if err := n.writeRuntimeConfig(); err != nil {
		n.log.Warn("could not write the runtime configuration copy", "err", err)
	}
	return n, nil
}

// TCPAddr is the bound TCP address ("" when TCP is disabled).
func (n *Node) TCPAddr() string {
	if n.tcp == nil {
		return ""
	}
	return n.tcp.Addr().String()
}

// QUICAddr is the bound QUIC (UDP) address ("" when QUIC is disabled).
func (n *Node) QUICAddr() string {
	if n.quic == nil {
		return ""
	}
	return n.quic.Addr().String()
}

// WebSocketAddr is the bound WebSocket address ("" when disabled).
func (n *Node) WebSocketAddr() string {
	if n.ws == nil {
		return ""
	}
	return n.ws.Addr().String()
}

// listen opens every enabled client listener (transports.md 2) and logs
// which are up. The connection actor never learns which one it serves.
func (n *Node) listen() error {
	cfg := n.opts.Config
	base := clientplane.Config{
		MaxFrameSize:   uint32(cfg.MessageBus.MaxMessageSize),
		QueueCapacity:  clientQueueCapacity,
		HandshakeGrace: cfg.MessageBus.HandshakeGrace.D(),
		CloseGrace:     cfg.MessageBus.CloseGrace.D(),
		Guard:          n.edgeGuard(),
		Logger:         n.log,
	}
	tlsFor := func(t config.TLS, quic bool) (*tls.Config, error) {
		if n.opts.TLS != nil {
			return n.opts.TLS, nil
		}
		src := clientplane.CertSource{SelfSigned: t.SelfSigned, CertFile: t.CertFile, KeyFile: t.KeyFile}
		if quic {
			return clientplane.QUICServerTLS(src, n.log)
		}
		return clientplane.ServerTLS(src, n.log)
	}
	var err error
	if cfg.TCP.Enabled {
		c := base
		if cfg.TCP.TLS.Enabled {
			if c.TLS, err = tlsFor(cfg.TCP.TLS, false); err != nil {
				return fmt.Errorf("tcp tls: %w", err)
			}
		}
		if n.tcp, err = clientplane.ListenTCP(cfg.TCP.Address, c, n); err != nil {
			return fmt.Errorf("tcp listener on %s: %w", cfg.TCP.Address, err)
		}
		n.log.Info("tcp listener up", "address", n.TCPAddr(), "tls", c.TLS != nil)
	}
	if cfg.QUIC.Enabled {
		c := base
		if c.TLS, err = tlsFor(cfg.QUIC.Certificate, true); err != nil {
			return fmt.Errorf("quic certificate: %w", err)
		}
		q := clientplane.DefaultQUICConfig()
		q.MaxConcurrentBidiStreams = int64(max(cfg.QUIC.MaxConcurrentBidiStreams, 1))
		q.InitialMTU = uint16(max(cfg.QUIC.InitialMTU, 1200))
		q.ReceiveWindow, q.StreamReceiveWindow = uint64(cfg.QUIC.ReceiveWindow), uint64(cfg.QUIC.StreamReceiveWindow)
		q.KeepAliveInterval, q.MaxIdleTimeout = cfg.QUIC.KeepAliveInterval.D(), cfg.QUIC.MaxIdleTimeout.D()
		if n.quic, err = clientplane.ListenQUIC(cfg.QUIC.Address, c, q, n); err != nil {
			return fmt.Errorf("quic listener on %s: %w", cfg.QUIC.Address, err)
		}
		n.log.Info("quic listener up", "address", n.QUICAddr())
	}
	if cfg.WebSocket.Enabled {
		c := base
		if cfg.WebSocket.TLS.Enabled {
			if c.TLS, err = tlsFor(cfg.WebSocket.TLS, false); err != nil {
				return fmt.Errorf("websocket tls: %w", err)
			}
		}
		w := clientplane.WebSocketConfig{ReadBufferSize: int(cfg.WebSocket.ReadBufferSize),
			WriteBufferSize: int(cfg.WebSocket.WriteBufferSize), MaxMessageSize: uint32(cfg.WebSocket.MaxMessageSize)}
		if n.ws, err = clientplane.ListenWebSocket(cfg.WebSocket.Address, c, w, n); err != nil {
			return fmt.Errorf("websocket listener on %s: %w", cfg.WebSocket.Address, err)
		}
		n.log.Info("websocket listener up", "address", n.WebSocketAddr(), "tls", c.TLS != nil)
	}
	return n.startHTTP()
}

// edgeGuard is the one Guard every client listener shares, so the caps
// and the frame budget count the node, not a transport ([limits]); its
// counters feed the telemetry.
func (n *Node) edgeGuard() *clientplane.Guard {
	l := n.opts.Config.Limits
	g := clientplane.NewGuard(clientplane.Limits{
		MaxConnections: int(l.MaxConnections), MaxConnectionsPerAddress: int(l.MaxConnectionsPerAddress),
		LoginTimeout: l.LoginTimeout.D(), IdleTimeout: l.IdleTimeout.D(), FrameTimeout: l.FrameTimeout.D(),
		FrameBudget: int64(l.FrameBudget),
	}, n.log)
	if hb := n.opts.Config.Heartbeat; hb.Enabled && l.IdleTimeout > 0 && l.IdleTimeout.D() <= 2*hb.Interval.D() {
		n.log.Warn("limits.idle_timeout is not above 2 x heartbeat.interval; clients that heartbeat may be cut",
			"idle_timeout", l.IdleTimeout.D(), "heartbeat_interval", hb.Interval.D())
	}
	n.refs.tel.edge.Store(g)
	return g
}

// peerDrops is each replica-plane peer's dropped-frame count (nil links:
// none yet).
func (n *Node) peerDrops() map[uint8]uint64 {
	out := map[uint8]uint64{}
	if n.cluster == nil || n.cluster.links == nil {
		return out
	}
	for peer, s := range n.cluster.links.Stats() {
		out[peer] = s.Dropped
	}
	return out
}

// props are the props of one of the node's actors: on its dispatcher.
func (n *Node) props(producer actor.Producer, opts ...actor.PropsOption) *actor.Props {
	return actor.PropsFromProducer(producer, append(opts, actor.WithDispatcher(n.dispatcher))...)
}

// clientQueueCapacity bounds the replies queued per client connection:
// one request is answered at a time (server-behaviour.md 0.3), so a few
// suffice; message_bus.peer_queue_capacity is the replica plane's.
const clientQueueCapacity = 256

// dispatchWorkers is how many goroutines run actor turns: a few per core,
// enough that a connection's, a partition's and the metadata actor's turns
// find one idle at once.
const dispatchWorkers = 16

// Restarts counts actor failures handled by supervisors.
func (n *Node) Restarts() uint64 { return n.refs.restarts.Load() }

// Open implements clientplane.Handler: one connection actor per connection.
func (n *Node) Open(c clientplane.Conn) clientplane.Session {
	id := n.connID.Add(1)
	conn := &connection{conn: c, readsSources: clientplane.ReadsSources(c), id: id, node: n.refs, log: n.log, clock: n.opts.Clock}
	n.refs.tel.connections[c.Transport()].Add(1)
	pid := n.conns.Spawn(n.props(func() actor.Actor { return conn }))
	return &session{root: n.system.Root, pid: pid}
}

// session adapts the edge's callbacks to actor messages.
type session struct {
	root *actor.RootContext
	pid  *actor.PID
}

func (s *session) Frame(buf []byte, batch wire.SendVerdict, owner *framebuf.Buf) {
	s.root.Send(s.pid, &frameIn{buf: buf, batch: batch, owner: owner})
}
func (s *session) Closed() { s.root.Send(s.pid, &connClosed{}) }

// readEntityCounts asks the metadata actor for the entity counts; nil
// when it does not answer within a second (stopped, or booting again).
func (n *Node) readEntityCounts() *entityCounts {
	res, err := n.root().RequestFuture(n.refs.metadata, &countEntities{}, time.Second).Result()
	if err != nil {
		return nil
	}
	c, _ := res.(*entityCounts)
	return c
}

// Close shuts the node down gracefully: stop accepting, close client
// connections, stop the actors (the metadata actor flushes partitions on
// stop), then close storage.
func (n *Node) Close() error {
	var err error
	n.closeOnce.Do(func() {
		close(n.stop)
		if n.tcp != nil {
			n.tcp.Close()
		}
		if n.quic != nil {
			n.quic.Close()
		}
		if n.ws != nil {
			n.ws.Close()
		}
		if n.http != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			err = errors.Join(err, n.http.Close(ctx))
			cancel()
		}
		if n.cluster != nil && n.cluster.links != nil {
			_ = n.cluster.links.Close()
		}
		if n.refs.metadata != nil {
			if e := n.system.Root.StopFuture(n.refs.metadata).Wait(); e != nil {
				err = errors.Join(err, e)
			}
		}
		n.auth.close()
		n.system.Shutdown()
		n.dispatcher.close()
		n.refs.tel.close()
		err = errors.Join(err, n.store.Close())
	})
	return err
}

func restartStrategy(refs *nodeRefs, log *slog.Logger) actor.SupervisorStrategy {
	return actor.NewOneForOneStrategy(10, 10*time.Second, func(reason interface{}) actor.Directive {
		refs.restarts.Add(1)
		log.Error("actor failed; restarting it", "reason", reason)
		return actor.RestartDirective
	})
}

func stopStrategy(refs *nodeRefs, log *slog.Logger) actor.SupervisorStrategy {
	return actor.NewOneForOneStrategy(0, time.Second, func(reason interface{}) actor.Directive {
		refs.restarts.Add(1)
		log.Error("actor failed; stopping it", "reason", reason)
		return actor.StopDirective
	})
}

// writeRuntimeConfig writes the effective configuration, with the bound
// addresses and without secrets, to {system.path}/runtime/current_config.toml
// (server-behaviour.md 11.1.4).
func (n *Node) writeRuntimeConfig() error {
	cfg := n.opts.Config.WithoutSecrets()
	if n.tcp != nil {
		cfg.TCP.Address = n.TCPAddr()
	}
	path := cfg.RuntimeConfigPath()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(cfg); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o600)
}

// Maintain runs the periodic maintenance (segment cleaner) now, at the
// node's clock, and returns when every partition finished its pass. Tests
// drive retention with it and an injected clock instead of sleeping.
func (n *Node) Maintain() {
	done := make(chan struct{})
	n.root().Send(n.refs.metadata, &maintainNow{nowUs: n.opts.Clock(), done: done})
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		n.log.Warn("maintenance pass did not finish in time")
	}
}

// VerifyHeartbeats runs the stale-client verifier now, at the node's clock
// (tests drive it with an injected clock).
func (n *Node) VerifyHeartbeats() {
	n.root().Send(n.refs.metadata, &heartbeatTick{nowUs: n.opts.Clock()})
}

// startMaintenance ticks the segment cleaner every
// data_maintenance.messages.interval when it is enabled (5.7.1).
func (n *Node) startMaintenance() {
	if hb := n.opts.Config.Heartbeat; hb.Enabled && hb.Interval > 0 {
		go n.every(hb.Interval.D(), func() { n.VerifyHeartbeats() })
	}
	c := n.opts.Config.DataMaintenance.Messages
	if !c.CleanerEnabled || c.Interval <= 0 {
		return
	}
	go func() {
		t := time.NewTicker(c.Interval.D())
		defer t.Stop()
		for {
			select {
			case <-n.stop:
				return
			case <-t.C:
				n.root().Send(n.refs.metadata, &maintainNow{nowUs: n.opts.Clock()})
			}
		}
	}()
}

// every runs fn every d until the node stops.
func (n *Node) every(d time.Duration, fn func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-t.C:
			fn()
		}
	}
}
