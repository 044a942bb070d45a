package vsr

import (
	"testing"

	"iggynode/wire"
)

// HoldsMemoryOf tells the shell when the core no longer reads a request
// buffer: a group of one holds a prepare until it commits and retains
// nothing after; a group with backups also holds its committed prepares
// for repair. HeldFrom is the first op that may still be held, and below
// it nothing is: the retained ring's oldest, else the first uncommitted.
func TestHoldsMemoryOfUntilCommittedAndNotRetained(t *testing.T) {
	solo := New(Config{Group: 5})
	buf := make([]byte, 0, 4096)
	frame := append(buf, frameWith("pooled")...)
	other := frameWith("plain")
	if err := solo.Submit(Request{Client: wire.U128{Lo: 7}, Request: 1, Operation: wire.OpCreateStream, Frame: frame}, 10); err != nil {
		t.Fatal(err)
	}
	if !solo.HoldsMemoryOf(buf) {
		t.Fatal("a submitted prepare's buffer is not held")
	}
	if solo.HoldsMemoryOf(other[:0]) {
		t.Fatal("a buffer the core never saw is held")
	}
	rd := solo.Ready()
	if !solo.HoldsMemoryOf(buf) {
		t.Fatal("a journaling prepare's buffer is not held")
	}
	if len(rd.Journal) != 1 || !wire.Aliases(buf, rd.Journal[0]) {
		t.Fatal("the journaled prepare is not the submitted buffer")
	}
	solo.Journaled(1, nil)
	if rd = solo.Ready(); len(rd.Commit) != 1 {
		t.Fatalf("committed %d ops", len(rd.Commit))
	}
	if solo.HoldsMemoryOf(buf) {
		t.Fatal("a group of one still holds a committed prepare")
	}
	if got := solo.HeldFrom(); got != 2 {
		t.Fatalf("a group of one that committed op 1 holds from op %d, want 2", got)
	}

	c := newCluster(3)
	buf = make([]byte, 0, 4096)
	frame = append(buf, frameWith("replicated")...)
	if err := c.reps[0].Submit(Request{Client: wire.U128{Lo: 7}, Request: 1, Operation: wire.OpCreateStream, Frame: frame}, 10); err != nil {
		t.Fatal(err)
	}
	c.settle()
	if len(c.committed[0]) != 1 {
		t.Fatalf("the primary committed %d ops", len(c.committed[0]))
	}
	if !c.reps[0].HoldsMemoryOf(buf) {
		t.Fatal("a primary with backups does not hold the committed prepare it retains for repair")
	}
	if got := c.reps[0].HeldFrom(); got != 1 {
		t.Fatalf("a primary retaining op 1 holds from op %d, want 1", got)
	}
	c.reps[0].ShedRetained(0)
	if c.reps[0].HoldsMemoryOf(buf) || c.reps[0].HeldFrom() != 2 {
		t.Fatalf("after shedding the retained prepares: holds %v, from op %d (want false, 2)", c.reps[0].HoldsMemoryOf(buf), c.reps[0].HeldFrom())
	}
}
