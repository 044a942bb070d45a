package diag

import (
	"os"
	"path/filepath"
	"testing"
)

// server-behaviour.md 9: under a cgroup limit, total_memory is the limit and
// available_memory what remains, reclaimable file cache counted as free.
func TestMemoryLimiterRead(t *testing.T) {
	write := func(dir, name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	v2 := func() memoryLimiter {
		return memoryLimiter{dir: t.TempDir(), limitFile: "memory.max", usageFile: "memory.current", inactiveFileStat: "inactive_file"}
	}
	for _, tc := range []struct {
		name                     string
		limit, usage, stat       string
		wantLimit, wantAvailable uint64
		wantOK                   bool
	}{
		{"v2 limit", "1000\n", "600\n", "anon 400\ninactive_file 100\nactive_file 100\n", 1000, 500, true},
		{"no file cache", "1000\n", "600\n", "anon 600\n", 1000, 400, true},
		{"usage above limit", "1000\n", "1200\n", "inactive_file 0\n", 1000, 0, true},
		{"cache above usage", "1000\n", "100\n", "inactive_file 300\n", 1000, 1000, true},
		{"max", "max\n", "600\n", "", 0, 0, false},
		{"v1 unlimited", "9223372036854771712\n", "600\n", "", 0, 0, false},
	} {
		m := v2()
		write(m.dir, m.limitFile, tc.limit)
		write(m.dir, m.usageFile, tc.usage)
		write(m.dir, "memory.stat", tc.stat)
		limit, available, ok := m.read()
		if limit != tc.wantLimit || available != tc.wantAvailable || ok != tc.wantOK {
			t.Errorf("%s: read = %d, %d, %v; want %d, %d, %v", tc.name, limit, available, ok,
				tc.wantLimit, tc.wantAvailable, tc.wantOK)
		}
	}
	if _, _, ok := (memoryLimiter{}).read(); ok {
		t.Error("no cgroup directory reported a limit")
	}
}

func TestAllowedCPUsIncludesOne(t *testing.T) {
	if allowed := allowedCPUs(); allowed != nil && len(allowed) == 0 {
		t.Error("empty affinity set")
	}
	if _, ok := sampleAllowedCPUs(); !ok {
		t.Error("no CPU sample on Linux")
	}
}
