package clientplane_test

import (
	"errors"
	"testing"
	"time"

	"iggynode/wire"
)

// sendMessagesFrame is a SendMessages request of count messages of size
// bytes each.
func sendMessagesFrame(t *testing.T, request uint64, count, size int) []byte {
	t.Helper()
	msgs := make([]wire.Message, count)
	for i := range msgs {
		payload := make([]byte, size)
		for j := range payload {
			payload[j] = byte(i + j)
		}
		msgs[i] = wire.Message{ID: wire.U128{Lo: uint64(i + 1)}, Payload: payload}
	}
	batch, err := wire.AppendBatch(nil, msgs)
	if err != nil {
		t.Fatal(err)
	}
	body := append(wire.AppendSendMessagesHeader(nil, wire.ID(1), wire.ID(1), wire.PartitionID(0), uint32(count)), batch...)
	return opFrame(wire.OpSendMessages, request, body)
}

// Every transport hands the session the verdict it reached on a
// SendMessages batch while the frame arrived: the one-pass admission's,
// on the batch the full decode finds; other frames get none.
func TestEdgeChecksSendBatchesAsTheyArrive(t *testing.T) {
	for _, tc := range limitTransports(t) {
		t.Run(tc.name, func(t *testing.T) {
			h := newEcho()
			h.verdicts = make(chan wire.SendVerdict, 4)
			addr, stop := tc.listen(t, testConfig(), h)
			defer stop()
			c := tc.mustDial(t, addr, "")
			defer c.close()

			good := sendMessagesFrame(t, 1, 50, 1000) // about 53 KB: read in several pieces
			bad := sendMessagesFrame(t, 2, 50, 1000)
			bad[len(bad)-1] ^= 1 // the last message's payload: its checksum fails
			other := requestFrame(3, good[wire.HeaderSize:])
			for _, want := range []struct {
				frame []byte
				code  wire.ErrorCode // 0: accepted; 1: no verdict
			}{{good, 0}, {bad, wire.ErrInvalidMessageChecksum}, {other, 1}} {
				frame := want.frame
				if tc.name == "tcp" || tc.name == "tls" {
					// In pieces, so the reader sees the frame arrive (a
					// WebSocket message or QUIC stream is sent whole).
					for _, cut := range [][2]int{{0, 300}, {300, 20000}} {
						if err := c.writePartial(frame[cut[0]:cut[1]]); err != nil {
							t.Fatal(err)
						}
						time.Sleep(5 * time.Millisecond)
					}
					frame = frame[20000:]
				}
				if _, err := c.roundTrip(frame); err != nil {
					t.Fatal(err)
				}
				v := <-h.verdicts
				if want.code == 1 {
					if v.BatchAt != 0 {
						t.Fatalf("verdict at %d on a frame that is not a SendMessages", v.BatchAt)
					}
					continue
				}
				var s wire.SendMessages
				if err := s.Decode(want.frame[wire.HeaderSize:]); err != nil {
					t.Fatal(err)
				}
				if !v.Covers(want.frame, s.Batch) {
					t.Fatalf("verdict at %d, batch at %d", v.BatchAt, len(want.frame)-len(s.Batch))
				}
				table, err := wire.ValidateBatchIndexed(s.Batch, s.MessagesCount)
				if !errors.Is(v.Err, err) && (err == nil || v.Err == nil || v.Err.Error() != err.Error()) {
					t.Fatalf("verdict %v, one-pass admission %v", v.Err, err)
				}
				if code, _ := wire.CodeOf(v.Err); code != want.code {
					t.Fatalf("verdict code %v, want %v", code, want.code)
				}
				if v.Table.Len() != table.Len() {
					t.Fatalf("verdict table of %d frames, want %d", v.Table.Len(), table.Len())
				}
			}
		})
	}
}
