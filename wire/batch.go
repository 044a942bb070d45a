package wire

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/zeebo/xxh3"
)

// Message batches (docs/messages.md; client-plane.md 12.1, 12.2, 13).
//
// A batch is the only message encoding: the SendMessages body, the stored
// record and the poll-reply record are the same bytes,
//
//	[batch header: 256 bytes][frame][frame]...
//	frame = [frame header: 48 bytes][payload][user_headers]
//
// Batch is a view over those bytes, never a decoded copy (DESIGN.md,
// performance rules): ValidateBatch checks a batch once on admission, the
// Stamp methods overwrite header fields in place, and AppendRecord serves
// whole or sliced records from the stored bytes. Nothing here allocates per
// message.

const (
	// BatchHeaderSize is the size of the batch header.
	BatchHeaderSize = 256
	// FrameHeaderSize is the size of a message frame header.
	FrameHeaderSize = 48

	// Batch header field offsets (docs/messages.md "Batch header").
	BatchPartitionIDOffset     = 0  // u64, server-stamped at admission
	BatchBaseOffsetOffset      = 8  // u64, server-stamped at journal append
	BatchBaseTimestampOffset   = 16 // u64 µs, server-stamped at journal append
	BatchOriginTimestampOffset = 24 // u64 µs, earliest producer timestamp
	BatchLengthOffset          = 32 // u64, 256 + blob length
	BatchChecksumOffset        = 40 // u64, 12.2
	BatchMessageCountOffset    = 48 // u32
	BatchReservedOffset        = 52 // 204 bytes, zero

	// Message frame header field offsets (docs/messages.md "Message frame header").
	FrameChecksumOffset          = 0  // u64, 12.1
	FrameIDOffset                = 8  // u128
	FrameOffsetDeltaOffset       = 24 // u32
	FrameTimestampDeltaOffset    = 28 // u32 µs against origin_timestamp
	FrameUserHeadersLengthOffset = 32 // u32
	FramePayloadLengthOffset     = 36 // u32
	FrameReservedOffset          = 40 // u64, zero

	// MaxMessagePayloadSize is the SDK-side payload bound (client-plane.md 11.4).
	MaxMessagePayloadSize = 64_000_000

	// batchChecksumFieldsSize is the header part of the batch checksum input:
	// five u64 fields and the u32 message_count (12.2).
	batchChecksumFieldsSize = 44
)

// Batch is a whole batch (header and frames) viewed in place. The header
// accessors require len(b) >= BatchHeaderSize (ValidateBatch, or the record
// walk of a poll reply, checks it).
type Batch []byte

func (b Batch) PartitionID() uint64 { return binary.LittleEndian.Uint64(b[BatchPartitionIDOffset:]) }
func (b Batch) BaseOffset() uint64  { return binary.LittleEndian.Uint64(b[BatchBaseOffsetOffset:]) }
func (b Batch) BaseTimestamp() uint64 {
	return binary.LittleEndian.Uint64(b[BatchBaseTimestampOffset:])
}
func (b Batch) OriginTimestamp() uint64 {
	return binary.LittleEndian.Uint64(b[BatchOriginTimestampOffset:])
}
func (b Batch) Length() uint64       { return binary.LittleEndian.Uint64(b[BatchLengthOffset:]) }
func (b Batch) Checksum() uint64     { return binary.LittleEndian.Uint64(b[BatchChecksumOffset:]) }
func (b Batch) MessageCount() uint32 { return binary.LittleEndian.Uint32(b[BatchMessageCountOffset:]) }

// Blob is the frames after the header.
func (b Batch) Blob() []byte { return b[BatchHeaderSize:] }

// Frames iterates the frames of the blob without copying. It walks by the
// frame lengths and stops at the first frame that does not fit; it does not
// consult message_count (a validated batch holds exactly that many).
func (b Batch) Frames() FrameIter {
	if len(b) < BatchHeaderSize {
		return FrameIter{}
	}
	return FrameIter{rest: b[BatchHeaderSize:]}
}

// BatchHeader is the batch header's fields, decoded.
type BatchHeader struct {
	PartitionID     uint64
	BaseOffset      uint64
	BaseTimestamp   uint64
	OriginTimestamp uint64
	Length          uint64
	Checksum        uint64
	MessageCount    uint32
}

// Header decodes the header fields.
func (b Batch) Header() BatchHeader {
	return BatchHeader{
		PartitionID:     b.PartitionID(),
		BaseOffset:      b.BaseOffset(),
		BaseTimestamp:   b.BaseTimestamp(),
		OriginTimestamp: b.OriginTimestamp(),
		Length:          b.Length(),
		Checksum:        b.Checksum(),
		MessageCount:    b.MessageCount(),
	}
}

// StampPartition overwrites partition_id and recomputes the batch checksum
// from the stored frame checksums (13.1 step 7; frames are not re-hashed).
func (b Batch) StampPartition(partitionID uint64) {
	binary.LittleEndian.PutUint64(b[BatchPartitionIDOffset:], partitionID)
	binary.LittleEndian.PutUint64(b[BatchChecksumOffset:], ComputeBatchChecksum(b))
}

// StampAppend overwrites base_offset and base_timestamp (µs) when the batch
// is appended to the partition journal and recomputes the batch checksum
// (13.2).
func (b Batch) StampAppend(baseOffset, baseTimestamp uint64) {
	binary.LittleEndian.PutUint64(b[BatchBaseOffsetOffset:], baseOffset)
	binary.LittleEndian.PutUint64(b[BatchBaseTimestampOffset:], baseTimestamp)
	binary.LittleEndian.PutUint64(b[BatchChecksumOffset:], ComputeBatchChecksum(b))
}

// MessageFrame is one message frame (header, payload, user headers) viewed
// in place. Frames yielded by FrameIter are exactly one frame long.
type MessageFrame []byte

func (f MessageFrame) Checksum() uint64 { return binary.LittleEndian.Uint64(f[FrameChecksumOffset:]) }
func (f MessageFrame) ID() U128         { return getU128(f[FrameIDOffset:]) }
func (f MessageFrame) OffsetDelta() uint32 {
	return binary.LittleEndian.Uint32(f[FrameOffsetDeltaOffset:])
}
func (f MessageFrame) TimestampDelta() uint32 {
	return binary.LittleEndian.Uint32(f[FrameTimestampDeltaOffset:])
}
func (f MessageFrame) UserHeadersLength() uint32 {
	return binary.LittleEndian.Uint32(f[FrameUserHeadersLengthOffset:])
}
func (f MessageFrame) PayloadLength() uint32 {
	return binary.LittleEndian.Uint32(f[FramePayloadLengthOffset:])
}

// Payload is the payload bytes (they come first after the frame header).
func (f MessageFrame) Payload() []byte {
	end := FrameHeaderSize + int(f.PayloadLength())
	return f[FrameHeaderSize:end:end]
}

// UserHeaders is the raw user-headers block that follows the payload.
func (f MessageFrame) UserHeaders() []byte {
	from := FrameHeaderSize + int(f.PayloadLength())
	end := from + int(f.UserHeadersLength())
	return f[from:end:end]
}

// msgFrameSize is 48 + payload_length + user_headers_length of the frame
// header h (len(h) >= 48), in 64 bits so hostile lengths cannot wrap.
func msgFrameSize(h []byte) uint64 {
	return FrameHeaderSize + uint64(binary.LittleEndian.Uint32(h[FramePayloadLengthOffset:])) +
		uint64(binary.LittleEndian.Uint32(h[FrameUserHeadersLengthOffset:]))
}

// FrameIter walks frames by their lengths. It never reads past its input.
type FrameIter struct{ rest []byte }

// Next returns the next whole frame, or false at the end of the input or at
// a frame that does not fit (Rest is then non-empty).
func (it *FrameIter) Next() (MessageFrame, bool) {
	r := it.rest
	if len(r) < FrameHeaderSize {
		return nil, false
	}
	n := msgFrameSize(r)
	if n > uint64(len(r)) {
		return nil, false
	}
	it.rest = r[n:]
	return MessageFrame(r[:n:n]), true
}

// Rest is the input not yet walked; empty when the frames tiled it exactly.
func (it *FrameIter) Rest() []byte { return it.rest }

// FrameChecksum computes a frame's checksum: XXH3-64 over the frame from
// the id field to the end of the user headers (client-plane.md 12.1). frame
// must hold the whole frame.
func FrameChecksum(frame []byte) uint64 {
	return xxh3.Hash(frame[FrameIDOffset:msgFrameSize(frame)])
}

// batchHasher computes a batch checksum (12.2) without allocating: the
// 44 header bytes and the 8-byte frame checksums gather in a stack buffer,
// hashed one-shot when they fit and streamed through a stack xxh3.Hasher
// when they do not (a streaming XXH3 equals the one-shot hash, 12).
type batchHasher struct {
	n        int
	streamed bool
	buf      [1024]byte
	h        xxh3.Hasher
}

// begin feeds the header fields of hdr (>= 52 bytes) in checksum order.
func (c *batchHasher) begin(hdr []byte) {
	copy(c.buf[:BatchChecksumOffset], hdr[:BatchChecksumOffset])
	copy(c.buf[BatchChecksumOffset:batchChecksumFieldsSize], hdr[BatchMessageCountOffset:BatchReservedOffset])
	c.n = batchChecksumFieldsSize
}

// add feeds one frame's stored checksum (its first 8 bytes).
func (c *batchHasher) add(frame []byte) { c.addSum(binary.LittleEndian.Uint64(frame)) }

// addSum feeds one frame's stored checksum.
func (c *batchHasher) addSum(sum uint64) {
	if c.n+8 > len(c.buf) {
		c.h.Write(c.buf[:c.n])
		c.streamed = true
		c.n = 0
	}
	binary.LittleEndian.PutUint64(c.buf[c.n:], sum)
	c.n += 8
}

func (c *batchHasher) sum() uint64 {
	if !c.streamed {
		return xxh3.Hash(c.buf[:c.n])
	}
	c.h.Write(c.buf[:c.n])
	return c.h.Sum64()
}

// ComputeBatchChecksum computes the batch checksum (12.2) of the header as
// it stands and the stored checksums of the first message_count frames. It
// does not re-hash frames and does not allocate. A batch shorter than its
// header yields 0; a batch whose frames do not tile hashes the frames that
// fit.
func ComputeBatchChecksum(b []byte) uint64 {
	if len(b) < BatchHeaderSize {
		return 0
	}
	var c batchHasher
	c.begin(b)
	it := Batch(b).Frames()
	for i := Batch(b).MessageCount(); i > 0; i-- {
		f, ok := it.Next()
		if !ok {
			break
		}
		c.add(f)
	}
	return c.sum()
}

// BatchError is a batch refused at admission, or one that cannot be
// sealed or opened (batch_crypt.go). It unwraps to the IggyError code a
// compatible server answers with (client-plane.md 8.4.2):
// InvalidBatchChecksum (4039), InvalidMessageChecksum (4027) or
// InvalidCommand (3) for layout problems; CannotEncryptData (71) and
// CannotDecryptData (72) for encryption.
type BatchError struct {
	Code   ErrorCode
	Reason string
}

func (e *BatchError) Error() string { return "wire: batch: " + e.Reason + ": " + e.Code.Error() }
func (e *BatchError) Unwrap() error { return e.Code }

func batchErr(code ErrorCode, format string, args ...any) error {
	return &BatchError{Code: code, Reason: fmt.Sprintf(format, args...)}
}

// ValidateBatch applies admission steps 3-6 of client-plane.md 13.1 to b,
// the rest of a SendMessages body after the metadata section, with
// messagesCount from that section. Tiling, the frames' reserved bytes and
// the frame checksums are checked in one pass, which also gathers the frame
// checksums for the batch checksum (computed over the header as received).
// Failures are reported in the order of 13.1: layout, frame checksum, batch
// checksum, message count.
func ValidateBatch(b []byte, messagesCount uint32) error {
	return validateBatch(b, messagesCount)
}

// ValidateBatchIndexed is ValidateBatch that also returns b's frame table,
// gathered in the same pass (BuildFrameTable's, without a second walk):
// built and empty when the offset deltas are not the frame indexes, the
// zero table when b is refused.
func ValidateBatchIndexed(b []byte, messagesCount uint32) (FrameTable, error) {
	v := batchCheck{total: len(b), messagesCount: messagesCount, index: true}
	if err := v.finish(b); err != nil {
		return FrameTable{}, err
	}
	return v.table, nil
}

// ValidateBatch, as ValidateBatchIndexed without the table.
func validateBatch(b []byte, messagesCount uint32) error {
	v := batchCheck{total: len(b), messagesCount: messagesCount}
	return v.finish(b)
}

// batchCheck is the walk of ValidateBatch made resumable: advance takes
// the batch's first bytes as they arrive and checks every frame already
// whole, finish the whole batch, so a batch read from a socket is checked
// while the rest of it arrives (SendCheck), with the verdict of one walk
// over the whole batch. A layout error ends the walk where it is found,
// as it ends the one-pass walk: no later byte can change it.
type batchCheck struct {
	total         int // the batch's length, known before its bytes
	messagesCount uint32
	// index: gather table, each frame's end and checksum while the offset
	// deltas are the frame indexes (emptied at the first that is not).
	index bool
	table FrameTable

	begun    bool
	err      error // the layout error that ended the walk
	at       int   // the next frame's offset in the batch
	n, count uint32
	badFrame int
	hasher   batchHasher
}

// begin checks the header (b holds at least its 256 bytes).
func (v *batchCheck) begin(b []byte) {
	v.begun, v.badFrame, v.at = true, -1, BatchHeaderSize
	batch := Batch(b)
	if n := batch.Length(); n < BatchHeaderSize || n != uint64(v.total) {
		v.err = batchErr(ErrInvalidCommand, "batch_length %d, body holds %d bytes", n, v.total)
		return
	}
	for i := BatchReservedOffset; i < BatchHeaderSize; i++ {
		if b[i] != 0 {
			v.err = batchErr(ErrInvalidCommand, "reserved header byte %d is nonzero", i)
			return
		}
	}
	v.count = batch.MessageCount()
	v.hasher.begin(b)
	if v.index {
		n := min(v.count, uint32(v.total/FrameHeaderSize))
		v.table = FrameTable{ends: make([]uint32, 0, n), sums: make([]uint64, 0, n), built: true}
	}
}

// advance checks the frames whole in b, the batch's first len(b) bytes.
func (v *batchCheck) advance(b []byte) {
	if v.err != nil {
		return
	}
	if !v.begun {
		if v.total < BatchHeaderSize {
			v.err = batchErr(ErrInvalidCommand, "%d bytes, shorter than the 256-byte header", v.total)
			return
		}
		if len(b) < BatchHeaderSize {
			return
		}
		if v.begin(b); v.err != nil {
			return
		}
	}
	for v.at < v.total {
		if v.n == v.count {
			v.err = batchErr(ErrInvalidCommand, "frames continue past message_count %d", v.count)
			return
		}
		left := v.total - v.at
		if left < FrameHeaderSize {
			v.err = batchErr(ErrInvalidCommand, "frame %d: header truncated", v.n)
			return
		}
		if len(b)-v.at < FrameHeaderSize {
			return
		}
		rest := b[v.at:]
		size := msgFrameSize(rest)
		if size > uint64(left) {
			v.err = batchErr(ErrInvalidCommand, "frame %d: %d bytes run past the batch", v.n, size)
			return
		}
		if binary.LittleEndian.Uint64(rest[FrameReservedOffset:]) != 0 {
			v.err = batchErr(ErrInvalidCommand, "frame %d: reserved bytes are nonzero", v.n)
			return
		}
		if uint64(len(rest)) < size {
			return
		}
		// After a mismatch the remaining frames are only tiled: a layout
		// error later in the blob still wins (13.1 step 4 before step 5).
		if v.badFrame < 0 && xxh3.Hash(rest[FrameIDOffset:size]) != binary.LittleEndian.Uint64(rest) {
			v.badFrame = int(v.n)
		}
		v.hasher.add(rest)
		if t := &v.table; t.ends != nil {
			if MessageFrame(rest).OffsetDelta() == v.n {
				t.ends = append(t.ends, uint32(v.at+int(size)))
				t.sums = append(t.sums, binary.LittleEndian.Uint64(rest))
			} else {
				t.ends, t.sums = nil, nil // slices by walking (BuildFrameTable refuses it too)
			}
		}
		v.at += int(size)
		v.n++
	}
}

// finish checks what is left of b, the whole batch, and gives the
// verdict: layout, frame checksum, batch checksum, message count (13.1).
func (v *batchCheck) finish(b []byte) error {
	if v.advance(b); v.err != nil {
		return v.err
	}
	if v.n != v.count {
		return batchErr(ErrInvalidCommand, "%d frames, message_count %d", v.n, v.count)
	}
	if v.badFrame >= 0 {
		return batchErr(ErrInvalidMessageChecksum, "frame %d checksum mismatch", v.badFrame)
	}
	if sum := v.hasher.sum(); sum != Batch(b).Checksum() {
		return batchErr(ErrInvalidBatchChecksum, "batch checksum %#x, computed %#x", Batch(b).Checksum(), sum)
	}
	if v.count == 0 {
		return batchErr(ErrInvalidCommand, "message_count 0")
	}
	if v.count != v.messagesCount {
		return batchErr(ErrInvalidCommand, "message_count %d, metadata messages_count %d", v.count, v.messagesCount)
	}
	return nil
}

// AppendRecord appends to dst the poll record (client-plane.md 13.4) that
// serves at most maxCount messages of the stored batch b, starting with the
// first frame whose offset (base_offset + offset_delta) is >= start. It
// returns the extended dst and the number of messages served (0: nothing
// appended).
//
// A record that takes every frame is b as stored. Otherwise it is a slice: a
// copy of the header with batch_length and message_count rewritten and the
// checksum recomputed over the new header and the selected frames
// (base_offset is unchanged; frames keep their offset_delta), followed by the
// contiguous frames (12.2, last row). dst grows at most once; nothing else
// is allocated.
func AppendRecord(dst []byte, b Batch, start uint64, maxCount uint32) ([]byte, uint32) {
	from, to, taken := RecordFrames(b, start, maxCount)
	if taken == 0 {
		return dst, 0
	}
	if from == BatchHeaderSize && to == len(b) {
		return append(dst, b...), taken
	}
	dst = slices.Grow(dst, BatchHeaderSize+to-from)
	dst = appendSliceHeader(dst, b, from, to, taken)
	return append(dst, b[from:to]...), taken
}

// AppendRecordHeader is AppendRecord without the frames: it appends the
// record's header (for a slice, the rewritten one) and returns the frames
// that follow it in the record, b[from:to] itself, so a poll reply can
// send them from where they lie (a Splice) instead of copying them.
func AppendRecordHeader(dst []byte, b Batch, start uint64, maxCount uint32) (out, frames []byte, taken uint32) {
	from, to, taken := RecordFrames(b, start, maxCount)
	if taken == 0 {
		return dst, nil, 0
	}
	if from == BatchHeaderSize && to == len(b) {
		return append(dst, b[:BatchHeaderSize]...), b[BatchHeaderSize:], taken
	}
	return appendSliceHeader(dst, b, from, to, taken), b[from:to], taken
}

// appendSliceHeader appends the header of the record of b's frames
// b[from:to] (taken of them): batch_length and message_count rewritten,
// the checksum over the new header and those frames' stored checksums.
func appendSliceHeader(dst []byte, b Batch, from, to int, taken uint32) []byte {
	var c batchHasher
	at := len(dst)
	dst = beginSliceHeader(dst, b, BatchHeaderSize+to-from, taken, &c)
	it := FrameIter{rest: b[from:to]}
	for i := taken; i > 0; i-- {
		f, ok := it.Next()
		if !ok {
			break
		}
		c.add(f)
	}
	binary.LittleEndian.PutUint64(dst[at+BatchChecksumOffset:], c.sum())
	return dst
}

// beginSliceHeader appends b's header with batch_length recLen and
// message_count taken and begins c over it; the caller feeds the slice's
// frame checksums and writes c.sum() at BatchChecksumOffset.
func beginSliceHeader(dst []byte, b Batch, recLen int, taken uint32, c *batchHasher) []byte {
	at := len(dst)
	dst = append(dst, b[:BatchHeaderSize]...)
	rec := dst[at:]
	binary.LittleEndian.PutUint64(rec[BatchLengthOffset:], uint64(recLen))
	binary.LittleEndian.PutUint32(rec[BatchMessageCountOffset:], taken)
	c.begin(rec)
	return dst
}

// RecordFrames selects the frames a poll record of b serves (AppendRecord):
// the contiguous run b[from:to] of taken frames, at most maxCount, starting
// with the first frame whose offset is >= start. taken is 0 when nothing is
// served.
func RecordFrames(b Batch, start uint64, maxCount uint32) (from, to int, taken uint32) {
	if maxCount == 0 || len(b) < BatchHeaderSize {
		return 0, 0, 0
	}
	base := b.BaseOffset()
	it := b.Frames()
	from, to = BatchHeaderSize, BatchHeaderSize
	for taken < maxCount {
		f, ok := it.Next()
		if !ok {
			break
		}
		if taken == 0 && base+uint64(f.OffsetDelta()) < start {
			from += len(f)
			to = from
			continue
		}
		taken++
		to += len(f)
	}
	return from, to, taken
}
