package wire

import (
	"fmt"
	"slices"
	"testing"
)

// sendFrame is a SendMessages request frame around body.
func sendFrame(op Operation, body []byte) []byte {
	frame := make([]byte, HeaderSize, HeaderSize+len(body))
	r := RequestHeader{Client: U128{Lo: 1}, Request: 1, Session: 1, Operation: op, Size: uint32(HeaderSize + len(body))}
	r.Encode(HeaderOf(frame))
	return append(frame, body...)
}

// sendBody is a SendMessages body of batch, messages_count count.
func sendBody(batch []byte, count uint32) []byte {
	return append(AppendSendMessagesHeader(nil, ID(1), ID(2), PartitionID(0), count), batch...)
}

// checkInChunks runs a SendCheck over frame arriving in pieces of the
// given lengths (cycled; 0 counts as 1).
func checkInChunks(frame []byte, chunks []byte) SendVerdict {
	var s SendCheck
	s.Start(HeaderOf(frame))
	at := HeaderSize
	for i := 0; at < len(frame); i++ {
		step := 1
		if len(chunks) > 0 {
			step = max(1, int(chunks[i%len(chunks)])*int(chunks[i%len(chunks)]))
		}
		at = min(len(frame), at+step)
		s.Advance(frame[:at])
	}
	return s.Verdict(frame)
}

// wantVerdict is what the one-pass admission says of frame's batch.
func wantVerdict(t *testing.T, frame []byte, got SendVerdict) {
	t.Helper()
	var x SendMessages
	if HeaderOf(frame).Request().Operation != OpSendMessages || x.Decode(frame[HeaderSize:]) != nil {
		if got.BatchAt != 0 {
			t.Fatalf("verdict at %d on a frame whose metadata does not decode", got.BatchAt)
		}
		return
	}
	if !got.Covers(frame, x.Batch) {
		t.Fatalf("verdict at %d does not cover the batch at %d", got.BatchAt, len(frame)-len(x.Batch))
	}
	table, err := ValidateBatchIndexed(x.Batch, x.MessagesCount)
	if fmt.Sprint(got.Err) != fmt.Sprint(err) {
		t.Fatalf("verdict %v, ValidateBatchIndexed %v", got.Err, err)
	}
	if got.Table.Built() != table.Built() || !slices.Equal(got.Table.ends, table.ends) || !slices.Equal(got.Table.sums, table.sums) {
		t.Fatalf("table %+v, ValidateBatchIndexed's %+v", got.Table, table)
	}
}

func TestSendCheckMatchesOnePassAdmission(t *testing.T) {
	good := threeFrameBatch()
	badSum := slices.Clone(good)
	badSum[256+FrameHeaderSize] ^= 1 // a payload byte of frame 0: its checksum fails
	badTile := slices.Clone(good)
	badTile[32]++ // batch_length
	badFrameLen := slices.Clone(good)
	badFrameLen[256+FramePayloadLengthOffset] = 0xff // frame 0 runs past the batch
	cases := []struct {
		name  string
		frame []byte
		code  ErrorCode // 0: accepted
	}{
		{"accepted", sendFrame(OpSendMessages, sendBody(good, 3)), 0},
		{"message checksum", sendFrame(OpSendMessages, sendBody(badSum, 3)), ErrInvalidMessageChecksum},
		{"batch length", sendFrame(OpSendMessages, sendBody(badTile, 3)), ErrInvalidCommand},
		{"frame length", sendFrame(OpSendMessages, sendBody(badFrameLen, 3)), ErrInvalidCommand},
		{"messages_count", sendFrame(OpSendMessages, sendBody(good, 2)), ErrInvalidCommand},
		{"short batch", sendFrame(OpSendMessages, sendBody(good[:100], 3)), ErrInvalidCommand},
	}
	for _, c := range cases {
		for _, chunks := range [][]byte{nil, {3}, {7, 2}, {255}} {
			t.Run(fmt.Sprintf("%s/%v", c.name, chunks), func(t *testing.T) {
				got := checkInChunks(c.frame, chunks)
				wantVerdict(t, c.frame, got)
				if got.BatchAt == 0 {
					t.Fatal("no verdict on a SendMessages frame that decodes")
				}
				code, _ := CodeOf(got.Err)
				if code != c.code {
					t.Fatalf("code %v, want %v", code, c.code)
				}
			})
		}
	}
}

func TestSendCheckLeavesOtherFramesAlone(t *testing.T) {
	good := sendBody(threeFrameBatch(), 3)
	for name, frame := range map[string][]byte{
		"another operation":      sendFrame(OpStoreConsumerOffset, good),
		"metadata past the body": sendFrame(OpSendMessages, []byte{0xff, 0, 0, 0, 1}),
		"metadata that does not decode": sendFrame(OpSendMessages,
			append([]byte{5, 0, 0, 0, 9, 9, 9, 9, 9}, threeFrameBatch()...)),
	} {
		t.Run(name, func(t *testing.T) {
			if v := checkInChunks(frame, []byte{4}); v.BatchAt != 0 {
				t.Fatalf("verdict at %d", v.BatchAt)
			}
		})
	}
}

// TestSendCheckStopsAtTheFirstLayoutError: a frame that runs past the
// batch is refused as soon as its header has arrived, before the rest.
func TestSendCheckStopsAtTheFirstLayoutError(t *testing.T) {
	bad := threeFrameBatch()
	bad[256+FramePayloadLengthOffset] = 0xff
	frame := sendFrame(OpSendMessages, sendBody(bad, 3))
	var s SendCheck
	s.Start(HeaderOf(frame))
	batchAt := len(frame) - len(bad)
	s.Advance(frame[:batchAt+BatchHeaderSize+FrameHeaderSize])
	if s.batch.err == nil {
		t.Fatal("no layout error once the first frame header arrived")
	}
}

// FuzzSendCheck: whatever the bytes and however they arrive, the verdict
// is the one-pass admission of the batch the full decode finds.
func FuzzSendCheck(f *testing.F) {
	f.Add(uint8(OpSendMessages), sendBody(threeFrameBatch(), 3), []byte{5})
	f.Add(uint8(OpSendMessages), sendBody(builtSeedBatch(f), 2), []byte{1, 9})
	f.Add(uint8(OpSendMessages), sendBody(specBatch175(f), 1), []byte{})
	f.Add(uint8(OpSendMessages), sendBody(make([]byte, 256), 0), []byte{16})
	f.Add(uint8(OpStoreConsumerOffset), sendBody(threeFrameBatch(), 3), []byte{3})
	f.Fuzz(func(t *testing.T, op uint8, body []byte, chunks []byte) {
		frame := sendFrame(Operation(op), body)
		wantVerdict(t, frame, checkInChunks(frame, chunks))
	})
}
