package testutil

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestCA is a certificate authority made for one test: it issues node
// certificates the way a cluster operator would (replica-plane.md 3.7).
type TestCA struct {
	Cert   *x509.Certificate
	key    *ecdsa.PrivateKey
	dir    string
	CAFile string // PEM of Cert, for ca_file
	serial int64
}

// NewTestCA makes a CA named name with its PEM in a fresh temporary folder.
func NewTestCA(t testing.TB, name string) *TestCA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	ca := &TestCA{Cert: cert, key: key, dir: t.TempDir(), serial: 1}
	ca.CAFile = writePEM(t, filepath.Join(ca.dir, "ca.pem"), "CERTIFICATE", der)
	return ca
}

// Issue signs a certificate for name valid as both TLS server and client
// (a replica is both), with the given IP SANs, and returns the paths of
// its PEM certificate and PKCS#8 key.
func (ca *TestCA) Issue(t testing.TB, name string, ips ...net.IP) (certFile, keyFile string) {
	t.Helper()
	return ca.issue(t, name, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, nil, ips)
}

// IssueForHosts is Issue with DNS SANs (wildcards allowed) and no IP
// SAN: a node the roster names by host name, as a StatefulSet's pods.
func (ca *TestCA) IssueForHosts(t testing.TB, name string, hosts ...string) (certFile, keyFile string) {
	t.Helper()
	return ca.issue(t, name, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, hosts, nil)
}

// IssueServerOnly is Issue without the client-auth usage.
func (ca *TestCA) IssueServerOnly(t testing.TB, name string, ips ...net.IP) (certFile, keyFile string) {
	t.Helper()
	return ca.issue(t, name, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, nil, ips)
}

func (ca *TestCA) issue(t testing.TB, name string, usage []x509.ExtKeyUsage, hosts []string, ips []net.IP) (string, string) {
	t.Helper()
	ca.serial++
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(ca.serial),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  usage,
		IPAddresses:  ips,
		DNSNames:     hosts,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile := writePEM(t, filepath.Join(ca.dir, name+".pem"), "CERTIFICATE", der)
	keyFile := writePEM(t, filepath.Join(ca.dir, name+".key"), "PRIVATE KEY", keyDER)
	return certFile, keyFile
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func writePEM(t testing.TB, path, kind string, der []byte) string {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Loopback is 127.0.0.1, the SAN of certificates for loopback tests.
var Loopback = net.IPv4(127, 0, 0, 1)
