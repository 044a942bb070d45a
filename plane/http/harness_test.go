package httpplane_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"iggynode/actors"
	"iggynode/config"
)

// testNode is a real node with its REST listener on 127.0.0.1:0.
type testNode struct {
	*actors.Node
	base string
	dir  string
}

func nodeConfig(dir string) config.Config {
	cfg := config.Default()
	cfg.System.Path = dir
	cfg.TCP.Address = "127.0.0.1:0"
	cfg.QUIC.Enabled, cfg.WebSocket.Enabled = false, false
	cfg.HTTP.Address = "127.0.0.1:0"
	return cfg
}

func logger() *slog.Logger {
	if os.Getenv("HTTP_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func startNodeWith(t testing.TB, dir string, tune func(*config.Config, *actors.Options)) *testNode {
	t.Helper()
	cfg := nodeConfig(dir)
	opts := actors.Options{RootUsername: "iggy", RootPassword: "iggy", Logger: logger()}
	if tune != nil {
		tune(&cfg, &opts)
	}
	opts.Config = cfg
	n, err := actors.Start(opts)
	if err != nil {
		t.Fatalf("start node: %v", err)
	}
	return &testNode{Node: n, base: n.HTTPURL(), dir: dir}
}

func startNode(t testing.TB) *testNode {
	t.Helper()
	n := startNodeWith(t, t.TempDir(), nil)
	t.Cleanup(func() { _ = n.Close() })
	return n
}

// response is a reply read whole.
type response struct {
	status int
	header http.Header
	body   []byte
	close  bool // the server said Connection: close
}

func (r response) json(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("body %q: %v", r.body, err)
	}
}

// httpClient waits longer than the plane's own budget (replyTimeout, and
// a relay's forwardAttempt: 35 s), so a request during a failover is
// answered by the plane (its 503 or 504) rather than cut by the test.
var httpClient = &http.Client{Timeout: 45 * time.Second}

// do sends method path with an optional JSON body and bearer.
func do(t testing.TB, base, method, path, token string, body any, header ...string) response {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i+1] == "" {
			req.Header.Del(header[i])
		} else {
			req.Header.Set(header[i], header[i+1])
		}
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: b, close: resp.Close}
}

// login returns a JWT of username.
func login(t testing.TB, base, username, password string) string {
	t.Helper()
	r := do(t, base, "POST", "/users/login", "", map[string]string{"username": username, "password": password})
	if r.status != 200 {
		t.Fatalf("login %s: %d %s", username, r.status, r.body)
	}
	var id struct {
		UserID      uint32 `json:"user_id"`
		AccessToken struct {
			Token  string `json:"token"`
			Expiry uint64 `json:"expiry"`
		} `json:"access_token"`
	}
	r.json(t, &id)
	return id.AccessToken.Token
}
