package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"iggynode/client"
	"iggynode/wire"
)

// offsetTarget holds the flags naming whose offset is meant.
type offsetTarget struct {
	consumer  string
	group     bool
	partition int64
}

func (o *offsetTarget) register(cmd *cobra.Command) {
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

func (a *app) offsetCommand() *cobra.Command {
	var getT, storeT, delT offsetTarget
	get := a.verb("get STREAM TOPIC", "Show a consumer's stored offset", 2, 2, func(id []wire.Identifier, _ []string) error {
		cons, part, err := getT.parse()
		if err != nil {
			return err
		}
		c, err := a.connect()
		if err != nil {
			return err
		}
		off, err := c.GetConsumerOffset(a.ctx, cons, id[0], id[1], part)
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
	})
	getT.register(get)
	store := a.verb("store STREAM TOPIC OFFSET", "Store a consumer's offset", 3, 2, func(id []wire.Identifier, args []string) error {
		cons, part, err := storeT.parse()
		if err != nil {
			return err
		}
		n, err := parseU64(args[2])
		if err != nil {
			return err
		}
		c, err := a.connect()
		if err != nil {
			return err
		}
		if err := c.StoreConsumerOffset(a.ctx, cons, id[0], id[1], part, n, wire.AckQuorum); err != nil {
			return err
		}
		return a.printDone("offset stored", map[string]any{"offset": n})
	})
	storeT.register(store)
	del := a.verb("delete STREAM TOPIC", "Delete a consumer's stored offset", 2, 2, func(id []wire.Identifier, _ []string) error {
		cons, part, err := delT.parse()
		if err != nil {
			return err
		}
		c, err := a.connect()
		if err != nil {
			return err
		}
		if err := c.DeleteConsumerOffset(a.ctx, cons, id[0], id[1], part, wire.AckQuorum); err != nil {
			return err
		}
		return a.printDone("offset deleted", nil)
	})
	delT.register(del)
	return noun("offset", "Manage consumer offsets", get, store, del)
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
	return noun("group", "Manage consumer groups",
		a.clientVerb("create STREAM TOPIC NAME", "Create a consumer group", 3, 2, func(c *client.Client, id []wire.Identifier, args []string) error {
			g, err := c.CreateConsumerGroup(a.ctx, id[0], id[1], args[2])
			if err != nil {
				return err
			}
			return a.printGroup(g)
		}),
		a.clientVerb("get STREAM TOPIC GROUP", "Show a consumer group and its members", 3, 3, func(c *client.Client, id []wire.Identifier, _ []string) error {
			g, err := c.GetConsumerGroup(a.ctx, id[0], id[1], id[2])
			if err != nil {
				return err
			}
			return a.printGroup(g)
		}),
		a.clientVerb("list STREAM TOPIC", "List the consumer groups of a topic", 2, 2, func(c *client.Client, id []wire.Identifier, _ []string) error {
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
		}),
		a.verb("delete STREAM TOPIC GROUP", "Delete a consumer group", 3, 3, membership("group deleted", func(s, t, g wire.Identifier) error {
			c, err := a.connect()
			if err != nil {
				return err
			}
			return c.DeleteConsumerGroup(a.ctx, s, t, g)
		})),
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
	)
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
