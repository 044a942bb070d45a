package actors

import (
	"context"
	"net"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"iggynode/client"
	"iggynode/wire"
)

// The edge's limits follow the connection actor's session (plane/client
// "Limits"): before login a header claiming 64 MiB is refused from the
// header and counted by reason; after the SDK logs in, a 1 MiB batch
// goes through; the budget gauge reads zero once the frames are in.
func TestEdgeLimitsFollowTheSession(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	nodes := startNodes(t, 1, func(o *Options) {
		o.MeterProvider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	})
	n := nodes[0]

	nc, err := net.DialTimeout("tcp", n.TCPAddr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	var h wire.Header
	r := wire.RequestHeader{Size: wire.DefaultMaxFrameSize, Client: wire.U128{Lo: 1}, Operation: wire.OpRegister}
	r.Encode(&h)
	if _, err := nc.Write(h[:]); err != nil {
		t.Fatal(err)
	}
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	var one [1]byte
	if _, err := nc.Read(one[:]); err == nil {
		t.Fatal("the node answered a pre-login 64 MiB header instead of closing")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("the node kept the connection of a pre-login 64 MiB header open")
	}

	ctx, c := rootClient(t, n)
	s, err := c.CreateStream(ctx, "limits", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, wire.ID(s.ID), "t", 1, nil); err != nil {
		t.Fatal(err)
	}
	msgs := make([]wire.Message, 100)
	for i := range msgs {
		msgs[i] = client.NewMessage(make([]byte, 10<<10))
	}
	if _, err := c.SendMessages(ctx, wire.ID(s.ID), wire.ID(0), wire.PartitionID(0), msgs); err != nil {
		t.Fatalf("a logged-in 1 MiB batch: %v", err)
	}

	// The reader gives the frame's budget back after handing it on, which
	// can be after the reply is out: the gauge reaches zero soon, not at once.
	var limited map[string]int64
	partial := int64(-1)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		limited, partial = collectEdgeLimits(t, reader)
		if partial == 0 || time.Now().After(deadline) {
			break
		}
	}
	if limited["pre_login_frame"] != 1 || limited["node_cap"] != 0 || len(limited) != 7 {
		t.Errorf("iggy.connections.limited %v, want pre_login_frame 1 and every reason present", limited)
	}
	if partial != 0 {
		t.Errorf("iggy.frames.partial.bytes %d, want 0", partial)
	}
}

// collectEdgeLimits reads iggy.connections.limited by reason and the
// iggy.frames.partial.bytes gauge (-1 when absent).
func collectEdgeLimits(t *testing.T, reader *sdkmetric.ManualReader) (map[string]int64, int64) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	limited, partial := map[string]int64{}, int64(-1)
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				if m.Name == "iggy.connections.limited" {
					for _, p := range d.DataPoints {
						reason, _ := p.Attributes.Value("reason")
						limited[reason.AsString()] = p.Value
					}
				}
			case metricdata.Gauge[int64]:
				if m.Name == "iggy.frames.partial.bytes" && len(d.DataPoints) == 1 {
					partial = d.DataPoints[0].Value
				}
			}
		}
	}
	return limited, partial
}
