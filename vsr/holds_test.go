package vsr

import (
	"testing"

	"iggynode/wire"
)

// HoldsMemoryOf tells the shell when the core no longer reads a request
// buffer: a group of one holds a prepare until it commits and retains
// nothing after; a group with backups also holds its committed prepares
// for repair. Solo says which kind of group it is.
func TestHoldsMemoryOfUntilCommittedAndNotRetained(t *testing.T) {
	solo := New(Config{Group: 5})
	if !solo.Solo() {
		t.Fatal("a replica of one is not Solo")
	}
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

	c := newCluster(3)
	if c.reps[0].Solo() {
		t.Fatal("a replica of three is Solo")
	}
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
}
