// Package timeline reads the span files (package spanfile) of every
// replica of a run, real or simulated, and builds a consensus timeline:
// per (group, op) the view it was prepared in and, per replica, when it
// met each step (admitted, prepared, journaled, forwarded, prepare_ok,
// committed, applied, replied), who forwarded the prepare to whom and who
// acknowledged it; per group the view changes, recoveries, repairs and
// state transfers as intervals per replica. Text (text.go) and HTML
// (html.go) renderings sit on top of the model; cmd/timeline is the
// command.
//
// The model is built from whatever the files hold: a step that is missing
// is simply absent, unknown span and event names are counted and skipped,
// request spans (spanfile.SpanRequest) are counted only. A replica is
// named by the span attribute iggy.replica, else the resource's. An op
// seen in several spans of one replica (one per view it was carried in,
// or a span closed and a late event recorded in another) is merged: each
// step keeps its first occurrence. An op span with status "error" is a
// prepare that did not stand (replaced at its op by a view change) and is
// counted, not merged. Records of the simulator (attribute
// sim.tick) carry virtual times, tick * spanfile.TickNs; they read the
// same way.
package timeline

import (
	"fmt"
	"io"
	"slices"
	"sort"

	"iggynode/telemetry/spanfile"
	"iggynode/wire"
)

// Steps is the vocabulary of an op's steps, in the order an op meets them.
var Steps = []string{
	spanfile.EventAdmitted, spanfile.EventPrepared, spanfile.EventJournaled, spanfile.EventForwarded,
	spanfile.EventPrepareOK, spanfile.EventCommitted, spanfile.EventApplied, spanfile.EventReplied,
}

// Interval kinds: the span names of spanfile without their prefix.
const (
	KindViewChange    = "view_change"
	KindRecovery      = "recovery"
	KindRepair        = "repair"
	KindStateTransfer = "state_transfer"
	KindEpoch         = "epoch"
)

var kindOf = map[string]string{
	spanfile.SpanViewChange:    KindViewChange,
	spanfile.SpanRecovery:      KindRecovery,
	spanfile.SpanRepair:        KindRepair,
	spanfile.SpanStateTransfer: KindStateTransfer,
	spanfile.SpanEpoch:         KindEpoch,
}

// Model is a run's timeline.
type Model struct {
	Groups []*Group // by id
	// T0 is the earliest time of any op step or interval (ns).
	T0 int64
	// Virtual: some records came from the simulator (times are ticks).
	Virtual bool
	// Requests counts request spans (not part of the timeline); Skipped
	// counts records left out, by reason.
	Requests int
	Skipped  map[string]int
}

// Group is one consensus group's ops and intervals.
type Group struct {
	ID        uint64
	Replicas  []int // every replica seen, ascending
	Ops       []*Op // by op number
	Intervals []Interval
	// StreamName and TopicName, when a span carried them
	// (spanfile.AttrStreamName, AttrTopicName).
	StreamName, TopicName string
}

// Label names the group for a reader: "metadata", or its stream, topic
// and partition, by name where the spans named them and else by the ids
// the partition group id holds (wire.SplitPartitionGroup), with the raw
// id after it for grepping: "orders / topic 0 / partition 2 (group 2)".
func (g *Group) Label() string {
	if g.ID == wire.MetadataGroup {
		return fmt.Sprintf("metadata (group %d)", g.ID)
	}
	s, t, p := wire.SplitPartitionGroup(g.ID)
	stream, topic := fmt.Sprintf("stream %d", s), fmt.Sprintf("topic %d", t)
	if g.StreamName != "" {
		stream = g.StreamName
	}
	if g.TopicName != "" {
		topic = g.TopicName
	}
	return fmt.Sprintf("%s / %s / partition %d (group %d)", stream, topic, p, g.ID)
}

// Op is one op of a group across the replicas.
type Op struct {
	Group, Op uint64
	// View is the view it was prepared in (the span holding "prepared";
	// else the lowest view any replica saw it in), -1 if unknown.
	View int64
	// Primary is the replica that prepared it (else admitted it, else
	// received its acknowledgements), -1 if unknown.
	Primary int
	// Start is the time of its first step on any replica (ns).
	Start int64
	// Steps holds, per replica, the first time of each step (event name).
	Steps map[int]map[string]int64
	// Forwards are prepares sent on (From forwarded to To); Acks are
	// PrepareOks that arrived (From acknowledged to To, the primary).
	// Each pair keeps its first occurrence.
	Forwards, Acks []Hop
}

// Hop is a message between two replicas about an op, at the time its
// step was recorded (sent for Forwards, arrived for Acks).
type Hop struct {
	From, To int
	At       int64
}

// Interval is one view change, recovery, repair or state transfer of one
// replica.
type Interval struct {
	Kind       string
	Replica    int
	Start, End int64
	View       int64 // -1 if the span named none
	Reason     string
	Outcome    string
	// Peer is the other replica (a transfer's server), -1 if none.
	Peer int
}

// At is the time of step on replica, if recorded.
func (o *Op) At(replica int, step string) (int64, bool) {
	t, ok := o.Steps[replica][step]
	return t, ok
}

// AckAt is when the op's primary got replica's PrepareOk, if it did (a
// PrepareOk to a later view's primary is in Acks only).
func (o *Op) AckAt(replica int) (int64, bool) {
	for _, h := range o.Acks {
		if h.From == replica && (o.Primary < 0 || h.To == o.Primary) {
			return h.At, true
		}
	}
	return 0, false
}

// CommitLatency is from the op's first step to the commit at its primary
// (else the first commit anywhere), if it committed.
func (o *Op) CommitLatency() (int64, bool) {
	if t, ok := o.At(o.Primary, spanfile.EventCommitted); ok {
		return t - o.Start, true
	}
	first, found := int64(0), false
	for _, s := range o.Steps {
		if t, ok := s[spanfile.EventCommitted]; ok && (!found || t < first) {
			first, found = t, true
		}
	}
	return first - o.Start, found
}

// StepCount is the number of (replica, step) first occurrences.
func (o *Op) StepCount() int {
	n := 0
	for _, s := range o.Steps {
		n += len(s)
	}
	return n
}

// Load reads every reader as a span file and builds the model.
func Load(rs ...io.Reader) (*Model, error) {
	l := NewLoader()
	for i, r := range rs {
		if err := l.Read(r); err != nil {
			return nil, fmt.Errorf("input %d: %w", i+1, err)
		}
	}
	return l.Model(), nil
}

// Loader accumulates span files; Model builds the timeline of all of them.
type Loader struct {
	ops       map[opKey]*opAcc
	intervals map[uint64][]Interval
	replicas  map[uint64]map[int]bool
	// streamNames and topicNames per group, from spans that carried them.
	streamNames, topicNames map[uint64]string
	virtual                 bool
	requests                int
	skipped                 map[string]int
}

type opKey struct{ group, op uint64 }

type opAcc struct {
	op           *Op
	preparedView int64 // view of a span holding "prepared", -1
	minView      int64
	admitter     int
	fwd, ack     map[[2]int]int64
}

// NewLoader returns an empty loader.
func NewLoader() *Loader {
	return &Loader{ops: map[opKey]*opAcc{}, intervals: map[uint64][]Interval{},
		replicas: map[uint64]map[int]bool{}, skipped: map[string]int{},
		streamNames: map[uint64]string{}, topicNames: map[uint64]string{}}
}

// Read adds every record of r (one span file); an unreadable line is an
// error naming it.
func (l *Loader) Read(r io.Reader) error {
	return spanfile.Read(r, func(rec *spanfile.Record) error {
		l.add(rec)
		return nil
	})
}

func (l *Loader) add(rec *spanfile.Record) {
	if _, ok := rec.Attributes[spanfile.AttrSimTick]; ok {
		l.virtual = true
	}
	if rec.Name == spanfile.SpanRequest {
		l.requests++
		return
	}
	kind, isInterval := kindOf[rec.Name]
	if rec.Name != spanfile.SpanOp && !isInterval {
		l.skipped["unknown span "+rec.Name]++
		return
	}
	replica, ok := replicaOf(rec)
	if !ok {
		l.skipped["no "+spanfile.AttrReplica]++
		return
	}
	group, ok := uint64Of(rec.Attributes, spanfile.AttrGroup)
	if !ok {
		l.skipped["no "+spanfile.AttrGroup]++
		return
	}
	l.seen(group, replica)
	if name, ok := rec.Attributes[spanfile.AttrStreamName].(string); ok && name != "" {
		l.streamNames[group] = name
	}
	if name, ok := rec.Attributes[spanfile.AttrTopicName].(string); ok && name != "" {
		l.topicNames[group] = name
	}
	if isInterval {
		l.addInterval(group, kind, replica, rec)
		return
	}
	op, ok := uint64Of(rec.Attributes, spanfile.AttrOp)
	if !ok {
		l.skipped["op span without "+spanfile.AttrOp]++
		return
	}
	if rec.Status == "error" {
		// An op span that ended in error is a prepare that does not stand
		// (truncated, or replaced at its op by a view change): its steps
		// would date another prepare's.
		l.skipped["op span with status error (a prepare that did not stand)"]++
		return
	}
	l.addOp(opKey{group, op}, replica, rec)
}

// uint64Of reads a 64-bit id written unsigned, or as the int64 an
// OpenTelemetry attribute carries (the metadata group, 1<<63, is then
// negative).
func uint64Of(attrs map[string]any, key string) (uint64, bool) {
	if v, ok := spanfile.Uint(attrs, key); ok {
		return v, true
	}
	v, ok := spanfile.Int(attrs, key)
	return uint64(v), ok
}

func (l *Loader) seen(group uint64, replica int) {
	if l.replicas[group] == nil {
		l.replicas[group] = map[int]bool{}
	}
	l.replicas[group][replica] = true
}

func replicaOf(rec *spanfile.Record) (int, bool) {
	if v, ok := spanfile.Int(rec.Attributes, spanfile.AttrReplica); ok {
		return int(v), true
	}
	v, ok := spanfile.Int(rec.Resource, spanfile.AttrReplica)
	return int(v), ok
}

func (l *Loader) addInterval(group uint64, kind string, replica int, rec *spanfile.Record) {
	iv := Interval{Kind: kind, Replica: replica, Start: rec.StartNs, End: max(rec.EndNs, rec.StartNs), View: -1, Peer: -1}
	if v, ok := spanfile.Int(rec.Attributes, spanfile.AttrView); ok {
		iv.View = v
	}
	if p, ok := spanfile.Int(rec.Attributes, spanfile.AttrPeer); ok {
		iv.Peer = int(p)
	}
	iv.Reason, _ = spanfile.String(rec.Attributes, spanfile.AttrReason)
	iv.Outcome, _ = spanfile.String(rec.Attributes, spanfile.AttrOutcome)
	l.intervals[group] = append(l.intervals[group], iv)
}

func (l *Loader) addOp(k opKey, replica int, rec *spanfile.Record) {
	a := l.ops[k]
	if a == nil {
		a = &opAcc{op: &Op{Group: k.group, Op: k.op, View: -1, Primary: -1, Steps: map[int]map[string]int64{}},
			preparedView: -1, minView: -1, admitter: -1, fwd: map[[2]int]int64{}, ack: map[[2]int]int64{}}
		l.ops[k] = a
	}
	view, hasView := spanfile.Int(rec.Attributes, spanfile.AttrView)
	if hasView && (a.minView < 0 || view < a.minView) {
		a.minView = view
	}
	steps := a.op.Steps[replica]
	if steps == nil {
		steps = map[string]int64{}
		a.op.Steps[replica] = steps
	}
	for _, e := range rec.Events {
		if !slices.Contains(Steps, e.Name) {
			l.skipped["unknown event "+e.Name]++
			continue
		}
		if t, ok := steps[e.Name]; !ok || e.TimeNs < t {
			steps[e.Name] = e.TimeNs
		}
		switch e.Name {
		case spanfile.EventPrepared:
			v := int64(-1)
			if hasView {
				v = view
			}
			if a.op.Primary < 0 || v > a.preparedView { // the highest view's primary prepared the op that stands
				a.op.Primary, a.preparedView = replica, v
			}
		case spanfile.EventAdmitted:
			a.admitter = replica
		case spanfile.EventForwarded, spanfile.EventPrepareOK:
			peer, ok := spanfile.Int(e.Attributes, spanfile.AttrPeer)
			if !ok {
				l.skipped[e.Name+" without "+spanfile.AttrPeer]++
				continue
			}
			m, key := a.fwd, [2]int{replica, int(peer)}
			if e.Name == spanfile.EventPrepareOK {
				m, key = a.ack, [2]int{int(peer), replica}
			}
			if t, ok := m[key]; !ok || e.TimeNs < t {
				m[key] = e.TimeNs
			}
		}
	}
	if len(steps) == 0 {
		delete(a.op.Steps, replica) // a span with no step events says nothing of when
	}
}

// Model builds the timeline of everything read so far.
func (l *Loader) Model() *Model {
	m := &Model{Virtual: l.virtual, Requests: l.requests, Skipped: l.skipped}
	groups := map[uint64]*Group{}
	group := func(id uint64) *Group {
		g := groups[id]
		if g == nil {
			g = &Group{ID: id}
			for r := range l.replicas[id] {
				g.Replicas = append(g.Replicas, r)
			}
			sort.Ints(g.Replicas)
			g.StreamName, g.TopicName = l.streamNames[id], l.topicNames[id]
			groups[id] = g
		}
		return g
	}
	first := true
	early := func(t int64) {
		if first || t < m.T0 {
			m.T0, first = t, false
		}
	}
	for k, a := range l.ops {
		o := a.finish()
		if len(o.Steps) == 0 {
			continue
		}
		early(o.Start)
		g := group(k.group)
		g.Ops = append(g.Ops, o)
	}
	for id, ivs := range l.intervals {
		g := group(id)
		g.Intervals = append(g.Intervals, ivs...)
		for _, iv := range ivs {
			early(iv.Start)
		}
	}
	for _, g := range groups {
		sort.Slice(g.Ops, func(i, j int) bool { return g.Ops[i].Op < g.Ops[j].Op })
		sort.SliceStable(g.Intervals, func(i, j int) bool {
			a, b := g.Intervals[i], g.Intervals[j]
			if a.Start != b.Start {
				return a.Start < b.Start
			}
			return a.Replica < b.Replica
		})
		m.Groups = append(m.Groups, g)
	}
	sort.Slice(m.Groups, func(i, j int) bool { return m.Groups[i].ID < m.Groups[j].ID })
	return m
}

func (a *opAcc) finish() *Op {
	o := a.op
	o.View = a.minView
	if a.preparedView >= 0 {
		o.View = a.preparedView
	}
	if o.Primary < 0 {
		o.Primary = a.admitter
	}
	o.Forwards, o.Acks = hops(a.fwd), hops(a.ack)
	if o.Primary < 0 && len(o.Acks) > 0 {
		o.Primary = o.Acks[0].To
	}
	first := true
	for _, s := range o.Steps {
		for _, t := range s {
			if first || t < o.Start {
				o.Start, first = t, false
			}
		}
	}
	return o
}

func hops(m map[[2]int]int64) []Hop {
	out := make([]Hop, 0, len(m))
	for k, t := range m {
		out = append(out, Hop{From: k[0], To: k[1], At: t})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].At != out[j].At {
			return out[i].At < out[j].At
		}
		return out[i].From < out[j].From || out[i].From == out[j].From && out[i].To < out[j].To
	})
	return out
}

// Filter selects part of a model; zero fields select everything.
type Filter struct {
	Group    *uint64 // one group
	From, To uint64  // op range, inclusive (To 0: no upper bound)
	// Since and Until bound time (ns, absolute, Until 0: no bound): an op
	// is kept if it starts in the window, an interval if it overlaps it.
	Since, Until int64
	// Last keeps only the last Last ops of each group (after the other
	// bounds). When ops are cut away, intervals are kept where they
	// overlap the time of the ops that remain (unbounded on a side where
	// none was cut).
	Last int
}

// Select returns the part of m that f selects (m is not changed).
func (m *Model) Select(f Filter) *Model {
	out := &Model{T0: m.T0, Virtual: m.Virtual, Requests: m.Requests, Skipped: m.Skipped}
	for _, g := range m.Groups {
		if f.Group != nil && g.ID != *f.Group {
			continue
		}
		ng := &Group{ID: g.ID, Replicas: g.Replicas}
		var inWindow []*Op
		for _, o := range g.Ops {
			if o.Start >= f.Since && (f.Until == 0 || o.Start <= f.Until) {
				inWindow = append(inWindow, o)
			}
		}
		for _, o := range inWindow {
			if o.Op >= f.From && (f.To == 0 || o.Op <= f.To) {
				ng.Ops = append(ng.Ops, o)
			}
		}
		if f.Last > 0 && len(ng.Ops) > f.Last {
			ng.Ops = ng.Ops[len(ng.Ops)-f.Last:]
		}
		// Intervals: those in the time window that overlap the time of the
		// ops selected, on a side where the op bounds cut ops away.
		since, until := f.Since, f.Until
		if n := len(ng.Ops); n > 0 && n < len(inWindow) {
			lo, hi := ng.Span()
			if ng.Ops[0] != inWindow[0] {
				since = max(since, lo)
			}
			if ng.Ops[n-1] != inWindow[len(inWindow)-1] && (until == 0 || hi < until) {
				until = hi
			}
		}
		for _, iv := range g.Intervals {
			if iv.End < since || until != 0 && iv.Start > until {
				continue
			}
			ng.Intervals = append(ng.Intervals, iv)
		}
		out.Groups = append(out.Groups, ng)
	}
	return out
}

// Span is the time from the first step of g's first op to the last step
// of any of its ops.
func (g *Group) Span() (lo, hi int64) {
	first := true
	for _, o := range g.Ops {
		for _, s := range o.Steps {
			for _, t := range s {
				if first {
					lo, hi, first = t, t, false
				}
				lo, hi = min(lo, t), max(hi, t)
			}
		}
	}
	return lo, hi
}
