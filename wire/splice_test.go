package wire

import (
	"errors"
	"testing"

	"iggynode/internal/testutil"
)

func TestSplicePieces(t *testing.T) {
	built := []byte("abcdef")
	splices := []Splice{{At: 0, Bytes: []byte("X")}, {At: 2, Bytes: []byte("YY")}, {At: 2, From: testutil.MemSource{B: []byte("Z")}}, {At: 6, Bytes: []byte("W")}}
	var joined []byte
	buffers := 0
	buffer := func(n int) []byte { buffers++; return make([]byte, 0, n) }
	pieces, read, err := AppendSplicePieces(nil, nil, built, splices, buffer)
	if err != nil {
		t.Fatal(err)
	}
	if buffers != 1 || len(read) != 1 || string(read[0]) != "Z" {
		t.Fatalf("the source read into %d buffers, read %q: want one, \"Z\"", buffers, read)
	}
	for _, p := range pieces {
		if len(p) == 0 {
			t.Fatalf("empty piece")
		}
		joined = append(joined, p...)
	}
	one, err := JoinSpliced(nil, built, splices)
	if want := "XabYYZcdefW"; string(joined) != want || string(one) != want || err != nil {
		t.Fatalf("pieces %q, joined %q (%v), want %q", joined, one, err, want)
	}
	if n := SplicedLen(built, splices); n != len("XabYYZcdefW") {
		t.Fatalf("SplicedLen %d", n)
	}
	if got, _, _ := AppendSplicePieces(nil, nil, built, nil, buffer); len(got) != 1 || string(got[0]) != "abcdef" {
		t.Fatalf("no splices: %q", got)
	}
	bad := []Splice{{At: 1, From: testutil.MemSource{B: []byte("Q"), Fail: true}}}
	if _, err := JoinSpliced(nil, built, bad); err == nil {
		t.Fatal("an unreadable source joined")
	}
	if _, _, err := AppendSplicePieces(nil, nil, built, bad, buffer); !errors.Is(err, testutil.ErrSourceGone) {
		t.Fatalf("an unreadable source: %v", err)
	}
}

type countPin struct{ n *int }

func (p countPin) Unpin() { *p.n++ }

// Aliases tells a view of a buffer's memory (up to its capacity) from a
// copy; UnpinSplices drops each pin once, however often it is called.
func TestAliasesAndUnpinSplices(t *testing.T) {
	buf := make([]byte, 10, 100)
	if !Aliases(buf, buf[2:5]) || !Aliases(buf, buf[50:60]) || !Aliases(buf[:0], buf[:100]) {
		t.Fatal("a view of the buffer is not an alias")
	}
	if Aliases(buf, append([]byte(nil), buf...)) || Aliases(buf, nil) || Aliases(nil, buf) || Aliases(buf[:0:0], buf) {
		t.Fatal("a copy, or an empty slice, is an alias")
	}
	if Aliases(buf[:50:50], buf[40:60]) {
		t.Fatal("a slice reaching past the capacity is an alias")
	}
	var n int
	splices := []Splice{{Bytes: buf, Pin: countPin{&n}}, {Bytes: buf}, {Bytes: buf, Pin: countPin{&n}}}
	UnpinSplices(splices)
	UnpinSplices(splices)
	if n != 2 {
		t.Fatalf("%d unpins, want 2", n)
	}
}
