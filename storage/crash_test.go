package storage

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The child role: STORAGE_CRASH_CHILD_DIR names the store it appends to.
const crashChildEnv = "STORAGE_CRASH_CHILD_DIR"

const (
	crashGroup        = 7
	crashKillAfterOKs = 120
)

// crashBatch is batch i of the crash run: every third one is 160 KiB, the
// others about 1.5 KiB, so the kill lands in large and small write() calls.
func crashBatch(t testing.TB, i int) (base uint64, batch []byte) {
	base = uint64(i) * 4
	payload := 300
	if i%3 == 0 {
		payload = 40_000
	}
	return base, makeBatch(t, base, 4, payload, byte(i))
}

// TestCrashChild is the child process of TestAppendsSurviveKill9; run on
// its own it does nothing.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashChildEnv)
	if dir == "" {
		t.Skip("child role of TestAppendsSurviveKill9")
	}
	// Production badger sizes; batch files roll every 256 KiB so the run
	// crosses several files and the kill can land on a fresh one.
	s, err := Open(dir, Options{GCInterval: -1, BatchFileBytes: 256 << 10})
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(2)
	}
	for i := 0; ; i++ {
		base, b := crashBatch(t, i)
		if err := s.AppendBatch(crashGroup, base, b, false); err != nil {
			fmt.Println("append:", err)
			os.Exit(2)
		}
		// Printed only after the call returned: an acknowledged write.
		fmt.Printf("ok %d\n", i)
	}
}

// Every batch whose AppendBatch returned (without sync) survives kill -9 of
// the process, byte for byte (doc.go, "Durability").
func TestAppendsSurviveKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a child process")
	}
	bound(t, 90*time.Second)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1", "-test.timeout=60s")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked, killed := -1, false
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := sc.Text()
		n, ok := strings.CutPrefix(line, "ok ")
		if !ok {
			t.Logf("child: %s", line)
			continue
		}
		i, err := strconv.Atoi(n)
		if err != nil || i != acked+1 {
			t.Fatalf("child line %q after ok %d", line, acked)
		}
		acked = i
		// Kill mid-stream: the child is inside its next append.
		if !killed && acked+1 >= crashKillAfterOKs {
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killed = true
		}
	}
	// Lines the child printed before it died are acknowledgements too; the
	// scanner read them up to EOF.
	err = cmd.Wait()
	if !killed {
		t.Fatalf("child ended before the kill after %d acks: %v", acked+1, err)
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child was not killed by SIGKILL: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatal("child timed out")
	}
	t.Logf("child acknowledged %d appends before SIGKILL", acked+1)

	var logged bytes.Buffer
	opts := testOptions()
	opts.Logger = slog.New(slog.NewTextHandler(&logged, nil))
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := 0; i <= acked; i++ {
		base, want := crashBatch(t, i)
		got, err := s.ReadBatch(crashGroup, base)
		if err != nil {
			t.Fatalf("acknowledged batch %d lost: %v", i, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("acknowledged batch %d differs", i)
		}
	}
	// The scan walks them contiguously from 0 (a batch the child was
	// writing when it died may or may not follow, whole; a torn one was cut
	// at reopen; nothing else may).
	n := 0
	err = s.ScanBatches(crashGroup, 0, func(base uint64, b []byte) error {
		if wantBase, _ := crashBatch(t, n); base != wantBase {
			return fmt.Errorf("batch %d at base %d, want %d", n, base, wantBase)
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < acked+1 || n > acked+2 {
		t.Fatalf("scan found %d batches, %d acknowledged", n, acked+1)
	}
	if strings.Contains(logged.String(), "torn") {
		t.Logf("the kill tore a write: %s", strings.TrimSpace(logged.String()))
	}
	// The log goes on where the recovered one ends.
	base, b := crashBatch(t, n)
	if err := s.AppendBatch(crashGroup, base, b, true); err != nil {
		t.Fatal(err)
	}
	s = reopen(t, s)
	if got, err := s.ReadBatch(crashGroup, base); err != nil || !bytes.Equal(got, b) {
		t.Fatalf("append after recovery: %v", err)
	}
	if files := batchFileNames(t, s, crashGroup); len(files) < 2 {
		t.Fatalf("the run stayed in %d file(s), want it to roll", len(files))
	}
}
