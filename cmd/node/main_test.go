package main

import (
	"os"
	"path/filepath"
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
