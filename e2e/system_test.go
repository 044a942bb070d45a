package e2e

import (
	"archive/zip"
	"bytes"
	"io"
	"testing"

	"iggynode/client"
	"iggynode/wire"
)

// GetClients lists every connection that sent a frame, GetClient finds one
// by its number and answers an unknown one with an empty body (8.1.7-8.1.8).
func TestClientsListing(t *testing.T) {
	n := startNode(t)
	a := connect(t, n)
	b := connect(t, n)
	ctx := ctxT(t)
	want, wantAnon := 2, 0
	if tc := transportFor(t); tc.kind == client.TransportTCP && !tc.tls {
		r := dialRaw(t, n)
		r.send(request(wire.OpNonReplicated, wire.CodePing, 1, 0, nil)) // not logged in, but seen
		r.read()
		want, wantAnon = 3, 1
	}
	list, err := a.GetClients(ctx)
	if err != nil || len(list) != want {
		t.Fatalf("GetClients: %+v %v", list, err)
	}
	anon := 0
	for _, c := range list {
		if c.UserID == wire.UserIDNone {
			anon++
		}
		if c.Address == "" {
			t.Fatalf("client record %+v", c)
		}
	}
	if anon != wantAnon {
		t.Fatalf("%d anonymous connections, want %d", anon, wantAnon)
	}
	me, err := b.GetMe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got, err := a.GetClient(ctx, me.ClientID)
	if err != nil || got.ClientID != me.ClientID || got.Address != me.Address {
		t.Fatalf("GetClient(%d): %+v %v", me.ClientID, got, err)
	}
	if _, err := a.GetClient(ctx, 999999); err == nil {
		t.Fatal("an unknown connection must not be found")
	}
}

// GetSnapshot returns a ZIP archive with the requested entries (8.1.3).
func TestSnapshotArchive(t *testing.T) {
	n := startNode(t)
	c := connect(t, n)
	archive, err := c.GetSnapshot(ctxT(t), 2, []uint8{4, 6})
	if err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(archive), int64(len(archive)))
	if err != nil {
		t.Fatalf("not a ZIP archive: %v", err)
	}
	names := map[string]string{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		names[f.Name] = string(b)
	}
	if names["test.txt"] != "test" {
		t.Fatalf("test entry: %q", names["test.txt"])
	}
	if !bytes.Contains([]byte(names["server_config.txt"]), []byte("[tcp]")) {
		t.Fatalf("server_config entry does not hold the runtime configuration: %q", names["server_config.txt"])
	}
	if _, err := c.GetSnapshot(ctxT(t), 9, []uint8{4}); err == nil {
		t.Fatal("an unknown compression must be refused")
	}
}

// client-plane.md 5.4: re-registering a client id on another connection of
// the same node unbinds the first one (reads then get status 40).
func TestReRegisterFencesOtherConnection(t *testing.T) {
	n := startNode(t)
	first := dialRaw(t, n)
	s1 := first.login()
	second := dialRaw(t, n)
	s2 := second.login() // same rawClient id
	if s2 <= s1 {
		t.Fatalf("epochs %d then %d: a re-registration must raise the epoch", s1, s2)
	}
	first.send(request(wire.OpNonReplicated, wire.CodeGetStreams, 1, s1, nil))
	if h := wire.HeaderOf(first.read()).Reply(); h.Status != uint32(wire.ErrUnauthenticated) {
		t.Fatalf("fenced connection read: status %d, want 40", h.Status)
	}
	second.send(request(wire.OpNonReplicated, wire.CodeGetStreams, 1, s2, nil))
	if h := wire.HeaderOf(second.read()).Reply(); h.Status != 0 {
		t.Fatalf("current connection read: status %d", h.Status)
	}
}

// 14.2: the server resolves Balanced round robin and MessagesKey by XXH32.
func TestServerSidePartitioning(t *testing.T) {
	n := startNode(t)
	c := connect(t, n)
	ctx := ctxT(t)
	if _, err := c.CreateStream(ctx, "s", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, wire.ID(0), "t", 3, nil); err != nil {
		t.Fatal(err)
	}
	r := dialRaw(t, n)
	session := r.login()
	send := func(p wire.Partitioning) uint32 {
		t.Helper()
		batch, err := wire.AppendBatch(nil, []wire.Message{{ID: wire.U128{Lo: 1}, OriginTimestamp: 1, Payload: []byte("x")}})
		if err != nil {
			t.Fatal(err)
		}
		body := append(wire.AppendSendMessagesHeader(nil, wire.ID(0), wire.ID(0), p, 1), batch...)
		r.send(request(wire.OpSendMessages, 0, 1, session, body))
		f := r.read()
		var conf wire.SendConfirmations
		if h := wire.HeaderOf(f).Reply(); h.Status != 0 || conf.Decode(f[wire.HeaderSize:]) != nil || len(conf) != 1 {
			t.Fatalf("send %+v: %+v", p, h)
		}
		return conf[0].PartitionID
	}
	var got []uint32
	for i := 0; i < 4; i++ {
		got = append(got, send(wire.Balanced()))
	}
	if got[0] != 0 || got[1] != 1 || got[2] != 2 || got[3] != 0 {
		t.Fatalf("balanced: %v", got)
	}
	if p := send(wire.MessagesKey([]byte("order-42"))); p != 1 { // client-plane.md 17.1
		t.Fatalf("key order-42 -> partition %d, want 1", p)
	}
	if p := send(wire.MessagesKey([]byte("user-1"))); p != 0 {
		t.Fatalf("key user-1 -> partition %d, want 0", p)
	}
}
