package wire

import "testing"

func TestSplicePieces(t *testing.T) {
	built := []byte("abcdef")
	splices := []Splice{{At: 0, Bytes: []byte("X")}, {At: 2, Bytes: []byte("YY")}, {At: 2, Bytes: []byte("Z")}, {At: 6, Bytes: []byte("W")}}
	var joined []byte
	for _, p := range AppendSplicePieces(nil, built, splices) {
		if len(p) == 0 {
			t.Fatalf("empty piece")
		}
		joined = append(joined, p...)
	}
	if want := "XabYYZcdefW"; string(joined) != want || string(JoinSpliced(nil, built, splices)) != want {
		t.Fatalf("pieces %q, joined %q, want %q", joined, JoinSpliced(nil, built, splices), want)
	}
	if got := AppendSplicePieces(nil, built, nil); len(got) != 1 || string(got[0]) != "abcdef" {
		t.Fatalf("no splices: %q", got)
	}
}
