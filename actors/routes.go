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
	if status, payload, ok := m.state.Read(user, hdr.Code, body); ok {
		answer(status, payload)
		return
	}
	switch hdr.Code {
	case wire.CodeGetClusterMetadata:
		answer(0, m.clusterMetadata())
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
	case wire.CodeGetPersonalAccessTokens:
		answer(0, nil) // no tokens until the users issue lands
	case wire.CodeGetConsumerGroups:
		var r wire.GetConsumerGroups
		if r.Decode(body) != nil {
			answer(wire.ErrInvalidCommand, nil)
			return
		}
		if _, _, code := m.state.ResolveTopic(r.Stream, r.Topic); code != 0 {
			answer(code, nil)
			return
		}
		answer(0, nil)
	case wire.CodeGetConsumerGroup, wire.CodeSyncConsumerGroup:
		answer(0, nil)
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
	if consumer.Kind == wire.ConsumerGroup {
		// Consumer groups arrive with the users issue: no group exists,
		// so no caller owns the partition (8.5.2: S 20).
		deny(wire.ErrResourceNotFound)
		return
	}
	if !m.state.Allowed(user, metadata.RulePoll, ref.Stream, ref.Topic) {
		deny(wire.ErrUnauthorized)
		return
	}
	pid := m.partitions[ref.Group]
	if pid == nil {
		deny(wire.ErrTransientNotAccepted)
		return
	}
	w.kind, w.key = consumer.Kind, wire.ConsumerKey(consumer.ID)
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
	if r.Consumer.Kind == wire.ConsumerGroup {
		// No group exists before the users issue: the re-sync sentinel
		// for an unknown group, 0 without a partition id (8.4.1).
		if r.Partition.Set {
			emptyPoll(wire.PartitionResync)
		} else {
			emptyPoll(0)
		}
		return
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
	ctx.Send(pid, &partitionPoll{req: req, poll: r, kind: r.Consumer.Kind, key: wire.ConsumerKey(r.Consumer.ID), partition: ref.Partition})
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
	if r.Consumer.Kind == wire.ConsumerGroup {
		answer(0) // unknown group: nothing stored
		return
	}
	pid := m.partitions[ref.Group]
	if pid == nil {
		answer(0)
		return
	}
	ctx.Send(pid, &partitionGetOffset{req: req, kind: r.Consumer.Kind, key: wire.ConsumerKey(r.Consumer.ID)})
}
