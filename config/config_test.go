package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestDefaultsMatchSpec(t *testing.T) {
	// server-behaviour.md 11.3 defaults the node relies on.
	c, warns, err := Load("", nil)
	if err != nil || len(warns) != 0 {
		t.Fatalf("Load: %v %v", err, warns)
	}
	if c.TCP.Address != "127.0.0.1:8090" || !c.TCP.Enabled {
		t.Errorf("tcp = %+v", c.TCP)
	}
	if c.System.Path != "local_data" {
		t.Errorf("system.path = %q", c.System.Path)
	}
	if c.MessageBus.MaxMessageSize != 64<<20 {
		t.Errorf("max_message_size = %d", c.MessageBus.MaxMessageSize)
	}
	if c.Heartbeat.Interval.D() != 30*time.Second || c.Cluster.CommitBroadcastInterval.D() != 500*time.Millisecond {
		t.Errorf("durations %v %v", c.Heartbeat.Interval, c.Cluster.CommitBroadcastInterval)
	}
	if c.QUIC.Address != "127.0.0.1:8080" || c.WebSocket.Address != "127.0.0.1:8092" {
		t.Errorf("quic/ws addresses %q %q", c.QUIC.Address, c.WebSocket.Address)
	}
	// replica-plane.md 10.1: the repair keys.
	if c.Partition.EvictedRingCapacity != 4096 || c.Partition.EvictedRingBytesMax != 16<<20 ||
		c.Cluster.RepairChunkMax != 128 || c.Cluster.RepairRetryInterval.D() != time.Second {
		t.Errorf("repair keys: %+v, chunk %d, retry %v", c.Partition, c.Cluster.RepairChunkMax, c.Cluster.RepairRetryInterval)
	}
}

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFileThenEnvironment(t *testing.T) {
	p := writeFile(t, `
[system]
path = "/data/iggy"
[tcp]
address = "0.0.0.0:9000"
[heartbeat]
interval = "5 s"
[message_bus]
max_message_size = "1 MiB"
[[cluster.nodes]]
name = "a"
ip = "127.0.0.1"
[cluster.nodes.ports]
tcp = 8090
unknown_key = 1
`)
	env := []string{
		"IGGY_TCP_ADDRESS=127.0.0.2:7000",
		"IGGY_CLUSTER_NODES_1_NAME=b",
		"IGGY_CLUSTER_NODES_1_PORTS_TCP_REPLICA=9091",
		"IGGY_CLUSTER_ENABLED=TRUE",
		"IGGY_NOT_A_KEY=1",
		"IGGY_ROOT_PASSWORD=secret",
		"IGGY_PARTITION_EVICTED_RING_BYTES_MAX=256 MiB",
		"IGGY_PARTITION_MAX_OPEN_FILES=64",
	}
	c, warns, err := Load(p, env)
	if err != nil {
		t.Fatal(err)
	}
	if c.System.Path != "/data/iggy" {
		t.Errorf("file value lost: %q", c.System.Path)
	}
	if c.TCP.Address != "127.0.0.2:7000" {
		t.Errorf("env must win over the file: %q", c.TCP.Address)
	}
	if c.Heartbeat.Interval.D() != 5*time.Second || c.MessageBus.MaxMessageSize != 1<<20 {
		t.Errorf("units: %v %d", c.Heartbeat.Interval, c.MessageBus.MaxMessageSize)
	}
	if !c.Cluster.Enabled || len(c.Cluster.Nodes) != 2 || c.Cluster.Nodes[0].Name != "a" ||
		c.Cluster.Nodes[0].Ports.TCP != 8090 || c.Cluster.Nodes[1].Name != "b" || c.Cluster.Nodes[1].Ports.TCPReplica != 9091 {
		t.Errorf("cluster = %+v", c.Cluster)
	}
	if c.Partition.EvictedRingBytesMax != 256<<20 {
		t.Errorf("evicted_ring_bytes_max from the environment: %d", c.Partition.EvictedRingBytesMax)
	}
	if c.Partition.MaxOpenFiles != 64 {
		t.Errorf("max_open_files from the environment: %d", c.Partition.MaxOpenFiles)
	}
	if len(warns) != 2 || !strings.Contains(warns[0], "unknown key cluster.nodes.ports.unknown_key") ||
		!strings.Contains(warns[1], "IGGY_NOT_A_KEY") {
		t.Errorf("warnings = %v", warns)
	}
}

func TestRelocatedKeysRefuseBoot(t *testing.T) {
	p := writeFile(t, "[system.segment]\nsize = \"1 GiB\"\n")
	if _, _, err := Load(p, nil); err == nil || !strings.Contains(err.Error(), "system.segment.size") {
		t.Fatalf("want refusal, got %v", err)
	}
	if _, _, err := Load("", []string{"IGGY_SYSTEM_TOPIC_MAX_SIZE=1"}); err == nil {
		t.Fatal("relocated env key must refuse boot")
	}
}

func TestExplicitMissingFileFails(t *testing.T) {
	if _, _, err := Load(filepath.Join(t.TempDir(), "nope.toml"), nil); err == nil {
		t.Fatal("a named config file that does not exist must fail")
	}
}

func TestBadEnvValueFails(t *testing.T) {
	if _, _, err := Load("", []string{"IGGY_TCP_ENABLED=maybe"}); err == nil {
		t.Fatal("want error")
	}
	if _, _, err := Load("", []string{"IGGY_HEARTBEAT_INTERVAL=5 parsecs"}); err == nil {
		t.Fatal("want error")
	}
}

func TestRootCredentials(t *testing.T) {
	cases := []struct {
		env        []string
		user, pass string
		ok         bool
	}{
		{nil, "iggy", "iggy", true},
		{[]string{"IGGY_ROOT_USERNAME=admin", "IGGY_ROOT_PASSWORD=secret"}, "admin", "secret", true},
		{[]string{"IGGY_ROOT_USERNAME=admin"}, "", "", false},
		{[]string{"IGGY_ROOT_USERNAME=ad", "IGGY_ROOT_PASSWORD=secret"}, "", "", false},
		{[]string{"IGGY_ROOT_USERNAME=admin", "IGGY_ROOT_PASSWORD=se"}, "", "", false},
	}
	for _, c := range cases {
		u, p, err := RootCredentials(c.env)
		if (err == nil) != c.ok || u != c.user || p != c.pass {
			t.Errorf("%v: got %q %q %v", c.env, u, p, err)
		}
	}
}

func TestParseUnits(t *testing.T) {
	durs := map[string]time.Duration{"30 s": 30 * time.Second, "500ms": 500 * time.Millisecond, "1 m": time.Minute,
		"7 days": 7 * 24 * time.Hour, "1h 30m": 90 * time.Minute, "10": 10 * time.Second, "0": 0}
	for in, want := range durs {
		if got, err := ParseDuration(in); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	sizes := map[string]uint64{"64 MiB": 64 << 20, "500 MB": 500e6, "1200 B": 1200, "4 GB": 4e9, "1 GiB": 1 << 30, "123": 123}
	for in, want := range sizes {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"MiB", "5 parsecs", "x"} {
		if _, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) must fail", bad)
		}
	}
}

func TestLogDir(t *testing.T) {
	c := Default()
	c.System.Path = "/var/lib/iggy"
	if got := c.LogDir(); got != "/var/lib/iggy/logs" {
		t.Fatalf("relative logging path: %s", got)
	}
	c.System.Logging.Path = "/telemetry"
	if got := c.LogDir(); got != "/telemetry" {
		t.Fatalf("absolute logging path: %s", got)
	}
}
