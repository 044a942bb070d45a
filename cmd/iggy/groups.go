package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"iggynode/client"
	"iggynode/wire"
)

// offsetTarget holds the flags naming whose offset is meant.
type offsetTarget struct {
	consumer  string
	group     bool
	partition int64
	kind      string
}

func (o *offsetTarget) register(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&o.kind, "kind", "k", "consumer", "upstream's form: consumer or consumer-group")
	cmd.Flags().StringVar(&o.consumer, "consumer", "1", "consumer id or name")
	cmd.Flags().BoolVar(&o.group, "group", false, "the consumer is a consumer group")
	cmd.Flags().Int64Var(&o.partition, "partition", 0, "partition id (-1: none, the group's own)")
}

func (o *offsetTarget) parse() (wire.Consumer, wire.OptionalPartition, error) {
	id, err := parseIdentifier(o.consumer)
	if err != nil {
		return wire.Consumer{}, wire.OptionalPartition{}, err
	}
	cons := wire.SingleConsumer(id)
	if o.group {
		cons = wire.GroupConsumer(id)
	}
	var part wire.OptionalPartition
	if o.partition >= 0 {
		part = wire.Partition(uint32(o.partition))
	}
	return cons, part, nil
}

// offsetArgs reads a consumer-offset command's arguments in either form:
// upstream's CONSUMER STREAM TOPIC PARTITION [OFFSET] (with -k/--kind
// consumer|consumer-group), or ours, STREAM TOPIC [OFFSET] with
// --consumer, --group and --partition. extra is 1 for the OFFSET of set.
func (o *offsetTarget) args(args []string, extra int) (wire.Consumer, wire.Identifier, wire.Identifier, wire.OptionalPartition, []string, error) {
	fail := func(err error) (wire.Consumer, wire.Identifier, wire.Identifier, wire.OptionalPartition, []string, error) {
		return wire.Consumer{}, wire.Identifier{}, wire.Identifier{}, wire.OptionalPartition{}, nil, err
	}
	if len(args) == 4+extra { // upstream's form
		o.consumer = args[0]
		switch strings.ToLower(o.kind) {
		case "consumer":
		case "consumer-group", "consumer_group", "group":
			o.group = true
		default:
			return fail(fmt.Errorf("--kind must be consumer or consumer-group, not %q", o.kind))
		}
		p, err := parseU32(args[3])
		if err != nil {
			return fail(fmt.Errorf("partition: %w", err))
		}
		o.partition = int64(p)
		args = append(args[1:3:3], args[4:]...)
	} else if len(args) != 2+extra {
		return fail(fmt.Errorf("want CONSUMER STREAM TOPIC PARTITION%s or STREAM TOPIC%s with flags",
			strings.Repeat(" OFFSET", extra), strings.Repeat(" OFFSET", extra)))
	}
	id, err := ids(args[:2])
	if err != nil {
		return fail(err)
	}
	cons, part, err := o.parse()
	if err != nil {
		return fail(err)
	}
	return cons, id[0], id[1], part, args[2:], nil
}

func (a *app) offsetCommand() *cobra.Command {
	var getT, setT, delT offsetTarget
	get := &cobra.Command{
		Use: "get CONSUMER STREAM TOPIC PARTITION | get STREAM TOPIC", Short: "Show a consumer's stored offset",
		Aliases: []string{"g"}, Args: cobra.RangeArgs(2, 4),
		RunE: func(cmd *cobra.Command, args []string) error {
			cons, stream, topic, part, _, err := getT.args(args, 0)
			if err != nil {
				return err
			}
			c, err := a.connect()
			if err != nil {
				return err
			}
			off, err := c.GetConsumerOffset(a.ctx, cons, stream, topic, part)
			if err != nil {
				return err
			}
			return a.print(off, func(t *table) {
				if off == nil {
					t.row("no stored offset")
					return
				}
				t.row("PARTITION", "CURRENT OFFSET", "STORED OFFSET")
				t.row(off.PartitionID, off.CurrentOffset, off.StoredOffset)
			})
		},
	}
	getT.register(get)
	set := &cobra.Command{
		Use: "set CONSUMER STREAM TOPIC PARTITION OFFSET | set STREAM TOPIC OFFSET", Short: "Store a consumer's offset",
		Aliases: []string{"s", "store"}, Args: cobra.RangeArgs(3, 5),
		RunE: func(cmd *cobra.Command, args []string) error {
			cons, stream, topic, part, rest, err := setT.args(args, 1)
			if err != nil {
				return err
			}
			n, err := parseU64(rest[0])
			if err != nil {
				return err
			}
			c, err := a.connect()
			if err != nil {
				return err
			}
			if err := c.StoreConsumerOffset(a.ctx, cons, stream, topic, part, n, wire.AckQuorum); err != nil {
				return err
			}
			return a.printDone("offset stored", map[string]any{"offset": n})
		},
	}
	setT.register(set)
	del := &cobra.Command{
		Use: "delete CONSUMER STREAM TOPIC PARTITION | delete STREAM TOPIC", Short: "Delete a consumer's stored offset",
		Aliases: []string{"d"}, Args: cobra.RangeArgs(2, 4),
		RunE: func(cmd *cobra.Command, args []string) error {
			cons, stream, topic, part, _, err := delT.args(args, 0)
			if err != nil {
				return err
			}
			c, err := a.connect()
			if err != nil {
				return err
			}
			if err := c.DeleteConsumerOffset(a.ctx, cons, stream, topic, part, wire.AckQuorum); err != nil {
				return err
			}
			return a.printDone("offset deleted", nil)
		},
	}
	delT.register(del)
	return alias(noun("consumer-offset", "Manage consumer offsets", get, set, del), "o", "offset")
}

func (a *app) groupCommand() *cobra.Command {
	var p pollFlags
	poll := a.verb("poll STREAM TOPIC GROUP", "Join a group and poll its assigned partitions", 3, 3, func(id []wire.Identifier, _ []string) error {
		if p.follow && !p.autoCommit {
			return fmt.Errorf("group poll --follow needs --auto-commit (else it rereads the same messages)")
		}
		c, err := a.connect()
		if err != nil {
			return err
		}
		as, err := a.joinAndSync(c, id)
		if err != nil {
			return err
		}
		// The client polls the assigned partitions round-robin (client-plane.md
		// 8.10); a round of empty polls means the group is drained. Without
		// auto-commit one round is all there is to read.
		rounds := 0
		return a.pollLoop(&p, false, func(s wire.PollingStrategy, n uint32) (*wire.PolledMessages, error) {
			for range max(len(as.Partitions), 1) {
				if !p.autoCommit && rounds >= len(as.Partitions) {
					return &wire.PolledMessages{}, nil
				}
				rounds++
				got, err := c.PollConsumerGroup(a.ctx, id[0], id[1], id[2], s, n, p.autoCommit)
				if err != nil || len(client.Messages(got)) > 0 {
					return got, err
				}
			}
			return &wire.PolledMessages{}, nil
		})
	})
	p.register(poll, "next")
	// join, leave and sync act for this connection only; the membership
	// ends when the command exits (transports.md 7.3).
	membership := func(verb string, do func(s, t, g wire.Identifier) error) func([]wire.Identifier, []string) error {
		return func(id []wire.Identifier, args []string) error {
			if err := do(id[0], id[1], id[2]); err != nil {
				return err
			}
			return a.printDone(verb, map[string]any{"stream": args[0], "topic": args[1], "group": args[2]})
		}
	}
	return alias(noun("consumer-group", "Manage consumer groups",
		alias(a.clientVerb("create STREAM TOPIC NAME", "Create a consumer group", 3, 2, func(c *client.Client, id []wire.Identifier, args []string) error {
			g, err := c.CreateConsumerGroup(a.ctx, id[0], id[1], args[2])
			if err != nil {
				return err
			}
			return a.printGroup(g)
		}), "c"),
		alias(a.clientVerb("get STREAM TOPIC GROUP", "Show a consumer group and its members", 3, 3, func(c *client.Client, id []wire.Identifier, _ []string) error {
			g, err := c.GetConsumerGroup(a.ctx, id[0], id[1], id[2])
			if err != nil {
				return err
			}
			return a.printGroup(g)
		}), "g"),
		alias(a.listing(a.clientVerb("list STREAM TOPIC", "List the consumer groups of a topic", 2, 2, func(c *client.Client, id []wire.Identifier, _ []string) error {
			list, err := c.GetConsumerGroups(a.ctx, id[0], id[1])
			if err != nil {
				return err
			}
			return a.print(list, func(t *table) {
				t.row("ID", "NAME", "PARTITIONS", "MEMBERS")
				for _, g := range list {
					t.row(g.ID, g.Name, g.PartitionsCount, g.MembersCount)
				}
			})
		})), "l"),
		alias(a.verb("delete STREAM TOPIC GROUP", "Delete a consumer group", 3, 3, membership("group deleted", func(s, t, g wire.Identifier) error {
			c, err := a.connect()
			if err != nil {
				return err
			}
			return c.DeleteConsumerGroup(a.ctx, s, t, g)
		})), "d"),
		a.verb("join STREAM TOPIC GROUP", "Join a consumer group (for this connection)", 3, 3, membership("joined", func(s, t, g wire.Identifier) error {
			c, err := a.connect()
			if err != nil {
				return err
			}
			return c.JoinConsumerGroup(a.ctx, s, t, g)
		})),
		a.verb("leave STREAM TOPIC GROUP", "Leave a consumer group", 3, 3, membership("left", func(s, t, g wire.Identifier) error {
			c, err := a.connect()
			if err != nil {
				return err
			}
			return c.LeaveConsumerGroup(a.ctx, s, t, g)
		})),
		a.clientVerb("sync STREAM TOPIC GROUP", "Join a group and show this member's partition assignment", 3, 3, func(c *client.Client, id []wire.Identifier, _ []string) error {
			as, err := a.joinAndSync(c, id)
			if err != nil {
				return err
			}
			return a.print(as, func(t *table) {
				t.row("Generation", as.Generation)
				t.row("Partitions", as.Partitions)
			})
		}),
		poll,
	), "g", "group")
}

func (a *app) printGroup(g *wire.ConsumerGroupDetails) error {
	return a.print(g, func(t *table) {
		t.row("ID", g.ID)
		t.row("Name", g.Name)
		t.row("Partitions", g.PartitionsCount)
		t.row("Members", len(g.Members))
		if len(g.Members) > 0 {
			t.row("")
			t.row("MEMBER", "PARTITIONS")
			for _, m := range g.Members {
				t.row(m.ID, m.Partitions)
			}
		}
	})
}

// joinAndSync joins the group on this connection (membership is per
// connection, so a fresh CLI process is never a member yet) and reads the
// assignment.
func (a *app) joinAndSync(c *client.Client, id []wire.Identifier) (*wire.Assignment, error) {
	if err := c.JoinConsumerGroup(a.ctx, id[0], id[1], id[2]); err != nil {
		return nil, err
	}
	return c.SyncConsumerGroup(a.ctx, id[0], id[1], id[2])
}
