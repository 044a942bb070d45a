package actors

import (
	"encoding/binary"
	"errors"
	"log/slog"
	"regexp"
	"strconv"
	"testing"
	"time"

	"iggynode/internal/testutil"
	"iggynode/wire"
)

func tailFrame(op uint64, operation wire.Operation, body []byte) []byte {
	f := make([]byte, wire.HeaderSize, wire.HeaderSize+len(body))
	(&wire.PrepareHeader{Op: op, Operation: operation}).Encode(wire.HeaderOf(f))
	return append(f, body...)
}

func batchAt(base uint64) []byte {
	b := make([]byte, wire.BatchHeaderSize+3)
	binary.LittleEndian.PutUint64(b[wire.BatchBaseOffsetOffset:], base)
	b[len(b)-1] = byte(base)
	return b
}

// The tail keeps the last ops' headers, batches by reference and other
// bodies inline, and rebuilds the frames byte for byte; an unreadable
// batch cuts it there.
func TestCommittedTailRoundTrip(t *testing.T) {
	var tail committedTail
	var want [][]byte
	for op := uint64(1); op <= 6; op++ {
		f := tailFrame(op, wire.OpSendMessages, batchAt(op*10))
		if op == 4 {
			f = tailFrame(op, wire.OpStoreConsumerOffset, []byte{9, 8, 7})
		}
		if op == 5 {
			f = tailFrame(op, wire.OpDeleteConsumerOffset, nil)
		}
		tail.add(f, 4)
		want = append(want, f)
	}
	enc := tail.appendTo(nil)
	if len(enc) != tail.encodedSize() {
		t.Fatalf("encoded %d bytes, size says %d", len(enc), tail.encodedSize())
	}
	back := decodeCommittedTail(enc)
	read := func(base uint64) ([]byte, error) { return batchAt(base), nil }
	got := back.frames(read)
	if len(got) != 4 {
		t.Fatalf("%d frames kept, want the last 4", len(got))
	}
	for i, f := range got {
		if string(f) != string(want[2+i]) {
			t.Fatalf("frame of op %d differs", 3+i)
		}
	}
	cut := back.frames(func(base uint64) ([]byte, error) {
		if base == 30 {
			return nil, errors.New("segment removed")
		}
		return batchAt(base), nil
	})
	if len(cut) != 3 || string(cut[0]) != string(want[3]) {
		t.Fatalf("an unreadable op 3 left %d frames", len(cut))
	}
	if d := decodeCommittedTail(enc[:len(enc)-3]); len(d.ops) != 3 {
		t.Fatalf("a damaged last record left %d ops", len(d.ops))
	}
	// Once full, the tail reuses the dropped op's buffers.
	if allocs := testing.AllocsPerRun(100, func() { tail.add(want[3], 4) }); allocs != 0 {
		t.Fatalf("a full tail allocates %v times per commit", allocs)
	}
}

// 9.4 with 7.2: a partition replica restarted after committing ops can
// serve their prepares to repair (rebuilt from its segments and the
// stored tail), so a primary-elect that lacks them after a whole-cluster
// restart gets them from it.
func TestRestartedPartitionServesItsCommittedTail(t *testing.T) {
	var logs testutil.Buffer
	adjust := func(o *Options) {
		o.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	nodes := startNodes(t, 3, adjust)
	for _, n := range nodes {
		if err := n.SetReplicaRoster(replicaRoster(nodes)); err != nil {
			t.Fatal(err)
		}
	}
	send := oneTopic(t, nodes[0], "tail")
	send(0, 6)
	restartNode(t, nodes, 0, adjust, nil)
	re := regexp.MustCompile(`partition rejoining the cluster" partition=0 view=\d+ commit=(\d+) next_offset=\d+ servable_from=(\d+) retained=(\d+)`)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if m := re.FindStringSubmatch(logs.String()); m != nil {
			commit, _ := strconv.Atoi(m[1])
			from, _ := strconv.Atoi(m[2])
			retained, _ := strconv.Atoi(m[3])
			// The sends came faster than the tail's save interval: only
			// the save at the stop brings the tail up to the commit point.
			if commit < 6 || from > commit-5 || from+retained-1 != commit {
				t.Fatalf("after a restart at commit %d the partition serves ops %d.. (%d rebuilt)", commit, from, retained)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no rejoin line:\n%s", lastLines(logs.String(), 20))
		}
	}
}

// decodeCommittedTail reads stored bytes: any input decodes without a
// panic, and what it decodes encodes back to the bytes it consumed.
func FuzzDecodeCommittedTail(f *testing.F) {
	var tail committedTail
	tail.add(tailFrame(1, wire.OpSendMessages, batchAt(5)), 4)
	tail.add(tailFrame(2, wire.OpStoreConsumerOffset, []byte{1, 2}), 4)
	f.Add(tail.appendTo(nil))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		d := decodeCommittedTail(b)
		enc := d.appendTo(nil)
		if len(enc) != d.encodedSize() || len(enc) > len(b) || string(enc) != string(b[:len(enc)]) {
			t.Fatalf("decoded %d ops re-encode to %d bytes, not a prefix of the input", len(d.ops), len(enc))
		}
		_ = d.frames(func(uint64) ([]byte, error) { return nil, errors.New("none") })
	})
}
