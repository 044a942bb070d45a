package wire

import "encoding/binary"

// FrameTable is where each frame of a batch ends and its stored checksum,
// so a poll can slice the batch without walking its frames (AppendRecord
// reads a word of every frame up to the slice's end, a cache miss per
// message of a batch no longer in the CPU's cache). A partition builds it
// the first time a poll slices the batch (one walk, where a consumer
// whose polls do not line up with the batches slices each batch twice,
// each time walking twice), and only a batch whose offset deltas are its
// frame indexes, as producers write them (13.2), gets one; others slice
// by walking.
type FrameTable struct {
	ends  []uint32 // ends[i]: the byte after frame i, from the batch's start
	sums  []uint64 // sums[i]: frame i's stored checksum
	built bool     // BuildFrameTable ran (ends empty: the batch walks)
}

// BuildFrameTable builds b's table; ok false when b's frames do not tile
// it as message_count frames with offset_delta i (the table returned then
// is built and empty: the batch slices by walking).
func BuildFrameTable(b Batch) (FrameTable, bool) {
	n := b.MessageCount()
	refused := FrameTable{built: true}
	if len(b) < BatchHeaderSize || n == 0 {
		return refused, false
	}
	t := FrameTable{ends: make([]uint32, 0, n), sums: make([]uint64, 0, n), built: true}
	it, pos := b.Frames(), BatchHeaderSize
	for i := uint32(0); i < n; i++ {
		f, ok := it.Next()
		if !ok || f.OffsetDelta() != i {
			return refused, false
		}
		pos += len(f)
		t.ends = append(t.ends, uint32(pos))
		t.sums = append(t.sums, binary.LittleEndian.Uint64(f))
	}
	if pos != len(b) {
		return refused, false
	}
	return t, true
}

// Len is the number of frames t indexes (0: none, or a batch that walks).
func (t FrameTable) Len() int { return len(t.ends) }

// Covers reports whether t indexes count frames ending at size: a batch of
// that shape, as its index entry describes it.
func (t FrameTable) Covers(size int, count uint32) bool {
	return count > 0 && len(t.ends) == int(count) && int(t.ends[count-1]) == size
}

// Built reports whether BuildFrameTable made t (the zero table: not yet).
func (t FrameTable) Built() bool { return t.built }

// Bytes is the table's memory, for cache accounting.
func (t FrameTable) Bytes() int { return 12 * len(t.ends) }

// AppendRecordHeaderIndexed is AppendRecordHeader for a batch with its
// table: the same header and frames, found by index instead of by walking
// (an empty table, a batch BuildFrameTable refused, walks).
func AppendRecordHeaderIndexed(dst []byte, b Batch, t FrameTable, start uint64, maxCount uint32) (out, frames []byte, taken uint32) {
	if len(t.ends) == 0 {
		return AppendRecordHeader(dst, b, start, maxCount)
	}
	out, from, to, taken := AppendSliceHeader(dst, b, t, start, maxCount)
	if taken == 0 {
		return dst, nil, 0
	}
	return out, b[from:to], taken
}

// AppendSliceHeader appends the header of the poll record that serves at
// most maxCount messages of a batch from start, found by its table t (not
// empty), and returns where the record's frames are in the batch,
// [from, to), and how many: only hdr, the batch's header, is read, so a
// batch no longer in memory is served from its stored bytes. The header
// is hdr's own when the record is the whole batch.
func AppendSliceHeader(dst []byte, hdr Batch, t FrameTable, start uint64, maxCount uint32) (out []byte, from, to int, taken uint32) {
	count := uint32(len(t.ends))
	if len(hdr) < BatchHeaderSize || count == 0 {
		return dst, 0, 0, 0
	}
	first := uint32(0)
	if base := hdr.BaseOffset(); start > base {
		if start-base >= uint64(count) {
			return dst, 0, 0, 0
		}
		first = uint32(start - base)
	}
	taken = min(maxCount, count-first)
	if taken == 0 {
		return dst, 0, 0, 0
	}
	from, to = BatchHeaderSize, int(t.ends[first+taken-1])
	if first > 0 {
		from = int(t.ends[first-1])
	}
	if from == BatchHeaderSize && uint64(to) == hdr.Length() {
		return append(dst, hdr[:BatchHeaderSize]...), from, to, taken
	}
	var c batchHasher
	at := len(dst)
	dst = beginSliceHeader(dst, hdr, BatchHeaderSize+to-from, taken, &c)
	for _, s := range t.sums[first : first+taken] {
		c.addSum(s)
	}
	binary.LittleEndian.PutUint64(dst[at+BatchChecksumOffset:], c.sum())
	return dst, from, to, taken
}
