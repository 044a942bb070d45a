// Package ceilings measures, in one run and on one machine, how far the
// node is from what the machine allows (cmd/bench ceilings,
// docs/benchmarks.md "Ceilings", issue 20):
//
//   - the transport ceiling: the lean client (package bench/lean, the
//     framing and nothing else) against the plain sink (bench.Sink, which
//     answers and stores nothing);
//   - the storage ceiling: the lean client against a storing sink, which
//     appends every batch to a file per partition before it replies (and,
//     with Fsync, syncs it): the least a server that keeps its data does;
//   - the SDK's cost: our SDK (bench.Run, what cmd/bench --sink runs)
//     against the plain sink, beside the lean client there;
//   - the node: the lean client and the SDK against a node (Address, or a
//     node process this package starts), and with Fsync against a topic
//     with enforce_fsync.
//
// The sinks run inside this process beside the clients, or, with
// SinkCommand (cmd/bench ceilings does so by default), as child processes,
// as the node does: then the clients' process runs nothing but clients,
// and the node's figures compare with the sinks' on equal terms.
//
// The plain sink and the node first serve one lean measurement that is
// not kept (a warm-up). Every line is measured once per round, rounds alternate (a round runs
// every line, every other round in reverse order), and each figure
// reported is the median over the rounds.
// A ratio is computed within each round, from figures measured minutes
// apart at most, and its median is reported: the machine's speed drifts
// (a shared VM), the ratio much less.
//
// A measurement sends Batches batches of Messages x Size bytes from each of
// Producers connections (producer i on partition i mod Partitions of one
// topic), then polls them back with as many connections, each reading
// Batches x Messages messages of its partition from offset 0 in polls of
// Messages. Send MB/s and poll MB/s count payload bytes over the span from
// the first connection's start to the last one's end; send p99 is over
// every batch of every connection. On a node every measurement writes a
// stream of its own, deleted afterwards; the storing sink's directory is
// emptied after each. A node's new partitions each take one 1-byte
// message before the measurement (a new partition answers S 58 until its
// group is up); the lean client's polls start after it, so they take
// whole batches as the sink's canned ones are (the SDK's consumers, from
// offset 0, read it with the rest and slice every batch). The lean
// client then polls it all again from offset 0 (the sliced poll figure):
// each of those polls slices two batches, which the sink's canned reply
// never does, so its ratio says what slicing costs. The storing sink does not
// serve what it stored, so its lines have no poll figure, nor have the
// fsync lines (polls do not sync). NodeEnv configures a started node:
// IGGY_PARTITION_MEMORY_BUDGET below what a measurement writes makes its
// polls read evicted batches from the segment files (cold polls).
//
// BaseProducers adds the storing sink's line and the node's with that many
// connections sending the same bytes, interleaved with the others in
// every round, and the ratios of Producers over them: how the node scales
// with producers, beside how the storing sink does, in one run.
package ceilings

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"iggynode/bench"
	"iggynode/bench/lean"
	"iggynode/bench/nodeproc"
	"iggynode/client"
	"iggynode/wire"
)

// Config is one ceilings run. Zero fields take the defaults in brackets.
type Config struct {
	Rounds     int `json:"rounds"`     // alternating rounds [3]
	Messages   int `json:"messages"`   // messages per batch [1000]
	Size       int `json:"size"`       // payload bytes per message [1000]
	Batches    int `json:"batches"`    // batches per producer [200]
	Producers  int `json:"producers"`  // connections [1]
	Partitions int `json:"partitions"` // partitions of the topic [Producers]
	// BaseProducers, when set, adds the node's lines and the storing
	// sink's with that many connections sending the same bytes
	// (Batches x Producers / BaseProducers batches each), and the ratios
	// of Producers over them: whether more producers are slower, in one
	// run ("16 producers on one partition at least the 4-producer
	// figure").
	BaseProducers int `json:"base_producers,omitempty"`
	// Dir holds the storing sink's files (a subdirectory per
	// measurement, removed after it) and a started node's data; "" is a
	// temporary directory. Put it on tmpfs to measure the code, not the
	// disk.
	Dir string `json:"dir"`
	// Fsync adds the synced lines: storing sink with StoreFsync, node
	// topic with enforce_fsync.
	Fsync bool `json:"fsync"`
	// Address is a running node to measure (root iggy/iggy unless
	// Username/Password say otherwise); empty with StartNode false: sinks
	// only.
	Address            string `json:"address,omitempty"`
	Username, Password string `json:"-"`
	// StartNode starts a node process for the run: NodeBin, or ./cmd/node
	// built from Source, on a free loopback port with its data under Dir.
	StartNode bool   `json:"start_node,omitempty"`
	NodeBin   string `json:"node_bin,omitempty"`
	Source    string `json:"-"`
	// NodeEnv are extra KEY=VALUE settings (IGGY_*) of a started node.
	NodeEnv []string `json:"node_env,omitempty"`
	// SinkCommand, when set, runs every sink as a child process, as the
	// node runs, instead of inside this process beside the clients: the
	// command and its first arguments, to which "--poll-size N" and, for
	// a storing sink, "--store-dir D" and "--fsync" are added. The child
	// prints "sink listening on ADDR" on its first stdout line and serves
	// until its stdin closes (cmd/bench sink does).
	SinkCommand []string `json:"sink_command,omitempty"`
	// Log gets progress lines; nil discards them.
	Log io.Writer `json:"-"`
}

func (c *Config) defaults() {
	if c.Rounds <= 0 {
		c.Rounds = 3
	}
	if c.Messages <= 0 {
		c.Messages = 1000
	}
	if c.Size <= 0 {
		c.Size = 1000
	}
	if c.Batches <= 0 {
		c.Batches = 200
	}
	if c.Producers <= 0 {
		c.Producers = 1
	}
	if c.Partitions <= 0 {
		c.Partitions = c.Producers
	}
	if c.BaseProducers == c.Producers {
		c.BaseProducers = 0
	}
	if c.Username == "" && c.Password == "" {
		c.Username, c.Password = bench.DefaultUsername, bench.DefaultPassword
	}
	if c.Source == "" {
		c.Source = "."
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
}

// Figures is one line's measurement (one round, or the medians).
type Figures struct {
	SendMBps  float64 `json:"send_mb_per_s"`
	SendP99Ms float64 `json:"send_p99_ms"`
	PollMBps  float64 `json:"poll_mb_per_s,omitempty"` // 0: not measured
	// SlicedPollMBps is the lean client's second poll of a node, from
	// offset 0: every poll slices two batches. 0: not measured.
	SlicedPollMBps float64 `json:"sliced_poll_mb_per_s,omitempty"`
}

func sendOf(f Figures) float64       { return f.SendMBps }
func sendP99Of(f Figures) float64    { return f.SendP99Ms }
func pollOf(f Figures) float64       { return f.PollMBps }
func slicedPollOf(f Figures) float64 { return f.SlicedPollMBps }

// Line is one client against one target.
type Line struct {
	Name   string    `json:"name"`
	Rounds []Figures `json:"rounds"`
	Median Figures   `json:"median"`
}

// Ratio is a quotient of two lines' figures, per round and its median.
type Ratio struct {
	Name   string    `json:"name"`
	Rounds []float64 `json:"rounds"`
	Median float64   `json:"median"`
}

// Result is what a run measured.
type Result struct {
	Config Config  `json:"config"`
	Lines  []Line  `json:"lines"`
	Ratios []Ratio `json:"ratios"`
}

// Line names.
const (
	LeanSink        = "lean -> sink"
	LeanStoring     = "lean -> storing sink"
	LeanStoringSync = "lean -> storing sink, fsync"
	SDKSink         = "sdk -> sink"
	LeanNode        = "lean -> node"
	SDKNode         = "sdk -> node"
	LeanNodeSync    = "lean -> node, enforce_fsync"
	SDKNodeSync     = "sdk -> node, enforce_fsync"
	// The lines with BaseProducers connections.
	LeanStoringBase = "lean -> storing sink, base"
	LeanNodeBase    = "lean -> node, base"
	SDKNodeBase     = "sdk -> node, base"
)

// ratioSpec is a ratio of num's figure over den's (the same figure of
// both, unless denFigure says otherwise).
type ratioSpec struct {
	name, num, den    string
	figure, denFigure func(Figures) float64
}

var ratioSpecs = []ratioSpec{
	{"send: storing sink / sink (lean)", LeanStoring, LeanSink, sendOf, nil},
	{"send: storing sink fsync / sink (lean)", LeanStoringSync, LeanSink, sendOf, nil},
	{"send: SDK-sink / lean-sink", SDKSink, LeanSink, sendOf, nil},
	{"poll: SDK-sink / lean-sink", SDKSink, LeanSink, pollOf, nil},
	{"send: node / storing sink (lean)", LeanNode, LeanStoring, sendOf, nil},
	{"send: node / storing sink (SDK on node)", SDKNode, LeanStoring, sendOf, nil},
	{"send: node fsync / storing sink fsync (lean)", LeanNodeSync, LeanStoringSync, sendOf, nil},
	{"send: node fsync / storing sink fsync (SDK on node)", SDKNodeSync, LeanStoringSync, sendOf, nil},
	{"send: SDK-node / lean-node", SDKNode, LeanNode, sendOf, nil},
	{"send p99: node / storing sink (lean; lower is better)", LeanNode, LeanStoring, sendP99Of, nil},
	{"send p99: storing sink / sink (lean; lower is better)", LeanStoring, LeanSink, sendP99Of, nil},
	{"poll: node / sink (lean)", LeanNode, LeanSink, pollOf, nil},
	{"poll: node sliced / sink (lean)", LeanNode, LeanSink, slicedPollOf, pollOf},
	{"poll: node / sink (SDK)", SDKNode, SDKSink, pollOf, nil},
	{"send: storing sink / with base producers (lean)", LeanStoring, LeanStoringBase, sendOf, nil},
	{"send: node / with base producers (lean)", LeanNode, LeanNodeBase, sendOf, nil},
	{"send: node / with base producers (SDK)", SDKNode, SDKNodeBase, sendOf, nil},
}

// load is how many connections a measurement opens and how many batches
// each sends.
type load struct{ producers, batches int }

// baseLoad is the base lines' load: BaseProducers connections sending
// what the full load sends (zero without BaseProducers).
func (c Config) baseLoad() load {
	if c.BaseProducers <= 0 {
		return load{}
	}
	return load{c.BaseProducers, max(1, c.Batches*c.Producers/c.BaseProducers)}
}

// runner holds what the measurements share.
type runner struct {
	cfg   Config
	full  load // Producers x Batches
	base  load // BaseProducers, the same bytes; zero without
	dir   string
	sink  string // the plain sink's address
	node  string // node address, "" without one
	admin *client.Client
	seq   int    // numbers the node streams and store directories
	tag   string // tells this run's streams from an earlier run's on the same node
}

// Run measures cfg's lines for cfg.Rounds rounds. ctx bounds it all.
func Run(ctx context.Context, cfg Config) (Result, error) {
	cfg.defaults()
	res := Result{Config: cfg}
	if cfg.Partitions > 1000 || cfg.Messages*(lean.FrameHeaderSize+cfg.Size)+1024 > lean.MaxFrameSize {
		return res, fmt.Errorf("ceilings: %d partitions, batches of %d x %d B: out of range", cfg.Partitions, cfg.Messages, cfg.Size)
	}
	r := &runner{cfg: cfg, dir: cfg.Dir, tag: strconv.FormatInt(time.Now().UnixMilli()%(1<<31), 36),
		full: load{cfg.Producers, cfg.Batches}, base: cfg.baseLoad()}
	if r.dir == "" {
		d, err := os.MkdirTemp("", "ceilings-")
		if err != nil {
			return res, err
		}
		defer os.RemoveAll(d)
		r.dir = d
	} else if err := os.MkdirAll(r.dir, 0o755); err != nil {
		return res, err
	}
	sink, stopSink, err := r.startSink(ctx, bench.SinkOptions{PollMessageSize: cfg.Size})
	if err != nil {
		return res, err
	}
	defer stopSink()
	r.sink = sink
	r.node = cfg.Address
	if cfg.StartNode {
		addr, stop, err := startNode(ctx, cfg, r.dir)
		if err != nil {
			return res, err
		}
		defer stop()
		r.node = addr
	}
	if r.node != "" {
		admin, err := client.Connect(ctx, client.Options{Address: r.node, Username: cfg.Username, Password: cfg.Password, NoDelay: true})
		if err != nil {
			return res, fmt.Errorf("ceilings: node %s: %w", r.node, err)
		}
		defer admin.Close()
		r.admin = admin
	}
	lines := r.lines()
	// The long-lived targets first serve one measurement that is not
	// kept: a fresh process's first megabytes fault in its heap and
	// grow its buffers, which the node's first line of round 1 paid
	// alone (282 MB/s where round 2 measured 991 on a quiet machine).
	for _, l := range lines {
		if l.name == LeanSink || l.name == LeanNode {
			f, err := l.measure(ctx)
			if err != nil {
				return res, fmt.Errorf("ceilings: warm-up, %s: %w", l.name, err)
			}
			fmt.Fprintf(cfg.Log, "warm-up: %-28s %s\n", l.name, f.text())
		}
	}
	for round := range cfg.Rounds {
		for k := range lines {
			i := k
			if round%2 == 1 {
				i = len(lines) - 1 - k // every other round backwards: a drift weighs on every line alike
			}
			f, err := lines[i].measure(ctx)
			if err != nil {
				return res, fmt.Errorf("ceilings: round %d, %s: %w", round+1, lines[i].name, err)
			}
			fmt.Fprintf(cfg.Log, "round %d: %-28s %s\n", round+1, lines[i].name, f.text())
			lines[i].figures = append(lines[i].figures, f)
		}
	}
	for _, l := range lines {
		res.Lines = append(res.Lines, Line{Name: l.name, Rounds: l.figures, Median: medians(l.figures)})
	}
	res.Ratios = ratios(lines)
	return res, nil
}

// ratios computes every ratio whose two lines ran, round by round.
func ratios(lines []plannedLine) []Ratio {
	byName := map[string]*plannedLine{}
	for i := range lines {
		byName[lines[i].name] = &lines[i]
	}
	var out []Ratio
	for _, s := range ratioSpecs {
		num, den := byName[s.num], byName[s.den]
		if num == nil || den == nil {
			continue
		}
		denFigure := s.denFigure
		if denFigure == nil {
			denFigure = s.figure
		}
		rt := Ratio{Name: s.name}
		for i := range num.figures {
			rt.Rounds = append(rt.Rounds, s.figure(num.figures[i])/denFigure(den.figures[i]))
		}
		rt.Median = median(rt.Rounds)
		out = append(out, rt)
	}
	return out
}

// plannedLine is a line with its measurement and what it measured so far.
type plannedLine struct {
	name    string
	measure func(context.Context) (Figures, error)
	figures []Figures
}

// lines lists the measurements of this run, in the order a round runs
// them.
func (r *runner) lines() []plannedLine {
	full, base := r.full, r.base
	ls := []plannedLine{
		{name: LeanSink, measure: func(ctx context.Context) (Figures, error) { return r.lean(ctx, full, r.sink, 0, 0, 0, pollWhole) }},
		{name: LeanStoring, measure: func(ctx context.Context) (Figures, error) { return r.storing(ctx, full, false) }},
	}
	if base.producers > 0 {
		ls = append(ls, plannedLine{name: LeanStoringBase, measure: func(ctx context.Context) (Figures, error) { return r.storing(ctx, base, false) }})
	}
	if r.cfg.Fsync {
		ls = append(ls, plannedLine{name: LeanStoringSync, measure: func(ctx context.Context) (Figures, error) { return r.storing(ctx, full, true) }})
	}
	ls = append(ls, plannedLine{name: SDKSink, measure: func(ctx context.Context) (Figures, error) { return r.sdk(ctx, full, r.sink, "") }})
	if r.node == "" {
		return ls
	}
	ls = append(ls,
		plannedLine{name: LeanNode, measure: func(ctx context.Context) (Figures, error) { return r.leanNode(ctx, full, false) }},
		plannedLine{name: SDKNode, measure: func(ctx context.Context) (Figures, error) { return r.sdkNode(ctx, full, false) }})
	if base.producers > 0 {
		ls = append(ls,
			plannedLine{name: LeanNodeBase, measure: func(ctx context.Context) (Figures, error) { return r.leanNode(ctx, base, false) }},
			plannedLine{name: SDKNodeBase, measure: func(ctx context.Context) (Figures, error) { return r.sdkNode(ctx, base, false) }})
	}
	if r.cfg.Fsync {
		ls = append(ls,
			plannedLine{name: LeanNodeSync, measure: func(ctx context.Context) (Figures, error) { return r.leanNode(ctx, full, true) }},
			plannedLine{name: SDKNodeSync, measure: func(ctx context.Context) (Figures, error) { return r.sdkNode(ctx, full, true) }})
	}
	return ls
}

// startSink starts a sink with o's poll size and store, in this process or
// (SinkCommand) as a child, and returns its address and its stop.
func (r *runner) startSink(ctx context.Context, o bench.SinkOptions) (string, func(), error) {
	o.PollMessageSize = r.cfg.Size
	if len(r.cfg.SinkCommand) == 0 {
		s, err := bench.StartSinkWith("127.0.0.1:0", o)
		if err != nil {
			return "", nil, err
		}
		return s.Addr(), s.Close, nil
	}
	args := append(slices.Clone(r.cfg.SinkCommand[1:]), "--poll-size", strconv.Itoa(o.PollMessageSize))
	if o.StoreDir != "" {
		args = append(args, "--store-dir", o.StoreDir)
	}
	if o.StoreFsync {
		args = append(args, "--fsync")
	}
	return StartSinkProcess(ctx, r.cfg.SinkCommand[0], args, r.cfg.Log)
}

// SinkListening is the line a sink process prints first, before its
// address.
const SinkListening = "sink listening on "

// StartSinkProcess runs bin with args, reads the sink's address from the
// first line of its stdout (SinkListening ADDR) within a minute, and
// returns it with a stop that closes the child's stdin and waits for it to
// exit (killing it after 30 s). The child's stderr goes to log.
func StartSinkProcess(ctx context.Context, bin string, args []string, log io.Writer) (string, func(), error) {
	cmd := exec.Command(bin, args...)
	cmd.Stderr = log
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return "", nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop := func() { nodeproc.Stop(cmd, 30*time.Second, stdin.Close) }
	line := make(chan string, 1)
	go func() {
		first, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- first
		_, _ = io.Copy(io.Discard, stdout) // until the child exits
	}()
	select {
	case first := <-line:
		addr, ok := strings.CutPrefix(strings.TrimSpace(first), SinkListening)
		if !ok {
			stop()
			return "", nil, fmt.Errorf("sink process %s: first line %q", bin, first)
		}
		return addr, stop, nil
	case <-ctx.Done():
		stop()
		return "", nil, ctx.Err()
	case <-time.After(time.Minute):
		stop()
		return "", nil, fmt.Errorf("sink process %s: no address within a minute", bin)
	}
}

// storing measures the lean client against a storing sink writing into a
// fresh subdirectory of Dir, removed afterwards.
func (r *runner) storing(ctx context.Context, l load, fsync bool) (Figures, error) {
	r.seq++
	dir := filepath.Join(r.dir, fmt.Sprintf("store-%d", r.seq))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Figures{}, err
	}
	defer os.RemoveAll(dir)
	addr, stop, err := r.startSink(ctx, bench.SinkOptions{StoreDir: dir, StoreFsync: fsync})
	if err != nil {
		return Figures{}, err
	}
	f, err := r.lean(ctx, l, addr, 0, 0, 0, noPoll)
	stop() // its files closed: every byte is in them
	if err != nil {
		return f, err
	}
	want := int64(l.producers) * int64(l.batches) * int64(lean.BatchHeaderSize+r.cfg.Messages*(lean.FrameHeaderSize+r.cfg.Size))
	if got := dirBytes(dir); got != want {
		return f, fmt.Errorf("the storing sink holds %d bytes, want %d", got, want)
	}
	return f, nil
}

// dirBytes sums the sizes of the files in dir.
func dirBytes(dir string) int64 {
	entries, _ := os.ReadDir(dir)
	var n int64
	for _, e := range entries {
		if info, err := e.Info(); err == nil {
			n += info.Size()
		}
	}
	return n
}

// leanNode measures the lean client against the node on a fresh stream.
func (r *runner) leanNode(ctx context.Context, l load, fsync bool) (Figures, error) {
	stream, topic, drop, err := r.nodeTopic(ctx, fsync)
	if err != nil {
		return Figures{}, err
	}
	defer drop()
	polls := pollWholeAndSliced
	if fsync {
		polls = noPoll // polls do not sync: the plain line measures them
	}
	return r.lean(ctx, l, r.node, stream, topic, readyMessages, polls)
}

// sdkNode measures the SDK against the node on a fresh stream (created
// here so the fsync variant's topic has enforce_fsync; bench.Run reuses
// it by name).
func (r *runner) sdkNode(ctx context.Context, l load, fsync bool) (Figures, error) {
	_, _, drop, err := r.nodeTopic(ctx, fsync)
	if err != nil {
		return Figures{}, err
	}
	defer drop()
	f, err := r.sdk(ctx, l, r.node, r.streamPrefix())
	if fsync {
		f.PollMBps = 0 // polls do not sync: the plain lines measure them
	}
	return f, err
}

// streamPrefix names the current measurement's stream, with
// bench.Run's "1" appended.
func (r *runner) streamPrefix() string { return fmt.Sprintf("ceilings-%s-%d-", r.tag, r.seq) }

// nodeTopic creates stream "ceilings-<tag>-<seq>-1" with topic "bench" of
// Partitions partitions, writes one 1-byte message to each, and returns
// their ids and a function deleting the stream.
func (r *runner) nodeTopic(ctx context.Context, fsync bool) (stream, topic uint32, drop func(), err error) {
	r.seq++
	name := r.streamPrefix() + "1"
	st, err := r.admin.CreateStream(ctx, name, nil)
	if err != nil {
		return 0, 0, nil, fmt.Errorf("create stream %s: %w", name, err)
	}
	drop = func() {
		dctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := r.admin.DeleteStream(dctx, wire.ID(st.ID)); err != nil {
			fmt.Fprintf(r.cfg.Log, "delete stream %s: %v\n", name, err)
		}
	}
	var opts wire.Options
	if fsync {
		opts = wire.Options{{Key: wire.OptEnforceFsync, Kind: wire.KindBool, Value: []byte{1}}}
	}
	t, err := r.admin.CreateTopic(ctx, wire.ID(st.ID), bench.DefaultTopic, uint32(r.cfg.Partitions), opts)
	if err != nil {
		drop()
		return 0, 0, nil, fmt.Errorf("create topic of %s: %w", name, err)
	}
	// A new partition answers S 58 until its group is up (client-plane.md
	// 8.4.2); one message to each, through the SDK (which replays 58),
	// keeps that wait out of the measurement.
	ready := []wire.Message{{Payload: []byte{'r'}}} // readyMessages of them
	for p := range uint32(r.cfg.Partitions) {
		if _, err := r.admin.SendMessages(ctx, wire.ID(st.ID), wire.ID(t.ID), wire.PartitionID(p), ready); err != nil {
			drop()
			return 0, 0, nil, fmt.Errorf("first send to partition %d of %s: %w", p, name, err)
		}
	}
	return st.ID, t.ID, drop, nil
}

// readyMessages is the message nodeTopic writes to each partition first.
const readyMessages = 1

// sdk runs bench.Run twice: the producers, then as many consumers reading
// what they sent (offset 0 of each partition). prefix names the stream
// (empty: the sink, where every setup creates anew).
func (r *runner) sdk(ctx context.Context, l load, addr, prefix string) (Figures, error) {
	c := bench.Config{
		Address: addr, Username: r.cfg.Username, Password: r.cfg.Password,
		Producers: l.producers, Streams: 1, PartitionsPerTopic: r.cfg.Partitions,
		MessageSize: r.cfg.Size, MessagesPerBatch: r.cfg.Messages, BatchCount: l.batches,
		StreamPrefix: prefix, RequestTimeout: time.Minute,
	}
	send, err := bench.Run(ctx, c)
	if err != nil {
		return Figures{}, err
	}
	c.Producers, c.Consumers = 0, l.producers
	poll, err := bench.Run(ctx, c)
	if err != nil {
		return Figures{}, err
	}
	return Figures{SendMBps: send.Producers.MBPerSec, SendP99Ms: send.Producers.Latency.P99Us / 1e3, PollMBps: poll.Consumers.MBPerSec}, nil
}

// leanPolls is what a lean measurement polls after its sends.
type leanPolls uint8

const (
	noPoll             leanPolls = iota
	pollWhole                    // everything from offset first
	pollWholeAndSliced           // that, then everything again from offset 0 (SlicedPollMBps)
)

// lean runs l's lean connections that send l's batches each, then the same
// connections poll back what was sent (polls), from offset first (on a
// node, past the ready message: polls of whole batches, like the sink's
// canned ones; the sliced pass from 0 is the other workload).
func (r *runner) lean(ctx context.Context, l load, addr string, stream, topic uint32, first uint64, polls leanPolls) (Figures, error) {
	cfg := r.cfg
	conns := make([]*lean.Conn, l.producers)
	defer func() {
		for _, c := range conns {
			if c != nil {
				_ = c.Close()
			}
		}
	}()
	for i := range conns {
		c, err := lean.Dial(ctx, addr, cfg.Username, cfg.Password)
		if err != nil {
			return Figures{}, err
		}
		conns[i] = c
		if err := c.PrepareSend(stream, topic, uint32(i%cfg.Partitions), cfg.Messages, cfg.Size); err != nil {
			return Figures{}, err
		}
	}
	// A deadline ends a lockstep round trip that never completes.
	stop := context.AfterFunc(ctx, func() {
		for _, c := range conns {
			_ = c.SetDeadline(time.Unix(1, 0))
		}
	})
	defer stop()
	f, err := r.leanSend(conns, l.batches)
	if err != nil || polls == noPoll {
		return f, err
	}
	if f.PollMBps, err = r.leanPoll(conns, l.batches, stream, topic, first); err != nil || polls == pollWhole {
		return f, err
	}
	f.SlicedPollMBps, err = r.leanPoll(conns, l.batches, stream, topic, 0)
	return f, err
}

// leanSend sends batches prepared batches on every connection at once.
func (r *runner) leanSend(conns []*lean.Conn, batches int) (Figures, error) {
	hists := make([]*bench.Histogram, len(conns))
	span, err := parallel(conns, func(i int, c *lean.Conn) error {
		h := bench.NewHistogram()
		hists[i] = h
		for range batches {
			t0 := time.Now()
			if _, err := c.Send(); err != nil {
				return err
			}
			h.Record(time.Since(t0))
		}
		return nil
	})
	if err != nil {
		return Figures{}, fmt.Errorf("send: %w", err)
	}
	all := bench.NewHistogram()
	for _, h := range hists {
		all.Merge(h)
	}
	payload := uint64(len(conns)) * uint64(batches) * uint64(r.cfg.Messages) * uint64(r.cfg.Size)
	return Figures{SendMBps: mbps(payload, span), SendP99Ms: all.Summary().P99Us / 1e3}, nil
}

// leanPoll has connection i read batches x Messages messages of partition
// i mod Partitions from offset first, and returns the MB/s of payload read.
func (r *runner) leanPoll(conns []*lean.Conn, batches int, stream, topic uint32, first uint64) (float64, error) {
	read := make([]uint64, len(conns))
	quota := uint64(batches) * uint64(r.cfg.Messages)
	span, err := parallel(conns, func(i int, c *lean.Conn) error {
		offset, got := first, uint64(0)
		for got < quota {
			count := uint32(min(uint64(r.cfg.Messages), quota-got))
			p, err := c.Poll(uint32(i)+1, stream, topic, uint32(i%r.cfg.Partitions), offset, count)
			if err != nil {
				return err
			}
			if p.Messages == 0 {
				return fmt.Errorf("empty poll at offset %d after %d of %d messages", offset, got, quota)
			}
			got += uint64(p.Messages)
			read[i] += p.PayloadBytes
			offset = p.LastOffset + 1
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("poll: %w", err)
	}
	var total uint64
	for _, n := range read {
		total += n
	}
	return mbps(total, span), nil
}

// parallel runs work on every connection at once and returns the span
// from the first start to the last end; the first error wins.
func parallel(conns []*lean.Conn, work func(int, *lean.Conn) error) (time.Duration, error) {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	start := time.Now()
	for i, c := range conns {
		wg.Go(func() {
			if err := work(i, c); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("connection %d: %w", i, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return time.Since(start), errors.Join(errs...)
}

func mbps(bytes uint64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(bytes) / 1e6 / d.Seconds()
}

func medians(fs []Figures) Figures {
	var send, p99, poll, sliced []float64
	for _, f := range fs {
		send, p99, poll = append(send, f.SendMBps), append(p99, f.SendP99Ms), append(poll, f.PollMBps)
		sliced = append(sliced, f.SlicedPollMBps)
	}
	return Figures{SendMBps: median(send), SendP99Ms: median(p99), PollMBps: median(poll), SlicedPollMBps: median(sliced)}
}

// median is the middle value (the mean of the two middle ones for an even
// count); NaNs and infinities (a zero denominator) sort last.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.SortFunc(s, func(a, b float64) int {
		fa, fb := math.IsNaN(a) || math.IsInf(a, 0), math.IsNaN(b) || math.IsInf(b, 0)
		switch {
		case fa != fb:
			if fa {
				return 1
			}
			return -1
		case a < b:
			return -1
		case a > b:
			return 1
		}
		return 0
	})
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func (f Figures) text() string {
	poll := "       -"
	if f.PollMBps > 0 {
		poll = fmt.Sprintf("%8.1f", f.PollMBps)
	}
	sliced := ""
	if f.SlicedPollMBps > 0 {
		sliced = fmt.Sprintf("  sliced poll %8.1f MB/s", f.SlicedPollMBps)
	}
	return fmt.Sprintf("send %8.1f MB/s  p99 %8.3f ms  poll %s MB/s%s", f.SendMBps, f.SendP99Ms, poll, sliced)
}

// WriteText prints the run's shape, one line per measurement (medians)
// and one per ratio (median of the per-round ratios).
func (r Result) WriteText(w io.Writer) error {
	c := r.Config
	var err error
	printf := func(format string, args ...any) {
		if err == nil {
			_, err = fmt.Fprintf(w, format, args...)
		}
	}
	printf("ceilings: %d producers x %d batches x %d messages x %d B, %d partitions, %d rounds (medians)\n",
		c.Producers, c.Batches, c.Messages, c.Size, c.Partitions, c.Rounds)
	if b := c.baseLoad(); b.producers > 0 {
		printf("  (the base lines: %d producers x %d batches)\n", b.producers, b.batches)
	}
	for _, l := range r.Lines {
		printf("  %-28s %s\n", l.Name, l.Median.text())
	}
	for _, rt := range r.Ratios {
		printf("  ratio %-52s %6.2f\n", rt.Name, rt.Median)
	}
	return err
}

// startNode starts one node process (cfg.NodeBin, or ./cmd/node built from
// cfg.Source into dir) on a free loopback port with its data and log
// under dir, and returns its address and a function that stops it.
func startNode(ctx context.Context, cfg Config, dir string) (string, func(), error) {
	bin := cfg.NodeBin
	if bin == "" {
		bin = filepath.Join(dir, "iggynode")
		fmt.Fprintf(cfg.Log, "building %s/cmd/node\n", cfg.Source)
		if err := nodeproc.Build(ctx, cfg.Source, bin, cfg.Log); err != nil {
			return "", nil, err
		}
	}
	ports, err := nodeproc.FreePorts(1)
	if err != nil {
		return "", nil, err
	}
	addr := "127.0.0.1:" + ports[0]
	data := filepath.Join(dir, "node")
	if err := os.MkdirAll(data, 0o700); err != nil {
		return "", nil, err
	}
	logFile, err := os.OpenFile(filepath.Join(dir, "node.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return "", nil, err
	}
	defer logFile.Close() // the child holds its own descriptor
	cmd := exec.Command(bin)
	cmd.Dir = data
	cmd.Env = append(os.Environ(), "IGGY_SYSTEM_PATH="+data, "IGGY_TCP_ADDRESS="+addr,
		"IGGY_QUIC_ENABLED=false", "IGGY_WEBSOCKET_ENABLED=false", "IGGY_HTTP_ENABLED=false",
		"IGGY_ROOT_USERNAME="+cfg.Username, "IGGY_ROOT_PASSWORD="+cfg.Password)
	cmd.Env = append(cmd.Env, cfg.NodeEnv...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop := func() { nodeproc.Stop(cmd, 30*time.Second, nil) }
	if err := nodeproc.WaitListening(ctx, addr); err != nil {
		stop()
		return "", nil, err
	}
	fmt.Fprintf(cfg.Log, "node %s listening on %s (data and node.log in %s)\n", bin, addr, dir)
	return addr, stop, nil
}
