package actors

import "iggynode/wire"

// Reply frames the connection actor builds itself, per reply class of
// client-plane.md 4.4. Committed replies (class C, E) are built by the
// replica that committed them.

// replyFrame allocates a reply frame with room for body and encodes hdr.
func replyFrame(hdr wire.ReplyHeader, body []byte) []byte {
	f := make([]byte, wire.HeaderSize+len(body))
	hdr.Size = uint32(len(f))
	hdr.Encode(wire.HeaderOf(f))
	copy(f[wire.HeaderSize:], body)
	return f
}

// echo fills the fields every non-committed reply echoes from the request.
func echo(req *wire.RequestHeader) wire.ReplyHeader {
	return wire.ReplyHeader{
		Cluster: req.Cluster, View: req.View, Release: req.Release, Replica: req.Replica,
		RequestChecksum: req.RequestChecksum, Timestamp: req.Timestamp, Request: req.Request,
	}
}

// readReply is class A (status 0) or B1 (status != 0, empty body): a
// non-replicated answer with operation 2 and op = the request's session.
func readReply(req *wire.RequestHeader, commit uint64, status wire.ErrorCode, body []byte) []byte {
	h := echo(req)
	h.Client, h.Op, h.Commit, h.Operation, h.Status = req.Client, req.Session, commit, wire.OpNonReplicated, uint32(status)
	if status != 0 {
		body = nil
	}
	return replyFrame(h, body)
}

// denyReply is class B2: a deny decided before the request entered a plane;
// it echoes the request's operation, op 0, empty body.
func denyReply(req *wire.RequestHeader, connID uint32, commit uint64, status wire.ErrorCode) []byte {
	h := echo(req)
	h.Client, h.Commit, h.Operation, h.Status = wire.U128{Lo: uint64(connID)}, commit, req.Operation, uint32(status)
	return replyFrame(h, nil)
}

// rejectReply is class D: a result-section rejection that was not
// committed (57, 58, 59), status 0.
func rejectReply(req *wire.RequestHeader, client wire.U128, commit uint64, op wire.Operation, code wire.ErrorCode) []byte {
	h := echo(req)
	h.Client, h.Op, h.Commit, h.Operation = client, commit, commit, op
	return replyFrame(h, wire.AppendResultError(nil, code))
}

// logoutReply is class H.
func logoutReply(req *wire.RequestHeader, client wire.U128, epoch, commit uint64) []byte {
	h := echo(req)
	h.Client, h.Op, h.Commit, h.Operation = client, epoch, commit, wire.OpLogout
	return replyFrame(h, nil)
}

// loginReply is class G for a connection that is already bound (5.2 step
// 6): the existing epoch, nothing committed.
func loginReply(req *wire.RequestHeader, epoch, commit, userID uint64) []byte {
	h := echo(req)
	h.Client, h.Op, h.Commit, h.Operation, h.Request = req.Client, epoch, max(commit, epoch), wire.OpRegister, 0
	body := wire.AppendResultOK(nil)
	body = (&wire.LoginRegisterResponse{UserID: uint32(userID), Session: epoch,
		ServerProtocolVersion: wire.ProtocolVersion, ServerVersion: wire.ServerVersion}).AppendTo(body)
	return replyFrame(h, body)
}

// eviction builds a 256-byte eviction frame (client-plane.md 4.5).
func eviction(client wire.U128, reason wire.EvictionReason) []byte {
	f := make([]byte, wire.HeaderSize)
	e := wire.EvictionHeader{Client: client, Reason: reason}
	if reason == wire.EvictIncompatibleProtocol {
		e.MaxVersion, e.MinVersion = wire.ProtocolVersion, wire.MinProtocolVersion
	}
	e.Encode(wire.HeaderOf(f))
	return f
}
