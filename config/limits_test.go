package config

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// [limits]: defaults, the TOML section and the IGGY_LIMITS_* overrides.
func TestLimitsKeys(t *testing.T) {
	d := Default().Limits
	if d.MaxConnections != 8192 || d.MaxConnectionsPerAddress != 1024 || d.LoginTimeout.D() != 30*time.Second ||
		d.IdleTimeout.D() != 5*time.Minute || d.FrameTimeout.D() != 30*time.Second || d.FrameBudget != 256<<20 {
		t.Fatalf("defaults %+v", d)
	}
	if hb := Default().Heartbeat.Interval.D(); d.IdleTimeout.D() <= 2*hb {
		t.Errorf("idle_timeout %v not above 2 x heartbeat.interval %v", d.IdleTimeout, hb)
	}
	path := filepath.Join(t.TempDir(), "node.toml")
	toml := "[limits]\nmax_connections = 100\nidle_timeout = \"90 s\"\nframe_budget = \"64 MiB\"\n"
	if err := os.WriteFile(path, []byte(toml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, warnings, err := Load(path, []string{"IGGY_LIMITS_MAX_CONNECTIONS_PER_ADDRESS=7", "IGGY_LIMITS_LOGIN_TIMEOUT=0",
		"IGGY_LIMITS_FRAME_TIMEOUT=5s"})
	if err != nil || len(warnings) != 0 {
		t.Fatalf("load: %v %v", err, warnings)
	}
	l := cfg.Limits
	if l.MaxConnections != 100 || l.IdleTimeout.D() != 90*time.Second || l.FrameBudget != 64<<20 ||
		l.MaxConnectionsPerAddress != 7 || l.LoginTimeout != 0 || l.FrameTimeout.D() != 5*time.Second {
		t.Fatalf("loaded %+v", l)
	}
}
