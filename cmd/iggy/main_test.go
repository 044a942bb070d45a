package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"iggynode/actors"
	"iggynode/config"
	"iggynode/internal/testutil"
	clientplane "iggynode/plane/client"
	"iggynode/wire"
	"iggynode/wire/jsonmodel"
)

// testNode starts a real node on loopback port 0 with its data in a temp
// dir, as e2e/harness_test.go does.
func testNode(t *testing.T, tune func(*actors.Options)) *actors.Node {
	t.Helper()
	cfg := config.Default()
	cfg.System.Path = t.TempDir()
	cfg.TCP.Address = "127.0.0.1:0"
	cfg.HTTP.Address = "127.0.0.1:0"
	cfg.QUIC.Address = "127.0.0.1:0"
	cfg.WebSocket.Address = "127.0.0.1:0"
	opts := actors.Options{
		Config: cfg, RootUsername: "iggy", RootPassword: "iggy",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if tune != nil {
		tune(&opts)
	}
	n, err := actors.Start(opts)
	if err != nil {
		t.Fatalf("start node: %v", err)
	}
	t.Cleanup(func() { _ = n.Close() })
	return n
}

// cliEnv runs the CLI in-process against one node, with a private session
// file and config dir so nothing of the user's leaks in or out.
type cliEnv struct {
	t       *testing.T
	node    *actors.Node
	session string
}

func newEnv(t *testing.T) *cliEnv { return newEnvWith(t, nil) }

func newEnvWith(t *testing.T, tune func(*actors.Options)) *cliEnv {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("IGGY_USERNAME", "")
	t.Setenv("IGGY_PASSWORD", "")
	return &cliEnv{t: t, node: testNode(t, tune), session: filepath.Join(t.TempDir(), "session.json")}
}

// exec runs the CLI with stdin and returns the exit code and both streams.
func (e *cliEnv) exec(stdin string, args ...string) (int, string, string) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	full := append([]string{"--address", e.node.TCPAddr(), "--session-file", e.session}, args...)
	code := run(ctx, full, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

// ok runs a command that must succeed and returns its stdout.
func (e *cliEnv) ok(args ...string) string {
	e.t.Helper()
	return e.okIn("", args...)
}

func (e *cliEnv) okIn(stdin string, args ...string) string {
	e.t.Helper()
	code, out, errOut := e.exec(stdin, args...)
	if code != 0 {
		e.t.Fatalf("iggy %s: exit %d, stderr %q", strings.Join(args, " "), code, errOut)
	}
	return out
}

// okJSON runs a command with --output json and decodes its stdout into v.
func (e *cliEnv) okJSON(v any, args ...string) {
	e.t.Helper()
	out := e.ok(append([]string{"--output", "json"}, args...)...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		e.t.Fatalf("iggy %s: bad JSON %q: %v", strings.Join(args, " "), out, err)
	}
}

// fails runs a command that must fail and returns its stderr.
func (e *cliEnv) fails(args ...string) string {
	e.t.Helper()
	code, _, errOut := e.exec("", args...)
	if code == 0 {
		e.t.Fatalf("iggy %s: succeeded, want an error", strings.Join(args, " "))
	}
	return errOut
}

func contains(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Fatalf("%s: %q lacks %q", what, got, w)
		}
	}
}

func TestStreamsTopicsPartitionsSegments(t *testing.T) {
	e := newEnv(t)
	contains(t, "stream create", e.ok("stream", "create", "orders"), "orders")
	var s jsonmodel.StreamDetails
	e.okJSON(&s, "stream", "create", "payments")
	if s.Name != "payments" || s.ID != 1 {
		t.Fatalf("created %+v", s)
	}
	errOut := e.fails("stream", "create", "orders")
	contains(t, "duplicate stream", errOut, "error: StreamNameAlreadyExists (1012)")

	var streams []jsonmodel.Stream
	e.okJSON(&streams, "stream", "list")
	if len(streams) != 2 || streams[0].Name != "orders" || streams[1].Name != "payments" {
		t.Fatalf("streams %+v", streams)
	}
	contains(t, "stream list", e.ok("stream", "list"), "ID", "NAME", "orders", "payments")
	e.ok("stream", "update", "payments", "billing")
	e.okJSON(&s, "stream", "get", "1")
	if s.Name != "billing" {
		t.Fatalf("renamed stream is %q", s.Name)
	}

	var tp jsonmodel.TopicDetails
	e.okJSON(&tp, "topic", "create", "orders", "events", "--partitions", "3", "--option", "message_expiry=1h")
	if tp.Name != "events" || len(tp.Partitions) != 3 {
		t.Fatalf("topic %+v", tp)
	}
	// The options map (http.md 4.4) marks the key the client set explicit;
	// the value is the server's, in µs, as a request would send it.
	if o, ok := tp.Options[wire.OptMessageExpiry]; !ok || !o.Explicit || o.Value != "3600000000" || tp.MessageExpiry != 3600e6 {
		t.Fatalf("options %+v (message_expiry %d) lack an explicit message_expiry of 1h", tp.Options, tp.MessageExpiry)
	}
	contains(t, "stream get", e.ok("stream", "get", "orders"), "TOPIC ID", "events")
	contains(t, "topic get", e.ok("topic", "get", "orders", "events"), "PARTITION", "Name", "events")
	var topics []jsonmodel.Topic
	e.okJSON(&topics, "topic", "list", "orders")
	if len(topics) != 1 || topics[0].PartitionsCount != 3 {
		t.Fatalf("topics %+v", topics)
	}
	contains(t, "topic list", e.ok("topic", "list", "orders"), "events")
	e.ok("topic", "update", "orders", "events", "clicks", "--option", "message_expiry=2h")

	contains(t, "partition create", e.ok("partition", "create", "orders", "clicks", "2"), "partitions created")
	e.okJSON(&tp, "topic", "get", "orders", "clicks")
	if tp.Name != "clicks" || len(tp.Partitions) != 5 {
		t.Fatalf("after update and partition create: %q with %d partitions", tp.Name, len(tp.Partitions))
	}
	var done map[string]any
	e.okJSON(&done, "partition", "delete", "orders", "clicks", "1")
	if done["result"] != "partitions deleted" || done["count"] != 1.0 {
		t.Fatalf("partition delete %v", done)
	}
	e.okJSON(&tp, "topic", "get", "orders", "clicks")
	if len(tp.Partitions) != 4 {
		t.Fatalf("after partition delete: %d partitions", len(tp.Partitions))
	}
	// Deleting segments of a partition is accepted or refused by the
	// server; the CLI must pass it through either way with a clean verdict.
	if code, _, errOut := e.exec("", "segment", "delete", "orders", "clicks", "0", "1"); code != 0 && !strings.Contains(errOut, "error: ") {
		t.Fatalf("segment delete: %q", errOut)
	}
	e.ok("topic", "purge", "orders", "clicks")
	e.ok("stream", "purge", "orders")
	e.ok("topic", "delete", "orders", "clicks")
	e.okJSON(&done, "stream", "delete", "billing")
	if done["result"] != "stream deleted" {
		t.Fatalf("delete result %v", done)
	}
	contains(t, "missing stream", e.fails("stream", "get", "billing"), "error: ")
}

// polled is one message of `message poll` / `group poll --output json`,
// whose JSON is the HTTP API's PolledMessages (http.md 4.16), flattened:
// each message with the partition_id of the object it came in.
type polled struct {
	PartitionID uint32
	Offset      uint64
	Payload     []byte // the base64 payload, decoded
	Text        string // the payload as text
	Headers     []jsonmodel.HeaderEntry
}

// flatten lists the messages of the PolledMessages objects in order.
func flatten(objs ...jsonmodel.PolledMessages) []polled {
	var out []polled
	for _, o := range objs {
		for _, m := range o.Messages {
			out = append(out, polled{PartitionID: o.PartitionID, Offset: m.Header.Offset, Payload: m.Payload,
				Text: string(m.Payload), Headers: m.UserHeaders.Entries})
		}
	}
	return out
}

// decodePolled reads a poll's JSON output: one PolledMessages object, or
// an array of them (a group poll that moved between partitions). Each
// object's count must be its number of messages, and each message's
// payload_length that of its payload.
func decodePolled(t *testing.T, out string) []jsonmodel.PolledMessages {
	t.Helper()
	var objs []jsonmodel.PolledMessages
	trimmed := strings.TrimSpace(out)
	if strings.HasPrefix(trimmed, "[") {
		if err := json.Unmarshal([]byte(trimmed), &objs); err != nil {
			t.Fatalf("polled JSON %q: %v", out, err)
		}
	} else {
		var o jsonmodel.PolledMessages
		if err := json.Unmarshal([]byte(trimmed), &o); err != nil {
			t.Fatalf("polled JSON %q: %v", out, err)
		}
		objs = append(objs, o)
	}
	for _, o := range objs {
		if o.Messages == nil || int(o.Count) != len(o.Messages) {
			t.Fatalf("polled object count %d with %d messages: %q", o.Count, len(o.Messages), out)
		}
		for _, m := range o.Messages {
			if int(m.Header.PayloadLength) != len(m.Payload) {
				t.Fatalf("payload_length %d of a %d-byte payload", m.Header.PayloadLength, len(m.Payload))
			}
		}
	}
	return objs
}

// okPolled runs a poll command with --output json and decodes it.
func (e *cliEnv) okPolled(args ...string) []jsonmodel.PolledMessages {
	e.t.Helper()
	return decodePolled(e.t, e.ok(append([]string{"--output", "json"}, args...)...))
}

// headerText is a user header field's bytes as text.
func headerText(f jsonmodel.HeaderField) string { return string(f.Value) }

// on and off read a permission flag, which must be present.
func on(b *bool) bool  { return b != nil && *b }
func off(b *bool) bool { return b != nil && !*b }

func TestMessagesOffsetsGroups(t *testing.T) {
	e := newEnv(t)
	e.ok("stream", "create", "s")
	e.ok("topic", "create", "s", "t", "--partitions", "2")

	var confs jsonmodel.SendMessagesConfirmations
	e.okJSON(&confs, "message", "send", "s", "t", "--partition", "1", "--headers", "source=cli", "hello", "world")
	if c := confs.Confirmations; len(c) != 1 || c[0].PartitionID != 1 || c[0].BaseOffset != 0 {
		t.Fatalf("confirmations %+v", confs)
	}
	contains(t, "send stdin", e.okIn("three\nfour\n\nfive\n", "message", "send", "s", "t", "--partition", "1"),
		"sent 3 messages", "BASE OFFSET")
	file := filepath.Join(t.TempDir(), "payloads.txt")
	if err := os.WriteFile(file, []byte("six\nseven\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.ok("message", "send", "s", "t", "--partition", "1", "--file", file)
	e.ok("message", "send", "s", "t", "--key", "user-42", "keyed")
	e.ok("message", "send", "s", "t", "balanced")
	contains(t, "send nothing", e.fails("message", "send", "s", "t"), "error: no messages")

	objs := e.okPolled("message", "poll", "s", "t", "--partition", "1", "--strategy", "offset", "--value", "0", "--count", "100")
	// One partition's polls print one object, with that partition's id.
	if len(objs) != 1 || objs[0].PartitionID != 1 {
		t.Fatalf("poll of partition 1 printed %d objects: %+v", len(objs), objs)
	}
	got := flatten(objs...)
	want := []string{"hello", "world", "three", "four", "five", "six", "seven"}
	var texts []string
	for _, m := range got {
		if m.PartitionID != 1 || m.Offset != uint64(len(texts)) {
			t.Fatalf("message %d: %+v", len(texts), m)
		}
		texts = append(texts, m.Text)
	}
	// keyed and balanced may or may not land on partition 1, after the rest.
	if len(texts) < len(want) || strings.Join(texts[:len(want)], " ") != strings.Join(want, " ") {
		t.Fatalf("polled %q", texts)
	}
	if h := got[0].Headers; len(h) != 1 || headerText(h[0].Key) != "source" || h[0].Key.Kind != "string" ||
		headerText(h[0].Value) != "cli" || h[0].Value.Kind != "string" {
		t.Fatalf("headers %+v", got[0].Headers)
	}
	// --count smaller than a batch stops there; the loop continues by offset.
	got = flatten(e.okPolled("message", "poll", "s", "t", "--partition", "1", "--strategy", "offset", "--value", "2", "--count", "2")...)
	if len(got) != 2 || got[0].Text != "three" || got[1].Text != "four" {
		t.Fatalf("offset poll %+v", got)
	}
	out := e.ok("message", "poll", "s", "t", "--partition", "1", "--strategy", "last", "--count", "1")
	contains(t, "poll table", out, "OFFSET", "PAYLOAD")
	if !strings.Contains(out, "seven") {
		t.Fatalf("last poll %q", out)
	}
	contains(t, "bad strategy", e.fails("message", "poll", "s", "t", "--strategy", "sideways"), "unknown strategy")

	// Offsets: next + auto-commit stores the offset, get reads it back.
	e.ok("message", "poll", "s", "t", "--partition", "1", "--strategy", "next", "--count", "3", "--consumer", "7", "--auto-commit")
	var offset jsonmodel.ConsumerOffsetInfo
	e.okJSON(&offset, "offset", "get", "s", "t", "--partition", "1", "--consumer", "7")
	if offset.StoredOffset != 2 || offset.PartitionID != 1 {
		t.Fatalf("offset after auto-commit %+v", offset)
	}
	e.ok("offset", "store", "s", "t", "5", "--partition", "1", "--consumer", "7")
	contains(t, "offset get", e.ok("offset", "get", "s", "t", "--partition", "1", "--consumer", "7"), "STORED OFFSET", "5")
	e.ok("offset", "delete", "s", "t", "--partition", "1", "--consumer", "7")
	contains(t, "offset gone", e.ok("offset", "get", "s", "t", "--partition", "1", "--consumer", "7"), "no stored offset")

	// Consumer groups.
	var g jsonmodel.ConsumerGroupDetails
	e.okJSON(&g, "group", "create", "s", "t", "readers")
	if g.Name != "readers" || g.PartitionsCount != 2 {
		t.Fatalf("group %+v", g)
	}
	var groups []jsonmodel.ConsumerGroup
	e.okJSON(&groups, "group", "list", "s", "t")
	if len(groups) != 1 || groups[0].Name != "readers" {
		t.Fatalf("groups %+v", groups)
	}
	contains(t, "group get", e.ok("group", "get", "s", "t", "readers"), "readers", "Members")
	contains(t, "group list", e.ok("group", "list", "s", "t"), "readers")
	e.ok("group", "join", "s", "t", "readers")
	var as wire.Assignment
	e.okJSON(&as, "group", "sync", "s", "t", "readers")
	if len(as.Partitions) != 2 {
		t.Fatalf("a lone member should own both partitions: %+v", as)
	}
	got = flatten(e.okPolled("group", "poll", "s", "t", "readers", "--count", "100", "--auto-commit")...)
	if len(got) == 0 {
		t.Fatalf("group poll returned nothing")
	}
	// The group's auto-committed offsets are readable as a group consumer.
	var goff jsonmodel.ConsumerOffsetInfo
	e.okJSON(&goff, "offset", "get", "s", "t", "--group", "--consumer", "readers", "--partition", "1")
	if goff.PartitionID != 1 || goff.StoredOffset != goff.CurrentOffset {
		t.Fatalf("group offset %+v", goff)
	}
	contains(t, "follow without commit", e.fails("group", "poll", "s", "t", "readers", "--follow"), "needs --auto-commit")
	contains(t, "key and partition", e.fails("message", "send", "s", "t", "--key", "k", "--partition", "0", "x"), "exclusive")
	// Membership is per connection (transports.md 7.3): a fresh CLI process
	// is no member, so leave reports the server's verdict by name.
	contains(t, "group leave", e.fails("group", "leave", "s", "t", "readers"), "error: ConsumerGroupMemberNotFound (5006)")
	e.ok("group", "delete", "s", "t", "readers")
	contains(t, "group gone", e.fails("group", "get", "s", "t", "readers"), "error: ")
}

func TestPollFollow(t *testing.T) {
	e := newEnv(t)
	e.ok("stream", "create", "s")
	e.ok("topic", "create", "s", "t")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out testutil.Buffer
	done := make(chan int)
	go func() {
		done <- run(ctx, []string{"--address", e.node.TCPAddr(), "--session-file", e.session,
			"message", "poll", "s", "t", "--follow"}, strings.NewReader(""), &out, io.Discard)
	}()
	e.ok("message", "send", "s", "t", "--partition", "0", "tail-one")
	e.ok("message", "send", "s", "t", "--partition", "0", "tail-two")
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), "tail-two") {
		if time.Now().After(deadline) {
			t.Fatalf("follow output %q", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("follow exited %d", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("follow did not stop when interrupted")
	}
	contains(t, "follow", out.String(), "tail-one", "tail-two")

	// --follow with JSON prints one object per line.
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	var lines testutil.Buffer
	go func() {
		done <- run(ctx2, []string{"--address", e.node.TCPAddr(), "--session-file", e.session, "--output", "json",
			"message", "poll", "s", "t", "--follow", "--strategy", "offset", "--value", "1"}, strings.NewReader(""), &lines, io.Discard)
	}()
	for strings.Count(lines.String(), "\n") < 1 {
		if time.Now().After(deadline) {
			t.Fatalf("follow JSON output %q", lines.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel2()
	if code := <-done; code != 0 {
		t.Fatalf("follow JSON exited %d", code)
	}
	// Each line is one batch's PolledMessages object (http.md 4.16).
	var batch jsonmodel.PolledMessages
	err := json.Unmarshal([]byte(strings.Split(lines.String(), "\n")[0]), &batch)
	if m := flatten(batch); err != nil || int(batch.Count) != len(m) || len(m) != 1 || m[0].Text != "tail-two" || m[0].Offset != 1 {
		t.Fatalf("follow JSON line %q: %v", lines.String(), err)
	}
}

func TestUsersPermissionsTokens(t *testing.T) {
	e := newEnv(t)
	e.ok("stream", "create", "s")
	var u jsonmodel.UserInfoDetails
	e.okJSON(&u, "user", "create", "alice", "secret1", "--perm", "global=read_streams,poll_messages",
		"--perm", "stream:0=send_messages", "--perm", "stream:0/topic:3=all")
	if u.Username != "alice" || u.Status != "active" || u.Permissions == nil {
		t.Fatalf("created %+v", u)
	}
	u = jsonmodel.UserInfoDetails{}
	e.okJSON(&u, "user", "get", "alice")
	p := u.Permissions
	if p == nil || !on(p.Global.ReadStreams) || !on(p.Global.PollMessages) || !off(p.Global.ManageUsers) ||
		!on(p.Streams[0].SendMessages) || !off(p.Streams[0].ManageStream) ||
		!on(p.Streams[0].Topics[3].ManageTopic) || !on(p.Streams[0].Topics[3].SendMessages) {
		t.Fatalf("permissions %+v", p)
	}
	contains(t, "user get", e.ok("user", "get", "alice"), "alice", "global=read_streams,poll_messages",
		"stream:0=send_messages", "stream:0/topic:3=manage_topic,read_topic,poll_messages,send_messages")
	contains(t, "bad right", e.fails("user", "create", "bob", "secret1", "--perm", "global=fly"), `unknown right "fly"`)

	var users []jsonmodel.UserInfo
	e.okJSON(&users, "user", "list")
	if len(users) != 2 || users[1].Username != "alice" {
		t.Fatalf("users %+v", users)
	}
	contains(t, "user list", e.ok("user", "list"), "USERNAME", "iggy", "alice")
	e.ok("user", "update", "alice", "--username", "alicia", "--status", "inactive")
	e.okJSON(&u, "user", "get", "alicia")
	if u.Status != "inactive" {
		t.Fatalf("status %v", u.Status)
	}
	e.ok("user", "update", "alicia", "--status", "active")
	e.ok("user", "password", "alicia", "secret1", "secret2")
	e.ok("--username", "alicia", "--password", "secret2", "me")
	contains(t, "old password", e.fails("--username", "alicia", "--password", "secret1", "me"), "error: ")
	e.ok("user", "permissions", "alicia", "--perm", "global=read_users")
	u = jsonmodel.UserInfoDetails{}
	e.okJSON(&u, "user", "get", "alicia")
	if u.Permissions == nil || !on(u.Permissions.Global.ReadUsers) || !off(u.Permissions.Global.ReadStreams) {
		t.Fatalf("replaced permissions %+v", u.Permissions)
	}

	var tok jsonmodel.RawPersonalAccessToken
	e.okJSON(&tok, "pat", "create", "ci-token", "--expiry", "1h")
	if tok.Token == "" {
		t.Fatal("empty token")
	}
	contains(t, "token login", e.ok("--token", tok.Token, "stream", "list"), "s")
	var pats []jsonmodel.PersonalAccessTokenInfo
	e.okJSON(&pats, "pat", "list")
	if len(pats) != 1 || pats[0].Name != "ci-token" || pats[0].ExpiryAt == nil || *pats[0].ExpiryAt == 0 {
		t.Fatalf("tokens %+v", pats)
	}
	contains(t, "pat list", e.ok("pat", "list"), "ci-token")
	e.ok("pat", "delete", "ci-token")
	contains(t, "deleted token", e.fails("--token", tok.Token, "stream", "list"), "error: ")
	e.ok("user", "delete", "alicia")
	contains(t, "deleted user", e.fails("user", "get", "alicia"), "error: ")
}

func TestSystemCommands(t *testing.T) {
	e := newEnv(t)
	var me jsonmodel.ClientInfoDetails
	e.okJSON(&me, "me")
	if me.UserID == nil || *me.UserID != 0 || me.Transport != "TCP" {
		t.Fatalf("me %+v", me)
	}
	contains(t, "me", e.ok("me"), "Client ID", "tcp")
	var clients []jsonmodel.ClientInfo
	e.okJSON(&clients, "client", "list")
	if len(clients) == 0 {
		t.Fatal("no clients")
	}
	contains(t, "client list", e.ok("client", "list"), "CLIENT ID", "tcp")
	// A client's connection ends with its process, so ask for an id that is
	// certainly gone: the JSON path of `client get` then reports the code.
	contains(t, "client get", e.fails("client", "get", "4000000000"), "error: ClientNotFound")

	var st jsonmodel.Stats
	e.okJSON(&st, "stats")
	if st.ProcessID != uint32(os.Getpid()) {
		t.Fatalf("stats process %d, want %d", st.ProcessID, os.Getpid())
	}
	contains(t, "stats", e.ok("stats"), "Server version", "Streams")

	zip := filepath.Join(t.TempDir(), "snap.zip")
	var snap map[string]any
	e.okJSON(&snap, "snapshot", "--file", zip, "--types", "4,6", "--compression", "1")
	b, err := os.ReadFile(zip)
	if err != nil || len(b) < 4 || string(b[:2]) != "PK" || snap["bytes"].(float64) != float64(len(b)) {
		t.Fatalf("snapshot %v: %d bytes, err %v", snap, len(b), err)
	}
	contains(t, "snapshot", e.ok("snapshot", "--file", zip, "--types", "4"), "Wrote", zip)
	contains(t, "snapshot without file", e.fails("snapshot"), "--file or --out-dir is required")

	var meta jsonmodel.ClusterMetadata
	e.okJSON(&meta, "cluster", "metadata")
	if len(meta.Nodes) == 0 {
		t.Fatal("empty roster")
	}
	contains(t, "cluster", e.ok("cluster", "metadata"), "ROLE", meta.Nodes[0].Role)

	var cat []jsonmodel.OptionSpec
	e.okJSON(&cat, "options", "topic")
	if len(cat) != 8 || cat[0].Key != wire.OptCompressionAlgorithm {
		t.Fatalf("catalog %+v", cat)
	}
	contains(t, "options", e.ok("options"), "KEY", "message_expiry", "segment_size")
	contains(t, "bad output", e.fails("--output", "yaml", "me"), "--output must be table or json")

	// ping logs in with nothing (a wrong password cannot fail it) and
	// fails, for a healthcheck, when the node does not answer.
	if out := e.ok("--password", "wrong", "ping", "--count", "2", "--interval", "1ms"); strings.Count(out, "pong from") != 2 {
		t.Fatalf("ping printed %q", out)
	}
	e.fails("--address", "127.0.0.1:1", "--reconnect-retries", "0", "ping")
}

func TestLoginSessionLogout(t *testing.T) {
	e := newEnv(t)
	var u jsonmodel.UserInfoDetails
	e.okJSON(&u, "user", "create", "carol", "secret1", "--perm", "global=read_streams")
	var login map[string]string
	// Credentials from the environment (transports.md 8.5); --help must not
	// echo them.
	t.Setenv("IGGY_USERNAME", "carol")
	t.Setenv("IGGY_PASSWORD", "secret1")
	if help := e.ok("--help"); strings.Contains(help, "secret1") {
		t.Fatalf("--help shows the password: %q", help)
	}
	e.okJSON(&login, "login", "--token-name", "cli-session")
	t.Setenv("IGGY_USERNAME", "")
	t.Setenv("IGGY_PASSWORD", "")
	if login["token_name"] != "cli-session" || login["session_file"] != e.session {
		t.Fatalf("login %v", login)
	}
	info, err := os.Stat(e.session)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("session file %v mode %v", err, info.Mode())
	}
	var sess session
	b, _ := os.ReadFile(e.session)
	if err := json.Unmarshal(b, &sess); err != nil || sess.Token == "" || sess.Address != e.node.TCPAddr() ||
		strings.Contains(string(b), "secret1") {
		t.Fatalf("session %s: %v", b, err)
	}
	// Without credential flags the stored token logs in, as carol, not root.
	var me jsonmodel.ClientInfoDetails
	e.okJSON(&me, "me")
	if me.UserID == nil || *me.UserID != u.ID {
		t.Fatalf("session user %v, want carol %d", me.UserID, u.ID)
	}
	// The session also carries the address: no --address needed.
	code, out, errOut := 0, "", ""
	{
		var o, eo bytes.Buffer
		code = run(context.Background(), []string{"--session-file", e.session, "--output", "json", "me"}, strings.NewReader(""), &o, &eo)
		out, errOut = o.String(), eo.String()
	}
	var me2 jsonmodel.ClientInfoDetails
	if code != 0 || json.Unmarshal([]byte(out), &me2) != nil || me2.UserID == nil || *me2.UserID != u.ID {
		t.Fatalf("session without --address: %d %q %q", code, out, errOut)
	}
	contains(t, "logout", e.ok("logout"), "cli-session")
	if _, err := os.Stat(e.session); !os.IsNotExist(err) {
		t.Fatalf("session file survives logout: %v", err)
	}
	var pats []jsonmodel.PersonalAccessTokenInfo
	e.okJSON(&pats, "--username", "carol", "--password", "secret1", "pat", "list")
	if len(pats) != 0 {
		t.Fatalf("token survives logout: %+v", pats)
	}
	contains(t, "second logout", e.fails("logout"), "not logged in")
}

func TestTransportsAndConnectionString(t *testing.T) {
	e := newEnv(t)
	e.ok("stream", "create", "s")
	for _, tc := range []struct{ name, transport, addr string }{
		{"quic", "quic", e.node.QUICAddr()},
		{"ws", "ws", e.node.WebSocketAddr()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var me jsonmodel.ClientInfoDetails
			e.okJSON(&me, "--transport", tc.transport, "--address", tc.addr, "me")
			want := map[string]string{"quic": "QUIC", "ws": "WebSocket"}[tc.transport]
			if me.Transport != want {
				t.Fatalf("transport %v, want %v", me.Transport, want)
			}
		})
	}
	var streams []jsonmodel.Stream
	e.okJSON(&streams, "--transport", "http", "--address", e.node.HTTPAddr(), "stream", "list")
	if len(streams) != 1 || streams[0].Name != "s" {
		t.Fatalf("streams over http %+v", streams)
	}
	e.okJSON(&streams, "--connection-string", "iggy://iggy:iggy@"+e.node.TCPAddr(), "stream", "list")
	if len(streams) != 1 || streams[0].Name != "s" {
		t.Fatalf("streams %+v", streams)
	}
	contains(t, "bad transport", e.fails("--transport", "carrier-pigeon", "me"), "--transport must be")
}

func TestBatchedSendAndUnknownVerb(t *testing.T) {
	e := newEnv(t)
	e.ok("stream", "create", "s")
	e.ok("topic", "create", "s", "t")
	var lines strings.Builder
	for i := range 2500 {
		lines.WriteString("m" + strconv.Itoa(i) + "\n")
	}
	code, out, errOut := e.exec(lines.String(), "--output", "json", "message", "send", "s", "t", "--partition", "0")
	if code != 0 || errOut != "" {
		t.Fatalf("send: exit %d, stderr %q (no progress bar off a terminal)", code, errOut)
	}
	var confs jsonmodel.SendMessagesConfirmations
	if err := json.Unmarshal([]byte(out), &confs); err != nil || len(confs.Confirmations) != 3 || confs.Confirmations[2].BaseOffset != 2000 {
		t.Fatalf("batches %+v: %v", confs, err)
	}
	// Several poll batches merge into one object (mergePolled).
	objs := e.okPolled("message", "poll", "s", "t", "--count", "2500")
	got := flatten(objs...)
	if len(objs) != 1 || objs[0].CurrentOffset != 2499 || len(got) != 2500 || got[2499].Text != "m2499" || got[1000].Offset != 1000 {
		t.Fatalf("polled %d messages in %d objects", len(got), len(objs))
	}
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	for _, w := range []io.Writer{&bytes.Buffer{}, devNull} {
		if bar := (&app{errOut: w}).progress(5000, "x"); bar != nil {
			t.Fatalf("progress bar drawn on %T, not a terminal", w)
		}
	}
	contains(t, "unknown verb", e.fails("stream", "bogus"), `error: unknown command "bogus" for "iggy stream"`)
	contains(t, "help", e.ok("stream"), "Available Commands", "create")
}

func TestTLSFlags(t *testing.T) {
	cert, err := clientplane.GenerateSelfSigned()
	if err != nil {
		t.Fatal(err)
	}
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, cert.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, func(o *actors.Options) {
		o.TLS = cert.ServerConfig()
		o.Config.TCP.TLS.Enabled = true
	})
	e.ok("--tls", "--tls-ca-file", ca, "--tls-domain", "localhost", "me")
	contains(t, "unknown CA", e.fails("--reconnect-retries", "0", "--tls", "--tls-domain", "localhost", "me"),
		"error: CannotEstablishConnection (9)")
	e.ok("--tls", "--insecure", "me")
	var me jsonmodel.ClientInfoDetails
	e.okJSON(&me, "--transport", "quic", "--address", e.node.QUICAddr(), "--tls-ca-file", ca, "me")
	if me.Transport != "QUIC" {
		t.Fatalf("quic me %+v", me)
	}
}

// hiddenCause unwraps to a code its message does not mention.
type hiddenCause struct{ code wire.ErrorCode }

func (h hiddenCause) Error() string { return "x509: certificate signed by unknown authority" }
func (h hiddenCause) Unwrap() error { return h.code }

func TestDescribeError(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&wire.StatusError{Code: wire.ErrStreamNameAlreadyExists}, "StreamNameAlreadyExists (1012)"},
		{&wire.ResultError{Code: wire.ErrStreamNameAlreadyExists}, "StreamNameAlreadyExists (1012)"},
		{hiddenCause{wire.ErrCannotEstablishConnection}, "CannotEstablishConnection (9): x509: certificate signed by unknown authority"},
		{io.ErrUnexpectedEOF, "unexpected EOF"},
	} {
		if got := describeError(tc.err); got != tc.want {
			t.Errorf("describeError(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

// server-behaviour.md 5.1: Balanced sends rotate over the topic's
// partitions even when each send is its own CLI process (its own
// connection and client): four sends on three partitions hit all three.
func TestBalancedSendsFromSeparateInvocationsRotate(t *testing.T) {
	e := newEnv(t)
	e.ok("stream", "create", "rr")
	e.ok("topic", "create", "rr", "t", "--partitions", "3")
	var hit []uint32
	for i := range 4 {
		var confs jsonmodel.SendMessagesConfirmations
		e.okJSON(&confs, "message", "send", "rr", "t", "m"+strconv.Itoa(i))
		if len(confs.Confirmations) != 1 {
			t.Fatalf("send %d: confirmations %+v", i, confs)
		}
		hit = append(hit, confs.Confirmations[0].PartitionID)
	}
	if want := []uint32{0, 1, 2, 0}; !slices.Equal(hit, want) {
		t.Fatalf("balanced sends went to partitions %v, want %v", hit, want)
	}
}
