package actors

import (
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"iggynode/client"
	"iggynode/config"
	"iggynode/wire"
)

// The budget asks the partitions used least recently to shed, never the
// one that grew, and that one sheds itself only what the others cannot
// cover.
func TestMemoryBudgetShedsLeastRecentlyUsedFirst(t *testing.T) {
	sys := actor.NewActorSystem()
	asked := make(chan string, 16)
	spawn := func(name string) *actor.PID {
		return sys.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
			if _, ok := ctx.Message().(*shedMemory); ok {
				asked <- name
			}
		}))
	}
	b := newMemoryBudget(10<<20, sys.Root)
	old, mid, hot := b.open(spawn("old")), b.open(spawn("mid")), b.open(spawn("hot"))
	if own := old.set(4 << 20); own != 0 {
		t.Fatalf("within the budget, asked to shed %d", own)
	}
	mid.set(4 << 20)
	old.touch() // a poll: old is now used more recently than mid
	if own := hot.set(4 << 20); own != 0 {
		t.Fatalf("the others cover the excess, yet asked to shed %d itself", own)
	}
	select {
	case name := <-asked:
		if name != "mid" {
			t.Fatalf("%s asked to shed first, want mid (least recently used)", name)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("nobody asked to shed with the budget exceeded")
	}
	mid.set(0) // mid shed everything
	if got := b.usedBytes(); got != 8<<20 {
		t.Fatalf("used %d after mid shed, want 8 MiB", got)
	}
	// One partition alone over the budget sheds its own excess.
	if own := hot.set(20 << 20); own <= 0 {
		t.Fatal("a partition alone over the budget was not told to shed")
	}
}

// partition.memory_budget on a real node: many partitions with data stay
// within the budget (the least recently used shed), and polls of the
// ranges they dropped read the segments.
func TestMemoryBudgetBoundsTheNodesCaches(t *testing.T) {
	cfg := config.Default()
	cfg.System.Path = t.TempDir()
	cfg.TCP.Address, cfg.QUIC.Enabled, cfg.WebSocket.Enabled = "127.0.0.1:0", false, false
	cfg.HTTP.Address = "127.0.0.1:0"
	cfg.Partition.MemoryBudget = 4 << 20
	n := startNode(t, Options{Config: cfg, RootUsername: "iggy", RootPassword: "iggy"})
	ctx, c := rootClient(t, n)
	if _, err := c.CreateStream(ctx, "mem", nil); err != nil {
		t.Fatal(err)
	}
	const parts, sends = 16, 8
	if _, err := c.CreateTopic(ctx, wire.ID(0), "t", parts, nil); err != nil {
		t.Fatal(err)
	}
	payload := make([]byte, 64<<10) // 16 partitions x 8 x 64 KiB = 8 MiB, twice the budget
	for i := range sends {
		for p := uint32(0); p < parts; p++ {
			payload[0], payload[1] = byte(p), byte(i)
			if _, err := c.SendMessages(ctx, wire.ID(0), wire.ID(0), wire.PartitionID(p), []wire.Message{client.NewMessage(payload)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for n.memory.usedBytes() > n.memory.limit && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond) // the victims shed in their own turns
	}
	if used := n.memory.usedBytes(); used > n.memory.limit {
		t.Fatalf("partitions hold %d bytes in memory, the budget is %d", used, n.memory.limit)
	}
	if n.memory.sheds.Load() == 0 {
		t.Fatal("8 MiB in a 4 MiB budget and nothing was shed")
	}
	for p := uint32(0); p < parts; p++ {
		polled, err := c.PollMessages(ctx, wire.SingleConsumer(wire.ID(1)), wire.ID(0), wire.ID(0), wire.Partition(p), wire.OffsetStrategy(0), sends, false)
		if err != nil {
			t.Fatal(err)
		}
		msgs := client.Messages(polled)
		if len(msgs) != sends {
			t.Fatalf("partition %d: polled %d messages, %d were sent", p, len(msgs), sends)
		}
		for i, m := range msgs {
			if m.Payload[0] != byte(p) || m.Payload[1] != byte(i) || len(m.Payload) != len(payload) {
				t.Fatalf("partition %d message %d is not the one sent", p, i)
			}
		}
	}
}
