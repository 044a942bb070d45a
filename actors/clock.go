package actors

import (
	"container/heap"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"iggynode/wire"
)

// nodeClock is the node's consensus time and the deadlines of its
// consensus groups and its node-level heartbeat (DESIGN.md "Timers, not
// sweeps"). Time is counted in 10 ms ticks of the monotonic clock since
// the node started, so it never slows down when a goroutine is late. An
// actor advances its core by the ticks that passed (vsr.Replica.Elapse)
// whenever it handles a message, and tells the clock when its next timer
// is due; the clock's goroutine sleeps until the earliest deadline and
// wakes that actor with a tick then, not before. The cost of time is
// therefore proportional to the groups that have a timer running, not to
// the groups that exist: a quiet group (vsr quiescence) has none, and an
// idle node wakes a few times a second.
type nodeClock struct {
	start time.Time
	mu    sync.Mutex
	due   deadlineHeap
	at    map[uint64]*deadline // by key: a group id, or livenessKey
	// sooner wakes the clock's goroutine when a deadline earlier than the
	// one it sleeps for is scheduled.
	sooner chan struct{}
}

// livenessKey is the node-level heartbeat's deadline key (no group id is
// this high: partition ids use 52 bits, the metadata group is 1 << 63).
const livenessKey = ^uint64(0)

type deadline struct {
	group uint64
	pid   *actor.PID
	tick  uint64
	index int
}

func newNodeClock() *nodeClock {
	return &nodeClock{start: time.Now(), at: map[uint64]*deadline{}, sooner: make(chan struct{}, 1)}
}

// now is the current tick.
func (c *nodeClock) now() uint64 { return uint64(time.Since(c.start) / tickInterval) }

// schedule asks for a tick to pid at tick `at` (or as soon as it passed).
// A group has at most one deadline: the earlier one stays.
func (c *nodeClock) schedule(group uint64, pid *actor.PID, at uint64) {
	c.mu.Lock()
	earliest := len(c.due) == 0 || at < c.due[0].tick
	if d := c.at[group]; d != nil {
		if d.tick > at || !d.pid.Equal(pid) {
			d.tick, d.pid = at, pid
			heap.Fix(&c.due, d.index)
		}
	} else {
		d := &deadline{group: group, pid: pid, tick: at}
		c.at[group] = d
		heap.Push(&c.due, d)
	}
	c.mu.Unlock()
	if earliest {
		select {
		case c.sooner <- struct{}{}:
		default:
		}
	}
}

// next is the earliest deadline's tick (ok false: none).
func (c *nodeClock) next() (uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.due) == 0 {
		return 0, false
	}
	return c.due[0].tick, true
}

// untilTick is how long until tick starts.
func (c *nodeClock) untilTick(tick uint64) time.Duration {
	return time.Until(c.start.Add(time.Duration(tick) * tickInterval))
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

// pending is how many partition groups have a deadline (a gauge: the
// awake ones).
func (c *nodeClock) pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(c.due)
	for _, key := range []uint64{wire.MetadataGroup, livenessKey} {
		if c.at[key] != nil {
			n--
		}
	}
	return n
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

// runClock sleeps until the earliest deadline and wakes the actors whose
// deadline passed, until the node stops.
func (n *Node) runClock() {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	var due []*actor.PID
	for {
		due = n.clock.expired(n.clock.now(), due[:0])
		for i, pid := range due {
			n.root().Send(pid, &tick{})
			due[i] = nil
		}
		wait := time.Hour
		if at, ok := n.clock.next(); ok {
			wait = max(n.clock.untilTick(at), 0)
		}
		t.Reset(wait)
		select {
		case <-n.stop:
			return
		case <-t.C:
		case <-n.clock.sooner:
			if !t.Stop() {
				<-t.C
			}
		}
	}
}

// elapseTo advances core to tick now (vsr.Replica.Elapse) and reports
// whether time passed.
func elapseTo(core interface{ Elapse(int) int }, tk *timeKeeper, now uint64) bool {
	if now <= tk.lastTick {
		return false
	}
	core.Elapse(int(min(now-tk.lastTick, 1<<20)))
	tk.lastTick = now
	return true
}

// timeKeeper is the time an actor's core keeps with the node's clock:
// the tick it was advanced to and the tick it asked to be woken at.
type timeKeeper struct {
	lastTick, scheduled uint64
}

// arm asks the clock to wake pid at the core's next due tick (k ticks
// after the last advance, armed false: none), forgetting a deadline that
// nothing needs any more.
func (tk *timeKeeper) arm(c *nodeClock, key uint64, pid *actor.PID, k int, armed bool) {
	if !armed {
		if tk.scheduled != 0 {
			c.cancel(key)
			tk.scheduled = 0
		}
		return
	}
	due := tk.lastTick + uint64(k)
	if tk.scheduled != 0 && tk.scheduled <= due {
		return
	}
	c.schedule(key, pid, due)
	tk.scheduled = due
}
