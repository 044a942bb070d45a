package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"iggynode/client"
	"iggynode/wire"
	"iggynode/wire/jsonmodel"
)

const (
	sendBatch = 1000 // messages per SendMessages request
	pollBatch = 1000 // messages per PollMessages request
	// progressThreshold is the message count from which a bar is drawn.
	progressThreshold = 2 * sendBatch
	followInterval    = 200 * time.Millisecond
)

// progress returns a bar on a terminal stderr, nil otherwise (scripts and
// tests see no escape codes).
func (a *app) progress(total int64, what string) *progressbar.ProgressBar {
	f, ok := a.errOut.(*os.File)
	if !ok {
		return nil
	}
	// A character device is not enough: 2>/dev/null is one too.
	if !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return progressbar.NewOptions64(total, progressbar.OptionSetWriter(f), progressbar.OptionSetDescription(what),
		progressbar.OptionShowCount(), progressbar.OptionClearOnFinish())
}

// readLines returns the non-empty lines of r, one message each.
func readLines(r io.Reader) ([][]byte, error) {
	var out [][]byte
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		if len(sc.Bytes()) > 0 {
			out = append(out, append([]byte(nil), sc.Bytes()...))
		}
	}
	return out, sc.Err()
}

func (a *app) messageCommand() *cobra.Command {
	return alias(noun("message", "Send, poll and flush messages",
		alias(a.sendCommand(), "s"), alias(a.pollCommand(), "p"), alias(a.flushCommand(), "f")), "m")
}

func (a *app) sendCommand() *cobra.Command {
	var partition int64
	var key, file, inputFile string
	var headers []string
	cmd := &cobra.Command{
		Use:   "send STREAM TOPIC [MESSAGE...]",
		Short: "Send messages: the MESSAGE arguments, else --input-file, else the lines of --file, else the lines of stdin",
		Args:  cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := ids(args[:2])
			if err != nil {
				return err
			}
			hdrs, err := parseHeaders(headers)
			if err != nil {
				return err
			}
			var msgs []wire.Message
			switch {
			case len(args) > 2:
				for _, p := range args[2:] {
					msgs = append(msgs, client.NewMessage([]byte(p)))
				}
			case inputFile != "":
				if msgs, err = readMessageFile(inputFile); err != nil {
					return err
				}
			default:
				var payloads [][]byte
				if file != "" {
					f, err := os.Open(file)
					if err != nil {
						return err
					}
					payloads, err = readLines(f)
					f.Close()
					if err != nil {
						return err
					}
				} else if payloads, err = readLines(a.in); err != nil {
					return err
				}
				for _, p := range payloads {
					msgs = append(msgs, client.NewMessage(p))
				}
			}
			if len(msgs) == 0 {
				return fmt.Errorf("no messages to send")
			}
			if len(hdrs) > 0 {
				for i := range msgs {
					msgs[i].Headers = append(slices.Clone(msgs[i].Headers), hdrs...)
				}
			}
			part := wire.Balanced()
			switch {
			case key != "" && partition >= 0:
				return fmt.Errorf("--message-key and --partition-id are exclusive")
			case key != "":
				part = wire.MessagesKey([]byte(key))
			case partition >= 0:
				part = wire.PartitionID(uint32(partition))
			}
			c, err := a.connect()
			if err != nil {
				return err
			}
			var bar *progressbar.ProgressBar
			if len(msgs) >= progressThreshold {
				bar = a.progress(int64(len(msgs)), "sending")
			}
			var confs wire.SendConfirmations
			for start := 0; start < len(msgs); start += sendBatch {
				chunk := msgs[start:min(start+sendBatch, len(msgs))]
				got, err := c.SendMessages(a.ctx, id[0], id[1], part, chunk)
				if err != nil {
					return err
				}
				confs = append(confs, got...)
				if bar != nil {
					_ = bar.Add(len(chunk))
				}
			}
			if bar != nil {
				_ = bar.Finish()
			}
			return a.print(confs, func(t *table) {
				t.row("STREAM", "TOPIC", "PARTITION", "BASE OFFSET")
				for _, cf := range confs {
					t.row(cf.StreamID, cf.TopicID, cf.PartitionID, cf.BaseOffset)
				}
				t.row(fmt.Sprintf("sent %d messages", len(msgs)))
			})
		},
	}
	f := cmd.Flags()
	f.Int64VarP(&partition, "partition-id", "p", -1, "partition id (default: balanced)")
	f.Int64Var(&partition, "partition", -1, "same as --partition-id")
	f.StringVarP(&key, "message-key", "m", "", "partition by this message key")
	f.StringVar(&key, "key", "", "same as --message-key")
	f.StringVar(&file, "file", "", "read payloads from this text file, one per line")
	f.StringVar(&inputFile, "input-file", "", "send the messages of this binary file (written by message poll --output-file)")
	f.StringArrayVarP(&headers, "headers", "H", nil, "user header key:kind:value (kinds: raw, string, bool, int8..int128, uint8..uint128, float32, float64), comma separated or repeated; key=value is a String")
	return cmd
}

func (a *app) flushCommand() *cobra.Command {
	var fsync bool
	cmd := a.verb("flush STREAM TOPIC PARTITION", "Flush a partition's unsaved messages to disk", 3, 2, func(id []wire.Identifier, args []string) error {
		partition, err := parseU32(args[2])
		if err != nil {
			return err
		}
		c, err := a.connect()
		if err != nil {
			return err
		}
		// A VSR server stores every message as it commits, so there is never
		// a buffer to flush; it answers FeatureUnavailable (client-plane.md
		// 8.4.3), which is reported like any server error.
		if err := c.FlushUnsavedBuffer(a.ctx, id[0], id[1], partition, fsync); err != nil {
			return err
		}
		return a.printDone("flushed", map[string]any{"stream": args[0], "topic": args[1], "partition": partition})
	})
	cmd.Flags().BoolVarP(&fsync, "fsync", "f", false, "also fsync the partition's files")
	return cmd
}

// pollFlags are shared by `message poll` and `group poll`: upstream's
// -o/--offset, -f/--first, -l/--last, -n/--next, -m/--message-count and
// -a/--auto-commit, beside ours (--strategy/--value, --count, --follow).
type pollFlags struct {
	strategy    string
	value       uint64
	offset      uint64
	first       bool
	last        bool
	next        bool
	count       uint32
	autoCommit  bool
	follow      bool
	showHeaders bool
	outputFile  string
	cmd         *cobra.Command
}

func (p *pollFlags) register(cmd *cobra.Command, defaultStrategy string) {
	p.cmd = cmd
	f := cmd.Flags()
	f.StringVar(&p.strategy, "strategy", defaultStrategy, "offset, timestamp, first, last or next")
	f.Uint64Var(&p.value, "value", 0, "offset, or timestamp in µs, for those strategies")
	f.Uint64VarP(&p.offset, "offset", "o", 0, "poll from this offset (strategy offset)")
	f.BoolVarP(&p.first, "first", "f", false, "poll from the first message")
	f.BoolVarP(&p.last, "last", "l", false, "poll the last messages")
	f.BoolVarP(&p.next, "next", "n", false, "poll after the consumer's stored offset")
	f.Uint32VarP(&p.count, "message-count", "m", 10, "number of messages (1 by default in upstream's form with a PARTITION argument)")
	f.Uint32Var(&p.count, "count", 10, "same as --message-count")
	f.BoolVarP(&p.autoCommit, "auto-commit", "a", false, "store the consumer offset after polling")
	f.BoolVar(&p.follow, "follow", false, "keep polling new messages until interrupted")
	f.BoolVarP(&p.showHeaders, "show-headers", "s", false, "show each message's user headers")
	f.StringVar(&p.outputFile, "output-file", "", "write the polled messages to this binary file (message send --input-file reads it)")
}

func (p *pollFlags) changed(name string) bool { return p.cmd.Flags().Changed(name) }

func (p *pollFlags) parse() (wire.PollingStrategy, error) {
	if p.count == 0 {
		return wire.PollingStrategy{}, fmt.Errorf("--message-count must be at least 1")
	}
	picked := 0
	for _, name := range []string{"strategy", "offset", "first", "last", "next"} {
		if p.changed(name) {
			picked++
		}
	}
	if picked > 1 {
		return wire.PollingStrategy{}, fmt.Errorf("--offset, --first, --last, --next and --strategy are exclusive")
	}
	switch {
	case p.changed("offset"):
		return wire.OffsetStrategy(p.offset), nil
	case p.first:
		return wire.FirstStrategy(), nil
	case p.last:
		return wire.LastStrategy(), nil
	case p.next:
		return wire.NextStrategy(), nil
	}
	switch strings.ToLower(p.strategy) {
	case "offset":
		return wire.OffsetStrategy(p.value), nil
	case "timestamp":
		return wire.TimestampStrategy(p.value), nil
	case "first":
		return wire.FirstStrategy(), nil
	case "last":
		return wire.LastStrategy(), nil
	case "next":
		return wire.NextStrategy(), nil
	}
	return wire.PollingStrategy{}, fmt.Errorf("unknown strategy %q", p.strategy)
}

// polledView adds the payload as text when it is UTF-8, and decoded
// headers, to the wire record, for the table and --output-file (JSON
// output is jsonmodel's).
type polledView struct {
	Partition uint32
	wire.PolledMessage
	Text    string
	Headers wire.UserHeaders
}

func view(partition uint32, m wire.PolledMessage) polledView {
	v := polledView{Partition: partition, PolledMessage: m}
	if utf8.Valid(m.Payload) {
		v.Text = string(m.Payload)
	}
	if len(m.UserHeaders) > 0 {
		v.Headers, _ = wire.DecodeUserHeaders(m.UserHeaders)
	}
	return v
}

// pollLoop fetches batches until count messages arrived, or an empty batch
// (with follow, until interrupted). With forward set it continues by offset
// after the first batch, so first/last/timestamp polls of one partition read
// forward without committing.
func (a *app) pollLoop(p *pollFlags, forward bool, fetch func(wire.PollingStrategy, uint32) (*wire.PolledMessages, error)) error {
	strategy, err := p.parse()
	if err != nil {
		return err
	}
	var bar *progressbar.ProgressBar
	if !p.follow && p.count >= progressThreshold {
		bar = a.progress(int64(p.count), "polling")
	}
	var file *os.File
	if p.outputFile != "" {
		if file, err = os.OpenFile(p.outputFile, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600); err != nil {
			return err
		}
		defer file.Close()
	}
	var batches []jsonmodel.PolledMessages
	asJSON := a.output == "json"
	rows := newRowWriter(a.out)
	head := []string{"PARTITION", "OFFSET", "TIMESTAMP", "ID", "PAYLOAD"}
	if p.showHeaders {
		head = append(head, "HEADERS")
	}
	lines := json.NewEncoder(a.out)
	lines.SetEscapeHTML(false)
	emit := func(polled *wire.PolledMessages, vs []polledView) error {
		if file != nil {
			return appendMessageFile(file, vs)
		}
		if asJSON && p.follow {
			// One reply object per line: a stream has no end to close an
			// array at.
			if len(vs) > 0 {
				_ = lines.Encode(jsonmodel.FromPolled(polled))
			}
			return nil
		}
		if asJSON {
			batches = append(batches, jsonmodel.FromPolled(polled))
			return nil
		}
		for _, v := range vs {
			payload := v.Text
			if payload == "" && len(v.Payload) > 0 {
				payload = fmt.Sprintf("0x%x", v.Payload)
			}
			row := []string{fmt.Sprint(v.Partition), fmt.Sprint(v.Offset), micros(v.Timestamp), v.ID.String(), payload}
			if p.showHeaders {
				row = append(row, headersText(v.Headers))
			}
			rows.add(head, row)
		}
		rows.flush() // per batch, so --follow shows messages as they come
		return nil
	}
	got := uint32(0)
	for p.follow || got < p.count {
		want := min(p.count-got, pollBatch)
		if p.follow {
			want = min(p.count, pollBatch)
		}
		polled, err := fetch(strategy, want)
		if err != nil {
			if p.follow && a.ctx.Err() != nil {
				break
			}
			return err
		}
		msgs := client.Messages(polled)
		vs := make([]polledView, len(msgs))
		for i, m := range msgs {
			vs[i] = view(polled.PartitionID, m)
		}
		if err := emit(polled, vs); err != nil {
			return err
		}
		got += uint32(len(msgs))
		if bar != nil {
			_ = bar.Add(len(msgs))
		}
		if len(msgs) == 0 {
			if !p.follow {
				break
			}
			select {
			case <-a.ctx.Done():
				return a.finishPoll(p, batches, bar, got)
			case <-time.After(followInterval):
			}
			continue
		}
		if forward && (strategy.Kind != wire.PollNext || !p.autoCommit) {
			strategy = wire.OffsetStrategy(msgs[len(msgs)-1].Offset + 1)
		}
	}
	return a.finishPoll(p, batches, bar, got)
}

func (a *app) finishPoll(p *pollFlags, batches []jsonmodel.PolledMessages, bar *progressbar.ProgressBar, got uint32) error {
	if bar != nil {
		_ = bar.Finish()
	}
	if p.outputFile != "" {
		return a.print(map[string]any{"file": p.outputFile, "messages": got},
			func(t *table) { t.row(fmt.Sprintf("stored %d messages in %s", got, p.outputFile)) })
	}
	if a.output == "json" && !p.follow {
		return a.print(mergePolled(batches), nil)
	}
	return nil
}

// mergePolled is the JSON of the polls of one command: the HTTP API's
// PolledMessages (http.md 4.16) with every message, partition_id and
// current_offset those of the last poll, when all polls read one
// partition (the usual case); a consumer group poll that moved between
// partitions prints one such object per run of polls of one partition,
// in an array, rather than a partition_id that would be wrong for some
// of its messages.
func mergePolled(batches []jsonmodel.PolledMessages) any {
	var runs []jsonmodel.PolledMessages
	for _, b := range batches {
		if n := len(runs); n > 0 && runs[n-1].PartitionID == b.PartitionID {
			last := &runs[n-1]
			last.CurrentOffset = b.CurrentOffset
			last.Messages = append(last.Messages, b.Messages...)
			last.Count = uint32(len(last.Messages))
			continue
		}
		if len(b.Messages) == 0 && len(runs) > 0 {
			continue // an empty poll of another partition ends the read; it adds nothing
		}
		runs = append(runs, b)
	}
	switch len(runs) {
	case 0:
		return jsonmodel.PolledMessages{Messages: []jsonmodel.Message{}}
	case 1:
		return runs[0]
	}
	return runs
}

func (a *app) pollCommand() *cobra.Command {
	var p pollFlags
	var partition uint32
	var consumer string
	cmd := &cobra.Command{
		Use:   "poll STREAM TOPIC [PARTITION]",
		Short: "Poll messages from a partition (PARTITION, else --partition, else 0)",
		Args:  cobra.RangeArgs(2, 3),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := ids(args[:2])
			if err != nil {
				return err
			}
			if len(args) == 3 {
				if partition, err = parseU32(args[2]); err != nil {
					return fmt.Errorf("partition: %w", err)
				}
				if !p.changed("message-count") && !p.changed("count") {
					p.count = 1 // upstream's default
				}
			}
			cons, err := parseIdentifier(consumer)
			if err != nil {
				return err
			}
			c, err := a.connect()
			if err != nil {
				return err
			}
			return a.pollLoop(&p, true, func(s wire.PollingStrategy, n uint32) (*wire.PolledMessages, error) {
				return c.PollMessages(a.ctx, wire.SingleConsumer(cons), id[0], id[1], wire.Partition(partition), s, n, p.autoCommit)
			})
		},
	}
	p.register(cmd, "first")
	cmd.Flags().Uint32Var(&partition, "partition", 0, "partition id (or the third argument)")
	cmd.Flags().StringVarP(&consumer, "consumer", "c", "1", "consumer id or name")
	return cmd
}
