package vsr

import (
	"fmt"
	"slices"
	"testing"

	"iggynode/wire"
)

// Table-driven tests of the DoViewChange merge, written from
// replica-plane.md 6.7 (the merge), 6.5 (how a DVC suffix is built and
// validated) and 4.5 (quorums: n=3 has q_vc=2 and q_nack=2, n=5 has q_vc=3
// and q_nack=3). Every recorded DVC is built the way 6.5.2 builds a suffix
// and then round-trips through wire.DecodeSuffix (6.5.3), so each input is
// one a primary-elect could actually record.

// testLog is one replica history: a sealed, hash-chained prepare header
// per op.
type testLog map[uint64]wire.Header

// sealPrepare builds the metadata prepare header for op and seals its
// identity (2.2) the way Replica.prepare does. seed tells apart the
// histories that fork at op.
func sealPrepare(op uint64, parent wire.U128, ts, commit, seed uint64) wire.Header {
	ph := wire.PrepareHeader{
		ChecksumBody: wire.BodySeal(nil), Cluster: wire.U128{Lo: 0xC1}, Size: wire.HeaderSize,
		View: 1, Command: wire.CmdPrepare, Client: wire.U128{Lo: seed, Hi: 1}, Parent: parent,
		Op: op, Commit: commit, Timestamp: ts, Request: op, Operation: wire.OpCreateStream,
		Group: wire.MetadataGroup, UserID: 1,
	}
	var h wire.Header
	ph.Encode(&h)
	ph.Checksum = wire.PrepareIdentity(&h)
	h.SetChecksum(ph.Checksum)
	return h
}

// newLog is a history of ops 1..top.
func newLog(seed, top uint64) testLog { return testLog{}.fork(seed, 1, top) }

// fork keeps l below from and builds ops from..top afresh under seed, so
// the result differs in identity from l at every op >= from.
func (l testLog) fork(seed, from, top uint64) testLog { return l.forkCommits(seed, from, top, nil) }

// forkCommits is fork with the prepares' commit fields taken from commit
// (0 when absent).
func (l testLog) forkCommits(seed, from, top uint64, commit map[uint64]uint64) testLog {
	out := testLog{}
	for o := uint64(1); o < from; o++ {
		h, ok := l[o]
		if !ok {
			panic(fmt.Sprintf("fork at %d of a log without op %d", from, o))
		}
		out[o] = h
	}
	for o := from; o <= top; o++ {
		var parent wire.U128 // genesis (2.5 rule 1)
		if o > 1 {
			parent = out.id(o - 1)
		}
		// Strictly increasing per op; seed < 1000 keeps a fork above its base.
		out[o] = sealPrepare(o, parent, 1_000_000+o*1_000+seed, commit[o], seed)
	}
	return out
}

func (l testLog) id(op uint64) wire.U128 {
	h, ok := l[op]
	if !ok {
		panic(fmt.Sprintf("no op %d", op))
	}
	return h.Checksum()
}

// without is a journal copy of l missing ops.
func (l testLog) without(ops ...uint64) testLog {
	out := testLog{}
	for o, h := range l {
		if !slices.Contains(ops, o) {
			out[o] = h
		}
	}
	return out
}

// unsealed is a copy of l whose ops carry checksum 0: legacy unsealed
// prepares (2.2 rule 4). The ops above keep the parent they had.
func (l testLog) unsealed(ops ...uint64) testLog {
	out := l.without()
	for _, o := range ops {
		h := out[o]
		h.SetChecksum(wire.U128{})
		out[o] = h
	}
	return out
}

type dvcEdit func(d *dvcRecord)

// notServable turns op's entry into a header known from an adopted StartView but
// not journaled: no present bit (6.5.2 step 4, second case).
func notServable(op uint64) dvcEdit {
	return func(d *dvcRecord) { d.entries[d.op-op].Present = false }
}

// emptySuffix is a DVC sent with a stale snapshot: numbers only (6.5.4).
func emptySuffix(d *dvcRecord) { d.entries = nil }

// dvc records replica's DoViewChange: log_view, head, commit = min(commit_max,
// head), and the suffix 6.5.2 builds from journal (ops above head are not
// in the journal). The suffix must pass 6.5.3.
func dvc(replica uint8, logView uint32, head, commit uint64, journal testLog, edits ...dvcEdit) *dvcRecord {
	if commit > head {
		panic("dvc commit is min(commit_max, op)")
	}
	d := &dvcRecord{replica: replica, logView: logView, op: head, commit: commit}
	if low := max(commit, 1); head > 0 && low <= head {
		if head-low+1 > wire.MaxSuffixEntries {
			low = head - (wire.MaxSuffixEntries - 1)
		}
		for o := head; o >= low; o-- {
			if h, ok := journal[o]; ok {
				d.entries = append(d.entries, wire.SuffixEntry{Header: h, Present: true})
			} else {
				d.entries = append(d.entries, wire.SuffixEntry{Header: wire.BlankPrepare(o), Nack: o > commit})
			}
		}
	}
	for _, e := range edits {
		e(d)
	}
	body := wire.AppendSuffix(nil, d.entries)
	nack, present := wire.SuffixBitsets(d.entries)
	entries, err := wire.DecodeSuffix(d.op, body, nack, present)
	if err != nil {
		panic(fmt.Sprintf("replica %d: unrealistic suffix: %v", replica, err))
	}
	if len(entries) == 0 {
		entries = nil
	}
	d.entries = entries
	return d
}

type mergeCase struct {
	name string
	n    int
	ds   func() []*dvcRecord
	want mergeOutcome
	// For mergeReady only:
	opHead, commitMax uint64
	log               testLog                // canonical headers come from it
	ce                map[uint64]wire.Header // committed-elsewhere, exactly
}

func runMergeCases(t *testing.T, cases []mergeCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkMerge(t, c, c.ds())
			// The merge is a function of the set of DVCs, not their order.
			rev := c.ds()
			slices.Reverse(rev)
			t.Run("reversed", func(t *testing.T) { checkMerge(t, c, rev) })
		})
	}
}

func checkMerge(t *testing.T, c mergeCase, ds []*dvcRecord) {
	t.Helper()
	m, got := merge(ds, c.n)
	if got != c.want {
		detail := ""
		if got == mergeReady && m != nil {
			detail = fmt.Sprintf(" (op_head %d, commit_max %d, headers %v, committed_elsewhere %v)",
				m.opHead, m.commitMax, opsOf(m.headers), opsOf(m.committedElsewhere))
		}
		t.Fatalf("outcome %v%s, want %v", got, detail, c.want)
	}
	if got != mergeReady {
		return
	}
	if m == nil {
		t.Fatal("ready with a nil merged log")
	}
	if m.opHead != c.opHead || m.commitMax != c.commitMax {
		t.Fatalf("op_head %d commit_max %d, want op_head %d commit_max %d", m.opHead, m.commitMax, c.opHead, c.commitMax)
	}
	// 6.7 step 7: headers from op_head down to max(commit_max, 1), each
	// the canonical one, as sent.
	var want []uint64
	if c.opHead > 0 {
		for o := max(c.commitMax, 1); o <= c.opHead; o++ {
			want = append(want, o)
		}
	}
	if k := opsOf(m.headers); !slices.Equal(k, want) {
		t.Fatalf("headers at ops %v, want %v", k, want)
	}
	for _, o := range want {
		if m.headers[o] != c.log[o] {
			got, want := m.headers[o], c.log[o]
			t.Errorf("op %d: merged header %+v is not the canonical one %+v", o, got.Prepare(), want.Prepare())
		}
		// 6.7 step 5: each is the parent of the one above (2.5 rule 3: a
		// zero identity on either end suspends the check).
		if o > want[0] {
			below := m.headers[o-1]
			above := m.headers[o]
			if p := above.Prepare(); !below.Checksum().IsZero() && !p.Checksum.IsZero() && p.Parent != below.Checksum() {
				t.Errorf("op %d's parent %v is not op %d's identity %v", o, p.Parent, o-1, below.Checksum())
			}
		}
	}
	if k, w := opsOf(m.committedElsewhere), opsOf(c.ce); !slices.Equal(k, w) {
		t.Fatalf("committed_elsewhere at ops %v, want %v", k, w)
	}
	for o, h := range c.ce {
		if m.committedElsewhere[o] != h {
			got := m.committedElsewhere[o]
			t.Errorf("committed_elsewhere op %d: %+v, want %+v", o, got.Prepare(), h.Prepare())
		}
	}
}

func opsOf(m map[uint64]wire.Header) []uint64 {
	var k []uint64
	for o := range m {
		k = append(k, o)
	}
	slices.Sort(k)
	return k
}

func dvcSet(ds ...*dvcRecord) func() []*dvcRecord {
	return func() []*dvcRecord { return ds }
}

// Histories shared by the tables. histA is the history every replica agrees
// on up to a fork; histB5, histB4, histB3 fork from it at ops 5, 4, 3.
var (
	histA  = newLog(1, 7)
	histB5 = histA.fork(2, 5, 7)
	histB4 = histA.fork(2, 4, 7)
	histB3 = histA.fork(3, 3, 7)
)

func TestMergeAgreement(t *testing.T) {
	// Op 5 built by a primary whose commit_max was 4.
	ac := histA.forkCommits(9, 5, 5, map[uint64]uint64{5: 4})
	long := newLog(1, 200)
	runMergeCases(t, []mergeCase{
		{
			name: "all agree: op_head is the common head, commit_max the highest commit",
			n:    3,
			ds:   dvcSet(dvc(0, 2, 5, 3, histA), dvc(1, 2, 5, 2, histA), dvc(2, 2, 5, 3, histA)),
			want: mergeReady, opHead: 5, commitMax: 3, log: histA,
		},
		{
			name: "commit_max includes entry 0's commit field (step 2)",
			n:    3,
			ds:   dvcSet(dvc(0, 2, 5, 2, ac), dvc(1, 2, 5, 2, ac), dvc(2, 2, 5, 2, ac)),
			want: mergeReady, opHead: 5, commitMax: 4, log: ac,
		},
		{
			name: "commit_max includes d.op-127 (step 2)",
			n:    3,
			ds:   dvcSet(dvc(0, 2, 200, 10, long), dvc(1, 2, 200, 10, long), dvc(2, 2, 200, 10, long)),
			want: mergeReady, opHead: 200, commitMax: 73, log: long,
		},
		{
			name: "commit_max includes an older log_view sender's commit (max over all of D)",
			n:    3,
			ds:   dvcSet(dvc(0, 3, 6, 2, histA), dvc(1, 3, 6, 2, histA), dvc(2, 2, 6, 4, histA)),
			want: mergeReady, opHead: 6, commitMax: 4, log: histA,
		},
		{
			name: "empty logs: op_head 0, ready",
			n:    3,
			ds:   dvcSet(dvc(0, 0, 0, 0, nil), dvc(1, 0, 0, 0, nil), dvc(2, 0, 0, 0, nil)),
			want: mergeReady, opHead: 0, commitMax: 0,
		},
		{
			name: "empty logs at q_vc: op_head 0, ready",
			n:    3,
			ds:   dvcSet(dvc(0, 4, 0, 0, nil), dvc(1, 4, 0, 0, nil)),
			want: mergeReady, opHead: 0, commitMax: 0,
		},
	})
}

func TestMergeNacks(t *testing.T) {
	runMergeCases(t, []mergeCase{
		{
			name: "op held by one replica, both others' heads below it: truncated (q_nack=2)",
			n:    3,
			ds:   dvcSet(dvc(0, 2, 5, 3, histA), dvc(1, 2, 4, 3, histA), dvc(2, 2, 4, 3, histA)),
			want: mergeReady, opHead: 4, commitMax: 3, log: histA,
		},
		{
			name: "op held by one replica, nack bits from both others: truncated",
			n:    3,
			ds:   dvcSet(dvc(0, 2, 5, 3, histA), dvc(1, 2, 5, 3, histA.without(5)), dvc(2, 2, 5, 3, histA.without(5))),
			want: mergeReady, opHead: 4, commitMax: 3, log: histA,
		},
		{
			name: "one nack is below q_nack=2: the op is kept",
			n:    3,
			ds:   dvcSet(dvc(0, 2, 5, 3, histA), dvc(1, 2, 4, 3, histA)),
			want: mergeReady, opHead: 5, commitMax: 3, log: histA,
		},
		{
			// Op 6 is a canonical conflict (histA vs histB5) that would refuse the
			// view had the scan gone on past the truncation at op 5.
			name: "truncation stops the scan",
			n:    3,
			ds:   dvcSet(dvc(0, 2, 6, 3, histA), dvc(1, 2, 6, 3, histB5.without(5)), dvc(2, 2, 4, 3, histA)),
			want: mergeReady, opHead: 4, commitMax: 3, log: histA,
		},
		{
			name: "op at commit_max nacked by heads below it: deadlocked",
			n:    3,
			ds:   dvcSet(dvc(0, 2, 5, 5, histA), dvc(1, 2, 3, 3, histA), dvc(2, 2, 3, 3, histA)),
			want: mergeDeadlocked,
		},
		{
			name: "op at commit_max nacked by nack bits: deadlocked",
			n:    3,
			ds:   dvcSet(dvc(0, 2, 6, 5, histA), dvc(1, 2, 6, 4, histA.without(5)), dvc(2, 2, 6, 4, histA.without(5))),
			want: mergeDeadlocked,
		},
		{
			name: "a suffix that does not cover the op abstains",
			n:    3,
			ds:   dvcSet(dvc(0, 2, 5, 3, histA), dvc(1, 2, 5, 3, histA, emptySuffix), dvc(2, 2, 5, 3, histA, emptySuffix)),
			want: mergeReady, opHead: 5, commitMax: 3, log: histA,
		},
		{
			name: "a head below the op nacks even with an empty suffix",
			n:    3,
			ds:   dvcSet(dvc(0, 2, 5, 3, histA), dvc(1, 2, 4, 3, histA, emptySuffix), dvc(2, 2, 4, 3, histA, emptySuffix)),
			want: mergeReady, opHead: 4, commitMax: 3, log: histA,
		},
		{
			name: "n=5: two nacks are below q_nack=3: the op is kept",
			n:    5,
			ds:   dvcSet(dvc(0, 2, 5, 3, histA), dvc(1, 2, 4, 3, histA), dvc(2, 2, 4, 3, histA)),
			want: mergeReady, opHead: 5, commitMax: 3, log: histA,
		},
		{
			name: "n=5: three nacks truncate even a canonical conflict",
			n:    5,
			ds: dvcSet(dvc(0, 2, 5, 3, histA), dvc(1, 2, 5, 3, histB5),
				dvc(2, 2, 4, 3, histA), dvc(3, 2, 4, 3, histA), dvc(4, 2, 4, 3, histA)),
			want: mergeReady, opHead: 4, commitMax: 3, log: histA,
		},
		{
			name: "n=5: canonical conflict with two nacks and 4 of 5 DVCs awaits repair",
			n:    5,
			ds:   dvcSet(dvc(0, 2, 5, 3, histA), dvc(1, 2, 5, 3, histB5), dvc(2, 2, 4, 3, histA), dvc(3, 2, 4, 3, histA)),
			want: mergeAwaitingRepair,
		},
	})
}

func TestMergeConflictsAndCopies(t *testing.T) {
	runMergeCases(t, []mergeCase{
		{
			name: "canonical conflict with 2 of 3 DVCs: awaiting repair",
			n:    3,
			ds:   dvcSet(dvc(0, 2, 5, 3, histA), dvc(1, 2, 5, 3, histB5)),
			want: mergeAwaitingRepair,
		},
		{
			name: "canonical conflict with 3 of 3 DVCs: deadlocked",
			n:    3,
			ds:   dvcSet(dvc(0, 2, 5, 3, histA), dvc(1, 2, 5, 3, histB5), dvc(2, 2, 4, 3, histA)),
			want: mergeDeadlocked,
		},
		{
			name: "canonical header known but no body present, 2 of 3 DVCs: awaiting repair",
			n:    3,
			ds:   dvcSet(dvc(0, 2, 5, 3, histA, notServable(5)), dvc(1, 2, 5, 3, histA, notServable(5))),
			want: mergeAwaitingRepair,
		},
		{
			name: "canonical header known but no body present, 3 of 3 DVCs: lost everywhere, truncated",
			n:    3,
			ds:   dvcSet(dvc(0, 2, 5, 3, histA, notServable(5)), dvc(1, 2, 5, 3, histA, notServable(5)), dvc(2, 2, 5, 3, histA, notServable(5))),
			want: mergeReady, opHead: 4, commitMax: 3, log: histA,
		},
		{
			name: "a body present at an older log_view sender with the canonical identity is a copy",
			n:    3,
			ds:   dvcSet(dvc(0, 3, 5, 3, histA, notServable(5)), dvc(1, 3, 5, 3, histA, notServable(5)), dvc(2, 2, 5, 3, histA)),
			want: mergeReady, opHead: 5, commitMax: 3, log: histA,
		},
		{
			// Op 4 is histA's (replica 0), op 5 is histB4's (replica 1): each op has
			// one canonical header and a copy, but 5 does not name 4.
			name: "canonical headers that do not hash-chain: deadlocked (step 5)",
			n:    3,
			ds:   dvcSet(dvc(0, 3, 5, 3, histA.without(5)), dvc(1, 3, 5, 3, histB4.without(4))),
			want: mergeDeadlocked,
		},
		{
			// Op 4 is a legacy unsealed prepare (checksum 0); op 5 still
			// names op 4's would-be identity as parent. 2.5 rule 3 lists the
			// merge's step 5 among the chain checks a zero identity on
			// either end suspends, and 6.5.3 rule 5 lets this suffix in.
			name: "an unsealed canonical header suspends the step 5 chain check",
			n:    3,
			ds: dvcSet(dvc(0, 2, 5, 3, histA.unsealed(4)), dvc(1, 2, 5, 3, histA.unsealed(4)),
				dvc(2, 2, 5, 3, histA.unsealed(4))),
			want: mergeReady, opHead: 5, commitMax: 3, log: histA.unsealed(4),
		},
	})
}

// forgot turns ops' entries into what a partition replica restarted
// without its memory journal sends for ops up to the head that journal had
// reached: blank, neither present nor nacked (Recovery.JournalHead).
func forgot(ops ...uint64) dvcEdit {
	return func(d *dvcRecord) {
		for _, op := range ops {
			d.entries[d.op-op] = wire.SuffixEntry{Header: wire.BlankPrepare(op)}
		}
	}
}

// 9.4 rule 6: a partition op acknowledged by a quorum lives only in memory
// until flushed; a whole-cluster restart loses the ops above the highest
// applied one. The merge drops them once every replica has answered
// without a copy, and only then.
func TestMergeOpsLostEverywhere(t *testing.T) {
	runMergeCases(t, []mergeCase{
		{
			name: "every replica restarted without its journal: ops above commit_max dropped",
			n:    3,
			ds: dvcSet(dvc(0, 2, 6, 3, histA, forgot(4, 5, 6)), dvc(1, 2, 6, 2, histA, forgot(3, 4, 5, 6)),
				dvc(2, 2, 5, 3, histA, forgot(4, 5))),
			want: mergeReady, opHead: 3, commitMax: 3, log: histA,
		},
		{
			name: "2 of 3 restarted replicas: the third may hold the ops, awaiting repair",
			n:    3,
			ds:   dvcSet(dvc(0, 2, 6, 3, histA, forgot(4, 5, 6)), dvc(1, 2, 6, 3, histA, forgot(4, 5, 6))),
			want: mergeAwaitingRepair,
		},
		{
			name: "one replica still holds op 4: kept, the ops above it dropped",
			n:    3,
			ds: dvcSet(dvc(0, 2, 6, 3, histA, forgot(5, 6)), dvc(1, 2, 6, 3, histA, forgot(4, 5, 6)),
				dvc(2, 2, 6, 3, histA, forgot(4, 5, 6))),
			want: mergeReady, opHead: 4, commitMax: 3, log: histA,
		},
		{
			name: "one replica abstains (empty suffix): it may hold the op, deadlocked until its next DVC",
			n:    3,
			ds: dvcSet(dvc(0, 2, 6, 3, histA, forgot(4, 5, 6)), dvc(1, 2, 6, 3, histA, forgot(4, 5, 6)),
				dvc(2, 2, 6, 3, histA, emptySuffix)),
			want: mergeDeadlocked,
		},
		{
			name: "the drop starts above commit_max: one replica applied op 4, the others forgot it",
			n:    3,
			ds: dvcSet(dvc(0, 2, 6, 4, histA, forgot(5, 6)), dvc(1, 2, 6, 3, histA, forgot(4, 5, 6)),
				dvc(2, 2, 6, 3, histA, forgot(4, 5, 6))),
			want: mergeReady, opHead: 4, commitMax: 4, log: histA,
		},
		{
			name: "n=5, all five restarted: dropped",
			n:    5,
			ds: dvcSet(dvc(0, 2, 5, 3, histA, forgot(4, 5)), dvc(1, 2, 5, 3, histA, forgot(4, 5)), dvc(2, 2, 5, 3, histA, forgot(4, 5)),
				dvc(3, 2, 5, 3, histA, forgot(4, 5)), dvc(4, 2, 4, 3, histA, forgot(4))),
			want: mergeReady, opHead: 3, commitMax: 3, log: histA,
		},
		{
			name: "n=5, four of five in: awaiting the fifth",
			n:    5,
			ds: dvcSet(dvc(0, 2, 5, 3, histA, forgot(4, 5)), dvc(1, 2, 5, 3, histA, forgot(4, 5)), dvc(2, 2, 5, 3, histA, forgot(4, 5)),
				dvc(3, 2, 5, 3, histA, forgot(4, 5))),
			want: mergeAwaitingRepair,
		},
	})
}

func TestMergeLogViews(t *testing.T) {
	runMergeCases(t, []mergeCase{
		{
			name: "implicit nack: an older log_view sender holding a different identity",
			n:    3,
			ds:   dvcSet(dvc(0, 3, 5, 3, histA), dvc(1, 2, 5, 3, histB5), dvc(2, 2, 4, 3, histA)),
			want: mergeReady, opHead: 4, commitMax: 3, log: histA,
		},
		{
			name: "implicit nack: an older log_view sender's entry where no canonical header exists",
			n:    3,
			ds:   dvcSet(dvc(0, 3, 5, 3, histA.without(5)), dvc(1, 2, 5, 3, histB5)),
			want: mergeReady, opHead: 4, commitMax: 3, log: histA,
		},
		{
			name: "an older sender knowing the canonical identity without the body does not nack",
			n:    3,
			ds:   dvcSet(dvc(0, 3, 5, 3, histA), dvc(1, 2, 5, 3, histA, notServable(5)), dvc(2, 2, 4, 3, histA)),
			want: mergeReady, opHead: 5, commitMax: 3, log: histA,
		},
		{
			name: "older log_view senders do not define the canonical header",
			n:    3,
			ds:   dvcSet(dvc(0, 3, 5, 3, histA), dvc(1, 2, 7, 3, histB4)),
			want: mergeReady, opHead: 5, commitMax: 3, log: histA,
		},
		{
			// Scanning op 6 would find one nack (replica 0's head), one
			// abstention and no canonical header: not ready.
			name: "op_head_max comes from the canonical senders' heads only",
			n:    3,
			ds:   dvcSet(dvc(0, 3, 5, 3, histA), dvc(1, 2, 7, 3, histA, emptySuffix)),
			want: mergeReady, opHead: 5, commitMax: 3, log: histA,
		},
	})
}

func TestMergeCommittedElsewhere(t *testing.T) {
	runMergeCases(t, []mergeCase{
		{
			name: "older senders' committed entries below the range, chained to the op above, are kept",
			n:    3,
			ds:   dvcSet(dvc(0, 3, 7, 5, histA), dvc(1, 2, 7, 4, histA), dvc(2, 1, 3, 3, histA)),
			want: mergeReady, opHead: 7, commitMax: 5, log: histA,
			ce: map[uint64]wire.Header{4: histA[4], 3: histA[3]},
		},
		{
			name: "a committed entry the op above does not name as parent is dropped",
			n:    3,
			ds:   dvcSet(dvc(0, 3, 7, 5, histA), dvc(1, 2, 7, 4, histA), dvc(2, 1, 3, 3, histB3)),
			want: mergeReady, opHead: 7, commitMax: 5, log: histA,
			ce: map[uint64]wire.Header{4: histA[4]},
		},
		{
			name: "an unsealed committed entry passes the parent check (unsealed on either side)",
			n:    3,
			ds:   dvcSet(dvc(0, 3, 7, 5, histA), dvc(1, 2, 7, 4, histA), dvc(2, 1, 3, 3, histA.unsealed(3))),
			want: mergeReady, opHead: 7, commitMax: 5, log: histA,
			ce: map[uint64]wire.Header{4: histA[4], 3: histA.unsealed(3)[3]},
		},
		{
			name: "a committed entry below a gap is dropped",
			n:    3,
			ds:   dvcSet(dvc(0, 3, 7, 5, histA), dvc(1, 2, 7, 4, histA), dvc(2, 1, 2, 2, histA)),
			want: mergeReady, opHead: 7, commitMax: 5, log: histA,
			ce: map[uint64]wire.Header{4: histA[4]},
		},
		{
			name: "two identities at one committed-elsewhere op: deadlocked",
			n:    3,
			ds:   dvcSet(dvc(0, 3, 7, 5, histA), dvc(1, 2, 7, 4, histA), dvc(2, 1, 4, 4, histB4)),
			want: mergeDeadlocked,
		},
		{
			name: "canonical senders' entries are not committed-elsewhere",
			n:    3,
			ds:   dvcSet(dvc(0, 3, 7, 5, histA), dvc(1, 3, 7, 4, histA)),
			want: mergeReady, opHead: 7, commitMax: 5, log: histA,
		},
		{
			name: "an older sender's committed entry inside the canonical range is not committed-elsewhere",
			n:    3,
			ds:   dvcSet(dvc(0, 3, 7, 5, histA), dvc(1, 2, 7, 5, histA)),
			want: mergeReady, opHead: 7, commitMax: 5, log: histA,
		},
	})
}

// A committed op that no canonical sender names (the primary of the
// newest log_view restarted without its memory journal) and an older
// log_view's sender still holds: that copy is no nack of it. Simulator
// seed 114944 counted it as one, with the replica that never got the op,
// a quorum of nacks of a committed op: every view change deadlocked.
func TestMergeCommittedOpHeldOnlyByAnOlderLogView(t *testing.T) {
	cases := []struct {
		name string
		ds   []*dvcRecord
		want mergeOutcome
	}{
		{"all three: ready, the unnamed ops above commit_max dropped", []*dvcRecord{
			dvc(0, 1, 6, 4, histA, forgot(5, 6)), dvc(1, 2, 5, 4, histA, forgot(4, 5)), dvc(2, 1, 3, 3, histA)}, mergeReady},
		{"two of three: the third may hold op 5", []*dvcRecord{
			dvc(0, 1, 6, 4, histA, forgot(5, 6)), dvc(1, 2, 5, 4, histA, forgot(4, 5))}, mergeAwaitingRepair},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rev := slices.Clone(c.ds)
			slices.Reverse(rev)
			for _, ds := range [][]*dvcRecord{c.ds, rev} {
				m, got := merge(ds, 3)
				if got != c.want {
					t.Fatalf("outcome %v, want %v", got, c.want)
				}
				if got == mergeReady && (m.opHead != 4 || m.commitMax != 4) {
					t.Fatalf("op_head %d commit_max %d, want 4 and 4", m.opHead, m.commitMax)
				}
			}
		})
	}
}
