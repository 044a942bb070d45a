package main

import (
	"fmt"

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
	return noun("stream", "Manage streams",
		create, update,
		a.clientVerb("get STREAM", "Show a stream and its topics", 1, 1, func(c *client.Client, id []wire.Identifier, _ []string) error {
			s, err := c.GetStream(a.ctx, id[0])
			if err != nil {
				return err
			}
			return a.printStream(s)
		}),
		a.clientVerb("list", "List streams", 0, 0, func(c *client.Client, _ []wire.Identifier, _ []string) error {
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
		}),
		a.clientVerb("delete STREAM", "Delete a stream", 1, 1, func(c *client.Client, id []wire.Identifier, args []string) error {
			if err := c.DeleteStream(a.ctx, id[0]); err != nil {
				return err
			}
			return a.printDone("stream deleted", map[string]any{"stream": args[0]})
		}),
		a.clientVerb("purge STREAM", "Delete every message of a stream", 1, 1, func(c *client.Client, id []wire.Identifier, args []string) error {
			if err := c.PurgeStream(a.ctx, id[0]); err != nil {
				return err
			}
			return a.printDone("stream purged", map[string]any{"stream": args[0]})
		}),
	)
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

func (a *app) topicCommand() *cobra.Command {
	var partitions uint32
	create := a.optionsVerb("create STREAM NAME", "Create a topic", 2, 1, "topic option key=value (repeatable; see: iggy options topic)",
		func(c *client.Client, id []wire.Identifier, args []string, opts []wire.KeyValue) error {
			tp, err := c.CreateTopic(a.ctx, id[0], args[1], partitions, opts)
			if err != nil {
				return err
			}
			return a.printTopic(tp)
		})
	create.Flags().Uint32VarP(&partitions, "partitions", "p", 1, "number of partitions")
	update := a.optionsVerb("update STREAM TOPIC NAME", "Rename a topic or change its options", 3, 2, "topic option key=value (repeatable)",
		func(c *client.Client, id []wire.Identifier, args []string, opts []wire.KeyValue) error {
			if err := c.UpdateTopic(a.ctx, id[0], id[1], args[2], opts); err != nil {
				return err
			}
			return a.printDone("topic updated", map[string]any{"stream": args[0], "topic": args[1]})
		})
	return noun("topic", "Manage topics",
		create, update,
		a.clientVerb("get STREAM TOPIC", "Show a topic and its partitions", 2, 2, func(c *client.Client, id []wire.Identifier, _ []string) error {
			tp, err := c.GetTopic(a.ctx, id[0], id[1])
			if err != nil {
				return err
			}
			return a.printTopic(tp)
		}),
		a.clientVerb("list STREAM", "List the topics of a stream", 1, 1, func(c *client.Client, id []wire.Identifier, _ []string) error {
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
		}),
		a.clientVerb("delete STREAM TOPIC", "Delete a topic", 2, 2, func(c *client.Client, id []wire.Identifier, args []string) error {
			if err := c.DeleteTopic(a.ctx, id[0], id[1]); err != nil {
				return err
			}
			return a.printDone("topic deleted", map[string]any{"stream": args[0], "topic": args[1]})
		}),
		a.clientVerb("purge STREAM TOPIC", "Delete every message of a topic", 2, 2, func(c *client.Client, id []wire.Identifier, args []string) error {
			if err := c.PurgeTopic(a.ctx, id[0], id[1]); err != nil {
				return err
			}
			return a.printDone("topic purged", map[string]any{"stream": args[0], "topic": args[1]})
		}),
	)
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
	return noun("partition", "Add or remove partitions",
		a.verb("create STREAM TOPIC COUNT", "Add COUNT partitions", 3, 2, change("created", func(s, t wire.Identifier, n uint32) error {
			c, err := a.connect()
			if err != nil {
				return err
			}
			return c.CreatePartitions(a.ctx, s, t, n)
		})),
		a.verb("delete STREAM TOPIC COUNT", "Remove the last COUNT partitions", 3, 2, change("deleted", func(s, t wire.Identifier, n uint32) error {
			c, err := a.connect()
			if err != nil {
				return err
			}
			return c.DeletePartitions(a.ctx, s, t, n)
		})),
	)
}

func (a *app) segmentCommand() *cobra.Command {
	return noun("segment", "Manage segments",
		a.verb("delete STREAM TOPIC PARTITION COUNT", "Delete the oldest COUNT segments of a partition", 4, 2, func(id []wire.Identifier, args []string) error {
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
		}),
	)
}
