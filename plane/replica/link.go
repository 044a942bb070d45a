package replicaplane

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"iggynode/internal/framebuf"
	"iggynode/wire"
)

const (
	readBufferSize  = 64 << 10
	writeBufferSize = 64 << 10 // TLS only; plain TCP writes with writev
)

// outFrame is one queued frame: a header and an optional body, kept apart
// so a shared body is never copied to be sent, and the pin that keeps
// their memory from being reused until the frame is written or dropped
// (Node.SendPinned).
type outFrame struct {
	head, body []byte
	pin        wire.Pin
}

// unpin drops the frame's pin, once.
func (f *outFrame) unpin() {
	if f.pin != nil {
		f.pin.Unpin()
		f.pin = nil
	}
}

// unpinAll drops the pins of frames no longer read.
func unpinAll(frames []outFrame) {
	for i := range frames {
		frames[i].unpin()
	}
}

// frameQueue is a link's bounded outbound queue (3.2 rule 1): push never
// blocks, a full or closed queue refuses. It is bounded in frames
// (message_bus.peer_queue_capacity) and in bytes
// (message_bus.peer_queue_bytes), and its ring grows as frames queue up
// to the frame bound, so a large bound costs nothing on an idle link.
// Urgent frames (the node-level heartbeat, wire.Command.Extension) have a
// lane of their own, taken first: a link full of a mass election's frames
// must not starve the heartbeat that tells the peer this node is alive.
type frameQueue struct {
	mu              sync.Mutex
	ring            []outFrame
	start, n        int
	capacity        int
	bytes, maxBytes int
	urgent          []outFrame
	closed          bool
	wake            chan struct{} // capacity 1: "there is something to take"
}

// urgentCapacity bounds the urgent lane: a heartbeat or two per interval.
const urgentCapacity = 8

func newFrameQueue(capacity, maxBytes int) frameQueue {
	return frameQueue{ring: make([]outFrame, min(capacity, 64)), capacity: capacity, maxBytes: maxBytes, wake: make(chan struct{}, 1)}
}

func (q *frameQueue) push(f outFrame) bool {
	size := len(f.head) + len(f.body)
	q.mu.Lock()
	urgent := wire.HeaderOf(f.head).Command().Extension()
	switch {
	case q.closed:
		q.mu.Unlock()
		return false
	case urgent:
		if len(q.urgent) == urgentCapacity {
			q.mu.Unlock()
			return false
		}
		q.urgent = append(q.urgent, f)
	default:
		if q.n == q.capacity || (q.n > 0 && q.bytes+size > q.maxBytes) {
			q.mu.Unlock()
			return false
		}
		if q.n == len(q.ring) {
			q.grow()
		}
		q.ring[(q.start+q.n)%len(q.ring)] = f
		q.n++
		q.bytes += size
	}
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return true
}

// grow doubles the ring (up to the capacity), oldest frame first.
func (q *frameQueue) grow() {
	ring := make([]outFrame, min(2*len(q.ring), q.capacity))
	for i := 0; i < q.n; i++ {
		ring[i] = q.ring[(q.start+i)%len(q.ring)]
	}
	q.ring, q.start = ring, 0
}

// take appends up to max queued frames to dst, urgent ones first, then
// the oldest.
func (q *frameQueue) take(dst []outFrame, max int) []outFrame {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.urgent) > 0 && len(dst) < max {
		dst = append(dst, q.urgent[0])
		q.urgent[0] = outFrame{}
		q.urgent = q.urgent[1:]
	}
	for ; q.n > 0 && len(dst) < max; q.n-- {
		f := q.ring[q.start]
		dst = append(dst, f)
		q.bytes -= len(f.head) + len(f.body)
		q.ring[q.start] = outFrame{}
		q.start = (q.start + 1) % len(q.ring)
	}
	return dst
}

// close refuses further pushes and returns how many frames it discarded,
// whose pins it drops.
func (q *frameQueue) close() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	k := q.n + len(q.urgent)
	for i := 0; i < q.n; i++ {
		q.ring[(q.start+i)%len(q.ring)].unpin()
	}
	unpinAll(q.urgent)
	clear(q.ring)
	q.n, q.bytes, q.urgent = 0, 0, nil
	return k
}

// link is one installed connection: a reader goroutine (the one that ran
// the handshake) and a writer goroutine.
type link struct {
	peer     uint8
	outbound bool
	tls      bool
	raw      net.Conn // the TCP socket; closing it stops both goroutines
	conn     net.Conn // raw, or the TLS connection over it
	br       *bufio.Reader
	queue    frameQueue
	done     chan struct{}
	once     sync.Once
	err      error // why the link ended; set once, before done closes
	// attempt is the dial that made an outbound link (nil inbound): only
	// the peer's current attempt may install it (Node.install).
	attempt *dialAttempt
}

func (n *Node) newLink(raw, conn net.Conn, br *bufio.Reader, peer uint8, outbound bool) *link {
	return &link{peer: peer, outbound: outbound, tls: conn != raw, raw: raw, conn: conn, br: br,
		queue: newFrameQueue(n.cfg.PeerQueueCapacity, n.cfg.PeerQueueBytes), done: make(chan struct{})}
}

// serve runs the link until either side fails or the node closes, and
// returns after both goroutines have stopped.
func (l *link) serve(n *Node, p *peer) {
	_ = l.raw.SetDeadline(time.Time{}) // no keepalive, no idle limit (3.1 rule 7)
	writerDone := make(chan struct{})
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		defer close(writerDone)
		l.writeLoop(n, p)
	}()
	err := l.readLoop(n, p)
	l.shutdown(p, err)
	<-writerDone
}

// shutdown ends the link once: queued frames are counted as dropped and
// the socket is closed (no TLS close_notify: nothing waits for it).
func (l *link) shutdown(p *peer, err error) {
	l.once.Do(func() {
		l.err = err
		p.dropped.Add(uint64(l.queue.close()))
		close(l.done)
		_ = l.raw.Close()
	})
}

// readLoop applies the connection-level rules of 1.1 to every frame: the
// size window (rule 1) before the body is allocated, a defined command
// (rule 3), both closing the link; commands 0-4, 14-16, 8 and 13 are
// skipped without allocating (rule 5); the rest go to the Handler.
func (l *link) readLoop(n *Node, p *peer) error {
	var hdr wire.Header
	for {
		if _, err := io.ReadFull(l.br, hdr[:]); err != nil {
			return err
		}
		size := hdr.Size()
		if err := wire.CheckFrameSize(size, n.cfg.MaxFrameSize); err != nil {
			n.log.Warn("replica frame refused, closing", "peer", l.peer, "err", err)
			return fmt.Errorf("framing: %w", err)
		}
		cmd := hdr.Command()
		if !cmd.Valid() && !cmd.Extension() {
			n.log.Warn("replica frame refused, closing", "peer", l.peer, "command", uint8(cmd))
			return fmt.Errorf("framing: command %d is not a command", uint8(cmd))
		}
		if !wire.ValidReplicaCommand(cmd) && !cmd.Extension() { // the extensions are ours (wire/nodeheartbeat.go)
			if _, err := l.br.Discard(int(size) - wire.HeaderSize); err != nil {
				return err
			}
			p.ignored.Add(1)
			n.log.Debug("replica frame dropped", "peer", l.peer, "command", cmd)
			continue
		}
		// A prepare's frame becomes the backup's journaled prepare and
		// cached batch: read into a pooled buffer, it goes back to the
		// pool once the partition is done with it (actors/pooled.go).
		var owner *framebuf.Buf
		if cmd == wire.CmdPrepare || cmd == wire.CmdRepairPrepare {
			owner = framebuf.Get(int(size))
		}
		var frame []byte
		if owner != nil {
			frame = owner.Bytes()
		} else {
			frame = make([]byte, size)
		}
		copy(frame, hdr[:])
		if _, err := io.ReadFull(l.br, frame[wire.HeaderSize:]); err != nil {
			if owner != nil {
				owner.Release() // nothing else saw it
			}
			return err
		}
		p.received.Add(1)
		n.h.Frame(l.peer, frame, owner)
	}
}

// writeLoop drains the queue, up to MaxBatch frames per write: one writev
// (net.Buffers) on plain TCP, one buffered flush through TLS.
func (l *link) writeLoop(n *Node, p *peer) {
	batch := make([]outFrame, 0, n.cfg.MaxBatch)
	bufs := make(net.Buffers, 0, 2*n.cfg.MaxBatch)
	var bw *bufio.Writer
	if l.tls {
		bw = bufio.NewWriterSize(l.conn, writeBufferSize)
	}
	for {
		select {
		case <-l.queue.wake:
		case <-l.done:
			return
		}
		for {
			batch = l.queue.take(batch[:0], n.cfg.MaxBatch)
			if len(batch) == 0 {
				break
			}
			var err error
			if bw != nil {
				err = writeBuffered(bw, batch)
			} else {
				bufs, err = writeVectored(l.conn, bufs, batch)
			}
			unpinAll(batch) // written, copied into the TLS buffer, or never to be
			clear(batch)
			if err != nil {
				p.dropped.Add(uint64(len(batch)))
				l.shutdown(p, fmt.Errorf("write: %w", err))
				return
			}
			p.sent.Add(uint64(len(batch)))
		}
	}
}

func writeVectored(w io.Writer, bufs net.Buffers, batch []outFrame) (net.Buffers, error) {
	bufs = bufs[:0]
	for _, f := range batch {
		bufs = append(bufs, f.head)
		if len(f.body) > 0 {
			bufs = append(bufs, f.body)
		}
	}
	all := bufs // WriteTo consumes its receiver; keep ours to clear it
	_, err := all.WriteTo(w)
	clear(bufs)
	return bufs, err
}

func writeBuffered(bw *bufio.Writer, batch []outFrame) error {
	for _, f := range batch {
		if _, err := bw.Write(f.head); err != nil {
			return err
		}
		if _, err := bw.Write(f.body); err != nil {
			return err
		}
	}
	return bw.Flush()
}
