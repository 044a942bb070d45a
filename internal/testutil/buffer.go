// Package testutil holds helpers shared by the tests of several packages.
package testutil

import (
	"bytes"
	"strings"
	"sync"
	"time"
)

// Buffer is a bytes.Buffer that goroutines may write while a test reads
// it (loggers of several nodes, a progress or follow goroutine).
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Await reports whether the buffer contains substr within the given time.
// A node logs an outcome after it takes effect, so a test that saw the
// effect waits for the line rather than reading the buffer once.
func (s *Buffer) Await(substr string, within time.Duration) bool {
	for deadline := time.Now().Add(within); ; time.Sleep(10 * time.Millisecond) {
		if strings.Contains(s.String(), substr) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}
