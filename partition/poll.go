package partition

import (
	"fmt"
	"math"

	"iggynode/wire"
)

// Polled describes the messages a poll served. First and Last are
// meaningful only when Count > 0.
type Polled struct {
	First uint64 // offset of the first message served
	Last  uint64 // offset of the last message served (the auto-commit offset, 5.5.7)
	Count uint32 // messages served: the reply's messages_count
}

// StartOffset resolves a polling strategy to the first offset to serve
// (client-plane.md 8.4.1; server-behaviour.md 5.5.3), clamped up to the
// oldest retained message. ok is false when the poll serves nothing (5.5.4):
// count 0, no committed message retained, a start past the newest offset,
// or no batch at or after a Timestamp value. storedOffset is the consumer's
// stored offset for Next (hasStored false: none).
func (l *Log) StartOffset(s wire.PollingStrategy, count uint32, storedOffset uint64, hasStored bool) (uint64, bool) {
	oldest, ok := l.OldestOffset()
	if count == 0 || !ok {
		return 0, false
	}
	newest := l.CurrentOffset()
	var start uint64
	switch s.Kind {
	case wire.PollOffset:
		start = s.Value
	case wire.PollTimestamp:
		i := l.index.findTimestamp(s.Value)
		if i == l.index.len() {
			return 0, false
		}
		start = l.index.at(i).baseOffset
	case wire.PollFirst:
		start = oldest
	case wire.PollLast:
		if uint64(count-1) < newest {
			start = newest - uint64(count-1)
		}
	case wire.PollNext:
		if hasStored {
			if storedOffset == math.MaxUint64 {
				return 0, false
			}
			start = storedOffset + 1
		}
	default:
		return 0, false
	}
	start = max(start, oldest)
	return start, start <= newest
}

// Poll appends to dst the batch records (client-plane.md 13.4) serving at
// most count messages from the strategy's start, in offset order, never past
// the commit frontier (server-behaviour.md 0.6), and stopping before the
// records would pass MaxPollBytes (the first record is always served).
// Whole batches are served as stored; the first and last may be sliced.
// Batches still in the cache are served without touching the Store; an
// evicted batch is read back through it, and a failure returns dst as it
// was and an error wrapping ErrReadFailure. With a Cipher every record is
// opened (decrypted and rebuilt, client-plane.md 13.4), and a batch that
// does not authenticate returns dst as it was and an error wrapping
// wire.ErrCannotDecryptData. Apart from growing dst, Poll does not
// allocate.
func (l *Log) Poll(dst []byte, s wire.PollingStrategy, count uint32, storedOffset uint64, hasStored bool) ([]byte, Polled, error) {
	start, ok := l.StartOffset(s, count, storedOffset, hasStored)
	if !ok {
		return dst, Polled{}, nil
	}
	at := len(dst)
	var p Polled
	for i := l.index.findOffset(start); i < l.index.len() && p.Count < count; i++ {
		e := l.index.at(i)
		before := len(dst)
		var n uint32
		if whole, ok := l.appendEvictedWhole(dst, i, e, start, count-p.Count); ok {
			dst, n = whole, e.count
		} else {
			batch, err := l.batchAt(i, e)
			if err != nil {
				return dst[:at], Polled{}, err
			}
			if dst, n, err = l.appendRecord(dst, batch, start, count-p.Count); err != nil {
				return dst[:at], Polled{}, fmt.Errorf("partition: batch at %d: %w", e.baseOffset, err)
			}
		}
		if n == 0 {
			continue // offset deltas that are not frame indexes; skip the batch
		}
		if p.Count > 0 && uint64(len(dst)-at) > l.cfg.MaxPollBytes {
			dst = dst[:before]
			break
		}
		// Offsets assume offset_delta = frame index, as producers write
		// them (client-plane.md 13.2); the first served frame is the first
		// at or after start.
		first := max(start, e.baseOffset)
		if p.Count == 0 {
			p.First = first
		}
		p.Last = first + uint64(n) - 1
		p.Count += n
		start = e.next()
	}
	return dst, p, nil
}

// appendRecord appends the poll record of a stored batch: as stored or
// sliced (wire.AppendRecord), or opened when the log is encrypted, which
// fails with wire.ErrCannotDecryptData when the batch does not
// authenticate under the key.
func (l *Log) appendRecord(dst, batch []byte, start uint64, maxCount uint32) ([]byte, uint32, error) {
	if l.cfg.Cipher == nil {
		dst, n := wire.AppendRecord(dst, wire.Batch(batch), start, maxCount)
		return dst, n, nil
	}
	return l.cfg.Cipher.AppendOpenedRecord(dst, wire.Batch(batch), start, maxCount)
}

// AppendPollReply appends a whole PolledMessages body (client-plane.md
// 7.17): the 16-byte prefix with partitionID and the current offset, then
// the records of Poll. On a read failure it appends the empty poll of
// 8.4.1's last row (the partition id, current offset 0, no message) and
// returns the error for the shell to log.
func (l *Log) AppendPollReply(dst []byte, partitionID uint32, s wire.PollingStrategy, count uint32, storedOffset uint64, hasStored bool) ([]byte, Polled, error) {
	at := len(dst)
	dst = wire.AppendPolledHeader(dst, partitionID, l.CurrentOffset(), 0)
	dst, p, err := l.Poll(dst, s, count, storedOffset, hasStored)
	if err != nil {
		return wire.AppendPolledHeader(dst[:at], partitionID, 0, 0), Polled{}, err
	}
	wire.SetPolledMessagesCount(dst[at:], p.Count)
	return dst, p, nil
}

// batchAt returns the bytes of index entry i: from the cache, or read back
// from the Store and checked against the index.
func (l *Log) batchAt(i int, e indexEntry) ([]byte, error) {
	if c := i - l.cacheFirst; c >= 0 && c < len(l.cache) {
		return l.cache[c], nil
	}
	if l.store == nil {
		return nil, fmt.Errorf("partition: batch at %d evicted and no store: %w", e.baseOffset, ErrReadFailure)
	}
	b, err := l.store.ReadBatch(e.baseOffset)
	if err != nil {
		return nil, fmt.Errorf("partition: read batch at %d: %w: %w", e.baseOffset, ErrReadFailure, err)
	}
	info, err := BatchInfoOf(b)
	if err != nil || info.BaseOffset != e.baseOffset || info.Count != e.count || info.Size != e.size {
		return nil, fmt.Errorf("partition: batch read at %d is not the indexed batch: %w", e.baseOffset, ErrReadFailure)
	}
	return b, nil
}

// AppendReader is an optional Store extension: it appends the stored batch
// at baseOffset to dst, so an evicted batch served whole is read straight
// into the reply (one copy instead of two, no intermediate buffer).
type AppendReader interface {
	AppendBatchTo(dst []byte, baseOffset uint64) ([]byte, error)
}

// appendEvictedWhole serves index entry i as a whole record read directly
// into dst when it is evicted from the cache, the poll takes all of it, and
// the Store can append. ok is false when the general path must serve it.
func (l *Log) appendEvictedWhole(dst []byte, i int, e indexEntry, start uint64, remaining uint32) ([]byte, bool) {
	if c := i - l.cacheFirst; c >= 0 && c < len(l.cache) {
		return dst, false
	}
	ar, ok := l.store.(AppendReader)
	if !ok || start > e.baseOffset || remaining < e.count {
		return dst, false
	}
	at := len(dst)
	out, err := ar.AppendBatchTo(dst, e.baseOffset)
	if err != nil {
		return dst[:at], false // the general path reports the failure
	}
	info, err := BatchInfoOf(out[at:])
	if err != nil || info.BaseOffset != e.baseOffset || info.Count != e.count || info.Size != e.size {
		return out[:at], false
	}
	if l.cfg.Cipher != nil {
		// Opened where it was read; on failure the general path reads it
		// again and reports the error.
		n, err := l.cfg.Cipher.OpenBatchInPlace(out[at:])
		if err != nil {
			return out[:at], false
		}
		out = out[:at+n]
	}
	return out, true
}
