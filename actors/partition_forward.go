package actors

import (
	"encoding/binary"

	"github.com/asynkron/protoactor-go/actor"

	"iggynode/metadata"
	"iggynode/vsr"
	"iggynode/wire"
)

// Partition write forwarding (issue 6; replica-plane.md 13.4 states the gap).
//
// Clients only learn the metadata leader, but each partition group has its
// own view and primary. A node that receives a partition write (SendMessages,
// StoreConsumerOffset, DeleteConsumerOffset at quorum) for a group whose
// primary is another replica forwards it over the replica plane in the
// routed request shape of 1.4.19: the client frame with `group` at 248 and
// the authorized user at 192 (the forwarder resolved and authorized it; peers
// are authenticated by the handshake). The forwarder marks the request with
// a nonce in bytes 0..8 and its connection id in bytes 8..12 of the
// `checksum` slot, which a routed request does not seal.
//
// The primary submits it as its own and relays the reply frame back as the
// body of another routed request: operation NonReplicated with the vendor
// code forwardedReplyCode, the same nonce and group, so the frame stays
// inside the commands this plane carries (Reply is refused here, 1.1). The
// forwarder answers its client with that body unchanged. A node that does
// not host the group yet (it has not applied the CreateTopic) answers 58 at
// once, so the client's retry finds it. A forwarded request left unanswered
// for forwardTimeoutTicks is answered 58 (TransientNotAccepted) and the
// client retries; as after a lost connection, its fate is unknown then, so
// the retry may store a batch twice (partition groups keep no client table
// yet). Offset writes with ack None stay local, as on a primary.

// forwardedReplyCode marks a relayed reply (a vendor code outside the
// command catalogue).
const forwardedReplyCode wire.CommandCode = 0x49470001

// forwardTimeoutTicks bounds how long a forwarder waits (5 s).
const forwardTimeoutTicks = 500

// forwarded is a client request parked at the forwarder.
type forwarded struct {
	req  *clientRequest
	left int
	to   uint8 // the node it went to
	// poll is set for a forwarded poll (placement.go): the relayed reply
	// reports the consumer group's progress here.
	poll *partitionPoll
}

// relay names where a forwarded request's reply goes.
type relay struct {
	to     uint8
	nonce  uint64
	connID uint32
	group  uint64
	client wire.U128
}

// forward sends req, whose frame carries the prepare body `frame`, to the
// group's primary. It reports false when there is no primary to ask (the
// group is not in normal status), so the caller answers 58. It takes
// ownership of frame and rewrites its header in place: frame is the
// request's own buffer (the edge reads each frame into a fresh one) or one
// built for the forward, and nothing reads it afterwards (a timeout is
// answered from the decoded req.hdr), so a forwarded 1 MiB batch is not
// copied.
func (p *partitionActor) forward(req *clientRequest, frame []byte) bool {
	to, ok := p.forwardTarget(req)
	if !ok {
		return false
	}
	out := frame
	h := wire.HeaderOf(out)
	hdr := req.hdr
	hdr.Size, hdr.Replica, hdr.Group = uint32(len(out)), p.node.cluster.self, p.ref.Group
	hdr.UserID = req.bound.userID
	hdr.Encode(h)
	p.nonce++
	binary.LittleEndian.PutUint64(out[0:8], p.nonce)
	binary.LittleEndian.PutUint32(out[8:12], req.connID)
	if p.parked == nil {
		p.parked = make(map[uint64]*forwarded)
	}
	p.parked[p.nonce] = &forwarded{req: req, left: forwardTimeoutTicks, to: to}
	p.node.send([]vsr.Envelope{{To: to, Head: out[:wire.HeaderSize], Body: out[wire.HeaderSize:]}})
	return true
}

// onRouted handles a command-5 frame from a peer: a forwarded write to
// submit here, or the relayed reply to one this node forwarded.
func (p *partitionActor) onRouted(f *peerFrame) (*clientRequest, []byte, bool) {
	h := wire.HeaderOf(f.frame)
	hdr, err := wire.DecodeRequestHeader(h)
	if err != nil || hdr.Group != p.ref.Group {
		return nil, nil, false
	}
	nonce := binary.LittleEndian.Uint64(f.frame[0:8])
	if hdr.Operation == wire.OpNonReplicated && hdr.Code != forwardedReadCode {
		if hdr.Code != forwardedReplyCode && hdr.Code != forwardedReadReplyCode {
			return nil, nil, false
		}
		fw := p.parked[nonce]
		if fw == nil {
			return nil, nil, false // answered already (timed out)
		}
		delete(p.parked, nonce)
		reply := f.frame[wire.HeaderSize:]
		if hdr.Code == forwardedReadReplyCode {
			if len(reply) < 9 {
				return nil, nil, false
			}
			if fw.poll != nil && fw.poll.kind == wire.ConsumerGroup && reply[0] == 1 {
				p.node.root().Send(p.parent, &groupProgress{ref: metadata.GroupRef{Stream: p.ref.Stream, Topic: p.ref.Topic, Group: fw.poll.key},
					partition: p.ref.Partition, polled: binary.LittleEndian.Uint64(reply[1:9]), hasPolled: true})
			}
			reply = reply[9:]
		}
		if len(reply) >= wire.HeaderSize && wire.HeaderOf(reply).Reply().Status == uint32(wire.ErrTransientNotAccepted) && !p.servesLocally() {
			p.placed.nextGuess(p.node.cluster.self, p.node.peerLive.live) // that node cannot take it: ask the next
		}
		return fw.req, reply, true
	}
	r := relayOf(f.from, f.frame, hdr)
	req := &clientRequest{hdr: hdr, frame: f.frame, bound: &binding{client: hdr.Client, userID: hdr.UserID},
		connID: r.connID, relay: r}
	return req, nil, true
}

// sendRelayed wraps a reply for the forwarder.
func (n *Node) sendRelayed(r *relay, reply []byte) {
	out := make([]byte, wire.HeaderSize+len(reply))
	copy(out[wire.HeaderSize:], reply)
	n.sendRelayedFrame(r, out, forwardedReplyCode)
}

// sendRelayedFrame stamps the routed header over out's first 256 bytes
// and sends it to the forwarder.
func (n *Node) sendRelayedFrame(r *relay, out []byte, code wire.CommandCode) {
	h := wire.RequestHeader{Cluster: n.cluster.id, Size: uint32(len(out)), Replica: n.cluster.self,
		Client: r.client, Operation: wire.OpNonReplicated, Code: code, Group: r.group}
	h.Encode(wire.HeaderOf(out))
	binary.LittleEndian.PutUint64(out[0:8], r.nonce)
	n.send([]vsr.Envelope{{To: r.to, Head: out[:wire.HeaderSize], Body: out[wire.HeaderSize:]}})
}

// relayOf reads the forwarder's marks from a routed request from peer.
func relayOf(from uint8, frame []byte, hdr wire.RequestHeader) *relay {
	return &relay{to: from, nonce: binary.LittleEndian.Uint64(frame[0:8]),
		connID: binary.LittleEndian.Uint32(frame[8:12]), group: hdr.Group, client: hdr.Client}
}

// refuseRouted answers a forwarded write for a group this node does not
// host (yet: it may not have applied the CreateTopic): 58 at once, so the
// client's retry finds the partition rather than waiting out the timeout.
func (n *Node) refuseRouted(f *peerFrame) {
	hdr, err := wire.DecodeRequestHeader(wire.HeaderOf(f.frame))
	if err != nil || hdr.Operation == wire.OpNonReplicated {
		return
	}
	r := relayOf(f.from, f.frame, hdr)
	n.sendRelayed(r, denyReply(&hdr, r.connID, 0, wire.ErrTransientNotAccepted))
}

// expireForwarded answers parked requests whose primary never replied.
func (p *partitionActor) expireForwarded() []*clientRequest {
	var out []*clientRequest
	for nonce, fw := range p.parked {
		if fw.left--; fw.left <= 0 {
			delete(p.parked, nonce)
			out = append(out, fw.req)
		}
	}
	if len(out) > 0 && !p.servesLocally() {
		p.placed.nextGuess(p.node.cluster.self, p.node.peerLive.live) // the guess did not answer: ask the next
	}
	return out
}

// forwardsLost answers 58 at once to the requests forwarded to a peer
// the node-level heartbeat lost (the client retries elsewhere rather
// than wait out forwardTimeoutTicks), and moves the guess off it.
func (p *partitionActor) forwardsLost(ctx actor.Context, peer uint8) {
	p.refuseForwarded(ctx, func(fw *forwarded) bool { return fw.to == peer })
	if p.placed.guess == peer && !p.servesLocally() {
		p.placed.nextGuess(p.node.cluster.self, p.node.peerLive.live)
	}
}

// refuseForwarded answers 58 to the parked requests that match: the
// client retries elsewhere.
func (p *partitionActor) refuseForwarded(ctx actor.Context, match func(*forwarded) bool) {
	for nonce, fw := range p.parked {
		if match(fw) {
			delete(p.parked, nonce)
			p.replyTo(ctx, fw.req, denyReply(&fw.req.hdr, fw.req.connID, 0, wire.ErrTransientNotAccepted))
		}
	}
}

// onRoutedFrame completes a forwarded write here, or answers the client of
// one this node forwarded.
func (p *partitionActor) onRoutedFrame(ctx actor.Context, f *peerFrame) {
	req, reply, ok := p.onRouted(f)
	if !ok {
		return
	}
	if reply != nil {
		// The answer to one this node forwarded: to its client, or on to
		// the node it came from (a second hop, placement.go).
		p.replyTo(ctx, req, reply)
		return
	}
	if req.hdr.Operation == wire.OpNonReplicated { // forwardedReadCode
		p.serveRoutedRead(ctx, req)
		return
	}
	body := req.frame[wire.HeaderSize:]
	switch op := req.hdr.Operation; op {
	case wire.OpSendMessages:
		var s wire.SendMessages
		if s.Decode(body) != nil {
			p.replyTo(ctx, req, denyReply(&req.hdr, req.connID, 0, wire.ErrInvalidCommand))
			return
		}
		p.onSend(ctx, &partitionSend{req: req, batch: s.Batch, messagesCount: s.MessagesCount})
	case wire.OpStoreConsumerOffset, wire.OpDeleteConsumerOffset:
		w, ok := offsetWriteOf(op, body)
		if !ok {
			p.replyTo(ctx, req, denyReply(&req.hdr, req.connID, 0, wire.ErrInvalidCommand))
			return
		}
		w.req, w.body, w.ack = req, body, wire.AckQuorum
		p.onOffsetWrite(ctx, w)
	}
}
