package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The new flags end to end against the sink: a consumer-only workload runs
// no producer by default, --total-size sets the batches, --json carries the
// series and --chart writes the page.
func TestFlagsAgainstSink(t *testing.T) {
	dir := t.TempDir()
	jsonPath, chartPath := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.html")
	var out strings.Builder
	err := run([]string{"--sink", "--workload", "balanced-consumer-group", "--consumers", "2", "--total-size", "20KB",
		"--message-size", "100", "--messages-per-batch", "10", "--rate-limit", "1GB/s", "--json", jsonPath, "--chart", chartPath}, &out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	data, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Config struct {
			Producers  int    `json:"producers"`
			BatchCount int    `json:"batch_count"`
			RateLimit  uint64 `json:"rate_limit_bytes_per_s"`
		} `json:"config"`
		Consumers struct {
			Messages uint64 `json:"messages"`
			Series   []any  `json:"series"`
		} `json:"consumers"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	// 20 kB over 2 consumers of 10 x 100 B batches: 10 batches each.
	if r.Config.Producers != 0 || r.Config.BatchCount != 10 || r.Config.RateLimit != 1e9 || r.Consumers.Messages != 200 || len(r.Consumers.Series) == 0 {
		t.Errorf("report %+v\n%s", r, out.String())
	}
	page, err := os.ReadFile(chartPath)
	if err != nil || !strings.Contains(string(page), "<polyline") {
		t.Errorf("chart (%v): %.200s", err, page)
	}
}

func TestFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--sink", "--total-size", "1MB", "--batches", "3"}, "alternatives"},
		{[]string{"--sink", "--total-size", "lots"}, "--total-size"},
		{[]string{"--sink", "--rate-limit", "fast"}, "--rate-limit"},
		{[]string{"--sink", "--workload", "nope"}, "unknown workload"},
	} {
		if err := run(c.args, new(strings.Builder)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err %v, want %q", c.args, err, c.want)
		}
	}
}

// Upstream iggy-bench's form: BENCHMARK [flags] TRANSPORT [flags], with
// upstream's flag names, beside --workload.
func TestUpstreamSubcommandForm(t *testing.T) {
	var out strings.Builder
	err := run([]string{"--message-size", "10", "pinned-producer", "--producers", "2", "--message-batches", "3",
		"--messages-per-batch", "5", "tcp", "--server-address", "127.0.0.1:1", "--sink"}, &out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "workload pinned-producer: 2 producers, 0 consumers") || !strings.Contains(out.String(), "3 batches x 5 messages x 10 B") {
		t.Errorf("report %s", out.String())
	}
	out.Reset()
	if err := run([]string{"e2epcg", "--producers", "2", "--message-batches", "2", "--message-size", "10", "--messages-per-batch", "5", "tcp", "--sink"}, &out); err != nil {
		t.Fatalf("e2epcg: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "end-to-end-producing-consumer-group: 2 producing consumers") {
		t.Errorf("e2epcg report %s", out.String())
	}
	if err := run([]string{"no-such-benchmark", "tcp", "--sink"}, new(strings.Builder)); err == nil || !strings.Contains(err.Error(), "unexpected arguments") {
		t.Errorf("unknown benchmark word: %v", err)
	}
	out.Reset()
	if err := run([]string{"--version"}, &out); err != nil || !strings.Contains(out.String(), "protocol 0.11.0") {
		t.Errorf("--version: %v %q", err, out.String())
	}
}

// bench ceilings against the sinks only (child processes, as by default):
// every sink line and every ratio between them is printed with a finite
// positive value, the storing sink's directory is emptied (and held every
// byte sent, or the run fails), and --json carries the same medians.
func TestCeilingsAgainstSinks(t *testing.T) {
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "c.json")
	var out strings.Builder
	err := run([]string{"ceilings", "--rounds", "3", "--batches", "4", "--messages", "20", "--size", "100",
		"--producers", "2", "--partitions", "2", "--fsync", "--dir", filepath.Join(dir, "store"), "--json", jsonPath, "--timeout", "30s"}, &out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	text := out.String()
	for _, want := range []string{"2 producers x 4 batches x 20 messages x 100 B, 2 partitions, 3 rounds",
		"lean -> sink ", "lean -> storing sink ", "lean -> storing sink, fsync", "sdk -> sink "} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "-> node") {
		t.Errorf("node lines without a node:\n%s", text)
	}
	ratios := map[string]float64{}
	for _, line := range strings.Split(text, "\n") {
		name, ok := strings.CutPrefix(strings.TrimSpace(line), "ratio ")
		if !ok {
			continue
		}
		fields := strings.Fields(name)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			t.Fatalf("ratio line %q: %v", line, err)
		}
		ratios[strings.Join(fields[:len(fields)-1], " ")] = v
	}
	for _, name := range []string{"send: storing sink / sink (lean)", "send: storing sink fsync / sink (lean)",
		"send: SDK-sink / lean-sink", "poll: SDK-sink / lean-sink", "send p99: storing sink / sink (lean; lower is better)"} {
		// A quotient of two measured rates: finite and positive. (A band
		// such as 0.01-100 failed under -race on the loaded 2-core VM,
		// where a 4-batch measurement can stall for a collection.)
		if v, ok := ratios[name]; !ok || !(v > 0 && !math.IsInf(v, 0)) {
			t.Errorf("ratio %q = %v (present %v)\n%s", name, v, ok, text)
		}
	}
	if len(ratios) != 5 {
		t.Errorf("%d ratios, want the 5 of the sinks: %v", len(ratios), ratios)
	}
	entries, err := os.ReadDir(filepath.Join(dir, "store"))
	if err != nil || len(entries) != 0 {
		t.Errorf("store directory after the run: %v, %v", entries, err)
	}
	data, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Lines []struct {
			Name   string
			Rounds []struct {
				SendMBps float64 `json:"send_mb_per_s"`
			}
			Median struct {
				SendMBps float64 `json:"send_mb_per_s"`
				PollMBps float64 `json:"poll_mb_per_s"`
			}
		}
		Ratios []struct{ Median float64 }
		Config struct {
			SinkCommand []string `json:"sink_command"`
		}
	}
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	// The sinks ran as child processes of this binary (TestMain serves them).
	if self, _ := os.Executable(); len(res.Config.SinkCommand) != 2 || res.Config.SinkCommand[0] != self || res.Config.SinkCommand[1] != "sink" {
		t.Errorf("sink command %q", res.Config.SinkCommand)
	}
	if len(res.Lines) != 4 || len(res.Ratios) != 5 {
		t.Fatalf("json: %d lines, %d ratios", len(res.Lines), len(res.Ratios))
	}
	for _, l := range res.Lines {
		if len(l.Rounds) != 3 || l.Median.SendMBps <= 0 || (l.Median.PollMBps > 0) != !strings.Contains(l.Name, "storing") {
			t.Errorf("json line %+v", l)
		}
	}
}

func TestCeilingsFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"ceilings", "--address", "127.0.0.1:1", "--node"}, "alternatives"},
		{[]string{"ceilings", "--rounds", "0"}, "must be positive"},
		{[]string{"ceilings", "extra"}, "unexpected arguments"},
		{[]string{"ceilings", "--env", "IGGY_PARTITION_MEMORY_BUDGET=16MiB"}, "--node"},
	} {
		if err := run(c.args, new(strings.Builder)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err %v, want %q", c.args, err, c.want)
		}
	}
}

// TestMain lets the test binary stand in for cmd/bench when bench
// ceilings starts its sinks as "<self> sink ...".
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "sink" {
		if err := run(os.Args[1:], os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}
