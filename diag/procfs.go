package diag

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
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

func readProcStat(path string) (procStat, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return procStat{}, err
	}
	return parseProcStat(string(data))
}

// parseProcStat splits at the last ')' because comm may hold spaces and
// parentheses.
func parseProcStat(line string) (procStat, error) {
	open, close := strings.IndexByte(line, '('), strings.LastIndexByte(line, ')')
	if open < 0 || close < open {
		return procStat{}, errors.New("malformed stat line")
	}
	f := strings.Fields(line[close+1:])
	if len(f) < 22 {
		return procStat{}, errors.New("short stat line")
	}
	num := func(i int) int64 { n, _ := strconv.ParseInt(f[i], 10, 64); return n }
	var st procStat
	st.pid, _ = strconv.Atoi(strings.TrimSpace(line[:open]))
	st.comm = line[open+1 : close]
	st.state = f[0][0]
	st.pgrp, st.session = int(num(2)), int(num(3))
	st.ttyNr, st.tpgid = int(num(4)), int(num(5))
	st.utime, st.stime = uint64(num(11)), uint64(num(12))
	st.priority, st.nice = int(num(15)), int(num(16))
	st.threads = int(num(17))
	st.startTicks = uint64(num(19))
	st.vsizeBytes, st.rssPage = uint64(num(20)), uint64(num(21))
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
	now          time.Time
	uptimeSecs   float64
	memTotalKiB  uint64
	pageSize     uint64
	users        map[uint32]string
	groups       map[uint32]string
	loadAvg      string
	meminfo      map[string]uint64 // KiB
	cpuAggregate []uint64          // the "cpu" line of /proc/stat, in ticks
}

func readHostSnapshot() (*hostSnapshot, error) {
	h := &hostSnapshot{now: time.Now(), pageSize: uint64(os.Getpagesize()),
		users: map[uint32]string{}, groups: map[uint32]string{}, meminfo: map[string]uint64{}}
	up, err := os.ReadFile(filepath.Join(procRoot, "uptime"))
	if err != nil {
		return nil, err
	}
	if f := strings.Fields(string(up)); len(f) > 0 {
		h.uptimeSecs, _ = strconv.ParseFloat(f[0], 64)
	}
	if data, err := os.ReadFile(filepath.Join(procRoot, "meminfo")); err == nil {
		for line := range strings.SplitSeq(string(data), "\n") {
			key, rest, ok := strings.Cut(line, ":")
			if f := strings.Fields(rest); ok && len(f) > 0 {
				h.meminfo[key], _ = strconv.ParseUint(f[0], 10, 64)
			}
		}
	}
	h.memTotalKiB = h.meminfo["MemTotal"]
	if data, err := os.ReadFile(filepath.Join(procRoot, "loadavg")); err == nil {
		if f := strings.Fields(string(data)); len(f) >= 3 {
			h.loadAvg = strings.Join(f[:3], ", ")
		}
	}
	if data, err := os.ReadFile(filepath.Join(procRoot, "stat")); err == nil {
		line, _, _ := strings.Cut(string(data), "\n")
		if f := strings.Fields(line); len(f) > 1 && f[0] == "cpu" {
			for _, v := range f[1:] {
				n, _ := strconv.ParseUint(v, 10, 64)
				h.cpuAggregate = append(h.cpuAggregate, n)
			}
		}
	}
	return h, nil
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

// pids lists the numeric entries of /proc in ascending order.
func listPIDs() ([]int, error) {
	return numericEntries(procRoot)
}

func numericEntries(dir string) ([]int, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var ids []int
	for _, e := range entries {
		if id, err := strconv.Atoi(e.Name()); err == nil {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// procUID is the real uid of a process, from the Uid: line of its status.
func procUID(pid int) (uint32, bool) {
	data, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, false
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "Uid:"); ok {
			if f := strings.Fields(rest); len(f) > 0 {
				n, err := strconv.ParseUint(f[0], 10, 32)
				return uint32(n), err == nil
			}
		}
	}
	return 0, false
}

// procCmdline is the command line with NULs as spaces, or "[comm]" for a
// kernel thread, as ps prints it.
func procCmdline(pid int, comm string) string {
	data, _ := readBounded(filepath.Join(procRoot, strconv.Itoa(pid), "cmdline"), 4096)
	cmd := strings.TrimSpace(string(bytes.ReplaceAll(data, []byte{0}, []byte{' '})))
	if cmd == "" {
		return "[" + comm + "]"
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
