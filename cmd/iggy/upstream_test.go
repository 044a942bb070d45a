package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"iggynode/wire"
	"iggynode/wire/jsonmodel"
)

// The upstream iggy CLI's forms (issue 19): each command, alias, positional
// form and flag a user of the reference CLI types, against a real node.

func TestUpstreamStreamTopicPartitionForms(t *testing.T) {
	e := newEnv(t)
	e.ok("s", "c", "orders")
	contains(t, "s l", e.ok("s", "l"), "orders")
	contains(t, "stream list -l list", e.ok("stream", "list", "-l", "list"), "NAME: orders")
	contains(t, "s g", e.ok("s", "g", "orders"), "Name", "orders")

	// topic create STREAM NAME PARTITIONS COMPRESSION EXPIRY... -m SIZE
	// (http.md 4.2: compression_algorithm is "none" or "gzip", the
	// wire's 1 and 2; message_expiry is µs, u64::MAX never.)
	var tp jsonmodel.TopicDetails
	e.okJSON(&tp, "t", "c", "orders", "events", "3", "gzip", "1h", "30m", "-m", "2GB", "-r", "1")
	if len(tp.Partitions) != 3 || tp.CompressionAlgorithm != "gzip" || tp.MessageExpiry != 90*60e6 || tp.MaxTopicSize != 2e9 {
		t.Fatalf("positional topic create: %d partitions, compression %q, expiry %d µs, max size %d",
			len(tp.Partitions), tp.CompressionAlgorithm, tp.MessageExpiry, tp.MaxTopicSize)
	}
	// -r is the replication_factor option: a single node holds one copy.
	contains(t, "t c -r 2 on one node", e.fails("t", "c", "orders", "twice", "1", "-r", "2"), "InvalidReplicationFactor")
	tp = jsonmodel.TopicDetails{}
	e.okJSON(&tp, "topic", "create", "orders", "plain", "1", "none", "unlimited")
	if tp.CompressionAlgorithm != "none" || tp.MessageExpiry != ^uint64(0) {
		t.Fatalf("none/unlimited: compression %q expiry %d", tp.CompressionAlgorithm, tp.MessageExpiry)
	}
	// topic update STREAM TOPIC NAME COMPRESSION EXPIRY
	e.ok("t", "u", "orders", "plain", "plain2", "gzip", "2h")
	tp = jsonmodel.TopicDetails{}
	e.okJSON(&tp, "t", "g", "orders", "plain2")
	if tp.CompressionAlgorithm != "gzip" || tp.MessageExpiry != 2*3600e6 {
		t.Fatalf("topic update: compression %q expiry %d", tp.CompressionAlgorithm, tp.MessageExpiry)
	}
	contains(t, "t l", e.ok("t", "l", "orders"), "events", "plain2")
	e.ok("p", "c", "orders", "events", "2")
	tp = jsonmodel.TopicDetails{}
	e.okJSON(&tp, "t", "g", "orders", "events")
	if len(tp.Partitions) != 5 {
		t.Fatalf("p c: %d partitions", len(tp.Partitions))
	}
	e.ok("p", "d", "orders", "events", "2")
	if code, _, errOut := e.exec("", "seg", "d", "orders", "events", "0", "1"); code != 0 && !strings.Contains(errOut, "error: ") {
		t.Fatalf("seg d: %q", errOut)
	}
	e.ok("t", "p", "orders", "events")
	e.ok("t", "d", "orders", "plain2")
	e.ok("s", "p", "orders")
	e.ok("s", "u", "orders", "shop")
	e.ok("s", "d", "shop")
}

func TestUpstreamMessageForms(t *testing.T) {
	e := newEnv(t)
	e.ok("stream", "create", "s")
	e.ok("topic", "create", "s", "t", "3", "none")

	// message send -p PARTITION -H key:kind:value,... MESSAGE...
	e.ok("m", "s", "s", "t", "-p", "1", "-H", "k:string:v,n:uint32:7,neg:int128:-5,f:float64:1.5,ok:bool:true", "hello", "world")
	out := e.ok("message", "poll", "s", "t", "1", "--first", "-m", "2", "--show-headers")
	contains(t, "poll --show-headers", out, "HEADERS", "hello", "world", "k:string:v", "n:uint32:7", "neg:int128:-5", "f:float64:1.5", "ok:bool:true")
	// Upstream's default count with a PARTITION argument is 1.
	if out := e.ok("m", "p", "s", "t", "1", "--first"); !strings.Contains(out, "hello") || strings.Contains(out, "world") {
		t.Fatalf("poll with upstream defaults: %q", out)
	}
	contains(t, "poll --offset", e.ok("m", "p", "s", "t", "1", "-o", "1", "-m", "5"), "world")
	if out := e.ok("m", "p", "s", "t", "1", "-l"); !strings.Contains(out, "world") || strings.Contains(out, "hello") {
		t.Fatalf("poll --last: %q", out)
	}
	// --next with -c CONSUMER and -a: the stored offset advances.
	contains(t, "poll --next", e.ok("m", "p", "s", "t", "1", "-n", "-c", "9", "-a"), "hello")
	contains(t, "poll --next again", e.ok("m", "p", "s", "t", "1", "-n", "-c", "9", "-a"), "world")
	contains(t, "exclusive strategies", e.fails("m", "p", "s", "t", "1", "--first", "--last"), "exclusive")
	// -m is the message key for send.
	var confs jsonmodel.SendMessagesConfirmations
	e.okJSON(&confs, "m", "s", "s", "t", "-m", "order-42", "keyed")
	if c := confs.Confirmations; len(c) != 1 || c[0].PartitionID != wire.PartitionIndexForKey([]byte("order-42"), 3) {
		t.Fatalf("keyed send %+v", confs)
	}

	// poll --output-file writes binary messages that send --input-file sends.
	file := filepath.Join(t.TempDir(), "msgs.bin")
	contains(t, "output file", e.ok("m", "p", "s", "t", "1", "--first", "-m", "10", "--output-file", file), "stored 3 messages") // hello, world and keyed (order-42 is partition 1 of 3)
	e.ok("m", "s", "s", "t", "-p", "2", "--input-file", file)
	out = e.ok("m", "p", "s", "t", "2", "--first", "-m", "10", "-s")
	contains(t, "replayed file", out, "hello", "world", "n:uint32:7")

	// message flush STREAM TOPIC PARTITION [-f]: the server's answer, by name
	// (a VSR server never has a buffer to flush, client-plane.md 8.4.3).
	contains(t, "flush", e.fails("m", "f", "s", "t", "1", "-f"), "error: FeatureUnavailable (5)")
}

func TestUpstreamOffsetAndGroupForms(t *testing.T) {
	e := newEnv(t)
	e.ok("stream", "create", "s")
	e.ok("topic", "create", "s", "t", "2", "none")
	e.ok("message", "send", "s", "t", "-p", "1", "a", "b", "c", "d", "e", "f")

	e.ok("consumer-offset", "set", "7", "s", "t", "1", "4")
	contains(t, "o g", e.ok("o", "g", "7", "s", "t", "1"), "STORED OFFSET", "4")
	e.ok("o", "d", "7", "s", "t", "1")
	contains(t, "offset deleted", e.ok("consumer-offset", "get", "7", "s", "t", "1"), "no stored offset")

	var g jsonmodel.ConsumerGroupDetails
	e.okJSON(&g, "g", "c", "s", "t", "readers")
	if g.Name != "readers" || g.PartitionsCount != 2 {
		t.Fatalf("g c: %+v", g)
	}
	contains(t, "consumer-group list", e.ok("consumer-group", "list", "s", "t"), "readers")
	contains(t, "g g", e.ok("g", "g", "s", "t", "readers"), "readers", "Members")
	e.ok("consumer-group", "poll", "s", "t", "readers", "-m", "100", "-a")
	contains(t, "group offset, upstream kind", e.ok("o", "g", "readers", "s", "t", "1", "-k", "consumer-group"), "STORED OFFSET", "5")
	contains(t, "bad kind", e.fails("o", "g", "readers", "s", "t", "1", "-k", "nobody"), "--kind")
	e.ok("g", "d", "s", "t", "readers")
}

func TestUpstreamUserTokenClientClusterForms(t *testing.T) {
	e := newEnv(t)
	var u jsonmodel.UserInfoDetails
	e.okJSON(&u, "u", "c", "bob", "secret-1", "-u", "inactive")
	if u.Status != "inactive" {
		t.Fatalf("user create -u inactive: %+v", u)
	}
	e.ok("u", "n", "bob", "robert")
	e.ok("u", "s", "robert", "active")
	e.ok("u", "pwd", "robert", "secret-1", "secret-2")
	contains(t, "u g", e.ok("u", "g", "robert"), "robert", "active")
	contains(t, "new password", e.ok("--username", "robert", "--password", "secret-2", "me"), "Client ID")
	contains(t, "u l -l list", e.ok("u", "l", "-l", "list"), "USERNAME: iggy", "USERNAME: robert")
	e.ok("u", "d", "robert")
	// The root's created_at is the spec's sentinel (1 µs), not a date.
	if out := e.ok("user", "get", "iggy"); strings.Contains(out, "1970") {
		t.Fatalf("root shown created in 1970: %q", out)
	}

	contains(t, "pat c NAME EXPIRY", e.ok("pat", "c", "ci", "1", "day"), "Token")
	contains(t, "pat l", e.ok("pat", "l"), "ci")
	e.ok("pat", "d", "ci")

	contains(t, "c l", e.ok("c", "l"), "CLIENT ID")
	contains(t, "ping -c", e.ok("ping", "-c", "2"), "pong")
	contains(t, "cluster metadata", e.ok("cluster", "metadata"), "single-node", "iggy-node", "leader", "healthy", "LAST HEARD", "ago")
	contains(t, "cluster m", e.ok("cluster", "m"), "single-node")

	dir := t.TempDir()
	contains(t, "snapshot -o -c -s", e.ok("snapshot", "-o", dir, "-c", "stored", "-s", "server_config"), "Wrote", dir)
	if zips, _ := filepath.Glob(filepath.Join(dir, "snapshot_*.zip")); len(zips) != 1 {
		t.Fatalf("snapshot -o wrote %v", zips)
	}
}

func TestUpstreamGlobalOptions(t *testing.T) {
	e := newEnv(t)
	e.ok("stream", "create", "s")
	// --quiet stream list used to be `unknown command "list"`.
	for _, q := range []string{"--quiet", "-q"} {
		if out := e.ok(q, "stream", "list"); out != "" {
			t.Fatalf("%s printed %q", q, out)
		}
	}
	contains(t, "quiet errors", e.fails("-q", "stream", "get", "nope"), "error: ")
	// -u/-p before the command are the credentials; after it the
	// subcommand's own letters (message send -p PARTITION).
	contains(t, "-u -p", e.ok("-u", "iggy", "-p", "iggy", "stream", "list"), "s")
	contains(t, "wrong password", e.fails("-u", "iggy", "-p", "nope", "stream", "list"), "InvalidCredentials")
	e.ok("-u", "iggy", "-p", "iggy", "topic", "create", "s", "t", "2", "none")
	var confs jsonmodel.SendMessagesConfirmations
	e.okJSON(&confs, "-u", "iggy", "message", "send", "s", "t", "-p", "1", "x")
	if c := confs.Confirmations; len(c) != 1 || c[0].PartitionID != 1 {
		t.Fatalf("send -p 1 after global -u: %+v", confs)
	}
	var js []jsonmodel.Stream
	e.okJSON(&js, "stream", "list") // okJSON passes --output json; -o is the short form
	if len(js) != 1 || js[0].Name != "s" {
		t.Fatalf("stream list --output json: %+v", js)
	}
	code, out, _ := e.exec("", "-o", "json", "stream", "list")
	if code != 0 || !strings.HasPrefix(strings.TrimSpace(out), "[") {
		t.Fatalf("-o json: exit %d, %q", code, out)
	}

	// --debug logs to stderr, --debug=FILE to a file; stdout is unchanged.
	code, out, errOut := e.exec("", "-d", "stream", "list")
	if code != 0 || !strings.Contains(out, "s") || !strings.Contains(errOut, "connect") || !strings.Contains(errOut, "stream list") {
		t.Fatalf("-d: exit %d, out %q, err %q", code, out, errOut)
	}
	logFile := filepath.Join(t.TempDir(), "debug.log")
	e.ok("--debug="+logFile, "stream", "list")
	if b, _ := os.ReadFile(logFile); !bytes.Contains(b, []byte("connect")) {
		t.Fatalf("debug file %q", b)
	}

	contains(t, "--version", e.ok("--version"), "iggynode 0.9.0", "protocol 0.11.0")
}

// A username given without a password is asked for on a terminal.
func TestPasswordPrompt(t *testing.T) {
	e := newEnv(t)
	var prompts []string
	answer := "iggy"
	saved := promptPassword
	promptPassword = func(_ io.Reader, _ io.Writer, prompt string) (string, bool, error) {
		prompts = append(prompts, prompt)
		return answer, true, nil
	}
	t.Cleanup(func() { promptPassword = saved })
	e.ok("--username", "iggy", "stream", "list")
	if len(prompts) != 1 || prompts[0] != "Password for iggy: " {
		t.Fatalf("prompts %q", prompts)
	}
	answer = "wrong"
	contains(t, "wrong answer", e.fails("--username", "iggy", "stream", "list"), "InvalidCredentials")
	// With a password given there is nothing to ask.
	e.ok("--username", "iggy", "--password", "iggy", "stream", "list")
	if len(prompts) != 2 {
		t.Fatalf("asked %d times", len(prompts))
	}
}

// Contexts: named settings, one active; each has its own session.
func TestContextsAndSessions(t *testing.T) {
	e := newEnv(t)
	bare := func(args ...string) (int, string, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var out, errOut bytes.Buffer
		code := run(ctx, args, strings.NewReader(""), &out, &errOut)
		return code, out.String(), errOut.String()
	}
	contains(t, "ctx list", e.ok("context", "list"), "*", "default")
	if code, _, errOut := bare("ctx", "use", "nowhere"); code == 0 || !strings.Contains(errOut, "not defined") {
		t.Fatalf("use of an undefined context: %d %q", code, errOut)
	}
	if code, _, errOut := bare("--address", e.node.TCPAddr(), "context", "create", "here"); code != 0 {
		t.Fatalf("context create: %q", errOut)
	}
	if code, _, errOut := bare("ctx", "u", "here"); code != 0 {
		t.Fatalf("ctx use: %q", errOut)
	}
	// No --address: the active context says where the node is.
	if code, out, errOut := bare("ctx", "l"); code != 0 || !strings.Contains(out, "*  here") {
		t.Fatalf("ctx l: %d %q %q", code, out, errOut)
	}
	if code, out, errOut := bare("stream", "list"); code != 0 || !strings.Contains(out, "NAME") {
		t.Fatalf("stream list in context here: %d %q %q", code, out, errOut)
	}
	// session login / show / logout, in the context's own session file.
	if code, out, errOut := bare("session", "login"); code != 0 || !strings.Contains(out, "session-here.json") {
		t.Fatalf("session login: %d %q %q", code, out, errOut)
	}
	if code, out, _ := bare("session", "show"); code != 0 || !strings.Contains(out, "iggy") || strings.Contains(out, "Not logged in") {
		t.Fatalf("session show: %q", out)
	}
	if code, _, errOut := bare("session", "logout"); code != 0 {
		t.Fatalf("session logout: %q", errOut)
	}
	if code, _, _ := bare("ctx", "use", "default"); code != 0 {
		t.Fatal("back to default")
	}
	if code, _, _ := bare("ctx", "d", "here"); code != 0 {
		t.Fatal("ctx delete")
	}
}

// A stored session's token sent to a server that does not know it says
// to log in again.
func TestStaleSessionTokenHint(t *testing.T) {
	e := newEnv(t)
	e.ok("login")
	other := testNode(t, nil)
	code, _, errOut := e.execAt(other.TCPAddr(), "stream", "list")
	if code == 0 {
		t.Fatal("a token of another server was accepted")
	}
	contains(t, "stale token", errOut, "InvalidPersonalAccessToken", "hint:", "iggy login")
}

// execAt is exec against another address, with the same session file.
func (e *cliEnv) execAt(addr string, args ...string) (int, string, string) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	full := append([]string{"--address", addr, "--session-file", e.session}, args...)
	code := run(ctx, full, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}
