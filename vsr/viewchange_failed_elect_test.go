package vsr

import (
	"testing"

	"iggynode/wire"
)

// A primary-elect makes the merged log local (6.8) with its log_view and
// adopted view headers still those of an older log (6.7: log_view is not
// raised before the view starts). When its view change fails, its next
// DoViewChange must still announce one log, not the merged log's ops
// under the older log's headers (simulator seed 4249 of --handover 0.01
// panicked "own suffix decodes: timestamp not below op 9's";
// viewchange.go, reconcileRecovered and dropRefutedViewHeaders).

// failedElectLogs: x is view 3's log, whose ops 8..10 were never
// committed; y is view 4's, which kept x up to 7 and prepared ops 8 and 9
// anew (later, so with higher timestamps).
func failedElectLogs() (x, y testLog) {
	x = newLog(1, 10)
	y = testLog{}
	for o := uint64(1); o <= 7; o++ {
		y[o] = x[o]
	}
	y[8] = sealPrepare(8, x.id(7), 5_000_000, 7, 2)
	y[9] = sealPrepare(9, y.id(8), 5_000_001, 8, 2)
	return x, y
}

// viewHeadersOf is the body of a StartView of log l from top down to low.
func viewHeadersOf(l testLog, top, low uint64) []byte {
	return wire.BuildSuffix(wire.SuffixSource{Commit: low, AdoptedTop: top, Adopted: func(op uint64) (*wire.Header, bool) {
		h, ok := l[op]
		return &h, ok
	}}).Body
}

func frameOfHeader(h wire.Header) []byte { return append([]byte(nil), h[:]...) }

func failedElect() *Replica {
	return New(Config{Cluster: wire.U128{Lo: 0xC1}, Group: wire.MetadataGroup, Replica: 2, ReplicaCount: 3, Metadata: true, Seed: 3})
}

// drainReady journals every append and drops every send.
func drainReady(r *Replica) (truncate uint64, state *State) {
	for r.HasReady() {
		rd := r.Ready()
		if rd.Truncate != 0 {
			truncate = rd.Truncate
		}
		if rd.State != nil {
			state = rd.State
			r.StatePersisted()
		}
		for _, f := range rd.Journal {
			r.Journaled(wire.HeaderOf(f).Prepare().Op, nil)
		}
	}
	return truncate, state
}

// ownSuffixOneLog fails unless r's DoViewChange suffix decodes (6.5.3)
// and names nothing of x above op 7 next to y's op 8.
func ownSuffixOneLog(t *testing.T, r *Replica, x, y testLog) []wire.SuffixEntry {
	t.Helper()
	d, s := r.ownDVC()
	entries, err := wire.DecodeSuffix(d.Op, s.Body, s.Nack, s.Present)
	if err != nil {
		t.Fatalf("the DoViewChange (log_view %d, op %d, commit %d) does not decode: %v", d.LogView, d.Op, d.Commit, err)
	}
	oldAbove, newAt8 := false, false
	for _, e := range entries {
		switch op := e.Prepare.Op; {
		case e.Blank:
		case op > 8 && op <= 10 && e.Prepare.Checksum == x.id(op):
			oldAbove = true
		case op == 8 && e.Prepare.Checksum == y.id(8):
			newAt8 = true
		}
	}
	if oldAbove && newAt8 {
		t.Fatalf("the DoViewChange stitches view 4's op 8 below view 3's ops")
	}
	return entries
}

// Restart: replica 2 adopted view 3's StartView (ops 7..10), took no part
// in view 4, and as primary-elect of view 5 repaired view 4's op 8 into
// its journal; the view change failed, and it restarted. The journal
// comes back without the mark that op 8 was repaired for the merged log,
// not acknowledged in log_view 3; the view headers say view 3's op 8 is
// another op. The entry goes (it was never acknowledged), and the
// DoViewChange announces view 3's log.
func TestRestartedFailedElectTruncatesWhatItsViewHeadersContradict(t *testing.T) {
	x, y := failedElectLogs()
	r := failedElect()
	seven := x[7]
	r.Recover(Recovery{View: 6, LogView: 3, CommitMax: 7, Commit: 7, CommitChecksum: x.id(7), CommitTimestamp: seven.Prepare().Timestamp,
		Journal: [][]byte{frameOfHeader(y[8])}, ViewHead: 10, ViewHeaders: viewHeadersOf(x, 10, 7)})
	truncate, _ := drainReady(r)
	entries := ownSuffixOneLog(t, r, x, y)
	if truncate != 8 || r.Op() != 7 {
		t.Fatalf("journal truncated from %d (want 8), head %d (want 7)", truncate, r.Op())
	}
	if len(entries) != 4 || entries[2].Prepare.Checksum != x.id(8) || entries[2].Present || !entries[2].Nack {
		t.Fatalf("op 8 should be view 3's header, not present, nacked: %+v", entries)
	}
}

// Commit: as primary-elect of view 5, replica 2 merges view 4's log,
// whose op 8 is committed (replica 1 reports commit 8), repairs op 8 and
// applies it before the view starts; then its view change fails. The op
// it committed contradicts the view headers it adopted from view 3, so
// those headers (ops 8..10 of a log view 4 discarded) are forgotten,
// durably, before its next DoViewChange.
func TestFailedElectForgetsViewHeadersItsCommitRefutes(t *testing.T) {
	x, y := failedElectLogs()
	r := failedElect()
	seven := x[7]
	r.Recover(Recovery{View: 4, LogView: 3, CommitMax: 7, Commit: 7, CommitChecksum: x.id(7), CommitTimestamp: seven.Prepare().Timestamp,
		ViewHead: 10, ViewHeaders: viewHeadersOf(x, 10, 7)})
	drainReady(r)
	r.beginViewChange(5) // replica 2 is the primary of view 5
	svc := wire.StartViewChangeHeader{Cluster: r.cfg.Cluster, View: 5, Replica: 1, Group: r.cfg.Group}
	head := make([]byte, wire.HeaderSize)
	svc.Encode(wire.HeaderOf(head))
	r.Step(head)
	s := wire.BuildSuffix(wire.SuffixSource{Commit: 8, Head: 9, Journal: func(op uint64) (*wire.Header, bool) {
		h, ok := y[op]
		return &h, ok
	}})
	r.Step(wire.AppendDoViewChange(nil, wire.DoViewChangeHeader{Cluster: r.cfg.Cluster, View: 5, Replica: 1, Op: 9, Commit: 8,
		Group: r.cfg.Group, LogView: 4, NackBitset: s.Nack, PresentBitset: s.Present}, s.Body))
	drainReady(r)
	if r.vc.merged == nil || r.vc.merged.opHead != 9 {
		t.Fatal("setup: no merged log up to op 9")
	}
	eight := frameOfHeader(y[8])
	wire.HeaderOf(eight).SetCommand(wire.CmdRepairPrepare)
	r.Step(eight)
	drainReady(r)
	if r.CommitMin() != 8 || r.LogView() != 3 {
		t.Fatalf("setup: commit %d (want 8, view 4's op 8), log_view %d", r.CommitMin(), r.LogView())
	}
	r.beginViewChange(6) // the view change escalates (6.2 rule 4)
	ownSuffixOneLog(t, r, x, y)
	if _, st := drainReady(r); st == nil || st.ViewHead != 0 || st.ViewHeaders != nil {
		t.Fatalf("the refuted view headers are still durable: %+v", st)
	}
}
