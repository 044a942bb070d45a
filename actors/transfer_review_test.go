package actors

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"iggynode/client"
	"iggynode/internal/testutil"
	"iggynode/storage"
	"iggynode/wire"
)

// Review tests for state transfer (replica-plane.md 7.6-7.9, 9.1-9.5,
// 13.3): the shell's installs and what a boot finds after them. Each test
// names the rule it checks and fails on 9004f01.

// restartNode closes node i of nodes, runs between (if set) on its store
// while it is down, and starts it again on the same data directory and
// replica address with adjust applied to its options.
func restartNode(t *testing.T, nodes []*Node, i int, adjust func(*Options), between func(st *storage.Store)) {
	t.Helper()
	dir, addr := nodes[i].opts.Config.System.Path, nodes[i].ReplicaAddr()
	if err := nodes[i].Close(); err != nil {
		t.Fatal(err)
	}
	if between != nil {
		st, err := storage.Open(dir, storage.Options{})
		if err != nil {
			t.Fatal(err)
		}
		between(st)
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
	opts := clusterNodeOptions(i, len(nodes), dir)
	opts.ReplicaListen = addr
	if adjust != nil {
		adjust(&opts)
	}
	nodes[i] = startNode(t, opts)
	if err := nodes[i].SetReplicaRoster(replicaRoster(nodes)); err != nil {
		t.Fatal(err)
	}
}

// waitSameBatches waits until node n stores exactly the primary's bytes of
// group, failing after 20 s.
func waitSameBatches(t *testing.T, primary, n *Node, group uint64, what string, logs *testutil.Buffer) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		want, wantN := storedBatches(primary, group)
		got, gotN := storedBatches(n, group)
		if wantN > 0 && bytes.Equal(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the replica holds %d batches (%d bytes), the primary %d (%d bytes)\n%s",
				what, gotN, len(got), wantN, len(want), lastLines(logs.String(), 30))
		}
	}
}

// lastLines is the last n lines of a log, actor dead letters left out.
func lastLines(log string, n int) string {
	var keep []string
	for _, l := range strings.Split(log, "\n") {
		if !strings.Contains(l, "DeadLetter") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep[max(len(keep)-n, 0):], "\n")
}

// 7.7 rule 7d, 13.3 rule 5 and 9.5 (SAFETY/LIVENESS: an install must leave
// storage consistent after a crash at any point of it). installPartition
// first deletes the whole partition (DeletePartition: batch files, offsets,
// superblock, floor), then appends the transferred batches one by one
// (unsynced), then the offsets, then the watermark key, then the
// superblock. The watermark ('K' partition/<g>/next) and the applied op
// ('K' partition/<g>/applied) are not under the group's prefix, so
// DeletePartition leaves the previous ones behind. A crash after the
// delete and part of the appends leaves a partition whose batches end
// below the stale watermark of an earlier install: partition.Log.Restore
// refuses it, the partition actor panics at every boot, and the replica
// never catches up again (the same window with no earlier watermark boots
// a fresh core in view 0 that has forgotten its view, or recovers the old
// applied op over segments that no longer hold its batches). The new state
// should be staged and swapped in atomically (13.3 rule 5: staged files
// renamed into place; 7.7 rule 7d: the frontier recorded durably first),
// with the keys rewritten in one batch, or the install redone at boot.
//
// The crash is reproduced on the stopped node's store: exactly the store
// calls installPartition makes before its second batch (the install
// marker, DeletePartition, then AppendBatch of the first transferred
// batch). Fixed by the marker: a boot that finds it drops the partition
// and fetches it again.
func TestCrashInsidePartitionInstallLeavesABootableReplica(t *testing.T) {
	var logs testutil.Buffer
	adjust := func(o *Options) {
		o.Config.Partition.EvictedRingCapacity = 1
		o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	}
	nodes := startNodes(t, 3, adjust)
	relink := unlinkReplica2(t, nodes)
	send := oneTopic(t, nodes[0], "crash")
	send(0, 8)
	relink()
	send(8, 10)
	group, _ := wire.PartitionGroup(0, 0, 0)
	waitSameBatches(t, nodes[0], nodes[2], group, "first transfer", &logs)
	if !logs.Await(`msg="state transfer installed" partition=0 group=`+fmt.Sprint(group), 5*time.Second) {
		t.Fatalf("setup: no partition state transfer was installed")
	}

	// Replica 2 falls behind again and a second transfer is being
	// installed when its process dies: the partition was deleted and the
	// first transferred batch appended.
	var first []byte
	var firstBase uint64
	_ = nodes[0].store.ScanBatches(group, 0, func(base uint64, b []byte) error {
		if first == nil {
			first, firstBase = bytes.Clone(b), base
		}
		return nil
	})
	restartNode(t, nodes, 2, adjust, func(st *storage.Store) {
		// installPartition's first store calls, in its order: the install
		// marker, the delete, the first batch.
		if err := st.Put(installKey(group), []byte{1}, true); err != nil {
			t.Fatal(err)
		}
		if err := st.DeletePartition(group); err != nil {
			t.Fatal(err)
		}
		if err := st.AppendBatch(group, firstBase, first, false); err != nil {
			t.Fatal(err)
		}
	})
	send(10, 12)
	waitSameBatches(t, nodes[0], nodes[2], group, "after a crash inside the install", &logs)
}

// 7.9.4 (SAFETY: a replica installing state that differs from what the
// cluster committed, and acknowledged writes lost cluster-wide).
// installMetadata replaces the state machine but reconciles the partition
// actors only by starting those it does not run yet
// (m.partitions[ref.Group] == nil). The effects of the ops the snapshot
// skips never run here: a partition deleted in that range keeps running
// and its data is never removed, a purged one keeps its messages, and
// since a partition's durable state (batch files, superblock, the applied
// op and watermark keys) is keyed by group id alone, a topic created in
// that range whose group id is reused (stream and topic ids are the lowest
// free, 4.1 packs them into the group id) is started on the deleted
// topic's files and applied op, or keeps the deleted topic's running
// actor. Here replica 2 holds three messages of topic "old"; while it is
// down that stream is deleted, a new stream takes its id, and its topic
// (same group id) receives two messages. After the metadata transfer
// replica 2 runs the new partition on the old incarnation's three batches
// and its applied op 3, above the new group's commit of 2. Either it never
// converges, or (about one run in two here) it wins the partition's view
// change with that commit, becomes primary, and the other replicas
// install its stale offer (installPartition only compares next offsets):
// the two acknowledged messages are gone from every replica and the
// deleted topic's messages are served in their place. An install should
// stop and delete the partitions the snapshot does not name, and delete
// and restart from empty those whose creation id (or purge generation)
// differs from the local incarnation's; a partition's durable state
// should record its creation id so that a boot or an offer of another
// incarnation is refused (7.7 rule 7b's purge generation is never set in
// ICO1 either).
func TestMetadataInstallReplacesPartitionsItsSkippedOpsDeleted(t *testing.T) {
	var logs testutil.Buffer
	adjust := func(o *Options) {
		o.Config.Metadata.JournalSlots = 80 // a checkpoint every 16 ops
		o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	}
	nodes := startClusterWith(t, 3, adjust)
	ctx, c := rootClient(t, nodes[0])
	oldStream, err := c.CreateStream(ctx, "old", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, wire.ID(oldStream.ID), "t", 1, nil); err != nil {
		t.Fatal(err)
	}
	group, _ := wire.PartitionGroup(oldStream.ID, 0, 0)
	for i := range 3 {
		msg := client.NewMessage([]byte(fmt.Sprintf("deleted-%d", i)))
		if _, err := c.SendMessages(ctx, wire.ID(oldStream.ID), wire.ID(0), wire.PartitionID(0), []wire.Message{msg}); err != nil {
			t.Fatal(err)
		}
	}
	waitSameBatches(t, nodes[0], nodes[2], group, "setup", &logs)

	// Replica 2 is down while the stream is deleted and its id reused.
	dir, addr := nodes[2].opts.Config.System.Path, nodes[2].ReplicaAddr()
	if err := nodes[2].Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteStream(ctx, wire.ID(oldStream.ID)); err != nil {
		t.Fatal(err)
	}
	newStream, err := c.CreateStream(ctx, "new", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, wire.ID(newStream.ID), "t", 1, nil); err != nil {
		t.Fatal(err)
	}
	if g, _ := wire.PartitionGroup(newStream.ID, 0, 0); g != group {
		t.Fatalf("setup: the new topic's partition is group %d, not %d", g, group)
	}
	for i := range 2 {
		msg := client.NewMessage([]byte(fmt.Sprintf("fresh-%d", i)))
		if _, err := c.SendMessages(ctx, wire.ID(newStream.ID), wire.ID(0), wire.PartitionID(0), []wire.Message{msg}); err != nil {
			t.Fatal(err)
		}
	}
	createStreams(t, ctx, c, 40) // the primary checkpoints past what replica 2 holds
	opts := clusterNodeOptions(2, 3, dir)
	opts.ReplicaListen = addr
	adjust(&opts)
	nodes[2] = startNode(t, opts)
	if err := nodes[2].SetReplicaRoster(replicaRoster(nodes)); err != nil {
		t.Fatal(err)
	}
	waitSameMetadata(t, nodes[0], nodes[2])
	var installed uint64
	inspect(nodes[2], func(m *metadataActor) { installed = m.transfers.Installed })
	if installed == 0 {
		t.Fatalf("setup: replica 2 caught up without a metadata state transfer")
	}
	// Every replica must end with the new topic's two messages, and none
	// with a message of the deleted topic.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var bad []string
		for i, n := range nodes {
			rec, batches := storedBatches(n, group)
			switch {
			case bytes.Contains(rec, []byte("deleted-")):
				bad = append(bad, fmt.Sprintf("replica %d holds a message of the deleted topic (%d batches)", i, batches))
			case batches != 2 || !bytes.Contains(rec, []byte("fresh-0")) || !bytes.Contains(rec, []byte("fresh-1")):
				bad = append(bad, fmt.Sprintf("replica %d holds %d batches, not the new topic's 2", i, batches))
			}
		}
		if len(bad) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s\n%s", strings.Join(bad, "\n"), lastLines(logs.String(), 20))
		}
	}
}

// 7.9.4 step 3 with 5.12.1 ("a checkpoint (snapshot) keeps only the latest
// reply, while a state transfer carries the whole ring") and 5.12.2 rule 5
// (SPEC DEVIATION): installMetadata decodes the transferred CLIENT_TABLE
// only to check it and throws it away; the client table it keeps is the
// snapshot's, whose rings hold the latest reply alone. After the install
// the replica answers a retried request whose reply is in the primary's
// ring with AlreadyApplied instead of Duplicate(reply): if it becomes
// primary, a client retrying an older pipelined request gets no result.
// The install should replace the table with the decoded ICT2 one (and
// call SetClientTableFrontier with the manifest's frontier).
func TestMetadataInstallKeepsTheTransferredReplyRings(t *testing.T) {
	nodes := startNodes(t, 3, func(o *Options) { o.Config.Metadata.JournalSlots = 80 })
	relink := unlinkReplica2(t, nodes)
	ctx, c := rootClient(t, nodes[0])
	createStreams(t, ctx, c, 40)
	relink()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var snaps [][]byte
		var installed uint64
		for _, n := range []*Node{nodes[0], nodes[2]} {
			inspect(n, func(m *metadataActor) { snaps, installed = append(snaps, m.state.Snapshot()), m.transfers.Installed })
		}
		if installed > 0 && bytes.Equal(snaps[0], snaps[1]) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("setup: replica 2 did not catch up by state transfer (installed %d)", installed)
		}
	}
	var tables [][]byte
	for _, n := range []*Node{nodes[0], nodes[2]} {
		inspect(n, func(m *metadataActor) { tables = append(tables, m.state.Clients().EncodeICT2(true)) })
	}
	if !bytes.Equal(tables[0], tables[1]) {
		t.Fatalf("after the install replica 2's client table (%d bytes as ICT2) lacks the reply rings of the primary's (%d bytes)",
			len(tables[1]), len(tables[0]))
	}
}
