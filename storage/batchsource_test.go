package storage

import (
	"bytes"
	"errors"
	"os"
	"testing"

	"iggynode/wire"
)

// A batch source reads the stored batch, and a run of it, byte for byte
// into memory, across batch files (they roll every 64 KiB here); a batch
// whose file was deleted after the source was made fails the read
// instead of producing something else.
func TestBatchSourceSendsTheStoredBatch(t *testing.T) {
	s := openTest(t)
	const group = 7
	var batches [][]byte
	base := uint64(0)
	for i := 0; i < 12; i++ {
		b := makeBatch(t, base, 20, 700, byte(i))
		if err := s.AppendBatch(group, base, b, false); err != nil {
			t.Fatal(err)
		}
		batches = append(batches, b)
		base += 20
	}
	for i, b := range batches {
		src, err := s.BatchSource(group, uint64(i*20))
		if err != nil {
			t.Fatal(err)
		}
		if src.Len() != len(b) {
			t.Fatalf("batch %d: source of %d bytes, stored %d", i, src.Len(), len(b))
		}
		mem, err := src.AppendTo([]byte("x"))
		if err != nil || !bytes.Equal(mem[1:], b) || mem[0] != 'x' {
			t.Fatalf("batch %d: AppendTo %v", i, err)
		}
		// A run of the batch's bytes (a slice's frames), sent and read.
		from, to := 256+i*31, len(b)-i*17
		part := src.(interface {
			Range(from, to int) wire.SpliceSource
		}).Range(from, to)
		if mem, err := part.AppendTo(nil); err != nil || !bytes.Equal(mem, b[from:to]) || part.Len() != to-from {
			t.Fatalf("batch %d: range [%d, %d) AppendTo %v", i, from, to, err)
		}
	}
	if _, err := s.BatchSource(group, 5); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a source inside a batch: %v", err)
	}
	src, err := s.BatchSource(group, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeletePartition(group); err != nil {
		t.Fatal(err)
	}
	if _, err := src.AppendTo(nil); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the source of a deleted file: %v, want not-exist", err)
	}
}

// A source made before its partition was deleted never serves the files
// written under the same names afterwards (a purge, or a topic deleted
// and created again, reuses the group's directory and base offsets):
// whole or a run, read or mapped, it fails instead.
func TestBatchSourceRefusesANewFileUnderItsName(t *testing.T) {
	s := openTest(t)
	const group = 9
	old := makeBatch(t, 0, 20, 700, 1)
	if err := s.AppendBatch(group, 0, old, false); err != nil {
		t.Fatal(err)
	}
	src, err := s.BatchSource(group, 0)
	if err != nil {
		t.Fatal(err)
	}
	part := src.(interface {
		Range(from, to int) wire.SpliceSource
	}).Range(300, 900)
	if err := s.DeletePartition(group); err != nil {
		t.Fatal(err)
	}
	renewed := makeBatch(t, 0, 20, 700, 2) // same layout, other bytes
	if err := s.AppendBatch(group, 0, renewed, false); err != nil {
		t.Fatal(err)
	}
	if b, err := src.AppendTo(nil); err == nil {
		t.Fatalf("the old source read %d bytes of the new file (new batch: %v)", len(b), bytes.Equal(b, renewed))
	}
	if b, err := part.AppendTo(nil); err == nil {
		t.Fatalf("the old run read %d bytes of the new file", len(b))
	}
	if m, ok := src.(wire.MappableSource); ok {
		if _, _, err := m.Map(); err == nil {
			t.Fatal("the old source mapped the new file")
		}
	}
	fresh, err := s.BatchSource(group, 0)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := fresh.AppendTo(nil); err != nil || !bytes.Equal(b, renewed) {
		t.Fatalf("a source made after the new write: %v", err)
	}
}
