package partition

import "math"

// Segment is a logical segment: a run of whole committed batches
// (server-behaviour.md 5.6.3; replica-plane.md 13.3). The last segment of a
// partition is the active one, never sealed and never deleted (5.6.4); it
// may be empty.
type Segment struct {
	StartOffset uint64 // first offset (of the next batch, when empty)
	EndOffset   uint64 // last offset; meaningful only when Messages > 0
	SizeBytes   uint64 // sum of its batches' batch_length
	Messages    uint64
	// LastTimestamp is the server timestamp of its newest message (the last
	// batch's base_timestamp), which message expiry compares (5.7.2).
	LastTimestamp uint64
	Sealed        bool
}

// MaxSegmentsPerPass bounds how many segments one retention pass removes
// per partition (5.7.5).
const MaxSegmentsPerPass = 16

// Segments returns a copy of the segments, oldest first; the last one is
// the active segment.
func (l *Log) Segments() []Segment { return append([]Segment(nil), l.segments...) }

// sealedCount is the number of sealed segments (they are a prefix).
func (l *Log) sealedCount() int { return len(l.segments) - 1 }

// DeleteSegmentsUpTo resolves a DeleteSegments segments_count to the
// up_to_offset of the TruncatePartition it commits (client-plane.md 8.9;
// server-behaviour.md 5.9.1; replica-plane.md 13.1 op 68): the last offset
// of the count-th oldest sealed segment, count clamped to the sealed
// segments. ok is false when there is nothing to delete (count 0 or no
// sealed segment), a committed no-op (5.9.2).
func (l *Log) DeleteSegmentsUpTo(segmentsCount uint32) (upTo uint64, ok bool) {
	n := min(int(min(segmentsCount, math.MaxInt32)), l.sealedCount())
	if n == 0 {
		return 0, false
	}
	return l.segments[n-1].EndOffset, true
}

// Truncated reports what a Truncate removed. The shell deletes the stored
// batches below OldestRetained (storage DeleteBatchesBelow).
type Truncated struct {
	Segments       int
	Messages       uint64
	Bytes          uint64
	OldestRetained uint64 // first offset of the first remaining segment
}

// Truncate applies a committed TruncatePartition watermark (5.9.1, 5.9.3):
// it removes the leading sealed segments whose last offset is at or below
// the highest watermark applied so far, stopping at the consumer barrier
// (5.7.4). The watermark only moves forward; calling again (with any
// upTo) re-evaluates it against segments sealed and offsets moved since.
func (l *Log) Truncate(upToOffset uint64) Truncated {
	l.truncateBelow = max(l.truncateBelow, upToOffset+1)
	limit := l.truncateBelow - 1
	n := 0
	for n < l.sealedCount() && l.segments[n].EndOffset <= limit {
		n++
	}
	return l.removeSegments(l.barrierClamp(n))
}

// barrierClamp returns how many of the first n segments the consumer
// barrier lets go (5.7.4): none whose last offset is above the smallest
// stored consumer offset. A partition without stored offsets has no barrier.
func (l *Log) barrierClamp(n int) int {
	barrier, ok := l.ConsumerBarrier()
	if !ok {
		return n
	}
	k := 0
	for k < n && l.segments[k].EndOffset <= barrier {
		k++
	}
	return k
}

// removeSegments drops the n oldest segments (all sealed), their batches
// from the index and the cache, and their totals.
func (l *Log) removeSegments(n int) Truncated {
	assert(n <= l.sealedCount(), "the active segment is never deleted")
	var t Truncated
	if n == 0 {
		t.OldestRetained = l.segments[0].StartOffset
		return t
	}
	for _, s := range l.segments[:n] {
		t.Messages += s.Messages
		t.Bytes += s.SizeBytes
	}
	t.Segments = n
	l.segments = append(l.segments[:0], l.segments[n:]...)
	t.OldestRetained = l.segments[0].StartOffset

	drop := l.index.findOffset(t.OldestRetained)
	l.index.dropFront(drop)
	l.dropCachedBefore(drop)
	l.dropTablesBefore(drop)
	l.dropReadBack() // it may be among the dropped batches
	l.messages -= t.Messages
	l.sizeBytes -= t.Bytes
	return t
}

// dropCachedBefore keeps the cache aligned after the index lost its first
// n entries.
func (l *Log) dropCachedBefore(n int) {
	if len(l.cache) == 0 {
		l.cacheFirst = 0
		return
	}
	for l.cacheFirst < n && len(l.cache) > 0 {
		l.cachedBytes -= uint64(len(l.cache[0]))
		l.popCached()
		l.cacheFirst++
	}
	l.cacheFirst -= n
	if len(l.cache) == 0 {
		l.cacheFirst = 0
	}
}

// dropTablesBefore keeps the tables aligned after the index lost its
// first n entries (after dropCachedBefore: a cached batch's eviction
// reads its table).
func (l *Log) dropTablesBefore(n int) {
	k := min(max(n-l.tablesFirst, 0), len(l.tables))
	for _, si := range l.tables[:k] {
		l.cachedBytes -= si.bytes()
	}
	clear(l.tables[:k])
	l.tables = l.tables[k:]
	l.tablesFirst = max(l.tablesFirst, n) - n
	if len(l.tables) == 0 {
		l.tablesFirst = 0
	}
}

// Retention limits of a topic (server-behaviour.md 4.2, 5.7). The u64
// sentinels keep their wire meaning: 0 = server default (absent, enforces
// nothing), math.MaxUint64 = never expire / unlimited.
type Retention struct {
	MessageExpiryUs uint64
	MaxTopicSize    uint64
	PartitionsCount uint32
	SegmentSize     uint64
	MaxMessageSize  uint64 // message_bus.max_message_size
}

// ExpiredSegments counts the leading run of sealed segments whose newest
// message's server timestamp + expiry is <= now (5.7.2), oldest first,
// stopping at the first unexpired one. Empty segments have no newest
// timestamp and never expire.
func ExpiredSegments(segments []Segment, nowUs, messageExpiryUs uint64) int {
	if messageExpiryUs == 0 || messageExpiryUs == math.MaxUint64 {
		return 0
	}
	n := 0
	for ; n < len(segments); n++ {
		s := segments[n]
		if !s.Sealed || s.Messages == 0 || s.LastTimestamp > math.MaxUint64-messageExpiryUs ||
			s.LastTimestamp+messageExpiryUs > nowUs {
			break
		}
	}
	return n
}

// SizeBudget is a partition's share of max_topic_size in sealed bytes:
// max(max_topic_size / partitions, segment_size + max_message_size) (5.7.3).
// ok is false for the unlimited and server-default sentinels.
func SizeBudget(maxTopicSize uint64, partitions uint32, segmentSize, maxMessageSize uint64) (budget uint64, ok bool) {
	if maxTopicSize == 0 || maxTopicSize == math.MaxUint64 {
		return 0, false
	}
	share := maxTopicSize / uint64(max(partitions, 1))
	floor := segmentSize + maxMessageSize
	if floor < segmentSize { // overflow
		floor = math.MaxUint64
	}
	return max(share, floor), true
}

// OversizeSegments counts the oldest sealed segments to remove so that the
// sealed bytes fit in budget (5.7.3); the active segment never counts.
func OversizeSegments(segments []Segment, budget uint64) int {
	var sealed uint64
	for _, s := range segments {
		if s.Sealed {
			sealed += s.SizeBytes
		}
	}
	n := 0
	for sealed > budget && n < len(segments) && segments[n].Sealed {
		sealed -= segments[n].SizeBytes
		n++
	}
	return n
}

// RetentionCandidates reports how many of the oldest sealed segments the
// segment cleaner would remove at nowUs under r (5.7): the larger of the
// expiry and size counts, clamped by the consumer barrier (5.7.4) and by
// MaxSegmentsPerPass (5.7.5), and the last offset of the last of them for a
// Truncate. Nothing is removed; count 0 means nothing to do.
func (l *Log) RetentionCandidates(nowUs uint64, r Retention) (count int, upTo uint64) {
	n := ExpiredSegments(l.segments, nowUs, r.MessageExpiryUs)
	segmentSize := r.SegmentSize
	if segmentSize == 0 {
		segmentSize = l.cfg.SegmentSize
	}
	maxMessage := r.MaxMessageSize
	if maxMessage == 0 {
		maxMessage = DefaultMaxMessageSize
	}
	if budget, ok := SizeBudget(r.MaxTopicSize, r.PartitionsCount, segmentSize, maxMessage); ok {
		n = max(n, OversizeSegments(l.segments, budget))
	}
	n = min(l.barrierClamp(min(n, l.sealedCount())), MaxSegmentsPerPass)
	if n == 0 {
		return 0, 0
	}
	return n, l.segments[n-1].EndOffset
}
