package actors

import (
	"container/list"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/shirou/gopsutil/v4/mem"
)

// memoryBudget is partition.memory_budget: one node-wide bound on the
// bytes partitions keep in memory that they could read back from storage,
// their tail caches of committed batches (partition.Log) and the committed
// part of their in-memory journals, kept for serving repair (the vsr
// core's retained prepares). It is shared by all partitions, least
// recently used first: when a partition's bytes push the node over the
// bound, the partitions used least recently are asked to drop theirs
// (shedMemory), and if that cannot cover it the partition sheds its own.
// A poll of a dropped range reads the segments; a repair below a dropped
// ring gets RangeEvicted and moves on to state transfer (7.5).
//
// An account counts max(cached batch bytes, retained prepare bytes): both
// are suffixes of the same committed log and share their buffers (a
// retained prepare is header + the cached batch), so the longer one is
// what the partition holds. The uncommitted prepares are not counted:
// they cannot be dropped, and they are bounded by prepare_queue_depth per
// group and by the client edge's bytes in flight.
type memoryBudget struct {
	limit int64
	root  *actor.RootContext
	mu    sync.Mutex
	used  int64
	lru   list.List // *memAccount with bytes, most recently used first
	sheds atomic.Int64
}

// memAccount is one partition's share.
type memAccount struct {
	b        *memoryBudget
	pid      *actor.PID
	used     int64
	elem     *list.Element
	shedding bool // asked to shed and not reported since
}

// shedMemory asks a partition actor to drop what it can read back.
type shedMemory struct{}

func newMemoryBudget(limit int64, root *actor.RootContext) *memoryBudget {
	return &memoryBudget{limit: max(limit, 1<<20), root: root}
}

// defaultMemoryBudget is an eighth of the memory the process may use: the
// cgroup's limit when there is one, else the host's memory.
func defaultMemoryBudget() int64 {
	total := int64(4 << 30)
	if v, err := mem.VirtualMemory(); err == nil && v.Total > 0 {
		total = int64(v.Total)
	}
	for _, path := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 && n < total {
			total = n
		}
	}
	return total / 8
}

func (b *memoryBudget) open(pid *actor.PID) *memAccount { return &memAccount{b: b, pid: pid} }

func (b *memoryBudget) usedBytes() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// set reports the account's bytes now. It returns how many bytes the
// caller must drop itself: the part of the excess over the budget that
// the partitions used less recently cannot cover.
func (a *memAccount) set(used int64) (shedOwn int64) {
	if a == nil {
		return 0
	}
	b := a.b
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used += used - a.used
	grew := used > a.used
	a.used = used
	a.shedding = false
	switch {
	case used == 0 && a.elem != nil:
		b.lru.Remove(a.elem)
		a.elem = nil
	case used > 0 && a.elem == nil:
		a.elem = b.lru.PushFront(a)
	case used > 0 && grew:
		b.lru.MoveToFront(a.elem)
	}
	over := b.used - b.limit
	for e := b.lru.Back(); e != nil && over > 0; e = e.Prev() {
		v := e.Value.(*memAccount)
		if v == a || v.shedding {
			continue
		}
		v.shedding = true
		over -= v.used
		b.sheds.Add(1)
		b.root.Send(v.pid, &shedMemory{})
	}
	if over > 0 {
		b.sheds.Add(1)
		return over
	}
	return 0
}

// touch marks the account used now (a poll read it).
func (a *memAccount) touch() {
	if a == nil {
		return
	}
	a.b.mu.Lock()
	if a.elem != nil {
		a.b.lru.MoveToFront(a.elem)
	}
	a.b.mu.Unlock()
}

// close gives the account's bytes back (the partition stopped).
func (a *memAccount) close() {
	if a != nil {
		a.set(0)
	}
}
