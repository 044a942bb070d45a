package diag

import (
	"bytes"
	"fmt"
	"os"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/procfs"
)

// procRoot is where the proc filesystem is mounted.
const procRoot = "/proc"

// userHZ is the unit of the tick counts in /proc/<pid>/stat: USER_HZ, which
// the kernel fixes at 100 for userspace on every mainstream architecture.
const userHZ = 100

// textSection accumulates a section's text and stops at its limit, marking
// the cut, so that no section can grow an archive toward the frame limit.
type textSection struct {
	b     bytes.Buffer
	limit int
	full  bool
}

func newTextSection() *textSection { return &textSection{limit: MaxSectionSize} }

const truncatedMarker = "\n[section truncated]\n"

func (s *textSection) Write(p []byte) (int, error) {
	if s.full {
		return len(p), nil
	}
	room := s.limit - len(truncatedMarker) - s.b.Len()
	if len(p) > room {
		s.b.Write(p[:max(room, 0)])
		s.b.WriteString(truncatedMarker)
		s.full = true
		return len(p), nil
	}
	return s.b.Write(p)
}

func (s *textSection) printf(format string, args ...any) { fmt.Fprintf(s, format, args...) }

func (s *textSection) bytes() []byte { return s.b.Bytes() }

// dumpFile appends "==> path <==" and the file's content, as `head` does
// for several files; unreadable files are noted, not fatal.
func (s *textSection) dumpFile(path string) {
	data, err := readBounded(path, MaxSectionSize)
	if err != nil {
		s.printf("==> %s <==\n[unreadable: %v]\n\n", path, err)
		return
	}
	s.printf("==> %s <==\n", path)
	s.Write(bytes.ReplaceAll(data, []byte{0}, []byte{' '})) // cmdline is NUL-separated
	if len(data) > 0 && data[len(data)-1] != '\n' {
		s.Write([]byte{'\n'})
	}
	s.Write([]byte{'\n'})
}

// procFS is the proc filesystem at procRoot, parsed by
// github.com/prometheus/procfs.
func procFS() (procfs.FS, error) { return procfs.NewFS(procRoot) }

// procStat is the part of /proc/<pid>/stat (or task/<tid>/stat) that the
// process and thread tables show (proc(5)).
type procStat struct {
	pid                 int
	comm                string
	state               byte
	pgrp, session       int
	ttyNr, tpgid        int
	utime, stime        uint64 // ticks
	priority, nice      int
	threads             int
	startTicks          uint64 // since boot
	vsizeBytes, rssPage uint64
}

// readProcStat reads a process's or thread's stat file (a Proc of
// AllProcs or AllThreads).
func readProcStat(p procfs.Proc) (procStat, error) {
	s, err := p.Stat()
	if err != nil {
		return procStat{}, err
	}
	st := procStat{pid: s.PID, comm: s.Comm, pgrp: s.PGRP, session: s.Session, ttyNr: s.TTY, tpgid: s.TPGID,
		utime: uint64(s.UTime), stime: uint64(s.STime), priority: s.Priority, nice: s.Nice, threads: s.NumThreads,
		startTicks: s.Starttime, vsizeBytes: uint64(s.VSize), rssPage: uint64(max(s.RSS, 0))}
	if s.State != "" {
		st.state = s.State[0]
	}
	return st, nil
}

func (st procStat) cpuTicks() uint64 { return st.utime + st.stime }

// cpuPercent is the share of one core used since the task started, which is
// what ps shows and what top's first iteration shows.
func (st procStat) cpuPercent(uptimeSecs float64) float64 {
	alive := uptimeSecs - float64(st.startTicks)/userHZ
	if alive <= 0 {
		return 0
	}
	return float64(st.cpuTicks()) / userHZ / alive * 100
}

// hostSnapshot holds the host figures the tables need.
type hostSnapshot struct {
	fs           procfs.FS
	now          time.Time
	uptimeSecs   float64 // since btime, /proc/stat
	memTotalKiB  uint64
	pageSize     uint64
	users        map[uint32]string
	groups       map[uint32]string
	loadAvg      string
	meminfo      procfs.Meminfo // KiB
	cpuAggregate []float64      // the "cpu" line of /proc/stat, in its order (seconds)
}

func readHostSnapshot() (*hostSnapshot, error) {
	fs, err := procFS()
	if err != nil {
		return nil, err
	}
	h := &hostSnapshot{fs: fs, now: time.Now(), pageSize: uint64(os.Getpagesize()),
		users: map[uint32]string{}, groups: map[uint32]string{}}
	stat, err := fs.Stat()
	if err != nil {
		return nil, err
	}
	h.uptimeSecs = max(float64(h.now.UnixNano())/1e9-float64(stat.BootTime), 0)
	c := stat.CPUTotal
	h.cpuAggregate = []float64{c.User, c.Nice, c.System, c.Idle, c.Iowait, c.IRQ, c.SoftIRQ, c.Steal}
	if m, err := fs.Meminfo(); err == nil {
		h.meminfo = m
		h.memTotalKiB = kib(m.MemTotal)
	}
	if l, err := fs.LoadAvg(); err == nil {
		h.loadAvg = fmt.Sprintf("%.2f, %.2f, %.2f", l.Load1, l.Load5, l.Load15)
	}
	return h, nil
}

// kib is an optional meminfo figure (KiB), 0 when the kernel lacks it.
func kib(v *uint64) uint64 {
	if v == nil {
		return 0
	}
	return *v
}

func (h *hostSnapshot) userName(uid uint32) string {
	if n, ok := h.users[uid]; ok {
		return n
	}
	n := strconv.FormatUint(uint64(uid), 10)
	if u, err := user.LookupId(n); err == nil {
		n = u.Username
	}
	h.users[uid] = n
	return n
}

func (h *hostSnapshot) groupName(gid uint32) string {
	if n, ok := h.groups[gid]; ok {
		return n
	}
	n := strconv.FormatUint(uint64(gid), 10)
	if g, err := user.LookupGroupId(n); err == nil {
		n = g.Name
	}
	h.groups[gid] = n
	return n
}

func (h *hostSnapshot) memPercent(rssPages uint64) float64 {
	if h.memTotalKiB == 0 {
		return 0
	}
	return float64(rssPages*h.pageSize) / float64(h.memTotalKiB*1024) * 100
}

// startedAt is when a task started, from its start ticks since boot.
func (h *hostSnapshot) startedAt(st procStat) time.Time {
	boot := h.now.Add(-time.Duration(h.uptimeSecs * float64(time.Second)))
	return boot.Add(time.Duration(st.startTicks) * time.Second / userHZ)
}

// processes lists the processes in ascending pid order.
func (h *hostSnapshot) processes() (procfs.Procs, error) {
	procs, err := h.fs.AllProcs()
	return sortedProcs(procs), err
}

// threads lists a process's threads in ascending tid order (none when it
// exited meanwhile).
func (h *hostSnapshot) threads(pid int) procfs.Procs {
	tasks, _ := h.fs.AllThreads(pid)
	return sortedProcs(tasks)
}

func sortedProcs(p procfs.Procs) procfs.Procs {
	slices.SortFunc(p, func(a, b procfs.Proc) int { return a.PID - b.PID })
	return p
}

// procOwner is a process's real uid and top's SHR (resident file-backed
// and shared memory, KiB), from its status file.
func procOwner(p procfs.Proc) (uid uint32, shrKiB uint64) {
	s, err := p.NewStatus()
	if err != nil {
		return 0, 0
	}
	return uint32(s.UIDs[0]), (s.RssFile + s.RssShmem) / 1024
}

// maxCmdline bounds a command line in the table.
const maxCmdline = 4096

// procCmdline is the command line with NULs as spaces, or "[comm]" for a
// kernel thread, as ps prints it.
func procCmdline(p procfs.Proc, comm string) string {
	args, _ := p.CmdLine()
	cmd := strings.TrimSpace(strings.Join(args, " "))
	if cmd == "" {
		return "[" + comm + "]"
	}
	if len(cmd) > maxCmdline {
		cmd = cmd[:maxCmdline]
	}
	return cmd
}

// ttyName decodes tty_nr (major in bits 8-15, minor in 0-7 and 20-31) for
// the terminals ps names; others are "?".
func ttyName(ttyNr int) string {
	if ttyNr == 0 {
		return "?"
	}
	major := (ttyNr >> 8) & 0xfff
	minor := (ttyNr & 0xff) | ((ttyNr >> 12) & 0xfff00)
	switch {
	case major >= 136 && major <= 143:
		return fmt.Sprintf("pts/%d", (major-136)*256+minor)
	case major == 4 && minor < 64:
		return fmt.Sprintf("tty%d", minor)
	case major == 4:
		return fmt.Sprintf("ttyS%d", minor-64)
	}
	return "?"
}

// psState is ps's STAT column: the state letter and its BSD flags.
func psState(st procStat) string {
	s := string(st.state)
	switch {
	case st.nice < 0:
		s += "<"
	case st.nice > 0:
		s += "N"
	}
	if st.session == st.pid {
		s += "s"
	}
	if st.threads > 1 {
		s += "l"
	}
	if st.tpgid > 0 && st.pgrp == st.tpgid {
		s += "+"
	}
	return s
}

// cpuClock formats ticks as ps's TIME (M:SS).
func cpuClock(ticks uint64) string {
	secs := ticks / userHZ
	return fmt.Sprintf("%d:%02d", secs/60, secs%60)
}

// cpuClockHundredths formats ticks as top's TIME+ (M:SS.hh).
func cpuClockHundredths(ticks uint64) string {
	hundredths := ticks * 100 / userHZ
	secs := hundredths / 100
	return fmt.Sprintf("%d:%02d.%02d", secs/60, secs%60, hundredths%100)
}
