package actors

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"iggynode/config"
	"iggynode/internal/testutil"
	clientplane "iggynode/plane/client"
	"iggynode/telemetry"
	"iggynode/telemetry/spanfile"
	"iggynode/vsr"
	"iggynode/wire"
)

// Issue 8 with in-memory exporters: one send replicated across three
// nodes leaves an op span on each, in one trace derived from (cluster,
// group, op), with the steps each role takes; the request span on the
// primary links to it; and the metrics move.
func TestReplicatedOpIsTracedOnEveryReplica(t *testing.T) {
	recs := make([]*tracetest.SpanRecorder, 3)
	readers := make([]*sdkmetric.ManualReader, 3)
	nodes := startClusterWith(t, 3, func(o *Options) {
		i := o.Config.Cluster.ReplicaID
		recs[i], readers[i] = tracetest.NewSpanRecorder(), sdkmetric.NewManualReader()
		o.TracerProvider = recordingProvider(recs[i])
		o.MeterProvider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(readers[i]))
	})
	send := oneTopic(t, nodes[0], "traced")
	send(0, 3)
	group, _ := wire.PartitionGroup(0, 0, 0)

	// The third send's op, on every replica, once each has applied it.
	opSpans := func(i int) map[int64]sdktrace.ReadOnlySpan {
		out := map[int64]sdktrace.ReadOnlySpan{}
		for _, s := range recs[i].Ended() {
			if s.Name() != spanfile.SpanOp || attrInt(s.Attributes(), spanfile.AttrGroup) != int64(group) {
				continue
			}
			out[attrInt(s.Attributes(), spanfile.AttrOp)] = s
		}
		return out
	}
	var spans [3]sdktrace.ReadOnlySpan
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		all := true
		for i := range spans {
			spans[i] = opSpans(i)[3]
			all = all && spans[i] != nil
		}
		if all {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("op 3 of group %d not traced on every replica: %v", group, spans)
		}
	}
	cluster := nodes[0].cluster.id
	want := trace.TraceID(spanfile.OpTraceID(cluster.Lo, cluster.Hi, group, 3))
	for i, s := range spans {
		if s.SpanContext().TraceID() != want {
			t.Errorf("replica %d: trace id %v, want the derived %v", i, s.SpanContext().TraceID(), want)
		}
		if got := attrInt(s.Attributes(), spanfile.AttrReplica); got != int64(i) {
			t.Errorf("replica %d: span says replica %d", i, got)
		}
		if attrInt(s.Attributes(), spanfile.AttrView) != 0 {
			t.Errorf("replica %d: view attribute %v", i, s.Attributes())
		}
	}
	events := func(s sdktrace.ReadOnlySpan) map[string][]int64 {
		out := map[string][]int64{}
		for _, e := range s.Events() {
			out[e.Name] = append(out[e.Name], attrInt(e.Attributes, spanfile.AttrPeer))
		}
		return out
	}
	primary := events(spans[0])
	for _, name := range []string{spanfile.EventAdmitted, spanfile.EventPrepared, spanfile.EventJournaled, spanfile.EventForwarded,
		spanfile.EventPrepareOK, spanfile.EventCommitted, spanfile.EventApplied, spanfile.EventReplied} {
		if len(primary[name]) == 0 {
			t.Errorf("primary's op span lacks %q: %v", name, primary)
		}
	}
	for _, peer := range primary[spanfile.EventPrepareOK] {
		if peer != 1 && peer != 2 {
			t.Errorf("a prepare_ok from replica %d", peer)
		}
	}
	for i := 1; i < 3; i++ {
		ev := events(spans[i])
		for _, name := range []string{spanfile.EventJournaled, spanfile.EventCommitted, spanfile.EventApplied} {
			if len(ev[name]) == 0 {
				t.Errorf("backup %d's op span lacks %q: %v", i, name, ev)
			}
		}
		if len(ev[spanfile.EventReplied]) != 0 || len(ev[spanfile.EventPrepared]) != 0 {
			t.Errorf("backup %d prepared or replied: %v", i, ev)
		}
	}
	// Each span's steps keep the times they happened, in the order the
	// protocol takes them, inside the span.
	order := map[string]int{spanfile.EventAdmitted: 0, spanfile.EventPrepared: 1, spanfile.EventJournaled: 2,
		spanfile.EventCommitted: 4, spanfile.EventApplied: 5, spanfile.EventReplied: 6}
	for i, s := range spans {
		last, lastRank := s.StartTime(), -1
		for _, e := range s.Events() {
			rank, ordered := order[e.Name]
			if e.Time.Before(last) || e.Time.After(s.EndTime()) || ordered && rank < lastRank {
				t.Errorf("replica %d: event %q at %v out of order (span %v..%v, previous at %v)", i, e.Name, e.Time, s.StartTime(), s.EndTime(), last)
			}
			if ordered {
				lastRank = rank
			}
			last = e.Time
		}
	}
	// The op links the client request that admitted it, on the primary.
	links := spans[0].Links()
	if len(links) != 1 {
		t.Fatalf("primary's op span has %d links", len(links))
	}
	// Spans are built off the request's path: the request span may come
	// after the op span.
	var request sdktrace.ReadOnlySpan
	for deadline := time.Now().Add(5 * time.Second); request == nil; time.Sleep(10 * time.Millisecond) {
		for _, s := range recs[0].Ended() {
			if s.Name() == spanfile.SpanRequest && s.SpanContext().SpanID() == links[0].SpanContext.SpanID() &&
				s.SpanContext().TraceID() == links[0].SpanContext.TraceID() {
				request = s
			}
		}
		if request == nil && time.Now().After(deadline) {
			t.Fatal("the linked request span was not recorded")
		}
	}
	if admitted := spans[0].Events()[0]; admitted.Name != spanfile.EventAdmitted || admitted.Time.Before(request.StartTime()) ||
		spans[0].EndTime().After(request.EndTime()) {
		t.Errorf("the op (%v, %v..%v) is not inside its request (%v..%v)", admitted.Name, admitted.Time, spans[0].EndTime(),
			request.StartTime(), request.EndTime())
	}
	if attrInt(request.Attributes(), spanfile.AttrStatus) != 0 || attrInt(request.Attributes(), spanfile.AttrPart) != 0 ||
		attrInt(request.Attributes(), spanfile.AttrBytesIn) <= wire.HeaderSize || attrString(request.Attributes(), spanfile.AttrCommand) == "" {
		t.Errorf("request span attributes: %v", request.Attributes())
	}

	// Metrics: requests and bytes counted, commit latency recorded at the
	// primary, a view gauge per group, one TCP connection.
	var rm metricdata.ResourceMetrics
	if err := readers[0].Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					got[m.Name] += float64(p.Value)
				}
			case metricdata.Gauge[int64]:
				got[m.Name] += float64(len(d.DataPoints))
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					got[m.Name] += float64(p.Count)
				}
			}
		}
	}
	for name, atLeast := range map[string]float64{"iggy.requests": 5, "iggy.bytes.in": 5 * wire.HeaderSize, "iggy.bytes.out": 5 * wire.HeaderSize,
		"iggy.send.duration": 3, "iggy.vsr.commit.duration": 3, "iggy.vsr.view": 2, "iggy.connections": 1} {
		if got[name] < atLeast {
			t.Errorf("metric %s = %v, want at least %v (all: %v)", name, got[name], atLeast, got)
		}
	}
	// The request buffer pool's counters (internal/framebuf) are exported.
	for _, name := range []string{"iggy.request_buffers.gets", "iggy.request_buffers.reused", "iggy.request_buffers.recycled"} {
		if _, ok := got[name]; !ok {
			t.Errorf("metric %s is not exported", name)
		}
	}
}

func attrInt(attrs []attribute.KeyValue, key string) int64 {
	for _, a := range attrs {
		if string(a.Key) == key {
			return a.Value.AsInt64()
		}
	}
	return -1
}

func attrString(attrs []attribute.KeyValue, key string) string {
	for _, a := range attrs {
		if string(a.Key) == key {
			return a.Value.AsString()
		}
	}
	return ""
}

// DESIGN.md "no per-message allocation": with metrics on (a real SDK
// meter provider) and tracing off, a request's measurements, its op's
// journal and commit hooks allocate nothing.
func TestRequestMetricsAllocateNothing(t *testing.T) {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	tel := newNodeTelemetry(Options{MeterProvider: mp}, 0, wire.U128{}, new(atomic.Uint64), nil)
	g := tel.group(5)
	reply := make([]byte, wire.HeaderSize)
	for _, h := range []wire.RequestHeader{{Operation: wire.OpSendMessages}, {Operation: wire.OpNonReplicated, Code: wire.CodePollMessages}} {
		n := testing.AllocsPerRun(200, func() {
			r := tel.beginRequest(&h, 1000, clientplane.TransportTCP)
			g.journaled(wire.PrepareHeader{Op: 7}, true)
			g.committed(vsr.Committed{Op: 7}, true)
			tel.endRequest(&r, reply, len(reply), clientplane.TransportTCP)
		})
		if n != 0 {
			t.Errorf("%s: %v allocations per request", commandName(commandKey(&h)), n)
		}
	}
}

// The reference server's entity gauges (server-behaviour.md 13.3) count
// what the node holds, read at collection.
func TestEntityGaugesCountTheNode(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	nodes := startNodes(t, 1, func(o *Options) {
		o.MeterProvider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	})
	send := oneTopic(t, nodes[0], "counted")
	send(0, 3)
	gauges := func() map[string]int64 {
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(context.Background(), &rm); err != nil {
			t.Fatal(err)
		}
		out := map[string]int64{}
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				if g, ok := m.Data.(metricdata.Gauge[int64]); ok && len(g.DataPoints) == 1 {
					out[m.Name] = g.DataPoints[0].Value
				}
			}
		}
		return out
	}
	want := map[string]int64{"streams": 1, "topics": 1, "partitions": 1, "segments": 1, "messages": 3, "users": 1, "clients": 1}
	// Partition figures reach the metadata actor after the apply.
	var got map[string]int64
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		got = gauges()
		if got["messages"] == want["messages"] || time.Now().After(deadline) {
			break
		}
	}
	for name, v := range want {
		if got[name] != v {
			t.Errorf("gauge %s = %d, want %d (all: %v)", name, got[name], v, got)
		}
	}
}

// A view change is a span, and the node's log lines about it carry its
// trace and span ids (through telemetry.LogHandler), so a reader goes
// from the log to the trace.
func TestViewChangeLogLinesCarryItsSpan(t *testing.T) {
	recs := make([]*tracetest.SpanRecorder, 3)
	logs := make([]*testutil.Buffer, 3)
	nodes := startClusterWith(t, 3, func(o *Options) {
		i := o.Config.Cluster.ReplicaID
		recs[i], logs[i] = tracetest.NewSpanRecorder(), &testutil.Buffer{}
		o.TracerProvider = recordingProvider(recs[i])
		o.Logger = slog.New((*telemetry.Telemetry)(nil).LogHandler(slog.NewTextHandler(logs[i], nil)))
		o.Config.Cluster.HeartbeatTimeout = config.Duration(time.Second)
		o.Config.Cluster.CommitBroadcastInterval = config.Duration(100 * time.Millisecond)
	})
	// Replica 0 leads the metadata group; without it the others elect.
	if err := nodes[0].Close(); err != nil {
		t.Fatal(err)
	}
	group := fmt.Sprint(wire.MetadataGroup)
	line := regexp.MustCompile(`msg="view (change|settled)" actor=metadata group=` + group + ` view=(\d+) .*trace_id=([0-9a-f]{32}) span_id=([0-9a-f]{16})`)
	if !logs[1].Await(`msg="view settled" actor=metadata group=`+group, 20*time.Second) {
		t.Fatalf("replica 1 never settled a new view:\n%s", logs[1].String())
	}
	// Each view change line names a view change span replica 1 recorded,
	// and the settled line names the one that ended.
	spans := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range recs[1].Ended() {
		if s.Name() == spanfile.SpanViewChange {
			spans[s.SpanContext().TraceID().String()+"/"+s.SpanContext().SpanID().String()] = s
		}
	}
	var changes, settled int
	for _, m := range line.FindAllStringSubmatch(logs[1].String(), -1) {
		s, ok := spans[m[3]+"/"+m[4]]
		if !ok {
			t.Errorf("log line %q names no recorded view change span", m[0])
			continue
		}
		if m[1] == "change" {
			changes++
			if v := attrInt(s.Attributes(), spanfile.AttrView); fmt.Sprint(v) != m[2] {
				t.Errorf("line for view %s names the span of view %d", m[2], v)
			}
		} else {
			settled++
			if !strings.HasPrefix(attrString(s.Attributes(), spanfile.AttrOutcome), "normal as ") {
				t.Errorf("settled line names a span that ended %q", attrString(s.Attributes(), spanfile.AttrOutcome))
			}
		}
	}
	if changes == 0 || settled == 0 {
		t.Fatalf("%d view change and %d settled lines carry span ids:\n%s", changes, settled, logs[1].String())
	}
}
