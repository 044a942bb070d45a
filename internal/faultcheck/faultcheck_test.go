package faultcheck

import (
	"strings"
	"testing"
	"time"
)

func copyOf(attempts ...uint64) [][]byte {
	var out [][]byte
	for _, a := range attempts {
		_, p := Batch(a)
		out = append(out, p...)
	}
	return out
}

func history(acked ...uint64) History {
	h := History{Acked: map[uint64]bool{}}
	for _, a := range acked {
		h.Order = append(h.Order, a)
		h.Acked[a] = true
	}
	return h
}

func TestCheck(t *testing.T) {
	torn := copyOf(1, 2)
	torn = torn[:len(torn)-1]
	cases := []struct {
		name   string
		h      History
		copies [][][]byte
		want   string // "" for a clean verdict, else a problem's substring
		check  func(Verdict) bool
	}{
		{"clean, an unacknowledged send stored once", history(1, 3), [][][]byte{copyOf(1, 2, 3), copyOf(1, 2, 3)}, "",
			func(v Verdict) bool { return v.StoredSends == 3 && v.AckedMessages == 2*MessagesPerSend }},
		{"lost", history(1, 2, 3), [][][]byte{copyOf(1, 3)}, "missing", func(v Verdict) bool { return v.Lost == 1 }},
		{"duplicate", history(1, 2), [][][]byte{copyOf(1, 2, 2)}, "stored twice", func(v Verdict) bool { return v.Duplicates == 1 }},
		{"out of order", history(1, 2), [][][]byte{copyOf(2, 1)}, "out of order", func(v Verdict) bool { return v.OutOfOrder == 2 }},
		{"torn send", history(1), [][][]byte{torn}, "not whole", nil},
		{"replicas differ in length", history(1), [][][]byte{copyOf(1, 2), copyOf(1)}, "holds", nil},
		{"replicas differ in content", history(1), [][][]byte{copyOf(1, 2), copyOf(1, 3)}, "differs", nil},
		{"nothing read", history(1), nil, "no replica", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			names := []string{"a", "b", "c"}
			v := Check(tc.h, names[:len(tc.copies)], tc.copies)
			if tc.want == "" && !v.OK() {
				t.Fatalf("problems %v", v.Problems)
			}
			if tc.want != "" && !strings.Contains(strings.Join(v.Problems, "; "), tc.want) {
				t.Fatalf("problems %v, want one with %q", v.Problems, tc.want)
			}
			if tc.check != nil && !tc.check(v) {
				t.Fatalf("verdict %+v", v)
			}
		})
	}
}

func TestHistoryGaps(t *testing.T) {
	t0 := time.Unix(1000, 0)
	h := History{AckTimes: []time.Time{t0.Add(1 * time.Second), t0.Add(2 * time.Second), t0.Add(7 * time.Second), t0.Add(8 * time.Second)}}
	if g := h.LongestGap(t0.Add(1500*time.Millisecond), t0.Add(9*time.Second)); g != 5*time.Second {
		t.Fatalf("longest gap %v, want 5s", g)
	}
	// No acknowledgement after since: the whole window is a gap.
	if g := h.LongestGap(t0.Add(8500*time.Millisecond), t0.Add(20*time.Second)); g != 11500*time.Millisecond {
		t.Fatalf("trailing gap %v", g)
	}
	if d := h.FirstAckAfter(t0.Add(2500 * time.Millisecond)); d != 4500*time.Millisecond {
		t.Fatalf("first ack after %v", d)
	}
	if d := h.FirstAckAfter(t0.Add(9 * time.Second)); d != -1 {
		t.Fatalf("first ack after the last: %v", d)
	}
}
