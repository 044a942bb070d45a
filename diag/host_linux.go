package diag

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
)

// allowedCPUs is the set of cores in this process's affinity mask, or nil
// when it cannot be read.
func allowedCPUs() map[int]bool {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil
	}
	allowed := make(map[int]bool, set.Count())
	for i := range len(set) * 64 {
		if set.IsSet(i) {
			allowed[i] = true
		}
	}
	if len(allowed) == 0 {
		return nil
	}
	return allowed
}

// unlimitedCgroupBytes: cgroup v1 reports "no limit" as a huge page-aligned
// number; anything this large is no limit at all.
const unlimitedCgroupBytes = 1 << 62

// memoryLimiter reads this process's cgroup memory limit and usage. The
// cgroup directory is found once; the figures are read on every probe.
type memoryLimiter struct {
	dir              string // "" when no memory cgroup applies
	limitFile        string
	usageFile        string
	inactiveFileStat string // memory.stat key of reclaimable file cache
}

func newMemoryLimiter() memoryLimiter {
	self, err := procfs.Self()
	if err != nil {
		return memoryLimiter{}
	}
	groups, err := self.Cgroups()
	if err != nil {
		return memoryLimiter{}
	}
	for _, g := range groups {
		if g.HierarchyID == 0 && len(g.Controllers) == 0 { // cgroup v2 unified hierarchy
			m := memoryLimiter{limitFile: "memory.max", usageFile: "memory.current", inactiveFileStat: "inactive_file"}
			if m.find("/sys/fs/cgroup", g.Path) {
				return m
			}
		}
		if slices.Contains(g.Controllers, "memory") { // cgroup v1
			m := memoryLimiter{limitFile: "memory.limit_in_bytes", usageFile: "memory.usage_in_bytes", inactiveFileStat: "total_inactive_file"}
			if m.find("/sys/fs/cgroup/memory", g.Path) {
				return m
			}
		}
	}
	return memoryLimiter{}
}

// find picks the process's own cgroup directory, or the mount root when the
// container's cgroup namespace hides the path.
func (m *memoryLimiter) find(mount, path string) bool {
	for _, dir := range []string{filepath.Join(mount, path), mount} {
		if _, err := os.Stat(filepath.Join(dir, m.limitFile)); err == nil {
			m.dir = dir
			return true
		}
	}
	return false
}

// read returns the limit and what remains under it, counting reclaimable
// file cache as available (server-behaviour.md 9); ok is false when no
// limit applies.
func (m memoryLimiter) read() (limit, available uint64, ok bool) {
	if m.dir == "" {
		return 0, 0, false
	}
	limit, ok = readCgroupNumber(filepath.Join(m.dir, m.limitFile))
	if !ok || limit == 0 || limit >= unlimitedCgroupBytes {
		return 0, 0, false
	}
	usage, _ := readCgroupNumber(filepath.Join(m.dir, m.usageFile))
	inactive := readStatKey(filepath.Join(m.dir, "memory.stat"), m.inactiveFileStat)
	used := usage - min(inactive, usage)
	return limit, limit - min(used, limit), true
}

// readCgroupNumber parses a one-number cgroup file; "max" is no number.
func readCgroupNumber(path string) (uint64, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseUint(string(bytes.TrimSpace(data)), 10, 64)
	return n, err == nil
}

// readStatKey reads one "key value" line of a memory.stat file (0 if absent).
func readStatKey(path, key string) uint64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if ok && k == key {
			n, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// fileOwner is what `ls -l` shows beyond fs.FileInfo.
type fileOwner struct {
	nlink     uint64
	uid, gid  uint32
	blocks512 int64
}

func statOwner(fi fs.FileInfo) fileOwner {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileOwner{nlink: 1}
	}
	return fileOwner{nlink: uint64(st.Nlink), uid: st.Uid, gid: st.Gid, blocks512: st.Blocks}
}
