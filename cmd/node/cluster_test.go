package main

import (
	"os"
	"strings"
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
