package replicaplane

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"iggynode/wire"
)

const (
	readBufferSize  = 64 << 10
	writeBufferSize = 64 << 10 // TLS only; plain TCP writes with writev
)

// outFrame is one queued frame: a header and an optional body, kept apart
// so a shared body is never copied to be sent.
type outFrame struct{ head, body []byte }

// frameQueue is a link's bounded outbound queue (3.2 rule 1): push never
// blocks, a full or closed queue refuses.
type frameQueue struct {
	mu       sync.Mutex
	ring     []outFrame
	start, n int
	closed   bool
	wake     chan struct{} // capacity 1: "there is something to take"
}

func newFrameQueue(capacity int) frameQueue {
	return frameQueue{ring: make([]outFrame, capacity), wake: make(chan struct{}, 1)}
}

func (q *frameQueue) push(f outFrame) bool {
	q.mu.Lock()
	if q.closed || q.n == len(q.ring) {
		q.mu.Unlock()
		return false
	}
	q.ring[(q.start+q.n)%len(q.ring)] = f
	q.n++
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return true
}

// take appends up to max queued frames to dst, oldest first.
func (q *frameQueue) take(dst []outFrame, max int) []outFrame {
	q.mu.Lock()
	defer q.mu.Unlock()
	for ; q.n > 0 && len(dst) < max; q.n-- {
		dst = append(dst, q.ring[q.start])
		q.ring[q.start] = outFrame{}
		q.start = (q.start + 1) % len(q.ring)
	}
	return dst
}

// close refuses further pushes and returns how many frames it discarded.
func (q *frameQueue) close() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	k := q.n
	clear(q.ring)
	q.n = 0
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
}

func (n *Node) newLink(raw, conn net.Conn, br *bufio.Reader, peer uint8, outbound bool) *link {
	return &link{peer: peer, outbound: outbound, tls: conn != raw, raw: raw, conn: conn, br: br,
		queue: newFrameQueue(n.cfg.PeerQueueCapacity), done: make(chan struct{})}
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
		frame := make([]byte, size)
		copy(frame, hdr[:])
		if _, err := io.ReadFull(l.br, frame[wire.HeaderSize:]); err != nil {
			return err
		}
		p.received.Add(1)
		n.h.Frame(l.peer, frame)
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
