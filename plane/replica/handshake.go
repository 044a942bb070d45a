package replicaplane

import (
	"bufio"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"iggynode/wire"
)

// macKeys are K and, during a rotation, K_prev (3.6).
type macKeys struct {
	k, prev [32]byte
	hasPrev bool
}

func deriveKeys(secret, previous []byte) macKeys {
	m := macKeys{k: wire.MACKey(secret)}
	if len(previous) != 0 {
		m.prev, m.hasPrev = wire.MACKey(previous), true
	}
	return m
}

// macInput is everything the MAC covers except the key and direction.
type macInput struct {
	cluster          wire.U128
	dialer, acceptor uint8
	nonceD, nonceA   [32]byte
	tls              bool
	exporter         [32]byte
}

// sign always uses K (3.6 notes).
func (m *macKeys) sign(in *macInput, direction uint8) [32]byte {
	return wire.HandshakeMAC(m.k, in.cluster, in.dialer, in.acceptor, in.nonceD, in.nonceA, in.tls, in.exporter, direction)
}

// verify accepts a MAC under K or K_prev, comparing in constant time.
func (m *macKeys) verify(in *macInput, direction uint8, got [32]byte) bool {
	ok := wire.MACEqual(got, m.sign(in, direction))
	if m.hasPrev {
		prev := wire.HandshakeMAC(m.prev, in.cluster, in.dialer, in.acceptor, in.nonceD, in.nonceA, in.tls, in.exporter, direction)
		ok = wire.MACEqual(got, prev) || ok
	}
	return ok
}

// handshakeError says why a handshake did not install a connection.
// Status is the refusal reason (wire.HandshakeOk for I/O, timeout and TLS
// failures); ByPeer is set when the status came in a Challenge from the
// acceptor rather than from this node's own checks.
type handshakeError struct {
	Peer   int // the peer's id, -1 when unknown (an inbound Hello not read)
	Status wire.HandshakeStatus
	ByPeer bool
	Err    error
}

func (e *handshakeError) Error() string {
	who := "peer"
	if e.Peer >= 0 {
		who = fmt.Sprintf("peer %d", e.Peer)
	}
	switch {
	case e.ByPeer:
		return fmt.Sprintf("replica handshake with %s: refused by the peer: %v", who, e.Status)
	case e.Status != wire.HandshakeOk:
		return fmt.Sprintf("replica handshake with %s: refused: %v: %v", who, e.Status, e.Err)
	}
	return fmt.Sprintf("replica handshake with %s: %v", who, e.Err)
}

func (e *handshakeError) Unwrap() error { return e.Err }

func refused(peer int, s wire.HandshakeStatus, format string, args ...any) *handshakeError {
	return &handshakeError{Peer: peer, Status: s, Err: fmt.Errorf(format, args...)}
}

func failed(peer int, err error) *handshakeError {
	return &handshakeError{Peer: peer, Err: err}
}

func (n *Node) handshakeFailed(err error) {
	var he *handshakeError
	if !errors.As(err, &he) {
		he = failed(-1, err)
	}
	switch {
	case he.ByPeer:
		n.hs.peerRefused[he.Status].Add(1)
	case he.Status != wire.HandshakeOk:
		n.hs.refused[he.Status].Add(1)
	default:
		n.hs.failed.Add(1)
	}
	if n.ctx.Err() != nil {
		return // closing: every in-flight handshake fails, nothing to report
	}
	n.log.Warn("replica handshake failed", "err", he)
}

// dialHandshake runs the dialer's side (3.5 step 1, 3.6 steps 1, 4, 5;
// TLS client per 3.7) within HandshakeGrace, and returns the link to
// install.
func (n *Node) dialHandshake(raw net.Conn, peerID uint8, addr string) (*link, error) {
	id := int(peerID)
	_ = raw.SetDeadline(time.Now().Add(n.cfg.HandshakeGrace))
	c, exporter, err := n.dialTLS(raw, addr)
	if err != nil {
		return nil, failed(id, err)
	}
	br := bufio.NewReaderSize(c, readBufferSize)
	var hello wire.Header
	hm := wire.HelloHeader{Cluster: n.cluster, Replica: n.cfg.Self}
	if !n.cfg.AuthEnabled {
		// 3.5 step 1: a zero nonce, then install at once; read nothing.
		hm.Encode(&hello)
		if _, err := c.Write(hello[:]); err != nil {
			return nil, failed(id, err)
		}
		return n.newLink(raw, c, br, peerID, true), nil
	}
	in := macInput{cluster: n.cluster, dialer: n.cfg.Self, acceptor: peerID, tls: c != raw, exporter: exporter}
	if _, err := rand.Read(in.nonceD[:]); err != nil {
		return nil, failed(id, err)
	}
	hm.Nonce = in.nonceD
	hm.Encode(&hello)
	if _, err := c.Write(hello[:]); err != nil {
		return nil, failed(id, err)
	}
	var h wire.Header
	if _, err := io.ReadFull(br, h[:]); err != nil {
		return nil, failed(id, fmt.Errorf("waiting for the Challenge: %w", err))
	}
	ch, err := wire.DecodeChallengeHeader(&h)
	if err != nil {
		// 3.8 row 2: a non-auth acceptor sends consensus frames, not a Challenge.
		return nil, refused(id, wire.HandshakeUnknownCommand, "expected a Challenge: %w", err)
	}
	if ch.Status != wire.HandshakeOk {
		return nil, &handshakeError{Peer: id, Status: ch.Status, ByPeer: true}
	}
	in.nonceA = ch.Nonce
	if !n.keys.verify(&in, wire.MACByAcceptor, ch.MAC) {
		return nil, refused(id, wire.HandshakeMACMismatch, "acceptor MAC does not verify")
	}
	fin := wire.FinishHeader{Cluster: n.cluster, Replica: n.cfg.Self, MAC: n.keys.sign(&in, wire.MACByDialer)}
	fin.Encode(&h)
	if _, err := c.Write(h[:]); err != nil {
		return nil, failed(id, err)
	}
	// 3.6 step 5: install without waiting for an ack.
	return n.newLink(raw, c, br, peerID, true), nil
}

// acceptHandshake runs the acceptor's side (3.5 steps 2-3, 3.6 steps 2, 3,
// 6; TLS server per 3.7) within HandshakeGrace.
func (n *Node) acceptHandshake(raw net.Conn) (*link, error) {
	_ = raw.SetDeadline(time.Now().Add(n.cfg.HandshakeGrace))
	c, exporter, err := n.acceptTLS(raw)
	if err != nil {
		return nil, failed(-1, err)
	}
	br := bufio.NewReaderSize(c, readBufferSize)
	var h wire.Header
	if _, err := io.ReadFull(br, h[:]); err != nil {
		return nil, failed(-1, fmt.Errorf("waiting for the Hello: %w", err))
	}
	status, reason := n.checkHello(&h)
	// The nonce is read from 128..160 even when the frame is not a Hello:
	// it decides only whether a reject frame may be sent (3.6 step 2).
	hello := h.Hello()
	id := int(hello.Replica)
	if !n.cfg.AuthEnabled {
		if status != wire.HandshakeOk {
			return nil, refused(id, status, "%s", reason) // 3.5 step 2: close, no frame
		}
		return n.newLink(raw, c, br, hello.Replica, false), nil
	}
	if hello.Nonce == ([32]byte{}) {
		if status == wire.HandshakeOk {
			status, reason = wire.HandshakeAuthRequired, "the dialer offered no nonce (auth disabled there)"
		}
		return nil, refused(id, status, "%s", reason) // no frame to a non-auth dialer
	}
	if status != wire.HandshakeOk {
		var rej wire.Header
		m := wire.ChallengeHeader{Cluster: n.cluster, Replica: n.cfg.Self, Status: status}
		m.Encode(&rej)
		_, _ = c.Write(rej[:])
		return nil, refused(id, status, "%s", reason)
	}
	in := macInput{cluster: n.cluster, dialer: hello.Replica, acceptor: n.cfg.Self, nonceD: hello.Nonce,
		tls: c != raw, exporter: exporter}
	if _, err := rand.Read(in.nonceA[:]); err != nil {
		return nil, failed(id, err)
	}
	m := wire.ChallengeHeader{Cluster: n.cluster, Replica: n.cfg.Self, Nonce: in.nonceA,
		MAC: n.keys.sign(&in, wire.MACByAcceptor), Status: wire.HandshakeOk}
	m.Encode(&h)
	if _, err := c.Write(h[:]); err != nil {
		return nil, failed(id, err)
	}
	if _, err := io.ReadFull(br, h[:]); err != nil {
		return nil, failed(id, fmt.Errorf("waiting for the Finish: %w", err))
	}
	fin, err := wire.DecodeFinishHeader(&h)
	if err != nil {
		return nil, refused(id, wire.HandshakeUnknownCommand, "expected a Finish: %w", err)
	}
	if !n.keys.verify(&in, wire.MACByDialer, fin.MAC) {
		return nil, refused(id, wire.HandshakeMACMismatch, "dialer MAC does not verify") // close, no frame
	}
	return n.newLink(raw, c, br, hello.Replica, false), nil
}

// checkHello runs the acceptor's checks of 3.5 step 2, in order. With a
// roster that changes (docs/reconfiguration.md), "replica < replica_count"
// is "replica is a peer in the current roster"; both directional checks
// answer DirectionalRule, the only status 3.4 has for them.
func (n *Node) checkHello(h *wire.Header) (wire.HandshakeStatus, string) {
	hello, err := wire.DecodeHelloHeader(h)
	switch {
	case err != nil:
		return wire.HandshakeUnknownCommand, err.Error()
	case hello.Cluster != n.cluster:
		return wire.HandshakeClusterMismatch, fmt.Sprintf("cluster %v, ours %v", hello.Cluster, n.cluster)
	case hello.Replica >= n.cfg.Self:
		return wire.HandshakeDirectionalRule, fmt.Sprintf("replica %d may not dial replica %d", hello.Replica, n.cfg.Self)
	case n.peerOf(hello.Replica) == nil:
		return wire.HandshakeDirectionalRule, fmt.Sprintf("replica %d is not in the roster", hello.Replica)
	}
	return wire.HandshakeOk, ""
}

// dialTLS wraps raw as the TLS client (3.7 rules 1-2) and returns the
// channel binding exporter; without TLS it returns raw and zeros.
func (n *Node) dialTLS(raw net.Conn, addr string) (net.Conn, [32]byte, error) {
	if n.cfg.TLS == nil {
		return raw, [32]byte{}, nil
	}
	conf := tlsConfig(n.cfg.TLS)
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	conf.ServerName = host // the peer's roster ip (3.7 rule 2)
	tc := tls.Client(raw, conf)
	return finishTLS(n, tc)
}

// acceptTLS wraps raw as the TLS server.
func (n *Node) acceptTLS(raw net.Conn) (net.Conn, [32]byte, error) {
	if n.cfg.TLS == nil {
		return raw, [32]byte{}, nil
	}
	return finishTLS(n, tls.Server(raw, tlsConfig(n.cfg.TLS)))
}

func finishTLS(n *Node, tc *tls.Conn) (net.Conn, [32]byte, error) {
	var exporter [32]byte
	if err := tc.HandshakeContext(n.ctx); err != nil {
		return nil, exporter, fmt.Errorf("tls: %w", err)
	}
	cs := tc.ConnectionState()
	if cs.NegotiatedProtocol != wire.ReplicaALPN {
		// Go's server goes on without ALPN when the client offers none.
		return nil, exporter, fmt.Errorf("tls: ALPN %q, want %q", cs.NegotiatedProtocol, wire.ReplicaALPN)
	}
	km, err := cs.ExportKeyingMaterial(wire.TLSExporterLabel, nil, len(exporter))
	if err != nil {
		return nil, exporter, fmt.Errorf("tls exporter: %w", err)
	}
	copy(exporter[:], km)
	return tc, exporter, nil
}

// tlsConfig pins TLS 1.3 and the replica ALPN (3.7 rule 1).
func tlsConfig(base *tls.Config) *tls.Config {
	c := base.Clone()
	c.MinVersion, c.MaxVersion = tls.VersionTLS13, tls.VersionTLS13
	c.NextProtos = []string{wire.ReplicaALPN}
	return c
}
