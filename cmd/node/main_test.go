package main

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"iggynode/internal/testutil"
)

// The log file is created with its folder and appended to across starts.
func TestOpenLogFileAppends(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data", "logs")
	for _, line := range []string{"first\n", "second\n"} {
		f, err := openLogFile(dir)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(line); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	b, err := os.ReadFile(filepath.Join(dir, "iggynode.log"))
	if err != nil || string(b) != "first\nsecond\n" {
		t.Fatalf("log file %q, %v", b, err)
	}
	if _, err := openLogFile(filepath.Join(dir, "iggynode.log", "x")); err == nil {
		t.Fatal("a folder under a file was accepted")
	}
}

// startNode runs the node on loopback ports chosen by the kernel and
// returns its log file's path, the signal channel that stops it, and the
// channel run's result arrives on.
func startNode(t *testing.T, extraEnv ...string) (dir string, stop chan os.Signal, done chan error) {
	t.Helper()
	dir = t.TempDir()
	env := append([]string{
		"IGGY_SYSTEM_PATH=" + dir,
		"IGGY_TCP_ADDRESS=127.0.0.1:0",
		"IGGY_QUIC_ENABLED=false",
		"IGGY_WEBSOCKET_ENABLED=false",
		"IGGY_HTTP_ADDRESS=127.0.0.1:0",
	}, extraEnv...)
	stop = make(chan os.Signal, 1)
	done = make(chan error, 1)
	go func() { done <- run(nil, env, stop) }()
	waitLog(t, dir, "iggynode serving", done)
	return dir, stop, done
}

// waitLog waits for a line containing word in the node's log file and
// returns it.
func waitLog(t *testing.T, dir, word string, done chan error) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(filepath.Join(dir, "logs", "iggynode.log"))
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, word) {
				return line
			}
		}
		select {
		case err := <-done:
			t.Fatalf("node stopped before logging %q: %v", word, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("no %q in the log", word)
	return ""
}

func stopNode(t *testing.T, stop chan os.Signal, done chan error) {
	t.Helper()
	stop <- syscall.SIGTERM
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("node did not stop")
	}
}

// With http.enabled the node serves /ping and /metrics on loopback, logs
// with the telemetry handler, writes its span file, and closes the
// listener on shutdown.
func TestRunServesHTTPAndTelemetry(t *testing.T) {
	dir, stop, done := startNode(t,
		"IGGY_HTTP_ENABLED=true", "IGGY_HTTP_ADDRESS=127.0.0.1:0", "IGGY_HTTP_METRICS_TOKEN=tok-5ecret",
		"IGGY_TELEMETRY_ENABLED=true", "IGGY_TELEMETRY_TRACES_EXPORTER=file", "IGGY_TELEMETRY_LOGS_EXPORTER=none")
	line := waitLog(t, dir, "http listening", done)
	_, rest, _ := strings.Cut(line, "address=")
	addr, _, _ := strings.Cut(rest, " ")
	get := func(path string, header ...string) (int, string) {
		t.Helper()
		return testutil.HTTPGet(t, "http://"+addr+path, header...)
	}
	if code, body := get("/ping"); code != 200 || body != "pong" {
		t.Errorf("/ping: %d %q", code, body)
	}
	if code, _ := get("/metrics"); code != 401 {
		t.Errorf("/metrics without the token: %d, want 401", code)
	}
	code, body := get("/metrics", "Authorization", "Bearer tok-5ecret")
	if code != 200 || !strings.Contains(body, "target_info") {
		t.Errorf("/metrics: %d\n%s", code, body)
	}
	// The reference server's series, under its names (server-behaviour.md
	// 13.3): a fresh node has the root user and nothing else.
	for _, series := range []string{"streams 0", "topics 0", "partitions 0", "segments 0", "messages 0", "users 1", "clients 0", "http_requests_total 3"} {
		name, value, _ := strings.Cut(series, " ")
		if !regexp.MustCompile(`(?m)^` + name + `(\{[^}]*\})? ` + value + `$`).MatchString(body) {
			t.Errorf("/metrics lacks %q:\n%s", series, body)
		}
	}
	if code, body := get("/ready"); code != 200 || body != "ready" {
		t.Errorf("/ready on a single node: %d %q", code, body)
	}
	if code, _ := get("/streams"); code != 401 {
		t.Errorf("/streams without a credential: %d, want 401 (the REST API)", code)
	}
	if l := waitLog(t, dir, "msg=telemetry", done); !strings.Contains(l, "traces=\"file ") {
		t.Errorf("start-up line %q", l)
	}
	stopNode(t, stop, done)
	if _, err := http.Get("http://" + addr + "/ping"); err == nil {
		t.Error("the HTTP listener outlived the node")
	}
	rc, err := os.ReadFile(filepath.Join(dir, "runtime", "current_config.toml"))
	if err != nil || strings.Contains(string(rc), "tok-5ecret") || !strings.Contains(string(rc), "sample_ratio") {
		t.Errorf("runtime config (%v) must carry the telemetry keys and not the metrics token:\n%s", err, rc)
	}
	if _, err := os.Stat(filepath.Join(dir, "logs", "traces.jsonl")); err != nil {
		t.Errorf("span file: %v", err)
	}
}

// The REST listener starts by default (upstream's http.enabled = true),
// and http.enabled = false keeps the port closed.
func TestRunHTTPDefaultsAndDisabled(t *testing.T) {
	dir, stop, done := startNode(t)
	if line := waitLog(t, dir, "http listening", done); !strings.Contains(line, "address=127.0.0.1:") {
		t.Errorf("default listener %q", line)
	}
	stopNode(t, stop, done)
	dir, stop, done = startNode(t, "IGGY_HTTP_ENABLED=false")
	stopNode(t, stop, done)
	b, _ := os.ReadFile(filepath.Join(dir, "logs", "iggynode.log"))
	if strings.Contains(string(b), "http listening") {
		t.Error("an HTTP listener started with http.enabled = false")
	}
}
