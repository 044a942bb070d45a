package client

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"iggynode/wire"
)

// testCertificate makes a self-signed CA certificate for 127.0.0.1 and
// localhost and returns it with the path of its PEM.
func testCertificate(t *testing.T) (tls.Certificate, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "iggynode test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
		IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, path
}

// newTLSFake serves the fake over TLS with a self-signed certificate for
// 127.0.0.1 and returns the path of its PEM.
func newTLSFake(t *testing.T) (*fake, string) {
	t.Helper()
	cert, path := testCertificate(t)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	return startFake(t, ln), path
}

// transports.md 3.3, 5.3: TCP+TLS verifies by default, trusts a given CA
// file, checks the server name, and frames exactly like TCP.
func TestTCPTLS(t *testing.T) {
	f, ca := newTLSFake(t)
	cases := []struct {
		name string
		tls  TLSOptions
		ok   bool
	}{
		{"trusted CA, name from address", TLSOptions{Enabled: true, CAFile: ca}, true},
		{"trusted CA, explicit domain", TLSOptions{Enabled: true, CAFile: ca, Domain: "localhost"}, true},
		{"verification on by default", TLSOptions{Enabled: true}, false},
		{"wrong domain", TLSOptions{Enabled: true, CAFile: ca, Domain: "other.example"}, false},
		{"verification off", TLSOptions{Enabled: true, InsecureSkipVerify: true}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := testOptions(f)
			opts.TLS = tc.tls
			opts.NoDelay = true
			c, err := New(opts)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_, err = c.Login(t.Context(), "iggy", "iggy")
			if tc.ok && err != nil {
				t.Fatalf("login over TLS: %v", err)
			}
			if !tc.ok && !isErr(err, wire.ErrCannotEstablishConnection) {
				t.Fatalf("got %v, want CannotEstablishConnection", err)
			}
		})
	}
}

func TestTLSBadCAFile(t *testing.T) {
	opts := Options{Address: "127.0.0.1:1", TLS: TLSOptions{Enabled: true, CAFile: filepath.Join(t.TempDir(), "missing.pem")}}
	if _, err := New(opts); !isErr(err, wire.ErrInvalidTlsCertificatePath) {
		t.Fatalf("got %v", err)
	}
	empty := filepath.Join(t.TempDir(), "empty.pem")
	os.WriteFile(empty, []byte("not a pem"), 0o600)
	opts.TLS.CAFile = empty
	if _, err := New(opts); !isErr(err, wire.ErrInvalidTlsCertificate) {
		t.Fatalf("got %v", err)
	}
}
