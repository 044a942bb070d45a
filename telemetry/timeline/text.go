package timeline

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"iggynode/telemetry/spanfile"
)

// Summary is a group's commit latencies (ns) over its committed ops.
type Summary struct {
	Ops, Committed      int
	Mean, P50, P99, Max int64
}

// Summarize computes g's summary. Percentiles come from an HdrHistogram
// (3 significant digits, as the bench's), so the two tools report
// latencies the same way; the mean and the max are exact.
func (g *Group) Summarize() Summary {
	s := Summary{Ops: len(g.Ops)}
	h := hdrhistogram.New(1, int64(time.Hour), 3)
	var sum int64
	for _, o := range g.Ops {
		if d, ok := o.CommitLatency(); ok {
			_ = h.RecordValue(max(d, 1)) // out of range (over an hour) is clamped by the max below
			sum += d
			s.Max = max(s.Max, d)
			s.Committed++
		}
	}
	if s.Committed == 0 {
		return s
	}
	s.Mean = sum / int64(s.Committed)
	s.P50, s.P99 = min(h.ValueAtQuantile(50), s.Max), min(h.ValueAtQuantile(99), s.Max)
	return s
}

// ms formats a duration in ns as milliseconds.
func ms(ns int64) string { return fmt.Sprintf("%.1f", float64(ns)/1e6) }

// textColumns are the per-replica steps of the table: journaled, the
// replica's PrepareOk as the primary got it, committed, applied.
var textColumns = []string{"jrnl", "ok", "commit", "apply"}

// WriteText writes one table per group (a row per op: op, view, primary,
// then per replica the offset in ms from the op's first step of each of
// textColumns, and the commit latency), its summary line, and its
// intervals with times in ms from the run's start (m.T0).
func WriteText(w io.Writer, m *Model) error {
	ew := &errWriter{w: w}
	clock := "wall clock"
	if m.Virtual {
		clock = fmt.Sprintf("virtual time in ms (simulator ticks of %d ms)", spanfile.TickNs/1_000_000)
	}
	for gi, g := range m.Groups {
		if gi > 0 {
			fmt.Fprintln(ew)
		}
		fmt.Fprintf(ew, "%s: replicas %v, %s; offsets in ms from the op's first step\n", g.Label(), g.Replicas, clock)
		writeOps(ew, g)
		fmt.Fprintln(ew, g.Summarize().line(g.Label()))
		writeIntervals(ew, g, m.T0)
	}
	if len(m.Groups) == 0 {
		fmt.Fprintln(ew, "no ops or intervals")
	}
	if m.Requests > 0 {
		fmt.Fprintf(ew, "%d request spans not shown\n", m.Requests)
	}
	for _, k := range sortedKeys(m.Skipped) {
		fmt.Fprintf(ew, "skipped %d records or events: %s\n", m.Skipped[k], k)
	}
	return ew.err
}

func (s Summary) line(group string) string {
	if s.Committed == 0 {
		return fmt.Sprintf("%s: %d ops, none committed", group, s.Ops)
	}
	return fmt.Sprintf("%s: %d ops, %d committed, commit latency mean %s ms, p50 %s ms, p99 %s ms, max %s ms",
		group, s.Ops, s.Committed, ms(s.Mean), ms(s.P50), ms(s.P99), ms(s.Max))
}

func writeOps(w io.Writer, g *Group) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := []string{"op", "view", "primary"}
	for _, r := range g.Replicas {
		for _, c := range textColumns {
			head = append(head, fmt.Sprintf("r%d.%s", r, c))
		}
	}
	head = append(head, "commit_ms")
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for _, o := range g.Ops {
		row := []string{fmt.Sprint(o.Op), orDash(o.View), replicaName(o.Primary)}
		for _, r := range g.Replicas {
			row = append(row,
				offset(o, r, spanfile.EventJournaled),
				ackOffset(o, r),
				offset(o, r, spanfile.EventCommitted),
				offset(o, r, spanfile.EventApplied))
		}
		lat := "-"
		if d, ok := o.CommitLatency(); ok {
			lat = ms(d)
		}
		row = append(row, lat)
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	tw.Flush()
}

func offset(o *Op, replica int, step string) string {
	if t, ok := o.At(replica, step); ok {
		return ms(t - o.Start)
	}
	return "-"
}

func ackOffset(o *Op, replica int) string {
	if t, ok := o.AckAt(replica); ok {
		return ms(t - o.Start)
	}
	return "-"
}

func writeIntervals(w io.Writer, g *Group, t0 int64) {
	if len(g.Intervals) == 0 {
		return
	}
	fmt.Fprintf(w, "%s intervals (ms from the run's start):\n", g.Label())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "kind\treplica\tstart\tend\tms\tview\tpeer\treason\toutcome")
	for _, iv := range g.Intervals {
		peer := "-"
		if iv.Peer >= 0 {
			peer = replicaName(iv.Peer)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", iv.Kind, replicaName(iv.Replica),
			ms(iv.Start-t0), ms(iv.End-t0), ms(iv.End-iv.Start), orDash(iv.View), peer, dash(iv.Reason), dash(iv.Outcome))
	}
	tw.Flush()
}

func replicaName(r int) string {
	if r < 0 {
		return "?"
	}
	return fmt.Sprintf("r%d", r)
}

func orDash(v int64) string {
	if v < 0 {
		return "-"
	}
	return fmt.Sprint(v)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// errWriter keeps the first write error so the renderers can write freely.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return len(p), nil
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}
