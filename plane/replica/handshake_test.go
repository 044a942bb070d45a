package replicaplane

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"io"
	"math/big"
	"net"
	"testing"
	"time"

	"iggynode/wire"
)

// testTLS makes a self-signed ECDSA certificate for 127.0.0.1 and a config
// that both serves it and trusts it (the dialer verifies, 3.7 rule 2).
func testTLS(t *testing.T) *tls.Config {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "replica test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key, Leaf: cert}},
		RootCAs:      pool,
	}
}

func withAuth(secret, previous []byte) func(c *Config) {
	return func(c *Config) {
		c.AuthEnabled, c.SharedSecret, c.PreviousSharedSecret = true, secret, previous
	}
}

func nonceOf(b byte) [32]byte { return [32]byte(bytes.Repeat([]byte{b}, 32)) }

// checkChallengeReject checks a Challenge against 3.4 byte by byte: zero
// checksums, the acceptor's cluster, size 256, view and release 0,
// command 15, the acceptor's id, zero reserved_frame, zero nonce and MAC
// (a rejection), the status at 192, zero to the end.
func checkChallengeReject(t *testing.T, h []byte, acceptor uint8, status byte) {
	t.Helper()
	want := make([]byte, 256)
	copy(want[32:48], clusterIDBytes(t))
	copy(want[48:52], []byte{0x00, 0x01, 0x00, 0x00})
	want[60], want[61], want[192] = 15, acceptor, status
	if !bytes.Equal(h, want) {
		t.Fatalf("Challenge\n got %x\nwant %x", h, want)
	}
}

// replica-plane.md 3.6 step 2 on an auth-enabled acceptor (replica 1 of
// 3): a failed check answers a dialer that offered a nonce with a
// Challenge carrying the reason, then closes; a dialer without a nonce
// gets no frame at all.
func TestAuthAcceptorRefusesBadHello(t *testing.T) {
	other := wire.ClusterID("other-cluster")
	otherBytes := make([]byte, 16)
	binary.LittleEndian.PutUint64(otherBytes, other.Lo)
	binary.LittleEndian.PutUint64(otherBytes[8:], other.Hi)
	nonce := nonceOf(0x11)
	cases := []struct {
		name   string
		frame  func(cluster []byte) []byte
		status wire.HandshakeStatus
		reply  bool // a reject Challenge is sent
	}{
		{"wrong cluster", func(c []byte) []byte { return helloBytes(otherBytes, 0, nonce) }, wire.HandshakeClusterMismatch, true},
		{"higher id dials lower", func(c []byte) []byte { return helloBytes(c, 2, nonce) }, wire.HandshakeDirectionalRule, true},
		{"own id", func(c []byte) []byte { return helloBytes(c, 1, nonce) }, wire.HandshakeDirectionalRule, true},
		{"id beyond roster", func(c []byte) []byte { return helloBytes(c, 7, nonce) }, wire.HandshakeDirectionalRule, true},
		{"not a Hello", func(c []byte) []byte {
			h := helloBytes(c, 0, nonce)
			h[60] = 9 // Commit
			return h
		}, wire.HandshakeUnknownCommand, true},
		{"Finish first", func(c []byte) []byte {
			h := helloBytes(c, 0, nonce)
			h[60] = 16
			return h
		}, wire.HandshakeUnknownCommand, true},
		{"Hello with a body size", func(c []byte) []byte {
			h := helloBytes(c, 0, nonce)
			h[49] = 2 // size 512
			return h
		}, wire.HandshakeUnknownCommand, true},
		{"no nonce: non-auth dialer", func(c []byte) []byte { return helloBytes(c, 0, [32]byte{}) }, wire.HandshakeAuthRequired, false},
		{"no nonce and wrong cluster", func(c []byte) []byte { return helloBytes(otherBytes, 0, [32]byte{}) }, wire.HandshakeClusterMismatch, false},
		{"no nonce and wrong direction", func(c []byte) []byte { return helloBytes(c, 2, [32]byte{}) }, wire.HandshakeDirectionalRule, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := baseConfig(1, 3)
			withAuth(secretOld, nil)(&cfg)
			n := startNode(t, cfg)
			c := rawDial(t, n.Addr())
			mustWrite(t, c, tc.frame(clusterIDBytes(t)))
			if tc.reply {
				checkChallengeReject(t, read256(t, c), 1, byte(tc.status))
			}
			expectClosed(t, c)
			eventually(t, "refusal counted", func() bool { return n.Handshakes().Refused[tc.status] == 1 })
			if hs := n.Handshakes(); hs.Accepted != 0 || len(hs.Refused) != 1 {
				t.Fatalf("handshakes %+v, want only one refusal", hs)
			}
		})
	}
}

// 3.5 step 2: with auth disabled every failure closes without a frame;
// a good Hello installs at once, even one carrying a nonce (3.8 row 2).
func TestAcceptorWithoutAuth(t *testing.T) {
	cases := []struct {
		name    string
		replica uint8
		cluster bool
		cmd     byte
		status  wire.HandshakeStatus
	}{
		{"wrong cluster", 0, false, 14, wire.HandshakeClusterMismatch},
		{"higher id dials lower", 2, true, 14, wire.HandshakeDirectionalRule},
		{"not a Hello", 0, true, 9, wire.HandshakeUnknownCommand},
		{"good Hello with a nonce", 0, true, 14, wire.HandshakeOk},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := startNode(t, baseConfig(1, 3))
			c := rawDial(t, n.Addr())
			cluster := make([]byte, 16)
			if tc.cluster {
				cluster = clusterIDBytes(t)
			}
			h := helloBytes(cluster, tc.replica, nonceOf(0x42))
			h[60] = tc.cmd
			mustWrite(t, c, h)
			if tc.status != wire.HandshakeOk {
				expectClosed(t, c)
				eventually(t, "refusal counted", func() bool { return n.Handshakes().Refused[tc.status] == 1 })
				if n.rec.ups(tc.replica) != 0 {
					t.Fatal("refused dialer was installed")
				}
				return
			}
			eventually(t, "installed", func() bool { return n.rec.ups(0) == 1 && connected(n, 0) })
			// Nothing is sent back: the acceptor answers no frame (3.5).
			_ = c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
			var b [1]byte
			if k, err := c.Read(b[:]); k != 0 || err == nil {
				t.Fatalf("acceptor sent %d bytes", k)
			}
		})
	}
}

// challengeMAC is the MAC a Challenge must carry for the given inputs.
func challengeMAC(secret []byte, nonceD, nonceA [32]byte, tlsMode bool, exporter [32]byte, dir uint8) [32]byte {
	return wire.HandshakeMAC(wire.MACKey(secret), wire.ClusterID(testCluster), 0, 1, nonceD, nonceA, tlsMode, exporter, dir)
}

// 3.6 steps 3 and 6 against a hand-driven dialer: the Challenge carries a
// fresh nonce_a and mac_a (direction 2 under K); a Finish is accepted
// under K or K_prev with direction 1, refused without a frame otherwise.
func TestAuthAcceptorVerifiesFinish(t *testing.T) {
	nonceD := nonceOf(0x11)
	cases := []struct {
		name    string
		mac     func(nonceA [32]byte) [32]byte
		install bool
	}{
		{"signed with K", func(a [32]byte) [32]byte {
			return challengeMAC(secretNew, nonceD, a, false, [32]byte{}, wire.MACByDialer)
		}, true},
		{"signed with K_prev", func(a [32]byte) [32]byte {
			return challengeMAC(secretOld, nonceD, a, false, [32]byte{}, wire.MACByDialer)
		}, true},
		{"wrong direction", func(a [32]byte) [32]byte {
			return challengeMAC(secretNew, nonceD, a, false, [32]byte{}, wire.MACByAcceptor)
		}, false},
		{"unknown key", func(a [32]byte) [32]byte {
			return challengeMAC([]byte("an entirely different secret, 32+"), nonceD, a, false, [32]byte{}, wire.MACByDialer)
		}, false},
		{"wrong mode", func(a [32]byte) [32]byte {
			return challengeMAC(secretNew, nonceD, a, true, [32]byte{}, wire.MACByDialer)
		}, false},
		{"zero MAC", func([32]byte) [32]byte { return [32]byte{} }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := baseConfig(1, 2)
			withAuth(secretNew, secretOld)(&cfg)
			n := startNode(t, cfg)
			c := rawDial(t, n.Addr())
			mustWrite(t, c, helloBytes(clusterIDBytes(t), 0, nonceD))
			ch := read256(t, c)
			if ch[60] != 15 || ch[61] != 1 || ch[192] != 0 || !bytes.Equal(ch[32:48], clusterIDBytes(t)) {
				t.Fatalf("not an Ok Challenge from 1: % x", ch[:193])
			}
			nonceA := [32]byte(ch[128:160])
			if nonceA == ([32]byte{}) {
				t.Fatal("zero nonce_a")
			}
			if want := challengeMAC(secretNew, nonceD, nonceA, false, [32]byte{}, wire.MACByAcceptor); !bytes.Equal(ch[160:192], want[:]) {
				t.Fatal("mac_a is not BLAKE3_keyed(K, ..., direction 2)")
			}
			if !isZero(ch[193:]) || !isZero(ch[:32]) {
				t.Fatal("nonzero reserved bytes in the Challenge")
			}
			mustWrite(t, c, finishBytes(clusterIDBytes(t), 0, tc.mac(nonceA)))
			if tc.install {
				eventually(t, "installed", func() bool { return n.rec.ups(0) == 1 })
				return
			}
			expectClosed(t, c)
			eventually(t, "refusal counted", func() bool { return n.Handshakes().Refused[wire.HandshakeMACMismatch] == 1 })
			if n.rec.ups(0) != 0 {
				t.Fatal("installed with a bad MAC")
			}
		})
	}
}

// 3.6 step 5 and 3.7 rule 3: the TLS exporter is MAC input field 8 with
// mode 1. A hand-driven TLS dialer checks mac_a against its own exporter
// (both ends agree), and a Finish without the binding is refused.
func TestTLSExporterIsBoundIntoTheMAC(t *testing.T) {
	tlsConf := testTLS(t)
	for _, bind := range []bool{true, false} {
		t.Run(map[bool]string{true: "bound", false: "unbound"}[bind], func(t *testing.T) {
			cfg := baseConfig(1, 2)
			withAuth(secretOld, nil)(&cfg)
			cfg.TLS = tlsConf
			n := startNode(t, cfg)

			conf := tlsConf.Clone()
			conf.ServerName = "127.0.0.1"
			conf.NextProtos = []string{"iggy-replica"}
			conf.MinVersion = tls.VersionTLS13
			c, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", n.Addr().String(), conf)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Close() })
			_ = c.SetDeadline(time.Now().Add(waitLimit))
			cs := c.ConnectionState()
			if cs.Version != tls.VersionTLS13 || cs.NegotiatedProtocol != "iggy-replica" {
				t.Fatalf("TLS version %x ALPN %q", cs.Version, cs.NegotiatedProtocol)
			}
			km, err := cs.ExportKeyingMaterial("iggy replica psk binding", nil, 32)
			if err != nil {
				t.Fatal(err)
			}
			exporter := [32]byte(km)

			nonceD := nonceOf(0x5a)
			if _, err := c.Write(helloBytes(clusterIDBytes(t), 0, nonceD)); err != nil {
				t.Fatal(err)
			}
			ch := make([]byte, 256)
			if _, err := io.ReadFull(c, ch); err != nil {
				t.Fatal(err)
			}
			if ch[60] != 15 || ch[192] != 0 {
				t.Fatalf("not an Ok Challenge: command %d status %d", ch[60], ch[192])
			}
			nonceA := [32]byte(ch[128:160])
			macA := [32]byte(ch[160:192])
			if macA != challengeMAC(secretOld, nonceD, nonceA, true, exporter, wire.MACByAcceptor) {
				t.Fatal("mac_a does not cover mode 1 and this connection's exporter")
			}
			for _, unbound := range [][32]byte{
				challengeMAC(secretOld, nonceD, nonceA, true, [32]byte{}, wire.MACByAcceptor),
				challengeMAC(secretOld, nonceD, nonceA, false, [32]byte{}, wire.MACByAcceptor),
			} {
				if macA == unbound {
					t.Fatal("mac_a equals a MAC without the channel binding")
				}
			}
			binding := [32]byte{}
			if bind {
				binding = exporter
			}
			if _, err := c.Write(finishBytes(clusterIDBytes(t), 0, challengeMAC(secretOld, nonceD, nonceA, true, binding, wire.MACByDialer))); err != nil {
				t.Fatal(err)
			}
			if bind {
				eventually(t, "installed", func() bool { return n.rec.ups(0) == 1 })
				return
			}
			eventually(t, "refused", func() bool { return n.Handshakes().Refused[wire.HandshakeMACMismatch] == 1 })
			if n.rec.ups(0) != 0 {
				t.Fatal("installed without the channel binding")
			}
		})
	}
}

// 3.7 rule 1: TLS 1.3 with ALPN iggy-replica only.
func TestTLSRequiresALPNAndVersion(t *testing.T) {
	tlsConf := testTLS(t)
	cases := []struct {
		name string
		mod  func(c *tls.Config)
	}{
		{"no ALPN", func(c *tls.Config) { c.NextProtos = nil }},
		{"TLS 1.2", func(c *tls.Config) { c.MaxVersion = tls.VersionTLS12 }},
		{"other ALPN", func(c *tls.Config) { c.NextProtos = []string{"h2"} }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := baseConfig(1, 2)
			withAuth(secretOld, nil)(&cfg)
			cfg.TLS = tlsConf
			n := startNode(t, cfg)
			conf := tlsConf.Clone()
			conf.ServerName = "127.0.0.1"
			conf.NextProtos = []string{"iggy-replica"}
			tc.mod(conf)
			c, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", n.Addr().String(), conf)
			if err == nil {
				t.Cleanup(func() { _ = c.Close() })
				_ = c.SetDeadline(time.Now().Add(waitLimit))
				// Go's client may finish before the server refuses: the
				// refusal then shows as the connection closing.
				_, _ = c.Write(helloBytes(clusterIDBytes(t), 0, nonceOf(1)))
				var b [1]byte
				if k, err := c.Read(b[:]); k != 0 || err == nil {
					t.Fatalf("acceptor answered %d bytes", k)
				}
			}
			eventually(t, "failure counted", func() bool { return n.Handshakes().Failed == 1 })
			if n.rec.ups(0) != 0 {
				t.Fatal("installed")
			}
		})
	}
}

// The mixed configurations of 3.8 and the rotation windows of 3.6, node
// against node: dialer 0, acceptor 1.
func TestHandshakeConfigurations(t *testing.T) {
	tlsConf := testTLS(t)
	withTLS := func(c *Config) { c.TLS = tlsConf }
	both := func(fs ...func(*Config)) func(*Config) {
		return func(c *Config) {
			for _, f := range fs {
				f(c)
			}
		}
	}
	none := func(*Config) {}
	type nodes struct{ dialer, acceptor testNode }
	cases := []struct {
		name             string
		dialer, acceptor func(*Config)
		connect          bool
		// For failing cases: the condition that shows the failure, and
		// which sides install a short-lived connection anyway.
		failed                           func(n nodes) bool
		dialerInstalls, acceptorInstalls bool
		acceptorSendsOnUp                bool
	}{
		{name: "no auth both", dialer: none, acceptor: none, connect: true},
		{name: "auth both", dialer: withAuth(secretOld, nil), acceptor: withAuth(secretOld, nil), connect: true},
		{name: "auth and TLS both", dialer: both(withAuth(secretOld, nil), withTLS), acceptor: both(withAuth(secretOld, nil), withTLS), connect: true},
		{name: "rotation: new+old dials old+new", dialer: withAuth(secretNew, secretOld), acceptor: withAuth(secretOld, secretNew), connect: true},
		{name: "rotation: old+new dials new+old", dialer: withAuth(secretOld, secretNew), acceptor: withAuth(secretNew, secretOld), connect: true},
		{name: "rotation: new dials new+old", dialer: withAuth(secretNew, nil), acceptor: withAuth(secretNew, secretOld), connect: true},
		{name: "rotation: old dials old+new", dialer: withAuth(secretOld, nil), acceptor: withAuth(secretOld, secretNew), connect: true},
		{
			name: "rotation skipped: new+old dials old", dialer: withAuth(secretNew, secretOld), acceptor: withAuth(secretOld, nil),
			dialerInstalls: true, // it installs after sending Finish (3.6 step 5)
			failed:         func(n nodes) bool { return n.acceptor.Handshakes().Refused[wire.HandshakeMACMismatch] > 0 },
		},
		{
			name: "different PSK", dialer: withAuth(secretNew, nil), acceptor: withAuth(secretOld, nil),
			failed: func(n nodes) bool { return n.dialer.Handshakes().Refused[wire.HandshakeMACMismatch] > 0 },
		},
		{
			name: "auth dialer, no-auth acceptor", dialer: withAuth(secretOld, nil), acceptor: none,
			acceptorInstalls: true, acceptorSendsOnUp: true,
			failed: func(n nodes) bool { return n.dialer.Handshakes().Refused[wire.HandshakeUnknownCommand] > 0 },
		},
		{
			name: "no-auth dialer, auth acceptor", dialer: none, acceptor: withAuth(secretOld, nil), dialerInstalls: true,
			failed: func(n nodes) bool { return n.acceptor.Handshakes().Refused[wire.HandshakeAuthRequired] > 0 },
		},
		{
			name: "cluster name differs, auth", dialer: both(withAuth(secretOld, nil), func(c *Config) { c.ClusterName = "other" }),
			acceptor: withAuth(secretOld, nil),
			failed: func(n nodes) bool {
				return n.dialer.Handshakes().PeerRefused[wire.HandshakeClusterMismatch] > 0 &&
					n.acceptor.Handshakes().Refused[wire.HandshakeClusterMismatch] > 0
			},
		},
		{
			name: "cluster name differs, no auth", dialer: func(c *Config) { c.ClusterName = "other" }, acceptor: none,
			dialerInstalls: true,
			failed:         func(n nodes) bool { return n.acceptor.Handshakes().Refused[wire.HandshakeClusterMismatch] > 0 },
		},
		{
			name: "TLS dialer, plaintext acceptor", dialer: both(withAuth(secretOld, nil), withTLS), acceptor: withAuth(secretOld, nil),
			failed: func(n nodes) bool { return n.dialer.Handshakes().Failed > 0 },
		},
		{
			name: "plaintext dialer, TLS acceptor", dialer: withAuth(secretOld, nil), acceptor: both(withAuth(secretOld, nil), withTLS),
			failed: func(n nodes) bool { return n.acceptor.Handshakes().Failed > 0 },
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfgs := []func(*Config){tc.dialer, tc.acceptor}
			i := 0
			ns := startClusterPrep(t, 2, func(c *Config) { cfgs[i](c); i++ }, func(ns []testNode) {
				if tc.acceptorSendsOnUp {
					// 3.8 row 2: the acceptor installs after the Hello and
					// sends a consensus frame where a Challenge is expected.
					head, _ := frameOf(9, 1, 1, nil)
					ns[1].rec.onUp = func(id uint8) { ns[1].Send(id, head, nil) }
				}
			})
			n := nodes{ns[0], ns[1]}
			if tc.connect {
				eventually(t, "connected", func() bool { return connected(n.dialer, 1) && connected(n.acceptor, 0) })
				head, whole := frameOf(9, 0, 7, nil)
				sendAll(t, n.dialer, 1, [][2][]byte{{head, nil}})
				head1, whole1 := frameOf(9, 1, 8, nil)
				sendAll(t, n.acceptor, 0, [][2][]byte{{head1, nil}})
				eventually(t, "frames both ways", func() bool {
					a, b := n.acceptor.rec.got(0), n.dialer.rec.got(1)
					return len(a) == 1 && bytes.Equal(a[0], whole) && len(b) == 1 && bytes.Equal(b[0], whole1)
				})
				return
			}
			eventually(t, "the expected failure", func() bool { return tc.failed(n) })
			// A few more sweeps: the outcome is stable.
			time.Sleep(150 * time.Millisecond)
			if !tc.dialerInstalls && n.dialer.rec.ups(1) != 0 {
				t.Errorf("dialer installed a connection")
			}
			if !tc.acceptorInstalls && n.acceptor.rec.ups(0) != 0 {
				t.Errorf("acceptor installed a connection")
			}
			// Each dial counted is one PeerUp; a redial may be between the
			// two counts at any one moment, so wait for them to agree.
			eventually(t, "as many PeerUp as dials", func() bool {
				return n.dialer.Handshakes().Dialed == uint64(n.dialer.rec.ups(1))
			})
		})
	}
}
