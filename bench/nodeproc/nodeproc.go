// Package nodeproc is what the benchmarks that run the node as a child
// process share (bench/hostile, bench/scale): building ./cmd/node, free
// loopback ports, waiting for a listener, and a process's memory and CPU
// (gopsutil, the node's own dependency for GetStats).
package nodeproc

import (
	"context"
	"fmt"
	"io"
	"net"
	"os/exec"
	"syscall"
	"time"

	"github.com/shirou/gopsutil/v4/process"
)

// Build compiles ./cmd/node of the repository at source into bin.
func Build(ctx context.Context, source, bin string, log io.Writer) error {
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/node")
	build.Dir, build.Stdout, build.Stderr = source, log, log
	if err := build.Run(); err != nil {
		return fmt.Errorf("building %s/cmd/node: %w", source, err)
	}
	return nil
}

// FreePorts finds n loopback ports free for TCP and UDP alike (asking the
// kernel for each and giving it back).
func FreePorts(n int) ([]string, error) {
	var ports []string
	for len(ports) < n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		_, port, _ := net.SplitHostPort(l.Addr().String())
		_ = l.Close()
		if u, err := net.ListenPacket("udp", "127.0.0.1:"+port); err == nil {
			_ = u.Close()
			ports = append(ports, port)
		}
	}
	return ports, nil
}

// WaitListening waits until something accepts TCP on addr, two minutes at
// most.
func WaitListening(ctx context.Context, addr string) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		nc, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = nc.Close()
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("nothing listens on %s: %w", addr, err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Usage is a process's resident and virtual memory, in bytes, and the CPU
// time (user + system) it has used, in seconds.
type Usage struct {
	RSS, VMS   uint64
	CPUSeconds float64
}

// Of reads pid's usage.
func Of(pid int) (Usage, error) {
	p, err := process.NewProcess(int32(pid))
	if err != nil {
		return Usage{}, err
	}
	m, err := p.MemoryInfo()
	if err != nil {
		return Usage{}, err
	}
	t, err := p.Times()
	if err != nil {
		return Usage{}, err
	}
	return Usage{RSS: m.RSS, VMS: m.VMS, CPUSeconds: t.User + t.System}, nil
}

// Stop ends a started child process: an interrupt (SIGTERM by default,
// or what signal sends, e.g. closing its stdin), then up to grace for it
// to exit before it is killed. It returns once the process has been
// waited for.
func Stop(cmd *exec.Cmd, grace time.Duration, signal func() error) {
	if signal == nil {
		signal = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	}
	_ = signal()
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(grace):
		_ = cmd.Process.Kill()
		<-done
	}
}
