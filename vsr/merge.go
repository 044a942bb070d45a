package vsr

import "iggynode/wire"

// The DoViewChange merge (replica-plane.md 6.7): a pure function of the
// recorded DVCs, tested on its own in merge_test.go.

// dvcRecord is one recorded DoViewChange (6.6 step 6), own included.
type dvcRecord struct {
	replica uint8
	logView uint32
	op      uint64 // the sender's head; entry i describes op - i
	commit  uint64 // min(commit_max, op) of the sender
	entries []wire.SuffixEntry
}

// at is the sender's suffix entry for op, nil when the suffix does not
// cover it.
func (d *dvcRecord) at(op uint64) *wire.SuffixEntry {
	if op > d.op || d.op-op >= uint64(len(d.entries)) {
		return nil
	}
	return &d.entries[d.op-op]
}

type mergeOutcome uint8

const (
	mergeReady mergeOutcome = iota
	mergeAwaitingRepair
	mergeDeadlocked
)

func (o mergeOutcome) String() string {
	return [...]string{"ready", "awaiting_repair", "deadlocked"}[o]
}

// mergedLog is the new view's log as the merge decided it.
type mergedLog struct {
	opHead, commitMax uint64
	// headers holds the canonical header of every op from opHead down to
	// max(commitMax, 1), as sent (the bytes the identity covers).
	headers map[uint64]wire.Header
	// committedElsewhere holds ops below the canonical range that senders
	// of an older log_view reported committed (6.7 step 6).
	committedElsewhere map[uint64]wire.Header
}

// header is the merged identity of op, if the merge named one.
func (m *mergedLog) header(op uint64) (wire.PrepareHeader, bool) {
	if h, ok := m.headers[op]; ok {
		return h.Prepare(), true
	}
	if h, ok := m.committedElsewhere[op]; ok {
		return h.Prepare(), true
	}
	return wire.PrepareHeader{}, false
}

// merge runs 6.7 over the recorded DVCs of an n-replica group, with two
// exceptions:
//
//   - The op at commit_max is committed, so the merge does not refuse the
//     view when no canonical sender names it or holds its body (a
//     partition replica whose commit point came from the floor rule of 7.5
//     holds neither); the new primary still repairs it if it lacks it,
//     from a replica whose commit covers it.
//   - lostEverywhere: an op above commit_max that all n replicas' DVCs
//     cover and none holds is truncated, where 6.7 step 4 says Deadlocked.
//     Only a partition replica restarted without its memory journal says
//     neither "have" nor "nack" of an op it covers (Recovery.JournalHead:
//     it may have acknowledged it), and where every replica restarted
//     so, nobody has the op: 9.4 rule 6 says it is lost, and the group
//     must go on without it rather than wait forever (upstream's
//     restarted replicas announce their commit as head, so their heads
//     nack it instead). It cannot have been committed: a committed
//     partition op is applied to the segments of the primary that
//     replied, whose DVC's commit then covers it; a metadata op's journal
//     is durable. An abstention (a suffix not reaching op) blocks it: that
//     replica may hold the body.
//   - The implicit nack of step 4 for an older log_view's entry where no
//     canonical sender names the op applies above commit_max only. At or
//     below it the op is committed, and that entry is the committed op,
//     maybe its only copy: when the primary of the newest log_view
//     restarted without its memory journal it names none of its ops, and
//     counting the copy as a nack, with a replica that never got the op,
//     made a quorum of nacks of a committed op, so every view refused
//     (Deadlocked) forever (simulator seed 114944).

func merge(ds []*dvcRecord, n int) (*mergedLog, mergeOutcome) {
	var canonLV uint32
	for _, d := range ds {
		canonLV = max(canonLV, d.logView)
	}
	var commitMax, opHeadMax uint64
	for _, d := range ds {
		commitMax = max(commitMax, d.commit)
		if d.op > MaxSuffix-1 {
			commitMax = max(commitMax, d.op-(MaxSuffix-1))
		}
		if len(d.entries) > 0 {
			commitMax = max(commitMax, d.entries[0].Prepare.Commit)
		}
	}
	for _, d := range ds {
		if d.logView == canonLV {
			opHeadMax = max(opHeadMax, d.op)
		}
	}
	opHeadMax = max(opHeadMax, commitMax)
	m := &mergedLog{commitMax: commitMax, headers: map[uint64]wire.Header{}, committedElsewhere: map[uint64]wire.Header{}}
	if opHeadMax == 0 {
		return m, mergeReady
	}
	undecided := mergeDeadlocked
	if len(ds) < n {
		undecided = mergeAwaitingRepair
	}
	low := max(commitMax, 1)
	opHead := opHeadMax
	for op := low; op <= opHeadMax; op++ {
		canon, conflict := canonicalAt(ds, canonLV, op)
		nacks, copies, abstentions := 0, 0, 0
		for _, d := range ds {
			if d.op < op {
				nacks++
				continue
			}
			e := d.at(op)
			switch {
			case e == nil:
				abstentions++
			case !e.Blank && e.Present && canon != nil && e.Prepare.Checksum == canon.Prepare.Checksum:
				copies++
			case e.Nack:
				nacks++
			case !e.Blank && d.logView < canonLV && canon != nil && e.Prepare.Checksum != canon.Prepare.Checksum:
				nacks++ // replaced in a later view
			case !e.Blank && d.logView < canonLV && canon == nil && op > commitMax:
				nacks++ // may have been replaced since; see the doc above
			}
		}
		if nacks >= QuorumNack(n) {
			if op <= commitMax {
				return nil, mergeDeadlocked
			}
			opHead = op - 1
			break
		}
		if op <= commitMax && !conflict {
			continue // committed: kept whoever can still name it (see below)
		}
		if !conflict && copies == 0 && abstentions == 0 && len(ds) == n {
			// Every replica answered, each covering op, and none holds its
			// body: it is lost (9.4 rule 6), so it was never committed,
			// and waiting cannot bring it back. See lostEverywhere.
			opHead = op - 1
			break
		}
		if conflict || canon == nil || copies == 0 {
			return nil, undecided
		}
	}
	// Step 5: the canonical headers must form a hash chain.
	for o := opHead; o >= low && o > 0; o-- {
		canon, conflict := canonicalAt(ds, canonLV, o)
		if canon == nil && o <= commitMax {
			break // a committed op no canonical sender still names
		}
		if canon == nil || conflict {
			return nil, mergeDeadlocked
		}
		// A zero identity on either end suspends the chain check (2.5 rule
		// 3), and so does a zero parent: the unsealed link a primary whose
		// head came by state transfer builds on (as 6.5.3's decode and the
		// apply accept it; simulator seed 3515 of --placement 3 --replicas
		// 5 --groups 6 --handover 0.01 deadlocked every merge on it).
		if above, ok := m.headers[o+1]; ok && !linked(above.Prepare(), canon.Prepare) {
			return nil, mergeDeadlocked
		}
		m.headers[o] = canon.Header
	}
	m.opHead = opHead
	// Step 6: committed elsewhere, from senders of an older log_view.
	var top uint64
	for _, d := range ds {
		if d.logView == canonLV {
			continue
		}
		for i := range d.entries {
			e := &d.entries[i]
			op := e.Prepare.Op
			if e.Blank || op > d.commit || (op >= low && op <= opHead) {
				continue
			}
			if have, ok := m.committedElsewhere[op]; ok {
				if have.Prepare().Checksum != e.Prepare.Checksum {
					return nil, mergeDeadlocked
				}
				continue
			}
			m.committedElsewhere[op] = e.Header
			top = max(top, op)
		}
	}
	for o := top; o > 0 && len(m.committedElsewhere) > 0; o-- {
		h, ok := m.committedElsewhere[o]
		if !ok {
			continue
		}
		above, ok := m.headers[o+1]
		if !ok {
			above, ok = m.committedElsewhere[o+1]
		}
		if !ok || !linked(above.Prepare(), h.Prepare()) {
			delete(m.committedElsewhere, o)
		}
	}
	return m, mergeReady
}

// linked reports whether above names below as its parent, or the link
// is unsealed: a zero identity on either end, or a zero parent (2.5 rule
// 3).
func linked(above, below wire.PrepareHeader) bool {
	return above.Parent == below.Checksum || above.Checksum.IsZero() || below.Checksum.IsZero() || above.Parent.IsZero()
}

// canonicalAt is the header the canonical senders agree on at op (6.7
// step 4), and whether two of them disagree.
func canonicalAt(ds []*dvcRecord, canonLV uint32, op uint64) (canon *wire.SuffixEntry, conflict bool) {
	for _, d := range ds {
		if d.logView != canonLV {
			continue
		}
		e := d.at(op)
		if e == nil || e.Blank {
			continue
		}
		if canon == nil {
			canon = e
		} else if e.Prepare.Checksum != canon.Prepare.Checksum {
			conflict = true
		}
	}
	return canon, conflict
}

// MaxSuffix is the most entries a DVC or SV suffix carries (6.5.2).
const MaxSuffix = wire.MaxSuffixEntries
