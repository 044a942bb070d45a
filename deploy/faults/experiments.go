package faults

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"iggynode/client"
	"iggynode/internal/faultcheck"
	"iggynode/wire"
)

// Experiment is one fault: Inject breaks the cluster and repairs it,
// calling r.Fault just before breaking and r.Heal just after repairing.
type Experiment struct {
	Name        string
	Description string
	Inject      func(ctx context.Context, r *Run) error
	// Partitions is the workload topic's partition count (0: one,
	// written by faultcheck's writer; more: one writer per partition).
	Partitions int
	// Timeout bounds the whole experiment in TestExperiments (0: 4
	// minutes); cmd/faults bounds each by its --timeout (5 minutes).
	Timeout time.Duration
	// Pending names known node bugs that make the experiment fail; its
	// report says FAILED all the same, but TestExperiments (CI) skips it
	// instead of failing while no acknowledged write is lost and none is
	// stored out of order. Empty it once they are fixed.
	Pending string
}

// Failover is how long an experiment waits for the cluster to serve
// writes again after a fault: the spec's heartbeat timeout (5 s) plus a
// view change, with room for a loaded machine.
const Failover = 60 * time.Second

// Experiments are the fault experiments of the deploy issue, in order,
// then the reconfiguration experiments of issue 22 (reconfig.go) and the
// rebalance of issue 23 (rebalance.go).
var Experiments = append([]Experiment{
	{Name: "kill-primary", Description: "SIGKILL the leader's container under load, wait for a new leader to take writes, start it again on its volume",
		Inject: leaderOut((*Cluster).Kill, (*Cluster).Start)},
	{Name: "pause-primary", Description: "docker pause the leader past the heartbeat timeout (5 s): the others elect a new leader that takes writes; then unpause it",
		Inject: leaderOut((*Cluster).Pause, (*Cluster).Unpause)},
	{Name: "partition-primary", Description: "disconnect the leader from the compose network (peers and clients) until another leader takes writes, then reconnect it",
		Inject: leaderOut((*Cluster).Disconnect, (*Cluster).Connect)},
	{Name: "restart-all", Description: "restart every container (SIGTERM, SIGKILL after 5 s) under load; the cluster recovers from its volumes",
		Inject: func(ctx context.Context, r *Run) error {
			r.Target(0, 1, 2)
			r.Fault()
			err := r.C.RestartAll(ctx)
			r.Heal()
			if err == nil {
				if _, err = r.C.WaitLeader(ctx, Failover, nil); err == nil {
					r.elected = time.Now()
				}
			}
			return err
		}},
	{Name: "wipe-backup", Description: "remove a follower's container and volume under load and start it empty; it catches up from the others",
		Inject: func(ctx context.Context, r *Run) error {
			victim := (r.Leader + 1) % len(r.C.Nodes)
			r.Target(victim)
			r.Fault()
			err := r.C.Wipe(ctx, victim)
			r.Heal()
			return err
		}},
}, append(reconfigExperiments, rebalanceExperiment)...)

// leaderOut takes the leader out with cut, waits until the others elect
// another that takes writes, and brings it back with mend (always, so a
// failed experiment leaves no container paused or cut off).
func leaderOut(cut, mend func(*Cluster, context.Context, int) error) func(context.Context, *Run) error {
	return func(ctx context.Context, r *Run) error {
		r.Target(r.Leader)
		r.Fault()
		err := cut(r.C, ctx, r.Leader)
		if err == nil {
			err = r.WaitFailover(ctx)
		}
		if mendErr := mend(r.C, ctx, r.Leader); err == nil {
			err = mendErr
		}
		r.Heal()
		return err
	}
}

// Find returns the experiment called name.
func Find(name string) (Experiment, bool) {
	for _, e := range Experiments {
		if e.Name == name {
			return e, true
		}
	}
	return Experiment{}, false
}

// Millis is a duration reported in milliseconds.
type Millis time.Duration

// MarshalJSON writes milliseconds, or null for a figure never reached or
// not measured (negative).
func (m Millis) MarshalJSON() ([]byte, error) {
	if m < 0 {
		return []byte("null"), nil
	}
	return json.Marshal(float64(time.Duration(m).Microseconds()) / 1000)
}

func (m Millis) String() string {
	if m < 0 {
		return "never"
	}
	return time.Duration(m).Round(time.Millisecond).String()
}

// ReplicaFigure is one node's state at the end of an experiment: the
// workload partitions it holds a replica of, their messages (read on the
// node) and the bytes of their batch files in its storage.
type ReplicaFigure struct {
	Node        string `json:"node"`
	Partitions  int    `json:"partitions"`
	Messages    int    `json:"messages"`
	StoredBytes int64  `json:"stored_bytes"`
	// StaleBytes are batch bytes it keeps of partitions it is no longer a
	// replica of (storage.go: not dropped yet).
	StaleBytes int64 `json:"stale_bytes"`
}

// PendingSkip reports whether a failed experiment's failure may be its
// known node bugs (Experiment.Pending): the safety checks held (writes
// were acknowledged, none lost, none out of order).
func (r *Report) PendingSkip() bool {
	return !r.Passed && r.Pending != "" && r.AckedSends > 0 && r.Lost == 0 && r.OutOfOrder == 0
}

// Report is the outcome and the figures of one experiment.
type Report struct {
	Experiment    string    `json:"experiment"`
	Description   string    `json:"description"`
	Started       time.Time `json:"started"`
	Duration      Millis    `json:"duration_ms"`
	LeaderAtStart string    `json:"leader_at_start"`
	LeaderAtEnd   string    `json:"leader_at_end"`
	Targets       []string  `json:"targets"`
	Pending       string    `json:"pending,omitempty"`
	// Partitions is the workload topic's partition count.
	Partitions int `json:"partitions"`
	faultcheck.Verdict
	// TimeWithoutLeader is the longest stretch without an acknowledged
	// write from the fault until the end of the workload.
	TimeWithoutLeader Millis `json:"time_without_leader_ms"`
	// LongestPartitionGap is, with more than one partition, the longest
	// such stretch on any one partition (a partition whose group moves
	// may stall while the others take writes), and which.
	LongestPartitionGap Millis `json:"longest_partition_gap_ms,omitempty"`
	GapPartition        uint32 `json:"gap_partition,omitempty"`
	// LeaderElected is the time from the fault until the nodes the fault
	// spared named one leader (the metadata group's, in their rosters;
	// polled, each poll a login per node, so it trails by up to a second;
	// -1: not measured, as when the leader was not the target).
	LeaderElected Millis `json:"leader_elected_ms"`
	// FirstAckAfterFault is the time from the fault to the first write
	// acknowledged after it.
	FirstAckAfterFault Millis `json:"first_ack_after_fault_ms"`
	// TimeToCatchUp is the time from the heal until every target holds
	// every message acknowledged before the heal (-1: never seen).
	TimeToCatchUp     Millis `json:"time_to_catch_up_ms"`
	ServesAgain       bool   `json:"serves_again"`
	MetadataIdentical bool   `json:"metadata_identical"`
	// StorageIdentical: the members of each partition's replica set store
	// the same batch bytes, the other nodes none (storage.go).
	StorageIdentical bool `json:"storage_identical"`
	// Roster is the cluster's roster at the end (ClusterStatus), the same
	// on every member, whose voters are the members read above.
	Roster          string `json:"roster_at_end"`
	RosterIdentical bool   `json:"roster_identical"`
	// Changes are the cluster changes a reconfiguration experiment made.
	Changes []Change `json:"changes,omitempty"`
	// Rebalance is how the partitions moved after a change (rebalance.go).
	Rebalance *Rebalance      `json:"rebalance,omitempty"`
	Replicas  []ReplicaFigure `json:"replicas"`
	Passed    bool            `json:"passed"`
	Errors    []string        `json:"errors,omitempty"`
	Log       []string        `json:"log"`
	// NodeLogs is every node's log of the run (docker-compose logs), kept
	// beside the report as <experiment>.nodes.log.
	NodeLogs string `json:"-"`
}

// Run is the state of one experiment in progress, handed to Inject.
type Run struct {
	C      *Cluster
	W      Workload
	Leader int
	// wl is the workload's topic.
	wl          workloadTopic
	targets     []int
	faultAt     time.Time
	healAt      time.Time
	ackedAtHeal int
	// elected is when the nodes (those the fault spared) first agreed on a
	// leader after the fault, where the experiment waits for one.
	elected time.Time
	// changes and removedAt are a reconfiguration's steps and when each
	// removed node left the roster.
	changes   []Change
	removedAt map[string]time.Time
	rebalance *Rebalance
	// after are checks of what the fault set off that take their time
	// (a removed node's exit): they run once the cluster serves again,
	// under the workload, not inside Inject, which would delay the
	// catch-up sampling that starts at its return.
	after []func(context.Context) error
}

// After adds a check to run once the cluster serves again after the heal.
func (r *Run) After(check func(context.Context) error) { r.after = append(r.after, check) }

// Target names the nodes the fault is aimed at (for catch-up timing),
// by index in C.Nodes; a negative index (not a member) is left out.
func (r *Run) Target(nodes ...int) {
	r.targets = slices.DeleteFunc(nodes, func(i int) bool { return i < 0 })
}

// Fault marks the moment the fault is injected.
func (r *Run) Fault() {
	r.faultAt = time.Now()
	r.C.Logf("fault injected (%d sends acknowledged)", r.W.Acked())
}

// Heal marks the moment the fault is repaired.
func (r *Run) Heal() {
	r.healAt, r.ackedAtHeal = time.Now(), r.W.Acked()
	r.C.Logf("fault healed (%d sends acknowledged)", r.ackedAtHeal)
}

// WaitFailover waits until the nodes other than the old leader agree on
// a new one, and then for 30 writes acknowledged after that: the cluster
// serves without the node the fault took away.
func (r *Run) WaitFailover(ctx context.Context) error {
	skip := map[int]bool{r.Leader: true}
	deadline := time.Now().Add(Failover)
	for {
		l, err := r.C.WaitLeader(ctx, time.Until(deadline), skip)
		if err != nil {
			return fmt.Errorf("failover: %w", err)
		}
		if l != r.Leader {
			r.elected = time.Now()
			r.C.Logf("new leader %s", r.C.Nodes[l].Service)
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("failover: the others still follow %s after %v", r.C.Nodes[l].Service, Failover)
		}
		time.Sleep(250 * time.Millisecond)
	}
	return r.W.WaitAcked(ctx, r.W.Acked()+30, time.Until(deadline))
}

// Setup names of the experiment's stream and topic.
const (
	streamName = "faults"
	topicName  = "workload"
)

// RunExperiment starts the cluster fresh, runs the workload, injects e,
// checks the outcome and tears the cluster down; it always returns a
// report, Passed only when every check held.
func RunExperiment(ctx context.Context, c *Cluster, e Experiment) *Report {
	rep := &Report{Experiment: e.Name, Description: e.Description, Started: time.Now(), TimeToCatchUp: -1, FirstAckAfterFault: -1,
		LeaderElected: -1, Pending: e.Pending}
	var logMu sync.Mutex
	userLog := c.Logf
	c.Logf = func(format string, args ...any) {
		line := fmt.Sprintf("%6.1fs ", time.Since(rep.Started).Seconds()) + fmt.Sprintf(format, args...)
		logMu.Lock()
		rep.Log = append(rep.Log, line)
		logMu.Unlock()
		if userLog != nil {
			userLog("%s", line)
		}
	}
	defer func() { c.Logf = userLog }()
	fail := func(err error) {
		rep.Errors = append(rep.Errors, err.Error())
		c.Logf("error: %v", err)
	}
	defer func() {
		rep.Duration = Millis(time.Since(rep.Started))
		rep.Passed = len(rep.Errors) == 0 && rep.Verdict.OK() && rep.ServesAgain && rep.MetadataIdentical && rep.RosterIdentical &&
			rep.StorageIdentical && rep.AckedSends > 0
		rep.NodeLogs = c.Logs(context.Background())
		if err := c.Down(context.Background()); err != nil {
			rep.Log = append(rep.Log, "down: "+err.Error())
		}
	}()

	leader, err := c.Up(ctx)
	if err != nil {
		fail(err)
		return rep
	}
	rep.LeaderAtStart = c.Nodes[leader].Service
	c.Logf("leader %s", rep.LeaderAtStart)
	wl, err := createWorkloadTopic(ctx, c, max(e.Partitions, 1))
	if err != nil {
		fail(err)
		return rep
	}
	rep.Partitions = len(wl.partitions)
	var w Workload
	if len(wl.partitions) == 1 {
		w = oneWriter{faultcheck.StartWriter(ctx, c.Options(leader), wire.Named(streamName), wire.Named(topicName), 2*time.Millisecond)}
	} else {
		w = startSpreadWriter(ctx, c.Options(leader), wl, SpreadPause)
		c.Logf("%d writers, one per partition, each pausing %v after an acknowledged send", len(wl.partitions), SpreadPause)
	}
	defer w.Stop()
	r := &Run{C: c, W: w, Leader: leader, wl: wl, removedAt: map[string]time.Time{}}
	if err := w.WaitAcked(ctx, 100, Failover); err != nil {
		fail(fmt.Errorf("before the fault: %w", err))
		return rep
	}
	if err := e.Inject(ctx, r); err != nil {
		fail(err)
	}
	rep.Changes = r.changes
	if r.healAt.IsZero() {
		r.Heal()
	}
	// A node outside the first partition's replica set holds none of it:
	// nothing to catch up (the catch-up is timed on that partition).
	if place, err := placementAny(ctx, c, wl); err == nil {
		in, _ := members(c, place, wl.partitions[0])
		kept := slices.DeleteFunc(slices.Clone(r.targets), func(t int) bool { return !slices.Contains(in, t) })
		if len(kept) < len(r.targets) {
			c.Logf("catch-up timed on %d of the %d targets: the others are outside partition %d's replica set %s",
				len(kept), len(r.targets), wl.partitions[0], ids(place[wl.partitions[0]].Replicas))
		}
		r.targets = kept
	} else {
		c.Logf("catch-up timed on every target: no placement read (%v)", err)
	}
	for _, t := range r.targets {
		rep.Targets = append(rep.Targets, c.Nodes[t].Service)
	}
	catchUp := watchCatchUp(ctx, c, r.targets)

	// The cluster serves again: 50 more writes after the heal.
	if err := w.WaitAcked(ctx, r.ackedAtHeal+50, Failover); err != nil {
		fail(fmt.Errorf("after the heal: %w", err))
	} else {
		rep.ServesAgain = true
	}
	for _, check := range r.after {
		if err := check(ctx); err != nil {
			fail(err)
		}
	}
	rep.Rebalance = r.rebalance
	w.Stop()
	end := time.Now()
	hs := w.Histories()
	h := merged(hs)
	if len(h.AckTimes) > 0 {
		c.Logf("write rate: %s before the fault, %s from the fault to the heal, %s after the heal",
			ackRate(h, h.AckTimes[0], r.faultAt), ackRate(h, r.faultAt, r.healAt), ackRate(h, r.healAt, end))
	}
	rep.TimeWithoutLeader = Millis(h.LongestGap(r.faultAt, end))
	if len(hs) > 1 {
		for k, ph := range hs {
			if g := Millis(ph.LongestGap(r.faultAt, end)); g > rep.LongestPartitionGap {
				rep.LongestPartitionGap, rep.GapPartition = g, wl.partitions[k]
			}
		}
	}
	rep.FirstAckAfterFault = Millis(h.FirstAckAfter(r.faultAt))
	if !r.elected.IsZero() {
		rep.LeaderElected = Millis(r.elected.Sub(r.faultAt))
	}
	if l, err := c.WaitLeader(ctx, Failover, nil); err == nil {
		rep.LeaderAtEnd = c.Nodes[l].Service
	} else {
		fail(fmt.Errorf("at the end: %w", err))
	}

	// The placement at the end names the replica sets the copies are
	// read on (sameRoster checks that every member reports the same).
	place, err := placementAny(ctx, c, wl)
	if err != nil {
		fail(err)
	}
	pcs := readAll(ctx, c, wl, hs, place)
	rep.Verdict = verdict(hs, pcs)
	rep.Replicas = replicaFigures(c, pcs)
	switch first := pcs[0]; {
	case len(r.targets) == 0 || len(first.copies) == 0:
		catchUp(0, r.healAt) // nothing to time: this stops the sampling
	default:
		// Targets are timed on one partition: the only one, whose writer's
		// count the heal took.
		rep.TimeToCatchUp = catchUp(lastAckedOffset(hs[0], first.copies[0], min(r.ackedAtHeal, len(hs[0].Order))), r.healAt)
	}
	held, stale, err := sameStorage(ctx, c, wl, place)
	if err != nil {
		fail(err)
	}
	rep.StorageIdentical = err == nil
	for i := range rep.Replicas {
		rep.Replicas[i].StoredBytes, rep.Replicas[i].StaleBytes = held[rep.Replicas[i].Node], stale[rep.Replicas[i].Node]
	}
	if err := sameMetadata(ctx, c); err != nil {
		fail(err)
	} else {
		rep.MetadataIdentical = true
	}
	if line, err := sameRoster(ctx, c, wl); err != nil {
		fail(err)
	} else {
		rep.Roster, rep.RosterIdentical = line, true
	}
	return rep
}

// ackRate is the rate of acknowledged sends in [from, to).
func ackRate(h faultcheck.History, from, to time.Time) string {
	if !to.After(from) {
		return "-"
	}
	n := 0
	for _, t := range h.AckTimes {
		if !t.Before(from) && t.Before(to) {
			n++
		}
	}
	return fmt.Sprintf("%.0f sends/s", float64(n)/to.Sub(from).Seconds())
}

// createWorkloadTopic creates the workload's stream and its topic of
// partitions partitions (the default replication factor).
func createWorkloadTopic(ctx context.Context, c *Cluster, partitions int) (workloadTopic, error) {
	ctx, cancel := context.WithTimeout(ctx, Failover)
	defer cancel()
	admin, err := client.Connect(ctx, c.Options(0))
	if err != nil {
		return workloadTopic{}, err
	}
	defer admin.Close()
	sd, err := admin.CreateStream(ctx, streamName, nil)
	if err != nil {
		return workloadTopic{}, fmt.Errorf("create stream: %w", err)
	}
	td, err := admin.CreateTopic(ctx, wire.Named(streamName), topicName, uint32(partitions), nil)
	if err != nil {
		return workloadTopic{}, fmt.Errorf("create topic: %w", err)
	}
	wl := workloadTopic{stream: sd.ID, topic: td.ID}
	for _, p := range td.Partitions {
		wl.partitions = append(wl.partitions, p.ID)
	}
	if len(wl.partitions) != partitions {
		return wl, fmt.Errorf("create topic: %d partitions, asked for %d", len(wl.partitions), partitions)
	}
	return wl, nil
}

// lastAckedOffset is the offset of the last message of the last send
// acknowledged among the first n, as stored in copy.
func lastAckedOffset(h faultcheck.History, copy [][]byte, n int) uint64 {
	if n == 0 || n > len(h.Order) {
		return 0
	}
	want := h.Order[n-1]
	for j := len(copy) - faultcheck.MessagesPerSend; j >= 0; j -= faultcheck.MessagesPerSend {
		if len(copy[j]) >= 8 && binary.LittleEndian.Uint64(copy[j])>>8 == want {
			return uint64(j + faultcheck.MessagesPerSend - 1)
		}
	}
	return uint64(n*faultcheck.MessagesPerSend - 1)
}

// watchCatchUp samples the targets' newest offset every 200 ms from now
// on, each over one connection pinned to the target (a login is a
// replicated op: one per sample would load the cluster it measures); the
// function it returns stops the sampling and tells when every target
// first held offset, measured from since (-1 if never seen).
func watchCatchUp(ctx context.Context, c *Cluster, targets []int) func(offset uint64, since time.Time) Millis {
	type sample struct {
		at     time.Time
		offset uint64
	}
	var mu sync.Mutex
	samples := make([][]sample, len(targets))
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for k, t := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := c.Options(t)
			o.StayOnNode = true
			o.Reconnect.Retries = 0
			o.RequestTimeout = time.Second
			var cl *client.Client
			defer func() {
				if cl != nil {
					_ = cl.Close()
				}
			}()
			for ctx.Err() == nil {
				if cl == nil {
					cl, _ = client.Connect(ctx, o)
				}
				if cl != nil {
					if off, ok := newestOffset(ctx, cl); ok {
						mu.Lock()
						samples[k] = append(samples[k], sample{time.Now(), off})
						mu.Unlock()
					}
				}
				select {
				case <-ctx.Done():
				case <-time.After(200 * time.Millisecond):
				}
			}
		}()
	}
	return func(offset uint64, since time.Time) Millis {
		cancel()
		wg.Wait()
		var worst time.Duration
		for k, ss := range samples {
			i := sort.Search(len(ss), func(i int) bool { return ss[i].offset >= offset })
			if i == len(ss) {
				last := "no sample"
				if len(ss) > 0 {
					last = fmt.Sprintf("last sample offset %d at %v", ss[len(ss)-1].offset, ss[len(ss)-1].at.Sub(since).Round(time.Millisecond))
				}
				c.Logf("catch-up: %s never seen at offset %d (%d samples, %s)", c.Nodes[targets[k]].Service, offset, len(ss), last)
				return -1
			}
			worst = max(worst, ss[i].at.Sub(since))
		}
		return Millis(max(worst, 0))
	}
}

// newestOffset is the workload partition's current offset on the node cl
// is pinned to, or false when it does not answer or lacks the partition.
func newestOffset(ctx context.Context, cl *client.Client) (uint64, bool) {
	td, err := cl.GetTopic(ctx, wire.Named(streamName), wire.Named(topicName))
	if err != nil || len(td.Partitions) == 0 || td.Partitions[0].MessagesCount == 0 {
		return 0, false
	}
	return td.Partitions[0].CurrentOffset, true
}

// sameMetadata compares the streams, topics and partitions every node
// reports (identity, names, creation times, options; not the counters,
// which move with the workload), waiting up to Failover for stragglers.
func sameMetadata(ctx context.Context, c *Cluster) error {
	deadline := time.Now().Add(Failover)
	for {
		var first string
		err := func() error {
			for i, n := range c.Nodes {
				o := c.Options(i)
				o.StayOnNode = true
				s, err := describe(ctx, o)
				if err != nil {
					return fmt.Errorf("metadata of %s: %w", n.Service, err)
				}
				if i == 0 {
					first = s
				} else if s != first {
					return fmt.Errorf("metadata of %s differs from %s:\n%s\n%s", n.Service, c.Nodes[0].Service, s, first)
				}
			}
			return nil
		}()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func describe(ctx context.Context, o client.Options) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cl, err := client.Connect(ctx, o)
	if err != nil {
		return "", err
	}
	defer cl.Close()
	streams, err := cl.GetStreams(ctx)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, s := range streams {
		fmt.Fprintf(&b, "stream %d %q created %d options %v\n", s.ID, s.Name, s.CreatedAt, s.Options)
		topics, err := cl.GetTopics(ctx, wire.ID(s.ID))
		if err != nil {
			return "", err
		}
		for _, t := range topics {
			td, err := cl.GetTopic(ctx, wire.ID(s.ID), wire.ID(t.ID))
			if err != nil {
				return "", err
			}
			fmt.Fprintf(&b, "  topic %d %q created %d expiry %d max %d compression %d\n",
				td.ID, td.Name, td.CreatedAt, td.MessageExpiry, td.MaxTopicSize, td.CompressionAlgorithm)
			for _, p := range td.Partitions {
				fmt.Fprintf(&b, "    partition %d created %d\n", p.ID, p.CreatedAt)
			}
		}
	}
	return b.String(), nil
}

// Text renders the report for people.
func (r *Report) Text() string {
	var b strings.Builder
	verdict := "PASSED"
	if !r.Passed {
		verdict = "FAILED"
	}
	fmt.Fprintf(&b, "== %s: %s\n%s\n", r.Experiment, verdict, r.Description)
	if r.Pending != "" {
		fmt.Fprintf(&b, "pending node bugs: %s\n", r.Pending)
	}
	fmt.Fprintf(&b, "started %s, took %s; leader %s at the start, %s at the end; fault aimed at %s\n",
		r.Started.Format(time.RFC3339), r.Duration, r.LeaderAtStart, r.LeaderAtEnd, strings.Join(r.Targets, ", "))
	fmt.Fprintf(&b, "acknowledged writes   %d sends (%d messages); %d sends failed (unknown outcome)\n", r.AckedSends, r.AckedMessages, r.FailedSends)
	fmt.Fprintf(&b, "lost                  %d\n", r.Lost)
	fmt.Fprintf(&b, "duplicates            %d\n", r.Duplicates)
	fmt.Fprintf(&b, "out of order          %d\n", r.OutOfOrder)
	fmt.Fprintf(&b, "time without leader   %s (longest stretch without an acknowledged write after the fault)\n", r.TimeWithoutLeader)
	if r.Partitions > 1 {
		fmt.Fprintf(&b, "  on one partition    %s (the longest such stretch of any partition's writer: partition %d)\n",
			r.LongestPartitionGap, r.GapPartition)
	}
	if r.LeaderElected >= 0 {
		fmt.Fprintf(&b, "leader elected after  %s (the nodes the fault spared name one metadata leader in their rosters; polled)\n", r.LeaderElected)
	}
	fmt.Fprintf(&b, "first write after it  %s\n", r.FirstAckAfterFault)
	if len(r.Targets) > 0 {
		fmt.Fprintf(&b, "time to catch up      %s (from the heal until the targets held every write acknowledged before it)\n", r.TimeToCatchUp)
	} else {
		fmt.Fprintf(&b, "time to catch up      not measured (no target holds a replica to catch up)\n")
	}
	fmt.Fprintf(&b, "serves again          %v\n", r.ServesAgain)
	fmt.Fprintf(&b, "metadata identical    %v\n", r.MetadataIdentical)
	fmt.Fprintf(&b, "storage identical     %v (each partition's batches the same on its replicas, elsewhere none or a stale prefix)\n", r.StorageIdentical)
	fmt.Fprintf(&b, "roster identical      %v (%s)\n", r.RosterIdentical, r.Roster)
	for _, ch := range r.Changes {
		fmt.Fprintf(&b, "change %-40s accepted after %s, done after %s: %s\n", ch.What, ch.Accepted, ch.Done, ch.Roster)
		if ch.Note != "" {
			fmt.Fprintf(&b, "       %s\n", ch.Note)
		}
	}
	if r.Rebalance != nil {
		b.WriteString(r.Rebalance.Text())
	}
	for _, f := range r.Replicas {
		fmt.Fprintf(&b, "replica %-6s        %d messages in %d of %d partitions, %d bytes stored", f.Node, f.Messages, f.Partitions,
			r.Partitions, f.StoredBytes)
		if f.StaleBytes > 0 {
			fmt.Fprintf(&b, "; %d stale bytes of partitions it no longer holds", f.StaleBytes)
		}
		b.WriteString("\n")
	}
	for _, p := range r.Problems {
		fmt.Fprintf(&b, "problem: %s\n", p)
	}
	for _, e := range r.Errors {
		fmt.Fprintf(&b, "error: %s\n", e)
	}
	b.WriteString("log:\n")
	for _, l := range r.Log {
		fmt.Fprintf(&b, "  %s\n", l)
	}
	return b.String()
}

// Write stores the report as <dir>/<experiment>.txt and .json, and the
// nodes' logs as <experiment>.nodes.log.
func (r *Report) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return errors.Join(
		os.WriteFile(filepath.Join(dir, r.Experiment+".json"), append(js, '\n'), 0o644),
		os.WriteFile(filepath.Join(dir, r.Experiment+".txt"), []byte(r.Text()), 0o644),
		os.WriteFile(filepath.Join(dir, r.Experiment+".nodes.log"), []byte(r.NodeLogs), 0o644))
}
