package config

import (
	"strings"
	"testing"
)

// A file in the reference layout loads; every key that has no effect here
// is named in a warning, and the keys the node uses are not.
func TestFileWarnsOfEveryKeyItIgnores(t *testing.T) {
	p := writeFile(t, `
[system]
path = "/data"
[system.logging]
level = "debug"
file_enabled = true
retention = "7 days"
[system.memory_pool]
enabled = true
size = "4 GiB"
[system.sharding]
cpu_allocation = "all"
[system.state]
enforce_fsync = false
[system.partition]
validate_checksum = true
[quic]
send_window = "64 MiB"
receive_window = "64 MiB"
[websocket]
accept_unmasked_frames = false
[http]
enabled = false
web_ui = false
[http.jwt]
algorithm = "HS256"
[http.cors]
allowed_origins = ["*"]
[message_saver]
enabled = true
[cluster]
typo_key = 1
[cluster.coordinator]
skip_shard_zero_for_replicas = true
[[cluster.nodes]]
name = "a"
[[cluster.nodes.advertised_addresses]]
client_cidr = "10.0.0.0/8"
address = "a.internal"
[[cluster.nodes]]
name = "b"
[[cluster.nodes.advertised_addresses]]
client_cidr = "10.0.0.0/8"
address = "b.internal"
[made_up]
[other.made_up]
x = 1
`)
	c, warns, err := Load(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.System.Path != "/data" || c.System.Logging.Level != "debug" || len(c.Cluster.Nodes) != 2 {
		t.Fatalf("used keys lost: %+v", c.System)
	}
	all := strings.Join(warns, "\n")
	for _, want := range []string{
		"unknown key cluster.typo_key",
		"unknown key made_up;",
		"unknown key other.made_up.x",
		"system.logging.file_enabled is not implemented",
		"system.logging.retention is not implemented",
		"system.memory_pool (enabled, size) is not implemented",
		"system.sharding (cpu_allocation) is not implemented",
		"system.partition.validate_checksum is not implemented",
		"system.state (enforce_fsync) was removed",
		"message_saver (enabled) was removed",
		"quic.send_window is not implemented",
		"websocket.accept_unmasked_frames is not implemented",
		"http.web_ui is not implemented",
		"cluster.coordinator (skip_shard_zero_for_replicas) is not implemented",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("no warning %q in:\n%s", want, all)
		}
	}
	for _, used := range []string{"system.path", "logging.level", "receive_window", "http.enabled", "http.jwt", "http.cors", "cluster.nodes.name",
		"unknown key cluster.nodes;", "advertised_addresses"} {
		if strings.Contains(all, used) {
			t.Errorf("a warning names %q, which the node uses:\n%s", used, all)
		}
	}
}

// IGGY_* variables of ignored keys warn like the file's, index segments
// of array entries included; variables of used keys do not.
func TestEnvironmentWarnsOfIgnoredKeys(t *testing.T) {
	_, warns, err := Load("", []string{
		"IGGY_SYSTEM_SHARDING_CPU_ALLOCATION=all",
		"IGGY_SYSTEM_MEMORY_POOL_SIZE=4 GiB",
		"IGGY_CLUSTER_NODES_0_ADVERTISED_ADDRESSES_0_CLIENT_CIDR=10.0.0.0/8",
		"IGGY_CLUSTER_NODES_0_ADVERTISED_ADDRESSES_0_ADDRESS=x",
		"IGGY_HTTP_JWT_ENCODING_SECRET=s3cr3t",
		"IGGY_HTTP_WEB_UI=true",
		"IGGY_TCP_ADDRESS=127.0.0.1:9",
		"IGGY_CLUSTER_NODES_0_NAME=a",
	})
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(warns, "\n")
	for _, want := range []string{
		"IGGY_SYSTEM_SHARDING_CPU_ALLOCATION sets system.sharding, which is not implemented",
		"IGGY_SYSTEM_MEMORY_POOL_SIZE sets system.memory_pool",
		"IGGY_HTTP_WEB_UI sets http.web_ui",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("no warning %q in:\n%s", want, all)
		}
	}
	if strings.Contains(all, "s3cr3t") || strings.Contains(all, "IGGY_TCP_ADDRESS") || strings.Contains(all, "NODES_0_NAME") ||
		strings.Contains(all, "ADVERTISED_ADDRESSES") {
		t.Errorf("warnings name a used key or a value:\n%s", all)
	}
	if len(warns) != 3 {
		t.Errorf("%d warnings, want 3:\n%s", len(warns), all)
	}
}

// An entry matches its key and the keys under it, never a longer name.
func TestIgnoredEntriesMatchWholeSegments(t *testing.T) {
	for _, k := range notImplemented {
		if strings.Count(k.key, ".") < 1 || k.why == "" {
			t.Errorf("entry %+v", k)
		}
	}
	if e, _ := ignoredEntry("system.sharding.cpu_allocation", false); e != "system.sharding" {
		t.Errorf("system.sharding.cpu_allocation -> %q", e)
	}
	if e, _ := ignoredEntry("system.shardingx", false); e != "" {
		t.Errorf("system.shardingx matched %q", e)
	}
	if e, _ := ignoredEntry("IGGY_HTTP_TLSX", true); e != "" {
		t.Errorf("IGGY_HTTP_TLSX matched %q", e)
	}
}
