package main

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

// The log file is created with its folder and appended to across starts.
func TestOpenLogFileAppends(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data", "logs")
	for _, line := range []string{"first\n", "second\n"} {
		f, err := openLogFile(dir)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(line); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	b, err := os.ReadFile(filepath.Join(dir, "iggynode.log"))
	if err != nil || string(b) != "first\nsecond\n" {
		t.Fatalf("log file %q, %v", b, err)
	}
	if _, err := openLogFile(filepath.Join(dir, "iggynode.log", "x")); err == nil {
		t.Fatal("a folder under a file was accepted")
	}
}

// Without GOGC the node collects at 25% heap growth; GOGC, when set, wins.
func TestGCPercentDefault(t *testing.T) {
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)
	setGCPercent([]string{"HOME=/root"})
	if got := debug.SetGCPercent(100); got != defaultGCPercent {
		t.Fatalf("GC percent %d without GOGC, want %d", got, defaultGCPercent)
	}
	setGCPercent([]string{"GOGC=80"})
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("GOGC in the environment was overridden: %d", got)
	}
}
