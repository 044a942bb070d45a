package clientplane

import (
	"bufio"
	"crypto/tls"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"iggynode/wire"
)

// countingConn counts the writes that reach the socket.
type countingConn struct {
	net.Conn
	writes atomic.Int64
}

func (c *countingConn) Write(p []byte) (int, error) { c.writes.Add(1); return c.Conn.Write(p) }

// Over TLS a spliced reply is coalesced by the carrier's buffer, not
// written as one TLS record and socket write per piece (found by review:
// net.Buffers falls back to a Write per piece on a tls.Conn).
func TestSplicedReplyOverTLSIsCoalesced(t *testing.T) {
	ss, err := GenerateSelfSigned()
	if err != nil {
		t.Fatal(err)
	}
	serverEnd, clientEnd := net.Pipe()
	counted := &countingConn{Conn: serverEnd}
	server := tls.Server(counted, ss.ServerConfig())
	client := tls.Client(clientEnd, &tls.Config{RootCAs: ss.CertPool(), ServerName: "localhost"})
	defer serverEnd.Close() // not the TLS ends: their close_notify would wait for a reader
	defer clientEnd.Close()
	_ = client.SetDeadline(time.Now().Add(10 * time.Second))
	_ = server.SetDeadline(time.Now().Add(10 * time.Second))

	built := make([]byte, wire.HeaderSize)
	var splices []wire.Splice
	want := append([]byte(nil), built...)
	for i := range 1000 {
		run := make([]byte, 100)
		for j := range run {
			run[j] = byte(i + j)
		}
		splices = append(splices, wire.Splice{At: len(built), Bytes: run})
		want = append(want, run...)
	}
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(client, int64(len(want))))
		got <- b
	}()
	if err := server.Handshake(); err != nil {
		t.Fatal(err)
	}
	handshakeWrites := counted.writes.Load()
	carrier := &tcpCarrier{nc: server, bw: bufio.NewWriterSize(server, 64<<10)}
	if err := carrier.writeSpliced(built, splices); err != nil {
		t.Fatal(err)
	}
	if err := carrier.flush(); err != nil {
		t.Fatal(err)
	}
	if b := <-got; string(b) != string(want) {
		t.Fatalf("read %d bytes, want the %d-byte frame", len(b), len(want))
	}
	// 100 KB in records of at most 16 KB: a handful of writes, not 1001.
	if n := counted.writes.Load() - handshakeWrites; n > 20 {
		t.Fatalf("%d socket writes for a %d-byte spliced reply", n, len(want))
	}
}
