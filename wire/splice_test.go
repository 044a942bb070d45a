package wire

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// memSource is a SpliceSource over memory; fail makes it unreadable.
type memSource struct {
	b    []byte
	fail bool
}

func (m memSource) Len() int { return len(m.b) }
func (m memSource) WriteTo(w io.Writer) (int64, error) {
	if m.fail {
		return 0, errors.New("gone")
	}
	n, err := w.Write(m.b)
	return int64(n), err
}
func (m memSource) AppendTo(dst []byte) ([]byte, error) {
	if m.fail {
		return dst, errors.New("gone")
	}
	return append(dst, m.b...), nil
}

func TestSplicePieces(t *testing.T) {
	built := []byte("abcdef")
	splices := []Splice{{At: 0, Bytes: []byte("X")}, {At: 2, Bytes: []byte("YY")}, {At: 2, From: memSource{b: []byte("Z")}}, {At: 6, Bytes: []byte("W")}}
	var joined []byte
	pieces, err := AppendSplicePieces(nil, built, splices)
	if err != nil {
		t.Fatal(err)
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
	if got, _ := AppendSplicePieces(nil, built, nil); len(got) != 1 || string(got[0]) != "abcdef" {
		t.Fatalf("no splices: %q", got)
	}
	bad := []Splice{{At: 1, From: memSource{b: []byte("Q"), fail: true}}}
	if _, err := JoinSpliced(nil, built, bad); err == nil {
		t.Fatal("an unreadable source joined")
	}
	if _, err := AppendSplicePieces(nil, built, bad); err == nil || !bytes.Contains([]byte(err.Error()), []byte("gone")) {
		t.Fatalf("an unreadable source: %v", err)
	}
}
