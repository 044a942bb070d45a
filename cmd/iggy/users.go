package main

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"iggynode/client"
	"iggynode/wire"
)

// parsePermissions reads --perm flags of the form SCOPE=LIST, where SCOPE is
// global, stream:N or stream:N/topic:M and LIST names the granted rights,
// comma separated (e.g. global=read_streams,poll_messages or
// stream:1/topic:2=send_messages). "all" grants every right of the scope.
// No flags give nil (no permissions block).
func parsePermissions(specs []string) (*wire.Permissions, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	p := &wire.Permissions{}
	for _, spec := range specs {
		scope, list, ok := strings.Cut(spec, "=")
		if !ok {
			return nil, fmt.Errorf("permission %q is not SCOPE=RIGHT,RIGHT", spec)
		}
		rights := strings.Split(list, ",")
		streamPart, topicPart, hasTopic := strings.Cut(scope, "/")
		switch {
		case scope == "global":
			g := &p.Global
			flags := map[string]*bool{
				"manage_servers": &g.ManageServers, "read_servers": &g.ReadServers,
				"manage_users": &g.ManageUsers, "read_users": &g.ReadUsers,
				"manage_streams": &g.ManageStreams, "read_streams": &g.ReadStreams,
				"manage_topics": &g.ManageTopics, "read_topics": &g.ReadTopics,
				"poll_messages": &g.PollMessages, "send_messages": &g.SendMessages,
			}
			if err := grant(flags, rights, scope); err != nil {
				return nil, err
			}
		case strings.HasPrefix(streamPart, "stream:"):
			sid, err := parseU32(strings.TrimPrefix(streamPart, "stream:"))
			if err != nil {
				return nil, fmt.Errorf("permission scope %q: %w", scope, err)
			}
			if p.Streams == nil {
				p.Streams = map[uint32]wire.StreamPermissions{}
			}
			sp := p.Streams[sid]
			if !hasTopic {
				flags := map[string]*bool{
					"manage_stream": &sp.ManageStream, "read_stream": &sp.ReadStream,
					"manage_topics": &sp.ManageTopics, "read_topics": &sp.ReadTopics,
					"poll_messages": &sp.PollMessages, "send_messages": &sp.SendMessages,
				}
				if err := grant(flags, rights, scope); err != nil {
					return nil, err
				}
			} else {
				if !strings.HasPrefix(topicPart, "topic:") {
					return nil, fmt.Errorf("permission scope %q: expected stream:N/topic:M", scope)
				}
				tid, err := parseU32(strings.TrimPrefix(topicPart, "topic:"))
				if err != nil {
					return nil, fmt.Errorf("permission scope %q: %w", scope, err)
				}
				if sp.Topics == nil {
					sp.Topics = map[uint32]wire.TopicPermissions{}
				}
				tp := sp.Topics[tid]
				flags := map[string]*bool{
					"manage_topic": &tp.ManageTopic, "read_topic": &tp.ReadTopic,
					"poll_messages": &tp.PollMessages, "send_messages": &tp.SendMessages,
				}
				if err := grant(flags, rights, scope); err != nil {
					return nil, err
				}
				sp.Topics[tid] = tp
			}
			p.Streams[sid] = sp
		default:
			return nil, fmt.Errorf("permission scope %q: use global, stream:N or stream:N/topic:M", scope)
		}
	}
	return p, nil
}

func grant(flags map[string]*bool, rights []string, scope string) error {
	for _, r := range rights {
		r = strings.TrimSpace(strings.ToLower(r))
		if r == "all" {
			for _, f := range flags {
				*f = true
			}
			continue
		}
		f, ok := flags[r]
		if !ok {
			return fmt.Errorf("unknown right %q for scope %s", r, scope)
		}
		*f = true
	}
	return nil
}

// permissionsText lists the granted rights in the --perm syntax.
func permissionsText(p *wire.Permissions) []string {
	if p == nil {
		return nil
	}
	on := func(pairs ...any) string {
		var names []string
		for i := 0; i < len(pairs); i += 2 {
			if pairs[i+1].(bool) {
				names = append(names, pairs[i].(string))
			}
		}
		return strings.Join(names, ",")
	}
	g := p.Global
	out := []string{"global=" + on("manage_servers", g.ManageServers, "read_servers", g.ReadServers,
		"manage_users", g.ManageUsers, "read_users", g.ReadUsers, "manage_streams", g.ManageStreams,
		"read_streams", g.ReadStreams, "manage_topics", g.ManageTopics, "read_topics", g.ReadTopics,
		"poll_messages", g.PollMessages, "send_messages", g.SendMessages)}
	for _, sid := range slices.Sorted(maps.Keys(p.Streams)) {
		s := p.Streams[sid]
		out = append(out, fmt.Sprintf("stream:%d=%s", sid, on("manage_stream", s.ManageStream, "read_stream", s.ReadStream,
			"manage_topics", s.ManageTopics, "read_topics", s.ReadTopics, "poll_messages", s.PollMessages, "send_messages", s.SendMessages)))
		for _, tid := range slices.Sorted(maps.Keys(s.Topics)) {
			t := s.Topics[tid]
			out = append(out, fmt.Sprintf("stream:%d/topic:%d=%s", sid, tid, on("manage_topic", t.ManageTopic, "read_topic", t.ReadTopic,
				"poll_messages", t.PollMessages, "send_messages", t.SendMessages)))
		}
	}
	return out
}

func parseStatus(s string) (wire.UserStatus, error) {
	switch strings.ToLower(s) {
	case "active":
		return wire.UserActive, nil
	case "inactive":
		return wire.UserInactive, nil
	}
	return 0, fmt.Errorf("status must be active or inactive, not %q", s)
}

func statusText(s wire.UserStatus) string {
	switch s {
	case wire.UserActive:
		return "active"
	case wire.UserInactive:
		return "inactive"
	}
	return fmt.Sprint(uint8(s))
}

const permHelp = "permission SCOPE=RIGHTS (repeatable): global|stream:N|stream:N/topic:M = comma-separated rights or all"

func (a *app) userCommand() *cobra.Command {
	var createPerms, setPerms []string
	var createStatus, newName, newStatus string
	create := a.verb("create USERNAME PASSWORD", "Create a user", 2, 0, func(_ []wire.Identifier, args []string) error {
		perms, err := parsePermissions(createPerms)
		if err != nil {
			return err
		}
		status, err := parseStatus(createStatus)
		if err != nil {
			return err
		}
		c, err := a.connect()
		if err != nil {
			return err
		}
		u, err := c.CreateUser(a.ctx, args[0], args[1], status, perms)
		if err != nil {
			return err
		}
		return a.printUser(u)
	})
	create.Flags().StringArrayVar(&createPerms, "perm", nil, permHelp)
	create.Flags().StringVarP(&createStatus, "user-status", "u", "active", "active or inactive")
	create.Flags().StringVar(&createStatus, "status", "active", "same as --user-status")
	update := a.verb("update USER", "Change a user's name or status", 1, 1, func(id []wire.Identifier, args []string) error {
		var name *string
		var status *wire.UserStatus
		if newName != "" {
			name = &newName
		}
		if newStatus != "" {
			s, err := parseStatus(newStatus)
			if err != nil {
				return err
			}
			status = &s
		}
		c, err := a.connect()
		if err != nil {
			return err
		}
		if err := c.UpdateUser(a.ctx, id[0], name, status); err != nil {
			return err
		}
		return a.printDone("user updated", map[string]any{"user": args[0]})
	})
	update.Flags().StringVar(&newName, "username", "", "new username")
	update.Flags().StringVar(&newStatus, "status", "", "active or inactive")
	perms := a.verb("permissions USER", "Replace a user's permissions (no --perm: none)", 1, 1, func(id []wire.Identifier, args []string) error {
		p, err := parsePermissions(setPerms)
		if err != nil {
			return err
		}
		c, err := a.connect()
		if err != nil {
			return err
		}
		if err := c.UpdatePermissions(a.ctx, id[0], p); err != nil {
			return err
		}
		return a.printDone("permissions updated", map[string]any{"user": args[0]})
	})
	perms.Flags().StringArrayVar(&setPerms, "perm", nil, permHelp)
	// Upstream's single-purpose forms of update.
	rename := a.clientVerb("name USER NEW_NAME", "Rename a user", 2, 1, func(c *client.Client, id []wire.Identifier, args []string) error {
		if err := c.UpdateUser(a.ctx, id[0], &args[1], nil); err != nil {
			return err
		}
		return a.printDone("user renamed", map[string]any{"user": args[0], "username": args[1]})
	})
	setStatus := a.verb("status USER active|inactive", "Activate or deactivate a user", 2, 1, func(id []wire.Identifier, args []string) error {
		st, err := parseStatus(args[1])
		if err != nil {
			return err
		}
		c, err := a.connect()
		if err != nil {
			return err
		}
		if err := c.UpdateUser(a.ctx, id[0], nil, &st); err != nil {
			return err
		}
		return a.printDone("user status changed", map[string]any{"user": args[0], "status": statusText(st)})
	})
	password := a.verb("password USER [CURRENT NEW]", "Change a user's password (asked for on a terminal when not given)", 1, 1, func(id []wire.Identifier, args []string) error {
		current, next := "", ""
		switch len(args) {
		case 3:
			current, next = args[1], args[2]
		case 1:
			var ok bool
			var err error
			if current, ok, err = promptPassword(a.in, a.errOut, "Current password: "); err != nil || !ok {
				return errors.Join(err, errors.New("give CURRENT and NEW, or run on a terminal to be asked"))
			}
			if next, _, err = promptPassword(a.in, a.errOut, "New password: "); err != nil {
				return err
			}
		default:
			return errors.New("give both CURRENT and NEW, or neither")
		}
		c, err := a.connect()
		if err != nil {
			return err
		}
		if err := c.ChangePassword(a.ctx, id[0], current, next); err != nil {
			return err
		}
		return a.printDone("password changed", map[string]any{"user": args[0]})
	})
	password.Args = cobra.RangeArgs(1, 3)
	return alias(noun("user", "Manage users",
		alias(create, "c"), alias(update, "up"), alias(perms, "p"), alias(rename, "n"), alias(setStatus, "s"), alias(password, "pwd"),
		alias(a.clientVerb("get USER", "Show a user and its permissions", 1, 1, func(c *client.Client, id []wire.Identifier, _ []string) error {
			u, err := c.GetUser(a.ctx, id[0])
			if err != nil {
				return err
			}
			return a.printUser(u)
		}), "g"),
		alias(a.listing(a.clientVerb("list", "List users", 0, 0, func(c *client.Client, _ []wire.Identifier, _ []string) error {
			list, err := c.GetUsers(a.ctx)
			if err != nil {
				return err
			}
			return a.print(list, func(t *table) {
				t.row("ID", "USERNAME", "STATUS", "CREATED")
				for _, u := range list {
					t.row(u.ID, u.Username, statusText(u.Status), micros(u.CreatedAt))
				}
			})
		})), "l"),
		alias(a.clientVerb("delete USER", "Delete a user", 1, 1, func(c *client.Client, id []wire.Identifier, args []string) error {
			if err := c.DeleteUser(a.ctx, id[0]); err != nil {
				return err
			}
			return a.printDone("user deleted", map[string]any{"user": args[0]})
		}), "d"),
	), "u")
}

func (a *app) printUser(u *wire.UserDetails) error {
	return a.print(u, func(t *table) {
		t.row("ID", u.ID)
		t.row("Username", u.Username)
		t.row("Status", statusText(u.Status))
		t.row("Created", micros(u.CreatedAt))
		perms := permissionsText(u.Permissions)
		if len(perms) == 0 {
			t.row("Permissions", "-")
		}
		for i, p := range perms {
			label := ""
			if i == 0 {
				label = "Permissions"
			}
			t.row(label, p)
		}
	})
}

func (a *app) patCommand() *cobra.Command {
	var expiry time.Duration
	var store bool
	create := a.clientVerb("create NAME [EXPIRY...]", "Create a personal access token (shown once)", 1, 0, func(c *client.Client, _ []wire.Identifier, args []string) error {
		if len(args) > 1 {
			d, err := parseExpiry(args[1:])
			if err != nil {
				return err
			}
			expiry = d
		}
		token, err := c.CreatePersonalAccessToken(a.ctx, args[0], uint64(expiry/time.Microsecond))
		if err != nil {
			return err
		}
		if store {
			// Upstream keeps it in the keyring; here it becomes the session,
			// used by later commands (or by --token-name NAME).
			o, err := a.options()
			if err != nil {
				return err
			}
			if _, err := a.storeSession(o, args[0], token); err != nil {
				return err
			}
		}
		return a.print(wire.RawToken{Token: token}, func(t *table) { t.row("Token", token) })
	})
	create.Args = cobra.MinimumNArgs(1)
	create.Flags().DurationVar(&expiry, "expiry", 0, "lifetime (0 = server default, never; or EXPIRY words)")
	create.Flags().BoolVarP(&store, "store-token", "s", false, "store the token in the session file, as login does")
	return noun("pat", "Manage personal access tokens",
		alias(create, "c"),
		alias(a.listing(a.clientVerb("list", "List your personal access tokens", 0, 0, func(c *client.Client, _ []wire.Identifier, _ []string) error {
			list, err := c.GetPersonalAccessTokens(a.ctx)
			if err != nil {
				return err
			}
			return a.print(list, func(t *table) {
				t.row("NAME", "EXPIRES")
				for _, p := range list {
					exp := "never"
					if p.ExpiryAt != 0 {
						exp = micros(p.ExpiryAt)
					}
					t.row(p.Name, exp)
				}
			})
		})), "l"),
		alias(a.clientVerb("delete NAME", "Delete a personal access token", 1, 0, func(c *client.Client, _ []wire.Identifier, args []string) error {
			if err := c.DeletePersonalAccessToken(a.ctx, args[0]); err != nil {
				return err
			}
			return a.printDone("token deleted", map[string]any{"name": args[0]})
		}), "d"),
	)
}
