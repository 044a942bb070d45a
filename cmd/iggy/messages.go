package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"iggynode/client"
	"iggynode/wire"
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
	return noun("message", "Send and poll messages", a.sendCommand(), a.pollCommand())
}

func (a *app) sendCommand() *cobra.Command {
	var partition int64
	var key, file string
	var headers []string
	cmd := &cobra.Command{
		Use:   "send STREAM TOPIC [PAYLOAD...]",
		Short: "Send messages: the PAYLOAD arguments, else the lines of --file, else the lines of stdin",
		Args:  cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := ids(args[:2])
			if err != nil {
				return err
			}
			hdrs, err := parseKeyValues(headers)
			if err != nil {
				return err
			}
			var payloads [][]byte
			switch {
			case len(args) > 2:
				for _, p := range args[2:] {
					payloads = append(payloads, []byte(p))
				}
			case file != "":
				f, err := os.Open(file)
				if err != nil {
					return err
				}
				payloads, err = readLines(f)
				f.Close()
				if err != nil {
					return err
				}
			default:
				if payloads, err = readLines(a.in); err != nil {
					return err
				}
			}
			if len(payloads) == 0 {
				return fmt.Errorf("no messages to send")
			}
			part := wire.Balanced()
			switch {
			case key != "" && partition >= 0:
				return fmt.Errorf("--key and --partition are exclusive")
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
			if len(payloads) >= progressThreshold {
				bar = a.progress(int64(len(payloads)), "sending")
			}
			var confs wire.SendConfirmations
			for start := 0; start < len(payloads); start += sendBatch {
				end := min(start+sendBatch, len(payloads))
				msgs := make([]wire.Message, 0, end-start)
				for _, p := range payloads[start:end] {
					m := client.NewMessage(p)
					m.Headers = wire.UserHeaders(hdrs)
					msgs = append(msgs, m)
				}
				got, err := c.SendMessages(a.ctx, id[0], id[1], part, msgs)
				if err != nil {
					return err
				}
				confs = append(confs, got...)
				if bar != nil {
					_ = bar.Add(len(msgs))
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
				t.row(fmt.Sprintf("sent %d messages", len(payloads)))
			})
		},
	}
	cmd.Flags().Int64Var(&partition, "partition", -1, "partition id (default: balanced)")
	cmd.Flags().StringVar(&key, "key", "", "partition by this message key")
	cmd.Flags().StringVar(&file, "file", "", "read payloads from this file, one per line")
	cmd.Flags().StringArrayVar(&headers, "headers", nil, "user header key=value (String), repeatable")
	return cmd
}

// pollFlags are shared by `message poll` and `group poll`.
type pollFlags struct {
	strategy   string
	value      uint64
	count      uint32
	autoCommit bool
	follow     bool
}

func (p *pollFlags) register(cmd *cobra.Command, defaultStrategy string) {
	cmd.Flags().StringVar(&p.strategy, "strategy", defaultStrategy, "offset, timestamp, first, last or next")
	cmd.Flags().Uint64Var(&p.value, "value", 0, "offset, or timestamp in µs, for those strategies")
	cmd.Flags().Uint32Var(&p.count, "count", 10, "number of messages")
	cmd.Flags().BoolVar(&p.autoCommit, "auto-commit", false, "store the consumer offset after polling")
	cmd.Flags().BoolVarP(&p.follow, "follow", "f", false, "keep polling new messages until interrupted")
}

func (p *pollFlags) parse() (wire.PollingStrategy, error) {
	if p.count == 0 {
		return wire.PollingStrategy{}, fmt.Errorf("--count must be at least 1")
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
// headers, to the wire record.
type polledView struct {
	Partition uint32 `json:"PartitionID"`
	wire.PolledMessage
	Text    string           `json:",omitempty"`
	Headers wire.UserHeaders `json:",omitempty"`
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
	var all []polledView
	asJSON := a.output == "json"
	tw := tabwriter.NewWriter(a.out, 0, 0, 2, ' ', 0)
	if !asJSON {
		fmt.Fprintln(tw, "PARTITION\tOFFSET\tTIMESTAMP\tID\tPAYLOAD")
	}
	lines := json.NewEncoder(a.out)
	emit := func(vs []polledView) {
		if asJSON && p.follow {
			// One JSON object per line: a stream has no end to close an array at.
			for _, v := range vs {
				_ = lines.Encode(v)
			}
			return
		}
		if asJSON {
			all = append(all, vs...)
			return
		}
		for _, v := range vs {
			payload := v.Text
			if payload == "" && len(v.Payload) > 0 {
				payload = fmt.Sprintf("0x%x", v.Payload)
			}
			fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\n", v.Partition, v.Offset, micros(v.Timestamp), v.ID, payload)
		}
		_ = tw.Flush() // per batch, so --follow shows messages as they come
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
		emit(vs)
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
				return a.finishPoll(p, all, bar)
			case <-time.After(followInterval):
			}
			continue
		}
		if forward && (strategy.Kind != wire.PollNext || !p.autoCommit) {
			strategy = wire.OffsetStrategy(msgs[len(msgs)-1].Offset + 1)
		}
	}
	return a.finishPoll(p, all, bar)
}

func (a *app) finishPoll(p *pollFlags, all []polledView, bar *progressbar.ProgressBar) error {
	if bar != nil {
		_ = bar.Finish()
	}
	if a.output == "json" && !p.follow {
		if all == nil {
			all = []polledView{}
		}
		return a.print(all, nil)
	}
	return nil
}

func (a *app) pollCommand() *cobra.Command {
	var p pollFlags
	var partition uint32
	var consumer string
	cmd := &cobra.Command{
		Use:   "poll STREAM TOPIC",
		Short: "Poll messages from a partition",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := ids(args)
			if err != nil {
				return err
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
	cmd.Flags().Uint32Var(&partition, "partition", 0, "partition id")
	cmd.Flags().StringVar(&consumer, "consumer", "1", "consumer id or name")
	return cmd
}
