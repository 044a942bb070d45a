package wire

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/zeebo/xxh3"
)

// Message is one message a producer sends.
type Message struct {
	ID U128
	// OriginTimestamp is the producer time in µs since the epoch; it is
	// taken as given (0 included), the SDK fills it before building.
	OriginTimestamp uint64
	Payload         []byte
	Headers         UserHeaders
}

// AppendBatch appends one batch holding msgs, as a producer sends it
// (docs/messages.md; client-plane.md 12.2 "producer sends"): partition_id,
// base_offset and base_timestamp 0, origin_timestamp the earliest message
// origin, each frame's offset_delta its index and timestamp_delta its origin
// relative to the batch's, frame checksums, batch_length and the batch
// checksum; reserved bytes zero.
//
// It applies the SDK-side bounds (11.4): at least one message
// (InvalidMessagesCount), payloads of 1..=64 000 000 bytes
// (EmptyMessagePayload, TooBigMessagePayload), valid user headers
// (UserHeaders.Validate), and origins spanning at most u32 µs
// (InvalidMessageTimestampDelta). On error dst is returned unchanged. dst
// grows at most once; nothing is allocated per message.
func AppendBatch(dst []byte, msgs []Message) ([]byte, error) {
	size, origin, err := batchLayout(msgs)
	if err != nil {
		return dst, err
	}
	dst = slices.Grow(dst, int(size))
	at := len(dst)
	dst = append(dst, make([]byte, BatchHeaderSize)...)
	hdr := dst[at : at+BatchHeaderSize]
	binary.LittleEndian.PutUint64(hdr[BatchOriginTimestampOffset:], origin)
	binary.LittleEndian.PutUint64(hdr[BatchLengthOffset:], size)
	binary.LittleEndian.PutUint32(hdr[BatchMessageCountOffset:], uint32(len(msgs)))
	var c batchHasher
	c.begin(hdr)
	for i := range msgs {
		m := &msgs[i]
		f := len(dst)
		dst = append(dst, make([]byte, FrameHeaderSize)...)
		fh := dst[f : f+FrameHeaderSize]
		putU128(fh[FrameIDOffset:], m.ID)
		binary.LittleEndian.PutUint32(fh[FrameOffsetDeltaOffset:], uint32(i))
		binary.LittleEndian.PutUint32(fh[FrameTimestampDeltaOffset:], uint32(m.OriginTimestamp-origin))
		binary.LittleEndian.PutUint32(fh[FrameUserHeadersLengthOffset:], uint32(m.Headers.EncodedLen()))
		binary.LittleEndian.PutUint32(fh[FramePayloadLengthOffset:], uint32(len(m.Payload)))
		dst = append(dst, m.Payload...)
		dst = AppendUserHeaders(dst, m.Headers)
		binary.LittleEndian.PutUint64(dst[f:], xxh3.Hash(dst[f+FrameIDOffset:]))
		c.add(dst[f:])
	}
	binary.LittleEndian.PutUint64(dst[at+BatchChecksumOffset:], c.sum())
	return dst, nil
}

// batchLayout checks msgs against the SDK-side bounds and returns the batch
// size and its origin_timestamp.
func batchLayout(msgs []Message) (size, origin uint64, err error) {
	if len(msgs) == 0 {
		return 0, 0, fmt.Errorf("wire: batch without messages: %w", ErrInvalidMessagesCount)
	}
	if uint64(len(msgs)) > math.MaxUint32 {
		return 0, 0, fmt.Errorf("wire: %d messages in one batch: %w", len(msgs), ErrTooManyMessages)
	}
	origin, latest := uint64(math.MaxUint64), uint64(0)
	size = BatchHeaderSize
	for i := range msgs {
		m := &msgs[i]
		switch {
		case len(m.Payload) == 0:
			return 0, 0, fmt.Errorf("wire: message %d: %w", i, ErrEmptyMessagePayload)
		case len(m.Payload) > MaxMessagePayloadSize:
			return 0, 0, fmt.Errorf("wire: message %d: %d-byte payload: %w", i, len(m.Payload), ErrTooBigMessagePayload)
		}
		if len(m.Headers) > 0 {
			if err := m.Headers.Validate(); err != nil {
				return 0, 0, fmt.Errorf("wire: message %d: user headers: %w", i, err)
			}
		}
		origin = min(origin, m.OriginTimestamp)
		latest = max(latest, m.OriginTimestamp)
		size += FrameHeaderSize + uint64(len(m.Payload)) + uint64(m.Headers.EncodedLen())
	}
	if latest-origin > math.MaxUint32 {
		return 0, 0, fmt.Errorf("wire: origin timestamps span %d µs: %w", latest-origin, ErrInvalidMessageTimestampDelta)
	}
	return size, origin, nil
}
