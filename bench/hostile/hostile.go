// Package hostile measures what unauthenticated clients cost a node: it
// starts a node as a child process on loopback ports and a temporary data
// directory, opens N connections that each send only a request header
// claiming a maximum-size frame (no login, no body), and reports the
// node's resident memory (VmRSS of /proc/<pid>/status) before and after
// (issue 17; docs/benchmarks.md "Hostile clients"). cmd/hostile is its
// command.
package hostile

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/quic-go/quic-go"

	"iggynode/bench/nodeproc"
	"iggynode/wire"
)

// Config of one measurement.
type Config struct {
	// Source is the module directory whose ./cmd/node is built and run
	// (another checkout measures another version).
	Source string
	// Transport is tcp, ws or quic.
	Transport string
	Conns     int
	// FrameSize is the size the headers claim (default 64 MiB).
	FrameSize uint32
	// Settle is how long the connections stay open while RSS is sampled.
	Settle time.Duration
	// Rounds repeats the attack: the connections of a round are closed
	// before the next opens, so the node reuses (and zeroes, touching its
	// pages) the memory the previous round made it allocate. Default 1.
	Rounds int
	// Env is extra KEY=VALUE for the node (IGGY_LIMITS_* and so on).
	Env []string
	Log io.Writer
}

// Result of one measurement.
type Result struct {
	BaselineRSSKiB, PeakRSSKiB int64
	// PeakVMKiB is the largest VmSize seen: the address space the
	// claimed frames reserve even where their pages are never touched.
	BaselineVMKiB, PeakVMKiB int64
	// Open is how many connections the node still held at the end;
	// Refused how many it closed (or never accepted).
	Open, Refused int
}

func (r Result) String() string {
	return fmt.Sprintf("RSS %d -> %d MiB, VmSize %d -> %d MiB, connections open %d, closed by the node %d",
		r.BaselineRSSKiB>>10, r.PeakRSSKiB>>10, r.BaselineVMKiB>>10, r.PeakVMKiB>>10, r.Open, r.Refused)
}

// Run starts the node, attacks it, reads its RSS and stops it.
func Run(ctx context.Context, c Config) (Result, error) {
	if c.FrameSize == 0 {
		c.FrameSize = wire.DefaultMaxFrameSize
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	dir, err := os.MkdirTemp("", "hostile-")
	if err != nil {
		return Result{}, err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "node")
	if err := nodeproc.Build(ctx, c.Source, bin, c.Log); err != nil {
		return Result{}, err
	}
	ports, err := nodeproc.FreePorts(3)
	if err != nil {
		return Result{}, err
	}
	addr := map[string]string{"tcp": "127.0.0.1:" + ports[0], "quic": "127.0.0.1:" + ports[1], "ws": "127.0.0.1:" + ports[2]}[c.Transport]
	if addr == "" {
		return Result{}, fmt.Errorf("unknown transport %q (tcp, ws, quic)", c.Transport)
	}
	node := exec.Command(bin)
	node.Dir = dir
	node.Env = append(os.Environ(), "IGGY_SYSTEM_PATH="+filepath.Join(dir, "data"), "IGGY_HTTP_ENABLED=false",
		"IGGY_TCP_ADDRESS=127.0.0.1:"+ports[0], "IGGY_QUIC_ADDRESS=127.0.0.1:"+ports[1], "IGGY_WEBSOCKET_ADDRESS=127.0.0.1:"+ports[2])
	node.Env = append(node.Env, c.Env...)
	node.Stdout, node.Stderr = c.Log, c.Log
	if err := node.Start(); err != nil {
		return Result{}, err
	}
	defer nodeproc.Stop(node, 15*time.Second, nil)
	if err := nodeproc.WaitListening(ctx, "127.0.0.1:"+ports[0]); err != nil {
		return Result{}, err
	}
	time.Sleep(time.Second) // let the node settle after boot
	var res Result
	if res.BaselineRSSKiB, res.BaselineVMKiB, err = memKiB(node.Process.Pid); err != nil {
		return res, err
	}
	attack := map[string]func(string, uint32) (io.Closer, error){"tcp": tcpHeader, "ws": wsHeader, "quic": quicHeader}[c.Transport]
	for round := 0; round < max(c.Rounds, 1); round++ {
		res.Open, res.Refused = 0, 0
		if err := c.round(attack, addr, node.Process.Pid, &res); err != nil {
			return res, err
		}
		fmt.Fprintf(c.Log, "round %d: %s\n", round+1, res)
	}
	return res, nil
}

// round opens the connections, samples the node's memory for Settle,
// counts the connections still open and closes them.
func (c Config) round(attack func(string, uint32) (io.Closer, error), addr string, pid int, res *Result) error {
	conns := make([]io.Closer, 0, c.Conns)
	defer func() {
		for _, cl := range conns {
			_ = cl.Close()
		}
	}()
	for i := 0; i < c.Conns; i++ {
		cl, err := attack(addr, c.FrameSize)
		if err != nil {
			res.Refused++
			continue
		}
		conns = append(conns, cl)
	}
	for end := time.Now().Add(c.Settle); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		rss, vm, err := memKiB(pid)
		if err != nil {
			return err
		}
		res.PeakRSSKiB, res.PeakVMKiB = max(res.PeakRSSKiB, rss), max(res.PeakVMKiB, vm)
	}
	// All at once: one by one would outlast the node's deadlines.
	var open atomic.Int64
	var wg sync.WaitGroup
	for _, cl := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if alive(cl) {
				open.Add(1)
			}
		}()
	}
	wg.Wait()
	res.Open = int(open.Load())
	res.Refused += len(conns) - res.Open
	return nil
}

// header is a Register request header claiming size bytes: what a client
// sends first, before any credentials.
func header(size uint32, client uint64) []byte {
	var h wire.Header
	r := wire.RequestHeader{Size: size, Client: wire.U128{Lo: client}, Operation: wire.OpRegister}
	r.Encode(&h)
	return h[:]
}

var clientIDs uint64

func nextClient() uint64 { clientIDs++; return clientIDs }

func tcpHeader(addr string, size uint32) (io.Closer, error) {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	if _, err := nc.Write(header(size, nextClient())); err != nil {
		_ = nc.Close()
		return nil, err
	}
	return nc, nil
}

// wsHeader upgrades, then sends the header as the first fragment of a
// binary message that never ends (RFC 6455 5.2, zero mask key).
func wsHeader(addr string, size uint32) (io.Closer, error) {
	d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
	ws, _, err := d.Dial("ws://"+addr+"/", nil)
	if err != nil {
		return nil, err
	}
	frame := append([]byte{byte(websocket.BinaryMessage), 0x80 | 126}, binary.BigEndian.AppendUint16(nil, wire.HeaderSize)...)
	frame = append(frame, 0, 0, 0, 0)
	frame = append(frame, header(size, nextClient())...)
	if _, err := ws.UnderlyingConn().Write(frame); err != nil {
		_ = ws.Close()
		return nil, err
	}
	return ws.UnderlyingConn(), nil
}

type quicCloser struct {
	qc *quic.Conn
	st *quic.Stream
}

func (q quicCloser) Close() error { return q.qc.CloseWithError(0, "") }

func quicHeader(addr string, size uint32) (io.Closer, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	qc, err := quic.DialAddr(ctx, addr, &tls.Config{InsecureSkipVerify: true, ServerName: "localhost"},
		&quic.Config{MaxIdleTimeout: time.Minute, KeepAlivePeriod: 5 * time.Second})
	if err != nil {
		return nil, err
	}
	st, err := qc.OpenStreamSync(ctx)
	if err == nil {
		_, err = st.Write(header(size, nextClient()))
	}
	if err != nil {
		_ = qc.CloseWithError(0, "")
		return nil, err
	}
	return quicCloser{qc: qc, st: st}, nil
}

// alive reports whether the node still holds the connection: a stream
// connection it closed reads EOF or a reset; a QUIC one has its context
// done, or the stream it abandoned ends.
func alive(c io.Closer) bool {
	switch c := c.(type) {
	case net.Conn:
		_ = c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		var one [1]byte
		_, err := c.Read(one[:])
		var ne net.Error
		return errors.As(err, &ne) && ne.Timeout()
	case quicCloser:
		select {
		case <-c.qc.Context().Done():
			return false
		default:
		}
		_ = c.st.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		var one [1]byte
		_, err := c.st.Read(one[:])
		var ne net.Error
		return errors.As(err, &ne) && ne.Timeout()
	}
	return false
}

// memKiB is the resident and virtual size of pid, in KiB.
func memKiB(pid int) (rss, vm int64, err error) {
	u, err := nodeproc.Of(pid)
	return int64(u.RSS >> 10), int64(u.VMS >> 10), err
}
