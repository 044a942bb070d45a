package wire

import (
	"bytes"
	"testing"
)

// The indexed slice is AppendRecordHeader's, header and frames, for every
// start and count over a batch of uneven frames; a batch whose offset
// deltas are not its frame indexes gets no table.
func TestFrameTableSlicesLikeTheWalk(t *testing.T) {
	var frames [][]byte
	for i := 0; i < 9; i++ {
		frames = append(frames, testFrame(uint64(i+1), uint32(i), uint32(i*10), bytes.Repeat([]byte{byte('a' + i)}, 1+i*37), nil))
	}
	b := testBatch(5000, frames...)
	Batch(b).StampAppend(100, 777)
	table, ok := BuildFrameTable(b)
	if !ok || table.Bytes() != 12*9 {
		t.Fatalf("table %v, %d bytes", ok, table.Bytes())
	}
	for start := uint64(90); start <= 112; start++ {
		for count := uint32(0); count <= 11; count++ {
			wantHdr, wantFrames, wantN := AppendRecordHeader([]byte{9}, b, start, count)
			for _, tb := range []FrameTable{table, {}} { // an empty table walks
				hdr, fr, n := AppendRecordHeaderIndexed([]byte{9}, b, tb, start, count)
				if n != wantN || !bytes.Equal(hdr, wantHdr) || !bytes.Equal(fr, wantFrames) {
					t.Fatalf("start %d count %d, table of %d: %d messages, header equal %v, frames equal %v; walk %d", start, count,
						tb.Bytes(), n, bytes.Equal(hdr, wantHdr), bytes.Equal(fr, wantFrames), wantN)
				}
			}
		}
	}
	odd := testBatch(5000, testFrame(1, 0, 0, []byte("x"), nil), testFrame(2, 5, 0, []byte("y"), nil))
	if _, ok := BuildFrameTable(odd); ok {
		t.Fatal("a batch with offset deltas 0, 5 got a table")
	}
}
