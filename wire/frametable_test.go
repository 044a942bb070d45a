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
			// From the header alone: the same header, the frames' place.
			hdr, from, to, n := AppendSliceHeader([]byte{9}, Batch(b[:BatchHeaderSize]), table, start, count)
			if n != wantN || !bytes.Equal(hdr, wantHdr) || (n > 0 && !bytes.Equal(b[from:to], wantFrames)) {
				t.Fatalf("start %d count %d from the header: %d messages, header equal %v, [%d, %d); walk %d", start, count,
					n, bytes.Equal(hdr, wantHdr), from, to, wantN)
			}
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
	if tb, err := ValidateBatchIndexed(odd, 2); err != nil || !tb.Built() || tb.Bytes() != 0 {
		t.Fatalf("validated with offset deltas 0, 5: table of %d bytes (built %v), %v; want built and empty", tb.Bytes(), tb.Built(), err)
	}
}

// BuildFrameTable over a 1000 x 1 KB batch in the CPU's caches (one batch
// again and again) and out of them (300 batches, 300 MB, in turn): what a
// table costs built at commit, while the batch is hot, against built by
// the first poll that slices it.
func BenchmarkBuildFrameTable(b *testing.B) {
	for _, c := range []struct {
		name    string
		batches int
	}{{"cached", 1}, {"uncached", 300}} {
		b.Run(c.name, func(b *testing.B) {
			frames := make([][]byte, 1000)
			for i := range frames {
				frames[i] = testFrame(uint64(i+1), uint32(i), 0, bytes.Repeat([]byte{'p'}, 1000), nil)
			}
			batches := make([]Batch, c.batches)
			for i := range batches {
				batches[i] = testBatch(1, frames...)
			}
			b.ResetTimer()
			for i := range b.N {
				if _, ok := BuildFrameTable(batches[i%len(batches)]); !ok {
					b.Fatal("no table")
				}
			}
		})
	}
}
