// Package scale measures a loopback cluster of node processes as its
// partition count grows (issue 16): per node idle CPU and RSS, the time to
// create the partitions, and send MB/s to one partition against a second
// cluster of the same nodes with that one partition only, the two sending
// in turn (Rounds each, medians compared: the machine's speed drifts, the
// ratio in one run is what counts); then, optionally, the time for writes
// to a sample of partitions to succeed again after the leader's node is
// killed, and after the whole cluster restarts.
//
// It builds ./cmd/node from Source, starts Nodes processes on free
// loopback ports with their data in a temporary directory (or Dir), and
// drives them with the Go SDK. Every step is bounded by the context.
//
//	go run ./cmd/bench scale --partitions 2000,10000 --kill --restart
package scale

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	"iggynode/bench"
	"iggynode/bench/nodeproc"
	"iggynode/client"
	"iggynode/wire"
)

// Config is one scale run.
type Config struct {
	Source     string // repository root (default ".")
	Dir        string // data and binary directory (default: a temporary one, removed)
	Nodes      int    // default 3
	Partitions []int  // partition totals to reach, in increasing order
	PerTopic   int    // partitions per created topic (default 1000)
	Idle       time.Duration
	// Send: one producer, Batches batches of MessagesPerBatch x MessageSize.
	Batches, MessagesPerBatch, MessageSize int
	Rounds                                 int  // alternating send rounds per step (default 3)
	Kill, Restart                          bool // measure recovery after killing node 0, after restarting every node
	Sample                                 int  // partitions written after a kill or restart (default 50)
	Env                                    []string
	Log                                    io.Writer
}

// Step is the cluster at one partition total.
type Step struct {
	Partitions    int       `json:"partitions"`
	CreateSeconds float64   `json:"create_seconds"`
	IdleCPU       []float64 `json:"idle_cpu_percent"` // per node, % of one core
	RSSMiB        []float64 `json:"rss_mib"`
	SendMBps      float64   `json:"send_mb_per_s"`      // median over the rounds
	RefMBps       float64   `json:"reference_mb_per_s"` // the one-partition cluster's median, same rounds
}

// Result is a whole run.
type Result struct {
	Steps []Step `json:"steps"` // the first is the cluster with one partition
	// KillSeconds: from SIGKILL of node 0 to the last sampled partition
	// taking a write; RestartSeconds: from the last node up again to the
	// same (0: not measured).
	KillSeconds    float64 `json:"kill_seconds,omitempty"`
	RestartSeconds float64 `json:"restart_seconds,omitempty"`
}

func (c *Config) defaults() {
	if c.Source == "" {
		c.Source = "."
	}
	if c.Nodes == 0 {
		c.Nodes = 3
	}
	if c.PerTopic == 0 {
		c.PerTopic = 1000
	}
	if c.Idle == 0 {
		c.Idle = 20 * time.Second
	}
	if c.Batches == 0 {
		c.Batches = 300
	}
	if c.MessagesPerBatch == 0 {
		c.MessagesPerBatch = 1000
	}
	if c.MessageSize == 0 {
		c.MessageSize = 1000
	}
	if c.Sample == 0 {
		c.Sample = 50
	}
	if c.Rounds == 0 {
		c.Rounds = 3
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
}

type cluster struct {
	ref   *cluster // the one-partition cluster sends are compared with
	cfg   Config
	bin   string
	dir   string
	nodes []*exec.Cmd
	addrs []string // client TCP
	env   [][]string
}

// Run runs the steps of cfg.
func Run(ctx context.Context, cfg Config) (Result, error) {
	cfg.defaults()
	dir := cfg.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "scale-")
		if err != nil {
			return Result{}, err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	bin := filepath.Join(dir, "node")
	if err := nodeproc.Build(ctx, cfg.Source, bin, cfg.Log); err != nil {
		return Result{}, err
	}
	c := &cluster{cfg: cfg, dir: filepath.Join(dir, "scale"), bin: bin}
	ref := &cluster{cfg: cfg, dir: filepath.Join(dir, "reference"), bin: bin}
	for _, cl := range []*cluster{c, ref} {
		if err := cl.configure(); err != nil {
			return Result{}, err
		}
		defer cl.stopAll()
		for i := range cl.nodes {
			if err := cl.start(ctx, i); err != nil {
				return Result{}, err
			}
		}
	}
	c.ref = ref
	admin, err := c.connect(ctx, 0)
	if err != nil {
		return Result{}, err
	}
	defer admin.Close()
	var res Result
	base, err := c.measure(ctx, 1, 0)
	if err != nil {
		return res, err
	}
	res.Steps = append(res.Steps, base)
	fmt.Fprintf(cfg.Log, "1 partition: %+v\n", base)
	have, topics := 0, 0
	for _, total := range cfg.Partitions {
		start := time.Now()
		for have < total {
			n := min(cfg.PerTopic, total-have)
			topics++
			if err := createTopic(ctx, admin, fmt.Sprintf("scale-%d", topics), uint32(n)); err != nil {
				return res, err
			}
			have += n
		}
		// The last topic's partitions take a write: their groups are up.
		if err := writeSample(ctx, admin, topics, cfg.PerTopic, 5, time.Minute); err != nil {
			return res, err
		}
		step, err := c.measure(ctx, total, time.Since(start))
		if err != nil {
			return res, err
		}
		res.Steps = append(res.Steps, step)
		fmt.Fprintf(cfg.Log, "%d partitions: %+v\n", total, step)
	}
	if cfg.Kill && topics > 0 {
		if res.KillSeconds, err = c.killLeader(ctx, topics); err != nil {
			return res, err
		}
		fmt.Fprintf(cfg.Log, "leader killed: %d partitions took writes again after %.1f s\n", cfg.Sample, res.KillSeconds)
	}
	if cfg.Restart && topics > 0 {
		if res.RestartSeconds, err = c.restartAll(ctx, topics); err != nil {
			return res, err
		}
		fmt.Fprintf(cfg.Log, "whole cluster restarted: %d partitions took writes again %.1f s after the last node was up\n", cfg.Sample, res.RestartSeconds)
	}
	return res, nil
}

// configure picks ports and each node's environment.
func (c *cluster) configure() error {
	n := c.cfg.Nodes
	ports, err := nodeproc.FreePorts(2 * n)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return err
	}
	c.nodes, c.addrs, c.env = make([]*exec.Cmd, n), make([]string, n), make([][]string, n)
	common := []string{"IGGY_CLUSTER_ENABLED=true", "IGGY_CLUSTER_NAME=scale", "IGGY_QUIC_ENABLED=false",
		"IGGY_WEBSOCKET_ENABLED=false", "IGGY_HTTP_ENABLED=false",
		"IGGY_CLUSTER_AUTH_ENABLED=true", "IGGY_CLUSTER_AUTH_SHARED_SECRET=scale-benchmark-shared-secret-0123456789"}
	for j := 0; j < n; j++ {
		p := fmt.Sprintf("IGGY_CLUSTER_NODES_%d_", j)
		common = append(common, p+"NAME=node"+strconv.Itoa(j), p+"IP=127.0.0.1", p+"REPLICA_ID="+strconv.Itoa(j),
			p+"PORTS_TCP="+ports[2*j], p+"PORTS_TCP_REPLICA="+ports[2*j+1])
	}
	for i := 0; i < n; i++ {
		c.addrs[i] = "127.0.0.1:" + ports[2*i]
		c.env[i] = append(append([]string{"IGGY_SYSTEM_PATH=" + filepath.Join(c.dir, "node"+strconv.Itoa(i)),
			"IGGY_TCP_ADDRESS=" + c.addrs[i], "IGGY_CLUSTER_REPLICA_ID=" + strconv.Itoa(i)}, common...), c.cfg.Env...)
	}
	return nil
}

func (c *cluster) start(ctx context.Context, i int) error {
	cmd := exec.Command(c.bin)
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), c.env[i]...)
	// Each node's log, appended over restarts (kept with --dir).
	logFile, err := os.OpenFile(filepath.Join(c.dir, fmt.Sprintf("node%d.log", i)), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return err
	}
	_ = logFile.Close() // the child holds its own descriptor
	c.nodes[i] = cmd
	return nodeproc.WaitListening(ctx, c.addrs[i])
}

func (c *cluster) kill(i int) {
	if cmd := c.nodes[i]; cmd != nil {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		c.nodes[i] = nil
	}
}

func (c *cluster) stopAll() {
	for i, cmd := range c.nodes {
		if cmd == nil {
			continue
		}
		nodeproc.Stop(cmd, 30*time.Second, nil)
		c.nodes[i] = nil
	}
}

func (c *cluster) connect(ctx context.Context, i int) (*client.Client, error) {
	return client.Connect(ctx, client.Options{Address: c.addrs[i], Username: bench.DefaultUsername,
		Password: bench.DefaultPassword, RequestTimeout: 30 * time.Second})
}

// measure samples idle CPU and RSS of every node, then sends to the
// one-partition stream.
func (c *cluster) measure(ctx context.Context, partitions int, created time.Duration) (Step, error) {
	s := Step{Partitions: partitions, CreateSeconds: created.Seconds()}
	time.Sleep(5 * time.Second) // let creation and its quiescence settle
	before := make([]float64, len(c.nodes))
	for i, cmd := range c.nodes {
		u, _ := nodeproc.Of(cmd.Process.Pid)
		before[i] = u.CPUSeconds
	}
	t0 := time.Now()
	select {
	case <-ctx.Done():
		return s, ctx.Err()
	case <-time.After(c.cfg.Idle):
	}
	wall := time.Since(t0).Seconds()
	for i, cmd := range c.nodes {
		u, err := nodeproc.Of(cmd.Process.Pid)
		if err != nil {
			return s, err
		}
		s.IdleCPU = append(s.IdleCPU, 100*(u.CPUSeconds-before[i])/wall)
		s.RSSMiB = append(s.RSSMiB, float64(u.RSS)/(1<<20))
	}
	var mine, theirs []float64
	for range c.cfg.Rounds {
		for _, cl := range []*cluster{c.ref, c} {
			mbps, err := cl.send(ctx)
			if err != nil {
				return s, fmt.Errorf("send at %d partitions: %w", partitions, err)
			}
			if cl == c {
				mine = append(mine, mbps)
			} else {
				theirs = append(theirs, mbps)
			}
			fmt.Fprintf(c.cfg.Log, "  send round: %s %.0f MB/s\n", map[bool]string{true: "scale", false: "reference"}[cl == c], mbps)
		}
	}
	s.SendMBps, s.RefMBps = median(mine), median(theirs)
	return s, nil
}

// send is one producer's MB/s to the one-partition stream bench-1.
func (c *cluster) send(ctx context.Context) (float64, error) {
	rep, err := bench.Run(ctx, bench.Config{Address: c.addrs[0], Producers: 1, Streams: 1, PartitionsPerTopic: 1,
		MessageSize: c.cfg.MessageSize, MessagesPerBatch: c.cfg.MessagesPerBatch, BatchCount: c.cfg.Batches,
		Workload: bench.WorkloadPinnedProducer})
	if err != nil {
		return 0, err
	}
	return float64(rep.Producers.PayloadBytes) / 1e6 / rep.Producers.Duration.Seconds(), nil
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// createTopic creates a stream holding one topic of n partitions.
func createTopic(ctx context.Context, c *client.Client, name string, n uint32) error {
	st, err := c.CreateStream(ctx, name, nil)
	if err != nil {
		return fmt.Errorf("create stream %s: %w", name, err)
	}
	if _, err := c.CreateTopic(ctx, wire.ID(st.ID), "t", n, nil); err != nil {
		return fmt.Errorf("create topic of %d partitions in %s: %w", n, name, err)
	}
	return nil
}

// writeSample writes one message to count partitions picked at random
// over the scale topics, retrying each until it succeeds or limit passes.
func writeSample(ctx context.Context, c *client.Client, topics, perTopic, count int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for k := 0; k < count; k++ {
		name := fmt.Sprintf("scale-%d", 1+rand.IntN(topics))
		part := uint32(rand.IntN(perTopic))
		for {
			_, err := c.SendMessages(ctx, wire.Named(name), wire.Named("t"), wire.PartitionID(part),
				[]wire.Message{client.NewMessage([]byte("sample"))})
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("partition %d of %s takes no write after %v: %w", part, name, limit, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}

// killLeader SIGKILLs node 0 and times writes to a sample of partitions
// through node 1.
func (c *cluster) killLeader(ctx context.Context, topics int) (float64, error) {
	c.kill(0)
	start := time.Now()
	cl, err := c.connectAny(ctx, 1)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	if err := writeSample(ctx, cl, topics, c.cfg.PerTopic, c.cfg.Sample, 3*time.Minute); err != nil {
		return 0, err
	}
	took := time.Since(start).Seconds()
	return took, c.start(ctx, 0)
}

// restartAll kills every node, starts them again and times writes to a
// sample of partitions from the last node's start.
func (c *cluster) restartAll(ctx context.Context, topics int) (float64, error) {
	for i := range c.nodes {
		c.kill(i)
	}
	for i := range c.nodes {
		if err := c.start(ctx, i); err != nil {
			return 0, err
		}
	}
	start := time.Now()
	cl, err := c.connectAny(ctx, 0)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	if err := writeSample(ctx, cl, topics, c.cfg.PerTopic, c.cfg.Sample, 3*time.Minute); err != nil {
		return 0, err
	}
	return time.Since(start).Seconds(), nil
}

// connectAny logs in to node i, retrying while the cluster elects.
func (c *cluster) connectAny(ctx context.Context, i int) (*client.Client, error) {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		cl, err := c.connect(ctx, i)
		if err == nil || time.Now().After(deadline) {
			return cl, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}
