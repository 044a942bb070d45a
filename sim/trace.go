package sim

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"

	"github.com/zeebo/xxh3"

	"iggynode/telemetry/spanfile"
	"iggynode/vsr"
	"iggynode/wire"
)

// Trace emission (Config.Trace): the run writes the span files the node
// writes (package spanfile), from what the harness sees of each replica's
// core, so cmd/timeline reads a simulated run as it reads a real one.
//
// Per replica, one SpanOp span per op (per prepare identity: an op number
// that a view change gave to another prepare opens a new span), with the
// events the shell sees: prepared (a leading primary's core hands a
// prepare of its own, of its view, to the journal), journaled (the
// append succeeded), forwarded (a Prepare to iggy.peer left in a Ready),
// prepare_ok (a PrepareOk from iggy.peer was delivered to it), committed
// and applied (the Ready's Commit; the simulated state machine applies at
// once), replied (the commit carried a client's request tag). A span ends
// lingerTicks after its apply, so late PrepareOks still land in it, or
// when the run ends. Status changes seen once per tick become
// SpanViewChange (view_change status) and SpanRecovery (recovering)
// spans; a repair session (the core's counter) a SpanRepair span until
// the journal grew and commit_min reached the commit_max it opened at
// (the core does not report a session's end); a TransferSession a
// SpanStateTransfer span.
//
// Times are virtual, tick * spanfile.TickNs, and every span and event has
// sim.tick. Trace ids are spanfile.OpTraceID of the simulated cluster;
// span ids hash the seed, the replica and a counter. Tracing only reads
// the run's state and draws no random number: the same seed gives the
// same Result (Digest) with and without it. Not traced: admitted (the
// shell submits and the core prepares in the same call, or queues it,
// which the shell does not see) and the ops a restarted replica replays
// or a transfer installs (no per-op step).

// TraceWriters gives the span file writer of each replica (one writer
// for all is fine: records name their replica).
type TraceWriters func(replica int) *spanfile.Writer

// lingerTicks is how long an applied op's span stays open for late events.
const lingerTicks = 100

type tracer struct {
	r       *run
	out     []*spanfile.Writer
	traceLo uint64 // cluster id halves for OpTraceID
	traceHi uint64
	spans   []map[uint64]*opSpan // per replica, by op
	state   []traceState
	seq     uint64
}

type opSpan struct {
	rec   spanfile.Record
	ident wire.U128
	seen  map[string]bool // step (and peer) already recorded
	done  int             // tick applied, -1
}

// traceState is what the tracer last saw of one replica, and its open
// interval spans.
type traceState struct {
	status           vsr.Status
	statusSpan       *spanfile.Record
	repairs          uint64
	repair           *spanfile.Record
	repairTarget     uint64
	repairHead       uint64
	transfer         *spanfile.Record
	transferSnapshot uint64
}

// newTracer returns nil (tracing off) unless Config.Trace is set.
func newTracer(r *run) *tracer {
	if r.cfg.Trace == nil {
		return nil
	}
	c := r.groups[0].coreConfig(0).Cluster
	t := &tracer{r: r, traceLo: c.Lo, traceHi: c.Hi}
	for i := 0; i < r.cfg.Replicas; i++ {
		t.out = append(t.out, r.cfg.Trace(i))
		t.spans = append(t.spans, map[uint64]*opSpan{})
		t.state = append(t.state, traceState{})
	}
	return t
}

// group is the group id as an OpenTelemetry int64 attribute carries it
// (the metadata group, 1<<63, wraps negative), as the node writes it.
func (t *tracer) group() int64 { return int64(t.r.groups[0].id) }

func (t *tracer) nowNs() int64 { return int64(t.r.now) * spanfile.TickNs }

func (t *tracer) spanID(replica int) string {
	t.seq++
	var b [24]byte
	binary.LittleEndian.PutUint64(b[0:], t.r.cfg.Seed)
	binary.LittleEndian.PutUint64(b[8:], uint64(replica))
	binary.LittleEndian.PutUint64(b[16:], t.seq)
	id := xxh3.Hash(b[:]) | 1 // never the invalid zero id
	return fmt.Sprintf("%016x", id)
}

func (t *tracer) resource(replica int) map[string]any {
	return map[string]any{"service.name": "iggy-sim", spanfile.AttrReplica: replica, "sim.seed": t.r.cfg.Seed}
}

// op is replica's open span of the prepare h, opened if there is none;
// replace: a span of another prepare at that op ends for this one (a
// journal or a commit says which prepare the op is now), else nil is
// returned for a stale prepare.
func (t *tracer) op(replica int, op uint64, view uint32, ident wire.U128, replace bool) *opSpan {
	s := t.spans[replica][op]
	if s != nil && s.ident != ident {
		if !replace {
			return nil
		}
		s.rec.Status, s.rec.StatusMessage = "error", "replaced by another prepare at this op"
		t.emit(replica, s)
		s = nil
	}
	if s == nil {
		id := spanfile.OpTraceID(t.traceLo, t.traceHi, t.r.groups[0].id, op)
		s = &opSpan{ident: ident, seen: map[string]bool{}, done: -1, rec: spanfile.Record{
			TraceID: hex.EncodeToString(id[:]), SpanID: t.spanID(replica), Name: spanfile.SpanOp, StartNs: t.nowNs(),
			Resource: t.resource(replica),
			Attributes: map[string]any{spanfile.AttrReplica: replica, spanfile.AttrGroup: t.group(), spanfile.AttrOp: op,
				spanfile.AttrView: view, spanfile.AttrSimTick: t.r.now},
		}}
		t.spans[replica][op] = s
	}
	return s
}

// step records name on s once (per peer when peer >= 0).
func (t *tracer) step(s *opSpan, name string, peer int) {
	key := name
	if peer >= 0 {
		key = fmt.Sprintf("%s/%d", name, peer)
	}
	if s == nil || s.seen[key] {
		return
	}
	s.seen[key] = true
	e := spanfile.Event{Name: name, TimeNs: t.nowNs(), Attributes: map[string]any{spanfile.AttrSimTick: t.r.now}}
	if peer >= 0 {
		e.Attributes[spanfile.AttrPeer] = peer
	}
	s.rec.Events = append(s.rec.Events, e)
}

func (t *tracer) emit(replica int, s *opSpan) {
	s.rec.EndNs = t.nowNs()
	_ = t.out[replica].Write(&s.rec) // a write error sticks in the writer: Flush reports it
}

// ready: the shell of replica i has handled rd (drive).
func (t *tracer) ready(i int, rd vsr.Ready) {
	if t == nil {
		return
	}
	rp := t.r.groups[0].reps[i]
	for _, f := range rd.Journal {
		h := wire.HeaderOf(f).Prepare()
		if j := rp.journal[h.Op]; len(j) == 0 || len(f) == 0 || &j[0] != &f[0] {
			continue // the append failed (or was undone): not journaled
		}
		s := t.op(i, h.Op, h.View, h.Checksum, true)
		if rp.core.IsPrimary() && int(h.Replica) == i && h.View == rp.core.View() {
			t.step(s, spanfile.EventPrepared, -1)
		}
		t.step(s, spanfile.EventJournaled, -1)
	}
	for _, e := range rd.Send {
		if h := wire.HeaderOf(e.Head); h.Command() == wire.CmdPrepare {
			p := h.Prepare()
			t.step(t.op(i, p.Op, p.View, p.Checksum, false), spanfile.EventForwarded, int(e.To))
		}
	}
	for _, c := range rd.Commit {
		h := wire.HeaderOf(c.Frame).Prepare()
		s := t.op(i, c.Op, h.View, h.Checksum, true)
		t.step(s, spanfile.EventCommitted, -1)
		t.step(s, spanfile.EventApplied, -1)
		if _, ok := c.Tag.(*call); ok {
			t.step(s, spanfile.EventReplied, -1)
		}
		if s.done < 0 {
			s.done = t.r.now
		}
	}
}

// delivered: frame from -> to is about to be stepped into to's core.
func (t *tracer) delivered(from, to int, frame []byte) {
	if t == nil {
		return
	}
	if h := wire.HeaderOf(frame); h.Command() == wire.CmdPrepareOk {
		ok := h.PrepareOk()
		t.step(t.op(to, ok.Op, ok.View, ok.PrepareChecksum, false), spanfile.EventPrepareOK, from)
	}
}

// observe runs once per tick (checkTick): status, repair and transfer
// intervals, and op spans whose linger passed.
func (t *tracer) observe() {
	if t == nil {
		return
	}
	for i, rp := range t.r.groups[0].reps {
		if !rp.down {
			t.observeStatus(i, rp)
			t.observeRepair(i, rp)
			t.observeTransfer(i, rp)
		}
		var ended []uint64
		for op, s := range t.spans[i] {
			if s.done >= 0 && t.r.now-s.done >= lingerTicks {
				ended = append(ended, op)
			}
		}
		slices.Sort(ended) // map order is random; the files are not
		for _, op := range ended {
			t.emit(i, t.spans[i][op])
			delete(t.spans[i], op)
		}
	}
}

func (t *tracer) interval(replica int, name, reason string, attrs map[string]any) *spanfile.Record {
	id := t.spanID(replica)
	rec := &spanfile.Record{TraceID: id + id, SpanID: id, Name: name, StartNs: t.nowNs(), // a trace of its own
		Resource: t.resource(replica),
		Attributes: map[string]any{spanfile.AttrReplica: replica, spanfile.AttrGroup: t.group(),
			spanfile.AttrReason: reason, spanfile.AttrSimTick: t.r.now}}
	for k, v := range attrs {
		rec.Attributes[k] = v
	}
	return rec
}

func (t *tracer) end(replica int, rec *spanfile.Record, outcome string, attrs map[string]any) {
	rec.EndNs = t.nowNs()
	rec.Attributes[spanfile.AttrOutcome] = outcome
	for k, v := range attrs {
		rec.Attributes[k] = v
	}
	_ = t.out[replica].Write(rec)
}

func (t *tracer) observeStatus(i int, rp *replica) {
	st := &t.state[i]
	status := rp.core.Status()
	if status == st.status {
		return
	}
	view := rp.core.View()
	if st.statusSpan != nil {
		outcome := "normal as backup"
		switch {
		case status != vsr.StatusNormal:
			outcome = status.String()
		case rp.core.IsPrimary():
			outcome = "normal as primary"
		}
		t.end(i, st.statusSpan, outcome, map[string]any{spanfile.AttrView: view})
		st.statusSpan = nil
	}
	switch status {
	case vsr.StatusViewChange:
		st.statusSpan = t.interval(i, spanfile.SpanViewChange, fmt.Sprintf("left %s (commit %d)", st.status, rp.core.CommitMin()),
			map[string]any{spanfile.AttrView: view})
	case vsr.StatusRecovering:
		st.statusSpan = t.interval(i, spanfile.SpanRecovery, "restart", map[string]any{spanfile.AttrView: view})
	}
	st.status = status
}

func (t *tracer) observeRepair(i int, rp *replica) {
	st := &t.state[i]
	if n := rp.core.Repairs; n != st.repairs {
		if n > st.repairs { // else a restarted core counts from zero again
			if st.repair != nil {
				t.end(i, st.repair, "superseded", nil)
			}
			st.repairTarget, st.repairHead = rp.core.CommitMax(), rp.core.Op()
			st.repair = t.interval(i, spanfile.SpanRepair, fmt.Sprintf("ops missing above %d (commit %d of %d)", st.repairHead, rp.core.CommitMin(), st.repairTarget),
				map[string]any{spanfile.AttrView: rp.core.View()})
		}
		st.repairs = n
	}
	// The core does not say when a session ends: count it done when the
	// journal grew past where it stopped and the commit point reached the
	// commit_max of then.
	if st.repair != nil && rp.core.Op() > st.repairHead && rp.core.CommitMin() >= st.repairTarget {
		t.end(i, st.repair, "caught up", nil)
		st.repair = nil
	}
}

func (t *tracer) observeTransfer(i int, rp *replica) {
	st := &t.state[i]
	switch {
	case rp.transfer != nil && st.transfer == nil:
		st.transferSnapshot = rp.snapshotOp
		st.transfer = t.interval(i, spanfile.SpanStateTransfer,
			fmt.Sprintf("repair cannot reach what it lacks (commit %d of %d)", rp.core.CommitMin(), rp.core.CommitMax()),
			map[string]any{spanfile.AttrPeer: int(rp.transfer.Peer), spanfile.AttrView: rp.core.View()})
	case rp.transfer == nil && st.transfer != nil:
		outcome := "abandoned"
		if rp.snapshotOp != st.transferSnapshot {
			outcome = fmt.Sprintf("installed at commit %d", rp.snapshotOp)
		}
		t.end(i, st.transfer, outcome, nil)
		st.transfer = nil
	}
}

// close ends every open span at the run's end and flushes the writers
// (cmd/sim flushes again to learn of write errors).
func (t *tracer) close() {
	if t == nil || t.spans == nil {
		return
	}
	for i := range t.out {
		st := &t.state[i]
		for _, rec := range []*spanfile.Record{st.statusSpan, st.repair, st.transfer} {
			if rec != nil {
				t.end(i, rec, "open at the end of the run", nil)
			}
		}
		ops := make([]uint64, 0, len(t.spans[i]))
		for op := range t.spans[i] {
			ops = append(ops, op)
		}
		slices.Sort(ops)
		for _, op := range ops {
			t.emit(i, t.spans[i][op])
		}
		_ = t.out[i].Flush()
	}
	t.spans = nil
}
