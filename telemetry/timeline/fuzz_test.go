package timeline

import (
	"bytes"
	"io"
	"testing"

	"iggynode/telemetry/spanfile"
)

// Span files are input the timeline does not control (any node, any
// version, a truncated copy): Load refuses a bad one with an error and
// never panics, and whatever it accepts renders as text and HTML.
func FuzzLoad(f *testing.F) {
	for _, r := range fullOp(&testing.T{}) {
		b, _ := io.ReadAll(r)
		f.Add(b)
	}
	var view bytes.Buffer
	w := spanfile.NewWriter(&view)
	_ = w.Write(&spanfile.Record{TraceID: "00", SpanID: "02", Name: spanfile.SpanViewChange, StartNs: 5, EndNs: 9,
		Attributes: map[string]any{spanfile.AttrGroup: 7, spanfile.AttrView: 2, spanfile.AttrReplica: 1, spanfile.AttrOutcome: "normal as primary"}})
	_ = w.Flush()
	f.Add(view.Bytes())
	f.Add([]byte(`{"name":"iggy.op","attributes":{"iggy.group":-1,"iggy.op":1e300,"iggy.replica":"x"},"events":[{"name":"committed","time_ns":-5}]}` + "\n"))
	f.Add([]byte("{}\n\n{\"name\":\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Load(bytes.NewReader(data))
		if err != nil {
			return
		}
		if err := WriteText(io.Discard, m); err != nil {
			t.Fatalf("text of an accepted file: %v", err)
		}
		if err := WriteHTML(io.Discard, m, "fuzz"); err != nil {
			t.Fatalf("HTML of an accepted file: %v", err)
		}
	})
}
