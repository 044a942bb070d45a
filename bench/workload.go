package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"iggynode/client"
	"iggynode/wire"
)

// quota is the balanced-consumer-group's shared message count: consumers
// claim a poll's count from it before polling and give back what the poll
// did not return, so together they read exactly total messages.
type quota struct {
	total uint64
	left  atomic.Int64 // not yet claimed
	read  atomic.Uint64
}

// claim takes up to n messages of the unclaimed quota; 0 when all is
// claimed (by polls still in flight, or read).
func (q *quota) claim(n uint64) uint64 {
	for {
		left := q.left.Load()
		if left <= 0 {
			return 0
		}
		take := min(uint64(left), n)
		if q.left.CompareAndSwap(left, left-int64(take)) {
			return take
		}
	}
}

// settle records that a claim of claimed messages returned got.
func (q *quota) settle(claimed, got uint64) {
	q.read.Add(got)
	if got < claimed {
		q.left.Add(int64(claimed - got))
	}
}

func (q *quota) done() bool { return q.read.Load() >= q.total }

// consumeGroup joins the consumer group and polls it (Next strategy, auto
// commit) until the group has read Consumers*BatchCount*MessagesPerBatch
// messages together. A poll that returns nothing, or finds the quota all
// claimed by other members' polls in flight, pauses and is not measured.
func (a *actor) consumeGroup(ctx context.Context) error {
	stream, topic, group := wire.ID(a.target.stream), wire.ID(a.target.topic), wire.ID(a.target.group)
	if err := a.client.JoinConsumerGroup(ctx, stream, topic, group); err != nil {
		return fmt.Errorf("join consumer group %d: %w", a.target.group, err)
	}
	perPoll := uint64(a.cfg.MessagesPerBatch)
	var polled client.Polled // reused: the zero-copy poll
	for warmEnd := time.Now().Add(a.cfg.Warmup); time.Now().Before(warmEnd); {
		// Offset 0 without commit: the group's offsets do not move.
		if err := a.client.PollConsumerGroupInto(ctx, &polled, stream, topic, group, wire.OffsetStrategy(0), uint32(perPoll), false); err != nil {
			return fmt.Errorf("warmup poll: %w", err)
		}
	}
	a.start = time.Now()
	for !a.shared.done() {
		claimed := a.shared.claim(perPoll)
		if claimed == 0 {
			if err := pause(ctx, emptyPollPause); err != nil {
				return err
			}
			continue
		}
		asked := time.Now()
		err := a.client.PollConsumerGroupInto(ctx, &polled, stream, topic, group, wire.NextStrategy(), uint32(claimed), true)
		if err != nil {
			a.shared.settle(claimed, 0)
			return fmt.Errorf("group poll: %w", err)
		}
		done := time.Now()
		n, bytes, _ := tally(&polled.PolledMessages)
		n = min(n, claimed) // a server returns at most count; do not trust more
		a.shared.settle(claimed, n)
		if n == 0 {
			if err := a.emptyPoll(ctx); err != nil {
				return err
			}
			continue
		}
		a.record(done, done.Sub(asked), n, bytes)
	}
	a.end = time.Now()
	return nil
}

// produceConsume is the end-to-end workload: BatchCount times, send a batch
// to the actor's partition and poll it back from the confirmed base offset
// (Offset strategy) until every message of it has been read. The latency
// is from the send to the poll that completes the batch, after the rate
// limiter let the batch go (its wait is pacing, not latency); the figures
// count the messages read back. Warmup runs the same cycle unmeasured.
func (a *actor) produceConsume(ctx context.Context) error {
	msgs, restamp := a.batch()
	consumer := wire.SingleConsumer(wire.ID(uint32(a.index)))
	stream, topic := wire.ID(a.target.stream), wire.ID(a.target.topic)
	partitioning, partition := wire.PartitionID(a.target.partition), wire.Partition(a.target.partition)
	batchBytes := a.cfg.MessagesPerBatch * a.cfg.MessageSize
	var polled client.Polled // reused: the zero-copy poll
	cycle := func() (messages, bytes uint64, took time.Duration, err error) {
		if err := a.limit(ctx, batchBytes); err != nil {
			return 0, 0, 0, err
		}
		restamp()
		sent := time.Now()
		confirmations, err := a.client.SendMessages(ctx, stream, topic, partitioning, msgs)
		if err != nil {
			return 0, 0, 0, fmt.Errorf("send: %w", err)
		}
		if len(confirmations) == 0 {
			return 0, 0, 0, errors.New("send: no confirmation to read the base offset from")
		}
		offset, want := confirmations[0].BaseOffset, uint64(len(msgs))
		for messages < want {
			err := a.client.PollMessagesInto(ctx, &polled, consumer, stream, topic, partition, wire.OffsetStrategy(offset), uint32(want-messages), false)
			if err != nil {
				return 0, 0, 0, fmt.Errorf("poll at offset %d: %w", offset, err)
			}
			n, b, last := tally(&polled.PolledMessages)
			if n == 0 {
				if err := a.emptyPoll(ctx); err != nil {
					return 0, 0, 0, err
				}
				continue
			}
			messages, bytes, offset = messages+n, bytes+b, last+1
		}
		return messages, bytes, time.Since(sent), nil
	}
	for warmEnd := time.Now().Add(a.cfg.Warmup); time.Now().Before(warmEnd); {
		if _, _, _, err := cycle(); err != nil {
			return fmt.Errorf("warmup: %w", err)
		}
	}
	a.emptyPolls = 0
	a.start = time.Now()
	for range a.cfg.BatchCount {
		n, bytes, took, err := cycle()
		if err != nil {
			return err
		}
		a.record(time.Now(), took, n, bytes)
	}
	a.end = time.Now()
	return nil
}

// produceConsumeGroup is the end-to-end consumer-group workload: BatchCount
// times, send a batch Balanced to the shared topic and poll the group the
// actors share (Next, auto-commit); then poll on until the group has read
// every message the actors sent (the shared quota), wherever it landed.
// Each non-empty poll records the age of its oldest message: the reply's
// time minus that message's origin timestamp, stamped when the rate
// limiter let its batch go. It has no warmup: the group's polls would read
// the warmup's messages as measured ones.
func (a *actor) produceConsumeGroup(ctx context.Context) error {
	msgs, restamp := a.batch()
	stream, topic, group := wire.ID(a.target.stream), wire.ID(a.target.topic), wire.ID(a.target.group)
	if err := a.client.JoinConsumerGroup(ctx, stream, topic, group); err != nil {
		return fmt.Errorf("join consumer group %d: %w", a.target.group, err)
	}
	batchBytes := a.cfg.MessagesPerBatch * a.cfg.MessageSize
	perPoll := uint64(a.cfg.MessagesPerBatch)
	var polled client.Polled // reused: the zero-copy poll
	a.start = time.Now()
	for sent := 0; sent < a.cfg.BatchCount || !a.shared.done(); {
		sending := sent < a.cfg.BatchCount
		if sending {
			if err := a.limit(ctx, batchBytes); err != nil {
				return err
			}
			restamp()
			if _, err := a.client.SendMessages(ctx, stream, topic, wire.Balanced(), msgs); err != nil {
				return fmt.Errorf("send: %w", err)
			}
			sent++
		}
		claimed := a.shared.claim(perPoll)
		if claimed == 0 {
			if !sending {
				if err := pause(ctx, emptyPollPause); err != nil {
					return err
				}
			}
			continue
		}
		err := a.client.PollConsumerGroupInto(ctx, &polled, stream, topic, group, wire.NextStrategy(), uint32(claimed), true)
		if err != nil {
			a.shared.settle(claimed, 0)
			return fmt.Errorf("group poll: %w", err)
		}
		done := time.Now()
		n, bytes, oldestUs := tallyOldest(&polled.PolledMessages, claimed)
		a.shared.settle(claimed, n)
		if n == 0 {
			if !sending {
				if err := a.emptyPoll(ctx); err != nil {
					return err
				}
			}
			continue
		}
		a.record(done, max(done.Sub(time.UnixMicro(int64(oldestUs))), 0), n, bytes)
	}
	a.end = time.Now()
	return nil
}

// tallyOldest counts at most limit messages of a poll and their payload
// bytes, and finds the earliest origin timestamp among them.
func tallyOldest(p *wire.PolledMessages, limit uint64) (messages, payloadBytes, oldestUs uint64) {
	oldestUs = math.MaxUint64
	for it := p.Messages(); messages < limit; {
		m, ok := it.Next()
		if !ok {
			break
		}
		messages++
		payloadBytes += uint64(len(m.Payload))
		oldestUs = min(oldestUs, m.OriginTimestamp)
	}
	if messages == 0 {
		oldestUs = 0
	}
	return messages, payloadBytes, oldestUs
}
