package main

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"iggynode/client"
	"iggynode/wire"
)

func (a *app) printClient(d *wire.ClientDetails) error {
	return a.print(d, func(t *table) {
		t.row("Client ID", d.ClientID)
		t.row("User ID", userText(d.UserID))
		t.row("Transport", d.Transport)
		t.row("Address", d.Address)
		t.row("Consumer groups", len(d.ConsumerGroups))
		for _, g := range d.ConsumerGroups {
			t.row("", fmt.Sprintf("stream %d topic %d group %d", g.StreamID, g.TopicID, g.GroupID))
		}
	})
}

func userText(id uint32) string {
	if id == wire.UserIDNone {
		return "-"
	}
	return fmt.Sprint(id)
}

func (a *app) clientCommand() *cobra.Command {
	return alias(noun("client", "Inspect connected clients",
		alias(a.listing(a.clientVerb("list", "List connected clients", 0, 0, func(c *client.Client, _ []wire.Identifier, _ []string) error {
			list, err := c.GetClients(a.ctx)
			if err != nil {
				return err
			}
			return a.print(list, func(t *table) {
				t.row("CLIENT ID", "USER ID", "TRANSPORT", "ADDRESS", "GROUPS")
				for _, cl := range list {
					t.row(cl.ClientID, userText(cl.UserID), cl.Transport, cl.Address, cl.ConsumerGroupsCount)
				}
			})
		})), "l"),
		alias(a.verb("get CLIENT_ID", "Show a connected client", 1, 0, func(_ []wire.Identifier, args []string) error {
			n, err := parseU32(args[0])
			if err != nil {
				return err
			}
			c, err := a.connect()
			if err != nil {
				return err
			}
			d, err := c.GetClient(a.ctx, n)
			if err != nil {
				return err
			}
			return a.printClient(d)
		}), "g"),
	), "c")
}

func (a *app) meCommand() *cobra.Command {
	return a.clientVerb("me", "Show this connection as the server sees it", 0, 0, func(c *client.Client, _ []wire.Identifier, _ []string) error {
		d, err := c.GetMe(a.ctx)
		if err != nil {
			return err
		}
		return a.printClient(d)
	})
}

func (a *app) statsCommand() *cobra.Command {
	return a.clientVerb("stats", "Show server statistics", 0, 0, func(c *client.Client, _ []wire.Identifier, _ []string) error {
		s, err := c.GetStats(a.ctx)
		if err != nil {
			return err
		}
		return a.print(s, func(t *table) {
			t.row("Server version", s.IggyServerVersion)
			t.row("Process ID", s.ProcessID)
			t.row("Hostname", s.Hostname)
			t.row("OS", strings.TrimSpace(s.OSName+" "+s.OSVersion))
			t.row("Kernel", s.KernelVersion)
			t.row("CPU usage", fmt.Sprintf("%.1f%% (host %.1f%%)", s.CPUUsage, s.TotalCPUUsage))
			t.row("Memory", fmt.Sprintf("%s of %s (%s available)", size(s.MemoryUsage), size(s.TotalMemory), size(s.AvailableMemory)))
			t.row("Threads", s.ThreadsCount)
			t.row("Started", micros(s.StartTime))
			t.row("Read / written", fmt.Sprintf("%s / %s", size(s.ReadBytes), size(s.WrittenBytes)))
			t.row("Streams", s.StreamsCount)
			t.row("Topics", s.TopicsCount)
			t.row("Partitions", s.PartitionsCount)
			t.row("Segments", s.SegmentsCount)
			t.row("Messages", fmt.Sprintf("%d (%s)", s.MessagesCount, size(s.MessagesSizeBytes)))
			t.row("Clients", s.ClientsCount)
			t.row("Consumer groups", s.ConsumerGroupsCount)
		})
	})
}

// Snapshot compressions and section types by upstream's names
// (client-plane.md 8.1.3); numbers are accepted too.
var (
	snapshotCompressions = map[string]uint8{"stored": 1, "deflate": 2, "deflated": 2, "bzip2": 3, "zstd": 4, "lzma": 5, "xz": 6}
	snapshotTypes        = map[string]uint8{"filesystem_overview": 1, "process_list": 2, "resource_usage": 3, "test": 4,
		"server_logs": 5, "server_config": 6, "all": 100}
)

func namedU8(what, s string, names map[string]uint8) (uint8, error) {
	if v, ok := names[strings.ToLower(s)]; ok {
		return v, nil
	}
	n, err := strconv.ParseUint(s, 10, 8)
	if err != nil {
		return 0, fmt.Errorf("%s %q: a name (%s) or a number", what, s, strings.Join(slices.Sorted(maps.Keys(names)), ", "))
	}
	return uint8(n), nil
}

func (a *app) snapshotCommand() *cobra.Command {
	var file, outDir, compression string
	var types []string
	cmd := a.verb("snapshot", "Download the server's diagnostic ZIP archive", 0, 0, func(_ []wire.Identifier, _ []string) error {
		if file == "" && outDir == "" {
			return fmt.Errorf("--file or --out-dir is required")
		}
		if file == "" {
			file = filepath.Join(outDir, "snapshot_"+time.Now().UTC().Format("20060102_150405")+".zip")
		}
		comp, err := namedU8("compression", compression, snapshotCompressions)
		if err != nil {
			return err
		}
		var kinds []uint8
		for _, t := range types {
			for _, name := range strings.Split(t, ",") {
				k, err := namedU8("snapshot type", strings.TrimSpace(name), snapshotTypes)
				if err != nil {
					return err
				}
				kinds = append(kinds, k)
			}
		}
		c, err := a.connect()
		if err != nil {
			return err
		}
		zip, err := c.GetSnapshot(a.ctx, comp, kinds)
		if err != nil {
			return err
		}
		if err := os.WriteFile(file, zip, 0o600); err != nil {
			return err
		}
		return a.print(map[string]any{"file": file, "bytes": len(zip)}, func(t *table) {
			t.row("Wrote", file, size(uint64(len(zip))))
		})
	})
	cmd.Flags().StringVar(&file, "file", "", "where to write the ZIP archive")
	cmd.Flags().StringVarP(&outDir, "out-dir", "o", "", "write snapshot_TIME.zip into this folder (upstream's form)")
	cmd.Flags().StringVarP(&compression, "compression", "c", "deflate", "stored, deflate, bzip2, zstd, lzma or xz (or 1..6)")
	cmd.Flags().StringSliceVarP(&types, "snapshot-types", "s", []string{"all"}, "sections: filesystem_overview, process_list, resource_usage, test, server_logs, server_config or all (or numbers)")
	cmd.Flags().StringSliceVar(&types, "types", []string{"all"}, "same as --snapshot-types")
	return cmd
}

// Option scopes of DescribeOptions (client-plane.md 7.16).
var optionScopes = map[string]uint8{"topic": 1, "stream": 2, "user": 3}

func (a *app) optionsCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "options [topic|stream|user]",
		Short: "Describe the options a scope accepts (default topic)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := "topic"
			if len(args) == 1 {
				name = args[0]
			}
			scope, ok := optionScopes[name]
			if !ok {
				return fmt.Errorf("scope must be topic, stream or user, not %q", name)
			}
			c, err := a.connect()
			if err != nil {
				return err
			}
			cat, err := c.DescribeOptions(a.ctx, scope)
			if err != nil {
				return err
			}
			return a.print(cat, func(t *table) {
				t.row("KEY", "KIND", "DEFAULT", "DESCRIPTION")
				for _, d := range cat {
					t.row(d.Key, d.Kind, optionValue(d.Kind, d.Default), d.Description)
				}
			})
		},
	}
}

// pingCommand checks that one node answers: it connects without logging in
// (Ping needs no session, client-plane.md) and stays on the dialled node, so
// a container healthcheck probes that node and not the cluster's leader.
func (a *app) pingCommand() *cobra.Command {
	var count int
	var interval time.Duration
	cmd := &cobra.Command{
		Use:   "ping",
		Short: "Ping the node (no login); exit status 0 when every ping is answered",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o, err := a.options()
			if err != nil {
				return err
			}
			o.Username, o.Password, o.PersonalAccessToken = "", "", ""
			o.StayOnNode = true
			c, err := client.Connect(a.ctx, o)
			if err != nil {
				return err
			}
			defer c.Close()
			for i := range count {
				if i > 0 {
					time.Sleep(interval)
				}
				start := time.Now()
				if err := c.Ping(a.ctx); err != nil {
					return err
				}
				fmt.Fprintf(a.out, "pong from %s in %v\n", o.Address, time.Since(start).Round(time.Microsecond))
			}
			return nil
		},
	}
	cmd.Flags().IntVarP(&count, "count", "c", 1, "number of pings")
	cmd.Flags().DurationVar(&interval, "interval", time.Second, "pause between pings")
	return cmd
}
