package actors

import (
	"errors"

	"github.com/asynkron/protoactor-go/actor"

	"iggynode/metadata"
	"iggynode/wire"
)

func (n *Node) root() *actor.RootContext { return n.system.Root }

// onRead serves a NonReplicated read that the connection did not answer
// itself: metadata reads from committed state, node-level reads, and the
// partition reads it routes (client-plane.md 8).
func (m *metadataActor) onRead(ctx actor.Context, req *clientRequest) {
	hdr := &req.hdr
	body := req.frame[wire.HeaderSize:]
	user := req.bound.userID
	answer := func(status wire.ErrorCode, payload []byte) {
		m.reply(ctx, req, &replyOut{frame: readReply(hdr, m.commit(), status, payload)})
	}
	if status, payload, ok := m.state.ReadAs(user, req.bound.client, hdr.Code, body); ok {
		answer(status, payload)
		return
	}
	switch hdr.Code {
	case wire.CodeGetClusterMetadata:
		var r wire.GetClusterMetadata
		_ = r.Decode(body)
		answer(0, m.clusterMetadata(req.address, r.LastHeard))
	case wire.CodeGetMe:
		answer(0, m.clientDetails(req.connID, true))
	case wire.CodeGetClient:
		if !m.state.Allowed(user, metadata.RuleServerRead, 0, 0) {
			answer(wire.ErrUnauthorized, nil)
			return
		}
		var r wire.GetClient
		if r.Decode(body) != nil {
			answer(0, nil)
			return
		}
		answer(0, m.clientDetails(r.ClientID, false))
	case wire.CodeGetClients:
		if !m.state.Allowed(user, metadata.RuleServerRead, 0, 0) {
			answer(wire.ErrUnauthorized, nil)
			return
		}
		answer(0, m.clients())
	case wire.CodeGetStats:
		if !m.state.Allowed(user, metadata.RuleServerRead, 0, 0) {
			answer(wire.ErrUnauthorized, nil)
			return
		}
		answer(0, m.stats())
	case wire.CodeGetSnapshot:
		if !m.state.Allowed(user, metadata.RuleServerRead, 0, 0) {
			answer(wire.ErrUnauthorized, nil)
			return
		}
		m.snapshot(ctx, req)
	case wire.CodePollMessages:
		m.routePoll(ctx, req)
	case wire.CodeGetConsumerOffset:
		m.routeGetOffset(ctx, req)
	case wire.CodeClusterAdd, wire.CodeClusterRemove, wire.CodeClusterReplace, wire.CodeClusterStatus:
		m.onClusterAdmin(ctx, req)
	default:
		answer(wire.ErrInvalidCommand, nil)
	}
}

// clientDetails is ClientDetails (7.10) of connection id, or nil.
func (m *metadataActor) clientDetails(id uint32, me bool) []byte {
	c := m.conns[id]
	if c == nil {
		return nil
	}
	d := wire.ClientDetails{ClientResponse: clientResponse(c)}
	if c.userID != noUser {
		d.ConsumerGroups = m.state.Memberships(c.client)
	}
	d.ConsumerGroupsCount = uint32(len(d.ConsumerGroups))
	return d.AppendTo(nil)
}

func clientResponse(c *connInfo) wire.ClientResponse {
	return wire.ClientResponse{ClientID: c.id, UserID: c.userID, Transport: wire.TransportKind(c.transport), Address: c.address}
}

// clients is GetClients (8.1.8), ascending connection id.
func (m *metadataActor) clients() []byte {
	var out wire.Clients
	for id := uint32(1); len(out) < len(m.conns); id++ {
		if c := m.conns[id]; c != nil {
			r := clientResponse(c)
			if c.userID != noUser {
				r.ConsumerGroupsCount = uint32(len(m.state.Memberships(c.client)))
			}
			out = append(out, r)
		}
	}
	return out.AppendTo(nil)
}

// onPartitionWrite resolves and authorizes SendMessages and the consumer
// offset writes, then hands them to the partition actor (client-plane.md
// 4.2 step 9, 8.4.2, 8.5; replica-plane.md 13.4).
func (m *metadataActor) onPartitionWrite(ctx actor.Context, req *clientRequest) {
	hdr := &req.hdr
	deny := func(code wire.ErrorCode) {
		m.reply(ctx, req, &replyOut{frame: denyReply(hdr, req.connID, m.commit(), code)})
	}
	body := req.frame[wire.HeaderSize:]
	user := req.bound.userID
	if hdr.Operation == wire.OpSendMessages {
		var s wire.SendMessages
		if err := s.Decode(body); err != nil {
			if errors.Is(err, wire.ErrSendMetadata) {
				deny(wire.ErrResourceNotFound)
			} else {
				deny(wire.ErrInvalidCommand)
			}
			return
		}
		ref, code := m.state.ResolveSend(s.Stream, s.Topic, s.Partitioning)
		if code != 0 {
			deny(code)
			return
		}
		if !m.state.Allowed(user, metadata.RuleSend, ref.Stream, ref.Topic) {
			deny(wire.ErrUnauthorized)
			return
		}
		pid := m.partitions[ref.Group]
		if pid == nil {
			deny(wire.ErrTransientNotAccepted)
			return
		}
		ctx.Send(pid, &partitionSend{req: req, batch: s.Batch, messagesCount: s.MessagesCount})
		return
	}
	w := &partitionOffsetWrite{req: req, ack: wire.AckQuorum}
	var consumer wire.Consumer
	var stream, topic wire.Identifier
	var part wire.OptionalPartition
	if hdr.Operation == wire.OpStoreConsumerOffset {
		var r wire.StoreConsumerOffset
		if r.Decode(body) != nil {
			deny(wire.ErrResourceNotFound)
			return
		}
		consumer, stream, topic, part, w.offset, w.ack = r.Consumer, r.Stream, r.Topic, r.Partition, r.Offset, r.Ack
	} else {
		var r wire.DeleteConsumerOffset
		if r.Decode(body) != nil {
			deny(wire.ErrResourceNotFound)
			return
		}
		consumer, stream, topic, part, w.ack = r.Consumer, r.Stream, r.Topic, r.Partition, r.Ack
		w.delete = true
	}
	if !part.Set {
		deny(wire.ErrResourceNotFound) // no default partition for writes (18 #22)
		return
	}
	ref, code := m.state.ResolvePartition(stream, topic, part.ID)
	if code != 0 {
		deny(wire.ErrResourceNotFound)
		return
	}
	if !m.state.Allowed(user, metadata.RulePoll, ref.Stream, ref.Topic) {
		deny(wire.ErrUnauthorized)
		return
	}
	key := wire.ConsumerKey(consumer.ID)
	if consumer.Kind == wire.ConsumerGroup {
		// A group consumer must own the partition (a pending hand-off
		// still counts); the stored key is the group's numeric id and the
		// prepare names the group by it (replica-plane.md 13.1, 13.4).
		gid, ok := m.state.GroupOwnsPartition(ref.Stream, ref.Topic, consumer.ID, req.bound.client, ref.Partition)
		if !ok {
			deny(wire.ErrResourceNotFound)
			return
		}
		key, consumer = gid, wire.GroupConsumer(wire.ID(gid))
	}
	pid := m.partitions[ref.Group]
	if pid == nil {
		deny(wire.ErrTransientNotAccepted)
		return
	}
	w.kind, w.key = consumer.Kind, key
	// The prepare body is the client body with the partition flag 1
	// (replica-plane.md 13.1).
	if w.delete {
		w.body = wire.DeleteConsumerOffset{Consumer: consumer, Stream: stream, Topic: topic, Partition: part, Ack: w.ack}.AppendTo(nil)
	} else {
		w.body = wire.StoreConsumerOffset{Consumer: consumer, Stream: stream, Topic: topic, Partition: part, Offset: w.offset, Ack: w.ack}.AppendTo(nil)
	}
	ctx.Send(pid, w)
}

// routePoll resolves a PollMessages (8.4.1) and routes it.
func (m *metadataActor) routePoll(ctx actor.Context, req *clientRequest) {
	hdr := &req.hdr
	emptyPoll := func(partition uint32) {
		m.reply(ctx, req, &replyOut{frame: readReply(hdr, m.commit(), 0, wire.AppendPolledHeader(nil, partition, 0, 0))})
	}
	var r wire.PollMessages
	if r.Decode(req.frame[wire.HeaderSize:]) != nil {
		emptyPoll(0)
		return
	}
	key := wire.ConsumerKey(r.Consumer.ID)
	if r.Consumer.Kind == wire.ConsumerGroup {
		// A group poll needs a partition the caller's client currently
		// owns and is not handing off; anything else gets the re-sync
		// sentinel, and no partition id an empty poll of 0 (8.4.1).
		if !r.Partition.Set {
			emptyPoll(0)
			return
		}
		sid, tid, code := m.state.ResolveTopic(r.Stream, r.Topic)
		if code != 0 {
			emptyPoll(wire.PartitionResync)
			return
		}
		gid, ok := m.state.PollablePartition(sid, tid, r.Consumer.ID, req.bound.client, r.Partition.ID)
		if !ok {
			emptyPoll(wire.PartitionResync)
			return
		}
		key = gid
	}
	ref, code := m.state.ResolvePartition(r.Stream, r.Topic, r.Partition.ID)
	if code != 0 {
		m.reply(ctx, req, &replyOut{frame: readReply(hdr, m.commit(), code, nil)})
		return
	}
	if !m.state.Allowed(req.bound.userID, metadata.RulePoll, ref.Stream, ref.Topic) {
		m.reply(ctx, req, &replyOut{frame: readReply(hdr, m.commit(), wire.ErrUnauthorized, nil)})
		return
	}
	pid := m.partitions[ref.Group]
	if pid == nil {
		emptyPoll(ref.Partition)
		return
	}
	poll := consumerPoll(req, r, ref.Partition)
	poll.key = key // a group's id for a group poll
	ctx.Send(pid, poll)
}

// routeGetOffset resolves a GetConsumerOffset (8.5.1) and routes it.
func (m *metadataActor) routeGetOffset(ctx actor.Context, req *clientRequest) {
	hdr := &req.hdr
	answer := func(status wire.ErrorCode) {
		m.reply(ctx, req, &replyOut{frame: readReply(hdr, m.commit(), status, nil)})
	}
	var r wire.GetConsumerOffset
	if r.Decode(req.frame[wire.HeaderSize:]) != nil {
		answer(0)
		return
	}
	if _, _, code := m.state.ResolveTopic(r.Stream, r.Topic); code != 0 {
		answer(0)
		return
	}
	ref, code := m.state.ResolvePartition(r.Stream, r.Topic, r.Partition.ID)
	if code != 0 {
		answer(code)
		return
	}
	if !m.state.Allowed(req.bound.userID, metadata.RulePoll, ref.Stream, ref.Topic) {
		answer(wire.ErrUnauthorized)
		return
	}
	key := wire.ConsumerKey(r.Consumer.ID)
	if r.Consumer.Kind == wire.ConsumerGroup {
		// Group offsets are readable by anyone with the permission, member
		// or not; an unknown group has nothing stored (8.5.1).
		gid, ok := m.state.ResolveGroup(r.Stream, r.Topic, r.Consumer.ID)
		if !ok {
			answer(0)
			return
		}
		key = gid
	}
	pid := m.partitions[ref.Group]
	if pid == nil {
		answer(0)
		return
	}
	ctx.Send(pid, &partitionGetOffset{req: req, kind: r.Consumer.Kind, key: key})
}
