package diag

import (
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"iggynode/wire"
)

// server-behaviour.md 9: the process and host fields are plausible and the
// node's counters pass through unchanged.
func TestCollectorFields(t *testing.T) {
	c := NewCollector(t.TempDir())
	counters := Counters{
		MessagesSizeBytes: 1001, StreamsCount: 2, TopicsCount: 3, PartitionsCount: 4,
		SegmentsCount: 5, MessagesCount: 1006, ClientsCount: 7, ConsumerGroupsCount: 8,
	}
	before := time.Now()
	s := c.Collect(counters)

	if got, want := s.ProcessID, uint32(os.Getpid()); got != want {
		t.Errorf("process_id = %d, want %d", got, want)
	}
	if s.CPUUsage != 0 {
		t.Errorf("first probe cpu_usage = %v, want 0", s.CPUUsage)
	}
	if s.TotalCPUUsage < 0 || s.TotalCPUUsage > 100 || math.IsNaN(float64(s.TotalCPUUsage)) {
		t.Errorf("total_cpu_usage = %v, want within [0, 100]", s.TotalCPUUsage)
	}
	if s.MemoryUsage == 0 {
		t.Error("memory_usage = 0")
	}
	if s.TotalMemory == 0 || s.AvailableMemory == 0 || s.AvailableMemory > s.TotalMemory {
		t.Errorf("total_memory %d, available_memory %d", s.TotalMemory, s.AvailableMemory)
	}
	if s.MemoryUsage > s.TotalMemory*2 {
		t.Errorf("memory_usage %d implausible against total %d", s.MemoryUsage, s.TotalMemory)
	}
	if s.StartTime == 0 || s.StartTime%1_000_000 != 0 || s.RunTime%1_000_000 != 0 {
		t.Errorf("start_time %d / run_time %d not whole seconds in µs", s.StartTime, s.RunTime)
	}
	if nowMicros := uint64(before.Unix()+1) * 1_000_000; s.StartTime > nowMicros || s.StartTime+s.RunTime > nowMicros+1_000_000 {
		t.Errorf("start_time %d + run_time %d beyond now %d", s.StartTime, s.RunTime, nowMicros)
	}
	if s.ThreadsCount == 0 {
		t.Error("threads_count = 0")
	}
	if s.TotalDiskSpace == 0 || s.FreeDiskSpace > s.TotalDiskSpace {
		t.Errorf("disk free %d total %d", s.FreeDiskSpace, s.TotalDiskSpace)
	}
	for name, v := range map[string]string{"hostname": s.Hostname, "os_name": s.OSName,
		"os_version": s.OSVersion, "kernel_version": s.KernelVersion} {
		if v == "" {
			t.Errorf("%s is empty", name)
		}
	}
	if s.IggyServerVersion != wire.ServerVersion || s.IggyServerSemver != 9000 {
		t.Errorf("version %q semver %d, want %q 9000", s.IggyServerVersion, s.IggyServerSemver, wire.ServerVersion)
	}
	if len(s.CacheMetrics) != 0 {
		t.Errorf("cache_metrics = %v, want none", s.CacheMetrics)
	}
	got := Counters{s.MessagesSizeBytes, s.StreamsCount, s.TopicsCount, s.PartitionsCount,
		s.SegmentsCount, s.MessagesCount, s.ClientsCount, s.ConsumerGroupsCount}
	if got != counters {
		t.Errorf("counters = %+v, want %+v", got, counters)
	}
	// The reply encodes and decodes as 7.14 describes.
	var back wire.Stats
	if err := back.Decode(s.AppendTo(nil)); err != nil {
		t.Fatalf("decode own stats: %v", err)
	}
	if back.ProcessID != s.ProcessID || back.Hostname != s.Hostname || back.TotalDiskSpace != s.TotalDiskSpace {
		t.Errorf("round trip changed stats: %+v vs %+v", back, s)
	}
}

// server-behaviour.md 9: cpu_usage covers the time since the previous probe
// of the same collector.
func TestCollectorSecondProbeCPUUsage(t *testing.T) {
	c := NewCollector(t.TempDir())
	c.Collect(Counters{})
	spinUntil := time.Now().Add(150 * time.Millisecond)
	x := 0
	for time.Now().Before(spinUntil) {
		x++
	}
	s := c.Collect(Counters{})
	if s.CPUUsage <= 0 || math.IsNaN(float64(s.CPUUsage)) || math.IsInf(float64(s.CPUUsage), 0) {
		t.Errorf("second probe after spinning: cpu_usage = %v, want > 0 (spun %d)", s.CPUUsage, x)
	}
	if s.TotalCPUUsage < 0 || s.TotalCPUUsage > 100 {
		t.Errorf("total_cpu_usage = %v", s.TotalCPUUsage)
	}
	// A fresh collector starts from 0 again.
	if first := NewCollector(t.TempDir()).Collect(Counters{}); first.CPUUsage != 0 {
		t.Errorf("fresh collector cpu_usage = %v, want 0", first.CPUUsage)
	}
}

func TestCollectorRunTimeGrows(t *testing.T) {
	c := NewCollector(t.TempDir())
	base := time.Now()
	c.now = func() time.Time { return base }
	first := c.Collect(Counters{})
	c.now = func() time.Time { return base.Add(5 * time.Second) }
	second := c.Collect(Counters{})
	if second.RunTime != first.RunTime+5_000_000 {
		t.Errorf("run_time %d after 5s, first %d", second.RunTime, first.RunTime)
	}
	if second.StartTime != first.StartTime {
		t.Errorf("start_time moved: %d -> %d", first.StartTime, second.StartTime)
	}
}

// The data path need not exist yet: its nearest existing parent decides.
func TestCollectorDiskOfMissingDataPath(t *testing.T) {
	s := NewCollector(filepath.Join(t.TempDir(), "not", "yet", "created")).Collect(Counters{})
	if s.TotalDiskSpace == 0 {
		t.Error("total_disk_space = 0 for a path under an existing directory")
	}
}

func TestCollectorConcurrentUse(t *testing.T) {
	c := NewCollector(t.TempDir())
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 5 {
				if s := c.Collect(Counters{}); s.CPUUsage < 0 {
					t.Errorf("cpu_usage %v", s.CPUUsage)
				}
			}
		})
	}
	wg.Wait()
}

func TestBusyPercent(t *testing.T) {
	for _, tc := range []struct {
		name      string
		prev, cur cpuSample
		want      float32
	}{
		{"since boot", cpuSample{}, cpuSample{busy: 25, total: 100}, 25},
		{"delta", cpuSample{busy: 10, total: 100}, cpuSample{busy: 60, total: 200}, 50},
		{"no time passed", cpuSample{busy: 10, total: 100}, cpuSample{busy: 10, total: 100}, 0},
		{"counter went back", cpuSample{busy: 50, total: 100}, cpuSample{busy: 40, total: 200}, 0},
		{"all busy", cpuSample{}, cpuSample{busy: 100, total: 100}, 100},
	} {
		if got := busyPercent(tc.prev, tc.cur); got != tc.want {
			t.Errorf("%s: busyPercent = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestParseOSRelease(t *testing.T) {
	name, version := parseOSRelease("PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nNAME=\"Debian GNU/Linux\"\nVERSION_ID=\"12\"\nID=debian\n")
	if name != "Debian GNU/Linux" || version != "12" {
		t.Errorf("parsed %q %q", name, version)
	}
	if got := longOSVersion("Linux", name, version); got != "Linux (Debian GNU/Linux 12)" {
		t.Errorf("long version %q", got)
	}
	if got := longOSVersion("Linux", "Alpine Linux", ""); got != "Linux (Alpine Linux)" {
		t.Errorf("long version without VERSION_ID %q", got)
	}
	if name, version := parseOSRelease("garbage\n"); name != "" || version != "" {
		t.Errorf("garbage parsed as %q %q", name, version)
	}
}

func TestReadHostFactsFallbacks(t *testing.T) {
	f := readHostFacts()
	for _, v := range []string{f.hostname, f.osName, f.osVersion, f.kernelVersion} {
		if v == "" {
			t.Errorf("empty host fact in %+v", f)
		}
	}
}
