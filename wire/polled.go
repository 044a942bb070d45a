package wire

import (
	"encoding/binary"
	"fmt"
)

// PolledMessages is the PollMessages reply body (client-plane.md 7.17):
//
//	[partition_id u32][current_offset u64][messages_count u32][records...]
//
// Records are batch records back to back (13.4). Decode keeps Records as a
// view of the body (no per-message copy), so the value is valid only while
// the body's buffer is.
type PolledMessages struct {
	PartitionID   uint32
	CurrentOffset uint64
	MessagesCount uint32
	Records       []byte
}

const (
	// PolledMessagesHeaderSize is the size of the reply prefix before the records.
	PolledMessagesHeaderSize = 16
	// PartitionResync is the partition id of an empty group poll that tells
	// the consumer to re-sync its assignment (8.4.1).
	PartitionResync uint32 = 0xFFFFFFFF
	// polledCountOffset is where messages_count sits in the prefix.
	polledCountOffset = 12
)

// AppendPolledHeader appends the 16-byte prefix. A server appends the
// records after it (AppendRecord) and, if it learns the count only then,
// patches it with SetPolledMessagesCount.
func AppendPolledHeader(dst []byte, partitionID uint32, currentOffset uint64, messagesCount uint32) []byte {
	dst = AppendU32(dst, partitionID)
	dst = AppendU64(dst, currentOffset)
	return AppendU32(dst, messagesCount)
}

// SetPolledMessagesCount overwrites messages_count in a body that starts
// with the 16-byte prefix.
func SetPolledMessagesCount(body []byte, messagesCount uint32) {
	binary.LittleEndian.PutUint32(body[polledCountOffset:], messagesCount)
}

// AppendTo appends the prefix and the records.
func (p PolledMessages) AppendTo(b []byte) []byte {
	b = AppendPolledHeader(b, p.PartitionID, p.CurrentOffset, p.MessagesCount)
	return append(b, p.Records...)
}

// Decode reads a reply body with the checks of 7.17: every record has
// batch_length >= 256 and fits; its frames tile it exactly, with reserved
// bytes 40..48 zero and as many frames as its message_count; and the prefix
// messages_count equals the frames served. A 0-byte body is an empty poll of
// partition 0 (as the Go SDK reads it); 1..=15 bytes are an error. Checksums
// are not verified (13.4: clients do not).
func (p *PolledMessages) Decode(body []byte) error {
	*p = PolledMessages{}
	if len(body) == 0 {
		return nil
	}
	if len(body) < PolledMessagesHeaderSize {
		return decodeErr("polled messages", fmt.Sprintf("%d bytes, shorter than the 16-byte prefix", len(body)))
	}
	prefix := PolledMessages{
		PartitionID:   binary.LittleEndian.Uint32(body),
		CurrentOffset: binary.LittleEndian.Uint64(body[4:]),
		MessagesCount: binary.LittleEndian.Uint32(body[polledCountOffset:]),
		Records:       body[PolledMessagesHeaderSize:],
	}
	var served uint64
	records := RecordIter{rest: prefix.Records}
	for {
		rec, ok := records.Next()
		if !ok {
			break
		}
		n, err := checkRecordFrames(rec)
		if err != nil {
			return err
		}
		served += uint64(n)
	}
	if len(records.rest) != 0 {
		return decodeErr("polled messages", fmt.Sprintf("record at byte %d does not fit: batch_length below 256 or past the body",
			len(body)-len(records.rest)))
	}
	if served != uint64(prefix.MessagesCount) {
		return decodeErr("polled messages", fmt.Sprintf("messages_count %d, records hold %d messages", prefix.MessagesCount, served))
	}
	*p = prefix
	return nil
}

// checkRecordFrames checks that a record's frames tile it exactly with zero
// reserved bytes and match its message_count, and returns that count.
func checkRecordFrames(rec Batch) (uint32, error) {
	var n uint32
	it := rec.Frames()
	for {
		f, ok := it.Next()
		if !ok {
			break
		}
		if binary.LittleEndian.Uint64(f[FrameReservedOffset:]) != 0 {
			return 0, decodeErr("polled messages", fmt.Sprintf("record frame %d: reserved bytes are nonzero", n))
		}
		n++
	}
	if len(it.Rest()) != 0 {
		return 0, decodeErr("polled messages", fmt.Sprintf("record frame %d does not fit the record", n))
	}
	if n != rec.MessageCount() {
		return 0, decodeErr("polled messages", fmt.Sprintf("record holds %d frames, message_count %d", n, rec.MessageCount()))
	}
	return n, nil
}

// Resync reports whether the reply is the consumer-group re-sync sentinel,
// recognised only with zero messages (7.17).
func (p *PolledMessages) Resync() bool {
	return p.PartitionID == PartitionResync && p.MessagesCount == 0
}

// Messages iterates the messages of the records without copying.
func (p *PolledMessages) Messages() PolledIter {
	return PolledIter{records: RecordIter{rest: p.Records}}
}

// RecordIter walks batch records back to back by batch_length (13.4).
type RecordIter struct{ rest []byte }

// RecordsOf returns an iterator over back-to-back batch records.
func RecordsOf(b []byte) RecordIter { return RecordIter{rest: b} }

// Next returns the next record, or false at the end of the input or at a
// record that is shorter than 256 bytes or does not fit (Rest is then
// non-empty).
func (it *RecordIter) Next() (Batch, bool) {
	r := it.rest
	if len(r) < BatchHeaderSize {
		return nil, false
	}
	n := Batch(r).Length()
	if n < BatchHeaderSize || n > uint64(len(r)) {
		return nil, false
	}
	it.rest = r[n:]
	return Batch(r[:n:n]), true
}

// Rest is the input not yet walked.
func (it *RecordIter) Rest() []byte { return it.rest }

// PolledMessage is one served message (13.3). Payload and UserHeaders alias
// the reply body.
type PolledMessage struct {
	Offset          uint64 // base_offset + offset_delta
	Timestamp       uint64 // server time: the record's base_timestamp
	OriginTimestamp uint64 // origin_timestamp + timestamp_delta
	Checksum        uint64 // the frame checksum as stored
	ID              U128
	Payload         []byte
	UserHeaders     []byte // raw block; DecodeUserHeaders parses it
}

// PolledIter yields the messages of back-to-back records.
type PolledIter struct {
	records RecordIter
	record  Batch
	frames  FrameIter
}

// Next returns the next message, or false after the last one (or at the
// first record or frame that does not fit, which Decode rules out).
func (it *PolledIter) Next() (PolledMessage, bool) {
	for {
		if f, ok := it.frames.Next(); ok {
			return PolledMessage{
				Offset:          it.record.BaseOffset() + uint64(f.OffsetDelta()),
				Timestamp:       it.record.BaseTimestamp(),
				OriginTimestamp: it.record.OriginTimestamp() + uint64(f.TimestampDelta()),
				Checksum:        f.Checksum(),
				ID:              f.ID(),
				Payload:         f.Payload(),
				UserHeaders:     f.UserHeaders(),
			}, true
		}
		rec, ok := it.records.Next()
		if !ok {
			return PolledMessage{}, false
		}
		it.record, it.frames = rec, rec.Frames()
	}
}

// SendConfirmation is one placement of a sent batch (client-plane.md 7.18).
type SendConfirmation struct {
	StreamID    uint32
	TopicID     uint32
	PartitionID uint32
	BaseOffset  uint64 // offset of the batch's first message
}

// SendConfirmations is the SendMessages reply body:
// [count u32][count x 20-byte confirmation].
type SendConfirmations []SendConfirmation

const sendConfirmationSize = 20

func (c SendConfirmations) AppendTo(b []byte) []byte {
	b = AppendU32(b, uint32(len(c)))
	for _, x := range c {
		b = AppendU32(b, x.StreamID)
		b = AppendU32(b, x.TopicID)
		b = AppendU32(b, x.PartitionID)
		b = AppendU64(b, x.BaseOffset)
	}
	return b
}

// Decode reads the body; trailing bytes are an error (7.18), and so is an
// empty body (the count is required).
func (c *SendConfirmations) Decode(body []byte) error {
	var out SendConfirmations
	err := decodeWith(body, true, "send confirmations", func(r *Reader) {
		n := r.Count("send confirmations", sendConfirmationSize)
		if r.Err() != nil || n == 0 {
			return
		}
		out = make(SendConfirmations, n)
		for i := range out {
			out[i] = SendConfirmation{
				StreamID:    r.U32("stream_id"),
				TopicID:     r.U32("topic_id"),
				PartitionID: r.U32("partition_id"),
				BaseOffset:  r.U64("base_offset"),
			}
		}
	})
	if err != nil {
		*c = nil
		return err
	}
	*c = out
	return nil
}

var (
	_ Body = (*PolledMessages)(nil)
	_ Body = (*SendConfirmations)(nil)
)
