package actors

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	clientplane "iggynode/plane/client"
	"iggynode/telemetry/spanfile"
	"iggynode/telemetry/traceid"
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
		o.TracerProvider = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(recs[i]), sdktrace.WithIDGenerator(traceid.Generator()))
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
	// The op links the client request that admitted it, on the primary.
	links := spans[0].Links()
	if len(links) != 1 {
		t.Fatalf("primary's op span has %d links", len(links))
	}
	var request sdktrace.ReadOnlySpan
	for _, s := range recs[0].Ended() {
		if s.Name() == spanfile.SpanRequest && s.SpanContext().SpanID() == links[0].SpanContext.SpanID() {
			request = s
		}
	}
	if request == nil {
		t.Fatal("the linked request span was not recorded")
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
			tel.endRequest(&r, reply, clientplane.TransportTCP)
		})
		if n != 0 {
			t.Errorf("%s: %v allocations per request", commandName(commandKey(&h)), n)
		}
	}
}
