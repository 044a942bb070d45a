package clientplane_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientplane "iggynode/plane/client"
)

var quiet = slog.New(slog.DiscardHandler)

func generate(t *testing.T) *clientplane.SelfSigned {
	t.Helper()
	ss, err := clientplane.GenerateSelfSigned()
	if err != nil {
		t.Fatal(err)
	}
	return ss
}

// transports.md 3.2: ECDSA P-256, localhost (plus the loopback IPs), about
// a year, not a CA, server auth.
func TestGenerateSelfSigned(t *testing.T) {
	ss := generate(t)
	leaf, err := x509.ParseCertificate(ss.Certificate.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	pub, ok := leaf.PublicKey.(*ecdsa.PublicKey)
	if !ok || pub.Curve != elliptic.P256() {
		t.Fatalf("key %T, want ECDSA P-256", leaf.PublicKey)
	}
	if len(leaf.DNSNames) != 1 || leaf.DNSNames[0] != "localhost" {
		t.Fatalf("DNS SANs %v", leaf.DNSNames)
	}
	for _, host := range []string{"localhost", "127.0.0.1", "::1"} {
		if err := leaf.VerifyHostname(host); err != nil {
			t.Errorf("%s: %v", host, err)
		}
	}
	if leaf.IsCA {
		t.Error("generated certificate is a CA; rustls refuses a CA as end entity")
	}
	if d := leaf.NotAfter.Sub(time.Now()); d < 360*24*time.Hour || d > 367*24*time.Hour {
		t.Errorf("valid for %v, want about a year", d)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: ss.CertPool(), DNSName: "localhost"}); err != nil {
		t.Errorf("not trusted through its own pool: %v", err)
	}
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// servedLeaf is the DER of the certificate a tls.Config serves.
func servedLeaf(t *testing.T, c *tls.Config) []byte {
	t.Helper()
	if len(c.Certificates) != 1 {
		t.Fatalf("%d certificates, want 1", len(c.Certificates))
	}
	return c.Certificates[0].Certificate[0]
}

// transports.md 3.2 precedence: TCP/WSS self_signed generates only while
// cert_file does not exist; QUIC self_signed always generates.
func TestCertificatePrecedence(t *testing.T) {
	dir := t.TempDir()
	ss := generate(t)
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	writeFile(t, certFile, ss.CertPEM)
	writeFile(t, keyFile, ss.KeyPEM)
	missing := filepath.Join(dir, "missing.pem")
	fileDER := ss.Certificate.Certificate[0]

	c, err := clientplane.ServerTLS(clientplane.CertSource{SelfSigned: true, CertFile: certFile, KeyFile: keyFile}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(servedLeaf(t, c), fileDER) {
		t.Error("tcp self_signed with an existing cert_file did not load the file")
	}
	if c.MinVersion != tls.VersionTLS12 || len(c.NextProtos) != 0 || c.ClientAuth != tls.NoClientCert {
		t.Errorf("tcp config: min %x, alpn %v, client auth %v", c.MinVersion, c.NextProtos, c.ClientAuth)
	}
	c, err = clientplane.ServerTLS(clientplane.CertSource{SelfSigned: true, CertFile: missing, KeyFile: missing}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(servedLeaf(t, c), fileDER) {
		t.Error("tcp self_signed without cert_file did not generate")
	}
	c, err = clientplane.ServerTLS(clientplane.CertSource{CertFile: certFile, KeyFile: keyFile}, quiet)
	if err != nil || !bytes.Equal(servedLeaf(t, c), fileDER) {
		t.Fatalf("tcp files: %v", err)
	}
	c, err = clientplane.QUICServerTLS(clientplane.CertSource{SelfSigned: true, CertFile: certFile, KeyFile: keyFile}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(servedLeaf(t, c), fileDER) {
		t.Error("quic self_signed loaded the files instead of generating")
	}
	if c.MinVersion != tls.VersionTLS13 {
		t.Errorf("quic min version %x, want TLS 1.3", c.MinVersion)
	}
	c, err = clientplane.QUICServerTLS(clientplane.CertSource{CertFile: certFile, KeyFile: keyFile}, quiet)
	if err != nil || !bytes.Equal(servedLeaf(t, c), fileDER) {
		t.Fatalf("quic files: %v", err)
	}

	empty := filepath.Join(dir, "empty.pem")
	writeFile(t, empty, nil)
	for name, src := range map[string]clientplane.CertSource{
		"missing cert": {CertFile: missing, KeyFile: keyFile},
		"empty key":    {CertFile: certFile, KeyFile: empty},
	} {
		for family, build := range map[string]func(clientplane.CertSource) (*tls.Config, error){
			"tcp":  func(s clientplane.CertSource) (*tls.Config, error) { return clientplane.ServerTLS(s, quiet) },
			"quic": func(s clientplane.CertSource) (*tls.Config, error) { return clientplane.QUICServerTLS(s, quiet) },
		} {
			_, err := build(src)
			if err == nil {
				t.Errorf("%s %s: no error", family, name)
				continue
			}
			if bad := map[string]string{"missing cert": missing, "empty key": empty}[name]; !strings.Contains(err.Error(), bad) {
				t.Errorf("%s %s: error %q does not name %s", family, name, err, bad)
			}
		}
	}
}

// transports.md 5.3: TCP+TLS carries frames exactly like TCP; the
// generated certificate verifies for localhost and 127.0.0.1.
func TestTCPTLSRoundTrip(t *testing.T) {
	ss := generate(t)
	cfg := testConfig()
	cfg.TLS = ss.ServerConfig()
	h := newEcho()
	l, err := clientplane.ListenTCP("127.0.0.1:0", cfg, h)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, name := range []string{"localhost", ""} {
		nc, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", l.Addr().String(),
			&tls.Config{RootCAs: ss.CertPool(), ServerName: name})
		if err != nil {
			t.Fatalf("server name %q: %v", name, err)
		}
		if p := nc.ConnectionState().NegotiatedProtocol; p != "" {
			t.Errorf("ALPN %q negotiated, want none", p)
		}
		roundTrips(t, 5, tcpExchange(t, nc))
		_ = nc.Close()
	}

	// A framing error closes the TLS connection too (5.4).
	nc, err := tls.Dial("tcp", l.Addr().String(), &tls.Config{RootCAs: ss.CertPool(), ServerName: "localhost"})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := nc.Write(withSize(requestFrame(1, nil), 100)); err != nil {
		t.Fatal(err)
	}
	expectEOF(t, nc)
}

// transports.md 5.3: a client that never completes the TLS handshake is
// dropped after handshake_grace, and no Session is opened for it.
func TestTCPTLSHandshakeGrace(t *testing.T) {
	cfg := testConfig()
	cfg.TLS = generate(t).ServerConfig()
	cfg.HandshakeGrace = 200 * time.Millisecond
	h := newEcho()
	l, err := clientplane.ListenTCP("127.0.0.1:0", cfg, h)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	nc := dialTCP(t, l.Addr().String())
	defer nc.Close()
	start := time.Now()
	expectEOF(t, nc)
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("dropped after %v", d)
	}
	if n := h.opened.Load(); n != 0 {
		t.Errorf("%d sessions opened for a failed handshake", n)
	}
}
