package storage

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// An append lets go of the group's index around its write and its fsync:
// reads of the group's stored batches (what a cold poll asks of the
// partition actor, while that actor's segment write runs behind its
// mailbox) are answered while the fsync is held, and a deletion, which
// changes the files, waits for the append to return.
func TestReadsGoOnWhileAnAppendSyncs(t *testing.T) {
	s := openTest(t)
	const group = 7
	first := makeBatch(t, 0, 10, 16, 1)
	if err := s.AppendBatch(group, 0, first, false); err != nil {
		t.Fatal(err)
	}
	entered, release := make(chan struct{}), make(chan struct{})
	var enter sync.Once
	s.beforeSync = func(g uint64) {
		if g == group {
			enter.Do(func() { close(entered) })
			<-release
		}
	}
	var releasing sync.Once
	t.Cleanup(func() { releasing.Do(func() { close(release) }) }) // before the store's Close
	next := makeBatch(t, 10, 10, 16, 2)
	appended := make(chan error, 1)
	go func() {
		_, err := s.AppendBatches(group, [][]byte{next}, true)
		appended <- err
	}()
	<-entered

	read := make(chan error, 1)
	go func() {
		read <- func() error {
			b, err := s.ReadBatch(group, 0)
			if err != nil || !bytes.Equal(b, first) {
				return fmt.Errorf("ReadBatch: %d bytes, %v", len(b), err)
			}
			src, err := s.BatchSource(group, 0)
			if err != nil {
				return fmt.Errorf("BatchSource: %v", err)
			}
			if b, err := src.AppendTo(nil); err != nil || !bytes.Equal(b, first) {
				return fmt.Errorf("BatchSource read: %d bytes, %v", len(b), err)
			}
			if base, ok, err := s.FindBatch(group, 5); err != nil || !ok || base != 0 {
				return fmt.Errorf("FindBatch(5) = %d, %v, %v", base, ok, err)
			}
			seen := false
			if err := s.ScanBatches(group, 0, func(base uint64, b []byte) error {
				seen = seen || (base == 0 && bytes.Equal(b, first))
				return nil
			}); err != nil || !seen {
				return fmt.Errorf("ScanBatches: first batch seen %v, %v", seen, err)
			}
			return nil
		}()
	}()
	select {
	case err := <-read:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("reads of the group waited for its append's fsync")
	}

	deleted := make(chan error, 1)
	go func() { deleted <- s.DeleteBatchesBelow(group, 10) }()
	select {
	case err := <-deleted:
		t.Fatalf("a deletion ran while an append was in flight (err %v)", err)
	case <-time.After(100 * time.Millisecond):
	}
	select {
	case err := <-appended:
		t.Fatalf("the append returned before its fsync (err %v)", err)
	default:
	}
	releasing.Do(func() { close(release) })
	if err := <-appended; err != nil {
		t.Fatal(err)
	}
	if err := <-deleted; err != nil {
		t.Fatal(err)
	}
	got := scanBatches(t, s, group, 0)
	if len(got) != 1 || got[0].n != 10 || !bytes.Equal(got[0].b, next) {
		t.Fatalf("after the append and the deletion: batches %v, want [10]", keysOf(got))
	}
	if _, err := s.ReadBatch(group, 0); !errors.Is(err, ErrNotFound) {
		t.Fatalf("ReadBatch(0) after the deletion: %v, want ErrNotFound", err)
	}
}
