package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The configurations shipped in deploy/ load without a warning (they would
// refuse boot under --strict otherwise) and authenticate the replica
// plane with a secret long enough: the compose one with cluster.env's.
func TestShippedClusterConfigsAuthenticateTheReplicaPlane(t *testing.T) {
	envFile, err := os.ReadFile("../deploy/cluster.env")
	if err != nil {
		t.Fatal(err)
	}
	var composeEnv []string
	for _, line := range strings.Split(string(envFile), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			composeEnv = append(composeEnv, line)
		}
	}
	files, _ := filepath.Glob("../deploy/local/node*.toml")
	if len(files) != 3 {
		t.Fatalf("deploy/local holds %d node files, want 3", len(files))
	}
	cases := map[string][]string{"../deploy/docker/cluster.toml": composeEnv}
	for _, f := range files {
		cases[f] = nil
	}
	for file, env := range cases {
		c, warns, err := Load(file, env)
		if err != nil || len(warns) != 0 {
			t.Errorf("%s: %v %v", file, err, warns)
			continue
		}
		a := c.Cluster.Auth
		if !c.Cluster.Enabled || !a.Enabled || len(a.SharedSecret) < MinSharedSecretLen {
			t.Errorf("%s: cluster %v, auth %v with a %d-byte secret", file, c.Cluster.Enabled, a.Enabled, len(a.SharedSecret))
		}
	}
}
