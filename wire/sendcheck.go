package wire

import "encoding/binary"

// SendCheck applies batch admission (client-plane.md 13.1 steps 3-6) to a
// SendMessages request frame while the frame arrives: the edge's reader
// calls Advance with each longer prefix it has read and Verdict once the
// frame is whole, so hashing the messages overlaps reading them instead
// of following it. The verdict is the one ValidateBatchIndexed gives the
// batch SendMessages.Decode finds in the whole frame: the metadata section
// is decoded by the same code, from the same bytes.
//
// A SendCheck is reused frame after frame (Start); a Verdict's table is
// its own.
type SendCheck struct {
	size    int // the frame's size, from its header
	batchAt int // where the batch starts in the frame (0: not known yet)
	off     bool
	batch   batchCheck
}

// SendVerdict is the verdict of a SendCheck on one frame.
type SendVerdict struct {
	// BatchAt is where the checked batch starts in the frame; 0 when
	// there is no verdict (not a SendMessages request, or its metadata
	// section does not decode: the full decode answers it).
	BatchAt int
	Table   FrameTable // ValidateBatchIndexed's
	Err     error      // ValidateBatchIndexed's
}

// Covers reports whether v is the verdict on batch, the SendMessages
// batch decoded from frame (it aliases frame's tail).
func (v *SendVerdict) Covers(frame, batch []byte) bool {
	return v.BatchAt >= HeaderSize && v.BatchAt == len(frame)-len(batch)
}

// Start prepares the check of the frame whose header is hdr: only a
// Request of operation SendMessages is checked.
func (s *SendCheck) Start(hdr *Header) {
	*s = SendCheck{size: int(hdr.Size()), off: hdr.Command() != CmdRequest || hdr.Request().Operation != OpSendMessages || hdr.Size() < HeaderSize}
}

// Advance checks what frame, the frame's first bytes (header included,
// at most its size), adds to the verdict.
func (s *SendCheck) Advance(frame []byte) {
	if s.off {
		return
	}
	if s.batchAt == 0 {
		body := frame[HeaderSize:]
		if len(body) < 4 {
			return
		}
		// The section ends where metadata_length says; Decode judges it
		// (an overlong one is decoded against the whole body, below).
		end := 4 + int(binary.LittleEndian.Uint32(body))
		if end > s.size-HeaderSize {
			s.off = true
			return
		}
		if len(body) < end {
			return
		}
		var m SendMessages
		if m.Decode(body[:end]) != nil {
			s.off = true
			return
		}
		s.batchAt = HeaderSize + end
		s.batch = batchCheck{total: s.size - s.batchAt, messagesCount: m.MessagesCount, index: true}
	}
	s.batch.advance(frame[s.batchAt:])
}

// Verdict finishes the check of frame, now whole.
func (s *SendCheck) Verdict(frame []byte) SendVerdict {
	if s.Advance(frame); s.off || s.batchAt == 0 || len(frame) != s.size {
		return SendVerdict{}
	}
	if err := s.batch.finish(frame[s.batchAt:]); err != nil {
		return SendVerdict{BatchAt: s.batchAt, Err: err}
	}
	return SendVerdict{BatchAt: s.batchAt, Table: s.batch.table}
}
