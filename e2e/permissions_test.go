package e2e

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"iggynode/client"
	"iggynode/wire"
)

// aclChannel is where a denial travels (server-behaviour.md 2.5).
type aclChannel int

const (
	deniedByStatus aclChannel = iota // header status 41, decided on receipt
	deniedByResult                   // result section 41, committed at apply
)

// aclAction is one gated command against the fixture: streams s0 (id 0)
// and s1 (id 1), each with topics t0 (id 0) and t1 (id 1). self is the
// acting user's id.
type aclAction struct {
	name    string
	channel aclChannel
	do      func(ctx context.Context, c *client.Client, self uint32) error
}

var aclSeq atomic.Uint32

func aclSend(stream, topic uint32) func(context.Context, *client.Client, uint32) error {
	return func(ctx context.Context, c *client.Client, _ uint32) error {
		_, err := c.SendMessages(ctx, wire.ID(stream), wire.ID(topic), wire.PartitionID(0), []wire.Message{client.NewMessage([]byte("acl"))})
		return err
	}
}

func aclPoll(stream, topic uint32) func(context.Context, *client.Client, uint32) error {
	return func(ctx context.Context, c *client.Client, _ uint32) error {
		p, err := c.PollMessages(ctx, wire.SingleConsumer(wire.ID(1)), wire.ID(stream), wire.ID(topic), wire.Partition(0), wire.FirstStrategy(), 1, false)
		if err == nil && p.MessagesCount != 1 {
			return fmt.Errorf("allowed poll returned %d messages", p.MessagesCount)
		}
		return err
	}
}

// aclActions are the columns of the permission table.
var aclActions = []aclAction{
	{"GetStreams", deniedByStatus, func(ctx context.Context, c *client.Client, _ uint32) error {
		_, err := c.GetStreams(ctx)
		return err
	}},
	{"GetStream s0", deniedByStatus, func(ctx context.Context, c *client.Client, _ uint32) error {
		_, err := c.GetStream(ctx, wire.ID(0))
		return err
	}},
	{"GetStream s1", deniedByStatus, func(ctx context.Context, c *client.Client, _ uint32) error {
		_, err := c.GetStream(ctx, wire.ID(1))
		return err
	}},
	{"CreateStream", deniedByResult, func(ctx context.Context, c *client.Client, _ uint32) error {
		_, err := c.CreateStream(ctx, fmt.Sprintf("acl-%d", aclSeq.Add(1)), nil)
		return err
	}},
	{"GetTopic s0/t0", deniedByStatus, func(ctx context.Context, c *client.Client, _ uint32) error {
		_, err := c.GetTopic(ctx, wire.ID(0), wire.ID(0))
		return err
	}},
	{"CreateTopic s0", deniedByResult, func(ctx context.Context, c *client.Client, _ uint32) error {
		_, err := c.CreateTopic(ctx, wire.ID(0), fmt.Sprintf("acl-%d", aclSeq.Add(1)), 1, nil)
		return err
	}},
	{"Send s0/t0", deniedByStatus, aclSend(0, 0)},
	{"Send s0/t1", deniedByStatus, aclSend(0, 1)},
	{"Send s1/t1", deniedByStatus, aclSend(1, 1)},
	{"Poll s0/t0", deniedByStatus, aclPoll(0, 0)},
	{"Poll s0/t1", deniedByStatus, aclPoll(0, 1)},
	{"Poll s1/t1", deniedByStatus, aclPoll(1, 1)},
	{"GetStats", deniedByStatus, func(ctx context.Context, c *client.Client, _ uint32) error {
		_, err := c.GetStats(ctx)
		return err
	}},
	{"GetClients", deniedByStatus, func(ctx context.Context, c *client.Client, _ uint32) error {
		_, err := c.GetClients(ctx)
		return err
	}},
	{"GetUsers", deniedByStatus, func(ctx context.Context, c *client.Client, _ uint32) error {
		_, err := c.GetUsers(ctx)
		return err
	}},
	{"GetUser root", deniedByStatus, func(ctx context.Context, c *client.Client, _ uint32) error {
		_, err := c.GetUser(ctx, wire.ID(0))
		return err
	}},
	{"GetUser self", deniedByStatus, func(ctx context.Context, c *client.Client, self uint32) error {
		u, err := c.GetUser(ctx, wire.ID(self))
		if err == nil && u.ID != self {
			return fmt.Errorf("read user %d, want %d", u.ID, self)
		}
		return err
	}},
	{"CreateUser", deniedByResult, func(ctx context.Context, c *client.Client, _ uint32) error {
		_, err := c.CreateUser(ctx, fmt.Sprintf("acl-%d", aclSeq.Add(1)), "secret", wire.UserActive, nil)
		return err
	}},
	{"Personal tokens", deniedByStatus, func(ctx context.Context, c *client.Client, _ uint32) error {
		_, err := c.CreatePersonalAccessToken(ctx, fmt.Sprintf("acl-%d", aclSeq.Add(1)), 0)
		return err
	}},
}

// aclRow lists, per user, the actions the permission set allows; every
// other action of aclActions must be denied with 41 on its channel.
type aclRow struct {
	name    string
	perms   *wire.Permissions
	allowed []string
}

func streamGrant(id uint32, s wire.StreamPermissions) map[uint32]wire.StreamPermissions {
	return map[uint32]wire.StreamPermissions{id: s}
}

func topicGrant(stream, topic uint32, tp wire.TopicPermissions) map[uint32]wire.StreamPermissions {
	return streamGrant(stream, wire.StreamPermissions{Topics: map[uint32]wire.TopicPermissions{topic: tp}})
}

// Reading oneself and managing one's own tokens need only a login (9.5).
var aclAlways = []string{"GetUser self", "Personal tokens"}

// The permission table (server-behaviour.md 2.4-2.5; client-plane.md 9.5)
// end to end: each row is a user with one permission set, each column a
// command; allowed cells succeed, all others are denied with 41 in the
// header status (receipt-time checks) or in the result section
// (metadata writes, committed).
var aclTable = []aclRow{
	{"no permission set", nil, nil},
	{"global read_streams", &wire.Permissions{Global: wire.GlobalPermissions{ReadStreams: true}},
		[]string{"GetStreams", "GetStream s0", "GetStream s1", "GetTopic s0/t0", "Poll s0/t0", "Poll s0/t1", "Poll s1/t1"}},
	{"global manage_streams", &wire.Permissions{Global: wire.GlobalPermissions{ManageStreams: true}},
		[]string{"GetStreams", "GetStream s0", "GetStream s1", "CreateStream", "GetTopic s0/t0", "CreateTopic s0",
			"Send s0/t0", "Send s0/t1", "Send s1/t1", "Poll s0/t0", "Poll s0/t1", "Poll s1/t1"}},
	{"global read_topics", &wire.Permissions{Global: wire.GlobalPermissions{ReadTopics: true}},
		[]string{"GetTopic s0/t0", "Poll s0/t0", "Poll s0/t1", "Poll s1/t1"}}, // not GetStream(s) (2.4.1)
	{"global manage_topics", &wire.Permissions{Global: wire.GlobalPermissions{ManageTopics: true}},
		[]string{"GetTopic s0/t0", "CreateTopic s0", "Send s0/t0", "Send s0/t1", "Send s1/t1", "Poll s0/t0", "Poll s0/t1", "Poll s1/t1"}},
	{"global send_messages", &wire.Permissions{Global: wire.GlobalPermissions{SendMessages: true}},
		[]string{"Send s0/t0", "Send s0/t1", "Send s1/t1"}},
	{"global poll_messages", &wire.Permissions{Global: wire.GlobalPermissions{PollMessages: true}},
		[]string{"Poll s0/t0", "Poll s0/t1", "Poll s1/t1"}},
	{"global read_servers", &wire.Permissions{Global: wire.GlobalPermissions{ReadServers: true}},
		[]string{"GetStats", "GetClients"}},
	{"global manage_servers", &wire.Permissions{Global: wire.GlobalPermissions{ManageServers: true}},
		[]string{"GetStats", "GetClients"}},
	{"global read_users", &wire.Permissions{Global: wire.GlobalPermissions{ReadUsers: true}},
		[]string{"GetUsers", "GetUser root"}},
	{"global manage_users", &wire.Permissions{Global: wire.GlobalPermissions{ManageUsers: true}},
		[]string{"GetUsers", "GetUser root", "CreateUser"}},
	{"stream s0 read_stream", &wire.Permissions{Streams: streamGrant(0, wire.StreamPermissions{ReadStream: true})},
		[]string{"GetStream s0", "GetTopic s0/t0", "Poll s0/t0", "Poll s0/t1"}}, // never send (2.4.1)
	{"stream s0 manage_stream", &wire.Permissions{Streams: streamGrant(0, wire.StreamPermissions{ManageStream: true})},
		[]string{"GetStream s0", "GetTopic s0/t0", "CreateTopic s0", "Send s0/t0", "Send s0/t1", "Poll s0/t0", "Poll s0/t1"}},
	{"stream s0 send_messages", &wire.Permissions{Streams: streamGrant(0, wire.StreamPermissions{SendMessages: true})},
		[]string{"Send s0/t0", "Send s0/t1"}},
	{"stream s0 poll_messages", &wire.Permissions{Streams: streamGrant(0, wire.StreamPermissions{PollMessages: true})},
		[]string{"Poll s0/t0", "Poll s0/t1"}},
	{"stream s1 read_topics", &wire.Permissions{Streams: streamGrant(1, wire.StreamPermissions{ReadTopics: true})},
		[]string{"Poll s1/t1"}},
	{"topic s0/t1 send_messages", &wire.Permissions{Streams: topicGrant(0, 1, wire.TopicPermissions{SendMessages: true})},
		[]string{"Send s0/t1"}},
	{"topic s0/t1 poll_messages", &wire.Permissions{Streams: topicGrant(0, 1, wire.TopicPermissions{PollMessages: true})},
		[]string{"Poll s0/t1"}},
	{"topic s0/t0 read_topic", &wire.Permissions{Streams: topicGrant(0, 0, wire.TopicPermissions{ReadTopic: true})},
		[]string{"GetTopic s0/t0", "Poll s0/t0"}},
	{"topic s1/t1 manage_topic", &wire.Permissions{Streams: topicGrant(1, 1, wire.TopicPermissions{ManageTopic: true})},
		[]string{"Send s1/t1", "Poll s1/t1"}},
	{"an empty set", &wire.Permissions{}, nil},
}

// aclFixture creates the two streams with two one-partition topics each
// and a message in every partition.
func aclFixture(t *testing.T, root *client.Client) {
	t.Helper()
	ctx := ctxT(t)
	for s := uint32(0); s < 2; s++ {
		if _, err := root.CreateStream(ctx, fmt.Sprintf("s%d", s), nil); err != nil {
			t.Fatal(err)
		}
		for tp := uint32(0); tp < 2; tp++ {
			if _, err := root.CreateTopic(ctx, wire.ID(s), fmt.Sprintf("t%d", tp), 1, nil); err != nil {
				t.Fatal(err)
			}
			if err := aclSend(s, tp)(ctx, root, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func checkACL(t *testing.T, c *client.Client, self uint32, allowed []string, row string) {
	t.Helper()
	ctx := ctxT(t)
	ok := map[string]bool{}
	for _, a := range append(allowed, aclAlways...) {
		ok[a] = true
	}
	for _, a := range aclActions {
		err := a.do(ctx, c, self)
		switch {
		case ok[a.name] && err != nil:
			t.Errorf("%s: %s should be allowed, got %v", row, a.name, err)
		case !ok[a.name] && a.channel == deniedByStatus:
			var s *wire.StatusError
			if !errors.As(err, &s) || s.Code != wire.ErrUnauthorized {
				t.Errorf("%s: %s should be denied with header status 41, got %v", row, a.name, err)
			}
		case !ok[a.name] && a.channel == deniedByResult:
			var r *wire.ResultError
			if !errors.As(err, &r) || r.Code != wire.ErrUnauthorized {
				t.Errorf("%s: %s should be rejected with 41 in the result section, got %v", row, a.name, err)
			}
		}
	}
}

func TestPermissionTable(t *testing.T) {
	n := startNode(t)
	root := connect(t, n)
	aclFixture(t, root)
	ctx := ctxT(t)
	for i, row := range aclTable {
		name := fmt.Sprintf("acl%02d", i)
		u, err := root.CreateUser(ctx, name, "secret", wire.UserActive, row.perms)
		if err != nil {
			t.Fatalf("%s: create user: %v", row.name, err)
		}
		c := connectAs(t, n, name, "secret")
		checkACL(t, c, u.ID, row.allowed, row.name)
	}
	// Root holds every grant (2.1.5).
	for _, a := range aclActions {
		if err := a.do(ctx, root, 0); err != nil {
			t.Errorf("root: %s: %v", a.name, err)
		}
	}
}

// Not-found wins over unauthorized for object-scoped commands (2.6.1), and
// a permission change is exact for the next request (2.6.3), without a new
// login.
func TestPermissionChangesAndNotFoundFirst(t *testing.T) {
	n := startNode(t)
	root := connect(t, n)
	aclFixture(t, root)
	ctx := ctxT(t)
	u, err := root.CreateUser(ctx, "nobody", "secret", wire.UserActive, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := connectAs(t, n, "nobody", "secret")
	mustReject(t, c.DeleteStream(ctx, wire.ID(9)), wire.ErrStreamIdNotFound, "delete a missing stream without rights")
	mustReject(t, c.DeleteTopic(ctx, wire.ID(0), wire.ID(9)), wire.ErrTopicIdNotFound, "delete a missing topic without rights")
	mustReject(t, c.DeleteStream(ctx, wire.ID(0)), wire.ErrUnauthorized, "delete an existing stream without rights")
	if _, err := c.GetStream(ctx, wire.ID(9)); !errors.Is(err, wire.ErrStreamIdNotFound) {
		t.Fatalf("GetStream of a missing stream without rights: %v (want the empty not-found reply)", err)
	}

	send := aclSend(0, 1)
	mustDeny(t, send(ctx, c, u.ID), wire.ErrUnauthorized, "send before the grant")
	if err := root.UpdatePermissions(ctx, wire.ID(u.ID), &wire.Permissions{Streams: topicGrant(0, 1, wire.TopicPermissions{SendMessages: true})}); err != nil {
		t.Fatal(err)
	}
	if err := send(ctx, c, u.ID); err != nil {
		t.Fatalf("send right after the grant: %v", err)
	}
	mustDeny(t, aclSend(0, 0)(ctx, c, u.ID), wire.ErrUnauthorized, "the grant is topic-scoped")
	// Replacing the set with a stream-scoped manage grant lets the user
	// create topics there, and the old topic grant is gone with the set.
	if err := root.UpdatePermissions(ctx, wire.ID(u.ID), &wire.Permissions{Streams: streamGrant(1, wire.StreamPermissions{ManageStream: true})}); err != nil {
		t.Fatal(err)
	}
	mustDeny(t, send(ctx, c, u.ID), wire.ErrUnauthorized, "send after the set was replaced")
	if _, err := c.CreateTopic(ctx, wire.ID(1), "mine", 1, nil); err != nil {
		t.Fatalf("create topic with stream manage_stream: %v", err)
	}
	_, err = c.CreateTopic(ctx, wire.ID(0), "not-mine", 1, nil)
	mustReject(t, err, wire.ErrUnauthorized, "create topic in another stream")
	if err := root.UpdatePermissions(ctx, wire.ID(u.ID), nil); err != nil {
		t.Fatal(err)
	}
	_, err = c.CreateTopic(ctx, wire.ID(1), "again", 1, nil)
	mustReject(t, err, wire.ErrUnauthorized, "create topic after the set was cleared")
}

// The permission table and the not-found-first rule hold over the REST
// API (http.md 5: every route is checked by the rule of its binary
// command); the SDK's HTTP transport carries the same calls.
func TestPermissionsOverHTTP(t *testing.T) {
	http := transportCase{"http", client.TransportHTTP, false}
	for name, fn := range map[string]func(*testing.T){"Table": TestPermissionTable, "ChangesAndNotFoundFirst": TestPermissionChangesAndNotFoundFirst} {
		t.Run(name, func(t *testing.T) {
			transportOfTest.Store(t.Name(), http)
			defer transportOfTest.Delete(t.Name())
			fn(t)
		})
	}
}
