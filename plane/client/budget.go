package clientplane

import (
	"sync"
	"sync/atomic"
	"time"
)

// frameBudget is the node-wide cap on bytes held by partially read frames
// (Limits.FrameBudget). Readers reserve as their buffers grow and release
// when the frame is delivered or dropped.
type frameBudget struct {
	limit   int64
	held    atomic.Int64
	waiters atomic.Int32
	mu      sync.Mutex
	wake    chan struct{} // closed and replaced by a release while someone waits
}

func (b *frameBudget) init(limit int64) {
	b.limit = limit
	b.wake = make(chan struct{})
}

// tryReserve takes n bytes if they fit. A reservation is also granted when
// nobody else holds any (own is what the caller holds), so a frame larger
// than the whole budget still completes alone instead of waiting for ever.
func (b *frameBudget) tryReserve(n, own int64) bool {
	for {
		cur := b.held.Load()
		if cur != own && cur+n > b.limit {
			return false
		}
		if b.held.CompareAndSwap(cur, cur+n) {
			return true
		}
	}
}

// reserve takes n bytes for a caller that holds own, waiting while they do
// not fit until deadline (zero: no wait) or until stop closes. It reports
// whether the bytes were taken and, if not, whether the deadline (not
// stop) ended the wait.
func (b *frameBudget) reserve(n, own int64, deadline time.Time, stop <-chan struct{}) (ok, timedOut bool) {
	if b.tryReserve(n, own) {
		return true, false
	}
	if deadline.IsZero() {
		return false, true
	}
	b.waiters.Add(1)
	defer b.waiters.Add(-1)
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	for {
		b.mu.Lock()
		wake := b.wake
		b.mu.Unlock()
		// Tried after taking wake: a release in between closes this one.
		if b.tryReserve(n, own) {
			return true, false
		}
		select {
		case <-wake:
		case <-timer.C:
			return false, true
		case <-stop:
			return false, false
		}
	}
}

// release gives n bytes back and wakes the waiters.
func (b *frameBudget) release(n int64) {
	if n == 0 {
		return
	}
	b.held.Add(-n)
	if b.waiters.Load() == 0 {
		return
	}
	b.mu.Lock()
	close(b.wake)
	b.wake = make(chan struct{})
	b.mu.Unlock()
}
