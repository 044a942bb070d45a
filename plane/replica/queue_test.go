package replicaplane

import (
	"testing"

	"iggynode/wire"
)

func queued(cmd wire.Command, body int) outFrame {
	h := make([]byte, wire.HeaderSize)
	wire.HeaderOf(h).SetCommand(cmd)
	return outFrame{head: h, body: make([]byte, body)}
}

// The queue grows to its frame bound, refuses past its byte bound, and
// hands the node heartbeat (urgent lane) out before everything queued.
func TestFrameQueueBoundsAndUrgentLane(t *testing.T) {
	q := newFrameQueue(1000, 100*1024)
	for i := 0; i < 90; i++ {
		if !q.push(queued(wire.CmdPrepare, 1024-wire.HeaderSize)) {
			t.Fatalf("frame %d refused under both bounds", i)
		}
	}
	if len(q.ring) < 90 || len(q.ring) > 128 {
		t.Fatalf("ring of %d slots for 90 frames: it should have grown just enough", len(q.ring))
	}
	for q.push(queued(wire.CmdPrepare, 1024-wire.HeaderSize)) {
	}
	if q.bytes > 100*1024 || q.n < 90 {
		t.Fatalf("%d frames, %d bytes: the byte bound (100 KiB) did not hold", q.n, q.bytes)
	}
	if !q.push(queued(wire.CmdNodeHeartbeat, 48)) {
		t.Fatal("the node heartbeat was refused by a queue full of prepares")
	}
	got := q.take(nil, 4)
	if wire.HeaderOf(got[0].head).Command() != wire.CmdNodeHeartbeat || wire.HeaderOf(got[1].head).Command() != wire.CmdPrepare {
		t.Fatalf("take order %v, %v: the urgent frame goes first", wire.HeaderOf(got[0].head).Command(), wire.HeaderOf(got[1].head).Command())
	}
	small := newFrameQueue(2, 1<<30)
	small.push(queued(wire.CmdCommit, 0))
	small.push(queued(wire.CmdCommit, 0))
	if small.push(queued(wire.CmdCommit, 0)) {
		t.Fatal("a third frame in a queue of two")
	}
	if n := q.close(); n == 0 || q.push(queued(wire.CmdCommit, 0)) {
		t.Fatalf("close dropped %d frames and still takes pushes", n)
	}
}
