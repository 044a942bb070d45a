package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
)

func TestReplicaIDFromName(t *testing.T) {
	for name, want := range map[string]int{
		"iggynode-0": 0, "iggynode-2": 2, "my-release-iggynode-31": 31, "iggynode-07": 7,
	} {
		if got, err := replicaIDFromName(name); err != nil || got != want {
			t.Errorf("%q: %d %v, want %d", name, got, err, want)
		}
	}
	for _, name := range []string{"iggynode", "iggynode-", "iggynode-x", "iggynode-+1", "iggynode-1a", ""} {
		if got, err := replicaIDFromName(name); err == nil {
			t.Errorf("%q: accepted as %d", name, got)
		}
	}
}

// GET /ready answers 503 until the node is ready, then 200; every other
// route is the wrapped handler's.
func TestReadinessRoute(t *testing.T) {
	var ready atomic.Bool
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("inner " + r.URL.Path)) })
	srv := httptest.NewServer(withReadiness(inner, ready.Load))
	defer srv.Close()
	get := func(method, path string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, nil)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("GET", "/ready"); code != 503 || body != "catching up" {
		t.Errorf("before: %d %q", code, body)
	}
	ready.Store(true)
	if code, body := get("GET", "/ready"); code != 200 || body != "ready" {
		t.Errorf("after: %d %q", code, body)
	}
	if code, body := get("GET", "/ping"); code != 200 || body != "inner /ping" {
		t.Errorf("/ping: %d %q", code, body)
	}
}

// The flag is read before anything starts: a bad name, or both flags,
// refuse to start.
func TestRunRefusesABadReplicaName(t *testing.T) {
	env := []string{"IGGY_SYSTEM_PATH=" + t.TempDir(), "IGGY_TCP_ADDRESS=127.0.0.1:0"}
	for refusal, args := range map[string][]string{
		"want a name ending in -<ordinal>": {"--replica-id-from-name", "iggynode"},
		"exclude each other":               {"--replica-id", "1", "--replica-id-from-name", "iggynode-1"},
	} {
		if err := run(args, env, make(chan os.Signal)); err == nil || !strings.Contains(err.Error(), refusal) {
			t.Errorf("%v: %v, want an error saying %q", args, err, refusal)
		}
	}
}
