// Command timeline reads the span files (telemetry/spanfile) of every node
// of a run, or of a simulated run (cmd/sim --trace), and shows per op and
// per view who prepared, forwarded, acknowledged, committed and applied it
// and when: a text table per group on stdout and, with --html, a
// self-contained HTML page with an SVG picture (package
// telemetry/timeline).
//
//	go run ./cmd/timeline traces/                  # every *.jsonl in traces/
//	go run ./cmd/timeline --group 0 --from 100 --to 180 --html run.html n1.jsonl n2.jsonl n3.jsonl
//
// By default only the last 200 ops of each group are shown (--ops 0: all).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"iggynode/internal/version"
	"iggynode/telemetry/timeline"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "timeline:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("timeline", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var (
		group  = fs.String("group", "", "show only this consensus group (id)")
		from   = fs.Uint64("from", 0, "first op to show")
		to     = fs.Uint64("to", 0, "last op to show (0: no bound)")
		ops    = fs.Int("ops", 200, "show at most the last N ops of each group, after --from/--to (0: all)")
		since  = fs.Float64("since", 0, "show only what starts after this many ms from the run's start")
		until  = fs.Float64("until", 0, "show only what starts before this many ms from the run's start (0: no bound)")
		html   = fs.String("html", "", "also write the timeline as a self-contained HTML page to this file")
		noText = fs.Bool("quiet", false, "do not print the text table")
		showV  = version.Flag(fs)
	)
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		var b strings.Builder
		fs.SetOutput(&b)
		fs.PrintDefaults()
		return fmt.Errorf("%w\nusage: timeline [flags] FILE|DIR...\n%s", err, b.String())
	}
	if version.Handled(showV, "timeline", stdout) {
		return nil
	}
	if fs.NArg() == 0 {
		return errors.New("no span files given (usage: timeline [flags] FILE|DIR...)")
	}
	f := timeline.Filter{From: *from, To: *to, Last: *ops}
	if *group != "" {
		var g uint64
		if _, err := fmt.Sscan(*group, &g); err != nil {
			return fmt.Errorf("--group %q: not a group id", *group)
		}
		f.Group = &g
	}
	files, err := expand(fs.Args())
	if err != nil {
		return err
	}
	l := timeline.NewLoader()
	for _, name := range files {
		if err := readFile(l, name); err != nil {
			return err
		}
	}
	m := l.Model()
	if *since > 0 {
		f.Since = m.T0 + int64(*since*1e6)
	}
	if *until > 0 {
		f.Until = m.T0 + int64(*until*1e6)
	}
	m = m.Select(f)
	if !*noText {
		if err := timeline.WriteText(stdout, m); err != nil {
			return err
		}
	}
	if *html != "" {
		return writeHTML(*html, m, strings.Join(fs.Args(), " "))
	}
	return nil
}

// expand turns the arguments into files: a directory stands for every
// *.jsonl in it, in name order.
func expand(args []string) ([]string, error) {
	var files []string
	for _, a := range args {
		st, err := os.Stat(a)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			files = append(files, a)
			continue
		}
		in, err := filepath.Glob(filepath.Join(a, "*.jsonl"))
		if err != nil {
			return nil, err
		}
		if len(in) == 0 {
			return nil, fmt.Errorf("%s: no *.jsonl span files in the directory", a)
		}
		sort.Strings(in)
		files = append(files, in...)
	}
	return files, nil
}

func readFile(l *timeline.Loader, name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := l.Read(f); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

func writeHTML(name string, m *timeline.Model, title string) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if err := timeline.WriteHTML(f, m, "consensus timeline: "+title); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", name, err)
	}
	return f.Close()
}
