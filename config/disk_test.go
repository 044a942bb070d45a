package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// [system.disk]: defaults, the TOML section, the IGGY_SYSTEM_DISK_*
// overrides, and the refusals.
func TestDiskKeys(t *testing.T) {
	d := Default().System.Disk
	if d.ReserveSoft != 1<<30 || d.ReserveHard != 256<<20 || d.CheckInterval.D() != time.Second {
		t.Fatalf("defaults %+v", d)
	}
	path := filepath.Join(t.TempDir(), "node.toml")
	toml := "[system.disk]\nreserve_soft = \"64 MiB\"\ncheck_interval = \"200 ms\"\n"
	if err := os.WriteFile(path, []byte(toml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, warnings, err := Load(path, []string{"IGGY_SYSTEM_DISK_RESERVE_HARD=16 MiB"})
	if err != nil || len(warnings) != 0 {
		t.Fatalf("load: %v %v", err, warnings)
	}
	if d := cfg.System.Disk; d.ReserveSoft != 64<<20 || d.ReserveHard != 16<<20 || d.CheckInterval.D() != 200*time.Millisecond {
		t.Fatalf("loaded %+v", d)
	}
	for env, want := range map[string]string{
		"IGGY_SYSTEM_DISK_RESERVE_HARD=1 MiB":   "system.disk.reserve_hard",
		"IGGY_SYSTEM_DISK_RESERVE_SOFT=100 MiB": "system.disk.reserve_soft",
		"IGGY_SYSTEM_DISK_CHECK_INTERVAL=0":     "system.disk.check_interval",
		"IGGY_SYSTEM_DISK_CHECK_INTERVAL=10 m":  "system.disk.check_interval",
	} {
		if _, _, err := Load("", []string{env}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want a refusal naming %s", env, err, want)
		}
	}
}
