package partition

// indexEntry is one committed batch, 24 bytes. Batches are contiguous:
// entry i+1 starts at entry i's baseOffset + count.
type indexEntry struct {
	baseOffset uint64
	timestamp  uint64 // base_timestamp, the server time of every message
	size       uint32 // batch_length
	count      uint32 // message_count
}

func (e indexEntry) next() uint64 { return e.baseOffset + uint64(e.count) }

// batchIndex is the retained committed batches in offset order. Deleting
// segments drops a prefix; re-slicing lets the next growth copy only what
// is retained.
type batchIndex struct{ entries []indexEntry }

func (x *batchIndex) len() int            { return len(x.entries) }
func (x *batchIndex) at(i int) indexEntry { return x.entries[i] }
func (x *batchIndex) push(e indexEntry)   { x.entries = append(x.entries, e) }
func (x *batchIndex) dropFront(n int)     { x.entries = x.entries[n:] }

// findOffset returns the index of the batch holding offset, or len when
// offset is at or past the frontier; offsets below the oldest retained give
// 0. Binary search: the first batch whose next offset is above offset.
func (x *batchIndex) findOffset(offset uint64) int {
	lo, hi := 0, len(x.entries)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if x.entries[mid].next() <= offset {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// findTimestamp returns the index of the first batch whose base_timestamp
// is >= ts, or len when there is none. Prepare timestamps strictly increase
// per group (5.4.2), so the index is sorted by timestamp too.
func (x *batchIndex) findTimestamp(ts uint64) int {
	lo, hi := 0, len(x.entries)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if x.entries[mid].timestamp < ts {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}
