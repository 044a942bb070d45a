// Command leanrun sends with the lean client (bench/lean) against a running
// node and reports what the node spent on it: N lockstep producers on P
// partitions of a new topic (enforce_fsync with --fsync), B batches of
// 1000 x 1000 B each, then the send's MB/s, the node's CPU per MB (utime +
// stime of /proc/PID/stat) and its context switches per MB (every thread
// of /proc/PID/task). The stream is deleted afterwards, so several runs
// against one node measure it warm (docs/benchmarks.md, "Recycling in
// groups with backups"):
//
//	IGGY_SYSTEM_PATH=/dev/shm/lr IGGY_TCP_ADDRESS=127.0.0.1:39111 IGGY_QUIC_ENABLED=false \
//	  IGGY_WEBSOCKET_ENABLED=false IGGY_HTTP_ENABLED=false IGGY_ROOT_USERNAME=iggy \
//	  IGGY_ROOT_PASSWORD=iggy ./node & NODE=$!
//	go run ./cmd/leanrun --address 127.0.0.1:39111 --pid $NODE --producers 1 --batches 1000
//
// Linux only (procfs); a measurement tool, not part of the node.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"iggynode/bench/lean"
	"iggynode/client"
	"iggynode/wire"
)

const (
	messagesPerBatch = 1000
	messageSize      = 1000
)

// usage reads a process's CPU seconds and context switches from procfs.
func usage(pid int) (cpuSeconds float64, switches int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	// Fields after the command name, which may hold spaces: utime and
	// stime are the 14th and 15th of the line, in clock ticks (100/s).
	f := strings.Fields(string(b)[strings.LastIndex(string(b), ")")+2:])
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
	for _, t := range tasks {
		sb, err := os.ReadFile(t)
		if err != nil {
			continue // the thread ended
		}
		for _, l := range strings.Split(string(sb), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && (k == "voluntary_ctxt_switches" || k == "nonvoluntary_ctxt_switches") {
				n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				switches += n
			}
		}
	}
	return (utime + stime) / 100, switches, nil
}

func main() {
	addr := flag.String("address", "127.0.0.1:8090", "the node's TCP address")
	pid := flag.Int("pid", 0, "the node's process id (0: report no node usage)")
	producers := flag.Int("producers", 1, "producer connections, producer i on partition i mod --partitions")
	partitions := flag.Int("partitions", 1, "partitions of the topic")
	batches := flag.Int("batches", 100, "batches per producer")
	name := flag.String("stream", "leanrun", "the stream to create (and delete after)")
	fsync := flag.Bool("fsync", false, "create the topic with enforce_fsync")
	user := flag.String("username", "iggy", "the node's user")
	pass := flag.String("password", "iggy", "its password")
	flag.Parse()
	if err := run(*addr, *pid, *producers, *partitions, *batches, *name, *fsync, *user, *pass); err != nil {
		fmt.Fprintln(os.Stderr, "leanrun:", err)
		os.Exit(1)
	}
}

func run(addr string, pid, producers, partitions, batches int, name string, fsync bool, user, pass string) error {
	if producers < 1 || partitions < 1 || batches < 1 {
		return fmt.Errorf("--producers, --partitions and --batches must be at least 1")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	admin, err := client.Connect(ctx, client.Options{Address: addr, Username: user, Password: pass, NoDelay: true})
	if err != nil {
		return err
	}
	defer admin.Close()
	st, err := admin.CreateStream(ctx, name, nil)
	if err != nil {
		return err
	}
	defer admin.DeleteStream(context.Background(), wire.ID(st.ID))
	var opts wire.Options
	if fsync {
		opts = wire.Options{{Key: wire.OptEnforceFsync, Kind: wire.KindBool, Value: []byte{1}}}
	}
	t, err := admin.CreateTopic(ctx, wire.ID(st.ID), "t", uint32(partitions), opts)
	if err != nil {
		return err
	}
	// A new partition answers 58 until its group is up; the SDK replays it.
	for p := range uint32(partitions) {
		if _, err := admin.SendMessages(ctx, wire.ID(st.ID), wire.ID(t.ID), wire.PartitionID(p), []wire.Message{{Payload: []byte{'r'}}}); err != nil {
			return err
		}
	}
	conns := make([]*lean.Conn, producers)
	for i := range conns {
		c, err := lean.Dial(ctx, addr, user, pass)
		if err != nil {
			return err
		}
		defer c.Close()
		conns[i] = c
		if err := c.PrepareSend(st.ID, t.ID, uint32(i%partitions), messagesPerBatch, messageSize); err != nil {
			return err
		}
	}
	var cpu0 float64
	var sw0 int64
	if pid != 0 {
		if cpu0, sw0, err = usage(pid); err != nil {
			return err
		}
	}
	start := time.Now()
	errs := make(chan error, producers)
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Go(func() {
			for range batches {
				if _, err := c.Send(); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	mb := float64(producers*batches*messagesPerBatch*messageSize) / 1e6
	fmt.Printf("fsync %v producers %d partitions %d: %.0f MB/s", fsync, producers, partitions, mb/took.Seconds())
	if pid != 0 {
		cpu1, sw1, err := usage(pid)
		if err != nil {
			return err
		}
		fmt.Printf(", node cpu %.2f s = %.0f us/MB, context switches %.1f /MB", cpu1-cpu0, (cpu1-cpu0)*1e6/mb, float64(sw1-sw0)/mb)
	}
	fmt.Println()
	return nil
}
