package actors

import (
	"testing"
	"time"
)

// A turn runs even when every worker is busy (the pool must never make a
// mailbox wait for another actor's turn to end), and after the pool is
// closed.
func TestWorkerDispatcherNeverWaits(t *testing.T) {
	d := newWorkerDispatcher(1, 300)
	ran := make(chan string, 4)
	waitRun := func(what string) {
		t.Helper()
		select {
		case got := <-ran:
			if got != what {
				t.Fatalf("ran %q, want %q", got, what)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%q never ran", what)
		}
	}
	release := make(chan struct{})
	for range 3 { // the worker and two more goroutines held
		d.Schedule(func() { <-release })
	}
	d.Schedule(func() { ran <- "while busy" })
	waitRun("while busy")
	close(release)
	d.close()
	d.Schedule(func() { ran <- "after close" })
	waitRun("after close")
	if d.Throughput() != 300 {
		t.Fatalf("throughput %d", d.Throughput())
	}
}
