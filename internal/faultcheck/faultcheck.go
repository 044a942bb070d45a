// Package faultcheck is the workload and the checks of every fault test:
// a writer that sends tagged batches through the SDK and records which were
// acknowledged and when, a reader that takes one replica's copy of a
// partition, and the verdict that every acknowledged message is present
// exactly once, in order, on every replica.
//
// Each send (an "attempt") carries MessagesPerSend messages whose payloads
// start with attempt<<8 | index. A send that failed may or may not have
// committed (its reply was lost with a node), so it may appear at most
// once, whole; an acknowledged one must appear exactly once, whole, in
// acknowledgement order.
package faultcheck

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"time"

	"iggynode/client"
	"iggynode/wire"
)

// MessagesPerSend and PayloadSize shape every send of the workload.
const (
	MessagesPerSend = 20
	PayloadSize     = 200
)

// Batch returns the messages of one attempt and their payloads.
func Batch(attempt uint64) ([]wire.Message, [][]byte) {
	msgs := make([]wire.Message, 0, MessagesPerSend)
	payloads := make([][]byte, 0, MessagesPerSend)
	for j := range uint64(MessagesPerSend) {
		p := make([]byte, PayloadSize)
		binary.LittleEndian.PutUint64(p, attempt<<8|j)
		payloads = append(payloads, p)
		msgs = append(msgs, client.NewMessage(p))
	}
	return msgs, payloads
}

// Writer sends attempt after attempt to one partition until stopped.
type Writer struct {
	mu       sync.Mutex
	acked    map[uint64]bool
	order    []uint64
	ackTimes []time.Time
	failures int
	lastErr  error
	stop     chan struct{}
	done     chan struct{}
}

// StartWriter connects with opts (leader-following unless opts says
// otherwise) and sends to partition 0 of stream/topic every pause until
// Stop. A failed send is counted and retried as a new attempt.
func StartWriter(ctx context.Context, opts client.Options, stream, topic wire.Identifier, pause time.Duration) *Writer {
	w := &Writer{acked: map[uint64]bool{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		var c *client.Client
		defer func() {
			if c != nil {
				_ = c.Close()
			}
		}()
		for attempt := uint64(1); ; attempt++ {
			select {
			case <-w.stop:
				return
			case <-ctx.Done():
				return
			default:
			}
			var err error
			if c == nil {
				c, err = client.Connect(ctx, opts)
			}
			if err == nil {
				msgs, _ := Batch(attempt)
				_, err = c.SendMessages(ctx, stream, topic, wire.PartitionID(0), msgs)
			}
			now := time.Now()
			w.mu.Lock()
			if err != nil {
				w.failures++
				w.lastErr = err
			} else {
				w.acked[attempt] = true
				w.order = append(w.order, attempt)
				w.ackTimes = append(w.ackTimes, now)
			}
			w.mu.Unlock()
			if err != nil {
				time.Sleep(50 * time.Millisecond)
			} else if pause > 0 {
				time.Sleep(pause)
			}
		}
	}()
	return w
}

// Stop ends the workload and waits for the send in flight.
func (w *Writer) Stop() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
}

// Acked is the number of acknowledged sends so far.
func (w *Writer) Acked() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.order)
}

// WaitAcked waits until n sends are acknowledged, for at most within.
func (w *Writer) WaitAcked(ctx context.Context, n int, within time.Duration) error {
	deadline := time.Now().Add(within)
	for w.Acked() < n {
		if time.Now().After(deadline) {
			w.mu.Lock()
			defer w.mu.Unlock()
			return fmt.Errorf("only %d sends acknowledged after %v, waiting for %d (%d failed, last error: %v)",
				len(w.order), within, n, w.failures, w.lastErr)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

// History is what the writer saw: acknowledged attempts in order, with
// the time of each acknowledgement, and the number of failed sends.
type History struct {
	Order    []uint64
	Acked    map[uint64]bool
	AckTimes []time.Time
	Failures int
}

// History returns a copy of what the writer has seen so far.
func (w *Writer) History() History {
	w.mu.Lock()
	defer w.mu.Unlock()
	h := History{Order: append([]uint64(nil), w.order...), AckTimes: append([]time.Time(nil), w.ackTimes...),
		Acked: make(map[uint64]bool, len(w.acked)), Failures: w.failures}
	for k := range w.acked {
		h.Acked[k] = true
	}
	return h
}

// LongestGap is the longest time without an acknowledgement from since to
// until, counting the stretch from since to the first acknowledgement
// after it (the time the cluster did not serve writes).
func (h History) LongestGap(since, until time.Time) time.Duration {
	var gap time.Duration
	prev := since
	for _, t := range h.AckTimes {
		if t.Before(since) {
			continue
		}
		if t.After(until) {
			break
		}
		gap = max(gap, t.Sub(prev))
		prev = t
	}
	return max(gap, until.Sub(prev))
}

// FirstAckAfter is the time from since to the first acknowledgement after
// it, or -1 when there is none.
func (h History) FirstAckAfter(since time.Time) time.Duration {
	for _, t := range h.AckTimes {
		if t.After(since) {
			return t.Sub(since)
		}
	}
	return -1
}

// ReadPartition returns every payload of partition 0 of stream/topic as one
// node holds it, polled from offset 0 on a connection pinned to that node
// (opts.StayOnNode is forced). It checks that offsets are dense.
func ReadPartition(ctx context.Context, opts client.Options, stream, topic wire.Identifier) ([][]byte, error) {
	return ReadPartitionID(ctx, opts, stream, topic, 0)
}

// ReadPartitionID is ReadPartition for partition pid (a node outside the
// partition's replica set answers with what the member it forwards to
// holds).
func ReadPartitionID(ctx context.Context, opts client.Options, stream, topic wire.Identifier, pid uint32) ([][]byte, error) {
	opts.StayOnNode = true
	c, err := client.Connect(ctx, opts)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	var got [][]byte
	for off := uint64(0); ; {
		p, err := c.PollMessages(ctx, wire.SingleConsumer(wire.ID(1)), stream, topic, wire.Partition(pid),
			wire.OffsetStrategy(off), 1000, false)
		if err != nil {
			return nil, fmt.Errorf("poll at offset %d: %w", off, err)
		}
		msgs := client.Messages(p)
		if len(msgs) == 0 {
			return got, nil
		}
		for _, m := range msgs {
			if m.Offset != off {
				return nil, fmt.Errorf("offset %d where %d was expected", m.Offset, off)
			}
			got = append(got, append([]byte(nil), m.Payload...))
			off++
		}
	}
}

// HasOffset reports whether the node opts dials (pinned) holds the message
// at offset of partition 0: one cheap poll, for catch-up timing.
func HasOffset(ctx context.Context, c *client.Client, stream, topic wire.Identifier, offset uint64) bool {
	p, err := c.PollMessages(ctx, wire.SingleConsumer(wire.ID(1)), stream, topic, wire.Partition(0),
		wire.OffsetStrategy(offset), 1, false)
	if err != nil {
		return false
	}
	msgs := client.Messages(p)
	return len(msgs) == 1 && msgs[0].Offset == offset
}

// Verdict is the outcome of comparing the replicas' copies with the
// writer's history.
type Verdict struct {
	AckedSends    int      `json:"acknowledged_sends"`
	AckedMessages int      `json:"acknowledged_messages"`
	FailedSends   int      `json:"failed_sends"`
	StoredSends   int      `json:"stored_sends"` // acknowledged or not
	Lost          int      `json:"lost"`         // acknowledged sends missing
	Duplicates    int      `json:"duplicates"`   // sends stored more than once
	OutOfOrder    int      `json:"out_of_order"` // acknowledged sends stored out of acknowledgement order
	Problems      []string `json:"problems,omitempty"`
}

// OK reports a clean verdict.
func (v Verdict) OK() bool { return len(v.Problems) == 0 }

func (v *Verdict) problem(format string, args ...any) {
	if len(v.Problems) < 20 {
		v.Problems = append(v.Problems, fmt.Sprintf(format, args...))
	}
}

// Check compares every replica's copy (named by names) with h: the copies
// must be identical, every send whole and stored at most once, and every
// acknowledged send present in acknowledgement order.
func Check(h History, names []string, copies [][][]byte) Verdict {
	v := Verdict{AckedSends: len(h.Order), AckedMessages: len(h.Order) * MessagesPerSend, FailedSends: h.Failures}
	if len(copies) == 0 {
		v.problem("no replica was read")
		return v
	}
	ref := copies[0]
	for i := 1; i < len(copies); i++ {
		if len(copies[i]) != len(ref) {
			v.problem("%s holds %d messages, %s %d", names[i], len(copies[i]), names[0], len(ref))
			continue
		}
		for j := range ref {
			if string(copies[i][j]) != string(ref[j]) {
				v.problem("%s differs from %s at offset %d", names[i], names[0], j)
				break
			}
		}
	}
	seen := map[uint64]int{}
	var order []uint64
	for j := 0; j < len(ref); j += MessagesPerSend {
		attempt := binary.LittleEndian.Uint64(ref[j]) >> 8
		for k := range MessagesPerSend {
			if j+k >= len(ref) || len(ref[j+k]) < 8 || binary.LittleEndian.Uint64(ref[j+k]) != attempt<<8|uint64(k) {
				v.problem("offset %d: send %d is not whole", j+k, attempt)
				return v
			}
		}
		seen[attempt]++
		if seen[attempt] == 2 {
			v.Duplicates++
			v.problem("send %d stored twice", attempt)
		}
		if h.Acked[attempt] && seen[attempt] == 1 {
			order = append(order, attempt)
		}
	}
	v.StoredSends = len(seen)
	for _, a := range h.Order {
		if seen[a] == 0 {
			v.Lost++
		}
	}
	if v.Lost > 0 {
		v.problem("%d acknowledged sends missing", v.Lost)
	}
	if v.Lost == 0 {
		for i := range order {
			if order[i] != h.Order[i] {
				v.OutOfOrder++
			}
		}
		if v.OutOfOrder > 0 {
			v.problem("%d acknowledged sends stored out of order", v.OutOfOrder)
		}
	}
	return v
}
