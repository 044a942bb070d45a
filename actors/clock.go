package actors

import (
	"container/heap"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// nodeClock is the node's consensus time and the deadlines of its
// partition groups (DESIGN.md "Timers, not sweeps"). Time is counted in
// 10 ms ticks of the monotonic clock since the node started, so it never
// slows down when a goroutine is late. A partition actor advances its core
// by the ticks that passed (vsr.Replica.Elapse) whenever it handles a
// message, and tells the clock when its next timer is due; the clock's
// goroutine wakes it with a tick then and not before. The cost of time is
// therefore proportional to the groups that have a timer running, not to
// the groups that exist: a quiet group (vsr quiescence) has none.
type nodeClock struct {
	start time.Time
	mu    sync.Mutex
	due   deadlineHeap
	at    map[uint64]*deadline // by group
}

type deadline struct {
	group uint64
	pid   *actor.PID
	tick  uint64
	index int
}

func newNodeClock() *nodeClock {
	return &nodeClock{start: time.Now(), at: map[uint64]*deadline{}}
}

// now is the current tick.
func (c *nodeClock) now() uint64 { return uint64(time.Since(c.start) / tickInterval) }

// schedule asks for a tick to pid at tick `at` (or as soon as it passed).
// A group has at most one deadline: the earlier one stays.
func (c *nodeClock) schedule(group uint64, pid *actor.PID, at uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d := c.at[group]; d != nil {
		if d.tick > at || !d.pid.Equal(pid) {
			d.tick, d.pid = at, pid
			heap.Fix(&c.due, d.index)
		}
		return
	}
	d := &deadline{group: group, pid: pid, tick: at}
	c.at[group] = d
	heap.Push(&c.due, d)
}

// cancel forgets a stopped group's deadline.
func (c *nodeClock) cancel(group uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d := c.at[group]; d != nil {
		heap.Remove(&c.due, d.index)
		delete(c.at, group)
	}
}

// expired removes and returns the deadlines due at tick now.
func (c *nodeClock) expired(now uint64, out []*actor.PID) []*actor.PID {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.due) > 0 && c.due[0].tick <= now {
		d := heap.Pop(&c.due).(*deadline)
		delete(c.at, d.group)
		out = append(out, d.pid)
	}
	return out
}

// pending is how many groups have a deadline (a gauge: the awake groups).
func (c *nodeClock) pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.due)
}

type deadlineHeap []*deadline

func (h deadlineHeap) Len() int           { return len(h) }
func (h deadlineHeap) Less(i, j int) bool { return h[i].tick < h[j].tick }
func (h deadlineHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *deadlineHeap) Push(x any) {
	d := x.(*deadline)
	d.index = len(*h)
	*h = append(*h, d)
}
func (h *deadlineHeap) Pop() any {
	old := *h
	d := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return d
}

// runClock wakes the groups whose deadline passed, and the metadata and
// liveness actors every tick, until the node stops.
func (n *Node) runClock() {
	t := time.NewTicker(tickInterval)
	defer t.Stop()
	var due []*actor.PID
	for {
		select {
		case <-n.stop:
			return
		case <-t.C:
		}
		root := n.root()
		root.Send(n.refs.metadata, &tick{})
		if l := n.refs.liveness.Load(); l != nil {
			root.Send(l, &tick{})
		}
		due = n.clock.expired(n.clock.now(), due[:0])
		for i, pid := range due {
			root.Send(pid, &tick{})
			due[i] = nil
		}
	}
}
