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
	dst, _, p, err := l.poll(dst, nil, spliceNone, s, count, storedOffset, hasStored)
	return dst, p, err
}

// PollSpliced is Poll serving whole batches still in the cache by
// reference: each is appended to splices at its place in dst (wire.Splice)
// instead of copied into dst, so a reply of cached batches costs no copy
// of their bytes. The batches are immutable once committed; the caller
// writes the pieces before it lets go of them. An encrypted log opens
// every record into dst, as Poll does.
func (l *Log) PollSpliced(dst []byte, splices []wire.Splice, s wire.PollingStrategy, count uint32, storedOffset uint64, hasStored bool) ([]byte, []wire.Splice, Polled, error) {
	return l.poll(dst, splices, spliceCached, s, count, storedOffset, hasStored)
}

// spliceMode is what a poll serves by reference: nothing (Poll), whole
// cached batches (PollSpliced), or those and whole evicted batches as
// their stored bytes (a SourceReader's wire.SpliceSource, for a carrier
// that sends files).
type spliceMode uint8

const (
	spliceNone spliceMode = iota
	spliceCached
	spliceStored
)

// SourceReader is an optional Store extension: the stored batch at
// baseOffset as a wire.SpliceSource, read when the reply is written.
type SourceReader interface {
	BatchSource(baseOffset uint64) (wire.SpliceSource, error)
}

// storedWhole is index entry i as a source of its stored bytes when the
// poll asks for those (spliceStored), the batch is evicted from the
// cache, the log is not encrypted, the poll takes all of it and the Store
// can give sources. ok false: the other paths serve it (a failure here is
// theirs to report).
func (l *Log) storedWhole(mode spliceMode, i int, e indexEntry, start uint64, remaining uint32) (wire.SpliceSource, bool) {
	if mode != spliceStored || l.cfg.Cipher != nil || l.cached(i) || start > e.baseOffset || remaining < e.count {
		return nil, false
	}
	sr, ok := l.store.(SourceReader)
	if !ok {
		return nil, false
	}
	src, err := sr.BatchSource(e.baseOffset)
	if err != nil || uint64(src.Len()) != uint64(e.size) {
		return nil, false
	}
	return src, true
}

func (l *Log) poll(dst []byte, splices []wire.Splice, mode spliceMode, s wire.PollingStrategy, count uint32, storedOffset uint64, hasStored bool) ([]byte, []wire.Splice, Polled, error) {
	start, ok := l.StartOffset(s, count, storedOffset, hasStored)
	if !ok {
		return dst, splices, Polled{}, nil
	}
	at, splicesAt := len(dst), len(splices)
	var p Polled
	var spliced uint64 // bytes served by reference
	for i := l.index.findOffset(start); i < l.index.len() && p.Count < count; i++ {
		e := l.index.at(i)
		before, splicesBefore, splicedBefore := len(dst), len(splices), spliced
		var n uint32
		if batch, ok := l.cachedWhole(i, e, start, count-p.Count); ok && mode != spliceNone {
			splices = append(splices, wire.Splice{At: len(dst), Bytes: batch, Pin: l.pinCached(i)})
			spliced += uint64(len(batch))
			n = e.count
		} else if batch, ok := l.cachedPlain(i); ok && mode != spliceNone {
			// A slice of a cached batch, found by its table.
			dst, splices, n = appendSlice(dst, splices, batch, l.tableOf(i), start, count-p.Count, &spliced)
			if n > 0 {
				splices[len(splices)-1].Pin = l.pinCached(i)
			}
		} else if src, ok := l.storedWhole(mode, i, e, start, count-p.Count); ok {
			splices = append(splices, wire.Splice{At: len(dst), From: src})
			spliced += uint64(src.Len())
			n = e.count
		} else if out, outSplices, taken, ok := l.storedSlice(dst, splices, mode, i, e, start, count-p.Count, &spliced); ok {
			dst, splices, n = out, outSplices, taken
		} else if whole, ok := l.appendEvictedWhole(dst, i, e, start, count-p.Count); ok {
			dst, n = whole, e.count
		} else if batch, ok, err := l.readBackAt(mode, i, e); ok || err != nil {
			// A slice of an evicted batch, read once for this poll and the
			// next (no table: found by walking).
			if err != nil {
				return dst[:at], unpinFrom(splices, splicesAt), Polled{}, err
			}
			dst, splices, n = appendSlice(dst, splices, batch, wire.FrameTable{}, start, count-p.Count, &spliced)
		} else {
			batch, err := l.batchAt(i, e)
			if err != nil {
				return dst[:at], unpinFrom(splices, splicesAt), Polled{}, err
			}
			if dst, n, err = l.appendRecord(dst, batch, start, count-p.Count); err != nil {
				return dst[:at], unpinFrom(splices, splicesAt), Polled{}, fmt.Errorf("partition: batch at %d: %w", e.baseOffset, err)
			}
		}
		if n == 0 {
			continue // offset deltas that are not frame indexes; skip the batch
		}
		if p.Count > 0 && uint64(len(dst)-at)+spliced > l.cfg.MaxPollBytes {
			dst, splices, spliced = dst[:before], unpinFrom(splices, splicesBefore), splicedBefore
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
	return dst, splices, p, nil
}

// pinCached pins cached index entry i's batch for a reply that carries it
// by reference (nil: it has no owner).
func (l *Log) pinCached(i int) wire.Pin {
	if o := l.owners[i-l.cacheFirst]; o != nil {
		return o.Pin()
	}
	return nil
}

// unpinFrom drops the splices from at on, which the reply will not carry,
// with their pins.
func unpinFrom(splices []wire.Splice, at int) []wire.Splice {
	wire.UnpinSplices(splices[at:])
	clear(splices[at:])
	return splices[:at]
}

// appendSlice serves at most maxCount messages of batch from start: the
// record's header (a slice's rewritten) built into dst, its frames by
// reference in splices, counted in spliced. It returns the messages served.
func appendSlice(dst []byte, splices []wire.Splice, batch []byte, table wire.FrameTable, start uint64, maxCount uint32, spliced *uint64) ([]byte, []wire.Splice, uint32) {
	dst, frames, n := wire.AppendRecordHeaderIndexed(dst, wire.Batch(batch), table, start, maxCount)
	if n > 0 {
		splices = append(splices, wire.Splice{At: len(dst), Bytes: frames})
		*spliced += uint64(len(frames))
	}
	return dst, splices, n
}

// cachedWhole returns index entry i's batch when it is in the cache, the
// log is not encrypted (a record is opened, not served as stored) and the
// poll takes all of it: the record is the batch as stored. A batch in the
// log was validated when it was admitted (its frames tile it exactly,
// message_count of them), and from start <= base_offset wire.RecordFrames
// takes every frame, so only the header is looked at: walking the frames
// read a word of each message, 8 % of a poll's CPU and a cache miss per
// message, before the kernel copied the batch anyway.
func (l *Log) cachedWhole(i int, e indexEntry, start uint64, remaining uint32) ([]byte, bool) {
	b, ok := l.cachedPlain(i)
	if !ok || start > e.baseOffset || remaining < e.count {
		return nil, false
	}
	if len(b) < wire.BatchHeaderSize || wire.Batch(b).MessageCount() != e.count || wire.Batch(b).Length() != uint64(len(b)) {
		return nil, false // not the indexed batch: the general path serves it
	}
	return b, true
}

// cachedPlain returns index entry i's batch when it is in the cache and
// the log is not encrypted (its records are served as stored or sliced).
func (l *Log) cachedPlain(i int) ([]byte, bool) {
	if l.cfg.Cipher != nil || !l.cached(i) {
		return nil, false
	}
	return l.cache[i-l.cacheFirst], true
}

// tableOf returns the frame table of index entry i's cached batch,
// building it (and counting it in the cache's bytes) the first time.
func (l *Log) tableOf(i int) wire.FrameTable {
	si := &l.tables[i-l.tablesFirst]
	if !si.table.Built() {
		si.table, _ = wire.BuildFrameTable(l.cache[i-l.cacheFirst])
		l.cachedBytes += uint64(si.table.Bytes())
	}
	return si.table
}

// RangeSource is an optional extension of a SourceReader's sources: a
// run of the source's bytes as a source of its own (a slice's frames).
type RangeSource interface {
	Range(from, to int) wire.SpliceSource
}

// storedSlice serves a slice of evicted index entry i from its stored
// bytes when the poll asks for those (spliceStored) and the log is plain:
// the record's header built from the batch's kept header and frame table
// (tables), its frames a range of the stored batch, sent from the file.
// A poll that does not line up with the batches slices one evicted batch
// in two without reading it into memory. ok false: the other paths serve
// it (a failure here is theirs to report).
func (l *Log) storedSlice(dst []byte, splices []wire.Splice, mode spliceMode, i int, e indexEntry, start uint64, remaining uint32, spliced *uint64) ([]byte, []wire.Splice, uint32, bool) {
	if mode != spliceStored || l.cfg.Cipher != nil || l.cached(i) || i < l.tablesFirst || i >= l.tablesFirst+len(l.tables) {
		return dst, splices, 0, false
	}
	si := l.tables[i-l.tablesFirst]
	if si.header == nil || !si.table.Covers(int(e.size), e.count) {
		return dst, splices, 0, false
	}
	sr, ok := l.store.(SourceReader)
	if !ok {
		return dst, splices, 0, false
	}
	src, err := sr.BatchSource(e.baseOffset)
	if err != nil || uint64(src.Len()) != uint64(e.size) {
		return dst, splices, 0, false
	}
	ranged, ok := src.(RangeSource)
	if !ok {
		return dst, splices, 0, false
	}
	out, from, to, n := wire.AppendSliceHeader(dst, wire.Batch(si.header), si.table, start, remaining)
	if n > 0 {
		splices = append(splices, wire.Splice{At: len(out), From: ranged.Range(from, to)})
		*spliced += uint64(to - from)
	}
	return out, splices, n, true
}

// cached reports whether index entry i's batch is in the cache.
func (l *Log) cached(i int) bool {
	c := i - l.cacheFirst
	return c >= 0 && c < len(l.cache)
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
	dst, _, p, err := l.appendPollReply(dst, nil, spliceNone, partitionID, s, count, storedOffset, hasStored)
	return dst, p, err
}

// AppendPollReplySpliced is AppendPollReply with the cached batches it
// serves appended to splices (PollSpliced); with stored, the whole
// evicted batches too, as sources of their stored bytes (SourceReader),
// for a carrier that sends them from their files.
func (l *Log) AppendPollReplySpliced(dst []byte, splices []wire.Splice, stored bool, partitionID uint32, s wire.PollingStrategy, count uint32, storedOffset uint64, hasStored bool) ([]byte, []wire.Splice, Polled, error) {
	mode := spliceCached
	if stored {
		mode = spliceStored
	}
	return l.appendPollReply(dst, splices, mode, partitionID, s, count, storedOffset, hasStored)
}

func (l *Log) appendPollReply(dst []byte, splices []wire.Splice, mode spliceMode, partitionID uint32, s wire.PollingStrategy, count uint32, storedOffset uint64, hasStored bool) ([]byte, []wire.Splice, Polled, error) {
	at := len(dst)
	dst = wire.AppendPolledHeader(dst, partitionID, l.CurrentOffset(), 0)
	dst, splices, p, err := l.poll(dst, splices, mode, s, count, storedOffset, hasStored)
	if err != nil {
		return wire.AppendPolledHeader(dst[:at], partitionID, 0, 0), splices, Polled{}, err
	}
	wire.SetPolledMessagesCount(dst[at:], p.Count)
	return dst, splices, p, nil
}

// readBackAt returns evicted index entry i's batch for a spliced poll of a
// plain log, from readBack or read from the Store into it (ok false: the
// general path serves the entry). The bytes are never written afterwards:
// a reply may still reference them when readBack moves on.
func (l *Log) readBackAt(mode spliceMode, i int, e indexEntry) ([]byte, bool, error) {
	if mode == spliceNone || l.cfg.Cipher != nil || l.cached(i) {
		return nil, false, nil
	}
	if b := l.readBack; b != nil && wire.Batch(b).BaseOffset() == e.baseOffset && len(b) == int(e.size) {
		return b, true, nil
	}
	b, err := l.batchAt(i, e)
	if err != nil {
		return nil, false, err
	}
	l.dropReadBack()
	l.readBack = b
	l.cachedBytes += uint64(len(b))
	l.evict()
	return b, true, nil
}

// batchAt returns the bytes of index entry i: from the cache, or read back
// from the Store and checked against the index.
func (l *Log) batchAt(i int, e indexEntry) ([]byte, error) {
	if l.cached(i) {
		return l.cache[i-l.cacheFirst], nil
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
	if l.cached(i) {
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
