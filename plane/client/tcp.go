package clientplane

import (
	"bufio"
	"crypto/tls"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"iggynode/wire"
)

// TCPListener serves TCP (or TCP+TLS) clients (transports.md 5).
type TCPListener struct {
	ln      net.Listener
	cfg     Config
	handler Handler
	listening
}

// ListenTCP binds addr and starts accepting. With cfg.TLS set the port
// speaks only TLS (transports.md 2, 5.3).
func ListenTCP(addr string, cfg Config, h Handler) (*TCPListener, error) {
	cfg.defaults()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	l := &TCPListener{ln: ln, cfg: cfg, handler: h}
	l.stop = ln.Close
	l.wg.Add(1)
	go l.accept()
	return l, nil
}

// Addr is the bound address.
func (l *TCPListener) Addr() net.Addr { return l.ln.Addr() }

func (l *TCPListener) accept() {
	defer l.wg.Done()
	acceptStream(l.ln, &l.listening, l.cfg, TransportTCP, l.serve)
}

// serve runs the TLS handshake when configured (bounded by HandshakeGrace;
// a failure just closes the socket, 5.3), then the connection.
func (l *TCPListener) serve(nc net.Conn) {
	conn := nc
	if l.cfg.TLS != nil {
		tc := tls.Server(nc, l.cfg.TLS)
		_ = nc.SetDeadline(time.Now().Add(l.cfg.HandshakeGrace))
		if err := tc.Handshake(); err != nil {
			l.cfg.Logger.Debug("tls handshake failed", "remote", nc.RemoteAddr().String(), "err", err)
			_ = nc.Close()
			return
		}
		_ = nc.SetDeadline(time.Time{})
		conn = tc
	}
	c := newFrameConn(newTCPCarrier(conn), TransportTCP, l.cfg)
	if !l.conns.add(c, c.Close) {
		c.carrier.teardown(l.cfg.CloseGrace)
		return
	}
	defer l.conns.remove(c)
	l.conns.remove(nc)
	c.serve(l.handler)
}

// Close stops accepting, closes every connection (TLS: with close_notify,
// within CloseGrace) and waits for their goroutines.
func (l *TCPListener) Close() { l.drain() }

// tcpCarrier carries back-to-back frames over a byte stream, plain or TLS
// (transports.md 5.2): header, size check, then exactly size-256 body bytes.
type tcpCarrier struct {
	nc      net.Conn
	br      *bufio.Reader
	bw      *bufio.Writer
	sources readSources // writeSpliced's
}

func newTCPCarrier(nc net.Conn) *tcpCarrier {
	return &tcpCarrier{nc: nc, br: bufio.NewReaderSize(nc, 64<<10), bw: bufio.NewWriterSize(nc, 64<<10)}
}

func (t *tcpCarrier) remoteAddr() string { return t.nc.RemoteAddr().String() }

func (t *tcpCarrier) readFrame(g *connGuard, limit uint32) ([]byte, error) {
	var hdr wire.Header
	if _, err := io.ReadFull(t.br, hdr[:]); err != nil {
		return nil, err
	}
	return g.readFrame(&hdr, t.br, limit)
}

func (t *tcpCarrier) writeFrame(frame []byte) error {
	_, err := t.bw.Write(frame)
	return err
}

// writeSpliced writes one frame given in pieces. A stored batch
// (wire.SpliceSource) is read from its file into a pooled buffer here, in
// the connection's writer, never in the partition actor (readSources):
// over plain TCP as fast as sendfile was, and the same path for TLS and
// WebSocket, whose cold polls it made 20-50 % faster (docs/benchmarks.md,
// "Stored batches read by the connection's writer"). Plain TCP: the
// frames buffered before it, then the pieces with writev (net.Buffers).
// TLS has no writev (a Write per piece would be a record and a segment
// each), so the pieces go through the buffer, which copies the small ones
// and hands large ones straight to the connection. Over plain TCP a
// stored batch is written from its file's mapping instead (storage,
// batchmap.go): no read at all, 1.2-1.45 times the cold polls of the read
// (docs/benchmarks.md, "Cold polls from mapped files").
func (t *tcpCarrier) writeSpliced(built []byte, splices []wire.Splice) error {
	_, isTLS := t.nc.(*tls.Conn)
	_, writev := t.nc.(*net.TCPConn) // the kernel copies the pieces: they may be mapped
	pieces, err := t.sources.pieces(built, splices, writev)
	defer t.sources.release()
	if err != nil {
		return err
	}
	if isTLS {
		for _, piece := range pieces {
			if _, err := t.bw.Write(piece); err != nil {
				return err
			}
		}
		return nil
	}
	if err := t.bw.Flush(); err != nil {
		return err
	}
	bufs := net.Buffers(pieces)
	_, err = bufs.WriteTo(t.nc)
	return err
}

func (t *tcpCarrier) flush() error { return t.bw.Flush() }

func (t *tcpCarrier) interrupt() { _ = t.nc.SetReadDeadline(time.Unix(1, 0)) }

// teardown closes the socket; over TLS it first sends close_notify, and a
// peer that does not take it within grace gets the socket closed anyway.
func (t *tcpCarrier) teardown(grace time.Duration) {
	tc, ok := t.nc.(*tls.Conn)
	if !ok {
		_ = t.nc.Close()
		return
	}
	raw := tc.NetConn()
	stop := time.AfterFunc(grace, func() { _ = raw.Close() })
	_ = tc.Close()
	stop.Stop()
	_ = raw.Close()
}

// listening is the accept-side state every listener shares: how to close
// its socket, its live connections and their goroutines.
type listening struct {
	stop   func() error
	wg     sync.WaitGroup
	conns  connSet
	closed atomic.Bool
}

// StopAccepting closes the listening socket; open connections continue.
func (l *listening) StopAccepting() {
	if l.closed.CompareAndSwap(false, true) {
		_ = l.stop()
	}
}

// drain stops accepting, closes every connection and waits for their
// goroutines.
func (l *listening) drain() {
	l.StopAccepting()
	l.conns.closeAll()
	l.wg.Wait()
}

// acceptStream is the accept loop of the stream listeners (TCP and
// WebSocket): the connection caps first (a refused socket is closed
// before any handshake), TCP_NODELAY on every socket (transports.md 1.5),
// each connection registered for Close and served in its own goroutine.
func acceptStream(ln net.Listener, l *listening, cfg Config, t Transport, serve func(net.Conn)) {
	for {
		nc, err := ln.Accept()
		if err != nil {
			if !l.closed.Load() {
				cfg.Logger.Warn(t.String()+" accept failed", "err", err)
			}
			return
		}
		release, reason, ok := cfg.Guard.admit(nc.RemoteAddr())
		if !ok {
			cfg.Guard.hit(reason, t, nc.RemoteAddr().String())
			_ = nc.Close()
			continue
		}
		if tc, ok := nc.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true)
		}
		if !l.conns.add(nc, func() { _ = nc.Close() }) {
			release()
			_ = nc.Close()
			continue
		}
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			defer release()
			defer l.conns.remove(nc)
			serve(nc)
		}()
	}
}
