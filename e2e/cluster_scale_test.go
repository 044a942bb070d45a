package e2e

import (
	"bytes"
	"fmt"
	"math/rand/v2"
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
// survivors, once, in order (issue 16).
func TestKill9PrimaryOfAThousandQuietPartitions(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three child processes")
	}
	const partitions, sample = 1000, 40
	pc := startProcCluster(t)
	ctx := ctxT(t)
	admin := streamWithTopic(t, ctx, pc.clients[0], "quiet", partitions)
	defer admin.Close()

	parts := rand.Perm(partitions)[:sample]
	acked := map[int][][]byte{}
	write := func(c *client.Client, p int, round int, within time.Duration) {
		t.Helper()
		payload := []byte(fmt.Sprintf("partition %d round %d", p, round))
		deadline := time.Now().Add(within)
		for {
			conf, err := c.SendMessages(ctx, wire.ID(0), wire.ID(0), wire.PartitionID(uint32(p)), []wire.Message{client.NewMessage(payload)})
			if err == nil {
				if conf[0].BaseOffset != uint64(len(acked[p])) {
					t.Fatalf("partition %d: acknowledged at offset %d after %d acknowledged messages", p, conf[0].BaseOffset, len(acked[p]))
				}
				acked[p] = append(acked[p], payload)
				return
			}
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
		c, err := client.Connect(ctx, client.Options{Address: pc.clients[1], Username: "iggy", Password: "iggy",
			RequestTimeout: 10 * time.Second})
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
			var got [][]byte
			for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
				polled, err := c.PollMessages(ctx, wire.SingleConsumer(wire.ID(1)), wire.ID(0), wire.ID(0), wire.Partition(uint32(p)),
					wire.OffsetStrategy(0), 100, false)
				if err != nil {
					t.Fatalf("%s partition %d: %v", addr, p, err)
				}
				got = got[:0]
				for _, m := range client.Messages(polled) {
					got = append(got, m.Payload)
				}
				if len(got) >= len(want) || time.Now().After(deadline) {
					break
				}
			}
			if len(got) != len(want) {
				t.Fatalf("%s partition %d holds %d messages, %d were acknowledged", addr, p, len(got), len(want))
			}
			for i := range want {
				if !bytes.Equal(got[i], want[i]) {
					t.Fatalf("%s partition %d: message %d is %q, %q was acknowledged", addr, p, i, got[i], want[i])
				}
			}
		}
		_ = c.Close()
	}
	t.Logf("%d of %d quiet partitions took writes again %v after their primary's node died; all acknowledged messages on both survivors",
		sample, partitions, took.Round(10*time.Millisecond))
}
