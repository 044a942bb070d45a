package actors

import (
	"bytes"
	"testing"

	"iggynode/internal/framebuf"
	"iggynode/partition"
	"iggynode/vsr"
	"iggynode/wire"
)

// A prepare sent to a peer pins its pooled buffer: the partition's own
// release then leaves the bytes alone until the replica plane's writer
// unpins them; any frame whose body lies in the buffer is pinned (the
// prepare's by its first byte, any other by a search); a released or
// pruned prepare is pinned no more.
func TestPooledPrepareSendsPinTheirBuffer(t *testing.T) {
	framebuf.SetPoison(true)
	t.Cleanup(func() { framebuf.SetPoison(false) })
	const size = 200 << 10
	buf := framebuf.Get(size)
	if buf == nil {
		t.Fatal("a 200 KiB frame is not pooled")
	}
	frame := buf.Bytes()
	for i := range frame {
		frame[i] = byte(i)
	}
	want := append([]byte(nil), frame...)
	var pp pooledPrepares
	prep := frame[1000:] // a prepare in front of its batch, as onSend builds it
	pp.add(buf, prep[wire.HeaderSize:])
	head := append([]byte(nil), prep[:wire.HeaderSize]...) // the core sends a copy of the header
	wire.HeaderOf(head).SetCommand(wire.CmdPrepare)
	viewHead := make([]byte, wire.HeaderSize)
	wire.HeaderOf(viewHead).SetCommand(wire.CmdStartView)

	pin := pp.pinFor(vsr.Envelope{To: 1, Head: head, Body: prep[wire.HeaderSize:]})
	if pin == nil {
		t.Fatal("a prepare's body in a pooled buffer was sent unpinned")
	}
	other := pp.pinFor(vsr.Envelope{To: 2, Head: viewHead, Body: frame[5000:6000]})
	if other == nil {
		t.Fatal("a body inside the buffer, not at a prepare's start, was sent unpinned")
	}
	if pp.pinFor(vsr.Envelope{To: 1, Head: viewHead, Body: make([]byte, 100)}) != nil {
		t.Fatal("a body outside every pooled buffer was pinned")
	}
	// The partition lets go (pooled.go, release): the pins keep the bytes.
	pp.released(buf)
	buf.Release()
	other.Unpin()
	if !bytes.Equal(frame, want) {
		t.Fatal("the buffer was recycled while a queued frame still pinned it")
	}
	pin.Unpin()
	if frame[0] != framebuf.PoisonByte {
		t.Fatal("the last unpin did not recycle the buffer")
	}
	if pp.pinFor(vsr.Envelope{To: 1, Head: head, Body: prep[wire.HeaderSize:]}) != nil || len(pp.byBody) != 0 || len(pp.byBuf) != 0 {
		t.Fatal("a released buffer is still pinned by its prepare")
	}
	// Journaled ops are forgotten once the core holds them no more.
	b2 := framebuf.Get(size)
	f2 := b2.Bytes()
	e2 := pp.add(b2, f2[wire.HeaderSize:])
	var ph wire.PrepareHeader
	ph.Op = 7
	ph.Encode(wire.HeaderOf(f2))
	pp.journal([][]byte{f2})
	if e2.op != 7 {
		t.Fatalf("journaled op %d, want 7", e2.op)
	}
	pp.prune(7)
	if pp.byBody[e2.key] != e2 {
		t.Fatal("pruned an op the core still holds")
	}
	pp.prune(8)
	if len(pp.byBody) != 0 || len(pp.journaled) != 0 {
		t.Fatal("an op below the core's held range is still kept")
	}
	b2.Release()
}

// A peer's prepare adopted by a backup is forgotten once the commit point
// passes its op, even when the core never journaled it (a RepairPrepare
// held out of order and dropped by a view change): its entry would
// otherwise keep the buffer and grow the maps. Applied before that, its
// reference goes to the log once (takeAdopted).
func TestAdoptedPrepareIsForgottenPastItsOpAndHandedOverOnce(t *testing.T) {
	var pp pooledPrepares
	adopt := func(op uint64) (*framebuf.Buf, []byte) {
		buf := framebuf.Get(100 << 10)
		frame := buf.Bytes()
		ph := wire.PrepareHeader{Op: op}
		ph.Encode(wire.HeaderOf(frame))
		pp.adopt(buf, frame)
		return buf, frame
	}
	held, heldFrame := adopt(7) // a repair adopts out of order
	adopt(5)                    // never journaled, never applied
	pp.prune(6)
	if len(pp.byBody) != 1 || pp.byBuf[held] == nil {
		t.Fatalf("after the commit point passed op 5: %d entries, op 7's kept: %v", len(pp.byBody), pp.byBuf[held] != nil)
	}
	batch := heldFrame[wire.HeaderSize:]
	if o := pp.takeAdopted(batch); o != partition.Owner(held) {
		t.Fatalf("takeAdopted handed %v, want op 7's buffer", o)
	}
	if o := pp.takeAdopted(batch); o != nil {
		t.Fatalf("a second takeAdopted handed %v: the reference would be released twice", o)
	}
	pp.prune(8)
	if len(pp.byBody) != 0 || len(pp.byBuf) != 0 || len(pp.journaled) != 0 {
		t.Fatalf("entries left past every op: %d, %d, %d", len(pp.byBody), len(pp.byBuf), len(pp.journaled))
	}
}
