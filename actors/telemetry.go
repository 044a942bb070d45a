package actors

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"iggynode/internal/framebuf"
	clientplane "iggynode/plane/client"
	"iggynode/storage"
	"iggynode/telemetry/spanfile"
	"iggynode/telemetry/traceid"
	"iggynode/vsr"
	"iggynode/wire"
)

// The node's instrumentation (issue 8): the shells record what their
// cores did, the cores stay free of it. Names and attributes are
// spanfile's, so the timeline reads a node's trace file and a simulated
// run alike.
//
// Cost: metrics are counters and histograms with attribute sets cached by
// key, and gauges read at collection from atomics the actors publish; with
// tracing off (a no-op tracer provider) every trace hook returns after one
// boolean test, so the send path allocates nothing more. With tracing on,
// request and op spans are records built into SDK spans off the path
// (spanqueue.go); the rarer view change, recovery, repair and transfer
// spans are SDK spans directly, so log lines can carry their ids.

// instrumentationName is the tracer and meter name.
const instrumentationName = "iggynode"

// nodeTelemetry is one node's tracer, instruments and gauge sources.
type nodeTelemetry struct {
	tracer  trace.Tracer
	tracing bool
	spans   *spanQueue // nil when not tracing
	replica uint8
	cluster wire.U128

	sendLat    metric.Float64Histogram
	pollLat    metric.Float64Histogram
	requestLat metric.Float64Histogram
	commitLat  metric.Float64Histogram

	// Attribute sets, built once, as the option slices the SDK takes: a
	// measurement allocates nothing.
	byTransport [clientplane.TransportWebSocket + 1]attrs
	byKind      [2]attrs // partition, metadata (groupKind)
	cmdMu       sync.RWMutex
	byCommand   map[uint32]attrs           // commandKey
	byStatus    map[uint64]*requestCounter // commandKey<<32 | status

	// Counters the hot path bumps with one atomic add; the SDK reads them
	// at collection (observable counters), so a request pays for no SDK
	// call but its latency's.
	connections, bytesIn, bytesOut [clientplane.TransportWebSocket + 1]atomic.Int64

	mu     sync.Mutex
	groups map[uint64]*groupGauges

	// entities reads the entity counts for the entity gauges; set once the
	// metadata actor runs.
	entities atomic.Pointer[func() *entityCounts]
	// peersLive is how many peers the node-level heartbeat hears; timers
	// reads how many groups have a deadline (clock.go), once set.
	peersLive atomic.Int64
	// Leadership (placement.go): hand-overs this node started, the groups
	// it leads, and those of them whose preferred primary is another node.
	handOvers, leading, leadersAway atomic.Int64
	// moving counts the local groups not on their placement yet.
	moving atomic.Int64
	// transferBytes counts the state-transfer chunk bytes served;
	// transfers are the node's transfer bounds (transfer.go), once set.
	transferBytes atomic.Int64
	transfers     atomic.Pointer[transferLimits]
	timers        atomic.Pointer[func() int]
	// memory is the partitions' memory budget (membudget.go), once set.
	memory atomic.Pointer[memoryBudget]

	// Logins (auth.go): outcomes, checks waiting for a verification
	// worker, throttle keys held, and the time a worker spends on a check.
	loginOutcomes  [loginOutcomeCount]atomic.Int64
	loginQueued    atomic.Int64
	loginWaiting   atomic.Int64
	loginTracked   atomic.Int64
	loginVerifyLat metric.Float64Histogram
	// edge is the client edge's limits guard; set when the listeners open.
	edge atomic.Pointer[clientplane.Guard]
	// disk is the store's disk space guard, diskRefused the writes it
	// made the node refuse (diskspace.go).
	disk        atomic.Pointer[storage.Space]
	store       atomic.Pointer[storage.Store]
	diskRefused atomic.Int64
	// Group commit (partition.go, drive): the partitions' segment writes
	// and the batches they carried; batches/writes is the group size.
	storeWrites, storedBatches atomic.Int64
}

// attrs is one attribute set as each kind of measurement takes it.
type attrs struct {
	record  []metric.RecordOption
	observe []metric.ObserveOption
}

func newAttrs(kv ...attribute.KeyValue) attrs {
	o := metric.WithAttributeSet(attribute.NewSet(kv...))
	return attrs{record: []metric.RecordOption{o}, observe: []metric.ObserveOption{o}}
}

// transports are the client transports, for the per-transport series.
var transports = []clientplane.Transport{clientplane.TransportTCP, clientplane.TransportQUIC, clientplane.TransportWebSocket}

// requestCounter counts the requests of one command answered with one
// status.
type requestCounter struct {
	n     atomic.Int64
	attrs attrs
}

// groupGauges are one consensus group's figures, published by its actor
// after each drive and read at collection.
type groupGauges struct {
	view, pipeline, commitMin, commitMax atomic.Uint64
	// epoch, role (memberRole) and epochsEntered follow reconfiguration
	// (reconfig.go).
	epoch, role, epochsEntered atomic.Uint64
	quiet                      atomic.Bool
	attrs                      attrs
}

func newNodeTelemetry(o Options, replica uint8, cluster wire.U128, restarts *atomic.Uint64, peerDrops func() map[uint8]uint64) *nodeTelemetry {
	tp, mp := o.TracerProvider, o.MeterProvider
	if tp == nil {
		tp = tracenoop.NewTracerProvider()
	}
	if mp == nil {
		mp = metricnoop.NewMeterProvider()
	}
	t := &nodeTelemetry{tracer: tp.Tracer(instrumentationName), replica: replica, cluster: cluster, groups: map[uint64]*groupGauges{},
		byCommand: map[uint32]attrs{}, byStatus: map[uint64]*requestCounter{}}
	m := mp.Meter(instrumentationName)
	// telemetry.Setup hands a no-op provider when tracing is off: then
	// every trace hook returns at once.
	_, noop := tp.(tracenoop.TracerProvider)
	t.tracing = !noop
	if t.tracing {
		t.spans = newSpanQueue(t.tracer)
		_, _ = m.Int64ObservableCounter("iggy.telemetry.spans.dropped", metric.WithDescription("request and op spans dropped because the span builder fell behind"),
			metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
				o.Observe(t.spans.dropped.Load())
				return nil
			}))
	}
	for _, tr := range transports {
		t.byTransport[tr] = newAttrs(attribute.String("transport", tr.String()))
	}
	for _, g := range []uint64{0, wire.MetadataGroup} {
		t.byKind[kindIndex(g)] = newAttrs(attribute.String("kind", groupKind(g)))
	}
	seconds := metric.WithExplicitBucketBoundaries(0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5)
	_, _ = m.Int64ObservableCounter("iggy.requests", metric.WithDescription("client requests answered, by command and status"),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			t.cmdMu.RLock()
			defer t.cmdMu.RUnlock()
			for _, c := range t.byStatus {
				o.Observe(c.n.Load(), c.attrs.observe...)
			}
			return nil
		}))
	perTransport := func(name, desc string, counts *[clientplane.TransportWebSocket + 1]atomic.Int64) {
		_, _ = m.Int64ObservableCounter(name, metric.WithUnit("By"), metric.WithDescription(desc),
			metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
				for _, tr := range transports {
					o.Observe(counts[tr].Load(), t.byTransport[tr].observe...)
				}
				return nil
			}))
	}
	perTransport("iggy.bytes.in", "client request bytes, by transport", &t.bytesIn)
	perTransport("iggy.bytes.out", "client reply bytes, by transport", &t.bytesOut)
	t.requestLat, _ = m.Float64Histogram("iggy.request.duration", metric.WithUnit("s"), seconds,
		metric.WithDescription("request decode to reply, by command; SendMessages and PollMessages have their own histograms"))
	t.sendLat, _ = m.Float64Histogram("iggy.send.duration", metric.WithUnit("s"), seconds, metric.WithDescription("SendMessages decode to reply"))
	t.pollLat, _ = m.Float64Histogram("iggy.poll.duration", metric.WithUnit("s"), seconds, metric.WithDescription("PollMessages decode to reply"))
	t.commitLat, _ = m.Float64Histogram("iggy.vsr.commit.duration", metric.WithUnit("s"), seconds, metric.WithDescription("primary: prepare journaled to committed, by group kind"))
	_, _ = m.Int64ObservableUpDownCounter("iggy.connections", metric.WithDescription("open client connections, by transport"),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			for _, tr := range transports {
				o.Observe(t.connections[tr].Load(), t.byTransport[tr].observe...)
			}
			return nil
		}))
	_, _ = m.Int64ObservableCounter("iggy.actor.restarts", metric.WithDescription("actors restarted or stopped by their supervisor after a panic"),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(int64(restarts.Load()))
			return nil
		}))
	if peerDrops != nil {
		_, _ = m.Int64ObservableCounter("iggy.peer.queue.drops", metric.WithDescription("replica-plane frames dropped (full queue or no link), by peer"),
			metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
				for peer, n := range peerDrops() {
					o.Observe(int64(n), metric.WithAttributes(attribute.Int("peer", int(peer))))
				}
				return nil
			}))
	}
	_, _ = m.Int64ObservableCounter("iggy.partition.store.writes", metric.WithDescription("segment writes of the partitions (one per group commit: one writev, one fsync under enforce_fsync)"),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(t.storeWrites.Load())
			return nil
		}))
	_, _ = m.Int64ObservableCounter("iggy.partition.store.batches", metric.WithDescription("batches the partitions' segment writes carried"),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(t.storedBatches.Load())
			return nil
		}))
	for _, c := range []struct {
		name, desc string
		read       func(framebuf.Stats) uint64
	}{
		{"iggy.request_buffers.gets", "large request frames read into pooled buffers (internal/framebuf)", func(s framebuf.Stats) uint64 { return s.Gets }},
		{"iggy.request_buffers.reused", "pooled request buffers handed out again instead of allocated", func(s framebuf.Stats) uint64 { return s.Reused }},
		{"iggy.request_buffers.recycled", "request buffers returned to the pool once nothing read their bytes", func(s framebuf.Stats) uint64 { return s.Recycled }},
	} {
		_, _ = m.Int64ObservableCounter(c.name, metric.WithDescription(c.desc),
			metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
				o.Observe(int64(c.read(framebuf.ReadStats())))
				return nil
			}))
	}
	t.entityGauges(m)
	t.loginMetrics(m, seconds)
	t.edgeMetrics(m)
	t.diskMetrics(m)
	groupGauge := func(name, desc string, read func(*groupGauges) int64) {
		_, _ = m.Int64ObservableGauge(name, metric.WithDescription(desc),
			metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
				t.mu.Lock()
				defer t.mu.Unlock()
				for _, gg := range t.groups {
					if !gg.quiet.Load() { // a quiet group's figures do not move: no series for thousands of them
						o.Observe(read(gg), gg.attrs.observe...)
					}
				}
				return nil
			}))
	}
	t.clusterGauges(m)
	groupGauge("iggy.vsr.view", "view number, by group (awake groups)", func(g *groupGauges) int64 { return int64(g.view.Load()) })
	groupGauge("iggy.vsr.epoch", "reconfiguration epoch (the view's top 8 bits), by group", func(g *groupGauges) int64 { return int64(g.epoch.Load()) })
	groupGauge("iggy.vsr.role", "this replica's part in its roster, by group: 0 voter, 1 learner, 2 removed, 3 joiner not named yet",
		func(g *groupGauges) int64 { return int64(g.role.Load()) })
	groupGauge("iggy.vsr.epochs.entered", "epochs this replica entered since it started, by group", func(g *groupGauges) int64 { return int64(g.epochsEntered.Load()) })
	groupGauge("iggy.vsr.pipeline.depth", "prepares in the primary's pipeline, by group", func(g *groupGauges) int64 { return int64(g.pipeline.Load()) })
	groupGauge("iggy.vsr.commit.lag", "ops this replica knows committed but has not applied (commit_max - commit_min), by group",
		func(g *groupGauges) int64 {
			return int64(g.commitMax.Load() - min(g.commitMin.Load(), g.commitMax.Load()))
		})
	return t
}

// clusterGauges are the node's figures of scale: groups quiet and awake
// by kind, groups with a timer due, peers the node-level heartbeat hears,
// and the partitions' memory budget.
func (t *nodeTelemetry) clusterGauges(m metric.Meter) {
	states := [2][2]attrs{}
	for k, g := range []uint64{0, wire.MetadataGroup} {
		states[k][0] = newAttrs(attribute.String("kind", groupKind(g)), attribute.String("state", "awake"))
		states[k][1] = newAttrs(attribute.String("kind", groupKind(g)), attribute.String("state", "quiet"))
	}
	_, _ = m.Int64ObservableGauge("iggy.vsr.groups", metric.WithDescription("consensus groups on this node, by kind and state (quiet: no timer, no heartbeat)"),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			var count [2][2]int64
			t.mu.Lock()
			for g, gg := range t.groups {
				q := 0
				if gg.quiet.Load() {
					q = 1
				}
				count[kindIndex(g)][q]++
			}
			t.mu.Unlock()
			for k := range count {
				for q := range count[k] {
					o.Observe(count[k][q], states[k][q].observe...)
				}
			}
			return nil
		}))
	_, _ = m.Int64ObservableGauge("iggy.vsr.timers", metric.WithDescription("partition groups with a timer scheduled (awake groups the clock will tick)"),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			if f := t.timers.Load(); f != nil {
				o.Observe(int64((*f)()))
			}
			return nil
		}))
	// Figures the node keeps in atomics, read at collection.
	observe := func(name, desc string, read func() int64, counter bool, unit ...string) {
		cb := metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(read())
			return nil
		})
		u := metric.WithUnit(append(unit, "")[0])
		if counter {
			_, _ = m.Int64ObservableCounter(name, u, metric.WithDescription(desc), cb)
		} else {
			_, _ = m.Int64ObservableGauge(name, u, metric.WithDescription(desc), cb)
		}
	}
	gauge := func(name, desc string, v *atomic.Int64, counter bool, unit ...string) {
		observe(name, desc, v.Load, counter, unit...)
	}
	gauge("iggy.cluster.peers.live", "peers the node-level heartbeat hears", &t.peersLive, false)
	gauge("iggy.cluster.leader.handovers", "planned view changes this node started to give a partition to its preferred primary", &t.handOvers, true)
	gauge("iggy.cluster.transfer.bytes", "state-transfer chunk bytes this node served (partition moves, replicas catching up; paced by cluster.transfer_bandwidth)",
		&t.transferBytes, true, "By")
	transfer := func(name, desc string, counter bool, read func(*transferLimits) int64, unit ...string) {
		observe(name, desc, func() int64 {
			if l := t.transfers.Load(); l != nil {
				return read(l)
			}
			return 0
		}, counter, unit...)
	}
	transfer("iggy.cluster.transfer.offers.bytes", "bytes of the partition state-transfer offers this node holds for serving (bound: partition.transfer_served_cache_bytes_max)",
		false, func(l *transferLimits) int64 { return l.served.Load() }, "By")
	transfer("iggy.cluster.transfer.offers.refused", "partition state-transfer offers refused for now because the served offers held the bound",
		true, func(l *transferLimits) int64 { return l.refused.Load() })
	transfer("iggy.cluster.transfer.offers.hashed", "segment bytes partition offer builds read to hash (a range served before is not hashed again)",
		true, func(l *transferLimits) int64 { return l.hashed.Load() }, "By")
	transfer("iggy.cluster.transfer.receiving", "partition state transfers this node receives now (at most 4, replica-plane.md 7.7 rule 1)",
		false, func(l *transferLimits) int64 { return l.receiving.Load() })
	observe("iggy.cluster.transfer.staged.reserved", "disk bytes the partition state transfers this node receives reserved for their staged segments and have not written yet (refused beyond the soft disk reserve)",
		func() int64 {
			if s := t.store.Load(); s != nil {
				return s.StagedReserved()
			}
			return 0
		}, false, "By")
	gauge("iggy.cluster.partitions.moving", "partition groups this node is a member of that run on other voters than their placement (a move in progress)", &t.moving, false)
	gauge("iggy.cluster.partitions.led", "partition groups this node leads", &t.leading, false)
	gauge("iggy.cluster.partitions.led.away", "partition groups this node leads whose preferred primary is another node (the balancer hands them over)", &t.leadersAway, false)
	budget := func(name, desc string, read func(*memoryBudget) int64) {
		_, _ = m.Int64ObservableGauge(name, metric.WithUnit("By"), metric.WithDescription(desc),
			metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
				if b := t.memory.Load(); b != nil {
					o.Observe(read(b))
				}
				return nil
			}))
	}
	budget("iggy.memory.budget", "partition.memory_budget: the bound on partitions' cached batches and retained prepares", func(b *memoryBudget) int64 { return b.limit })
	budget("iggy.memory.used", "bytes partitions hold in cached batches, retained prepares and uncommitted prepares", func(b *memoryBudget) int64 { return b.usedBytes() })
	_, _ = m.Int64ObservableCounter("iggy.memory.sheds", metric.WithDescription("times a partition was asked to drop cached bytes to keep the memory budget"),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			if b := t.memory.Load(); b != nil {
				o.Observe(b.sheds.Load())
			}
			return nil
		}))
}

// liveness publishes what the node-level heartbeat hears.
func (t *nodeTelemetry) liveness(l *vsr.Liveness) {
	live := int64(0)
	for p := 0; p < vsr.MaxReplicas; p++ {
		if l.Members()&(1<<p) != 0 && p != int(t.replica) && l.Alive(uint8(p)) {
			live++
		}
	}
	t.peersLive.Store(live)
}

// entityGauges are the reference server's entity gauges under its names
// (server-behaviour.md 13.3: streams, topics, partitions, segments,
// messages, users, clients), sampled at collection: one question to the
// metadata actor per collection, none while the node serves.
func (t *nodeTelemetry) entityGauges(m metric.Meter) {
	series := []struct {
		name, desc string
		read       func(*entityCounts) int64
	}{
		{"streams", "number of streams", func(c *entityCounts) int64 { return int64(c.totals.Streams) }},
		{"topics", "number of topics", func(c *entityCounts) int64 { return int64(c.totals.Topics) }},
		{"partitions", "number of partitions", func(c *entityCounts) int64 { return int64(c.totals.Partitions) }},
		{"segments", "number of segments", func(c *entityCounts) int64 { return int64(c.totals.Segments) }},
		{"messages", "number of retained messages", func(c *entityCounts) int64 { return int64(c.totals.MessagesCount) }},
		{"users", "number of users", func(c *entityCounts) int64 { return int64(c.totals.Users) }},
		{"clients", "number of binary client connections", func(c *entityCounts) int64 { return int64(c.clients) }},
	}
	gauges := make([]metric.Int64ObservableGauge, len(series))
	observables := make([]metric.Observable, len(series))
	for i, s := range series {
		gauges[i], _ = m.Int64ObservableGauge(s.name, metric.WithDescription(s.desc))
		observables[i] = gauges[i]
	}
	_, _ = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		read := t.entities.Load()
		if read == nil {
			return nil
		}
		c := (*read)()
		if c == nil {
			return nil // the metadata actor did not answer (stopping, or booting again)
		}
		for i, s := range series {
			o.ObserveInt64(gauges[i], s.read(c))
		}
		return nil
	}, observables...)
}

// loginMetrics are the login path's series (issue 17): attempts by
// outcome, the verification queue's depth, the throttle's keys and the
// verification latency.
func (t *nodeTelemetry) loginMetrics(m metric.Meter, seconds metric.HistogramOption) {
	var outcomes [loginOutcomeCount]attrs
	for o := range loginOutcomeCount {
		outcomes[o] = newAttrs(attribute.String("outcome", loginOutcomeNames[o]))
	}
	_, _ = m.Int64ObservableCounter("iggy.login.attempts",
		metric.WithDescription("logins by outcome: ok, bad_credentials (evicted), throttled and pool_full (answered TransientNotAccepted), abandoned (the connection closed before the check)"),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			for i := range t.loginOutcomes {
				o.Observe(t.loginOutcomes[i].Load(), outcomes[i].observe...)
			}
			return nil
		}))
	_, _ = m.Int64ObservableGauge("iggy.login.verify.queue", metric.WithDescription("login checks waiting for a verification worker (bound: login.verify_queue)"),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(t.loginQueued.Load())
			return nil
		}))
	_, _ = m.Int64ObservableGauge("iggy.login.waiting", metric.WithDescription("logins waiting for their address's turn (bound per address: login.throttle.max_waiting_per_address)"),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(t.loginWaiting.Load())
			return nil
		}))
	_, _ = m.Int64ObservableGauge("iggy.login.throttle.tracked", metric.WithDescription("addresses and (user, address) pairs the login throttle holds (bound: login.throttle.max_tracked)"),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(t.loginTracked.Load())
			return nil
		}))
	t.loginVerifyLat, _ = m.Float64Histogram("iggy.login.verify.duration", metric.WithUnit("s"), seconds,
		metric.WithDescription("a verification worker's time on one login check (Argon2id, token digest)"))
}

// edgeMetrics are the client edge's limits (plane/client "Limits"):
// connections refused or closed at a limit (QUIC streams abandoned, for
// the frame reasons), by reason, and the frame budget in use.
func (t *nodeTelemetry) edgeMetrics(m metric.Meter) {
	byReason := make([]attrs, len(clientplane.Reasons))
	for i, r := range clientplane.Reasons {
		byReason[i] = newAttrs(attribute.String("reason", r.String()))
	}
	_, _ = m.Int64ObservableCounter("iggy.connections.limited",
		metric.WithDescription("client connections refused or closed at a limit (QUIC: streams abandoned for frame_deadline, pre_login_frame, budget), by reason"),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			if g := t.edge.Load(); g != nil {
				for i, r := range clientplane.Reasons {
					o.Observe(g.Count(r), byReason[i].observe...)
				}
			}
			return nil
		}))
	_, _ = m.Int64ObservableGauge("iggy.frames.partial.bytes", metric.WithUnit("By"),
		metric.WithDescription("bytes held by partially read client frames (limits.frame_budget in use)"),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			if g := t.edge.Load(); g != nil {
				o.Observe(g.PartialFrameBytes())
			}
			return nil
		}))
}

// close builds the spans still queued; the node calls it after its
// actors stopped.
func (t *nodeTelemetry) close() {
	if t.spans != nil {
		t.spans.close()
	}
}

func groupKind(g uint64) string {
	if g == wire.MetadataGroup {
		return "metadata"
	}
	return "partition"
}

func kindIndex(g uint64) int {
	if g == wire.MetadataGroup {
		return 1
	}
	return 0
}

// commandKey tells requests apart for metrics: the command code of a
// NonReplicated request, else the operation with the top bit set.
func commandKey(h *wire.RequestHeader) uint32 {
	if h.Operation == wire.OpNonReplicated {
		return uint32(h.Code)
	}
	return 1<<31 | uint32(h.Operation)
}

// commandName names a commandKey for metrics and spans: the command
// code's name, or the operation's.
func commandName(key uint32) string {
	if key&(1<<31) != 0 {
		return wire.Operation(key &^ (1 << 31)).String()
	}
	return wire.CommandCode(key).String()
}

// commandSeries are a command's attribute set and its counter for a
// status; built on the first such request.
func (t *nodeTelemetry) commandSeries(r *requestTrace, status uint32) (cmd attrs, count *requestCounter) {
	key := uint64(r.cmd)<<32 | uint64(status)
	t.cmdMu.RLock()
	cmd, ok1 := t.byCommand[r.cmd]
	count, ok2 := t.byStatus[key]
	t.cmdMu.RUnlock()
	if ok1 && ok2 {
		return cmd, count
	}
	t.cmdMu.Lock()
	defer t.cmdMu.Unlock()
	if cmd, ok1 = t.byCommand[r.cmd]; !ok1 {
		cmd = newAttrs(attribute.String("command", commandName(r.cmd)))
		t.byCommand[r.cmd] = cmd
	}
	if count, ok2 = t.byStatus[key]; !ok2 {
		count = &requestCounter{attrs: newAttrs(attribute.String("command", commandName(r.cmd)), attribute.Int64("status", int64(status)))}
		t.byStatus[key] = count
	}
	return cmd, count
}

// requestTrace is one client request in flight on a connection (they are
// served one at a time).
type requestTrace struct {
	start time.Time   // zero: none in flight
	cmd   uint32      // commandKey
	span  *spanRecord // nil when not tracing
}

var (
	sendKeys = [2]uint32{uint32(wire.CodeSendMessages), 1<<31 | uint32(wire.OpSendMessages)}
	pollKey  = uint32(wire.CodePollMessages)
)

func (t *nodeTelemetry) beginRequest(h *wire.RequestHeader, size int, transport clientplane.Transport) requestTrace {
	r := requestTrace{start: time.Now(), cmd: commandKey(h)}
	t.bytesIn[transport].Add(int64(size))
	if t.tracing {
		// Not pooled: a partition actor may still hold it after the
		// connection gave up on the reply.
		r.span = &spanRecord{kind: kindRequest, start: r.start, replica: t.replica, cmd: r.cmd, bytesIn: size}
		r.span.trace, r.span.span = traceid.Random()
	}
	return r
}

// endRequest records the reply; nil: the request ended without one (its
// connection closed, or a reply that only closes it), counted by no
// status.
func (t *nodeTelemetry) endRequest(r *requestTrace, reply []byte, size int, transport clientplane.Transport) {
	if r.start.IsZero() {
		return
	}
	now := time.Now()
	ctx := context.Background()
	if len(reply) < wire.HeaderSize {
		if r.span != nil {
			r.span.end = now
			t.spans.finish(r.span)
		}
		*r = requestTrace{}
		return
	}
	status := wire.HeaderOf(reply).Reply().Status
	t.bytesOut[transport].Add(int64(size))
	cmd, count := t.commandSeries(r, status)
	count.n.Add(1)
	d := now.Sub(r.start).Seconds()
	switch r.cmd {
	case sendKeys[0], sendKeys[1]:
		t.sendLat.Record(ctx, d)
	case pollKey:
		t.pollLat.Record(ctx, d)
	default:
		t.requestLat.Record(ctx, d, cmd.record...)
	}
	if r.span != nil {
		r.span.end, r.span.replied, r.span.status, r.span.bytesOut = now, true, status, size
		t.spans.finish(r.span)
	}
	*r = requestTrace{}
}

// groupTrace follows one consensus group on this replica: a span per op
// (spanfile.SpanOp, trace id derived from cluster, group and op), spans
// for view changes, recovery, repair and state transfer, and the group's
// gauges. Its methods are no-ops on nil (an actor before its boot).
type groupTrace struct {
	t            *nodeTelemetry
	group        uint64
	gauges       *groupGauges
	ops          map[uint64]*spanRecord // open op spans
	status       trace.Span             // the open view change or recovery
	repair       trace.Span
	repairTarget uint64
	transfer     trace.Span
	// journaledAt: when recent ops were journaled here (op mod its size),
	// for the commit latency, kept with tracing off too.
	journaledAt [256]struct {
		op uint64
		at time.Time
	}
	// admitted is when the primary last handed a request to its core: the
	// prepare its next Ready journals is that request's.
	admitted time.Time
	link     trace.SpanContext
}

func (t *nodeTelemetry) group(g uint64) *groupTrace {
	gg := &groupGauges{attrs: newAttrs(attribute.Int64(spanfile.AttrGroup, int64(g)), attribute.String("kind", groupKind(g)))}
	t.mu.Lock()
	t.groups[g] = gg
	t.mu.Unlock()
	return &groupTrace{t: t, group: g, gauges: gg, ops: map[uint64]*spanRecord{}}
}

// tracing reports whether spans are recorded.
func (g *groupTrace) tracing() bool { return g != nil && g.t.tracing }

// close ends the group's open spans and drops its gauges (the actor stops
// or boots again).
func (g *groupTrace) close() {
	if g == nil {
		return
	}
	g.t.mu.Lock()
	if g.t.groups[g.group] == g.gauges {
		delete(g.t.groups, g.group)
	}
	g.t.mu.Unlock()
	for op := range g.ops {
		g.endOp(op, "stopped", false)
	}
	for _, s := range []trace.Span{g.status, g.repair, g.transfer} {
		if s != nil {
			endSpan(s, "stopped", false)
		}
	}
}

// endSpan ends s with an outcome, marked an error when failed.
func endSpan(s trace.Span, outcome string, failed bool) {
	s.SetAttributes(attribute.String(spanfile.AttrOutcome, outcome))
	if failed {
		s.SetStatus(codes.Error, outcome)
	}
	s.End()
}

// publish stores the core's figures for the gauges.
func (g *groupTrace) publish(core *vsr.Replica) {
	if g == nil {
		return
	}
	g.gauges.view.Store(uint64(core.View()))
	g.gauges.quiet.Store(core.Quiet())
	g.gauges.pipeline.Store(uint64(core.PipelineLen()))
	g.gauges.commitMin.Store(core.CommitMin())
	g.gauges.commitMax.Store(core.CommitMax())
	g.gauges.epoch.Store(uint64(core.Epoch()))
	g.gauges.role.Store(uint64(memberRole(core)))
	g.gauges.epochsEntered.Store(core.EpochsEntered)
}

// memberRole is a core's part in its roster for iggy.vsr.role: 0 voter,
// 1 learner, 2 removed, 3 not named yet (a joiner).
func memberRole(core *vsr.Replica) int {
	switch {
	case core.Removed():
		return 2
	case core.Learner():
		return 1
	case !core.Member():
		return 3
	}
	return 0
}

// admit marks the time a request entered the core (primary), and the
// request span the op will link to.
func (g *groupTrace) admit(req *clientRequest) {
	if !g.tracing() {
		return
	}
	g.admitted = time.Now()
	g.link = trace.SpanContext{}
	if req != nil && req.span != nil {
		g.link = req.span.spanContext()
	}
}

// op is the open span of op, started at now if there is none; its trace
// id is derived from (cluster, group, op), the same on every replica.
func (g *groupTrace) op(op uint64, view uint32, now time.Time) *spanRecord {
	if r, ok := g.ops[op]; ok {
		return r
	}
	r := g.t.spans.newOp()
	r.trace = trace.TraceID(spanfile.OpTraceID(g.t.cluster.Lo, g.t.cluster.Hi, g.group, op))
	r.start, r.replica, r.group, r.op, r.view, r.link = now, g.t.replica, g.group, op, view, g.link
	g.ops[op] = r
	return r
}

// endOp hands op's record to the builder, ended now with an outcome
// (empty: applied).
func (g *groupTrace) endOp(op uint64, outcome string, failed bool) {
	r, ok := g.ops[op]
	if !ok {
		return
	}
	delete(g.ops, op)
	r.end, r.outcome, r.failed = time.Now(), outcome, failed
	g.t.spans.finish(r)
}

// journaled: this replica's journal holds op; at the primary (leading)
// that is also the moment the prepare was built.
func (g *groupTrace) journaled(ph wire.PrepareHeader, leading bool) {
	if g == nil || !leading && !g.t.tracing {
		return
	}
	now := time.Now()
	if leading {
		j := &g.journaledAt[ph.Op%uint64(len(g.journaledAt))]
		j.op, j.at = ph.Op, now
	}
	if !g.t.tracing {
		return
	}
	if leading && !g.admitted.IsZero() {
		g.op(ph.Op, ph.View, g.admitted).event(spanfile.EventAdmitted, g.admitted, -1)
		g.admitted, g.link = time.Time{}, trace.SpanContext{}
	}
	r := g.op(ph.Op, ph.View, now)
	if leading {
		r.event(spanfile.EventPrepared, now, -1)
	}
	r.event(spanfile.EventJournaled, now, -1)
}

// sent notes the prepares among a Ready's sends (the primary's
// replication, a backup's forward along the chain).
func (g *groupTrace) sent(envs []vsr.Envelope) {
	if !g.tracing() {
		return
	}
	for _, e := range envs {
		h := wire.HeaderOf(e.Head)
		if h.Command() != wire.CmdPrepare {
			continue
		}
		if r, ok := g.ops[h.Prepare().Op]; ok {
			r.event(spanfile.EventForwarded, time.Now(), int16(e.To))
		}
	}
}

// peerFrame notes a PrepareOk arriving (at the primary).
func (g *groupTrace) peerFrame(from uint8, frame []byte) {
	if !g.tracing() {
		return
	}
	h := wire.HeaderOf(frame)
	if h.Command() != wire.CmdPrepareOk {
		return
	}
	if r, ok := g.ops[h.PrepareOk().Op]; ok {
		r.event(spanfile.EventPrepareOK, time.Now(), int16(from))
	}
}

// committed: the commit point passed c; leading records commit latency.
func (g *groupTrace) committed(c vsr.Committed, leading bool) {
	if g == nil {
		return
	}
	if j := &g.journaledAt[c.Op%uint64(len(g.journaledAt))]; leading && j.op == c.Op && !j.at.IsZero() {
		g.t.commitLat.Record(context.Background(), time.Since(j.at).Seconds(), g.t.byKind[kindIndex(g.group)].record...)
	}
	if !g.t.tracing {
		return
	}
	now := time.Now()
	g.op(c.Op, wire.HeaderOf(c.Frame).Prepare().View, now).event(spanfile.EventCommitted, now, -1)
}

// applied ends a backup's op span; replied (primary) ends the primary's.
func (g *groupTrace) applied(op uint64, replied bool) {
	if !g.tracing() {
		return
	}
	r, ok := g.ops[op]
	if !ok {
		return
	}
	now := time.Now()
	r.event(spanfile.EventApplied, now, -1)
	if replied {
		r.event(spanfile.EventReplied, now, -1)
	}
	g.endOp(op, "", false)
}

// truncateFrom ends the spans of discarded ops (from op up).
func (g *groupTrace) truncateFrom(from uint64) {
	if !g.tracing() {
		return
	}
	for op := range g.ops {
		if op >= from {
			g.endOp(op, "truncated", true)
		}
	}
}

// statusChanged follows the core's status: a view change or recovery
// span runs until the replica is normal again.
func (g *groupTrace) statusChanged(status vsr.Status, view uint32, role string) {
	if !g.tracing() {
		return
	}
	if g.status != nil && status == vsr.StatusNormal {
		g.status.SetAttributes(attribute.Int64(spanfile.AttrView, int64(view)))
		endSpan(g.status, "normal as "+role, false)
		g.status = nil
		return
	}
	if status == vsr.StatusNormal {
		return
	}
	name, reason := spanfile.SpanViewChange, "view "+strconv.Itoa(int(view))+" began (a timeout, or a higher view seen)"
	if status == vsr.StatusRecovering {
		name, reason = spanfile.SpanRecovery, "restarted: probing for the current view"
	}
	if g.status != nil {
		endSpan(g.status, "superseded by view "+strconv.Itoa(int(view)), false)
	}
	_, g.status = g.t.tracer.Start(context.Background(), name, trace.WithAttributes(
		attribute.Int64(spanfile.AttrGroup, int64(g.group)), attribute.Int64(spanfile.AttrView, int64(view)),
		attribute.Int(spanfile.AttrReplica, int(g.t.replica)), attribute.String(spanfile.AttrReason, reason)))
}

// rosterEvent marks a committed roster on the timeline: an instant
// SpanEpoch whose reason names the epoch and its members.
func (g *groupTrace) rosterEvent(r vsr.Roster) {
	if !g.tracing() {
		return
	}
	_, s := g.t.tracer.Start(context.Background(), spanfile.SpanEpoch, trace.WithAttributes(
		attribute.Int64(spanfile.AttrGroup, int64(g.group)), attribute.Int64(spanfile.AttrView, int64(vsr.FirstView(r.Epoch))),
		attribute.Int(spanfile.AttrReplica, int(g.t.replica)), attribute.String(spanfile.AttrReason, r.String())))
	endSpan(s, "entered", false)
}

// statusContext and transferContext are contexts for log lines about the
// open view change or recovery, or transfer, so they carry its trace and
// span ids.
func (g *groupTrace) statusContext() context.Context {
	if g == nil {
		return context.Background()
	}
	return spanContext(g.status)
}

func (g *groupTrace) transferContext() context.Context {
	if g == nil {
		return context.Background()
	}
	return spanContext(g.transfer)
}

func spanContext(s trace.Span) context.Context {
	if s == nil {
		return context.Background()
	}
	return trace.ContextWithSpan(context.Background(), s)
}

// interval starts a repair or transfer span, ending the one it replaces.
func (g *groupTrace) interval(open *trace.Span, name string, from uint8, commitMin, commitMax uint64, reason string) {
	if *open != nil {
		endSpan(*open, "superseded", false)
	}
	_, *open = g.t.tracer.Start(context.Background(), name, trace.WithAttributes(
		attribute.Int64(spanfile.AttrGroup, int64(g.group)), attribute.Int(spanfile.AttrReplica, int(g.t.replica)),
		attribute.Int(spanfile.AttrPeer, int(from)), attribute.Int64(spanfile.AttrCommitMin, int64(commitMin)),
		attribute.Int64(spanfile.AttrCommitMax, int64(commitMax)), attribute.String(spanfile.AttrReason, reason)))
}

// endInterval ends an open repair or transfer span.
func endInterval(open *trace.Span, outcome string, failed bool) {
	if *open != nil {
		endSpan(*open, outcome, failed)
		*open = nil
	}
}

// repairStarted opens a repair span; it ends when the commit point reaches
// target, or the next session or a refusal supersedes it.
func (g *groupTrace) repairStarted(from uint8, commitMin, target uint64) {
	if !g.tracing() {
		return
	}
	g.interval(&g.repair, spanfile.SpanRepair, from, commitMin, target, "commit_min behind commit_max")
	g.repairTarget = target
}

func (g *groupTrace) repairProgress(commitMin uint64) {
	if g != nil && g.repair != nil && commitMin >= g.repairTarget {
		endInterval(&g.repair, "caught up", false)
	}
}

func (g *groupTrace) endRepair(outcome string) {
	if g != nil {
		endInterval(&g.repair, outcome, false)
	}
}

func (g *groupTrace) transferStarted(from uint8, commitMin, commitMax uint64) {
	if g.tracing() {
		g.interval(&g.transfer, spanfile.SpanStateTransfer, from, commitMin, commitMax, "repair refused: the ops are compacted")
	}
}

// endTransfer ends the transfer span; anything but installed is a failure.
func (g *groupTrace) endTransfer(outcome string) {
	if g != nil {
		endInterval(&g.transfer, outcome, outcome != "installed")
	}
}
