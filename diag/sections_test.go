package diag

import (
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/procfs"
)

// proc(5): comm is in parentheses and may itself hold spaces and ')'.
// The stat file is read through prometheus/procfs from a proc tree made
// here.
func TestReadProcStat(t *testing.T) {
	root := t.TempDir()
	write := func(pid, line string) procfs.Proc {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(root, pid), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, pid, "stat"), []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
		fs, err := procfs.NewFS(root)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := strconv.Atoi(pid)
		p, err := fs.Proc(n)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	// A whole line as a 6.x kernel writes it (52 fields).
	line := "4242 (tricky) name) S 1 4242 4242 34816 4242 4194560 900 0 3 0 250 130 0 0 20 -5 7 0 123456 104857600 2560 18446744073709551615" +
		" 94000000000000 94000000100000 140730000000000 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 94000000200000 94000000300000 94000000400000" +
		" 140730000100000 140730000200000 140730000200000 140730000300000 0\n"
	st, err := readProcStat(write("4242", line))
	if err != nil {
		t.Fatal(err)
	}
	want := procStat{pid: 4242, comm: "tricky) name", state: 'S', pgrp: 4242, session: 4242,
		ttyNr: 34816, tpgid: 4242, utime: 250, stime: 130, priority: 20, nice: -5, threads: 7,
		startTicks: 123456, vsizeBytes: 104857600, rssPage: 2560}
	if st != want {
		t.Errorf("parsed %+v\nwant   %+v", st, want)
	}
	if got := psState(st); got != "S<sl+" {
		t.Errorf("psState = %q, want S<sl+", got)
	}
	if got := cpuClock(st.cpuTicks()); got != "0:03" {
		t.Errorf("cpuClock(380 ticks) = %q", got)
	}
	if got := cpuClockHundredths(6543); got != "1:05.43" {
		t.Errorf("cpuClockHundredths(6543) = %q", got)
	}
	// 380 ticks = 3.8 s of CPU over 1234.56+... : started at tick 123456 = 1234.56 s after boot.
	if got := st.cpuPercent(1234.56 + 38); got < 9.99 || got > 10.01 {
		t.Errorf("cpuPercent = %v, want 10", got)
	}
	for i, bad := range []string{"", "12 no-parens S", "1 (x) S 1 2"} {
		if _, err := readProcStat(write(strconv.Itoa(100+i), bad)); err == nil {
			t.Errorf("parsed %q", bad)
		}
	}
}

func TestLsMode(t *testing.T) {
	for _, tc := range []struct {
		mode fs.FileMode
		want string
	}{
		{0o644, "-rw-r--r--"},
		{fs.ModeDir | 0o755, "drwxr-xr-x"},
		{fs.ModeDir | fs.ModeSticky | 0o777, "drwxrwxrwt"},
		{fs.ModeDir | fs.ModeSticky | 0o776, "drwxrwxrwT"},
		{fs.ModeSymlink | 0o777, "lrwxrwxrwx"},
		{fs.ModeSetuid | 0o755, "-rwsr-xr-x"},
		{fs.ModeSetgid | 0o745, "-rwxr-Sr-x"},
		{fs.ModeDevice | fs.ModeCharDevice | 0o666, "crw-rw-rw-"},
		{fs.ModeDevice | 0o660, "brw-rw----"},
		{fs.ModeNamedPipe | 0o600, "prw-------"},
		{fs.ModeSocket | 0o755, "srwxr-xr-x"},
	} {
		if got := lsMode(tc.mode); got != tc.want {
			t.Errorf("lsMode(%v) = %q, want %q", tc.mode, got, tc.want)
		}
	}
}

func TestLsTime(t *testing.T) {
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	if got := lsTime(now.Add(-time.Hour), now); got != "Mar 10 11:00" {
		t.Errorf("recent: %q", got)
	}
	if got := lsTime(time.Date(2025, 1, 5, 8, 0, 0, 0, time.UTC), now); got != "Jan  5  2025" {
		t.Errorf("old: %q", got)
	}
}

func TestTTYName(t *testing.T) {
	for _, tc := range []struct {
		nr   int
		want string
	}{
		{0, "?"},
		{136<<8 | 3, "pts/3"},
		{4<<8 | 1, "tty1"},
		{4<<8 | 65, "ttyS1"},
		{5<<8 | 1, "?"},
	} {
		if got := ttyName(tc.nr); got != tc.want {
			t.Errorf("ttyName(%#x) = %q, want %q", tc.nr, got, tc.want)
		}
	}
}
