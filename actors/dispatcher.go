package actors

import (
	"github.com/asynkron/protoactor-go/actor"
)

// workerDispatcher runs actor mailbox turns on long-lived goroutines.
// protoactor's default dispatcher starts a goroutine for every turn (each
// time an idle mailbox receives a message); a fresh goroutine starts on a
// small stack and grows it, copying, as the request path goes deeper
// (decode, consensus, storage, telemetry): 13-17% of a node's CPU on
// small sends (docs/benchmarks.md). A worker keeps the stack it grew.
// A turn that finds no idle worker gets its own goroutine, as before, so
// a busy pool never delays or blocks a mailbox.
type workerDispatcher struct {
	throughput int
	work       chan func()
	stop       chan struct{}
}

func newWorkerDispatcher(workers, throughput int) *workerDispatcher {
	d := &workerDispatcher{throughput: throughput, work: make(chan func()), stop: make(chan struct{})}
	for range workers {
		go d.run()
	}
	return d
}

func (d *workerDispatcher) run() {
	for {
		select {
		case fn := <-d.work:
			fn()
		case <-d.stop:
			return
		}
	}
}

// Schedule hands fn to an idle worker, else to a new goroutine.
func (d *workerDispatcher) Schedule(fn func()) {
	select {
	case d.work <- fn:
	default:
		go fn()
	}
}

func (d *workerDispatcher) Throughput() int { return d.throughput }

// close ends the workers; later turns get goroutines of their own.
func (d *workerDispatcher) close() {
	if d != nil {
		close(d.stop)
	}
}

var _ actor.Dispatcher = (*workerDispatcher)(nil)
