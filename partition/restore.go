package partition

import "fmt"

// Restore rebuilds the log at boot from storage (a fresh log is expected):
// batches are the retained stamped batches in offset order, as a storage
// scan yields them (BatchInfoOf gives each one's fields); next is the
// lowest the commit frontier may be, which keeps the numbering of a
// partition whose every retained batch was deleted (the oldest-retained
// watermark the shell keeps, 0 if none); offsets are the stored consumer
// offsets.
//
// Segments are recomputed with the live rule (appendCommitted), so the
// same batches give the same segments: segments only ever lose whole
// sealed segments from the front, so the boundaries counted from the first
// retained batch are the boundaries the live path drew. Every restored
// batch is taken as persisted; the cache starts empty. A stored offset past
// the newest message is clamped to it, and dropped on an empty partition.
func (l *Log) Restore(batches []BatchInfo, next uint64, offsets []StoredOffset) error {
	assert(l.index.len() == 0 && l.committedNext == 0 && len(l.offsets) == 0, "restore on a fresh log")
	start := next
	if len(batches) > 0 {
		start = batches[0].BaseOffset
	}
	l.committedNext, l.journalNext = start, start
	l.segments = []Segment{{StartOffset: start}}
	for i, b := range batches {
		if b.Count == 0 || b.Size == 0 {
			return fmt.Errorf("partition: restore: batch %d at %d: %w", i, b.BaseOffset, ErrBadBatch)
		}
		if b.BaseOffset != l.committedNext {
			return fmt.Errorf("partition: restore: batch at %d after frontier %d: %w", b.BaseOffset, l.committedNext, ErrNotContiguous)
		}
		l.appendCommitted(b)
	}
	if next > l.committedNext {
		if l.index.len() > 0 {
			return fmt.Errorf("partition: restore: batches end at %d below the watermark %d: %w", l.committedNext, next, ErrNotContiguous)
		}
		l.committedNext, l.journalNext = next, next
		l.segments[0].StartOffset = next
	}
	l.persistedNext = l.committedNext
	for _, o := range offsets {
		if l.HasMessages() {
			l.offsets[offsetSlot{o.Kind, o.Key}] = min(o.Offset, l.CurrentOffset())
		}
	}
	return nil
}
