package faults

// The workload's topic, its writers and the reading of its copies, by
// partition. A partition lives on the R nodes of its replica set
// (metadata/placement.go, issue 23), not on every node: a node outside
// the set holds none of its data and forwards its reads and writes to a
// member. So the copies compared are the members' (read over a client
// pinned to each member, which serves the poll from its own log), a
// non-member's pinned read (forwarded) must return the same messages,
// and its storage must hold no batch of the partition (storage.go).

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"sync"
	"time"

	"iggynode/client"
	"iggynode/internal/faultcheck"
	"iggynode/wire"
)

// Workload is an experiment's writer: faultcheck's on a topic of one
// partition, or one writer per partition (spreadWriter).
type Workload interface {
	// Acked is the number of sends acknowledged so far, all partitions.
	Acked() int
	// WaitAcked waits until n sends are acknowledged, for at most within.
	WaitAcked(ctx context.Context, n int, within time.Duration) error
	// Stop ends the workload and waits for the sends in flight.
	Stop()
	// Histories is what the writer of each partition saw, in the order
	// of workloadTopic.partitions.
	Histories() []faultcheck.History
}

// oneWriter is faultcheck's writer, which sends to the first partition.
type oneWriter struct{ *faultcheck.Writer }

func (w oneWriter) Histories() []faultcheck.History { return []faultcheck.History{w.History()} }

// spreadWriter sends to every partition of a topic at once: one
// goroutine and one leader-following connection per partition, each
// sending faultcheck's batches (attempts numbered per partition) with a
// pause after each acknowledged send, as faultcheck.Writer does on one.
type spreadWriter struct {
	mu      sync.Mutex
	hs      []faultcheck.History
	lastErr error
	stop    chan struct{}
	wg      sync.WaitGroup
}

func startSpreadWriter(ctx context.Context, opts client.Options, wl workloadTopic, pause time.Duration) *spreadWriter {
	w := &spreadWriter{hs: make([]faultcheck.History, len(wl.partitions)), stop: make(chan struct{})}
	for k, pid := range wl.partitions {
		w.hs[k].Acked = map[uint64]bool{}
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			var c *client.Client
			defer func() {
				if c != nil {
					_ = c.Close()
				}
			}()
			// Spread the logins and the first sends over one pause.
			time.Sleep(pause * time.Duration(k) / time.Duration(len(wl.partitions)))
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
					msgs, _ := faultcheck.Batch(attempt)
					_, err = c.SendMessages(ctx, wire.ID(wl.stream), wire.ID(wl.topic), wire.PartitionID(pid), msgs)
				}
				now := time.Now()
				w.mu.Lock()
				h := &w.hs[k]
				if err != nil {
					h.Failures++
					w.lastErr = fmt.Errorf("partition %d: %w", pid, err)
				} else {
					h.Acked[attempt] = true
					h.Order = append(h.Order, attempt)
					h.AckTimes = append(h.AckTimes, now)
				}
				w.mu.Unlock()
				if err != nil {
					time.Sleep(50 * time.Millisecond)
				} else {
					time.Sleep(pause)
				}
			}
		}()
	}
	return w
}

func (w *spreadWriter) Acked() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, h := range w.hs {
		n += len(h.Order)
	}
	return n
}

func (w *spreadWriter) WaitAcked(ctx context.Context, n int, within time.Duration) error {
	deadline := time.Now().Add(within)
	for w.Acked() < n {
		if time.Now().After(deadline) {
			w.mu.Lock()
			defer w.mu.Unlock()
			failed := 0
			for _, h := range w.hs {
				failed += h.Failures
			}
			return fmt.Errorf("only %d sends acknowledged after %v, waiting for %d (%d failed, last error: %v)",
				w.ackedLocked(), within, n, failed, w.lastErr)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

func (w *spreadWriter) ackedLocked() int {
	n := 0
	for _, h := range w.hs {
		n += len(h.Order)
	}
	return n
}

func (w *spreadWriter) Stop() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	w.wg.Wait()
}

func (w *spreadWriter) Histories() []faultcheck.History {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]faultcheck.History, len(w.hs))
	for i, h := range w.hs {
		c := faultcheck.History{Order: slices.Clone(h.Order), AckTimes: slices.Clone(h.AckTimes), Failures: h.Failures,
			Acked: make(map[uint64]bool, len(h.Acked))}
		for k := range h.Acked {
			c.Acked[k] = true
		}
		out[i] = c
	}
	return out
}

// merged is one history of every partition's acknowledgements, for the
// figures over time (the longest stretch without a write, rates); its
// Order is empty: the order of acknowledgements is per partition.
func merged(hs []faultcheck.History) faultcheck.History {
	var m faultcheck.History
	for _, h := range hs {
		m.AckTimes = append(m.AckTimes, h.AckTimes...)
		m.Failures += h.Failures
	}
	slices.SortFunc(m.AckTimes, func(a, b time.Time) int { return a.Compare(b) })
	return m
}

// workloadTopic is the experiment's topic: its ids and its partitions'.
type workloadTopic struct {
	stream, topic uint32
	partitions    []uint32
}

// group is partition pid's consensus group id.
func (wl workloadTopic) group(pid uint32) uint64 {
	g, _ := wire.PartitionGroup(wl.stream, wl.topic, pid)
	return g
}

// placementOf reads the workload's partitions' placement from n's
// ClusterStatus, by partition id (empty: the cluster places nothing,
// every partition lives on every member).
func placementOf(ctx context.Context, c *Cluster, n Node, wl workloadTopic) (map[uint32]wire.ClusterStatusPartition, error) {
	st, err := statusOf(ctx, c, n)
	if err != nil {
		return nil, fmt.Errorf("placement from %s: %w", n.Service, err)
	}
	return workloadPartitions(st, wl), nil
}

// placementAny reads the placement from the first member that answers,
// again for up to Failover (a node just healed may not answer yet; the
// placement is metadata state, the same on all: sameRoster checks it).
func placementAny(ctx context.Context, c *Cluster, wl workloadTopic) (map[uint32]wire.ClusterStatusPartition, error) {
	deadline := time.Now().Add(Failover)
	for {
		var errs []error
		for _, n := range c.Nodes {
			place, err := placementOf(ctx, c, n, wl)
			if err == nil {
				return place, nil
			}
			errs = append(errs, err)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, errors.Join(errs...)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// workloadPartitions picks the workload topic's entries of a status.
func workloadPartitions(st wire.ClusterStatusReply, wl workloadTopic) map[uint32]wire.ClusterStatusPartition {
	out := map[uint32]wire.ClusterStatusPartition{}
	for _, p := range st.Partitions {
		if p.Stream == wl.stream && p.Topic == wl.topic {
			out[p.Partition] = p
		}
	}
	return out
}

// members are the indexes in c.Nodes of partition pid's replica set
// (every node when the partition is not placed).
func members(c *Cluster, place map[uint32]wire.ClusterStatusPartition, pid uint32) (in, out []int) {
	p, placed := place[pid]
	for i, n := range c.Nodes {
		if !placed || p.Replicas&(1<<n.ID) != 0 {
			in = append(in, i)
		} else {
			out = append(out, i)
		}
	}
	return in, out
}

// partitionCopies is one partition's copies: each member's, read on a
// client pinned to it, and each non-member's forwarded read.
type partitionCopies struct {
	pid       uint32
	names     []string // members
	copies    [][][]byte
	forwarded []string // non-members
	fwCopies  [][][]byte
	fwErrs    []error
}

// readAll reads every partition's copy on each member of its replica set,
// waiting (up to Failover for all) until each member holds at least as many
// messages as the most complete one, so a replica still catching up is
// not read half way; then it reads each partition once through each node
// outside the set, which forwards the polls to a member.
func readAll(ctx context.Context, c *Cluster, wl workloadTopic, hs []faultcheck.History,
	place map[uint32]wire.ClusterStatusPartition) []partitionCopies {
	out := make([]partitionCopies, len(wl.partitions))
	deadline := time.Now().Add(Failover) // for all of them
	for k, pid := range wl.partitions {
		in, outside := members(c, place, pid)
		pc := partitionCopies{pid: pid}
		for _, i := range in {
			pc.names = append(pc.names, c.Nodes[i].Service)
		}
		pc.copies = make([][][]byte, len(in))
		for {
			most := len(hs[k].Order) * faultcheck.MessagesPerSend
			var errs []error
			for j, i := range in {
				got, err := readPartition(ctx, c.Options(i), wl, pid)
				if err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", c.Nodes[i].Service, err))
				}
				pc.copies[j] = got
				most = max(most, len(got))
			}
			complete := len(errs) == 0
			for _, cp := range pc.copies {
				complete = complete && len(cp) == most
			}
			if complete || time.Now().After(deadline) || ctx.Err() != nil {
				for _, err := range errs {
					c.Logf("read partition %d: %v", pid, err)
				}
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
		for _, i := range outside {
			got, err := readPartition(ctx, c.Options(i), wl, pid)
			pc.forwarded = append(pc.forwarded, c.Nodes[i].Service)
			pc.fwCopies = append(pc.fwCopies, got)
			pc.fwErrs = append(pc.fwErrs, err)
		}
		out[k] = pc
	}
	return out
}

// readPartition returns every payload of partition pid as the node opts
// dials holds it (or, outside the partition's replica set, as the member
// it forwards to does).
func readPartition(ctx context.Context, opts client.Options, wl workloadTopic, pid uint32) ([][]byte, error) {
	return faultcheck.ReadPartitionID(ctx, opts, wire.ID(wl.stream), wire.ID(wl.topic), pid)
}

// verdict checks every partition's member copies against its writer's
// history (faultcheck.Check: identical, whole, acknowledged sends present
// once in order) and each forwarded read against the members' copy, and
// sums the partitions' figures.
func verdict(hs []faultcheck.History, pcs []partitionCopies) faultcheck.Verdict {
	var v faultcheck.Verdict
	many := len(pcs) > 1
	for k, pc := range pcs {
		pv := faultcheck.Check(hs[k], pc.names, pc.copies)
		v.AckedSends += pv.AckedSends
		v.AckedMessages += pv.AckedMessages
		v.FailedSends += pv.FailedSends
		v.StoredSends += pv.StoredSends
		v.Lost += pv.Lost
		v.Duplicates += pv.Duplicates
		v.OutOfOrder += pv.OutOfOrder
		for _, p := range pv.Problems {
			if many {
				p = fmt.Sprintf("partition %d: %s", pc.pid, p)
			}
			v.Problems = append(v.Problems, p)
		}
		if pv.Duplicates > 0 && len(pc.copies) > 0 {
			for _, d := range duplicates(hs[k], pc.copies[0]) {
				v.Problems = append(v.Problems, fmt.Sprintf("partition %d: %s", pc.pid, d))
			}
		}
		for j, fw := range pc.forwarded {
			switch {
			case pc.fwErrs[j] != nil:
				v.Problems = append(v.Problems, fmt.Sprintf("partition %d: %s (outside its replica set %v) does not forward its reads: %v",
					pc.pid, fw, pc.names, pc.fwErrs[j]))
			case len(pc.copies) > 0 && !sameCopy(pc.fwCopies[j], pc.copies[0]):
				v.Problems = append(v.Problems, fmt.Sprintf("partition %d: a read through %s (forwarded) returns %d messages, %s holds %d",
					pc.pid, fw, len(pc.fwCopies[j]), pc.names[0], len(pc.copies[0])))
			}
		}
	}
	if len(v.Problems) > 20 {
		v.Problems = append(v.Problems[:20], fmt.Sprintf("... and %d more problems", len(v.Problems)-20))
	}
	return v
}

// duplicates describes each send stored more than once in copy: the
// offsets of its copies and when its writer saw it acknowledged, to find
// it in the nodes' logs.
func duplicates(h faultcheck.History, copy [][]byte) []string {
	at := map[uint64][]int{}
	for j := 0; j+faultcheck.MessagesPerSend <= len(copy); j += faultcheck.MessagesPerSend {
		if len(copy[j]) >= 8 {
			a := binary.LittleEndian.Uint64(copy[j]) >> 8
			at[a] = append(at[a], j)
		}
	}
	var out []string
	for a, offs := range at {
		if len(offs) < 2 {
			continue
		}
		acked := "not acknowledged"
		if k := slices.Index(h.Order, a); k >= 0 {
			acked = "acknowledged at " + h.AckTimes[k].UTC().Format("15:04:05.000")
		}
		out = append(out, fmt.Sprintf("send %d stored at offsets %v, %s", a, offs, acked))
	}
	slices.Sort(out)
	return out
}

func sameCopy(a, b [][]byte) bool {
	return slices.EqualFunc(a, b, func(x, y []byte) bool { return string(x) == string(y) })
}

// replicaFigures are each node's share: the partitions it holds a
// replica of, and their messages.
func replicaFigures(c *Cluster, pcs []partitionCopies) []ReplicaFigure {
	out := make([]ReplicaFigure, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i].Node = n.Service
	}
	for _, pc := range pcs {
		for j, name := range pc.names {
			if i := slices.IndexFunc(c.Nodes, func(n Node) bool { return n.Service == name }); i >= 0 {
				out[i].Partitions++
				out[i].Messages += len(pc.copies[j])
			}
		}
	}
	return out
}

// popcount is the number of ids in a roster bitmask.
func popcount(m uint32) int { return bits.OnesCount32(m) }
