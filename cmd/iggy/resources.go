package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"iggynode/client"
	"iggynode/wire"
)

// noun builds a command group.
func noun(use, short string, verbs ...*cobra.Command) *cobra.Command {
	c := &cobra.Command{
		Use: use, Short: short,
		// Runnable, so a mistyped verb is an error (exit 1), not silent help.
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("unknown command %q for %q", args[0], cmd.CommandPath())
			}
			return cmd.Help()
		},
	}
	c.AddCommand(verbs...)
	return c
}

// alias gives a command upstream's short names (s, t, c, d, ...).
func alias(cmd *cobra.Command, names ...string) *cobra.Command {
	cmd.Aliases = append(cmd.Aliases, names...)
	return cmd
}

// listing adds upstream's -l/--list-mode table|list to a list command.
func (a *app) listing(cmd *cobra.Command) *cobra.Command {
	cmd.Flags().StringVarP(&a.listMode, "list-mode", "l", "table", "table, or list: one \"HEADER: value, ...\" line per row")
	return cmd
}

// verb builds a subcommand taking exactly n arguments, the first k of which
// are identifiers handed to fn already parsed.
func (a *app) verb(use, short string, n, k int, fn func(ids []wire.Identifier, args []string) error) *cobra.Command {
	return &cobra.Command{
		Use: use, Short: short, Args: cobra.ExactArgs(n),
		RunE: func(cmd *cobra.Command, args []string) error {
			parsed, err := ids(args[:k])
			if err != nil {
				return err
			}
			return fn(parsed, args)
		},
	}
}

// clientVerb is verb for the commands that talk to the node: it connects
// (once per process) after the arguments parsed.
func (a *app) clientVerb(use, short string, n, k int, fn func(c *client.Client, ids []wire.Identifier, args []string) error) *cobra.Command {
	return a.verb(use, short, n, k, func(ids []wire.Identifier, args []string) error {
		c, err := a.connect()
		if err != nil {
			return err
		}
		return fn(c, ids, args)
	})
}

// optionsVerb is clientVerb for the commands that take repeatable
// --option key=value flags (usage describes them): the options are parsed
// with the arguments, before connecting.
func (a *app) optionsVerb(use, short string, n, k int, usage string,
	fn func(c *client.Client, ids []wire.Identifier, args []string, opts []wire.KeyValue) error) *cobra.Command {
	var raw []string
	cmd := a.verb(use, short, n, k, func(ids []wire.Identifier, args []string) error {
		opts, err := parseKeyValues(raw)
		if err != nil {
			return err
		}
		c, err := a.connect()
		if err != nil {
			return err
		}
		return fn(c, ids, args, opts)
	})
	cmd.Flags().StringArrayVar(&raw, "option", nil, usage)
	return cmd
}

func (a *app) streamCommand() *cobra.Command {
	create := a.optionsVerb("create NAME", "Create a stream", 1, 0, "stream option key=value (repeatable)",
		func(c *client.Client, _ []wire.Identifier, args []string, opts []wire.KeyValue) error {
			s, err := c.CreateStream(a.ctx, args[0], opts)
			if err != nil {
				return err
			}
			return a.printStream(s)
		})
	update := a.optionsVerb("update STREAM NAME", "Rename a stream or change its options", 2, 1, "stream option key=value (repeatable)",
		func(c *client.Client, id []wire.Identifier, args []string, opts []wire.KeyValue) error {
			if err := c.UpdateStream(a.ctx, id[0], args[1], opts); err != nil {
				return err
			}
			return a.printDone("stream updated", map[string]any{"stream": args[0]})
		})
	return alias(noun("stream", "Manage streams",
		alias(create, "c"), alias(update, "u"),
		alias(a.clientVerb("get STREAM", "Show a stream and its topics", 1, 1, func(c *client.Client, id []wire.Identifier, _ []string) error {
			s, err := c.GetStream(a.ctx, id[0])
			if err != nil {
				return err
			}
			return a.printStream(s)
		}), "g"),
		alias(a.listing(a.clientVerb("list", "List streams", 0, 0, func(c *client.Client, _ []wire.Identifier, _ []string) error {
			list, err := c.GetStreams(a.ctx)
			if err != nil {
				return err
			}
			return a.print(list, func(t *table) {
				t.row("ID", "NAME", "TOPICS", "MESSAGES", "SIZE", "CREATED")
				for _, s := range list {
					t.row(s.ID, s.Name, s.TopicsCount, s.MessagesCount, size(s.SizeBytes), micros(s.CreatedAt))
				}
			})
		})), "l"),
		alias(a.clientVerb("delete STREAM", "Delete a stream", 1, 1, func(c *client.Client, id []wire.Identifier, args []string) error {
			if err := c.DeleteStream(a.ctx, id[0]); err != nil {
				return err
			}
			return a.printDone("stream deleted", map[string]any{"stream": args[0]})
		}), "d"),
		alias(a.clientVerb("purge STREAM", "Delete every message of a stream", 1, 1, func(c *client.Client, id []wire.Identifier, args []string) error {
			if err := c.PurgeStream(a.ctx, id[0]); err != nil {
				return err
			}
			return a.printDone("stream purged", map[string]any{"stream": args[0]})
		}), "p"),
	), "s")
}

func (a *app) printStream(s *wire.StreamDetails) error {
	return a.print(s, func(t *table) {
		t.row("ID", s.ID)
		t.row("Name", s.Name)
		t.row("Created", micros(s.CreatedAt))
		t.row("Topics", len(s.Topics))
		t.row("Messages", s.MessagesCount)
		t.row("Size", size(s.SizeBytes))
		t.row("Options", optionsText(s.Options))
		if len(s.Topics) > 0 {
			t.row("")
			t.row("TOPIC ID", "NAME", "PARTITIONS", "MESSAGES", "SIZE")
			for _, tp := range s.Topics {
				t.row(tp.ID, tp.Name, tp.PartitionsCount, tp.MessagesCount, size(tp.SizeBytes))
			}
		}
	})
}

// topicSettings are upstream's positional and flag forms of a topic's
// settings (topic create STREAM NAME PARTITIONS COMPRESSION [EXPIRY...],
// -m MAX_TOPIC_SIZE, -r REPLICATION_FACTOR), turned into the catalog's
// String options (client-plane.md 10.4), which the server parses.
type topicSettings struct {
	maxSize     string
	replication uint8
}

func (ts *topicSettings) register(cmd *cobra.Command, create bool) {
	cmd.Flags().StringVarP(&ts.maxSize, "max-topic-size", "m", "", "max topic size, e.g. 10GB or unlimited")
	if create {
		// The replication_factor extension option (metadata/placement.go):
		// how many nodes hold each partition; fixed at creation.
		cmd.Flags().Uint8VarP(&ts.replication, "replication-factor", "r", 0, "nodes holding each partition (0: the server's default, min(3, nodes))")
	}
}

// options appends the positional compression and expiry words (args) and
// the flags to opts.
func (ts *topicSettings) options(opts []wire.KeyValue, args []string) []wire.KeyValue {
	str := func(k, v string) wire.KeyValue { return wire.KeyValue{Key: k, Kind: wire.KindString, Value: []byte(v)} }
	if len(args) > 0 {
		opts = append(opts, str(wire.OptCompressionAlgorithm, args[0]))
	}
	if len(args) > 1 {
		opts = append(opts, str(wire.OptMessageExpiry, strings.Join(args[1:], " ")))
	}
	if ts.maxSize != "" {
		opts = append(opts, str(wire.OptMaxTopicSize, ts.maxSize))
	}
	if ts.replication > 0 {
		opts = append(opts, wire.KeyValue{Key: wire.OptReplicationFactor, Kind: wire.KindUint8, Value: []byte{ts.replication}})
	}
	return opts
}

func (a *app) topicCommand() *cobra.Command {
	var partitions uint32
	var createSettings, updateSettings topicSettings
	create := a.optionsVerb("create STREAM NAME [PARTITIONS COMPRESSION [EXPIRY...]]", "Create a topic", 2, 1, "topic option key=value (repeatable; see: iggy options topic)",
		func(c *client.Client, id []wire.Identifier, args []string, opts []wire.KeyValue) error {
			n := partitions
			if len(args) > 2 {
				v, err := parseU32(args[2])
				if err != nil {
					return fmt.Errorf("partitions: %w", err)
				}
				n = v
			}
			rest := args[min(len(args), 3):]
			tp, err := c.CreateTopic(a.ctx, id[0], args[1], n, createSettings.options(opts, rest))
			if err != nil {
				return err
			}
			return a.printTopic(tp)
		})
	create.Args = cobra.MinimumNArgs(2)
	create.Flags().Uint32VarP(&partitions, "partitions", "p", 1, "number of partitions (or the third argument)")
	createSettings.register(create, true)
	update := a.optionsVerb("update STREAM TOPIC NAME [COMPRESSION [EXPIRY...]]", "Rename a topic or change its options", 3, 2, "topic option key=value (repeatable)",
		func(c *client.Client, id []wire.Identifier, args []string, opts []wire.KeyValue) error {
			if err := c.UpdateTopic(a.ctx, id[0], id[1], args[2], updateSettings.options(opts, args[3:])); err != nil {
				return err
			}
			return a.printDone("topic updated", map[string]any{"stream": args[0], "topic": args[1]})
		})
	update.Args = cobra.MinimumNArgs(3)
	updateSettings.register(update, false)
	return alias(noun("topic", "Manage topics",
		alias(create, "c"), alias(update, "u"),
		alias(a.clientVerb("get STREAM TOPIC", "Show a topic and its partitions", 2, 2, func(c *client.Client, id []wire.Identifier, _ []string) error {
			tp, err := c.GetTopic(a.ctx, id[0], id[1])
			if err != nil {
				return err
			}
			return a.printTopic(tp)
		}), "g"),
		alias(a.listing(a.clientVerb("list STREAM", "List the topics of a stream", 1, 1, func(c *client.Client, id []wire.Identifier, _ []string) error {
			list, err := c.GetTopics(a.ctx, id[0])
			if err != nil {
				return err
			}
			return a.print(list, func(t *table) {
				t.row("ID", "NAME", "PARTITIONS", "MESSAGES", "SIZE", "CREATED")
				for _, tp := range list {
					t.row(tp.ID, tp.Name, tp.PartitionsCount, tp.MessagesCount, size(tp.SizeBytes), micros(tp.CreatedAt))
				}
			})
		})), "l"),
		alias(a.clientVerb("delete STREAM TOPIC", "Delete a topic", 2, 2, func(c *client.Client, id []wire.Identifier, args []string) error {
			if err := c.DeleteTopic(a.ctx, id[0], id[1]); err != nil {
				return err
			}
			return a.printDone("topic deleted", map[string]any{"stream": args[0], "topic": args[1]})
		}), "d"),
		alias(a.clientVerb("purge STREAM TOPIC", "Delete every message of a topic", 2, 2, func(c *client.Client, id []wire.Identifier, args []string) error {
			if err := c.PurgeTopic(a.ctx, id[0], id[1]); err != nil {
				return err
			}
			return a.printDone("topic purged", map[string]any{"stream": args[0], "topic": args[1]})
		}), "p"),
	), "t")
}

func (a *app) printTopic(tp *wire.TopicDetails) error {
	return a.print(tp, func(t *table) {
		t.row("ID", tp.ID)
		t.row("Name", tp.Name)
		t.row("Created", micros(tp.CreatedAt))
		t.row("Partitions", len(tp.Partitions))
		t.row("Messages", tp.MessagesCount)
		t.row("Size", size(tp.SizeBytes))
		t.row("Message expiry (µs)", tp.MessageExpiry)
		t.row("Max topic size", tp.MaxTopicSize)
		t.row("Options", optionsText(tp.ExplicitOptions))
		t.row("Derived options", optionsText(tp.DerivedOptions))
		if len(tp.Partitions) > 0 {
			t.row("")
			t.row("PARTITION", "SEGMENTS", "CURRENT OFFSET", "MESSAGES", "SIZE")
			for _, p := range tp.Partitions {
				t.row(p.ID, p.SegmentsCount, p.CurrentOffset, p.MessagesCount, size(p.SizeBytes))
			}
		}
	})
}

func (a *app) partitionCommand() *cobra.Command {
	change := func(verb string, do func(s, t wire.Identifier, n uint32) error) func([]wire.Identifier, []string) error {
		return func(id []wire.Identifier, args []string) error {
			n, err := parseU32(args[2])
			if err != nil {
				return err
			}
			if err := do(id[0], id[1], n); err != nil {
				return err
			}
			return a.printDone("partitions "+verb, map[string]any{"stream": args[0], "topic": args[1], "count": n})
		}
	}
	return alias(noun("partition", "Add or remove partitions",
		alias(a.verb("create STREAM TOPIC COUNT", "Add COUNT partitions", 3, 2, change("created", func(s, t wire.Identifier, n uint32) error {
			c, err := a.connect()
			if err != nil {
				return err
			}
			return c.CreatePartitions(a.ctx, s, t, n)
		})), "c"),
		alias(a.verb("delete STREAM TOPIC COUNT", "Remove the last COUNT partitions", 3, 2, change("deleted", func(s, t wire.Identifier, n uint32) error {
			c, err := a.connect()
			if err != nil {
				return err
			}
			return c.DeletePartitions(a.ctx, s, t, n)
		})), "d"),
	), "p")
}

func (a *app) segmentCommand() *cobra.Command {
	return alias(noun("segment", "Manage segments",
		alias(a.verb("delete STREAM TOPIC PARTITION COUNT", "Delete the oldest COUNT segments of a partition", 4, 2, func(id []wire.Identifier, args []string) error {
			partition, err := parseU32(args[2])
			if err != nil {
				return err
			}
			n, err := parseU32(args[3])
			if err != nil {
				return err
			}
			c, err := a.connect()
			if err != nil {
				return err
			}
			if err := c.DeleteSegments(a.ctx, id[0], id[1], partition, n); err != nil {
				return err
			}
			return a.printDone("segments deleted", map[string]any{"stream": args[0], "topic": args[1], "partition": partition, "count": n})
		}), "d"),
	), "seg")
}
