package actors

import (
	"errors"
	"testing"

	"iggynode/wire"
)

// A SendMessages batch is checked once, on the connection's turn: the
// partition reads that verdict and does not hash the batch again; a
// request that did not pass a connection (forwarded, or not decodable
// there) is checked by the partition.
func TestBatchVerdictReachedOnceOnTheConnection(t *testing.T) {
	batch, err := wire.AppendBatch(nil, []wire.Message{{ID: wire.U128{Lo: 1}, Payload: []byte("hello")}})
	if err != nil {
		t.Fatal(err)
	}
	frameOf := func(b []byte) []byte {
		body := wire.AppendSendMessagesHeader(nil, wire.ID(1), wire.ID(1), wire.PartitionID(0), 1)
		return append(append(make([]byte, wire.HeaderSize), body...), b...)
	}
	sendOf := func(req *clientRequest) *partitionSend {
		var s wire.SendMessages
		if err := s.Decode(req.frame[wire.HeaderSize:]); err != nil {
			t.Fatal(err)
		}
		return &partitionSend{req: req, batch: s.Batch, messagesCount: s.MessagesCount}
	}
	bad := append([]byte(nil), batch...)
	bad[wire.BatchHeaderSize] ^= 1 // a message checksum byte

	req := &clientRequest{frame: frameOf(bad)}
	req.checkBatch()
	if !req.batch.checked || !errors.Is(req.batch.err, wire.ErrInvalidMessageChecksum) {
		t.Fatalf("connection verdict on a bad batch: %+v", req.batch)
	}
	if err := sendOf(req).validate(); !errors.Is(err, wire.ErrInvalidMessageChecksum) {
		t.Fatalf("partition read %v, want the connection's verdict", err)
	}

	good := &clientRequest{frame: frameOf(batch)}
	good.checkBatch()
	m := sendOf(good)
	m.batch[wire.BatchHeaderSize] ^= 1 // after the verdict: not hashed again
	if err := m.validate(); err != nil {
		t.Fatalf("the partition hashed the batch again: %v", err)
	}

	if good.batch.table.Len() != 1 {
		t.Fatalf("the verdict's frame table indexes %d frames, want 1", good.batch.table.Len())
	}

	unchecked := &clientRequest{frame: frameOf(bad)}
	if err := sendOf(unchecked).validate(); !errors.Is(err, wire.ErrInvalidMessageChecksum) {
		t.Fatalf("unchecked request: %v, want the partition's own check", err)
	}

	undecodable := &clientRequest{frame: make([]byte, wire.HeaderSize+3)}
	undecodable.checkBatch()
	if undecodable.batch.checked {
		t.Fatal("a body that does not decode got a verdict; the metadata actor answers it")
	}
}
