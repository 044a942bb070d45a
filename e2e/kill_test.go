package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"iggynode/client"
	"iggynode/internal/faultcheck"
	"iggynode/wire"
)

// TestHelperNodeProcess is not a test: it is the child node process that
// TestKill9KeepsAcknowledgedWrites starts and kills.
func TestHelperNodeProcess(t *testing.T) {
	dir := os.Getenv("E2E_NODE_DIR")
	if dir == "" {
		t.Skip("helper process only")
	}
	serveUntilTerminated(startNodeIn(t, dir))
}

// serveUntilTerminated is the rest of a helper node process: it prints the
// client address its parent waits for, then serves until SIGTERM, until
// its parent is gone (its stdin, a pipe the parent holds, reaches EOF),
// or until the parent test's deadline (a parent that hangs alive). It
// once stopped after two minutes instead, and a five-node test that took
// 135 s under CI's race run found its first nodes gone before it read
// their copies.
func serveUntilTerminated(n interface {
	TCPAddr() string
	Close() error
}) {
	fmt.Printf("ADDR %s\n", n.TCPAddr())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM)
	orphaned := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(orphaned)
	}()
	var deadline <-chan time.Time // none: the parent runs without -test.timeout
	if d, err := time.Parse(time.RFC3339Nano, os.Getenv(parentDeadlineEnv)); err == nil {
		deadline = time.After(time.Until(d))
	}
	select {
	case <-sig:
	case <-orphaned:
	case <-deadline:
	}
	_ = n.Close()
}

// parentDeadlineEnv passes a helper process its parent test's deadline.
const parentDeadlineEnv = "E2E_PARENT_DEADLINE"

// streamWithTopic logs in as root at addr and creates stream (id 0) with
// topic "t" (id 0) of partitions partitions; the caller closes the client.
func streamWithTopic(t *testing.T, ctx context.Context, addr, stream string, partitions uint32) *client.Client {
	t.Helper()
	admin, err := client.Connect(ctx, client.Options{Address: addr, Username: "iggy", Password: "iggy"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CreateStream(ctx, stream, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CreateTopic(ctx, wire.ID(0), "t", partitions, nil); err != nil {
		t.Fatal(err)
	}
	return admin
}

// writerOptions are a fault test's writer: a leader-following root client
// whose requests give up after 3 s and that redials without end. Its
// login may take 30 s: ten writers logging in at once on a node that
// verifies one Argon2id at a time, under a parallel race run, took longer
// than 3 s each and, retried at 3 s, never got in.
func writerOptions(addr string) client.Options {
	return client.Options{Address: addr, Username: "iggy", Password: "iggy",
		RequestTimeout: 3 * time.Second, LoginTimeout: 30 * time.Second, Reconnect: client.ReconnectOptions{Retries: -1, Interval: 100 * time.Millisecond}}
}

func startChild(t *testing.T, dir string) (*exec.Cmd, string) {
	t.Helper()
	return startHelperProcess(t, "TestHelperNodeProcess", "E2E_NODE_DIR="+dir)
}

// startHelperProcess re-executes this test binary running only the helper
// test named (a node process configured by env) and waits for the client
// address it prints as "ADDR host:port".
func startHelperProcess(t *testing.T, helper string, env ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run", "^"+helper+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	if d, ok := t.Deadline(); ok {
		cmd.Env = append(cmd.Env, parentDeadlineEnv+"="+d.Format(time.RFC3339Nano))
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	// The child reads its stdin until EOF, which comes when this process
	// closes the pipe or dies: then it stops (serveUntilTerminated).
	parentAlive, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = parentAlive.Close() })
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	exited := make(chan struct{})
	var said []string // the child's first lines on stdout (a failed start's report)
	go func() {
		defer close(exited)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "ADDR "); ok {
				addr <- a
			} else if len(said) < 20 {
				said = append(said, sc.Text())
			}
		}
	}()
	// A child that fails to start (its port taken, its directory
	// unreadable) exits at once: it says so now with its status instead
	// of after the wait, and its stderr above says why.
	select {
	case a := <-addr:
		return cmd, a
	case <-exited:
		select {
		case a := <-addr:
			return cmd, a
		default:
		}
		t.Fatalf("%s exited before it served (%v), saying:\n%s", helper, cmd.Wait(), strings.Join(said, "\n"))
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("%s did not start within 60 s", helper)
	}
	return nil, ""
}

// Everything acknowledged survives kill -9 of the node mid-load: every
// acknowledged batch and offset is there after restart, identical
// (client-plane issue: storage). Writers keep sending while the process is
// killed; unacknowledged sends may or may not be present.
func TestKill9KeepsAcknowledgedWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	dir := t.TempDir()
	cmd, addr := startChild(t, dir)
	ctx := ctxWithin(t, 2*time.Minute)
	admin := streamWithTopic(t, ctx, addr, "crash", 2)
	if err := admin.StoreConsumerOffset(ctx, wire.SingleConsumer(wire.ID(9)), wire.ID(0), wire.ID(0), wire.Partition(0), 0, wire.AckQuorum); err == nil {
		t.Fatal("storing an offset on an empty partition must fail (4100)")
	}

	type acked struct {
		partition uint32
		base      uint64
		payloads  [][]byte
	}
	var mu sync.Mutex
	var acks []acked
	var offsetAcked uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			c, err := client.Connect(ctx, client.Options{Address: addr, Username: "iggy", Password: "iggy", RequestTimeout: 3 * time.Second})
			if err != nil {
				return
			}
			defer c.Close()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				msgs, payloads := faultcheck.Batch(uint64(w<<24 | i))
				conf, err := c.SendMessages(ctx, wire.ID(0), wire.ID(0), wire.PartitionID(uint32(w)), msgs)
				if err != nil {
					return
				}
				mu.Lock()
				acks = append(acks, acked{uint32(w), conf[0].BaseOffset, payloads})
				if w == 0 {
					off := conf[0].BaseOffset + 19
					if c.StoreConsumerOffset(ctx, wire.SingleConsumer(wire.ID(9)), wire.ID(0), wire.ID(0), wire.Partition(0), off, wire.AckQuorum) == nil {
						offsetAcked = off
					}
				}
				mu.Unlock()
			}
		}(w)
	}
	time.Sleep(1500 * time.Millisecond)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	close(stop)
	wg.Wait()
	_ = admin.Close()
	mu.Lock()
	defer mu.Unlock()
	if len(acks) < 10 {
		t.Fatalf("only %d batches acknowledged before the kill; the test did not load the node", len(acks))
	}

	n := startNodeIn(t, dir)
	defer n.Close()
	c := connect(t, n)
	for _, a := range acks {
		p, err := c.PollMessages(ctx, wire.SingleConsumer(wire.ID(1)), wire.ID(0), wire.ID(0), wire.Partition(a.partition),
			wire.OffsetStrategy(a.base), uint32(len(a.payloads)), false)
		if err != nil {
			t.Fatalf("poll after restart: %v", err)
		}
		got := client.Messages(p)
		if len(got) != len(a.payloads) {
			t.Fatalf("partition %d offset %d: %d of %d acknowledged messages survived", a.partition, a.base, len(got), len(a.payloads))
		}
		for i, m := range got {
			if m.Offset != a.base+uint64(i) || !bytes.Equal(m.Payload, a.payloads[i]) {
				t.Fatalf("partition %d offset %d: message differs after kill -9", a.partition, m.Offset)
			}
		}
	}
	if offsetAcked > 0 {
		off, err := c.GetConsumerOffset(ctx, wire.SingleConsumer(wire.ID(9)), wire.ID(0), wire.ID(0), wire.Partition(0))
		if err != nil || off == nil || off.StoredOffset < offsetAcked {
			t.Fatalf("acknowledged offset %d lost: %+v %v", offsetAcked, off, err)
		}
	}
	t.Logf("%d acknowledged batches verified after kill -9", len(acks))
	_ = context.Background
}

// A cluster of one killed with a consumer-group member connected ends that
// member's session when it restarts: no connection of the old process can
// come back to time it out, so a member of the new run owns every
// partition (server-behaviour.md 8.5).
func TestKill9EndsTheSessionsOfThePreviousRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	dir := t.TempDir()
	cmd, addr := startChild(t, dir)
	ctx := ctxWithin(t, time.Minute)
	admin := streamWithTopic(t, ctx, addr, "orphans", 2)
	defer admin.Close()
	if _, err := admin.CreateConsumerGroup(ctx, wire.ID(0), wire.ID(0), "g"); err != nil {
		t.Fatal(err)
	}
	member, err := client.Connect(ctx, client.Options{Address: addr, Username: "iggy", Password: "iggy"})
	if err != nil {
		t.Fatal(err)
	}
	defer member.Close()
	if err := member.JoinConsumerGroup(ctx, wire.ID(0), wire.ID(0), wire.Named("g")); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	n := startNodeIn(t, dir)
	defer n.Close()
	next := connect(t, n)
	if err := next.JoinConsumerGroup(ctx, wire.ID(0), wire.ID(0), wire.Named("g")); err != nil {
		t.Fatal(err)
	}
	sync, err := next.SyncConsumerGroup(ctx, wire.ID(0), wire.ID(0), wire.Named("g"))
	if err != nil || len(sync.Partitions) != 2 {
		t.Fatalf("the only member of the new run owns %+v (%v), want both partitions", sync, err)
	}
}
