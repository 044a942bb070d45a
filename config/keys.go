package config

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/BurntSushi/toml"
)

// ignoredKey is a key of the reference configuration, or a section of
// them, that this node accepts so upstream files load, and does not act
// on. Setting one is a warning naming it (an error with strict_config).
type ignoredKey struct{ key, why string }

// notImplemented lists the keys of server-behaviour.md 11.3 and
// replica-plane.md 10 that the node does not implement, whether or not
// Config decodes them. Every other 11.3 key is a Config field the node uses.
var notImplemented = []ignoredKey{
	{"system.logging.file_enabled", "the node always writes its log file"},
	{"system.logging.max_file_size", "no log rotation"},
	{"system.logging.max_total_size", "no log rotation"},
	{"system.logging.rotation_check_interval", "no log rotation"},
	{"system.logging.retention", "no log rotation"},
	{"system.stream.path", "the data layout is the storage package's"},
	{"system.topic.path", "the data layout is the storage package's"},
	{"system.partition.path", "the data layout is the storage package's"},
	{"system.partition.validate_checksum", "stored batches are not re-verified on read"},
	{"system.memory_pool", "no buffer pool (Go relevance: none)"},
	{"system.sharding", "no thread-per-core shards (Go relevance: none)"},
	{"quic.send_window", "the QUIC library has no send window setting"},
	{"websocket.max_write_buffer_size", "not configurable here"},
	{"websocket.max_frame_size", "frames are bounded by websocket.max_message_size"},
	{"websocket.accept_unmasked_frames", "unmasked client frames are always refused"},
	{"http.web_ui", "this build embeds no web UI"},
	{"http.jwt.trusted_issuers", "external (A2A) issuers are not implemented"},
	{"message_bus.close_peer_timeout", "replica links close at once"},
	{"personal_access_token.cleaner.interval", "expired tokens are deleted on every data_maintenance.messages pass"},
	{"partition.transfer_artifact_bytes_max", "state transfer keeps no artifact"},
	{"cluster.coordinator", "no shards to place (Go relevance: none)"},
	// Config decodes these two because two sections share one struct;
	// neither is a key of the reference configuration.
	{"data_maintenance.messages.enabled", "not a reference key: the switch is cleaner_enabled"},
	{"personal_access_token.cleaner.cleaner_enabled", "not a reference key: the switch is enabled"},
}

// removedIgnored are sections of older eras that the reference server
// ignores (11.4); so does the node, with a warning.
var removedIgnored = []string{
	"message_saver", "system.state", "system.backup", "system.compression", "tcp.socket",
	"system.segment.cache_indexes",
}

// matchKey reports whether dotted key is section or lies under it.
func matchKey(key, section string) bool {
	return key == section || strings.HasPrefix(key, section+".")
}

// indexSegment matches the numeric index of an array-of-tables entry in
// an environment name (IGGY_CLUSTER_NODES_0_...).
var indexSegment = regexp.MustCompile(`_[0-9]+(_|$)`)

// matchEnv reports whether variable name sets section (or a key under
// it), array indexes aside.
func matchEnv(name, section string) bool {
	name = indexSegment.ReplaceAllString(name, "$1")
	prefix := envName(section)
	return name == prefix || strings.HasPrefix(name, prefix+"_")
}

// ignoredEntry finds the entry of notImplemented or removedIgnored that
// key (a dotted file key or, with env, an IGGY_ variable) falls under,
// and says why it has no effect; "" when it may have one.
func ignoredEntry(key string, env bool) (entry, why string) {
	match := matchKey
	if env {
		match = matchEnv
	}
	for _, k := range notImplemented {
		if match(key, k.key) {
			return k.key, "is not implemented by this node (" + k.why + "); ignored"
		}
	}
	for _, k := range removedIgnored {
		if match(key, k) {
			return k, "was removed from the reference configuration (server-behaviour.md 11.4); ignored"
		}
	}
	return "", ""
}

// fileWarnings names every key of the file that has no effect: unknown
// keys (not decoded into Config), one warning each, and known keys the
// node ignores, one warning per ignored key or section listing the keys
// set under it. Tables are named through their keys; an empty table by
// itself.
func fileWarnings(path string, md toml.MetaData) []string {
	undecoded := map[string]bool{}
	for _, k := range md.Undecoded() {
		undecoded[k.String()] = true
	}
	seen := map[string]bool{}
	var order []string // ignored entries, in file order
	set := map[string][]string{}
	why := map[string]string{}
	var unknown []string
	for _, k := range md.Keys() {
		key := k.String()
		if seen[key] || isTableWithKeys(md, key) {
			continue
		}
		seen[key] = true
		if entry, reason := ignoredEntry(key, false); entry != "" {
			if _, ok := set[entry]; !ok {
				order = append(order, entry)
			}
			if key != entry {
				set[entry] = append(set[entry], strings.TrimPrefix(key, entry+"."))
			} else if set[entry] == nil {
				set[entry] = []string{}
			}
			why[entry] = reason
		} else if undecoded[key] {
			unknown = append(unknown, key)
		}
	}
	var out []string
	for _, key := range unknown {
		out = append(out, fmt.Sprintf("config %s: unknown key %s; ignored", path, key))
	}
	for _, entry := range order {
		name := entry
		if len(set[entry]) > 0 {
			name += " (" + strings.Join(set[entry], ", ") + ")"
		}
		out = append(out, fmt.Sprintf("config %s: %s %s", path, name, why[entry]))
	}
	return out
}

// envWarning is the warning for an IGGY_ variable that sets an ignored
// key, or "".
func envWarning(name string) string {
	entry, reason := ignoredEntry(name, true)
	if entry == "" {
		return ""
	}
	return fmt.Sprintf("%s sets %s, which %s", name, entry, reason)
}

// isTableWithKeys: the key is a table (or array of tables) that holds
// keys of its own, which are reported instead.
func isTableWithKeys(md toml.MetaData, key string) bool {
	switch md.Type(strings.Split(key, ".")...) {
	case "Hash", "ArrayHash":
	default:
		return false
	}
	for _, k := range md.Keys() {
		if strings.HasPrefix(k.String(), key+".") {
			return true
		}
	}
	return false
}
