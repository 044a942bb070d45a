package main

import (
	"context"
	"encoding/base64"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"iggynode/client"
	"iggynode/config"
	"iggynode/internal/testutil"
	"iggynode/wire"
)

// loopbackEnv runs a node on loopback ports chosen by the kernel with its
// data in dir.
func loopbackEnv(dir string, extra ...string) []string {
	return append([]string{
		"IGGY_SYSTEM_PATH=" + dir,
		"IGGY_TCP_ADDRESS=127.0.0.1:0",
		"IGGY_QUIC_ENABLED=false",
		"IGGY_WEBSOCKET_ENABLED=false",
		"IGGY_HTTP_ADDRESS=127.0.0.1:0",
	}, extra...)
}

// The default-credentials warning covers every transport bound beyond
// loopback, names each, and stays quiet on loopback, for disabled
// listeners and with a chosen password.
func TestWarnExposedCoversEveryTransport(t *testing.T) {
	loopback := func() config.Config {
		c := config.Default()
		c.HTTP.Enabled = true
		return c
	}
	cases := []struct {
		name     string
		mod      func(c *config.Config)
		password string
		want     []string // listeners named; nil: no warning
	}{
		{"all on loopback", func(*config.Config) {}, "iggy", nil},
		{"tcp", func(c *config.Config) { c.TCP.Address = "0.0.0.0:8090" }, "iggy", []string{"tcp=0.0.0.0:8090"}},
		{"quic", func(c *config.Config) { c.QUIC.Address = "10.0.0.5:8080" }, "iggy", []string{"quic=10.0.0.5:8080"}},
		{"websocket", func(c *config.Config) { c.WebSocket.Address = ":8092" }, "iggy", []string{"websocket=:8092"}},
		{"http", func(c *config.Config) { c.HTTP.Address = "[::]:3000" }, "iggy", []string{"http=[::]:3000"}},
		{"several", func(c *config.Config) { c.TCP.Address, c.HTTP.Address = "0.0.0.0:1", "0.0.0.0:2" }, "iggy",
			[]string{"tcp=0.0.0.0:1", "http=0.0.0.0:2"}},
		{"exposed but disabled", func(c *config.Config) {
			c.QUIC.Address, c.QUIC.Enabled, c.HTTP.Address, c.HTTP.Enabled = "0.0.0.0:1", false, "0.0.0.0:2", false
		}, "iggy", nil},
		{"exposed with a chosen password", func(c *config.Config) { c.QUIC.Address = "0.0.0.0:8080" }, "s3cret", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out testutil.Buffer
			c := loopback()
			tc.mod(&c)
			warnExposed(slog.New(slog.NewTextHandler(&out, nil)), c, tc.password)
			got := out.String()
			if tc.want == nil {
				if got != "" {
					t.Fatalf("unexpected warning:\n%s", got)
				}
				return
			}
			if strings.Count(got, "default 'iggy'") != 1 {
				t.Fatalf("want one warning, got:\n%s", got)
			}
			for _, l := range tc.want {
				if !strings.Contains(got, l) {
					t.Errorf("warning does not name %s:\n%s", l, got)
				}
			}
			for _, name := range []string{"tcp=", "quic=", "websocket=", "http="} {
				named := false
				for _, l := range tc.want {
					named = named || strings.HasPrefix(l, name)
				}
				if !named && strings.Contains(got, name) {
					t.Errorf("warning names loopback listener %s:\n%s", name, got)
				}
			}
		})
	}
}

// Configuration warnings are logged and the node runs; with --strict, or
// system.strict_config in the file or the environment, they refuse boot.
func TestStrictTurnsConfigurationWarningsIntoARefusal(t *testing.T) {
	dir, stop, done := startNode(t, "IGGY_SYSTEM_SHARDING_CPU_ALLOCATION=all")
	if line := waitLog(t, dir, "IGGY_SYSTEM_SHARDING_CPU_ALLOCATION", done); !strings.Contains(line, "level=WARN") {
		t.Errorf("the warning line: %s", line)
	}
	stopNode(t, stop, done)

	file := filepath.Join(t.TempDir(), "node.toml")
	if err := os.WriteFile(file, []byte("[system]\nstrict_config = true\n[tcp]\nadress = \"0.0.0.0:1\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{"--strict", []string{"--strict"}, []string{"IGGY_SYSTEM_SHARDING_CPU_ALLOCATION=all"}, "IGGY_SYSTEM_SHARDING_CPU_ALLOCATION"},
		{"environment", nil, []string{"IGGY_SYSTEM_STRICT_CONFIG=true", "IGGY_TCP_ADRESS=x"}, "IGGY_TCP_ADRESS"},
		{"file", []string{"--config", file}, nil, "unknown key tcp.adress"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data := t.TempDir()
			err := run(tc.args, loopbackEnv(data, tc.env...), make(chan os.Signal))
			if err == nil || !strings.Contains(err.Error(), "strict") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("run: %v, want a strict refusal naming %q", err, tc.want)
			}
			if _, err := os.Stat(filepath.Join(data, "logs")); err == nil {
				t.Error("the node wrote its data folder before refusing")
			}
		})
	}
	// Strict with nothing to warn about starts.
	dir, stop, done = startNode(t, "IGGY_SYSTEM_STRICT_CONFIG=true")
	stopNode(t, stop, done)
}

// Settings the node refuses to boot with, through cmd/node.
func TestRunRefusesUnsafeSettings(t *testing.T) {
	key := base64.StdEncoding.EncodeToString(make([]byte, 32))
	secret := "a-cluster-secret-of-at-least-32-bytes"
	twoNodes := []string{"IGGY_CLUSTER_ENABLED=true", "IGGY_CLUSTER_REPLICA_ID=0",
		"IGGY_CLUSTER_NODES_0_REPLICA_ID=0", "IGGY_CLUSTER_NODES_0_IP=192.0.2.1", "IGGY_CLUSTER_NODES_0_PORTS_TCP_REPLICA=9090",
		"IGGY_CLUSTER_NODES_1_REPLICA_ID=1", "IGGY_CLUSTER_NODES_1_IP=192.0.2.2", "IGGY_CLUSTER_NODES_1_PORTS_TCP_REPLICA=9090"}
	cases := []struct {
		name string
		env  []string
		want string
	}{
		{"archive_expired", []string{"IGGY_SYSTEM_SEGMENT_ARCHIVE_EXPIRED=true"}, "system.segment.archive_expired"},
		{"recreate_missing_state", []string{"IGGY_SYSTEM_RECOVERY_RECREATE_MISSING_STATE=true"}, "recreate_missing_state"},
		{"encryption without a key", []string{"IGGY_SYSTEM_ENCRYPTION_ENABLED=true"}, "system.encryption.key"},
		{"relocated key", []string{"IGGY_SYSTEM_PARTITION_ENFORCE_FSYNC=true"}, "relocated"},
		{"cluster tls without auth", append([]string{"IGGY_CLUSTER_TLS_ENABLED=true", "IGGY_CLUSTER_TLS_SELF_SIGNED=true"}, twoNodes...),
			"requires cluster.auth.enabled"},
		{"replica plane beyond loopback without auth", twoNodes, "allow_insecure"},
		{"short shared secret", append([]string{"IGGY_CLUSTER_AUTH_ENABLED=true", "IGGY_CLUSTER_AUTH_SHARED_SECRET=" + secret[:20]}, twoNodes...),
			"cluster.auth.shared_secret"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := run(nil, loopbackEnv(t.TempDir(), tc.env...), make(chan os.Signal))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("run: %v, want a refusal naming %q", err, tc.want)
			}
			if strings.Contains(err.Error(), key) || strings.Contains(err.Error(), secret[:20]) {
				t.Fatalf("the refusal shows a secret: %v", err)
			}
		})
	}
}

// A fresh node's data folder, written through every path the node has
// (badger, batch files, the runtime copy, the log, the span file), holds
// nothing with a group or other permission bit.
func TestFreshNodeDataIsOwnerOnly(t *testing.T) {
	data := filepath.Join(t.TempDir(), "fresh")
	stop, done := make(chan os.Signal, 1), make(chan error, 1)
	go func() {
		done <- run(nil, loopbackEnv(data, "IGGY_TELEMETRY_ENABLED=true", "IGGY_TELEMETRY_TRACES_EXPORTER=file",
			"IGGY_TELEMETRY_LOGS_EXPORTER=none"), stop)
	}()
	line := waitLogIn(t, filepath.Join(data, "logs"), "iggynode serving", done)
	_, rest, _ := strings.Cut(line, "tcp=")
	addr, _, _ := strings.Cut(rest, " ")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.Connect(ctx, client.Options{Address: addr, Username: "iggy", Password: "iggy"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.CreateStream(ctx, "perm", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, wire.ID(s.ID), "t", 1, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SendMessages(ctx, wire.ID(s.ID), wire.ID(0), wire.PartitionID(0), []wire.Message{client.NewMessage([]byte("x"))}); err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
	stopNode(t, stop, done)

	var files, partitionFiles int
	err = filepath.WalkDir(data, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if perm := info.Mode().Perm(); perm&0o077 != 0 {
			t.Errorf("%s has mode %v", path, perm)
		}
		if !d.IsDir() {
			files++
			if strings.Contains(path, string(filepath.Separator)+"partitions"+string(filepath.Separator)) {
				partitionFiles++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"logs/iggynode.log", "logs/traces.jsonl", "runtime/current_config.toml", "MANIFEST"} {
		if _, err := os.Stat(filepath.Join(data, want)); err != nil {
			t.Errorf("expected %s: %v", want, err)
		}
	}
	if partitionFiles == 0 || files < 8 {
		t.Fatalf("walked %d files, %d batch files: the test wrote too little", files, partitionFiles)
	}
}

// waitLogIn is waitLog for a log folder anywhere.
func waitLogIn(t *testing.T, logDir, word string, done chan error) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(filepath.Join(logDir, "iggynode.log"))
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
