package timeline

import (
	"bytes"
	"encoding/xml"
	"io"
	"strings"
	"testing"

	"iggynode/telemetry/spanfile"
	"iggynode/wire"
)

const msNs = 1_000_000

// ev is an event at t ms, with a peer when peer >= 0.
func ev(name string, tMs int64, peer int) spanfile.Event {
	e := spanfile.Event{Name: name, TimeNs: tMs * msNs}
	if peer >= 0 {
		e.Attributes = map[string]any{spanfile.AttrPeer: peer}
	}
	return e
}

// opSpan is replica's SpanOp record of op in group 7, view; the replica
// id goes in the resource only when inResource.
func opSpan(replica int, op, view int64, inResource bool, events ...spanfile.Event) *spanfile.Record {
	rec := &spanfile.Record{TraceID: "00", SpanID: "01", Name: spanfile.SpanOp,
		Attributes: map[string]any{spanfile.AttrGroup: 7, spanfile.AttrOp: op, spanfile.AttrView: view},
		Resource:   map[string]any{"service.name": "iggy"}, Events: events}
	if inResource {
		rec.Resource[spanfile.AttrReplica] = replica
	} else {
		rec.Attributes[spanfile.AttrReplica] = replica
	}
	if len(events) > 0 {
		rec.StartNs, rec.EndNs = events[0].TimeNs, events[len(events)-1].TimeNs
	}
	return rec
}

// file writes records as one span file.
func file(t *testing.T, recs ...*spanfile.Record) io.Reader {
	t.Helper()
	var b bytes.Buffer
	w := spanfile.NewWriter(&b)
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return &b
}

// fullOp is op 5 of group 7 in view 1 on three replicas, primary r1,
// chain r1 -> r2 -> r0, every step recorded, one file per replica.
func fullOp(t *testing.T) []io.Reader {
	t.Helper()
	const op, view = 5, 1
	return []io.Reader{
		file(t, opSpan(1, op, view, false,
			ev(spanfile.EventAdmitted, 100, -1), ev(spanfile.EventPrepared, 101, -1), ev(spanfile.EventJournaled, 102, -1),
			ev(spanfile.EventForwarded, 102, 2), ev(spanfile.EventPrepareOK, 110, 2), ev(spanfile.EventPrepareOK, 115, 0),
			ev(spanfile.EventCommitted, 110, -1), ev(spanfile.EventApplied, 111, -1), ev(spanfile.EventReplied, 112, -1))),
		file(t, opSpan(2, op, view, true,
			ev(spanfile.EventJournaled, 105, -1), ev(spanfile.EventForwarded, 105, 0),
			ev(spanfile.EventCommitted, 120, -1), ev(spanfile.EventApplied, 121, -1))),
		file(t, opSpan(0, op, view, false,
			ev(spanfile.EventJournaled, 108, -1),
			ev(spanfile.EventCommitted, 125, -1), ev(spanfile.EventApplied, 126, -1))),
	}
}

func TestLoadOneOpOnThreeReplicas(t *testing.T) {
	m, err := Load(fullOp(t)...)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Groups) != 1 || m.Groups[0].ID != 7 || len(m.Groups[0].Ops) != 1 {
		t.Fatalf("groups %+v", m.Groups)
	}
	g := m.Groups[0]
	if want := []int{0, 1, 2}; len(g.Replicas) != 3 || g.Replicas[0] != 0 || g.Replicas[2] != 2 {
		t.Fatalf("replicas %v, want %v", g.Replicas, want)
	}
	o := g.Ops[0]
	if o.Op != 5 || o.View != 1 || o.Primary != 1 || o.Start != 100*msNs {
		t.Fatalf("op %d view %d primary %d start %d", o.Op, o.View, o.Primary, o.Start)
	}
	if at, _ := o.At(2, spanfile.EventJournaled); at != 105*msNs {
		t.Fatalf("r2 journaled at %d", at)
	}
	if at, ok := o.AckAt(0); !ok || at != 115*msNs {
		t.Fatalf("r0 ack at %d %v", at, ok)
	}
	if _, ok := o.AckAt(1); ok {
		t.Fatal("the primary acknowledged itself")
	}
	if len(o.Forwards) != 2 || o.Forwards[0] != (Hop{1, 2, 102 * msNs}) || o.Forwards[1] != (Hop{2, 0, 105 * msNs}) {
		t.Fatalf("forwards %+v", o.Forwards)
	}
	if len(o.Acks) != 2 || o.Acks[0] != (Hop{2, 1, 110 * msNs}) {
		t.Fatalf("acks %+v", o.Acks)
	}
	if d, ok := o.CommitLatency(); !ok || d != 10*msNs {
		t.Fatalf("commit latency %d %v", d, ok)
	}
	if n := o.StepCount(); n != 8+4+3 { // two PrepareOks are one step
		t.Fatalf("%d steps", n)
	}
}

func TestViewChangeIntervals(t *testing.T) {
	vc := &spanfile.Record{Name: spanfile.SpanViewChange, StartNs: 50 * msNs, EndNs: 90 * msNs,
		Attributes: map[string]any{spanfile.AttrReplica: 2, spanfile.AttrGroup: 7, spanfile.AttrView: 1,
			spanfile.AttrReason: "primary_timeout", spanfile.AttrOutcome: "normal"}}
	tr := &spanfile.Record{Name: spanfile.SpanStateTransfer, StartNs: 60 * msNs, EndNs: 70 * msNs,
		Resource:   map[string]any{spanfile.AttrReplica: 0},
		Attributes: map[string]any{spanfile.AttrGroup: 7, spanfile.AttrPeer: 1, spanfile.AttrOutcome: "installed"}}
	early := opSpan(1, 4, 0, false, ev(spanfile.EventPrepared, 45, -1), ev(spanfile.EventCommitted, 48, -1))
	m, err := Load(append(fullOp(t), file(t, vc, tr, early))...)
	if err != nil {
		t.Fatal(err)
	}
	ivs := m.Groups[0].Intervals
	if len(ivs) != 2 || m.T0 != 45*msNs {
		t.Fatalf("intervals %+v, t0 %d", ivs, m.T0)
	}
	if iv := ivs[0]; iv.Kind != KindViewChange || iv.Replica != 2 || iv.View != 1 || iv.Reason != "primary_timeout" || iv.Outcome != "normal" {
		t.Fatalf("view change %+v", iv)
	}
	if iv := ivs[1]; iv.Kind != KindStateTransfer || iv.Replica != 0 || iv.Peer != 1 || iv.View != -1 {
		t.Fatalf("transfer %+v", iv)
	}
	// Selecting ops after the view change (cutting op 4 away) keeps it
	// only if it overlaps them.
	seven := uint64(7)
	if s := m.Select(Filter{Group: &seven, From: 5}); len(s.Groups[0].Intervals) != 0 || len(s.Groups[0].Ops) != 1 {
		t.Fatalf("select from op 5: %+v", s.Groups[0])
	}
	// The last op alone: op 4 is cut away, and the intervals before op 5 with it.
	if s := m.Select(Filter{Last: 1}); len(s.Groups[0].Intervals) != 0 {
		t.Fatalf("last op: %+v", s.Groups[0])
	}
	if s := m.Select(Filter{To: 4}); len(s.Groups[0].Intervals) != 0 || len(s.Groups[0].Ops) != 1 {
		t.Fatalf("select to op 4: %+v", s.Groups[0])
	}
	if s := m.Select(Filter{Since: 40 * msNs, Until: 95 * msNs}); len(s.Groups[0].Intervals) != 2 || len(s.Groups[0].Ops) != 1 {
		t.Fatalf("select window: %+v", s.Groups[0])
	}
}

// Missing events, unknown names, request spans, spans without a replica:
// what is there is used, the rest counted.
func TestMissingAndUnknown(t *testing.T) {
	recs := []*spanfile.Record{
		opSpan(0, 3, 0, false, ev(spanfile.EventJournaled, 10, -1), ev("teleported", 11, -1)), // no prepared, no commit
		opSpan(1, 3, 0, false, ev(spanfile.EventPrepareOK, 12, 0), ev(spanfile.EventForwarded, 9, -1)),
		{Name: spanfile.SpanRequest, Attributes: map[string]any{spanfile.AttrReplica: 1}},
		{Name: "something.else", Attributes: map[string]any{spanfile.AttrReplica: 1}},
		{Name: spanfile.SpanOp, Attributes: map[string]any{spanfile.AttrGroup: 7, spanfile.AttrOp: 4}},
		opSpan(2, 6, 0, false), // no events: says nothing
		func() *spanfile.Record { // a prepare replaced at op 3 by a view change
			r := opSpan(2, 3, 0, false, ev(spanfile.EventJournaled, 1, -1))
			r.Status = "error"
			return r
		}(),
	}
	m, err := Load(file(t, recs...))
	if err != nil {
		t.Fatal(err)
	}
	g := m.Groups[0]
	if len(g.Ops) != 1 {
		t.Fatalf("ops %+v", g.Ops)
	}
	o := g.Ops[0]
	if _, ok := o.At(2, spanfile.EventJournaled); ok || o.Start != 9*msNs { // r1's forwarded (peerless) is the first step left
		t.Fatalf("the replaced prepare's step was merged: start %d", o.Start)
	}
	if o.Primary != 1 || o.View != 0 { // the PrepareOk's receiver is the primary
		t.Fatalf("primary %d view %d", o.Primary, o.View)
	}
	if _, ok := o.CommitLatency(); ok {
		t.Fatal("an op without commit has a latency")
	}
	if m.Requests != 1 || m.Skipped["unknown event teleported"] != 1 || m.Skipped["unknown span something.else"] != 1 ||
		m.Skipped["no iggy.replica"] != 1 || m.Skipped["forwarded without iggy.peer"] != 1 {
		t.Fatalf("requests %d skipped %v", m.Requests, m.Skipped)
	}
	var b bytes.Buffer
	if err := WriteText(&b, m); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "none committed") {
		t.Fatalf("text:\n%s", b.String())
	}
}

// Two files of one replica (a span closed at applied and a late
// PrepareOk recorded in another), and one concatenated file of two
// replicas, merge into one op with the first occurrence of each step.
func TestMergeFiles(t *testing.T) {
	a := file(t, opSpan(0, 9, 2, false, ev(spanfile.EventPrepared, 10, -1), ev(spanfile.EventJournaled, 11, -1),
		ev(spanfile.EventCommitted, 20, -1)),
		opSpan(1, 9, 2, false, ev(spanfile.EventJournaled, 15, -1), ev(spanfile.EventCommitted, 30, -1)))
	b := file(t, opSpan(0, 9, 2, false, ev(spanfile.EventPrepareOK, 40, 1), ev(spanfile.EventCommitted, 41, -1)),
		opSpan(0, 9, 2, false, ev(spanfile.EventPrepareOK, 18, 1)))
	m, err := Load(a, b)
	if err != nil {
		t.Fatal(err)
	}
	o := m.Groups[0].Ops[0]
	if at, _ := o.AckAt(1); at != 18*msNs {
		t.Fatalf("ack at %d, want the first", at)
	}
	if at, _ := o.At(0, spanfile.EventCommitted); at != 20*msNs {
		t.Fatalf("committed at %d", at)
	}
	if len(o.Acks) != 1 || o.Primary != 0 {
		t.Fatalf("acks %+v primary %d", o.Acks, o.Primary)
	}
}

func TestBadLineIsAnError(t *testing.T) {
	_, err := Load(strings.NewReader("{\"name\":\"vsr.op\"}\nnot json\n"))
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("err %v", err)
	}
}

func TestTextRows(t *testing.T) {
	m, err := Load(fullOp(t)...)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteText(&b, m); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	t.Log("\n" + out)
	lines := strings.Split(out, "\n")
	var head, row []string
	for i, l := range lines {
		if f := strings.Fields(l); len(f) > 0 && f[0] == "op" {
			head, row = f, strings.Fields(lines[i+1])
		}
	}
	// op view primary | r0 jrnl ok commit apply | r1 ... | r2 ... | commit_ms
	want := []string{"5", "1", "r1", "8.0", "15.0", "25.0", "26.0", "2.0", "-", "10.0", "11.0", "5.0", "10.0", "20.0", "21.0", "10.0"}
	if len(head) != len(want) || strings.Join(row, " ") != strings.Join(want, " ") {
		t.Fatalf("head %v\nrow  %v\nwant %v", head, row, want)
	}
	if head[3] != "r0.jrnl" || head[4] != "r0.ok" || head[len(head)-1] != "commit_ms" {
		t.Fatalf("head %v", head)
	}
	if !strings.Contains(out, "stream 0 / topic 0 / partition 7 (group 7): 1 ops, 1 committed, commit latency mean 10.0 ms, p50 10.0 ms, p99 10.0 ms") {
		t.Fatal("summary line missing")
	}
}

func TestSummaryPercentiles(t *testing.T) {
	g := &Group{}
	for i := int64(1); i <= 100; i++ {
		g.Ops = append(g.Ops, &Op{Op: uint64(i), Primary: 0, Start: 0,
			Steps: map[int]map[string]int64{0: {spanfile.EventCommitted: i * msNs}}})
	}
	s := g.Summarize()
	// HdrHistogram at 3 significant digits: within 0.1% of the exact rank.
	near := func(got, want int64) bool { return got >= want && got-want <= want/1000 }
	if s.Committed != 100 || !near(s.P50, 50*msNs) || !near(s.P99, 99*msNs) || s.Mean != 50*msNs+msNs/2 || s.Max != 100*msNs {
		t.Fatalf("%+v", s)
	}
	if s2 := g.Summarize(); s2 != s {
		t.Fatal("not repeatable")
	}
	sel := (&Model{Groups: []*Group{g}}).Select(Filter{Last: 10})
	if n := len(sel.Groups[0].Ops); n != 10 || sel.Groups[0].Ops[0].Op != 91 {
		t.Fatalf("last 10: %d from %d", n, sel.Groups[0].Ops[0].Op)
	}
	if sel := (&Model{Groups: []*Group{g}}).Select(Filter{From: 20, To: 29}); len(sel.Groups[0].Ops) != 10 {
		t.Fatal("op range")
	}
}

// svgOf parses every <svg> of page as XML and counts the elements of
// class "step ..." (markers), "prepare", "ack" and "band".
func svgOf(t *testing.T, page string) map[string]int {
	t.Helper()
	counts := map[string]int{}
	rest := page
	for {
		i := strings.Index(rest, "<svg")
		if i < 0 {
			break
		}
		j := strings.Index(rest[i:], "</svg>")
		if j < 0 {
			t.Fatal("unterminated svg")
		}
		dec := xml.NewDecoder(strings.NewReader(rest[i : i+j+len("</svg>")]))
		for {
			tok, err := dec.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("svg is not well-formed XML: %v", err)
			}
			if se, ok := tok.(xml.StartElement); ok {
				for _, a := range se.Attr {
					if a.Name.Local == "class" {
						counts[strings.Fields(a.Value)[0]]++
					}
				}
				counts["<"+se.Name.Local+">"]++
			}
		}
		counts["svg"]++
		rest = rest[i+j:]
	}
	return counts
}

func TestHTMLOneMarkerPerStep(t *testing.T) {
	vc := &spanfile.Record{Name: spanfile.SpanViewChange, StartNs: 50 * msNs, EndNs: 90 * msNs,
		Attributes: map[string]any{spanfile.AttrReplica: 2, spanfile.AttrGroup: 7, spanfile.AttrView: 1, spanfile.AttrReason: "a<b & \"c\""}}
	m, err := Load(append(fullOp(t), file(t, vc))...)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, m, "run <1>"); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if strings.Contains(page, "ZgotmplZ") || strings.Contains(page, "http://") && strings.Count(page, "http://") != 1 {
		t.Fatal("template rejected a value or the page links out")
	}
	c := svgOf(t, page)
	if c["svg"] != 1 || c["step"] != m.Groups[0].Ops[0].StepCount() || c["prepare"] != 2 || c["ack"] != 2 || c["band"] != 1 {
		t.Fatalf("counts %v", c)
	}
	if !strings.Contains(page, "reason a&lt;b &amp; &#34;c&#34;") {
		t.Fatal("interval tooltip missing or unescaped")
	}
}

// Groups read as stream / topic / partition: names when the spans carry
// them, else the ids the group id holds; the metadata group by name.
func TestGroupLabels(t *testing.T) {
	group, _ := wire.PartitionGroup(1, 2, 3)
	if got := (&Group{ID: group}).Label(); got != "stream 1 / topic 2 / partition 3 (group 4297064451)" {
		t.Errorf("label %q", got)
	}
	if got := (&Group{ID: wire.MetadataGroup}).Label(); !strings.HasPrefix(got, "metadata") {
		t.Errorf("metadata label %q", got)
	}
	rec := opSpan(1, 5, 1, false, ev(spanfile.EventCommitted, 1, -1))
	rec.Attributes[spanfile.AttrStreamName] = "orders"
	rec.Attributes[spanfile.AttrTopicName] = "events"
	m, err := Load(file(t, rec))
	if err != nil || len(m.Groups) != 1 {
		t.Fatalf("load: %v %+v", err, m)
	}
	if got := m.Groups[0].Label(); got != "orders / events / partition 7 (group 7)" {
		t.Errorf("named label %q", got)
	}
}

// The HTML axis: round steps in ms, no tick label twice, even for a span
// of a fraction of a millisecond; the clock says ms, not ticks.
func TestAxisTicks(t *testing.T) {
	for _, spanNs := range []int64{300_000, 7_000_000, 1_234_000_000} {
		ticks := axisTicks(0, spanNs, 0, scale{lo: 0, hi: spanNs, width: 900})
		if len(ticks) < 3 || len(ticks) > 12 {
			t.Errorf("span %d ns: %d ticks", spanNs, len(ticks))
		}
		seen := map[string]bool{}
		for _, tk := range ticks {
			if seen[tk.Label] || !strings.HasSuffix(tk.Label, " ms") {
				t.Errorf("span %d ns: tick labels %+v", spanNs, ticks)
				break
			}
			seen[tk.Label] = true
		}
	}
	var b strings.Builder
	m := &Model{Virtual: true}
	if err := WriteHTML(&b, m, "x"); err != nil || strings.Contains(b.String(), "(simulator ticks)") || !strings.Contains(b.String(), "virtual time in ms") {
		t.Errorf("clock wording: %v %s", err, b.String())
	}
}
