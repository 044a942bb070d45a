package e2e

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"syscall"
	"testing"
	"time"

	"iggynode/client"
	"iggynode/wire"
)

// Three node processes and a topic of 1000 partitions that go quiet (no
// timers, no heartbeats of their own, vsr/quiesce.go). The node leading
// every partition group (node 0) is killed with SIGKILL: the others hear
// its node-level heartbeat stop, every quiet group it led elects a new
// primary, and writes to a sample of the partitions succeed again through
// node 1. Every message acknowledged before and after is then on both
// survivors, once, in order (issue 16). A send whose answer the test did
// not get (a timeout during the election) may still have committed:
// produces are at-least-once, so such an attempt may appear in the log, but
// never in place of, between copies of, or out of order with an
// acknowledged one.
func TestKill9PrimaryOfAThousandQuietPartitions(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three child processes")
	}
	const partitions, sample = 1000, 40
	pc := startProcCluster(t)
	ctx := ctxWithin(t, 4*time.Minute)
	admin := streamWithTopic(t, ctx, pc.clients[0], "quiet", partitions)
	defer admin.Close()

	parts := rand.Perm(partitions)[:sample]
	type ack struct {
		offset  uint64
		payload []byte
	}
	acked := map[int][]ack{}
	failed := map[int][][]byte{} // attempts without an answer
	attempt := 0
	write := func(c *client.Client, p int, round int, within time.Duration) {
		t.Helper()
		deadline := time.Now().Add(within)
		for {
			attempt++ // every attempt is told apart: one that failed may have committed
			payload := []byte(fmt.Sprintf("partition %d round %d attempt %d", p, round, attempt))
			conf, err := c.SendMessages(ctx, wire.ID(0), wire.ID(0), wire.PartitionID(uint32(p)), []wire.Message{client.NewMessage(payload)})
			if err == nil {
				if prev := acked[p]; len(prev) > 0 && conf[0].BaseOffset <= prev[len(prev)-1].offset {
					t.Fatalf("partition %d: acknowledged at offset %d after an acknowledgement at %d", p, conf[0].BaseOffset, prev[len(prev)-1].offset)
				}
				acked[p] = append(acked[p], ack{conf[0].BaseOffset, payload})
				return
			}
			if first := len(failed[p]) == 0; first {
				t.Logf("partition %d round %d: %v", p, round, err) // an outcome-unknown code or a timeout, never a refusal of what committed
			}
			failed[p] = append(failed[p], payload)
			if time.Now().After(deadline) {
				t.Fatalf("partition %d takes no write %v after its primary died: %v", p, within, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	for _, p := range parts {
		write(admin, p, 0, 10*time.Second)
	}
	time.Sleep(2 * time.Second) // the written groups go quiet again

	if err := pc.cmds[0].Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = pc.cmds[0].Wait()
	killed := time.Now()
	var survivor *client.Client
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		// A login commits on the metadata group, which elects too.
		// LoginTimeout: a send that times out drops the connection, and
		// the next one's login waits for a metadata commit among a third
		// of the groups electing.
		c, err := client.Connect(ctx, client.Options{Address: pc.clients[1], Username: "iggy", Password: "iggy",
			RequestTimeout: 10 * time.Second, LoginTimeout: 30 * time.Second})
		if err == nil {
			survivor = c
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no login on a survivor a minute after the kill: %v", err)
		}
	}
	defer survivor.Close()
	for _, p := range parts {
		write(survivor, p, 1, 60*time.Second)
	}
	took := time.Since(killed)

	for _, addr := range pc.clients[1:] {
		c, err := client.Connect(ctx, client.Options{Address: addr, Username: "iggy", Password: "iggy", StayOnNode: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range parts {
			want := acked[p]
			last := want[len(want)-1].offset
			var got []wire.PolledMessage
			for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
				polled, err := c.PollMessages(ctx, wire.SingleConsumer(wire.ID(1)), wire.ID(0), wire.ID(0), wire.Partition(uint32(p)),
					wire.OffsetStrategy(0), 100, false)
				if err != nil {
					t.Fatalf("%s partition %d: %v", addr, p, err)
				}
				got = client.Messages(polled)
				if uint64(len(got)) > last || time.Now().After(deadline) {
					break
				}
			}
			for _, a := range want {
				if a.offset >= uint64(len(got)) {
					t.Fatalf("%s partition %d holds %d messages, one was acknowledged at offset %d", addr, p, len(got), a.offset)
				}
				if m := got[a.offset]; m.Offset != a.offset || !bytes.Equal(m.Payload, a.payload) {
					t.Fatalf("%s partition %d: offset %d holds %q, %q was acknowledged there", addr, p, a.offset, m.Payload, a.payload)
				}
			}
			for i, m := range got {
				if !slices.ContainsFunc(want, func(a ack) bool { return a.offset == m.Offset }) &&
					!slices.ContainsFunc(failed[p], func(f []byte) bool { return bytes.Equal(f, m.Payload) }) {
					t.Fatalf("%s partition %d: offset %d holds %q, which no attempt sent there", addr, p, i, m.Payload)
				}
				if m.Offset != uint64(i) {
					t.Fatalf("%s partition %d: message %d has offset %d", addr, p, i, m.Offset)
				}
				for j := range i {
					if bytes.Equal(got[j].Payload, m.Payload) {
						t.Fatalf("%s partition %d: %q stored at offsets %d and %d", addr, p, m.Payload, j, i)
					}
				}
			}
		}
		_ = c.Close()
	}
	t.Logf("%d of %d quiet partitions took writes again %v after their primary's node died; all acknowledged messages on both survivors",
		sample, partitions, took.Round(10*time.Millisecond))
}
