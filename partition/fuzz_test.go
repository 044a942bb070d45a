package partition

import (
	"bytes"
	"encoding/binary"
	"testing"

	"iggynode/wire"
)

// FuzzPoll drives a log with random valid batches, truncations, consumer
// offsets, purges and polls of every strategy, and checks every poll: the
// records decode with wire's decoder, offsets are strictly increasing and
// contiguous within [oldest retained, commit frontier], never more than
// asked, each payload is the one produced for its offset, and the count
// equals what Polled reports.
func FuzzPoll(f *testing.F) {
	f.Add([]byte{0, 3, 0, 4, 1, 0, 0, 2, 5, 3, 0, 4, 2})
	f.Add([]byte{0, 9, 0, 1, 0, 200, 2, 1, 7, 5, 2, 3, 1, 4, 4, 1, 0, 2, 0})
	f.Add([]byte{0, 5, 6, 0, 0, 7, 1, 2, 9, 0, 3, 1, 255, 255, 8, 2, 5, 0, 1})
	f.Fuzz(func(t *testing.T, ops []byte) {
		h := newHarness(t, Config{SegmentSize: 1500, CacheBytes: 2000})
		var pending [][]byte // stamped, not committed
		next := func() byte {
			if len(ops) == 0 {
				return 0
			}
			b := ops[0]
			ops = ops[1:]
			return b
		}
		for len(ops) > 0 {
			switch next() % 8 {
			case 0: // stamp a batch
				if len(pending) < 4 {
					pending = append(pending, h.stamp(1+int(next()%9), 8+int(next()%64)))
				}
			case 1: // commit the oldest pending batch
				if len(pending) > 0 {
					h.commitIndexed(pending[0], next()%2 == 0)
					pending = pending[1:]
				}
			case 2: // a failed append drops the newest pending batch
				if n := len(pending); n > 0 {
					h.log.RollbackJournal(wire.Batch(pending[n-1]).BaseOffset())
					pending = pending[:n-1]
				}
			case 3: // DeleteSegments
				if upTo, ok := h.log.DeleteSegmentsUpTo(uint32(next() % 4)); ok {
					h.truncate(upTo)
				}
			case 4: // store a consumer offset
				o := uint64(next())
				if h.log.CheckStore(o) == 0 {
					h.log.ApplyStoreOffset(wire.ConsumerSingle, uint32(next()%3), o)
				}
			case 5: // delete a consumer offset
				h.log.ApplyDeleteOffset(wire.ConsumerSingle, uint32(next()%3))
			case 6: // purge, rarely
				if next() == 0xFF {
					h.log.Purge()
					clear(h.store.batches)
					pending = nil
				}
			case 7:
				s := wire.PollingStrategy{Kind: wire.PollingKind(1 + next()%5), Value: uint64(next())}
				if s.Kind == wire.PollTimestamp {
					s.Value = 1_000_000 + s.Value*500
				}
				count := uint32(next() % 40)
				stored, has := h.log.GetOffset(wire.ConsumerSingle, uint32(next()%3))
				checkPoll(t, h.log, s, count, stored, has)
			}
		}
	})
}

func checkPoll(t *testing.T, l *Log, s wire.PollingStrategy, count uint32, stored uint64, has bool) {
	t.Helper()
	checkCache(t, l)
	out, p, err := l.Poll(nil, s, count, stored, has)
	if err != nil {
		t.Fatalf("poll %+v: %v", s, err)
	}
	// The spliced poll (cached and read-back batches by reference) serves
	// the same records.
	built, splices, sp, err := l.PollSpliced(nil, nil, s, count, stored, has)
	if err != nil || sp != p {
		t.Fatalf("spliced poll %+v: %+v %v, copied %+v", s, sp, err, p)
	}
	if joined, err := wire.JoinSpliced(nil, built, splices); err != nil || !bytes.Equal(joined, out) {
		t.Fatalf("spliced poll %+v differs from the copied one (%v)", s, err)
	}
	// So does the reply that serves evicted batches, whole or sliced, from
	// their stored bytes.
	reply, _, err := l.AppendPollReply(nil, 3, s, count, stored, has)
	if err != nil {
		t.Fatalf("poll reply %+v: %v", s, err)
	}
	built, splices, sp, err = l.AppendPollReplySpliced(nil, nil, true, 3, s, count, stored, has)
	if err != nil || sp != p {
		t.Fatalf("stored-spliced poll %+v: %+v %v, copied %+v", s, sp, err, p)
	}
	if joined, err := wire.JoinSpliced(nil, built, splices); err != nil || !bytes.Equal(joined, reply) {
		t.Fatalf("stored-spliced poll %+v differs from the copied one (%v)", s, err)
	}
	checkCache(t, l)
	if p.Count > count {
		t.Fatalf("poll %+v count %d served %d", s, count, p.Count)
	}
	msgs := decodeRecords(t, out, p.Count)
	if uint32(len(msgs)) != p.Count {
		t.Fatalf("decoded %d messages, Polled says %d", len(msgs), p.Count)
	}
	if p.Count == 0 {
		return
	}
	oldest, _ := l.OldestOffset()
	if p.First < oldest || p.Last >= l.HighWatermark() || msgs[0].Offset != p.First || msgs[len(msgs)-1].Offset != p.Last {
		t.Fatalf("poll %+v served %d..%d, retained %d..%d", s, p.First, p.Last, oldest, l.HighWatermark())
	}
	for i, m := range msgs {
		if i > 0 && m.Offset != msgs[i-1].Offset+1 {
			t.Fatalf("poll %+v: offset %d after %d", s, m.Offset, msgs[i-1].Offset)
		}
		if binary.LittleEndian.Uint64(m.Payload) != m.Offset {
			t.Fatalf("offset %d carries the payload of %d", m.Offset, binary.LittleEndian.Uint64(m.Payload))
		}
	}
	if s.Kind == wire.PollOffset && s.Value >= oldest && p.First != s.Value {
		t.Fatalf("offset poll at %d started at %d", s.Value, p.First)
	}
	if s.Kind == wire.PollLast && p.Last != l.CurrentOffset() {
		t.Fatalf("last poll ended at %d, newest %d", p.Last, l.CurrentOffset())
	}
}
