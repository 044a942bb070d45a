package clientplane

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/big"
	"net"
	"os"
	"time"
)

// CertSource says where a listener's certificate comes from: the
// `[tcp.tls]`, `[websocket.tls]` or `[quic.certificate]` keys
// (transports.md 3.2).
type CertSource struct {
	SelfSigned bool
	CertFile   string // PEM, chain allowed (leaf first)
	KeyFile    string // PEM: PKCS#8, PKCS#1 (RSA) or SEC1 (EC)
}

// ServerTLS builds the TLS configuration of TCP+TLS and WSS: TLS 1.2 and
// 1.3, no client certificates, no ALPN, one certificate for every SNI name
// (3.1). SelfSigned generates an ephemeral certificate only while CertFile
// does not exist; an existing file is loaded instead (3.2).
func ServerTLS(src CertSource, log *slog.Logger) (*tls.Config, error) {
	if log == nil {
		log = slog.Default()
	}
	if src.SelfSigned {
		if _, err := os.Stat(src.CertFile); src.CertFile == "" || errors.Is(err, fs.ErrNotExist) {
			return generatedConfig(tls.VersionTLS12)
		}
		log.Info("self_signed is set but the certificate file exists; loading it", "cert_file", src.CertFile, "key_file", src.KeyFile)
	}
	cert, err := LoadCertificate(src.CertFile, src.KeyFile)
	if err != nil {
		return nil, err
	}
	return serverConfig(cert, tls.VersionTLS12), nil
}

// QUICServerTLS builds the TLS configuration of the QUIC listener: TLS 1.3
// only, no client certificates, no ALPN (4.2). SelfSigned always generates
// and ignores, with a warning, any files that are named (3.2).
func QUICServerTLS(src CertSource, log *slog.Logger) (*tls.Config, error) {
	if log == nil {
		log = slog.Default()
	}
	if src.SelfSigned {
		if src.CertFile != "" || src.KeyFile != "" {
			log.Warn("quic self_signed is set; ignoring the certificate files", "cert_file", src.CertFile, "key_file", src.KeyFile)
		}
		return generatedConfig(tls.VersionTLS13)
	}
	cert, err := LoadCertificate(src.CertFile, src.KeyFile)
	if err != nil {
		return nil, err
	}
	return serverConfig(cert, tls.VersionTLS13), nil
}

// LoadCertificate reads a PEM certificate chain and its key. An empty or
// unreadable file is an error naming the path (3.2).
func LoadCertificate(certFile, keyFile string) (tls.Certificate, error) {
	if certFile == "" || keyFile == "" {
		return tls.Certificate{}, fmt.Errorf("tls: both cert_file and key_file are required (cert_file %q, key_file %q)", certFile, keyFile)
	}
	certPEM, err := readPEMFile(certFile)
	if err != nil {
		return tls.Certificate{}, err
	}
	keyPEM, err := readPEMFile(keyFile)
	if err != nil {
		return tls.Certificate{}, err
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("tls: loading %s and %s: %w", certFile, keyFile, err)
	}
	return cert, nil
}

func readPEMFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tls: reading %s: %w", path, err)
	}
	if len(b) == 0 {
		return nil, fmt.Errorf("tls: %s is empty", path)
	}
	return b, nil
}

// SelfSigned is an ephemeral certificate made at start-up. CertPEM is the
// certificate itself, which is also its own issuer: a client (or a test)
// trusts the server by adding CertPEM to its roots.
type SelfSigned struct {
	Certificate tls.Certificate
	CertPEM     []byte
	KeyPEM      []byte // PKCS#8
}

// GenerateSelfSigned makes an ECDSA P-256 certificate for localhost,
// 127.0.0.1 and ::1, valid for a year (3.2; the upstream generator names
// only localhost, the IP SANs let clients that dial an address verify it).
func GenerateSelfSigned() (*SelfSigned, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "localhost", Organization: []string{"iggynode self-signed"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(1, 0, 0),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	s := &SelfSigned{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}
	s.Certificate, err = tls.X509KeyPair(s.CertPEM, s.KeyPEM)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// ServerConfig is the TCP+TLS / WSS configuration serving s.
func (s *SelfSigned) ServerConfig() *tls.Config {
	return serverConfig(s.Certificate, tls.VersionTLS12)
}

// QUICConfig is the QUIC listener's TLS configuration serving s.
func (s *SelfSigned) QUICConfig() *tls.Config {
	return serverConfig(s.Certificate, tls.VersionTLS13)
}

// CertPool is a pool that trusts s, for clients.
func (s *SelfSigned) CertPool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(s.CertPEM)
	return pool
}

func generatedConfig(minVersion uint16) (*tls.Config, error) {
	s, err := GenerateSelfSigned()
	if err != nil {
		return nil, fmt.Errorf("tls: generating a self-signed certificate: %w", err)
	}
	return serverConfig(s.Certificate, minVersion), nil
}

// serverConfig: no client auth, no ALPN, SNI ignored (3.1). TLS over TCP
// has no early data in crypto/tls; QUIC refuses 0-RTT in its own config.
func serverConfig(cert tls.Certificate, minVersion uint16) *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		MinVersion:   minVersion,
		ClientAuth:   tls.NoClientCert,
	}
}
