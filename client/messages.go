package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"iggynode/wire"
)

// topicKey names a topic as the caller does (a topic named by id and by
// name are two keys; both are dropped together).
type topicKey struct{ stream, topic wire.Identifier }

// NewMessage returns a message with a random id and the current time as
// its origin timestamp.
func NewMessage(payload []byte) wire.Message {
	return wire.Message{ID: newClientID(), OriginTimestamp: uint64(time.Now().UnixMicro()), Payload: payload}
}

// SendMessages appends msgs to a topic as one batch (code 101) and returns
// the server's confirmation. Balanced and MessagesKey partitioning are
// resolved here and sent as PartitionId (client-plane.md 14.2): Balanced
// with a per-topic cursor (the first send goes to partition 0), MessagesKey
// with XXH32(key) mod partitions_count. Both need the topic's partition
// count, read with GetTopic and cached per topic; the cache is dropped on
// S 3007 or S 20 and whenever this client changes partitions or topics.
// With Options.ServerBalanced, Balanced goes to the server as is.
// A topic without partitions fails locally with TopicIdNotFound. The
// messages are sent as given (OriginTimestamp included); the batch is
// encoded into a reused buffer, nothing is allocated per message, and
// written in one call.
func (c *Client) SendMessages(ctx context.Context, stream, topic wire.Identifier, partitioning wire.Partitioning, msgs []wire.Message) (wire.SendConfirmations, error) {
	if err := partitioning.Validate(); err != nil {
		return nil, fmt.Errorf("client: %w: %w", wire.ErrInvalidCommand, err)
	}
	if err := errors.Join(stream.Validate(), topic.Validate()); err != nil {
		return nil, fmt.Errorf("client: %w: %w", wire.ErrInvalidCommand, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	key := topicKey{stream, topic}
	target := partitioning
	if !(partitioning.Kind == wire.PartitionBalanced && c.opts.ServerBalanced) {
		partition, err := c.route(ctx, key, partitioning)
		if err != nil {
			return nil, err
		}
		target = wire.PartitionID(partition)
	}
	var err error
	c.wbuf = wire.AppendSendMessagesHeader(append(c.wbuf[:0], zeroHeader[:]...), stream, topic, target, uint32(len(msgs)))
	if c.wbuf, err = wire.AppendBatch(c.wbuf, msgs); err != nil {
		return nil, err
	}
	rep, err := c.exchange(ctx, call{code: wire.CodeSendMessages, op: wire.OpSendMessages, buf: &c.wbuf, retry: true})
	if err != nil {
		if code, _ := wire.CodeOf(err); code == wire.ErrPartitionNotFound || code == wire.ErrResourceNotFound {
			delete(c.partitions, key)
		}
		return nil, err
	}
	// Decoded by a direct call: through decodeReply's interface the slice
	// header would escape, one more allocation per send.
	var out wire.SendConfirmations
	if err := out.Decode(rep.body); err != nil {
		return nil, fmt.Errorf("client: %v reply: %w", wire.CodeSendMessages, err)
	}
	return out, nil
}

// route picks the partition id of a send. Lock held.
func (c *Client) route(ctx context.Context, key topicKey, p wire.Partitioning) (uint32, error) {
	if p.Kind == wire.PartitionByID {
		return p.ID, nil
	}
	count, ok := c.partitions[key]
	if !ok {
		var details wire.TopicDetails
		rep, err := c.run(ctx, wire.GetTopic{Stream: key.stream, Topic: key.topic})
		if err != nil {
			return 0, err
		}
		if len(rep.body) == 0 {
			return 0, fmt.Errorf("client: send to %v/%v: %w", key.stream, key.topic, wire.ErrTopicIdNotFound)
		}
		if err := decodeReply(wire.CodeGetTopic, &details, rep.body); err != nil {
			return 0, err
		}
		count = details.PartitionsCount
		c.partitions[key] = count
	}
	if count == 0 {
		return 0, fmt.Errorf("client: topic %v/%v has no partitions: %w", key.stream, key.topic, wire.ErrTopicIdNotFound)
	}
	if p.Kind == wire.PartitionByMessageKey {
		return wire.PartitionIndexForKey(p.Key, count), nil
	}
	cursor := c.cursors[key]
	c.cursors[key] = cursor + 1
	return cursor % count, nil
}

// forgetPartitions drops every cached partition count.
func (c *Client) forgetPartitions() {
	c.mu.Lock()
	clear(c.partitions)
	c.mu.Unlock()
}

// PollMessages reads up to count messages (code 100). A plain consumer
// without a partition reads partition 0; a group consumer needs one
// (8.4.1). The returned value owns its records: one copy of the reply body
// per poll, into fresh memory (handing over the connection's read buffer
// instead costs more: the next reply would be read into a fresh, zeroed
// buffer while the server waits). Iterate the records with its Messages
// method. A group poll answered with the re-sync sentinel returns it as is
// (PolledMessages.Resync). A consumer that polls in a loop should use
// PollMessagesInto, which reuses memory.
func (c *Client) PollMessages(ctx context.Context, consumer wire.Consumer, stream, topic wire.Identifier, partition wire.OptionalPartition, strategy wire.PollingStrategy, count uint32, autoCommit bool) (*wire.PolledMessages, error) {
	p := new(Polled)
	if err := c.PollMessagesInto(ctx, p, consumer, stream, topic, partition, strategy, count, autoCommit); err != nil {
		return nil, err
	}
	return &p.PolledMessages, nil
}

// Polled is a poll result whose memory is reused from poll to poll: the
// zero value is ready, and PollMessagesInto and PollConsumerGroupInto
// overwrite it. Its records are valid until it is passed to the next poll;
// copy what must outlive that.
type Polled struct {
	wire.PolledMessages
	// buf is the memory Records points into: a whole reply frame taken
	// from the connection, or a copy of the body. The next poll into this
	// value hands it to the connection as its read buffer.
	buf []byte
}

// handOverMin is the smallest reply body taken from the connection rather
// than copied: below it a copy is cheap, and a small poll must not pin
// the connection's grown read buffer.
const handOverMin = 64 << 10

// PollMessagesInto is PollMessages into a reused dst (the zero-copy poll):
// from its second use on, dst's memory becomes the connection's read
// buffer and dst takes the buffer the reply arrived in, so a steady
// consumer allocates and copies nothing per poll (TCP, TLS, QUIC,
// WebSocket). The first poll into a zero Polled, replies under 64 KiB and
// the HTTP transport copy the body into dst's memory instead. dst's
// previous records become invalid; on error dst is empty.
func (c *Client) PollMessagesInto(ctx context.Context, dst *Polled, consumer wire.Consumer, stream, topic wire.Identifier, partition wire.OptionalPartition, strategy wire.PollingStrategy, count uint32, autoCommit bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.poll(ctx, dst, wire.PollMessages{Consumer: consumer, Stream: stream, Topic: topic, Partition: partition, Strategy: strategy, Count: count, AutoCommit: autoCommit})
}

// poll runs one PollMessages request into dst. Lock held.
func (c *Client) poll(ctx context.Context, dst *Polled, req wire.PollMessages) error {
	dst.PolledMessages = wire.PolledMessages{}
	if err := req.Validate(); err != nil {
		return fmt.Errorf("client: %w: %w", wire.ErrInvalidCommand, err)
	}
	c.wbuf = req.AppendTo(append(c.wbuf[:0], zeroHeader[:]...))
	rep, err := c.exchange(ctx, call{code: wire.CodePollMessages, op: wire.OpNonReplicated, buf: &c.wbuf, retry: true})
	if err != nil {
		return err
	}
	body := rep.body
	if s, ok := c.conn.(readBufferSwapper); ok && len(body) >= handOverMin && dst.buf != nil {
		// body lies in the frame the connection just read: take that
		// buffer and give the connection dst's old one for the next read.
		dst.buf = s.SwapReadBuffer(dst.buf)
	} else {
		dst.buf = append(dst.buf[:0], body...)
		body = dst.buf
	}
	return decodeReply(wire.CodePollMessages, &dst.PolledMessages, body)
}

// Messages collects the messages of a poll into a slice (payloads alias the
// poll's records).
func Messages(p *wire.PolledMessages) []wire.PolledMessage {
	var out []wire.PolledMessage
	if p == nil {
		return nil
	}
	for it := p.Messages(); ; {
		m, ok := it.Next()
		if !ok {
			return out
		}
		out = append(out, m)
	}
}

// Consumer groups (8.10).

type groupKey struct{ stream, topic, group wire.Identifier }

// groupCursor is the client's view of its assignment in a group.
type groupCursor struct {
	generation uint64
	partitions []uint32
	next       int
}

// GetConsumerGroup reads a group with its members (code 600);
// wire.ErrConsumerGroupIdNotFound when there is none.
func (c *Client) GetConsumerGroup(ctx context.Context, stream, topic, group wire.Identifier) (*wire.ConsumerGroupDetails, error) {
	return find[wire.ConsumerGroupDetails](ctx, c, wire.GetConsumerGroup{Stream: stream, Topic: topic, Group: group}, wire.ErrConsumerGroupIdNotFound)
}

// GetConsumerGroups lists a topic's groups (code 601).
func (c *Client) GetConsumerGroups(ctx context.Context, stream, topic wire.Identifier) (wire.ConsumerGroups, error) {
	return fetchList[wire.ConsumerGroups](ctx, c, wire.GetConsumerGroups{Stream: stream, Topic: topic})
}

// CreateConsumerGroup creates a group (code 602).
func (c *Client) CreateConsumerGroup(ctx context.Context, stream, topic wire.Identifier, name string) (*wire.ConsumerGroupDetails, error) {
	return fetch[wire.ConsumerGroupDetails](ctx, c, wire.CreateConsumerGroup{Stream: stream, Topic: topic, Name: name})
}

// DeleteConsumerGroup deletes a group (code 603).
func (c *Client) DeleteConsumerGroup(ctx context.Context, stream, topic, group wire.Identifier) error {
	return c.invoke(ctx, wire.DeleteConsumerGroup{Stream: stream, Topic: topic, Group: group}, nil)
}

// JoinConsumerGroup makes this session a member of a group (code 604).
func (c *Client) JoinConsumerGroup(ctx context.Context, stream, topic, group wire.Identifier) error {
	return c.invoke(ctx, wire.JoinConsumerGroup{Stream: stream, Topic: topic, Group: group}, nil)
}

// LeaveConsumerGroup ends this session's membership (code 605).
func (c *Client) LeaveConsumerGroup(ctx context.Context, stream, topic, group wire.Identifier) error {
	c.mu.Lock()
	delete(c.groups, groupKey{stream, topic, group})
	c.mu.Unlock()
	return c.invoke(ctx, wire.LeaveConsumerGroup{Stream: stream, Topic: topic, Group: group}, nil)
}

// SyncConsumerGroup reads this member's generation and pollable partitions
// (code 606); wire.ErrConsumerGroupMemberNotFound when the session is not
// a member.
func (c *Client) SyncConsumerGroup(ctx context.Context, stream, topic, group wire.Identifier) (*wire.Assignment, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sync(ctx, groupKey{stream, topic, group})
}

// sync reads the assignment and refreshes the group cursor. Lock held.
func (c *Client) sync(ctx context.Context, key groupKey) (*wire.Assignment, error) {
	rep, err := c.run(ctx, wire.SyncConsumerGroup{Stream: key.stream, Topic: key.topic, Group: key.group})
	if err != nil {
		return nil, err
	}
	if len(rep.body) == 0 {
		delete(c.groups, key)
		return nil, wire.ErrConsumerGroupMemberNotFound
	}
	out := new(wire.Assignment)
	if err := decodeReply(wire.CodeSyncConsumerGroup, out, rep.body); err != nil {
		return nil, err
	}
	g := c.groups[key]
	if g == nil {
		g = &groupCursor{}
		c.groups[key] = g
	}
	g.generation, g.partitions = out.Generation, append(g.partitions[:0], out.Partitions...)
	return out, nil
}

// PollConsumerGroup polls the next partition of this member's assignment,
// round-robin (8.10): it syncs the assignment when it has none, and when the
// server answers the re-sync sentinel it syncs once and polls again. The
// session must have joined the group. A member with no partitions gets an
// empty result. The result owns its records (see PollMessages);
// PollConsumerGroupInto reuses memory.
func (c *Client) PollConsumerGroup(ctx context.Context, stream, topic, group wire.Identifier, strategy wire.PollingStrategy, count uint32, autoCommit bool) (*wire.PolledMessages, error) {
	p := new(Polled)
	if err := c.PollConsumerGroupInto(ctx, p, stream, topic, group, strategy, count, autoCommit); err != nil {
		return nil, err
	}
	return &p.PolledMessages, nil
}

// PollConsumerGroupInto is PollConsumerGroup into a reused dst, as
// PollMessagesInto.
func (c *Client) PollConsumerGroupInto(ctx context.Context, dst *Polled, stream, topic, group wire.Identifier, strategy wire.PollingStrategy, count uint32, autoCommit bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := groupKey{stream, topic, group}
	for attempt := 0; ; attempt++ {
		g := c.groups[key]
		if g == nil || attempt > 0 {
			if _, err := c.sync(ctx, key); err != nil {
				dst.PolledMessages = wire.PolledMessages{}
				return err
			}
			g = c.groups[key]
		}
		if len(g.partitions) == 0 {
			dst.PolledMessages = wire.PolledMessages{}
			return nil
		}
		partition := g.partitions[g.next%len(g.partitions)]
		g.next++
		err := c.poll(ctx, dst, wire.PollMessages{Consumer: wire.GroupConsumer(group), Stream: stream, Topic: topic,
			Partition: wire.Partition(partition), Strategy: strategy, Count: count, AutoCommit: autoCommit})
		if err != nil || !dst.Resync() || attempt > 0 {
			return err
		}
	}
}

// Raw requests (client-plane.md 6 "Raw requests").

// SendRaw sends payload under an arbitrary command code and returns the
// reply body (result section stripped by the reply's operation). A
// catalogue code that replicates travels under its own operation byte and
// needs a session; every other code, known or not (0 and vendor codes
// included), travels as NonReplicated with the code at 196..200 and the
// unconsumed request number. The login and logout codes 38, 39, 40, 44 and
// 45 are refused locally with InvalidCommand, like the Go SDK.
func (c *Client) SendRaw(ctx context.Context, code wire.CommandCode, payload []byte) ([]byte, error) {
	switch code {
	case wire.CodeLoginUser, wire.CodeLogoutUser, wire.CodeLoginRegister, wire.CodeLoginWithPersonalAccessToken, wire.CodeLoginRegisterWithPAT:
		return nil, fmt.Errorf("client: code %v cannot be sent raw: %w", code, wire.ErrInvalidCommand)
	}
	op := wire.OpNonReplicated
	if code.Replicated() {
		op = code.Operation()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	rep, err := c.exchange(ctx, call{code: code, op: op, buf: c.frame(&c.wbuf, rawBody(payload)), retry: true})
	if err != nil {
		return nil, err
	}
	return append([]byte(nil), rep.body...), nil
}

// rawBody is a payload sent as is.
type rawBody []byte

func (r rawBody) AppendTo(b []byte) []byte { return append(b, r...) }
