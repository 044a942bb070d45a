package clientplane

import (
	"bufio"
	"crypto/tls"
	"io"
	"net"
	"os"
	"slices"
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

// fileSource is a wire.SpliceSource over a file range, as storage's is.
type fileSource struct {
	f        *os.File
	off, len int64
}

func (s fileSource) Len() int { return int(s.len) }
func (s fileSource) AppendTo(dst []byte) ([]byte, error) {
	at := len(dst)
	dst = append(dst, make([]byte, s.len)...)
	_, err := s.f.ReadAt(dst[at:], s.off)
	return dst, err
}

// A frame that mixes built bytes, spliced memory and stored sources (two
// sources back to back, one at the very end) reaches a plain TCP peer
// byte for byte, the buffers the sources were read into go back to the
// pool, and TCP and TLS connections say they read sources.
func TestSourcesGoOutInWireOrder(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "batches")
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 300_000)
	for i := range data {
		data[i] = byte(i * 7)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dialed, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer dialed.Close()
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	built := []byte("HEADER--middle--tail")
	src := func(off, n int64) wire.Splice { return wire.Splice{From: fileSource{f, off, n}} }
	splices := []wire.Splice{src(0, 100_000), {Bytes: []byte("mem")}, src(100_000, 50_000), src(150_000, 150_000), src(7, 9)}
	splices[0].At, splices[1].At, splices[2].At, splices[3].At, splices[4].At = 8, 8, 14, 14, len(built)
	var want []byte
	want = append(want, built[:8]...)
	want = append(want, data[:100_000]...)
	want = append(want, "mem"...)
	want = append(want, built[8:14]...)
	want = append(want, data[100_000:300_000]...)
	want = append(want, built[14:]...)
	want = append(want, data[7:16]...)
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(dialed, int64(len(want))))
		got <- b
	}()
	carrier := newTCPCarrier(server)
	if err := carrier.writeFrame([]byte{}); err != nil {
		t.Fatal(err)
	}
	if n := wire.SplicedLen(built, splices); n != len(want) {
		t.Fatalf("SplicedLen %d, want %d", n, len(want))
	}
	if err := carrier.writeSpliced(built, splices); err != nil {
		t.Fatal(err)
	}
	if b := <-got; string(b) != string(want) {
		t.Fatalf("read %d bytes, want the %d-byte frame in wire order", len(b), len(want))
	}
	// The sources' buffers were handed back and no piece is kept.
	r := carrier.sources
	if len(r.read) != 0 || cap(r.read) < 4 || slices.ContainsFunc(r.list[:cap(r.list)], func(b []byte) bool { return b != nil }) ||
		slices.ContainsFunc(r.read[:cap(r.read)], func(b []byte) bool { return b != nil }) {
		t.Fatalf("after the write: %d source buffers held, pieces %d", len(r.read), len(r.list))
	}
	plain := &frameConn{carrier: carrier}
	ss, err := GenerateSelfSigned()
	if err != nil {
		t.Fatal(err)
	}
	overTLS := &frameConn{carrier: newTCPCarrier(tls.Server(server, ss.ServerConfig()))}
	if !ReadsSources(plain) || !ReadsSources(overTLS) || ReadsSources(nil) {
		t.Fatalf("ReadsSources: plain TCP %v, TLS %v, no carrier %v", ReadsSources(plain), ReadsSources(overTLS), ReadsSources(nil))
	}
}

// tcpPair is both ends of a loopback TCP connection, closed with the test.
func tcpPair(t *testing.T) (server, client net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	server, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close() })
	return server, client
}

// mappableSource is a wire.MappableSource over memory that records how it
// was used; reading it fails unless readable, mapping it fails unless
// mappable.
type mappableSource struct {
	b                   []byte
	mappable, readable  bool
	maps, unpins, reads *atomic.Int64
}

func (s mappableSource) Len() int { return len(s.b) }
func (s mappableSource) AppendTo(dst []byte) ([]byte, error) {
	s.reads.Add(1)
	if !s.readable {
		return dst, io.ErrUnexpectedEOF
	}
	return append(dst, s.b...), nil
}
func (s mappableSource) Map() ([]byte, func(), error) {
	if !s.mappable {
		return nil, nil, os.ErrNotExist
	}
	s.maps.Add(1)
	return s.b, func() { s.unpins.Add(1) }, nil
}

// Over plain TCP a source that can be mapped is written from its mapping
// (never read), and the mapping is released after the write; one whose
// mapping fails is read instead; over TLS (Go code copies the pieces into
// records) sources are read, never mapped.
func TestMappableSourcesAreMappedOnlyForPlainTCPWrites(t *testing.T) {
	for _, tc := range []struct {
		name                    string
		tls, mappable, readable bool
		maps, unpins, reads     int64
	}{
		{name: "plain TCP maps", mappable: true, maps: 2, unpins: 2},
		{name: "plain TCP reads what it cannot map", readable: true, reads: 2},
		{name: "TLS reads", tls: true, mappable: true, readable: true, reads: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var maps, unpins, reads atomic.Int64
			src := func(b string) wire.Splice {
				return wire.Splice{From: mappableSource{b: []byte(b), mappable: tc.mappable, readable: tc.readable, maps: &maps, unpins: &unpins, reads: &reads}}
			}
			built := []byte("head|tail")
			splices := []wire.Splice{src("first-batch"), src("second")}
			splices[0].At, splices[1].At = 5, len(built)
			want := "head|first-batchtailsecond"

			server, client := tcpPair(t)
			if tc.tls {
				serverEnd, clientEnd := server, client
				ss, err := GenerateSelfSigned()
				if err != nil {
					t.Fatal(err)
				}
				server = tls.Server(serverEnd, ss.ServerConfig())
				client = tls.Client(clientEnd, &tls.Config{RootCAs: ss.CertPool(), ServerName: "localhost"})
			}
			_ = client.SetDeadline(time.Now().Add(10 * time.Second))
			_ = server.SetDeadline(time.Now().Add(10 * time.Second))
			got := make(chan []byte, 1)
			go func() {
				b, _ := io.ReadAll(io.LimitReader(client, int64(len(want))))
				got <- b
			}()
			carrier := newTCPCarrier(server)
			if err := carrier.writeSpliced(built, splices); err != nil {
				t.Fatal(err)
			}
			if err := carrier.flush(); err != nil {
				t.Fatal(err)
			}
			if b := <-got; string(b) != want {
				t.Fatalf("read %q, want %q", b, want)
			}
			if maps.Load() != tc.maps || unpins.Load() != tc.unpins || reads.Load() != tc.reads {
				t.Fatalf("maps %d, unpins %d, reads %d; want %d, %d, %d", maps.Load(), unpins.Load(), reads.Load(), tc.maps, tc.unpins, tc.reads)
			}
			if r := carrier.sources; len(r.unpins) != 0 || slices.ContainsFunc(r.mapped[:cap(r.mapped)], func(s wire.Splice) bool { return s.From != nil || s.Bytes != nil }) {
				t.Fatalf("after the write: %d unpins held, mapped pieces kept", len(r.unpins))
			}
		})
	}
}
