package actors

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"iggynode/client"
	"iggynode/config"
	"iggynode/internal/testutil"
	"iggynode/partition"
	"iggynode/vsr"
	"iggynode/wire"
)

// lateTopic starts three nodes (adjust applied to each, a repair ring of
// one op), unlinks replica 2, and creates a topic of `partitions`
// partitions with `batches` one-message batches in each, so that
// replica 2, linked again by relink, can only catch up on every
// partition by state transfer. It returns the nodes, the groups and the
// log of all three.
func lateTopic(t *testing.T, partitions, batches int, adjust func(*Options)) (nodes []*Node, groups []uint64, relink func(), logs *testutil.Buffer) {
	t.Helper()
	logs = &testutil.Buffer{}
	nodes = startNodes(t, 3, func(o *Options) {
		o.Config.Partition.EvictedRingCapacity = 1
		o.Config.Cluster.RepairRetryInterval = config.Duration(100 * time.Millisecond)
		o.Logger = slog.New(slog.NewTextHandler(logs, nil))
		if adjust != nil {
			adjust(o)
		}
	})
	relink = unlinkReplica2(t, nodes)
	ctx, c := rootClient(t, nodes[0])
	var s *wire.StreamDetails
	retryRefused(t, "create the stream", func() (err error) {
		s, err = c.CreateStream(ctx, "late", nil)
		return err
	})
	retryRefused(t, "create the topic", func() error {
		_, err := c.CreateTopic(ctx, wire.ID(s.ID), "t", uint32(partitions), nil)
		return err
	})
	for p := range partitions {
		for i := range batches {
			sendAccepted(t, ctx, c, wire.ID(s.ID), uint32(p), client.NewMessage([]byte(fmt.Sprintf("partition-%d-batch-%d", p, i))))
		}
		group, _ := wire.PartitionGroup(s.ID, 0, uint32(p))
		groups = append(groups, group)
	}
	return nodes, groups, relink, logs
}

// sendAccepted sends msg to partition p of stream's topic 0 (see
// retryRefused: a new partition's group may not have settled its view).
func sendAccepted(t *testing.T, ctx context.Context, c *client.Client, stream wire.Identifier, p uint32, msg wire.Message) {
	t.Helper()
	retryRefused(t, fmt.Sprintf("send to partition %d", p), func() error {
		_, err := c.SendMessages(ctx, stream, wire.ID(0), wire.PartitionID(p), []wire.Message{msg})
		return err
	})
}

// retryRefused runs op again while it is refused 58 (not accepted, so
// safe to re-issue) for at most 20 s: on a loaded machine a backup may
// time out its primary while the cluster starts, and the group answers
// 58 through the view change for longer than the SDK replays it.
func retryRefused(t *testing.T, what string, op func() error) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		err := op()
		if err == nil {
			return
		}
		if !errors.Is(err, wire.ErrTransientNotAccepted) || time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
	}
}

// sendFilled sends n batches of one message of size bytes, batch i's
// filled with byte i, to partition 0 of lateTopic's stream.
func sendFilled(t *testing.T, ctx context.Context, c *client.Client, n, size int) {
	t.Helper()
	for i := range n {
		msg := client.NewMessage(bytes.Repeat([]byte{byte(i)}, size))
		if _, err := c.SendMessages(ctx, wire.Named("late"), wire.ID(0), wire.PartitionID(0), []wire.Message{msg}); err != nil {
			t.Fatal(err)
		}
	}
}

// logStats is what n's one partition's log counts.
func logStats(t *testing.T, n *Node) partition.Stats {
	return askPartitions(t, n, func(p *partitionActor) partition.Stats { return p.plog.Stats() })[0]
}

// holdStateChunks makes every transfer receiver wait on its first
// StateChunk until the returned release (also run at the test's end).
func holdStateChunks(t *testing.T) (release func()) {
	held := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(held) }) }
	setTransferFrameHook(func(frame []byte) {
		if wire.HeaderOf(frame).Command() == wire.CmdStateChunk {
			<-held
		}
	})
	t.Cleanup(func() { release(); setTransferFrameHook(nil) })
	return release
}

// samplePeak watches v every millisecond until the test ends; peak is
// the highest value seen so far.
func samplePeak(t *testing.T, v *atomic.Int64) (peak func() int64) {
	var top atomic.Int64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			if x := v.Load(); x > top.Load() {
				top.Store(x)
			}
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
	return func() int64 { return max(top.Load(), v.Load()) }
}

// until polls cond every 20 ms for at most d, and fails with why() if it
// never holds.
func until(t *testing.T, d time.Duration, cond func() bool, why func() string) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal(why())
		}
	}
}

// 7.7 rule 2: the offers a node holds for serving are bounded by
// partition.transfer_served_cache_bytes_max. With room for one
// partition's offer and not two, the primary holds the first lagging
// partition's offer (its receiver waits on its first chunk) and refuses
// the second for now (counted); let go, both partitions catch up, the
// bytes held never exceed the bound, and every reservation is given back
// once the offers expire.
func TestServedTransferOffersStayWithinTheirBound(t *testing.T) {
	const bound = 4096 // eight batches of ~300 bytes fit, sixteen do not
	nodes, groups, relink, logs := lateTopic(t, 2, 8, func(o *Options) {
		o.Config.Partition.TransferServedCacheBytesMax = bound
		o.PartitionView = func(uint64) uint32 { return 3 } // view 3 of 3 replicas: both led, and served, by node 0
	})
	var sizes []int
	for _, g := range groups {
		b, _ := storedBatches(nodes[0], g)
		sizes = append(sizes, len(b))
	}
	if max(sizes[0], sizes[1]) > bound || sizes[0]+sizes[1] <= bound {
		t.Fatalf("setup: partitions of %v bytes against a bound of %d", sizes, bound)
	}
	limits := &nodes[0].transferLimits
	release := holdStateChunks(t)

	peak := samplePeak(t, &limits.served)
	relink()
	until(t, 20*time.Second, func() bool { return limits.refused.Load() > 0 }, func() string {
		return fmt.Sprintf("no offer was refused for the bound (partitions of %v bytes, bound %d, %d held)\n%s",
			sizes, bound, limits.served.Load(), lastLines(logs.String(), 30))
	})
	release()
	for _, g := range groups {
		waitSameBatches(t, nodes[0], nodes[2], g, fmt.Sprintf("group %d", g), logs)
	}
	if p := peak(); p > bound || p == 0 {
		t.Fatalf("the offers held %d bytes at most, bound %d", p, bound)
	}
	until(t, 10*time.Second, func() bool { return limits.served.Load() == 0 }, func() string {
		return fmt.Sprintf("%d bytes still reserved after every offer expired", limits.served.Load())
	})
}

// A partition larger than the whole bound is refused for good (the
// operator raises the bound), and what its build reserved before it
// found out is given back.
func TestAPartitionLargerThanTheServedBoundIsRefused(t *testing.T) {
	nodes, groups, relink, logs := lateTopic(t, 1, 8, func(o *Options) {
		o.Config.Partition.TransferServedCacheBytesMax = 1000 // three stored batches of eight: reserved, then given back
	})
	limits := &nodes[0].transferLimits
	relink()
	if !logs.Await("the partition holds more than partition.transfer_served_cache_bytes_max", 20*time.Second) {
		t.Fatalf("no refusal for the partition's size\n%s", lastLines(logs.String(), 30))
	}
	if n := limits.served.Load(); n != 0 {
		t.Fatalf("a refused offer left %d bytes reserved", n)
	}
	if got, _ := storedBatches(nodes[2], groups[0]); len(got) != 0 {
		t.Fatalf("replica 2 installed %d bytes from a refused offer", len(got))
	}
}

// 7.7 rule 1: a node receives at most 4 partition transfers at once.
// Six partitions of replica 2 need one; the receivers are held on their
// first chunk, and no more than four run while they are; once let go,
// all six catch up and every slot is given back.
func TestAtMostFourPartitionTransfersAreReceivedAtOnce(t *testing.T) {
	nodes, groups, relink, logs := lateTopic(t, 6, 4, func(o *Options) {
		o.PartitionView = func(uint64) uint32 { return 3 } // all six led by node 0, none by the late one
	})
	limits := &nodes[2].transferLimits
	release := holdStateChunks(t)
	peak := samplePeak(t, &limits.receiving)
	relink()
	until(t, 20*time.Second, func() bool { return limits.receiving.Load() >= maxPartitionReceivers }, func() string {
		return fmt.Sprintf("%d transfers received at once, want %d held\n%s", limits.receiving.Load(), maxPartitionReceivers, lastLines(logs.String(), 30))
	})
	time.Sleep(time.Second) // the other two ask every tick meanwhile
	if p := peak(); p != maxPartitionReceivers {
		t.Fatalf("%d transfers were received at once, at most %d may be", p, maxPartitionReceivers)
	}
	release()
	for _, g := range groups {
		waitSameBatches(t, nodes[0], nodes[2], g, fmt.Sprintf("group %d", g), logs)
	}
	if p := peak(); p > maxPartitionReceivers {
		t.Fatalf("%d transfers were received at once, at most %d may be", p, maxPartitionReceivers)
	}
	until(t, 10*time.Second, func() bool { return limits.receiving.Load() == 0 }, func() string {
		return fmt.Sprintf("%d receiving slots still taken", limits.receiving.Load())
	})
}

// A partition actor that restarts gives back what its transfers held:
// the server's offer bytes and the receiver's slot (transferShell.close),
// so a crash on either side mid-transfer leaks neither, and the transfer
// still ends.
func TestARestartedPartitionGivesBackItsTransferBounds(t *testing.T) {
	nodes, groups, relink, logs := lateTopic(t, 1, 8, func(o *Options) {
		o.PartitionView = func(uint64) uint32 { return 3 } // served by node 0
	})
	served, receiving := &nodes[0].transferLimits, &nodes[2].transferLimits
	release := holdStateChunks(t)
	relink()
	inFlight := func() string {
		return fmt.Sprintf("%d bytes offered, %d slots taken", served.served.Load(), receiving.receiving.Load())
	}
	until(t, 20*time.Second, func() bool { return served.served.Load() > 0 && receiving.receiving.Load() > 0 }, func() string {
		return "no transfer in flight: " + inFlight() + "\n" + lastLines(logs.String(), 30)
	})
	for _, n := range []*Node{nodes[0], nodes[2]} {
		ch := make(chan map[uint64]*actor.PID, 1)
		n.root().Send(n.refs.metadata, &listPartitions{reply: ch})
		before := n.Restarts()
		for _, pid := range <-ch {
			n.root().Send(pid, &partitionCrash{})
		}
		waitFor(t, func() bool { return n.Restarts() > before })
	}
	release()
	waitSameBatches(t, nodes[0], nodes[2], groups[0], "after both restarts", logs)
	until(t, 10*time.Second, func() bool { return served.served.Load() == 0 && receiving.receiving.Load() == 0 }, func() string {
		return "left after the transfer: " + inFlight()
	})
}

// A partition waiting for a receiving slot gives its request back once
// the view changes (here its peer, the old primary, is gone): it fetches
// nothing from the old view's peer, and catches up from the new primary
// when a slot frees. The slots are taken by the test, so every lagging
// partition waits through the view change.
func TestAWaitingTransferIsGivenBackWhenTheViewChanges(t *testing.T) {
	nodes, groups, relink, logs := lateTopic(t, 2, 4, func(o *Options) {
		o.PartitionView = func(uint64) uint32 { return 3 } // led by node 0
		// As in TestTransferSurvivesItsServersCrash: the nodes link up
		// before a backup times out, and node 0's loss is seen in 2 s.
		o.Config.Cluster.HeartbeatTimeout = config.Duration(2 * time.Second)
		o.Config.Cluster.CommitBroadcastInterval = config.Duration(100 * time.Millisecond)
	})
	slots := &nodes[2].transferLimits.receiving
	slots.Store(maxPartitionReceivers) // other transfers hold every slot
	relink()
	waiting := func() int {
		n := 0
		for _, w := range askPartitions(t, nodes[2], func(p *partitionActor) bool { return p.transfers != nil && p.transfers.waiting }) {
			if w {
				n++
			}
		}
		return n
	}
	until(t, 20*time.Second, func() bool { return waiting() == len(groups) }, func() string {
		return fmt.Sprintf("%d of %d partitions wait for a slot\n%s", waiting(), len(groups), lastLines(logs.String(), 30))
	})
	if err := nodes[0].Close(); err != nil {
		t.Fatal(err)
	}
	if !logs.Await("state transfer request given back: the view changed while it waited", 20*time.Second) {
		t.Fatalf("the waiting requests were not given back\n%s", lastLines(logs.String(), 30))
	}
	slots.Store(0) // the others' transfers end
	for _, g := range groups {
		waitSameBatches(t, nodes[1], nodes[2], g, fmt.Sprintf("group %d from the new primary", g), logs)
	}
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, `msg="state transfer started"`) && strings.Contains(l, " from=0 ") {
			t.Fatalf("a transfer was started from the old view's primary: %s", l)
		}
	}
}

// replica-plane.md 13.3 rule 5: the receiver of a partition transfer
// stages its segments in files under <store>/transfer, not in memory:
// held on its third chunk, it has two chunks' bytes on disk; let go, the
// partition matches the primary's and nothing staged is left.
func TestAPartitionTransferStagesItsSegmentsOnDisk(t *testing.T) {
	nodes, groups, relink, logs := lateTopic(t, 1, 1, nil)
	ctx, c := rootClient(t, nodes[0])
	sendFilled(t, ctx, c, 6, 100<<10) // ~600 KiB: three chunks of 256 KiB
	held := make(chan struct{})
	var chunks atomic.Int32
	setTransferFrameHook(func(frame []byte) {
		if wire.HeaderOf(frame).Command() == wire.CmdStateChunk && chunks.Add(1) == 3 {
			<-held
		}
	})
	var once sync.Once
	release := func() { once.Do(func() { close(held) }) }
	t.Cleanup(func() { release(); setTransferFrameHook(nil) })
	staging := filepath.Join(nodes[2].store.Dir(), "transfer")
	staged := func() (n int64) {
		files, _ := filepath.Glob(filepath.Join(staging, "*", "*.log.part"))
		for _, f := range files {
			if st, err := os.Stat(f); err == nil {
				n += st.Size()
			}
		}
		return n
	}
	relink()
	until(t, 20*time.Second, func() bool { return chunks.Load() >= 3 }, func() string {
		return fmt.Sprintf("no third chunk arrived\n%s", lastLines(logs.String(), 30))
	})
	if n := staged(); n != 2*256<<10 {
		t.Fatalf("held on its third chunk, the receiver staged %d bytes, want two chunks (%d)", n, 2*256<<10)
	}
	release()
	waitSameBatches(t, nodes[0], nodes[2], groups[0], "the transferred partition", logs)
	// The receiver's log was indexed from the records as they arrived
	// (vsr.TransferSession.Batches), not from the files read back: it
	// counts what the primary's does.
	if got, want := logStats(t, nodes[2]), logStats(t, nodes[0]); got != want || want.MessagesCount != 7 { // lateTopic's one, then six
		t.Fatalf("the receiver's log: %+v, the primary's %+v", got, want)
	}
	until(t, 10*time.Second, func() bool { left, _ := os.ReadDir(staging); return len(left) == 0 }, func() string {
		left, _ := os.ReadDir(staging)
		return fmt.Sprintf("left staged after the install: %v", left)
	})
}

// A receiver without room for the segments above its soft disk reserve
// refuses the offer before it fetches a byte (no crash, no actor
// restart, nothing installed, no stage left behind) and goes on asking;
// once space is freed the transfer installs.
func TestAPartitionTransferWaitsForRoomToStage(t *testing.T) {
	fs := testutil.MountSmallFS(t, 32<<20)
	nodes, groups, relink, logs := lateTopic(t, 1, 1, func(o *Options) {
		if o.Config.Cluster.ReplicaID == 2 {
			smallDisk(o, fs, testReserveSoft, testReserveHard)
		}
	})
	ctx, c := rootClient(t, nodes[0])
	sendFilled(t, ctx, c, 4, 1<<20) // 4 MiB of segments
	late := nodes[2]
	filler := fill(t, late, fs, testReserveHard+2<<20)
	restarts := late.refs.restarts.Load()
	relink()
	if !logs.Await("no room to stage", 20*time.Second) {
		t.Fatalf("no refusal to stage with %d bytes free\n%s", fs.Free(), lastLines(logs.String(), 30))
	}
	if got, _ := storedBatches(late, groups[0]); len(got) != 0 {
		t.Fatalf("installed %d bytes without room to stage them", len(got))
	}
	if staged, _ := filepath.Glob(filepath.Join(late.store.Dir(), "transfer", "*", "*")); len(staged) != 0 {
		t.Fatalf("a refused transfer staged %v", staged)
	}
	// Each attempt makes a stage and a refused one deletes it: at most the
	// attempt in flight has one.
	if stages, _ := filepath.Glob(filepath.Join(late.store.Dir(), "transfer", "*")); len(stages) > 1 {
		t.Fatalf("refused transfers left their stages: %v", stages)
	}
	if r := late.store.StagedReserved(); r != 0 {
		t.Fatalf("refused transfers hold %d bytes of reservation", r)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	waitSameBatches(t, nodes[0], late, groups[0], "the partition once space was freed", logs)
	if r := late.refs.restarts.Load() - restarts; r != 0 {
		t.Fatalf("%d actor restarts on the receiver", r)
	}
}

// A partition actor that stops deletes its group's staged transfers
// whose owner was lost (a transferDone still queued when the child's
// Terminated overtook it): here one staged by hand, as that message
// would have carried it, goes with the topic's deletion, and another
// group's stays.
func TestAStoppedPartitionDeletesItsLostStages(t *testing.T) {
	n := startNodes(t, 1, nil)[0]
	ctx, c := rootClient(t, n)
	stream, group := streamWithTopic(t, ctx, c, n, "s")
	lost, err := n.store.StageTransfer(group)
	if err != nil {
		t.Fatal(err)
	}
	other, err := n.store.StageTransfer(group + 1)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Discard()
	if err := lost.Write(0, 0, []byte("a staged segment")); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteTopic(ctx, wire.ID(stream), wire.ID(0)); err != nil {
		t.Fatal(err)
	}
	staging := filepath.Join(n.store.Dir(), "transfer")
	left := func() []string {
		dirs, _ := filepath.Glob(filepath.Join(staging, "*"))
		return dirs
	}
	until(t, 10*time.Second, func() bool { return len(left()) == 1 }, func() string {
		return fmt.Sprintf("staged after the partition stopped: %v", left())
	})
	if got := left(); got[0] != other.Dir() {
		t.Fatalf("left %v, want only the other group's %s", got, other.Dir())
	}
}

// A purge drops the offers that read the partition's files: the served
// bound is given back and the deleted files' handles closed at once, not
// when the offers expire (10 retry intervals idle, 10 s here); the held
// receiver is refused at its next chunk, asks again, and ends with the
// primary's purged partition and what came after.
func TestAPurgeDropsTheOffersThatReadItsFiles(t *testing.T) {
	nodes, groups, relink, logs := lateTopic(t, 1, 8, func(o *Options) {
		o.PartitionView = func(uint64) uint32 { return 3 } // served by node 0
		o.Config.Cluster.RepairRetryInterval = config.Duration(time.Second)
	})
	served := &nodes[0].transferLimits.served
	release := holdStateChunks(t)
	relink()
	until(t, 20*time.Second, func() bool { return served.Load() > 0 }, func() string {
		return "no offer served\n" + lastLines(logs.String(), 30)
	})
	deletedHeld := func() (held []string) {
		fds, _ := os.ReadDir("/proc/self/fd")
		for _, fd := range fds {
			if l, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil &&
				strings.HasPrefix(l, nodes[0].store.Dir()) && strings.HasSuffix(l, " (deleted)") {
				held = append(held, l)
			}
		}
		return held
	}
	ctx, c := rootClient(t, nodes[0])
	if err := c.PurgeTopic(ctx, wire.Named("late"), wire.ID(0)); err != nil {
		t.Fatal(err)
	}
	until(t, 5*time.Second, func() bool { return served.Load() == 0 && len(deletedHeld()) == 0 }, func() string {
		return fmt.Sprintf("after the purge: %d bytes offered, deleted files held open %v", served.Load(), deletedHeld())
	})
	if !strings.Contains(logs.String(), "the partition was purged") {
		t.Fatalf("the offer was not dropped by the purge\n%s", lastLines(logs.String(), 30))
	}
	release()
	if _, err := c.SendMessages(ctx, wire.Named("late"), wire.ID(0), wire.PartitionID(0), []wire.Message{client.NewMessage([]byte("after the purge"))}); err != nil {
		t.Fatal(err)
	}
	waitSameBatches(t, nodes[0], nodes[2], groups[0], "the purged partition and a batch after", logs)
}

// replica-plane.md 7.7 rule 6: a partition transfer cut short (here the
// receiver's disk fills while it stages its third of four segments)
// keeps the segments it staged whole, and the group's next transfer,
// once space is back, fetches only the rest: no chunk of the first two
// segments travels again, and the install indexes them from what the
// first walk read.
func TestAnInterruptedTransferReusesTheSegmentsItStagedWhole(t *testing.T) {
	defer func(max int64) { segmentArtifactMax = max }(segmentArtifactMax)
	segmentArtifactMax = 1 << 20 // one artifact per batch of 1 MiB
	fs := testutil.MountSmallFS(t, 32<<20)
	nodes, groups, relink, logs := lateTopic(t, 1, 1, func(o *Options) {
		if o.Config.Cluster.ReplicaID == 2 {
			smallDisk(o, fs, testReserveSoft, testReserveHard)
		}
	})
	ctx, c := rootClient(t, nodes[0])
	sendFilled(t, ctx, c, 4, 1<<20-4096)
	late := nodes[2]
	var mu sync.Mutex
	var first wire.U128
	chunks := map[wire.U128]map[uint32]int{} // per session, chunks per artifact
	held, holding := make(chan struct{}), make(chan struct{})
	var once sync.Once
	setTransferFrameHook(func(frame []byte) {
		q, err := wire.DecodeStateChunkHeader(wire.HeaderOf(frame))
		if err != nil || wire.HeaderOf(frame).Command() != wire.CmdStateChunk {
			return
		}
		mu.Lock()
		if first == (wire.U128{}) {
			first = q.Nonce
		}
		if chunks[q.Nonce] == nil {
			chunks[q.Nonce] = map[uint32]int{}
		}
		chunks[q.Nonce][q.Artifact]++
		cut := q.Nonce == first && q.Artifact == 2 && q.Offset == 0
		mu.Unlock()
		if cut {
			once.Do(func() { close(holding); <-held })
		}
	})
	t.Cleanup(func() { setTransferFrameHook(nil) })
	relink()
	select {
	case <-holding:
	case <-time.After(20 * time.Second):
		t.Fatalf("the transfer never reached its third segment\n%s", lastLines(logs.String(), 30))
	}
	filler := fill(t, late, fs, testReserveHard+128<<10) // the third segment's first chunk does not fit
	close(held)
	if !logs.Await("state transfer keeps the segments it staged whole", 20*time.Second) {
		t.Fatalf("the cut transfer kept nothing\n%s", lastLines(logs.String(), 30))
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	waitSameBatches(t, nodes[0], late, groups[0], "the partition after the cut transfer", logs)
	if got, want := logStats(t, late), logStats(t, nodes[0]); got != want {
		t.Fatalf("the receiver's log: %+v, the primary's %+v", got, want)
	}
	mu.Lock()
	defer mu.Unlock()
	if chunks[first][0] == 0 || chunks[first][1] == 0 {
		t.Fatalf("the first session fetched %v", chunks[first])
	}
	sessions := 0
	for nonce, per := range chunks {
		if nonce == first {
			continue
		}
		sessions++
		if per[0]+per[1] != 0 {
			t.Fatalf("a later session fetched the staged segments again: %v", per)
		}
	}
	if sessions == 0 {
		t.Fatalf("no later session fetched anything: %v", chunks)
	}
}

// 7.7 rule 2: a partition offer larger than one hashing round is built
// in rounds on the partition actor (each an offerRound message, so the
// group's other traffic runs between them); a request meanwhile is
// refused transiently (rule 3, build in progress), the receiver asks
// again in the same transfer (rule 5), and the first request after the
// last round takes the offer. Here four rounds of 1 MiB.
func TestALargePartitionOfferIsHashedInRounds(t *testing.T) {
	defer func(artifact, round int64) { segmentArtifactMax, offerHashRound = artifact, round }(segmentArtifactMax, offerHashRound)
	segmentArtifactMax, offerHashRound = 1<<20, 1<<20
	nodes, groups, relink, logs := lateTopic(t, 1, 1, nil)
	ctx, c := rootClient(t, nodes[0])
	sendFilled(t, ctx, c, 4, 1<<20-4096)
	var refusals atomic.Int32
	setTransferFrameHook(func(frame []byte) {
		if h := wire.HeaderOf(frame); h.Command() == wire.CmdStateTransferTarget {
			if tt, err := wire.DecodeStateTransferTargetHeader(h); err == nil && !tt.Available && tt.UnavailableTransient {
				refusals.Add(1)
			}
		}
	})
	t.Cleanup(func() { setTransferFrameHook(nil) })
	relink()
	waitSameBatches(t, nodes[0], nodes[2], groups[0], "the partition offered in rounds", logs)
	if !strings.Contains(logs.String(), "partition state transfer offer hashed in rounds") || !strings.Contains(logs.String(), "partition state transfer offer hashed\"") {
		t.Fatalf("the offer was not built in rounds\n%s", lastLines(logs.String(), 30))
	}
	if refusals.Load() == 0 {
		t.Fatal("no request was refused while the offer was being built")
	}
	// 7.7 rule 5: the receiver waited through the transient refusals in
	// its one transfer, not falling back to repair after each.
	if n := strings.Count(logs.String(), `msg="state transfer started"`); n != 1 || strings.Contains(logs.String(), "state transfer abandoned") {
		t.Fatalf("%d transfers started, want 1 waiting through %d refusals\n%s", n, refusals.Load(), lastLines(logs.String(), 30))
	}
	until(t, 10*time.Second, func() bool { return nodes[0].transferLimits.served.Load() == 0 }, func() string {
		return fmt.Sprintf("%d bytes of the served bound still held", nodes[0].transferLimits.served.Load())
	})
}

// A second offer of a partition hashes only what its files gained since
// the first (transferShell.sums): the batch files are append-only. After
// a learner took three ranges by transfer and two more batches were
// sent, the primary's next offer reads only the two new ranges, and
// names all five with the checksums of their bytes.
func TestASecondOfferHashesOnlyWhatIsNew(t *testing.T) {
	defer func(max int64) { segmentArtifactMax = max }(segmentArtifactMax)
	segmentArtifactMax = 1 << 20 // one range per batch of about 1 MiB
	nodes, groups, relink, logs := lateTopic(t, 1, 1, func(o *Options) {
		o.PartitionView = func(uint64) uint32 { return 3 } // served by node 0
	})
	ctx, c := rootClient(t, nodes[0])
	const payload = 1<<20 - 4096
	sendFilled(t, ctx, c, 3, payload)
	hashed := &nodes[0].transferLimits.hashed
	relink()
	waitSameBatches(t, nodes[0], nodes[2], groups[0], "the first transfer", logs)
	first := hashed.Load()
	if first < 3*payload {
		t.Fatalf("the first offer hashed %d bytes, want at least the three ranges", first)
	}
	sendFilled(t, ctx, c, 2, payload)
	type built struct {
		o        *vsr.Offer
		reserved int64
		release  func()
	}
	var b built
	until(t, 10*time.Second, func() bool {
		b = askPartitions(t, nodes[0], func(p *partitionActor) built {
			o, reserved, release, _ := p.partitionOffer(nil) // one round: the context is not used
			return built{o, reserved, release}
		})[0]
		return b.o != nil
	}, func() string { return "no second offer was built" })
	defer func() { nodes[0].transferLimits.release(b.reserved); b.release() }()
	again := hashed.Load() - first
	if again < 2*payload || again >= 3*payload {
		t.Fatalf("the second offer hashed %d bytes, want only the two new ranges (about %d)", again, 2*payload)
	}
	var m wire.StateManifest
	if err := m.Decode(b.o.Manifest); err != nil {
		t.Fatal(err)
	}
	ranges, release, err := nodes[0].store.SegmentRanges(groups[0], segmentArtifactMax)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if n := b.o.Artifacts(); n != len(ranges)+1 || len(ranges) != 5 { // five ranges of about 1 MiB, the offsets
		t.Fatalf("the second offer has %d artifacts for %d ranges, want five and the offsets", n, len(ranges))
	}
	for i, r := range ranges {
		data := make([]byte, r.Size())
		if _, err := r.ReadAt(data, 0); err != nil {
			t.Fatal(err)
		}
		if m.Entries[i].Checksum != wire.ArtifactChecksum(data) {
			t.Fatalf("artifact %d's checksum is not its bytes'", i)
		}
	}
}

// Deleting segments while the disk is below its soft reserve drops the
// offers that read the partition's files (transferShell.dropOffers): the
// space their handles would keep is what the disk is short of. Node 0
// serves node 2 an offer (held on its first chunk), its disk is filled
// below the soft reserve, and a DeleteSegments gives the served bound
// back at once, not when the offer expires (10 s idle here).
func TestDeletingSegmentsBelowTheSoftReserveDropsTheOffers(t *testing.T) {
	fs := testutil.MountSmallFS(t, 48<<20)
	logs := &testutil.Buffer{}
	nodes := startNodes(t, 3, func(o *Options) {
		o.Config.Partition.EvictedRingCapacity = 1
		o.Config.Cluster.RepairRetryInterval = config.Duration(time.Second)
		o.Logger = slog.New(slog.NewTextHandler(logs, nil))
		o.PartitionView = func(uint64) uint32 { return 3 } // led by node 0
		if o.Config.Cluster.ReplicaID == 0 {
			smallDisk(o, fs, testReserveSoft, testReserveHard)
		}
	})
	relink := unlinkReplica2(t, nodes)
	ctx, c := rootClient(t, nodes[0])
	s, err := c.CreateStream(ctx, "late", nil)
	if err != nil {
		t.Fatal(err)
	}
	segment := binary.LittleEndian.AppendUint64(nil, 1<<20) // the smallest: every batch below seals one
	if _, err := c.CreateTopic(ctx, wire.ID(s.ID), "t", 1, wire.Options{{Key: wire.OptSegmentSize, Kind: wire.KindUint64, Value: segment}}); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		sendAccepted(t, ctx, c, wire.ID(s.ID), 0, client.NewMessage(bytes.Repeat([]byte{byte(i)}, 1<<20)))
	}
	served := &nodes[0].transferLimits.served
	release := holdStateChunks(t)
	relink()
	until(t, 20*time.Second, func() bool { return served.Load() > 0 }, func() string {
		return "no offer served\n" + lastLines(logs.String(), 30)
	})
	filler := fill(t, nodes[0], fs, testReserveSoft-2<<20)
	defer os.Remove(filler)
	if err := c.DeleteSegments(ctx, wire.ID(s.ID), wire.ID(0), 0, 1); err != nil {
		t.Fatal(err)
	}
	until(t, 5*time.Second, func() bool { return served.Load() == 0 }, func() string {
		return fmt.Sprintf("%d bytes still offered after segments were deleted below the soft reserve\n%s", served.Load(), lastLines(logs.String(), 30))
	})
	if !strings.Contains(logs.String(), "segments deleted while the disk is below its soft reserve") {
		t.Fatalf("the offers were not dropped by the deletion\n%s", lastLines(logs.String(), 30))
	}
	release()
}

// setTransferFrameHook sets transferFrameHook (nil: none); a test's
// cleanup may clear it while a transfer child still runs.
func setTransferFrameHook(fn func(frame []byte)) {
	if fn == nil {
		transferFrameHook.Store(nil)
		return
	}
	transferFrameHook.Store(&fn)
}
