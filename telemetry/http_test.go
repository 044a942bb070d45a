package telemetry

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"iggynode/config"
	"iggynode/internal/testutil"
)

// The listener on 127.0.0.1:0 serves /ping and the metrics route without
// a token (loopback), 404 elsewhere, counts requests, and closes.
func TestServeLoopback(t *testing.T) {
	c := testConfig(t)
	c.HTTP.Enabled = true
	c.HTTP.Address = "127.0.0.1:0"
	tel := setup(t, c)
	defer tel.Shutdown(context.Background())
	h, err := tel.HTTPHandler(c.HTTP)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := Serve(c.HTTP.Address, h)
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + srv.Addr().String()
	get := func(path string) (int, string) {
		t.Helper()
		return testutil.HTTPGet(t, base+path)
	}
	if code, body := get("/ping"); code != 200 || body != "pong" {
		t.Errorf("/ping: %d %q", code, body)
	}
	for _, p := range []string{"/", "/stats", "/metricsx", "/ping/x"} {
		if code, _ := get(p); code != 404 {
			t.Errorf("%s: %d, want 404", p, code)
		}
	}
	code, body := get("/metrics")
	if code != 200 || !strings.Contains(body, "http_requests_total 6") {
		t.Errorf("/metrics: %d, want http_requests_total 6 (the 6 requests so far):\n%s", code, grepLines(body, "http_requests"))
	}
	if err := srv.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(base + "/ping"); err == nil {
		t.Error("the listener still answers after Close")
	}
	if err := srv.Close(context.Background()); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// http.metrics.endpoint moves the route; metrics disabled or a
// non-prometheus exporter leave only /ping.
func TestHTTPHandlerRoutes(t *testing.T) {
	cases := []struct {
		name    string
		mutate  func(c *config.Config)
		path    string
		want    int
		wantErr bool
	}{
		{"custom endpoint", func(c *config.Config) { c.HTTP.Metrics.Endpoint = "/prom" }, "/prom", 200, false},
		{"old path after move", func(c *config.Config) { c.HTTP.Metrics.Endpoint = "/prom" }, "/metrics", 404, false},
		{"metrics disabled", func(c *config.Config) { c.HTTP.Metrics.Enabled = false }, "/metrics", 404, false},
		{"metrics exporter none", func(c *config.Config) { c.Telemetry.Metrics.Exporter = config.ExporterNone }, "/metrics", 404, false},
		{"metrics off", func(c *config.Config) { c.Telemetry.Metrics.Enabled = false }, "/metrics", 404, false},
		{"non-loopback without token", func(c *config.Config) { c.HTTP.Address = "0.0.0.0:3000" }, "", 0, true},
		{"all interfaces without token", func(c *config.Config) { c.HTTP.Address = ":3000" }, "", 0, true},
		{"non-loopback, metrics disabled", func(c *config.Config) { c.HTTP.Address = "0.0.0.0:3000"; c.HTTP.Metrics.Enabled = false }, "/ping", 200, false},
		{"non-loopback with token, no credential", func(c *config.Config) { c.HTTP.Address = "10.0.0.1:3000"; c.HTTP.Metrics.Token = "tok" }, "/metrics", 401, false},
		{"localhost without token", func(c *config.Config) { c.HTTP.Address = "localhost:3000" }, "/metrics", 200, false},
		{"ipv6 loopback without token", func(c *config.Config) { c.HTTP.Address = "[::1]:3000" }, "/metrics", 200, false},
		{"post to ping", func(c *config.Config) {}, "POST /ping", 405, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := testConfig(t)
			tc.mutate(&c)
			tel := setup(t, c)
			defer tel.Shutdown(context.Background())
			h, err := tel.HTTPHandler(c.HTTP)
			if tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), "http.metrics.token") {
					t.Fatalf("want a refusal naming http.metrics.token, got %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			method, path := "GET", tc.path
			if m, p, ok := strings.Cut(tc.path, " "); ok {
				method, path = m, p
			}
			if w := scrape(t, h, httptest.NewRequest(method, path, nil)); w.Code != tc.want {
				t.Fatalf("%s %s: %d, want %d", method, path, w.Code, tc.want)
			}
		})
	}
}

// The bearer check: exact token, case-insensitive scheme, nothing else.
func TestAuthorized(t *testing.T) {
	cases := []struct {
		header string
		ok     bool
	}{
		{"Bearer s3cret", true},
		{"bearer s3cret", true},
		{"Bearer  s3cret ", true},
		{"", false},
		{"Bearer", false},
		{"Bearer ", false},
		{"Bearer s3cre", false},
		{"Bearer s3cretx", false},
		{"Basic s3cret", false},
		{"s3cret", false},
	}
	for _, c := range cases {
		r := httptest.NewRequest("GET", "/metrics", nil)
		if c.header != "" {
			r.Header.Set("Authorization", c.header)
		}
		if got := authorized(r, "s3cret"); got != c.ok {
			t.Errorf("%q: authorized %v, want %v", c.header, got, c.ok)
		}
	}
	// Through the route: the token is required even on loopback once set.
	next := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("metrics")) })
	h := requireBearer("s3cret", next)
	r := httptest.NewRequest("GET", "/metrics", nil)
	if w := scrape(t, h, r); w.Code != 401 || w.Header().Get("WWW-Authenticate") == "" {
		t.Errorf("no credential: %d", w.Code)
	}
	r.Header.Set("Authorization", "Bearer s3cret")
	if w := scrape(t, h, r); w.Code != 200 || w.Body.String() != "metrics" {
		t.Errorf("with credential: %d %q", w.Code, w.Body.String())
	}
}

func TestIsLoopback(t *testing.T) {
	cases := map[string]bool{
		"127.0.0.1:3000": true, "127.1.2.3:1": true, "[::1]:3000": true, "localhost:3000": true, "LOCALHOST:1": true,
		"0.0.0.0:3000": false, ":3000": false, "[::]:3000": false, "10.0.0.1:3000": false, "example.com:80": false,
	}
	for addr, want := range cases {
		if got := IsLoopback(addr); got != want {
			t.Errorf("IsLoopback(%q) = %v, want %v", addr, got, want)
		}
	}
}
