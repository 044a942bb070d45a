package actors

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"iggynode/client"
	"iggynode/config"
	"iggynode/internal/testutil"
	"iggynode/storage"
	"iggynode/wire"
)

// Small reserves for a small filesystem: badger is lowered to 1 MiB
// memtables and 2 MiB value-log files to fit the hard one.
const (
	testReserveSoft = 12 << 20
	testReserveHard = 8 << 20
	testBatchMsgs   = 16
	testMsgBytes    = 4 << 10 // 64 KiB per send
)

func TestDiskReserveFloorsAgree(t *testing.T) {
	if config.MinDiskReserveHard != storage.MinReserveHard {
		t.Fatalf("config allows a hard reserve of %d, storage needs %d", config.MinDiskReserveHard, storage.MinReserveHard)
	}
}

// smallDisk puts a node's data on a fresh small filesystem with test
// reserves and a fast statfs.
func smallDisk(o *Options, fs *testutil.SmallFS, soft, hard int64) {
	o.Config.System.Path = fs.Dir + "/data"
	o.Config.System.Disk = config.Disk{ReserveSoft: config.Size(soft), ReserveHard: config.Size(hard), CheckInterval: config.Duration(20 * time.Millisecond)}
}

// fill leaves about leave bytes free on fs and waits until the node's
// guard measured it (a write by another process is seen at its next
// statfs), returning the filler's path.
func fill(t *testing.T, n *Node, fs *testutil.SmallFS, leave int64) string {
	t.Helper()
	path := fs.Fill("filler", leave)
	deadline := time.Now().Add(5 * time.Second)
	for n.store.Space().Free() > fs.Free()+1<<20 {
		if time.Now().After(deadline) {
			t.Fatalf("the guard says %d bytes free, statfs %d", n.store.Space().Free(), fs.Free())
		}
		time.Sleep(5 * time.Millisecond)
	}
	return path
}

// numberedBatch is testBatchMsgs messages whose payloads start with their
// sequence numbers from first on.
func numberedBatch(first int) []wire.Message {
	msgs := make([]wire.Message, testBatchMsgs)
	for i := range msgs {
		p := make([]byte, testMsgBytes)
		binary.LittleEndian.PutUint64(p, uint64(first+i))
		msgs[i] = client.NewMessage(p)
	}
	return msgs
}

// pollAllNumbered reads partition 0 from offset 0 and checks that it
// holds exactly the messages 0..n-1 in order.
func pollAllNumbered(t *testing.T, ctx context.Context, c *client.Client, stream uint32, n int) {
	t.Helper()
	seen := 0
	for seen < n {
		p, err := c.PollMessages(ctx, wire.SingleConsumer(wire.ID(1)), wire.ID(stream), wire.ID(0), wire.Partition(0),
			wire.OffsetStrategy(uint64(seen)), 100, false)
		if err != nil {
			t.Fatalf("poll from %d: %v", seen, err)
		}
		if p.MessagesCount == 0 {
			break
		}
		it := p.Messages()
		for m, ok := it.Next(); ok; m, ok = it.Next() {
			if got := binary.LittleEndian.Uint64(m.Payload); m.Offset != uint64(seen) || got != uint64(seen) {
				t.Fatalf("message at offset %d carries %d, want %d", m.Offset, got, seen)
			}
			seen++
		}
	}
	if seen != n {
		t.Fatalf("%d acknowledged messages readable, %d were acknowledged", seen, n)
	}
}

// diskGauges reads iggy.disk.state and iggy.disk.refused.
func diskGauges(t *testing.T, reader *sdkmetric.ManualReader) (state, refused int64) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	state, refused = -1, -1
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Gauge[int64]:
				if m.Name == "iggy.disk.state" && len(d.DataPoints) == 1 {
					state = d.DataPoints[0].Value
				}
			case metricdata.Sum[int64]:
				if m.Name == "iggy.disk.refused" && len(d.DataPoints) == 1 {
					refused = d.DataPoints[0].Value
				}
			}
		}
	}
	return state, refused
}

// isNoSpace reports whether err is the node's answer to a write refused
// for lack of space.
func isNoSpace(err error) bool {
	code, ok := wire.CodeOf(err)
	return ok && code == wire.ErrCannotWriteToFile
}

// producerLog records what a producer receives, send by send, merging
// runs of the same answer, for the benchmarks page (docs/benchmarks.md,
// "What a producer receives when the disk fills").
type producerLog struct {
	lines []string
	last  string
	count int
	free  [2]int64
}

func (l *producerLog) add(what string, free int64) {
	if what == l.last {
		l.count++
		l.free[1] = free
		return
	}
	l.flush()
	l.last, l.count, l.free = what, 1, [2]int64{free, free}
}

func (l *producerLog) note(what string) { l.flush(); l.lines = append(l.lines, "  "+what) }

func (l *producerLog) flush() {
	if l.count > 0 {
		l.lines = append(l.lines, fmt.Sprintf("  %4d x %-45s free %.1f -> %.1f MiB", l.count, l.last,
			float64(l.free[0])/(1<<20), float64(l.free[1])/(1<<20)))
	}
	l.last, l.count = "", 0
}

func (l *producerLog) String() string { l.flush(); return strings.Join(l.lines, "\n") }

func outcome(err error) string {
	if err == nil {
		return "acknowledged"
	}
	code, _ := wire.CodeOf(err)
	return fmt.Sprint(code)
}

// Issue 17 item 4 on one node, its data on a real 32 MiB filesystem:
// as the disk fills, the producer's sends are acknowledged, then
// refused with CannotWriteToFile (10006, not 57 forever); the node stays
// up, polls, reads and a new login are served, every acknowledged
// message is readable, the metrics say writes are refused, and so below
// the hard reserve (taken by another writer); once the space is freed,
// writes are taken again without a restart.
func TestFullDiskRefusesWritesServesReadsAndRecovers(t *testing.T) {
	fs := testutil.MountSmallFS(t, 32<<20)
	reader := sdkmetric.NewManualReader()
	var logs testutil.Buffer
	n := startNodes(t, 1, func(o *Options) {
		smallDisk(o, fs, testReserveSoft, testReserveHard)
		o.MeterProvider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
		o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})[0]
	ctx, c := rootClient(t, n)
	s, err := c.CreateStream(ctx, "full", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, wire.ID(s.ID), "t", 1, nil); err != nil {
		t.Fatal(err)
	}
	var seq producerLog
	seq.note(fmt.Sprintf("32 MiB tmpfs, reserve_soft 12 MiB, reserve_hard 8 MiB; a filler leaves 15 MiB; sends of %d x %d KiB", testBatchMsgs, testMsgBytes>>10))
	filler := fill(t, n, fs, testReserveSoft+3<<20)
	send := func() error {
		_, err := c.SendMessages(ctx, wire.ID(s.ID), wire.ID(0), wire.PartitionID(0), numberedBatch(0))
		seq.add("send: "+outcome(err), fs.Free())
		return err
	}

	acked, sends := 0, 0
	var refusal error
	deadline := time.Now().Add(30 * time.Second)
	for refusal == nil && sends < 400 && time.Now().Before(deadline) {
		_, err := c.SendMessages(ctx, wire.ID(s.ID), wire.ID(0), wire.PartitionID(0), numberedBatch(acked))
		seq.add("send: "+outcome(err), fs.Free())
		sends++
		switch {
		case err == nil:
			acked += testBatchMsgs
		case isNoSpace(err):
			refusal = err
		default:
			t.Fatalf("send %d while the disk fills: %v, want success or CannotWriteToFile", sends, err)
		}
	}
	if refusal == nil || acked == 0 {
		t.Fatalf("after %d sends (%d messages acknowledged, %d bytes free) no refusal: %v", sends, acked, fs.Free(), refusal)
	}
	for i := range 5 {
		start := time.Now()
		if err := send(); !isNoSpace(err) || time.Since(start) > 2*time.Second {
			t.Fatalf("send %d on the full disk: %v after %v, want CannotWriteToFile at once", i, err, time.Since(start))
		}
	}
	_, err = c.CreateStream(ctx, "another", nil)
	seq.add("CreateStream: "+outcome(err), fs.Free())
	if !isNoSpace(err) {
		t.Fatalf("CreateStream on the full disk: %v, want CannotWriteToFile", err)
	}
	err = c.StoreConsumerOffset(ctx, wire.SingleConsumer(wire.ID(1)), wire.ID(s.ID), wire.ID(0), wire.Partition(0), 1, wire.AckQuorum)
	seq.add("StoreConsumerOffset (quorum): "+outcome(err), fs.Free())
	if !isNoSpace(err) {
		t.Fatalf("StoreConsumerOffset (quorum) on the full disk: %v, want CannotWriteToFile", err)
	}

	// Reads and logins are still served, in both full states.
	servesReads := func(phase string) {
		t.Helper()
		if streams, err := c.GetStreams(ctx); err != nil || len(streams) != 1 {
			t.Fatalf("GetStreams %s: %v %v", phase, streams, err)
		}
		_, c2 := rootClient(t, n)
		pollAllNumbered(t, ctx, c2, s.ID, acked)
		if err := c2.StoreConsumerOffset(ctx, wire.SingleConsumer(wire.ID(2)), wire.ID(s.ID), wire.ID(0), wire.Partition(0), 1, wire.AckNone); err != nil {
			t.Fatalf("StoreConsumerOffset (no ack) %s: %v", phase, err)
		}
		seq.note("GetStreams, a new login, a poll of every acknowledged message, a NoAck offset: served")
	}
	servesReads("below the soft reserve")
	if state, refused := diskGauges(t, reader); state != 1 || refused < 7 {
		t.Fatalf("iggy.disk.state %d, iggy.disk.refused %d; want 1 and >= 7", state, refused)
	}

	seq.note("another writer takes the disk down to 6 MiB, under the hard reserve")
	filler2 := fs.Fill("filler2", testReserveHard-2<<20)
	deadline = time.Now().Add(5 * time.Second)
	for n.store.Space().State() != storage.SpaceHard {
		if time.Now().After(deadline) {
			t.Fatalf("guard at %v with %d bytes free", n.store.Space().State(), fs.Free())
		}
		time.Sleep(5 * time.Millisecond)
	}
	for range 3 {
		if err := send(); !isNoSpace(err) {
			t.Fatalf("send below the hard reserve: %v, want CannotWriteToFile", err)
		}
	}
	servesReads("below the hard reserve")
	if state, _ := diskGauges(t, reader); state != 2 {
		t.Fatalf("iggy.disk.state %d below the hard reserve, want 2", state)
	}
	for _, line := range []string{"below the soft reserve", "below the hard reserve"} {
		if got := strings.Count(logs.String(), line); got != 1 {
			t.Fatalf("%q was logged %d times, want once per state change", line, got)
		}
	}

	seq.note("both fillers deleted")
	if err := errors.Join(os.Remove(filler), os.Remove(filler2)); err != nil {
		t.Fatal(err)
	}
	freed := time.Now()
	deadline = freed.Add(10 * time.Second)
	for {
		_, err := c.SendMessages(ctx, wire.ID(s.ID), wire.ID(0), wire.PartitionID(0), numberedBatch(acked))
		seq.add("send: "+outcome(err), fs.Free())
		if err == nil {
			acked += testBatchMsgs
			break
		}
		if !isNoSpace(err) || time.Now().After(deadline) {
			t.Fatalf("send after the space was freed: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	seq.note(fmt.Sprintf("writes accepted again %v after the space was freed", time.Since(freed).Round(time.Millisecond)))
	if _, err := c.CreateStream(ctx, "another", nil); err != nil {
		t.Fatalf("CreateStream after the space was freed: %v", err)
	}
	pollAllNumbered(t, ctx, c, s.ID, acked)
	if state, _ := diskGauges(t, reader); state != 0 {
		t.Fatalf("iggy.disk.state %d after the space was freed", state)
	}
	if n.refs.restarts.Load() != 0 {
		t.Fatalf("%d actor restarts", n.refs.restarts.Load())
	}
	t.Logf("what the producer received, in order:\n%s", seq.String())
}

// Item 4's retry loop: a group of one whose journal append is refused
// for space (admitted above the soft reserve, the batch itself would cut
// into the hard one) answers the producer CannotWriteToFile, not 57
// which the SDK replays for ever, and logs it once, not per send.
func TestJournalAppendOutOfSpaceIsAnsweredNotReplayed(t *testing.T) {
	fs := testutil.MountSmallFS(t, 32<<20)
	var logs testutil.Buffer
	n := startNodes(t, 1, func(o *Options) {
		smallDisk(o, fs, testReserveHard, testReserveHard) // no band: admission and the store disagree
		o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})[0]
	ctx, c := rootClient(t, n)
	s, err := c.CreateStream(ctx, "journal", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, wire.ID(s.ID), "t", 1, nil); err != nil {
		t.Fatal(err)
	}
	filler := fill(t, n, fs, testReserveHard+2<<20)
	big := make([]wire.Message, 64) // 4 MiB: fits above the soft line, not above the hard one once stored
	for i := range big {
		big[i] = client.NewMessage(make([]byte, 64<<10))
	}
	for i := range 5 {
		start := time.Now()
		_, err := c.SendMessages(ctx, wire.ID(s.ID), wire.ID(0), wire.PartitionID(0), big)
		if !isNoSpace(err) || time.Since(start) > 2*time.Second {
			t.Fatalf("send %d: %v after %v, want CannotWriteToFile at once", i, err, time.Since(start))
		}
	}
	if !n.acceptsClientWrites() {
		t.Fatal("the guard refused at admission: this test is about the journal path")
	}
	if got := strings.Count(logs.String(), "journal append failed for lack of disk space"); got != 1 {
		t.Fatalf("the journal failure was logged %d times for 5 refused sends, want once", got)
	}
	if strings.Contains(logs.String(), `msg="journal append failed"`) {
		t.Fatal("a space failure was logged as a plain journal failure")
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SendMessages(ctx, wire.ID(s.ID), wire.ID(0), wire.PartitionID(0), big); err != nil {
		t.Fatalf("send after the space was freed: %v", err)
	}
	if !strings.Contains(logs.String(), "journal append succeeds again") {
		t.Fatal("the end of the failures was not logged")
	}
}

// The cluster variant: three nodes, replica 2's data on a small
// filesystem. The other two keep committing; replica 2 stores what
// commits until its hard reserve, then its partition replica stops once
// and waits out of the group (no restart loop), while it still serves
// logins and reads and refuses client writes sent to it. Once space is
// freed it catches up with everything committed meanwhile.
func TestClusterKeepsCommittingPastAFullBackup(t *testing.T) {
	fs := testutil.MountSmallFS(t, 32<<20)
	nodes := startClusterWith(t, 3, func(o *Options) {
		if o.Config.Cluster.ReplicaID == 2 {
			smallDisk(o, fs, testReserveSoft, testReserveHard)
			if os.Getenv("CLUSTER_LOG") == "" {
				o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
			}
		}
	})
	full := nodes[2]
	ctx, c := rootClient(t, nodes[0])
	streamID, group := streamWithTopic(t, ctx, c, nodes[0], "cluster")
	filler := fill(t, full, fs, testReserveSoft+2<<20)
	restartsBefore := full.refs.restarts.Load()

	acked := 0
	send := func(count int) {
		t.Helper()
		for range count {
			if _, err := c.SendMessages(ctx, wire.ID(streamID), wire.ID(0), wire.PartitionID(0), numberedBatch(acked)); err != nil {
				t.Fatalf("send through the primary with a full backup (%d acknowledged): %v", acked, err)
			}
			acked += testBatchMsgs
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for full.refs.restarts.Load() == restartsBefore {
		if time.Now().After(deadline) {
			t.Fatalf("replica 2 at %v with %d bytes free and %d restarts after %d messages", full.store.Space().State(),
				fs.Free(), full.refs.restarts.Load()-restartsBefore, acked)
		}
		send(4)
	}
	if full.store.Space().AcceptsClientWrites() {
		t.Fatalf("replica 2 stopped storing with the guard at %v", full.store.Space().State())
	}
	send(20) // the two others go on committing
	time.Sleep(3 * time.Second)
	if r := full.refs.restarts.Load() - restartsBefore; r != 1 {
		t.Fatalf("replica 2's partition actor restarted %d times while waiting for space, want once", r)
	}

	// The full node: logins and reads served, client writes refused.
	ctx2, c2 := rootClient(t, full)
	if streams, err := c2.GetStreams(ctx2); err != nil || len(streams) != 1 {
		t.Fatalf("GetStreams on the full node: %v %v", streams, err)
	}
	if _, err := c2.SendMessages(ctx2, wire.ID(streamID), wire.ID(0), wire.PartitionID(0), numberedBatch(0)); !isNoSpace(err) {
		t.Fatalf("a send to the full node: %v, want CannotWriteToFile", err)
	}
	if p, err := c2.PollMessages(ctx2, wire.SingleConsumer(wire.ID(1)), wire.ID(streamID), wire.ID(0), wire.Partition(0),
		wire.FirstStrategy(), 10, false); err != nil || p.MessagesCount == 0 {
		t.Fatalf("a poll on the full node: %v %v", p, err)
	}
	pollAllNumbered(t, ctx, c, streamID, acked)

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	_, want := storedBatches(nodes[0], group)
	deadline = time.Now().Add(30 * time.Second)
	for {
		_, got := storedBatches(full, group)
		if got == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica 2 holds %d batches 30 s after the space was freed, the primary %d", got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
	rec0, _ := storedBatches(nodes[0], group)
	rec2, _ := storedBatches(full, group)
	if string(rec0) != string(rec2) {
		t.Fatal("replica 2's segments differ from the primary's after catching up")
	}
	send(2)
	if _, err := c2.SendMessages(ctx2, wire.ID(streamID), wire.ID(0), wire.PartitionID(0), numberedBatch(acked)); err != nil {
		t.Fatalf("a send to replica 2 after the space was freed: %v", err)
	}
	acked += testBatchMsgs
	pollAllNumbered(t, ctx, c, streamID, acked)
}
