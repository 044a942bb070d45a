package partition

import (
	"errors"
	"fmt"

	"iggynode/wire"
)

// Defaults (server-behaviour.md 4.2, 11.3).
const (
	DefaultSegmentSize    = 1 << 30  // topic option segment_size
	DefaultCacheBytes     = 64 << 20 // recent committed batches kept in memory
	DefaultMaxMessageSize = 64 << 20 // message_bus.max_message_size
	// DefaultMaxPollBytes bounds the records of one poll reply so that the
	// reply frame (256-byte header, 16-byte prefix, records) stays within
	// the default message_bus.max_message_size (5.5.5, Recommended).
	DefaultMaxPollBytes = DefaultMaxMessageSize - wire.HeaderSize - wire.PolledMessagesHeaderSize
)

// Store reads committed batches back after they left the in-memory cache.
// It returns the stamped batch stored at baseOffset exactly as it was
// appended. The returned bytes are only read, never retained.
type Store interface {
	ReadBatch(baseOffset uint64) ([]byte, error)
}

// Config configures one partition's log. Zero values take the defaults.
type Config struct {
	// SegmentSize is the topic's segment_size in bytes: a segment seals once
	// an append makes it reach this size (5.6.3).
	SegmentSize uint64
	// CacheBytes bounds the committed batches kept in memory for polls at
	// the tail. Only batches the shell reported with MarkPersisted are ever
	// evicted, so the cache may exceed the bound while writes are pending.
	CacheBytes uint64
	// MaxPollBytes bounds the record bytes of one poll (5.5.5): records stop
	// before the bound would be passed, but the first record is always
	// served whole.
	MaxPollBytes uint64
	// Cipher, when set, is the at-rest key: committed batches are sealed
	// (wire.BatchCipher) and polls serve them opened (client-plane.md
	// 13.4, last item). Nil: batches are plaintext and served as stored.
	Cipher *wire.BatchCipher
}

func (c *Config) setDefaults() {
	if c.SegmentSize == 0 {
		c.SegmentSize = DefaultSegmentSize
	}
	if c.CacheBytes == 0 {
		c.CacheBytes = DefaultCacheBytes
	}
	if c.MaxPollBytes == 0 {
		c.MaxPollBytes = DefaultMaxPollBytes
	}
}

// Errors.
var (
	// ErrStampMismatch: a backup's prepare carries a batch whose stamp is not
	// (its own next offset, the prepare timestamp) (replica-plane.md 5.13
	// rule 4); the prepare is dropped without an ack.
	ErrStampMismatch = errors.New("partition: batch stamp does not match the journal")
	// ErrNotContiguous: a committed batch does not start at the commit
	// frontier. It happens legitimately only for a batch stamped before a
	// Purge and committed after it, which the shell drops.
	ErrNotContiguous = errors.New("partition: committed batch does not start at the frontier")
	// ErrBadBatch: bytes that are not a whole batch with at least one message.
	ErrBadBatch = errors.New("partition: not a whole batch")
	// ErrReadFailure: a batch could not be read back from the Store, or what
	// came back is not the batch the index expects; the poll is answered
	// with an empty reply (client-plane.md 8.4.1, last row).
	ErrReadFailure = errors.New("partition: batch read failure")
)

// Log is one partition's committed message log: the batch index, the
// logical segments, the tail cache, the journal's next offset and the
// consumer offsets. It is a plain value owned by the partition actor; it is
// not safe for concurrent use.
type Log struct {
	cfg   Config
	store Store

	// Offsets. Committed offsets are < committedNext; every batch handed to
	// the journal (committed or still in the pipeline) is < journalNext;
	// every committed batch below persistedNext is readable from the Store.
	committedNext uint64
	journalNext   uint64
	persistedNext uint64

	index    batchIndex
	segments []Segment

	// cache holds the bytes of the committed batches index[cacheFirst:],
	// in order; cachedBytes is their total size, with the tables' and
	// readBack's.
	cache       [][]byte
	cacheFirst  int
	cachedBytes uint64
	// owners[i] holds cache[i]'s memory (nil: nobody to tell); evicted
	// are the owners of batches the cache dropped, until DrainEvicted.
	owners  []Owner
	evicted []Owner
	// tables holds what slices index[tablesFirst:] without their bytes
	// (tablesFirst <= cacheFirst): a frame table from admission
	// (ApplySendIndexed) or from a poll's first slice of the cached
	// batch, and, once the batch is evicted, its header, so polls slice it
	// from its stored bytes. Kept past the batch's eviction, shed after
	// the cached batches and readBack (they weigh about 1.2 % of 1 KB
	// messages). Encrypted logs have none.
	tables      []sliceIndex
	tablesFirst int
	// readBack is the evicted batch a sliced poll last read from the
	// Store (nil: none), kept so the next sequential poll, which slices
	// the same batch, neither reads it again nor copies it: polls that do
	// not line up with the batches read each evicted batch twice
	// otherwise. Counted in cachedBytes and dropped by evictTo after the
	// cached batches (it is the most recently used), so the memory budget
	// bounds it as it bounds the cache.
	readBack []byte

	// Retained totals (messages_count, size_bytes of 7.4).
	messages  uint64
	sizeBytes uint64

	// truncateBelow is one more than the highest TruncatePartition
	// watermark applied (0: none); it only moves forward (5.9.3).
	truncateBelow uint64

	offsets    map[offsetSlot]uint64
	generation uint64
}

// New returns an empty partition log (one empty active segment at offset 0).
func New(cfg Config, store Store) *Log {
	cfg.setDefaults()
	l := &Log{cfg: cfg, store: store, offsets: make(map[offsetSlot]uint64)}
	l.segments = []Segment{{StartOffset: 0}}
	return l
}

// Config returns the configuration in force, defaults resolved.
func (l *Log) Config() Config { return l.cfg }

// HighWatermark is the commit frontier: every offset below it is committed
// and visible to polls, nothing at or above it is (server-behaviour.md 0.6).
func (l *Log) HighWatermark() uint64 { return l.committedNext }

// CurrentOffset is the offset of the newest committed message, 0 when the
// partition holds none (5.4.4).
func (l *Log) CurrentOffset() uint64 {
	if l.committedNext == 0 {
		return 0
	}
	return l.committedNext - 1
}

// HasMessages reports whether any message was ever committed since the
// partition was created or last purged (it tells "offset 0" from "empty").
func (l *Log) HasMessages() bool { return l.committedNext > 0 }

// JournalNext is the offset the next stamped batch starts at.
func (l *Log) JournalNext() uint64 { return l.journalNext }

// OldestOffset is the oldest retained committed offset; false when no
// committed message is retained.
func (l *Log) OldestOffset() (uint64, bool) {
	if l.index.len() == 0 {
		return 0, false
	}
	return l.index.at(0).baseOffset, true
}

// Generation counts purges: a write admitted under an older generation and
// committed after a purge is discarded (5.8.3); the shell tags in-flight
// consumer-offset writes with it.
func (l *Log) Generation() uint64 { return l.generation }

// Stats are the partition figures reads report (client-plane.md 7.4).
type Stats struct {
	SegmentsCount uint32 // at least 1 (5.6.4)
	CurrentOffset uint64
	SizeBytes     uint64 // retained committed batch bytes
	MessagesCount uint64 // retained committed messages
}

// Stats returns the partition's figures.
func (l *Log) Stats() Stats {
	return Stats{
		SegmentsCount: uint32(max(1, len(l.segments))),
		CurrentOffset: l.CurrentOffset(),
		SizeBytes:     l.sizeBytes,
		MessagesCount: l.messages,
	}
}

// StampNext stamps an admitted batch at the primary's journal append
// (replica-plane.md 5.13 rule 3; client-plane.md 13.2): base_offset = the
// next offset after everything already journaled, pipelined batches
// included, base_timestamp = the prepare timestamp, batch checksum
// recomputed, all in place. It returns the base offset. batch must have
// passed admission (wire.ValidateBatch); anything else is a broken invariant.
func (l *Log) StampNext(batch []byte, prepareTimestamp uint64) uint64 {
	count := messageCountOf(batch)
	assert(count > 0, "stamped batch is a validated batch")
	base := l.journalNext
	wire.Batch(batch).StampAppend(base, prepareTimestamp)
	l.journalNext = base + uint64(count)
	return base
}

// VerifyStamp checks a SendMessages batch a backup is about to journal
// (replica-plane.md 5.13 rule 4): checksums valid, message_count > 0, and
// (base_offset, base_timestamp) = (the journal's next offset, the prepare
// timestamp). On success the batch's offsets count as journaled, as with
// StampNext. The error wraps a *wire.BatchError or ErrStampMismatch.
func (l *Log) VerifyStamp(batch []byte, prepareTimestamp uint64) error {
	if len(batch) < wire.BatchHeaderSize {
		return fmt.Errorf("partition: prepare body of %d bytes: %w", len(batch), ErrBadBatch)
	}
	b := wire.Batch(batch)
	if err := wire.ValidateBatch(batch, b.MessageCount()); err != nil {
		return err
	}
	if b.BaseOffset() != l.journalNext || b.BaseTimestamp() != prepareTimestamp {
		return fmt.Errorf("partition: batch stamped (%d, %d), journal expects (%d, %d): %w",
			b.BaseOffset(), b.BaseTimestamp(), l.journalNext, prepareTimestamp, ErrStampMismatch)
	}
	l.journalNext += uint64(b.MessageCount())
	return nil
}

// RollbackJournal forgets journaled batches from toOffset on, after a failed
// append or a view change truncated the uncommitted pipeline (the VSR core
// drops the failed op and every op after it). Committed offsets are never
// rolled back, and a rollback above the journal's next offset (a batch
// stamped before a purge) changes nothing.
func (l *Log) RollbackJournal(toOffset uint64) {
	l.journalNext = max(l.committedNext, min(l.journalNext, toOffset))
}

// Owner is what holds a cached batch's memory when it is to be reused
// once nobody reads it (ApplySendIndexed): every poll reply that carries
// the batch by reference pins it (wire.Splice.Pin) and the log reports it
// in DrainEvicted once the cache drops it.
type Owner interface {
	Pin() wire.Pin
}

// ApplySend indexes a committed, stamped batch: it becomes visible to polls
// and the commit frontier moves past it (server-behaviour.md 0.6, 5.4.1).
// The log keeps a reference to batch in its tail cache (no copy): the
// caller must not modify the bytes afterwards. The shell also hands the
// batch to storage and reports it with MarkPersisted; until then it is
// never evicted from the cache.
func (l *Log) ApplySend(batch []byte) error { return l.ApplySendIndexed(batch, wire.FrameTable{}, nil) }

// ApplySendIndexed is ApplySend with the batch's frame table from its
// admission (wire.ValidateBatchIndexed; stamping changes no frame), kept
// so polls slice the batch without walking it, in memory or, once
// evicted, from its stored bytes. The zero table: built at the first
// slice while the batch is cached. owner, when not nil, holds the batch's
// memory (Owner).
func (l *Log) ApplySendIndexed(batch []byte, table wire.FrameTable, owner Owner) error {
	info, err := BatchInfoOf(batch)
	if err != nil {
		return err
	}
	if info.BaseOffset != l.committedNext {
		return fmt.Errorf("partition: batch at %d, frontier %d: %w", info.BaseOffset, l.committedNext, ErrNotContiguous)
	}
	l.appendCommitted(info)
	if len(l.cache) == 0 {
		l.cacheFirst = l.index.len() - 1
	}
	if len(l.tables) == 0 {
		l.tablesFirst = l.index.len() - 1
	}
	if l.cfg.Cipher != nil || (table.Len() > 0 && !table.Covers(int(info.Size), info.Count)) {
		table = wire.FrameTable{} // a record is opened, not sliced; or not this batch's
	}
	l.cache, l.tables = append(l.cache, batch), append(l.tables, sliceIndex{table: table})
	l.owners = append(l.owners, owner)
	l.cachedBytes += uint64(info.Size) + uint64(table.Bytes())
	l.evict()
	return nil
}

// sliceIndex is what slices one batch without walking it: its frame
// table and, once it is evicted, its header.
type sliceIndex struct {
	table  wire.FrameTable
	header []byte
}

func (s sliceIndex) bytes() uint64 { return uint64(s.table.Bytes() + len(s.header)) }

// appendCommitted indexes one committed batch and rolls segments (5.6.3):
// the batch joins the active segment, which seals once its size reaches
// segment_size; a new empty active segment then starts at the next offset.
func (l *Log) appendCommitted(info BatchInfo) {
	l.index.push(indexEntry{
		baseOffset: info.BaseOffset, timestamp: info.BaseTimestamp,
		size: info.Size, count: info.Count,
	})
	l.committedNext = info.BaseOffset + uint64(info.Count)
	l.journalNext = max(l.journalNext, l.committedNext)
	l.messages += uint64(info.Count)
	l.sizeBytes += uint64(info.Size)

	seg := &l.segments[len(l.segments)-1]
	assert(!seg.Sealed, "the last segment is active")
	if seg.Messages == 0 {
		seg.StartOffset = info.BaseOffset
	}
	seg.Messages += uint64(info.Count)
	seg.EndOffset = l.committedNext - 1
	seg.SizeBytes += uint64(info.Size)
	seg.LastTimestamp = info.BaseTimestamp
	if seg.SizeBytes >= l.cfg.SegmentSize {
		seg.Sealed = true
		l.segments = append(l.segments, Segment{StartOffset: l.committedNext})
	}
}

// MarkPersisted reports that every committed batch below next is readable
// from the Store, so the cache may evict it.
func (l *Log) MarkPersisted(next uint64) {
	l.persistedNext = max(l.persistedNext, min(next, l.committedNext))
	l.evict()
}

// evict drops the oldest cached batches while the cache is over its bound,
// never one that storage does not hold yet.
func (l *Log) evict() { l.evictTo(l.cfg.CacheBytes) }

// CachedBytes is the size of the committed batches held in memory.
func (l *Log) CachedBytes() uint64 { return l.cachedBytes }

// ShedCache drops the oldest cached batches until at most keep bytes stay
// (a node-wide memory budget asks, actors/membudget.go), never one that
// storage does not hold yet; polls of them read the Store.
func (l *Log) ShedCache(keep uint64) { l.evictTo(keep) }

func (l *Log) evictTo(bound uint64) {
	for l.cachedBytes > bound && len(l.cache) > 0 {
		e := l.index.at(l.cacheFirst)
		if e.baseOffset+uint64(e.count) > l.persistedNext {
			break
		}
		l.cachedBytes -= uint64(e.size)
		l.popCached()
		l.cacheFirst++
	}
	if l.cachedBytes > bound {
		l.dropReadBack() // the last used: the next poll reads it
	}
	// Then the oldest tables of evicted batches: their polls read the
	// batch back, as before it had one.
	for l.cachedBytes > bound && len(l.tables) > 0 && l.tablesFirst < l.coldEnd() {
		l.cachedBytes -= l.tables[0].bytes()
		l.tables[0] = sliceIndex{}
		l.tables = l.tables[1:]
		l.tablesFirst++
	}
}

// coldEnd is the first index entry whose batch is cached (the index's
// length when none is).
func (l *Log) coldEnd() int {
	if len(l.cache) == 0 {
		return l.index.len()
	}
	return l.cacheFirst
}

// dropReadBack forgets the read-back batch.
func (l *Log) dropReadBack() {
	l.cachedBytes -= uint64(len(l.readBack))
	l.readBack = nil
}

// popCached drops the oldest cached batch (the caller accounts its
// bytes); its table stays, with a copy of its header.
func (l *Log) popCached() {
	if si := &l.tables[l.cacheFirst-l.tablesFirst]; si.table.Len() > 0 {
		si.header = append([]byte(nil), l.cache[0][:wire.BatchHeaderSize]...)
		l.cachedBytes += uint64(len(si.header))
	}
	l.cache[0] = nil
	l.cache = l.cache[1:]
	if o := l.owners[0]; o != nil {
		l.evicted = append(l.evicted, o)
	}
	l.owners[0] = nil
	l.owners = l.owners[1:]
}

// DrainEvicted hands release the owners of the batches the cache dropped
// since the last call (ApplySendIndexed), oldest first: the log no longer
// reads their bytes, nor does a poll reply it builds from here on.
func (l *Log) DrainEvicted(release func(Owner)) {
	for i, o := range l.evicted {
		l.evicted[i] = nil
		release(o)
	}
	l.evicted = l.evicted[:0]
}

// Purge wipes the partition (server-behaviour.md 5.8): every message, every
// consumer offset and the DeleteSegments watermark; offsets restart at 0
// with one empty active segment. Batches still in the journal keep their
// old stamps and fail ApplySend with ErrNotContiguous when they commit.
func (l *Log) Purge() {
	evicted := l.evicted
	for i := range l.cache {
		l.cache[i] = nil
		if o := l.owners[i]; o != nil {
			evicted = append(evicted, o)
		}
	}
	*l = Log{
		cfg: l.cfg, store: l.store, offsets: make(map[offsetSlot]uint64),
		segments: []Segment{{StartOffset: 0}}, generation: l.generation + 1,
		evicted: evicted,
	}
}

// BatchInfo is what the index keeps of one committed batch.
type BatchInfo struct {
	BaseOffset    uint64
	BaseTimestamp uint64
	Count         uint32 // message_count
	Size          uint32 // batch_length
}

// BatchInfoOf reads the index fields of a stamped batch: it must be whole
// (batch_length = len(batch)) and hold at least one message. Frames and
// checksums are not re-verified (they were at admission).
func BatchInfoOf(batch []byte) (BatchInfo, error) {
	count := messageCountOf(batch)
	if count == 0 {
		return BatchInfo{}, fmt.Errorf("partition: %d bytes: %w", len(batch), ErrBadBatch)
	}
	b := wire.Batch(batch)
	return BatchInfo{BaseOffset: b.BaseOffset(), BaseTimestamp: b.BaseTimestamp(), Count: count, Size: uint32(len(batch))}, nil
}

// messageCountOf returns message_count of a whole batch whose batch_length
// equals len(batch) and fits a u32 (every frame does, its size is a u32), or
// 0 for anything else.
func messageCountOf(batch []byte) uint32 {
	if len(batch) < wire.BatchHeaderSize || uint64(len(batch)) > 1<<32-1 {
		return 0
	}
	b := wire.Batch(batch)
	if b.Length() != uint64(len(batch)) {
		return 0
	}
	return b.MessageCount()
}

// assert panics with the invariant's name; the partition actor's supervisor
// catches it (STYLE.md, TigerBeetle habit).
func assert(ok bool, invariant string) {
	if !ok {
		panic("partition: invariant violated: " + invariant)
	}
}
