package diag

import (
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shirou/gopsutil/v4/cpu"
	"github.com/shirou/gopsutil/v4/disk"
	"github.com/shirou/gopsutil/v4/host"
	"github.com/shirou/gopsutil/v4/mem"
	"github.com/shirou/gopsutil/v4/process"

	"iggynode/wire"
)

// Fallbacks for host facts that cannot be read (server-behaviour.md 9).
const (
	UnknownHostname      = "unknown_hostname"
	UnknownOSName        = "unknown_os_name"
	UnknownOSVersion     = "unknown_os_version"
	UnknownKernelVersion = "unknown_kernel_version"
)

// Counters are the Stats fields only the node knows: its metadata and
// partition counters (server-behaviour.md 9, 9.1). Collect copies them into
// the reply unchanged.
type Counters struct {
	MessagesSizeBytes   uint64
	StreamsCount        uint32
	TopicsCount         uint32
	PartitionsCount     uint32
	SegmentsCount       uint32
	MessagesCount       uint64
	ClientsCount        uint32
	ConsumerGroupsCount uint32
}

// Collector fills the process and host fields of wire.Stats. Host facts that
// do not change while the process runs (names, versions, start time, cgroup
// location) are read once; the rest are a handful of small /proc reads per
// probe, so Collect is cheap enough for the request path. A Collector is
// safe for concurrent use; probes are serialised because cpu_usage is
// defined relative to the previous probe.
type Collector struct {
	dataPath string
	pid      int32
	now      func() time.Time // a test seam; time.Now in production

	hostOnce sync.Once
	host     hostFacts

	mu          sync.Mutex
	proc        *process.Process // nil when this OS offers no process view
	startTime   time.Time        // zero when unknown
	hasPrev     bool
	prevWall    time.Time
	prevCPUSecs float64
	prevHost    cpuSample
	cgroup      memoryLimiter
}

// hostFacts are read once per Collector (server-behaviour.md 9: hostname,
// os_name, os_version, kernel_version with their unknown_* fallbacks).
type hostFacts struct {
	hostname, osName, osVersion, kernelVersion string
}

// NewCollector returns a Collector reporting disk figures for the
// filesystem that holds dataPath (system.path). dataPath need not exist yet:
// the nearest existing parent decides the filesystem.
func NewCollector(dataPath string) *Collector {
	c := &Collector{dataPath: dataPath, pid: int32(os.Getpid()), now: time.Now}
	if p, err := process.NewProcess(c.pid); err == nil {
		c.proc = p
		if ms, err := p.CreateTime(); err == nil && ms > 0 {
			c.startTime = time.UnixMilli(ms)
		}
	}
	if c.startTime.IsZero() {
		c.startTime = processStartFallback
	}
	c.cgroup = newMemoryLimiter()
	return c
}

// processStartFallback is when this package was initialised, close enough
// to the process start when the OS will not tell.
var processStartFallback = time.Now()

// Collect returns the node's Stats: the process and host figures measured
// now, merged with counters. Fields that cannot be read are 0 (or their
// unknown_* string); Collect never fails.
func (c *Collector) Collect(counters Counters) wire.Stats {
	facts := c.hostFacts()
	s := wire.Stats{
		ProcessID:           uint32(c.pid),
		MessagesSizeBytes:   counters.MessagesSizeBytes,
		StreamsCount:        counters.StreamsCount,
		TopicsCount:         counters.TopicsCount,
		PartitionsCount:     counters.PartitionsCount,
		SegmentsCount:       counters.SegmentsCount,
		MessagesCount:       counters.MessagesCount,
		ClientsCount:        counters.ClientsCount,
		ConsumerGroupsCount: counters.ConsumerGroupsCount,
		Hostname:            facts.hostname,
		OSName:              facts.osName,
		OSVersion:           facts.osVersion,
		KernelVersion:       facts.kernelVersion,
		IggyServerVersion:   wire.ServerVersion,
		IggyServerSemver:    wire.ServerSemver,
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	c.probeProcess(&s, now)
	c.probeHost(&s)
	c.probeDisk(&s)
	// server-behaviour.md 9: run_time and start_time in µs, second granularity.
	start := c.startTime.Unix()
	s.StartTime = uint64(max(start, 0)) * 1_000_000
	s.RunTime = uint64(max(now.Unix()-start, 0)) * 1_000_000
	return s
}

// probeProcess fills cpu_usage, memory_usage, read/written bytes and
// threads_count. cpu_usage covers the time since this Collector's previous
// probe; the first probe reports 0 (server-behaviour.md 9).
func (c *Collector) probeProcess(s *wire.Stats, now time.Time) {
	if c.proc == nil {
		// Threads the Go runtime has created: close to the live count.
		s.ThreadsCount = uint32(pprof.Lookup("threadcreate").Count())
		return
	}
	if t, err := c.proc.Times(); err == nil {
		cpuSecs := t.User + t.System
		if c.hasPrev {
			if wall := now.Sub(c.prevWall).Seconds(); wall > 0 && cpuSecs >= c.prevCPUSecs {
				s.CPUUsage = float32((cpuSecs - c.prevCPUSecs) / wall * 100)
			}
		}
		c.hasPrev, c.prevWall, c.prevCPUSecs = true, now, cpuSecs
	}
	if m, err := c.proc.MemoryInfo(); err == nil {
		s.MemoryUsage = m.RSS
	}
	if ioc, err := c.proc.IOCounters(); err == nil {
		s.ReadBytes, s.WrittenBytes = ioc.ReadBytes, ioc.WriteBytes
	}
	if n, err := c.proc.NumThreads(); err == nil && n > 0 {
		s.ThreadsCount = uint32(n)
	}
}

// probeHost fills total_cpu_usage and the memory figures, honouring a
// cgroup memory limit lower than the host's (server-behaviour.md 9).
func (c *Collector) probeHost(s *wire.Stats) {
	if sample, ok := sampleAllowedCPUs(); ok {
		s.TotalCPUUsage = busyPercent(c.prevHost, sample)
		c.prevHost = sample
	}
	if vm, err := mem.VirtualMemory(); err == nil {
		s.TotalMemory, s.AvailableMemory = vm.Total, vm.Available
	}
	if limit, available, ok := c.cgroup.read(); ok && (s.TotalMemory == 0 || limit < s.TotalMemory) {
		s.TotalMemory = limit
		if s.AvailableMemory == 0 || available < s.AvailableMemory {
			s.AvailableMemory = available
		}
	}
}

// probeDisk fills free/total_disk_space for the filesystem holding the data
// path; 0 when unknown (server-behaviour.md 9).
func (c *Collector) probeDisk(s *wire.Stats) {
	path := existingAncestor(c.dataPath)
	if path == "" {
		return
	}
	if u, err := disk.Usage(path); err == nil {
		s.FreeDiskSpace, s.TotalDiskSpace = u.Free, u.Total
	}
}

// existingAncestor is path itself, or its nearest existing parent, or "".
func existingAncestor(path string) string {
	if path == "" {
		path = "."
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(abs); err == nil {
			return abs
		}
		parent := filepath.Dir(abs)
		if parent == abs {
			return ""
		}
		abs = parent
	}
}

func (c *Collector) hostFacts() hostFacts {
	c.hostOnce.Do(func() { c.host = readHostFacts() })
	return c.host
}

func readHostFacts() hostFacts {
	f := hostFacts{
		hostname:      UnknownHostname,
		osName:        UnknownOSName,
		osVersion:     UnknownOSVersion,
		kernelVersion: UnknownKernelVersion,
	}
	if h, err := os.Hostname(); err == nil && h != "" {
		f.hostname = h
	}
	if k, err := host.KernelVersion(); err == nil && k != "" {
		f.kernelVersion = k
	}
	name, version := osRelease()
	if name == "" {
		// No os-release (not Linux, or a bare image): ask gopsutil.
		if platform, _, v, err := host.PlatformInformation(); err == nil {
			name, version = platform, v
		}
	}
	if name != "" {
		f.osName = name
		f.osVersion = longOSVersion(osFamily(), name, version)
	}
	return f
}

// longOSVersion is the long form the reference reports:
// "Linux (Debian GNU/Linux 12)".
func longOSVersion(family, name, version string) string {
	long := family + " (" + name
	if version != "" {
		long += " " + version
	}
	return long + ")"
}

// osFamily names the kernel family the way the long OS version starts.
func osFamily() string {
	switch runtime.GOOS {
	case "linux":
		return "Linux"
	case "darwin":
		return "macOS"
	case "windows":
		return "Windows"
	}
	return runtime.GOOS
}

// osRelease reads NAME and VERSION_ID from os-release(5).
func osRelease() (name, version string) {
	for _, path := range []string{"/etc/os-release", "/usr/lib/os-release"} {
		if data, err := os.ReadFile(path); err == nil {
			return parseOSRelease(string(data))
		}
	}
	return "", ""
}

func parseOSRelease(data string) (name, version string) {
	for line := range strings.SplitSeq(data, "\n") {
		key, value, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok {
			continue
		}
		if unq, err := strconv.Unquote(value); err == nil {
			value = unq
		} else {
			value = strings.Trim(value, `"'`)
		}
		switch key {
		case "NAME":
			name = value
		case "VERSION_ID":
			version = value
		}
	}
	return name, version
}

// cpuSample is the summed busy and total CPU seconds of the cores this
// process may run on.
type cpuSample struct{ busy, total float64 }

// sampleAllowedCPUs sums the per-core times of the cores in this process's
// affinity mask, or of the whole host when the mask is unknown
// (server-behaviour.md 9: total_cpu_usage).
func sampleAllowedCPUs() (cpuSample, bool) {
	allowed := allowedCPUs()
	perCore, err := cpu.Times(true)
	if err != nil || len(perCore) == 0 {
		return cpuSample{}, false
	}
	var s cpuSample
	n := 0
	for _, t := range perCore {
		if allowed != nil {
			idx, err := strconv.Atoi(strings.TrimPrefix(t.CPU, "cpu"))
			if err != nil || !allowed[idx] {
				continue
			}
		}
		// Guest time is already inside user time on Linux.
		total := t.User + t.System + t.Idle + t.Nice + t.Iowait + t.Irq + t.Softirq + t.Steal
		s.total += total
		s.busy += total - t.Idle - t.Iowait
		n++
	}
	if n == 0 {
		return cpuSample{}, false
	}
	return s, true
}

// busyPercent is the average busy share of the sampled cores between two
// samples; against a zero previous sample it is the average since boot.
func busyPercent(prev, cur cpuSample) float32 {
	dTotal, dBusy := cur.total-prev.total, cur.busy-prev.busy
	if dTotal <= 0 || dBusy < 0 {
		return 0
	}
	return float32(min(dBusy/dTotal*100, 100))
}
