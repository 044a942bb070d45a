package httpplane_test

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"strings"
	"testing"

	"iggynode/actors"
	"iggynode/config"
	clientplane "iggynode/plane/client"
)

// http.md 1.1.2: with http.tls the listener serves HTTPS and an
// ALPN-capable client negotiates HTTP/2.
func TestTLSServesHTTP2(t *testing.T) {
	cert, err := clientplane.GenerateSelfSigned()
	if err != nil {
		t.Fatal(err)
	}
	n := startNodeWith(t, t.TempDir(), func(cfg *config.Config, opts *actors.Options) {
		cfg.HTTP.TLS.Enabled = true
		opts.TLS = cert.ServerConfig()
	})
	t.Cleanup(func() { _ = n.Close() })
	if !strings.HasPrefix(n.base, "https://") {
		t.Fatalf("base %s", n.base)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(cert.CertPEM)
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "localhost"}, ForceAttemptHTTP2: true}}
	resp, err := c.Get(n.base + "/ping")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.ProtoMajor != 2 {
		t.Fatalf("ping over TLS: %d %s", resp.StatusCode, resp.Proto)
	}
	if _, err := http.Get(strings.Replace(n.base, "https", "http", 1) + "/ping"); err == nil {
		t.Log("plain HTTP on the TLS port answered (Go answers a 400), fine")
	}
}

// http.md 8.4: explicit origins are echoed byte for byte with Vary:
// Origin; others get no allow-origin; credentials add their header;
// disabled CORS leaves OPTIONS to the router (405).
func TestCORSConfigured(t *testing.T) {
	n := startNodeWith(t, t.TempDir(), func(cfg *config.Config, _ *actors.Options) {
		cfg.HTTP.CORS.AllowedOrigins = []string{"http://a.example", " http://b.example "}
		cfg.HTTP.CORS.AllowCredentials = true
		cfg.HTTP.CORS.AllowedHeaders = []string{"content-type"}
		cfg.HTTP.CORS.ExposedHeaders = []string{"iggy-view"}
		cfg.HTTP.CORS.AllowPrivateNetwork = true
	})
	t.Cleanup(func() { _ = n.Close() })
	r := do(t, n.base, "OPTIONS", "/streams", "", nil, "Origin", "http://b.example", "Access-Control-Request-Private-Network", "true")
	if r.status != 200 || r.header.Get("Access-Control-Allow-Origin") != "http://b.example" || r.header.Get("Vary") != "Origin" ||
		r.header.Get("Access-Control-Allow-Credentials") != "true" || r.header.Get("Access-Control-Allow-Private-Network") != "true" {
		t.Fatalf("preflight %d %v", r.status, r.header)
	}
	r = do(t, n.base, "GET", "/ping", "", nil, "Origin", "http://evil.example")
	if r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("a foreign origin was allowed: %v", r.header)
	}
	off := startNodeWith(t, t.TempDir(), func(cfg *config.Config, _ *actors.Options) { cfg.HTTP.CORS.Enabled = false })
	t.Cleanup(func() { _ = off.Close() })
	if r := do(t, off.base, "OPTIONS", "/streams", "", nil); r.status != 405 {
		t.Fatalf("OPTIONS with CORS off: %d", r.status)
	}
}

// http.md 3.8.2: the session table is bounded; a full table refuses a
// new credential's writes with 503 (Retry-After) and still serves its
// reads. 10 #16: a JWT of a deleted user is refused.
func TestSessionBoundAndDeletedUser(t *testing.T) {
	n := startNodeWith(t, t.TempDir(), func(cfg *config.Config, _ *actors.Options) { cfg.HTTP.MaxSessions = 1 })
	t.Cleanup(func() { _ = n.Close() })
	root := login(t, n.base, "iggy", "iggy")
	if r := do(t, n.base, "POST", "/users", root, `{"username":"bob","password":"secret","status":"active"}`); r.status != 200 {
		t.Fatalf("create user: %d %s", r.status, r.body)
	}
	bob := login(t, n.base, "bob", "secret")
	r := do(t, n.base, "POST", "/personal-access-tokens", bob, `{"name":"bobs","expiry":0}`)
	if r.status != 503 || r.header.Get("Retry-After") != "1" || !strings.Contains(string(r.body), `"id":9`) {
		t.Fatalf("write with a full table: %d %v %s", r.status, r.header, r.body)
	}
	if r := do(t, n.base, "GET", "/users/me", bob, nil); r.status != 200 {
		t.Fatalf("read with a full table: %d %s", r.status, r.body)
	}
	if r := do(t, n.base, "DELETE", "/users/bob", root, nil); r.status != 204 {
		t.Fatalf("delete user: %d %s", r.status, r.body)
	}
	if r := do(t, n.base, "GET", "/users/me", bob, nil); r.status != 401 || !strings.Contains(string(r.body), `"id":40`) {
		t.Fatalf("token of a deleted user: %d %s", r.status, r.body)
	}
}
