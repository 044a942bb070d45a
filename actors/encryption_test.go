package actors

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"iggynode/client"
	"iggynode/config"
	"iggynode/internal/testutil"
	"iggynode/wire"
)

// Markers only message payloads and user headers carry: no file under an
// encrypted node's data directory may hold them.
const (
	payloadMarker = "PLAINTEXT-PAYLOAD-ZEBRA"
	headerMarker  = "PLAINTEXT-HEADER-OKAPI"
)

var (
	atRestKey = base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0x5a}, 32))
	wrongKey  = base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0xa5}, 32))
)

// markedBatch is batch b of per messages with fixed ids and origin
// timestamps (so two nodes frame them identically), every payload and
// header value carrying a marker.
func markedBatch(b, per int) []wire.Message {
	msgs := make([]wire.Message, per)
	for i := range msgs {
		n := b*per + i
		msgs[i] = wire.Message{ID: wire.U128{Lo: uint64(n) + 1, Hi: 0xe1}, OriginTimestamp: 1_700_000_000_000_000 + uint64(n),
			Payload: []byte(fmt.Sprintf("%s-%04d-%s", payloadMarker, n, strings.Repeat("z", n*17%200)))}
		if i%2 == 0 {
			msgs[i].Headers = wire.UserHeaders{{Key: "note", Kind: wire.KindString, Value: []byte(fmt.Sprintf("%s-%d", headerMarker, n))}}
		}
	}
	return msgs
}

// nodeFromEnv starts a node configured the way cmd/node is (compiled
// defaults, then IGGY_* variables), on loopback port 0 with data in dir.
func nodeFromEnv(t *testing.T, dir string, log *slog.Logger, env ...string) (*Node, error) {
	t.Helper()
	env = append([]string{"IGGY_SYSTEM_PATH=" + dir, "IGGY_TCP_ADDRESS=127.0.0.1:0", "IGGY_QUIC_ENABLED=false",
		"IGGY_WEBSOCKET_ENABLED=false", "IGGY_HTTP_ADDRESS=127.0.0.1:0"}, env...)
	cfg, _, err := config.Load("", env)
	if err != nil {
		return nil, err
	}
	return Start(Options{Config: cfg, RootUsername: "iggy", RootPassword: "iggy", Logger: log})
}

// encryptionEnv is the environment of an encrypted node with key.
func encryptionEnv(key string) []string {
	return []string{"IGGY_SYSTEM_ENCRYPTION_ENABLED=true", "IGGY_SYSTEM_ENCRYPTION_KEY=" + key}
}

// atRestPoll is one poll both nodes answer.
type atRestPoll struct {
	consumer wire.Consumer
	part     wire.OptionalPartition
	s        wire.PollingStrategy
	count    uint32
}

// wholeAndSliced polls whole records and a slice across batches;
// withGroup adds a consumer group's poll (of a member that joined in this
// run: members do not outlive their connection).
var (
	wholeAndSliced = []atRestPoll{
		{wire.SingleConsumer(wire.ID(1)), wire.Partition(0), wire.FirstStrategy(), 1000},
		{wire.SingleConsumer(wire.ID(1)), wire.Partition(0), wire.OffsetStrategy(7), 6},
	}
	withGroup = append(wholeAndSliced[:2:2], atRestPoll{wire.GroupConsumer(wire.ID(0)), wire.Partition(0), wire.NextStrategy(), 100})
)

// atRestPolls runs polls and returns the replies.
func atRestPolls(t *testing.T, ctx context.Context, c *client.Client, polls []atRestPoll) []*wire.PolledMessages {
	t.Helper()
	var out []*wire.PolledMessages
	for _, p := range polls {
		r, err := c.PollMessages(ctx, p.consumer, wire.ID(0), wire.ID(0), p.part, p.s, p.count, false)
		if err != nil {
			t.Fatalf("poll %+v: %v", p.s, err)
		}
		out = append(out, r)
	}
	return out
}

// fillMarked creates stream 0, topic 0 (one partition) and group 0, joins
// it, and sends 4 batches of 5 marked messages.
func fillMarked(t *testing.T, ctx context.Context, c *client.Client) {
	t.Helper()
	if _, err := c.CreateStream(ctx, "vault", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, wire.ID(0), "t", 1, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateConsumerGroup(ctx, wire.ID(0), wire.ID(0), "g"); err != nil {
		t.Fatal(err)
	}
	for b := range 4 {
		if _, err := c.SendMessages(ctx, wire.ID(0), wire.ID(0), wire.PartitionID(0), markedBatch(b, 5)); err != nil {
			t.Fatalf("send %d: %v", b, err)
		}
	}
}

// connectMember fills a started node's partition with the marked
// batches, then logs in as root and joins group 0 of stream 0, topic 0.
func connectMember(t *testing.T, n *Node) (context.Context, *client.Client) {
	t.Helper()
	ctx, c := rootClient(t, n)
	fillMarked(t, ctx, c)
	if err := c.JoinConsumerGroup(ctx, wire.ID(0), wire.ID(0), wire.ID(0)); err != nil {
		t.Fatal(err)
	}
	return ctx, c
}

// samePolls checks that got are the replies in want, message for message
// (offset, id, origin timestamp, frame checksum, payload, user headers),
// record for record (batch_length, message_count, base_offset), and that
// every record's checksums verify (client-plane.md 13.4). Only the server
// timestamps (and so the batch checksums) may differ between two nodes.
func samePolls(t *testing.T, got, want []*wire.PolledMessages) {
	t.Helper()
	for i := range got { // want may hold more polls (withGroup)
		g, w := client.Messages(got[i]), client.Messages(want[i])
		if len(g) != len(w) || len(g) == 0 {
			t.Fatalf("poll %d: %d messages, want %d", i, len(g), len(w))
		}
		for j := range w {
			a, b := g[j], w[j]
			if a.Offset != b.Offset || a.ID != b.ID || a.OriginTimestamp != b.OriginTimestamp || a.Checksum != b.Checksum ||
				!bytes.Equal(a.Payload, b.Payload) || !bytes.Equal(a.UserHeaders, b.UserHeaders) {
				t.Fatalf("poll %d message %d: %+v, want %+v", i, j, a, b)
			}
		}
		gr, wr := wire.RecordsOf(got[i].Records), wire.RecordsOf(want[i].Records)
		for {
			a, ok := gr.Next()
			b, ok2 := wr.Next()
			if ok != ok2 {
				t.Fatalf("poll %d: record counts differ", i)
			}
			if !ok {
				break
			}
			if a.Length() != b.Length() || a.MessageCount() != b.MessageCount() || a.BaseOffset() != b.BaseOffset() {
				t.Fatalf("poll %d: record %+v, want %+v", i, a.Header(), b.Header())
			}
			if err := wire.ValidateBatch(a, a.MessageCount()); err != nil {
				t.Fatalf("poll %d: served record does not verify: %v", i, err)
			}
		}
	}
}

// filesHolding lists the files under dir that contain any marker.
func filesHolding(t *testing.T, dir string, markers ...string) []string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range markers {
			if bytes.Contains(b, []byte(m)) {
				found = append(found, fmt.Sprintf("%s (%s)", path, m))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// server-behaviour.md 11.3 system.encryption, client-plane.md 13.4: on a
// real node with encryption on, no file under the data directory holds a
// payload or user header in plaintext; polls (whole, sliced, a consumer
// group's, from the tail cache and, after a restart with the key from
// IGGY_SYSTEM_ENCRYPTION_KEY, read back from the segments) serve what a
// node without encryption serves. A wrong key is a clear refusal with
// InvalidEncryptionKey (70), no panic, the rest of the node serving; no
// key, or encryption off over encrypted data, refuses the start.
func TestEncryptionAtRestOnARealNode(t *testing.T) {
	quiet := slog.New(slog.DiscardHandler)
	plainDir, dir := t.TempDir(), t.TempDir()
	plain, err := nodeFromEnv(t, plainDir, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	ctx, pc := connectMember(t, plain)
	want := atRestPolls(t, ctx, pc, withGroup)
	if files := filesHolding(t, plainDir, payloadMarker, headerMarker); len(files) == 0 {
		t.Fatal("the plaintext node's files hold no marker: the scan proves nothing")
	}

	node, err := nodeFromEnv(t, dir, quiet, encryptionEnv(atRestKey)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, c := connectMember(t, node)
	samePolls(t, atRestPolls(t, ctx, c, withGroup), want)
	if files := filesHolding(t, dir, payloadMarker, headerMarker); len(files) > 0 {
		t.Fatalf("plaintext at rest: %v", files)
	}
	closeNode(t, node, c)

	// Restarted with the same key: the tail cache is empty, every record
	// is read back from the segments and opened.
	node, err = nodeFromEnv(t, dir, quiet, encryptionEnv(atRestKey)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, c = rootClient(t, node)
	samePolls(t, atRestPolls(t, ctx, c, wholeAndSliced), want)
	closeNode(t, node, c)

	// Restarted with another key: the node starts and says why it cannot
	// serve messages; polls and sends are refused with 70.
	var logs testutil.Buffer
	node, err = nodeFromEnv(t, dir, slog.New(slog.NewTextHandler(&logs, nil)), encryptionEnv(wrongKey)...)
	if err != nil {
		t.Fatalf("a wrong key must not stop the node: %v", err)
	}
	if !strings.Contains(logs.String(), "system.encryption.key does not open the messages stored") {
		t.Fatalf("no clear log line for the wrong key:\n%s", logs.String())
	}
	ctx, c = rootClient(t, node)
	if _, err := c.PollMessages(ctx, wire.SingleConsumer(wire.ID(1)), wire.ID(0), wire.ID(0), wire.Partition(0), wire.FirstStrategy(), 10, false); !errors.Is(err, wire.ErrInvalidEncryptionKey) {
		t.Fatalf("poll under a wrong key: %v", err)
	}
	if _, err := c.SendMessages(ctx, wire.ID(0), wire.ID(0), wire.PartitionID(0), markedBatch(9, 1)); !errors.Is(err, wire.ErrInvalidEncryptionKey) {
		t.Fatalf("send under a wrong key: %v", err)
	}
	if s, err := c.GetStreams(ctx); err != nil || len(s) != 1 {
		t.Fatalf("the rest of the node must serve: %v, %v", s, err)
	}
	if strings.Contains(logs.String(), wrongKey) || strings.Contains(logs.String(), atRestKey) {
		t.Fatal("a key reached the log")
	}
	closeNode(t, node, c)

	for name, env := range map[string][]string{
		"encryption off over encrypted messages": nil,
		"no key":                                 {"IGGY_SYSTEM_ENCRYPTION_ENABLED=true"},
		"a key that is not base64":               encryptionEnv("not*base64!"),
	} {
		if n, err := nodeFromEnv(t, dir, quiet, env...); err == nil {
			n.Close()
			t.Fatalf("%s: the node started", name)
		} else if !strings.Contains(err.Error(), "system.encryption") {
			t.Fatalf("%s: the refusal does not name system.encryption: %v", name, err)
		}
	}

	// Nothing above changed the data: the right key still serves it all.
	node, err = nodeFromEnv(t, dir, quiet, encryptionEnv(atRestKey)...)
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	ctx, c = rootClient(t, node)
	samePolls(t, atRestPolls(t, ctx, c, wholeAndSliced), want)
}

// closeNode closes the client, then the node.
func closeNode(t *testing.T, n *Node, c *client.Client) {
	t.Helper()
	_ = c.Close()
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
}

// replica-plane.md 13.3 item 1 and 7.6: with encryption on, a backup
// that missed the writes catches up by partition state transfer, whose
// SEGMENT_LOG artifacts carry the sealed batches: it ends with the
// primary's bytes, none of them plaintext, and serves the plaintext.
func TestLateBackupCatchesUpEncryptedByStateTransfer(t *testing.T) {
	var logs testutil.Buffer
	key, _ := base64.StdEncoding.DecodeString(atRestKey)
	nodes := startNodes(t, 3, func(o *Options) {
		o.Config.Partition.EvictedRingCapacity = 1
		o.Config.System.Encryption = config.Encryption{Enabled: true, Key: atRestKey}
		o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	relink := unlinkReplica2(t, nodes)
	ctx, c := rootClient(t, nodes[0])
	if _, err := c.CreateStream(ctx, "vault", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, wire.ID(0), "t", 1, nil); err != nil {
		t.Fatal(err)
	}
	var sent []wire.Message
	send := func(from, to int) {
		for b := from; b < to; b++ {
			msgs := markedBatch(b, 2)
			if _, err := c.SendMessages(ctx, wire.ID(0), wire.ID(0), wire.PartitionID(0), msgs); err != nil {
				t.Fatalf("send %d: %v", b, err)
			}
			sent = append(sent, msgs...)
		}
	}
	send(0, 8)
	relink()
	send(8, 10)
	group, _ := wire.PartitionGroup(0, 0, 0)
	var late []byte
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		primary, n := storedBatches(nodes[0], group)
		late, _ = storedBatches(nodes[2], group)
		if n > 0 && bytes.Equal(primary, late) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica 2 holds %d bytes of the primary's %d\n%s", len(late), len(primary), logs.String())
		}
	}
	if !logs.Await(`msg="state transfer installed" partition=0 group=`+fmt.Sprint(group), 5*time.Second) {
		t.Fatalf("no partition state transfer was installed\n%s", logs.String())
	}
	// The backup that replicated every prepare stored the primary's sealed
	// bytes too (replica-plane.md 5.13 rule 4: verified, journaled verbatim).
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		backup, _ := storedBatches(nodes[1], group)
		if bytes.Equal(backup, late) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica 1 holds %d bytes, unlike the primary's %d", len(backup), len(late))
		}
	}
	if bytes.Contains(late, []byte(payloadMarker)) || bytes.Contains(late, []byte(headerMarker)) {
		t.Fatal("the transferred segments hold plaintext")
	}
	cipher, err := wire.NewBatchCipher(key)
	if err != nil {
		t.Fatal(err)
	}
	if _, n, err := cipher.AppendOpenedRecord(nil, wire.Batch(late[:wire.Batch(late).Length()]), 0, 100); err != nil || n == 0 {
		t.Fatalf("the transferred batches are not sealed under the cluster's key: %d, %v", n, err)
	}
	for _, n := range nodes {
		if files := filesHolding(t, n.opts.Config.System.Path, payloadMarker, headerMarker); len(files) > 0 {
			t.Fatalf("plaintext at rest: %v", files)
		}
	}
	// The late backup serves the plaintext from its installed segments.
	lctx, lc := rootClient(t, nodes[2])
	var got []wire.PolledMessage
	for deadline := time.Now().Add(10 * time.Second); len(got) < len(sent); time.Sleep(50 * time.Millisecond) {
		p, err := lc.PollMessages(lctx, wire.SingleConsumer(wire.ID(1)), wire.ID(0), wire.ID(0), wire.Partition(0), wire.FirstStrategy(), 100, false)
		if err != nil {
			t.Fatalf("poll on the late backup: %v", err)
		}
		got = client.Messages(p)
		if time.Now().After(deadline) {
			t.Fatalf("the late backup serves %d of %d messages", len(got), len(sent))
		}
	}
	for i, m := range sent {
		if got[i].ID != m.ID || !bytes.Equal(got[i].Payload, m.Payload) || !bytes.Equal(got[i].UserHeaders, wire.AppendUserHeaders(nil, m.Headers)) {
			t.Fatalf("message %d served by the late backup: %+v", i, got[i])
		}
	}
}
