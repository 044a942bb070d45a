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
	req.checkBatch(&wire.SendVerdict{})
	if !req.batch.checked || !errors.Is(req.batch.err, wire.ErrInvalidMessageChecksum) {
		t.Fatalf("connection verdict on a bad batch: %+v", req.batch)
	}
	if err := sendOf(req).validate(); !errors.Is(err, wire.ErrInvalidMessageChecksum) {
		t.Fatalf("partition read %v, want the connection's verdict", err)
	}

	good := &clientRequest{frame: frameOf(batch)}
	good.checkBatch(&wire.SendVerdict{})
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

	// The edge's verdict (wire.SendCheck, reached as the frame arrived)
	// stands in for the connection's when it is on this frame's batch.
	edgeFrame := frameOf(bad)
	(&wire.RequestHeader{Client: wire.U128{Lo: 1}, Request: 1, Session: 1, Operation: wire.OpSendMessages,
		Size: uint32(len(edgeFrame))}).Encode(wire.HeaderOf(edgeFrame))
	var check wire.SendCheck
	check.Start(wire.HeaderOf(edgeFrame))
	edge := check.Verdict(edgeFrame)
	if edge.BatchAt == 0 || !errors.Is(edge.Err, wire.ErrInvalidMessageChecksum) {
		t.Fatalf("edge verdict on a bad batch: %+v", edge)
	}
	fromEdge := &clientRequest{frame: edgeFrame}
	edge.Err = nil // as if the edge had passed it: taken, not recomputed
	fromEdge.checkBatch(&edge)
	if !fromEdge.batch.checked || fromEdge.batch.err != nil {
		t.Fatalf("the edge's verdict was not taken: %+v", fromEdge.batch)
	}
	elsewhere := &clientRequest{frame: edgeFrame}
	edge.BatchAt-- // a verdict on other bytes is ignored
	elsewhere.checkBatch(&edge)
	if !errors.Is(elsewhere.batch.err, wire.ErrInvalidMessageChecksum) {
		t.Fatalf("a verdict on other bytes was taken: %+v", elsewhere.batch)
	}

	undecodable := &clientRequest{frame: make([]byte, wire.HeaderSize+3)}
	undecodable.checkBatch(&wire.SendVerdict{})
	if undecodable.batch.checked {
		t.Fatal("a body that does not decode got a verdict; the metadata actor answers it")
	}
}
