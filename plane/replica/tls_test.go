package replicaplane

import (
	"bytes"
	"crypto/tls"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"iggynode/internal/testutil"
	"iggynode/wire"
)

// mutualTLS is MutualTLS of a certificate the CA issues for 127.0.0.1.
func mutualTLS(t *testing.T, ca *testutil.TestCA, name string) *tls.Config {
	t.Helper()
	cert, key := ca.Issue(t, name, testutil.Loopback)
	conf, err := MutualTLS(cert, key, ca.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	return conf
}

// withMutualTLS gives every node of a cluster its own certificate from ca
// and the shared secret.
func withMutualTLS(t *testing.T, ca *testutil.TestCA, secret []byte) func(c *Config) {
	return func(c *Config) {
		withAuth(secret, nil)(c)
		c.TLS = mutualTLS(t, ca, "replica"+string('0'+rune(c.Self)))
	}
}

// replica-plane.md 3.7 with a cluster CA: three nodes, each with its own
// certificate, link up over mutual TLS and carry frames both ways; the
// shared-secret handshake runs inside every session.
func TestMutualTLSClusterExchangesFrames(t *testing.T) {
	ca := testutil.NewTestCA(t, "cluster CA")
	nodes := startCluster(t, 3, withMutualTLS(t, ca, secretOld))
	for i, n := range nodes {
		for j := range nodes {
			if i == j {
				continue
			}
			eventually(t, "linked", func() bool { return connected(n, uint8(j)) })
			if s := n.Stats()[uint8(j)]; !s.TLS {
				t.Fatalf("link %d-%d is not TLS: %+v", i, j, s)
			}
		}
	}
	for from := range nodes {
		for to := range nodes {
			if from == to {
				continue
			}
			head, whole := frameOf(9, uint8(from), uint64(10*from+to), []byte("payload"))
			sendAll(t, nodes[from], uint8(to), [][2][]byte{{head, []byte("payload")}})
			eventually(t, "frame delivered", func() bool {
				got := nodes[to].rec.got(uint8(from))
				return len(got) == 1 && bytes.Equal(got[0], whole)
			})
		}
	}
	for _, n := range nodes {
		hs := n.Handshakes()
		if len(hs.Refused) != 0 || hs.Failed != 0 {
			t.Fatalf("handshakes %+v", hs)
		}
	}
}

// Who is refused by a mutual-TLS acceptor (replica 1) or dialer (0).
func TestMutualTLSRefusesStrangers(t *testing.T) {
	ca := testutil.NewTestCA(t, "cluster CA")
	other := testutil.NewTestCA(t, "another CA")
	cluster := func(c *Config) {
		withAuth(secretOld, nil)(c)
		c.TLS = mutualTLS(t, ca, "replica"+string('0'+rune(c.Self)))
	}
	foreignCert := func(c *Config) {
		// A certificate from another CA; it still trusts the cluster's CA.
		cluster(c)
		stranger := mutualTLS(t, other, "stranger")
		c.TLS.Certificates = stranger.Certificates
	}
	trustsOther := func(c *Config) {
		cluster(c)
		stranger := mutualTLS(t, other, "stranger")
		c.TLS.RootCAs, c.TLS.ClientCAs = stranger.RootCAs, stranger.ClientCAs
	}
	serverOnly := func(c *Config) {
		withAuth(secretOld, nil)(c)
		cert, key := ca.IssueServerOnly(t, "server-only", testutil.Loopback)
		conf, err := MutualTLS(cert, key, ca.CAFile)
		if err != nil {
			t.Fatal(err)
		}
		c.TLS = conf
	}
	noClientCert := func(c *Config) {
		cluster(c)
		c.TLS.Certificates = nil
		c.TLS.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return nil, nil }
	}
	wrongName := func(c *Config) {
		withAuth(secretOld, nil)(c)
		cert, key := ca.Issue(t, "elsewhere", net.IPv4(10, 9, 8, 7))
		conf, err := MutualTLS(cert, key, ca.CAFile)
		if err != nil {
			t.Fatal(err)
		}
		c.TLS = conf
	}
	type pair struct{ dialer, acceptor testNode }
	cases := []struct {
		name             string
		dialer, acceptor func(*Config)
		failed           func(p pair) bool
	}{
		{"dialer certificate from another CA", foreignCert, cluster,
			func(p pair) bool { return p.acceptor.Handshakes().Failed > 0 }},
		{"acceptor certificate from another CA", cluster, foreignCert,
			func(p pair) bool { return p.dialer.Handshakes().Failed > 0 }},
		{"dialer trusts another CA", trustsOther, cluster,
			func(p pair) bool { return p.dialer.Handshakes().Failed > 0 }},
		{"dialer certificate without client auth", serverOnly, cluster,
			func(p pair) bool { return p.acceptor.Handshakes().Failed > 0 }},
		{"dialer presents no certificate", noClientCert, cluster,
			func(p pair) bool { return p.acceptor.Handshakes().Failed > 0 }},
		{"acceptor certificate for another address", cluster, wrongName,
			func(p pair) bool { return p.dialer.Handshakes().Failed > 0 }},
		{"plaintext dialer", withAuth(secretOld, nil), cluster,
			func(p pair) bool { return p.acceptor.Handshakes().Failed > 0 }},
		{"plaintext acceptor", cluster, withAuth(secretOld, nil),
			func(p pair) bool { return p.dialer.Handshakes().Failed > 0 }},
		{"wrong secret inside TLS", func(c *Config) { cluster(c); c.SharedSecret = secretNew }, cluster,
			func(p pair) bool { return p.dialer.Handshakes().Refused[wire.HandshakeMACMismatch] > 0 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mods := []func(*Config){tc.dialer, tc.acceptor}
			ns := startCluster(t, 2, func(c *Config) { mods[c.Self](c) })
			p := pair{ns[0], ns[1]}
			eventually(t, "the refusal", func() bool { return tc.failed(p) })
			time.Sleep(100 * time.Millisecond) // a few more sweeps: still nothing installed
			if p.dialer.rec.ups(1) != 0 || p.acceptor.rec.ups(0) != 0 {
				t.Fatalf("a connection was installed: dialer %d ups, acceptor %d ups", p.dialer.rec.ups(1), p.acceptor.rec.ups(0))
			}
		})
	}
}

// A raw TCP client that speaks the handshake in the clear is refused by a
// mutual-TLS acceptor before any replica frame is read.
func TestMutualTLSAcceptorRefusesPlainHello(t *testing.T) {
	ca := testutil.NewTestCA(t, "cluster CA")
	cfg := baseConfig(1, 2)
	withMutualTLS(t, ca, secretOld)(&cfg)
	n := startNode(t, cfg)
	c := rawDial(t, n.Addr())
	mustWrite(t, c, helloBytes(clusterIDBytes(t), 0, nonceOf(7)))
	var b [256]byte
	k, _ := c.Read(b[:])
	if k > 0 && b[0] != 0x15 { // at most a TLS alert record, never a Challenge
		t.Fatalf("acceptor answered a plaintext Hello with % x", b[:k])
	}
	eventually(t, "failure counted", func() bool { return n.Handshakes().Failed == 1 })
	if n.rec.ups(0) != 0 {
		t.Fatal("installed")
	}
}

func TestMutualTLSConfigErrors(t *testing.T) {
	ca := testutil.NewTestCA(t, "cluster CA")
	cert, key := ca.Issue(t, "node", testutil.Loopback)
	otherCert, _ := ca.Issue(t, "other", testutil.Loopback)
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name              string
		cert, key, caFile string
		want              string
	}{
		{"no ca_file", cert, key, "", "ca_file"},
		{"no cert_file", "", key, ca.CAFile, "cert_file"},
		{"missing ca_file", cert, key, filepath.Join(dir, "nope.pem"), "ca_file"},
		{"ca_file without certificates", cert, key, notPEM, "no PEM certificate"},
		{"key of another certificate", otherCert, key, ca.CAFile, "certificate"},
		{"missing key", cert, filepath.Join(dir, "nope.key"), ca.CAFile, "nope.key"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := MutualTLS(tc.cert, tc.key, tc.caFile)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("MutualTLS: %v, want an error naming %q", err, tc.want)
			}
		})
	}
	if _, err := MutualTLS(cert, key, ca.CAFile); err != nil {
		t.Fatal(err)
	}
}

// self_signed mode (3.7 rule 2): any certificate is accepted, so only the
// shared secret decides who joins, inside an encrypted session.
func TestAnyPeerTLSLeavesTheDecisionToTheMAC(t *testing.T) {
	cert := testTLS(t).Certificates[0]
	selfSigned := func(secret []byte) func(c *Config) {
		return func(c *Config) {
			withAuth(secret, nil)(c)
			c.TLS = AnyPeerTLS(cert)
		}
	}
	ns := startCluster(t, 2, selfSigned(secretOld))
	eventually(t, "linked over TLS", func() bool { return connected(ns[0], 1) && ns[0].Stats()[1].TLS })

	mods := []func(*Config){selfSigned(secretNew), selfSigned(secretOld)}
	ns = startCluster(t, 2, func(c *Config) { mods[c.Self](c) })
	eventually(t, "MAC refusal", func() bool { return ns[0].Handshakes().Refused[wire.HandshakeMACMismatch] > 0 })
	if ns[0].rec.ups(1) != 0 || ns[1].rec.ups(0) != 0 {
		t.Fatal("installed with a wrong secret")
	}
}
