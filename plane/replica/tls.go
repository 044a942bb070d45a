package replicaplane

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// MutualTLS builds the Config.TLS of a cluster with its own CA
// (cluster.tls with cert_file, key_file and ca_file; replica-plane.md 3.7,
// 10.1): the node presents certFile on both ends of every connection, the
// dialer verifies the acceptor's certificate against the CA and the
// peer's roster host, and the acceptor requires a client certificate and
// verifies it against the same CA. A node certificate therefore needs the
// serverAuth and clientAuth extended key usages (or none) and the roster
// host among its SANs: an IP SAN for an IP, a DNS SAN for a host name
// (the dialer verifies the name, not the IP it resolved to). The shared-secret MAC still runs inside the session.
func MutualTLS(certFile, keyFile, caFile string) (*tls.Config, error) {
	if certFile == "" || keyFile == "" || caFile == "" {
		return nil, fmt.Errorf("replicaplane: cluster TLS needs cert_file, key_file and ca_file (got %q, %q, %q)", certFile, keyFile, caFile)
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("replicaplane: cluster TLS certificate %s / %s: %w", certFile, keyFile, err)
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("replicaplane: cluster TLS ca_file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("replicaplane: cluster TLS ca_file %s holds no PEM certificate", caFile)
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		RootCAs:      pool,
		ClientCAs:    pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
	}, nil
}

// AnyPeerTLS is the Config.TLS of self_signed mode (3.7 rule 2): the node
// presents cert (an ephemeral one) and accepts any certificate from the
// peer, asking none of a dialer. TLS then gives confidentiality; who may
// join rests on the shared-secret MAC alone, bound to the session by the
// exporter, which a relaying MITM cannot forge.
func AnyPeerTLS(cert tls.Certificate) *tls.Config {
	return &tls.Config{
		Certificates:       []tls.Certificate{cert},
		InsecureSkipVerify: true, // 3.7 rule 2: self_signed accepts any certificate
		ClientAuth:         tls.NoClientCert,
	}
}

// errNoCertificate: a TLS config that cannot serve the acceptor's side.
var errNoCertificate = errors.New("replicaplane: cluster TLS config has no certificate to present")
