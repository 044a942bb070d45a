package diag

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The section collectors of server-behaviour.md 10.3. Each reads /proc and
// the filesystem directly (no external commands), prints in the layout of
// the command the reference runs (ls -la, ps aux, top -H -b -n 1), and
// stops at MaxSectionSize.

// filesystemOverview is `ls -la` of the temporary directory and of /proc.
func filesystemOverview(tempDir string) ([]byte, error) {
	s := newTextSection()
	h := &hostSnapshot{now: time.Now(), users: map[uint32]string{}, groups: map[uint32]string{}}
	listed := 0
	var firstErr error
	for _, dir := range []string{tempDir, procRoot} {
		if err := listLong(s, h, dir); err != nil {
			s.printf("%s:\n[unreadable: %v]\n\n", dir, err)
			firstErr = cmp.Or(firstErr, err)
			continue
		}
		listed++
	}
	if listed == 0 {
		return nil, firstErr
	}
	return s.bytes(), nil
}

// listLong prints one directory the way `ls -la` does.
func listLong(s *textSection, h *hostSnapshot, dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	names := []string{".", ".."}
	for _, e := range entries {
		names = append(names, e.Name())
	}
	slices.Sort(names[2:])
	type row struct {
		cols []string
		name string
	}
	rows := make([]row, 0, len(names))
	var totalBlocks int64
	for _, name := range names {
		path := filepath.Join(dir, name)
		fi, err := os.Lstat(path)
		if err != nil {
			continue // a /proc entry that vanished while listing
		}
		own := statOwner(fi)
		totalBlocks += own.blocks512
		display := name
		if fi.Mode()&fs.ModeSymlink != 0 {
			if target, err := os.Readlink(path); err == nil {
				display += " -> " + target
			}
		}
		rows = append(rows, row{name: display, cols: []string{
			lsMode(fi.Mode()),
			strconv.FormatUint(own.nlink, 10),
			h.userName(own.uid),
			h.groupName(own.gid),
			strconv.FormatInt(fi.Size(), 10),
			lsTime(fi.ModTime(), h.now),
		}})
	}
	// Right-align the numeric columns, left-align names, as ls does.
	widths := make([]int, 6)
	for _, r := range rows {
		for i, c := range r.cols {
			widths[i] = max(widths[i], len(c))
		}
	}
	s.printf("%s:\ntotal %d\n", dir, totalBlocks/2)
	for _, r := range rows {
		s.printf("%s %*s %-*s %-*s %*s %s %s\n", r.cols[0], widths[1], r.cols[1], widths[2], r.cols[2],
			widths[3], r.cols[3], widths[4], r.cols[4], r.cols[5], r.name)
		if s.full {
			break
		}
	}
	s.printf("\n")
	return nil
}

// lsMode renders a mode as ls does: type letter, then rwx triples with the
// setuid, setgid and sticky bits folded in.
func lsMode(m fs.FileMode) string {
	b := []byte("----------")
	switch {
	case m&fs.ModeDir != 0:
		b[0] = 'd'
	case m&fs.ModeSymlink != 0:
		b[0] = 'l'
	case m&fs.ModeNamedPipe != 0:
		b[0] = 'p'
	case m&fs.ModeSocket != 0:
		b[0] = 's'
	case m&fs.ModeCharDevice != 0:
		b[0] = 'c'
	case m&fs.ModeDevice != 0:
		b[0] = 'b'
	}
	const rwx = "rwxrwxrwx"
	for i := range 9 {
		if m&(1<<(8-i)) != 0 {
			b[i+1] = rwx[i]
		}
	}
	special := func(pos int, set bool, lower, upper byte) {
		if !set {
			return
		}
		if b[pos] == 'x' {
			b[pos] = lower
		} else {
			b[pos] = upper
		}
	}
	special(3, m&fs.ModeSetuid != 0, 's', 'S')
	special(6, m&fs.ModeSetgid != 0, 's', 'S')
	special(9, m&fs.ModeSticky != 0, 't', 'T')
	return string(b)
}

// lsTime is ls's date column: time of day for the last six months, the
// year otherwise.
func lsTime(t, now time.Time) string {
	if now.Sub(t) < 182*24*time.Hour && t.Sub(now) < time.Hour {
		return t.Format("Jan _2 15:04")
	}
	return t.Format("Jan _2  2006")
}

// hostProcFiles are the host files process_list.txt dumps after the table
// (server-behaviour.md 10.3).
var hostProcFiles = []string{
	"uptime", "loadavg", "version", "cpuinfo", "stat", "meminfo", "vmstat",
	"interrupts", "softirqs", "diskstats", "partitions", "swaps", "filesystems",
	"mounts", "modules", "cgroups", "net/dev", "net/snmp", "net/netstat", "net/sockstat",
}

// perProcessFiles are dumped for every process after the host files.
var perProcessFiles = []string{"cmdline", "statm", "status", "cgroup"}

// processList is a `ps aux` table followed by dumps of host proc files and,
// per process, its command line, memory statistics, cgroup and task stat.
func processList() ([]byte, error) {
	h, err := readHostSnapshot()
	if err != nil {
		return nil, err
	}
	procs, err := h.processes()
	if err != nil {
		return nil, err
	}
	s := newTextSection()
	s.printf("%-10s %7s %4s %4s %9s %8s %-8s %-5s %5s %6s %s\n",
		"USER", "PID", "%CPU", "%MEM", "VSZ", "RSS", "TTY", "STAT", "START", "TIME", "COMMAND")
	for _, p := range procs {
		st, err := readProcStat(p)
		if err != nil {
			continue // exited while listing
		}
		pid := p.PID
		uid, _ := procOwner(p)
		start := h.startedAt(st)
		startCol := start.Format("15:04")
		if start.YearDay() != h.now.YearDay() || start.Year() != h.now.Year() {
			startCol = start.Format("Jan02")
		}
		s.printf("%-10s %7d %4.1f %4.1f %9d %8d %-8s %-5s %5s %6s %s\n",
			truncate(h.userName(uid), 10), pid, st.cpuPercent(h.uptimeSecs), h.memPercent(st.rssPage),
			st.vsizeBytes/1024, st.rssPage*h.pageSize/1024, ttyName(st.ttyNr), psState(st),
			startCol, cpuClock(st.cpuTicks()), procCmdline(p, st.comm))
	}
	s.printf("\n")
	for _, name := range hostProcFiles {
		s.dumpFile(filepath.Join(procRoot, name))
	}
	for _, p := range procs {
		if s.full {
			break
		}
		dir := filepath.Join(procRoot, strconv.Itoa(p.PID))
		for _, name := range perProcessFiles {
			s.dumpFile(filepath.Join(dir, name))
		}
		for _, t := range h.threads(p.PID) {
			s.dumpFile(filepath.Join(dir, "task", strconv.Itoa(t.PID), "stat"))
		}
	}
	return s.bytes(), nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n-1] + "+"
	}
	return s
}

// threadRow is one line of the per-thread top listing.
type threadRow struct {
	st   procStat
	user string
	shr  uint64 // KiB, per process
	cpu  float64
	mem  float64
}

// resourceUsage is one batch iteration of a per-thread top
// (`top -H -b -n 1`): the summary header, then every thread by CPU use.
func resourceUsage() ([]byte, error) {
	h, err := readHostSnapshot()
	if err != nil {
		return nil, err
	}
	procs, err := h.processes()
	if err != nil {
		return nil, err
	}
	var rows []threadRow
	states := map[byte]int{}
	for _, p := range procs {
		uid, shr := procOwner(p)
		user := h.userName(uid)
		for _, t := range h.threads(p.PID) {
			st, err := readProcStat(t)
			if err != nil {
				continue
			}
			states[st.state]++
			rows = append(rows, threadRow{st: st, user: user, shr: shr,
				cpu: st.cpuPercent(h.uptimeSecs), mem: h.memPercent(st.rssPage)})
		}
	}
	slices.SortStableFunc(rows, func(a, b threadRow) int {
		return cmp.Or(cmp.Compare(b.cpu, a.cpu), cmp.Compare(a.st.pid, b.st.pid))
	})
	s := newTextSection()
	writeTopSummary(s, h, len(rows), states)
	s.printf("%7s %-8s %3s %3s %8s %8s %7s %s %5s %5s %9s %s\n",
		"PID", "USER", "PR", "NI", "VIRT", "RES", "SHR", "S", "%CPU", "%MEM", "TIME+", "COMMAND")
	for _, r := range rows {
		if s.full {
			break
		}
		pr := strconv.Itoa(r.st.priority)
		if r.st.priority <= -100 {
			pr = "rt"
		}
		s.printf("%7d %-8s %3s %3d %8d %8d %7d %c %5.1f %5.1f %9s %s\n",
			r.st.pid, truncate(r.user, 8), pr, r.st.nice, r.st.vsizeBytes/1024, r.st.rssPage*h.pageSize/1024,
			r.shr, r.st.state, r.cpu, r.mem, cpuClockHundredths(r.st.cpuTicks()), r.st.comm)
	}
	return s.bytes(), nil
}

// writeTopSummary prints top's five header lines; CPU shares are averages
// since boot, as a single batch iteration has nothing to compare with.
func writeTopSummary(s *textSection, h *hostSnapshot, threads int, states map[byte]int) {
	up := time.Duration(h.uptimeSecs) * time.Second
	s.printf("top - %s up %d days, %2d:%02d,  load average: %s\n", h.now.Format("15:04:05"),
		int(up.Hours())/24, int(up.Hours())%24, int(up.Minutes())%60, h.loadAvg)
	s.printf("Threads: %d total, %d running, %d sleeping, %d stopped, %d zombie\n",
		threads, states['R'], states['S']+states['D']+states['I'], states['T']+states['t'], states['Z'])
	shares := make([]float64, len(h.cpuAggregate))
	var total float64
	for _, v := range h.cpuAggregate {
		total += v
	}
	for i, v := range h.cpuAggregate {
		if total > 0 {
			shares[i] = v / total * 100
		}
	}
	// /proc/stat order: user nice system idle iowait irq softirq steal.
	s.printf("%%Cpu(s): %4.1f us, %4.1f sy, %4.1f ni, %4.1f id, %4.1f wa, %4.1f hi, %4.1f si, %4.1f st\n",
		shares[0], shares[2], shares[1], shares[3], shares[4], shares[5], shares[6], shares[7])
	m := h.meminfo
	mib := func(v *uint64) float64 { return float64(kib(v)) / 1024 }
	cache := mib(m.Buffers) + mib(m.Cached) + mib(m.SReclaimable)
	s.printf("MiB Mem : %8.1f total, %8.1f free, %8.1f used, %8.1f buff/cache\n",
		mib(m.MemTotal), mib(m.MemFree), mib(m.MemTotal)-mib(m.MemFree)-cache, cache)
	s.printf("MiB Swap: %8.1f total, %8.1f free, %8.1f used. %8.1f avail Mem\n\n",
		mib(m.SwapTotal), mib(m.SwapFree), mib(m.SwapTotal)-mib(m.SwapFree), mib(m.MemAvailable))
}

// serverLogs concatenates every regular file of the log directory, oldest
// modification first (server-behaviour.md 10.3). When they exceed the
// section limit the oldest bytes are dropped: the newest lines matter most.
func serverLogs(dir string) ([]byte, error) {
	if dir == "" {
		return nil, errors.New("no log directory configured")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	type logFile struct {
		path string
		mod  time.Time
		size int64
	}
	var files []logFile
	var total int64
	for _, e := range entries {
		info, err := e.Info()
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		files = append(files, logFile{filepath.Join(dir, e.Name()), info.ModTime(), info.Size()})
		total += info.Size()
	}
	slices.SortStableFunc(files, func(a, b logFile) int {
		return cmp.Or(a.mod.Compare(b.mod), strings.Compare(a.path, b.path))
	})
	s := newTextSection()
	skip := max(total-int64(s.limit-len(truncatedMarker)), 0)
	if skip > 0 {
		s.printf("[%d older log bytes omitted]\n", skip)
		skip += int64(s.b.Len())
	}
	for _, f := range files {
		if skip >= f.size {
			skip -= f.size
			continue
		}
		if err := appendLogFile(s, f.path, skip); err != nil {
			s.printf("\n[%s unreadable: %v]\n", f.path, err)
		}
		skip = 0
	}
	return s.bytes(), nil
}

func appendLogFile(s *textSection, path string, offset int64) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if offset > 0 {
		if _, err := f.Seek(offset, io.SeekStart); err != nil {
			return fmt.Errorf("seek: %w", err)
		}
	}
	// A file still being written may have grown; never read past the limit.
	_, err = io.Copy(s, io.LimitReader(f, int64(s.limit)))
	return err
}
