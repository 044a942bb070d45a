package spanfile

import (
	"bytes"
	"testing"
)

// Uint reads the ids Int cannot: the metadata group is 1<<63.
func TestUintReadsFullRange(t *testing.T) {
	var b bytes.Buffer
	w := NewWriter(&b)
	if err := w.Write(&Record{Name: SpanOp, Attributes: map[string]any{AttrGroup: uint64(1) << 63, AttrOp: 5, "neg": -1}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	err := Read(&b, func(r *Record) error {
		if g, ok := Uint(r.Attributes, AttrGroup); !ok || g != 1<<63 {
			t.Fatalf("group %d %v", g, ok)
		}
		if _, ok := Int(r.Attributes, AttrGroup); ok {
			t.Fatal("Int read 1<<63")
		}
		if op, ok := Uint(r.Attributes, AttrOp); !ok || op != 5 {
			t.Fatalf("op %d %v", op, ok)
		}
		if _, ok := Uint(r.Attributes, "neg"); ok {
			t.Fatal("Uint read -1")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
