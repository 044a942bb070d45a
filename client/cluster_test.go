package client

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"iggynode/wire"
)

// Cluster admin commands 9001..9004 (docs/reconfiguration.md, "Admin
// surface") against the fake: request bodies and the reply are built here
// by hand from the doc's tables, never with wire's encoders.

// statusReplyBody is a ClusterStatus reply: epoch 1, voters {0, 2},
// learners {3}, target {0, 2, 3}, epoch_op 1042, view 0x01000002; node 0
// the live primary at commit 1050, node 3 a live learner at commit 1049
// with no name, no ip and only a TCP port.
func statusReplyBody() []byte {
	var b lb
	b.u32(1).u32(0b0101).u32(0b1000).u32(0b1101).u64(1042).u32(0x01000002).u32(2)
	b.u8(0).u8(0).u8(1).u8(0).u64(1050).name("n0:8070").name("node-0").name("n0").u16(8090).u16(8080).u16(3000).u16(8092)
	b.u8(3).u8(1).u8(0).u8(0).u64(1049).name("n3:8070").u8(0).u8(0).u16(8090).u16(0).u16(0).u16(0)
	return b.out()
}

// statusReplyValue is what statusReplyBody decodes to.
func statusReplyValue() wire.ClusterStatusReply {
	return wire.ClusterStatusReply{
		Epoch: 1, Voters: 0b0101, Learners: 0b1000, Target: 0b1101, EpochOp: 1042, View: 0x01000002,
		Nodes: []wire.ClusterStatusNode{
			{Spec: wire.NodeSpec{ID: 0, ReplicaAddress: "n0:8070", Name: "node-0", IP: "n0",
				TCPPort: 8090, QUICPort: 8080, HTTPPort: 3000, WebSocketPort: 8092},
				Role: wire.MemberVoter, Primary: true, Status: wire.MemberLive, Commit: 1050},
			{Spec: wire.NodeSpec{ID: 3, ReplicaAddress: "n3:8070", TCPPort: 8090},
				Role: wire.MemberLearner, Status: wire.MemberLive, Commit: 1049},
		},
	}
}

// answerCluster makes f answer 9001..9004 with statusReplyBody under
// operation 2 (no result section).
func answerCluster(f *fake) {
	f.setScript(func(fc *fakeConn, r fakeRequest) bool {
		if r.operation == 2 && r.code >= 9001 && r.code <= 9004 {
			fc.reply(r, 2, 0, statusReplyBody())
			return true
		}
		return false
	})
}

func TestClusterAdminCommands(t *testing.T) {
	forEachTransport(t, func(t *testing.T, transport string) {
		f := newFakeOn(t, transport)
		answerCluster(f)
		c := loggedIn(t, f, testOptions(f))
		ctx := t.Context()
		spec := wire.NodeSpec{ID: 3, ReplicaAddress: "10.0.0.4:8070", Name: "node-3", TCPPort: 8090, QUICPort: 8080,
			HTTPPort: 3000, WebSocketPort: 8092}
		var specBody lb
		specBody.u8(3).name("10.0.0.4:8070").name("node-3").u8(0).u16(8090).u16(8080).u16(3000).u16(8092)
		var replace lb
		replace.u8(1).u8(5).name("h5:8070").u8(0).name("192.0.2.7").u16(8090).u16(0).u16(0).u16(0)
		for _, s := range []struct {
			name string
			run  func() (wire.ClusterStatusReply, error)
			code uint32
			body []byte
		}{
			{"ClusterAdd", func() (wire.ClusterStatusReply, error) { return c.ClusterAdd(ctx, spec) }, 9001, specBody.out()},
			{"ClusterRemove", func() (wire.ClusterStatusReply, error) { return c.ClusterRemove(ctx, 2) }, 9002, []byte{2}},
			{"ClusterReplace", func() (wire.ClusterStatusReply, error) {
				return c.ClusterReplace(ctx, 1, wire.NodeSpec{ID: 5, ReplicaAddress: "h5:8070", IP: "192.0.2.7", TCPPort: 8090})
			}, 9003, replace.out()},
			{"ClusterStatus", func() (wire.ClusterStatusReply, error) { return c.ClusterStatus(ctx) }, 9004, nil},
		} {
			n := len(f.requests())
			got, err := s.run()
			if err != nil {
				t.Fatalf("%s: %v", s.name, err)
			}
			if want := statusReplyValue(); !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: reply %+v\nwant %+v", s.name, got, want)
			}
			reqs := f.requests()
			if len(reqs) != n+1 {
				t.Fatalf("%s: %d requests sent, want 1", s.name, len(reqs)-n)
			}
			r := reqs[n]
			// Non-replicated (operation 2) with the code at 196; the
			// request number is the session's current one, not advanced.
			if r.command != 5 || r.operation != 2 || r.code != s.code || r.size != uint32(256+len(s.body)) {
				t.Fatalf("%s: command %d operation %d code %d size %d", s.name, r.command, r.operation, r.code, r.size)
			}
			if r.session != 42 || r.userID != 7 || r.request != 1 {
				t.Fatalf("%s: session %d user %d request %d", s.name, r.session, r.userID, r.request)
			}
			if !bytes.Equal(r.body, s.body) {
				t.Fatalf("%s: body %x, want %x", s.name, r.body, s.body)
			}
		}
	})
}

// Status codes come back as *wire.StatusError matching the named codes,
// and the connection is kept.
func TestClusterAdminErrors(t *testing.T) {
	f := newFake(t)
	var status atomic.Uint32
	f.setScript(func(fc *fakeConn, r fakeRequest) bool {
		if r.operation == 2 && r.code >= 9001 && r.code <= 9004 {
			fc.reply(r, 2, status.Load(), nil)
			return true
		}
		return false
	})
	c := loggedIn(t, f, testOptions(f))
	for _, tc := range []struct {
		code wire.ErrorCode
		text string
	}{
		{wire.ErrReconfigurationInProgress, "ReconfigurationInProgress (20002)"},
		{wire.ErrNodeRemoved, "NodeRemoved (20001)"},
		{wire.ErrUnauthorized, "Unauthorized (41)"},
		{wire.ErrInvalidCommand, "InvalidCommand (3)"},
	} {
		status.Store(uint32(tc.code))
		_, err := c.ClusterRemove(t.Context(), 1)
		var se *wire.StatusError
		if !errors.As(err, &se) || se.Code != tc.code || !errors.Is(err, tc.code) || err.Error() != "denied: "+tc.text {
			t.Fatalf("status %d: got %v", uint32(tc.code), err)
		}
	}
	if err := c.Ping(t.Context()); err != nil || f.connections() != 1 {
		t.Fatalf("connection not kept: %v, %d connections", err, f.connections())
	}
}

// A reply that does not decode is an error naming the command, not a
// zero roster.
func TestClusterStatusBadReply(t *testing.T) {
	f := newFake(t)
	f.setScript(func(fc *fakeConn, r fakeRequest) bool {
		if r.operation == 2 && r.code == 9004 {
			fc.reply(r, 2, 0, append(statusReplyBody(), 0)) // a trailing byte
			return true
		}
		return false
	})
	c := loggedIn(t, f, testOptions(f))
	if _, err := c.ClusterStatus(t.Context()); !errors.Is(err, wire.ErrMalformed) {
		t.Fatalf("got %v, want a malformed reply", err)
	}
}

// A spec the node's decoder would refuse is refused before anything is
// sent.
func TestClusterAdminValidatesLocally(t *testing.T) {
	f := newFake(t)
	answerCluster(f)
	c := loggedIn(t, f, testOptions(f))
	n := len(f.requests())
	for name, run := range map[string]func() error{
		"add id 32": func() error {
			_, err := c.ClusterAdd(t.Context(), wire.NodeSpec{ID: 32, ReplicaAddress: "h:1"})
			return err
		},
		"add empty replica_address": func() error { _, err := c.ClusterAdd(t.Context(), wire.NodeSpec{ID: 1}); return err },
		"remove id 32":              func() error { _, err := c.ClusterRemove(t.Context(), 32); return err },
		"replace old id 40": func() error {
			_, err := c.ClusterReplace(t.Context(), 40, wire.NodeSpec{ID: 1, ReplicaAddress: "h:1"})
			return err
		},
	} {
		if err := run(); !errors.Is(err, wire.ErrInvalidCommand) {
			t.Errorf("%s: got %v, want InvalidCommand", name, err)
		}
	}
	if sent := len(f.requests()) - n; sent != 0 {
		t.Fatalf("%d invalid requests were sent", sent)
	}
}

// A cluster change whose frame was written before the connection dropped
// is not resent (the node does not deduplicate it), while ClusterStatus,
// a read, is resent after the reconnect like any other.
func TestClusterChangeNotResentAfterWrite(t *testing.T) {
	f := newFake(t)
	f.setScript(func(fc *fakeConn, r fakeRequest) bool {
		switch {
		case r.operation == 2 && r.code >= 9001 && r.code <= 9004 && fc.id%2 == 1:
			fc.close() // connections 1 and 3 drop the first admin request
		case r.operation == 2 && r.code >= 9001 && r.code <= 9004:
			fc.reply(r, 2, 0, statusReplyBody())
		default:
			return false
		}
		return true
	})
	opts := testOptions(f)
	opts.Username, opts.Password = "iggy", "iggy"
	opts.Reconnect = ReconnectOptions{Retries: 3, Interval: 10 * time.Millisecond}
	c, err := Connect(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	count := func(code uint32) int {
		n := 0
		for _, r := range f.requests() {
			if r.operation == 2 && r.code == code {
				n++
			}
		}
		return n
	}
	_, err = c.ClusterAdd(t.Context(), wire.NodeSpec{ID: 3, ReplicaAddress: "h:1"})
	var d *DisconnectedError
	if !errors.As(err, &d) || !d.Written || !errors.Is(err, wire.ErrDisconnected) {
		t.Fatalf("written ClusterAdd: got %v", err)
	}
	if n := count(9001); n != 1 {
		t.Fatalf("written ClusterAdd sent %d times", n)
	}
	// Connection 2: ClusterStatus is answered.
	if _, err := c.ClusterStatus(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Connection 2 answers; drop it by hand so connection 3 drops the next.
	if _, err := c.ClusterRemove(t.Context(), 3); err != nil {
		t.Fatal(err)
	}
	if n := count(9002); n != 1 {
		t.Fatalf("ClusterRemove sent %d times", n)
	}
	c.mu.Lock()
	c.dropConn()
	c.mu.Unlock()
	// Connection 3 drops it, connection 4 answers the resend.
	got, err := c.ClusterStatus(t.Context())
	if err != nil || got.Epoch != 1 {
		t.Fatalf("ClusterStatus not resent after a reconnect: %+v, %v", got, err)
	}
	if n := count(9004); n != 3 {
		t.Fatalf("ClusterStatus sent %d times, want 3 (one resend)", n)
	}
}

// 9001..9003 use the connection the metadata writes use: the leader's,
// after the login's redirect.
func TestClusterAdminGoesToTheLeader(t *testing.T) {
	a, b := newFake(t), newFake(t)
	roster := func() []byte {
		return rosterBody("c", node{"a", "127.0.0.1", a.port(), 1, 0}, node{"b", "127.0.0.1", b.port(), 0, 0})
	}
	a.roster, b.roster = roster, roster
	answerCluster(a)
	answerCluster(b)
	c := loggedIn(t, a, testOptions(a))
	if _, err := c.ClusterAdd(t.Context(), wire.NodeSpec{ID: 4, ReplicaAddress: "h:1"}); err != nil {
		t.Fatal(err)
	}
	if _, ok := a.last(2, 9001); ok {
		t.Fatal("ClusterAdd went to the follower")
	}
	r, ok := b.last(2, 9001)
	if !ok || r.session != 42 || binary.LittleEndian.Uint32(r.raw[196:]) != 9001 {
		t.Fatalf("the leader did not get ClusterAdd: %+v", r)
	}
}
