package replicaplane

import (
	"sync/atomic"
	"testing"
	"time"
)

// countedPin counts its Unpins; a second one is a bug (it would hand a
// pooled buffer back while another holder reads it).
type countedPin struct {
	unpins atomic.Int32
	total  *atomic.Int32 // the Unpins of every pin
}

func (p *countedPin) Unpin() {
	if p.unpins.Add(1) != 1 {
		panic("pin dropped twice")
	}
	p.total.Add(1)
}

// A pinned frame's pin is dropped exactly once: after the frame is
// written, at once when Send refuses it (no link, a full queue), and when
// the link is torn down with it still queued. A pin kept past that would
// leak the buffer; one dropped before the write would let it be reused
// under the writer.
func TestPinnedFramesAreUnpinnedOnceWrittenOrDropped(t *testing.T) {
	nodes := startCluster(t, 2, nil)
	eventually(t, "link up", func() bool { return connected(nodes[0], 1) })
	var unpinned atomic.Int32
	var pins []*countedPin
	pin := func() *countedPin {
		p := &countedPin{total: &unpinned}
		pins = append(pins, p)
		return p
	}
	const count = 200
	body := make([]byte, 4096)
	for i := range count {
		head, _ := frameOf(6, 0, uint64(i), body)
		for !nodes[0].SendPinned(1, head, body, pin()) {
			time.Sleep(time.Millisecond) // refused: its pin is dropped already
		}
	}
	eventually(t, "every frame received", func() bool { return len(nodes[1].rec.got(0)) == count })
	eventually(t, "every pin dropped", func() bool { return int(unpinned.Load()) == len(pins) })

	// To ids outside the roster: refused, unpinned.
	head, _ := frameOf(6, 0, 0, nil)
	for _, to := range []uint8{7, 2} {
		p := pin()
		if nodes[0].SendPinned(to, head, nil, p) {
			t.Fatalf("a send to %d was accepted", to)
		}
		if p.unpins.Load() != 1 {
			t.Fatalf("the refused send to %d kept its pin", to)
		}
	}

	// A peer that never reads: the queue fills, refusals drop their pins at
	// once, and closing the node drops those of every frame still queued
	// or in the blocked write.
	ln, conns := fakePeer(t)
	cfg := baseConfig(0, 2)
	cfg.PeerQueueCapacity = 8
	n := startNode(t, cfg)
	linkToFakePeer(t, n, ln, conns)
	big := make([]byte, 1<<20)
	head, _ = frameOf(25, 0, 0, big)
	refused := 0
	for i := 0; i < 2000 && refused < 5; i++ {
		p := pin()
		if !n.SendPinned(1, head, big, p) {
			refused++
			if p.unpins.Load() != 1 {
				t.Fatal("a send refused by a full queue kept its pin")
			}
		}
	}
	if refused < 5 {
		t.Fatal("the queue never filled")
	}
	if int(unpinned.Load()) == len(pins) {
		t.Fatal("frames queued to a peer that reads nothing were all unpinned")
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "every pin dropped after close", func() bool { return int(unpinned.Load()) == len(pins) })
}
