package client

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zeebo/xxh3"

	"iggynode/wire"
)

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// client-plane.md 17.4: the password-shape Register body, byte for byte
// (SDK name and version set to the vector's), sent with operation 1,
// request 0, session 0, a nonzero client id and no command code; the reply's
// result count is stripped and the session is echoed afterwards.
func TestLoginRegisterBodyAndSession(t *testing.T) {
	forEachTransport(t, func(t *testing.T, transport string) {
		f := newFakeOn(t, transport)
		opts := testOptions(f)
		opts.SDKName, opts.SDKVersion = "rust-sdk", "0.11.0"
		c, err := New(opts)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		resp, err := c.Login(t.Context(), "iggy", "iggy")
		if err != nil {
			t.Fatal(err)
		}
		if resp.UserID != 7 || resp.Session != 42 || resp.ServerProtocolVersion != 0x2C00 || resp.ServerVersion != "fake-0.9" {
			t.Fatalf("login response %+v", resp)
		}
		reg := f.requests()[0]
		want := unhex(t, `00 2c 00 00 08 72 75 73 74 2d 73 64 6b 06 30 2e
			31 31 2e 30 04 69 67 67 79 04 69 67 67 79 00 00 00 00`)
		if !bytes.Equal(reg.body, want) {
			t.Fatalf("register body\n got %x\nwant %x", reg.body, want)
		}
		if reg.command != 5 || reg.operation != 1 || reg.request != 0 || reg.session != 0 || reg.size != 256+34 {
			t.Fatalf("register header %+v", reg)
		}
		if reg.clientLo == 0 && reg.clientHi == 0 {
			t.Fatal("register with client id 0")
		}
		if reg.code != 0 || !bytes.Equal(reg.checksum, make([]byte, 16)) {
			t.Fatalf("register carries code %d / checksum %x; neither is stamped by default", reg.code, reg.checksum)
		}
		// 7.15: the roster is read right after the login, under the session.
		roster := f.requests()[1]
		if roster.operation != 2 || roster.code != 12 || roster.session != 42 || roster.request != 1 || roster.clientLo != reg.clientLo {
			t.Fatalf("roster read %+v", roster)
		}
		if err := c.Ping(t.Context()); err != nil {
			t.Fatal(err)
		}
		ping, _ := f.last(2, 1)
		if ping.session != 42 || ping.userID != 7 || ping.request != 1 || ping.clientLo != reg.clientLo || ping.clientHi != reg.clientHi {
			t.Fatalf("ping header %+v", ping)
		}
		if s, u := c.Session(); s != 42 || u != 7 {
			t.Fatalf("Session() = %d, %d", s, u)
		}
	})
}

// 5.2: the token shape is [token Str8][context Str32] after the prefix.
func TestLoginWithTokenBody(t *testing.T) {
	f := newFake(t)
	opts := testOptions(f)
	opts.SDKName, opts.SDKVersion = "go", "1"
	c, _ := New(opts)
	defer c.Close()
	if _, err := c.LoginWithToken(t.Context(), "tok"); err != nil {
		t.Fatal(err)
	}
	want := unhex(t, `00 2c 00 00 02 67 6f 01 31 03 74 6f 6b 00 00 00 00`)
	if got := f.requests()[0].body; !bytes.Equal(got, want) {
		t.Fatalf("token body %x, want %x", got, want)
	}
}

// 5.5: a second login on a bound client logs out first (operation 3, the
// next metadata number, session echoed, empty body) and registers again
// under a fresh client id.
func TestReloginLogsOutFirst(t *testing.T) {
	f := newFake(t)
	c := loggedIn(t, f, testOptions(f))
	first := f.requests()[0]
	if _, err := c.Login(t.Context(), "iggy", "iggy"); err != nil {
		t.Fatal(err)
	}
	reqs := f.requests()
	logout, reg := reqs[2], reqs[3]
	if logout.operation != 3 || logout.request != 1 || logout.session != 42 || len(logout.body) != 0 {
		t.Fatalf("logout %+v", logout)
	}
	if reg.operation != 1 || reg.clientLo == first.clientLo && reg.clientHi == first.clientHi {
		t.Fatalf("re-register %+v reuses the client id", reg)
	}
	// A failed logout aborts the login.
	f.setScript(func(fc *fakeConn, r fakeRequest) bool {
		if r.operation == 3 {
			fc.reply(r, 3, 4, nil)
			return true
		}
		return false
	})
	if _, err := c.Login(t.Context(), "iggy", "iggy"); !isErr(err, wire.ErrInvalidFormat) {
		t.Fatalf("login after a failed logout: %v", err)
	}
}

func TestLoginSessionZeroIsInvalidSession(t *testing.T) {
	f := newFake(t)
	f.session = 0
	c, _ := New(testOptions(f))
	defer c.Close()
	if _, err := c.Login(t.Context(), "iggy", "iggy"); !isErr(err, wire.ErrInvalidSession) {
		t.Fatalf("got %v, want InvalidSession", err)
	}
}

// 5.3: the counter starts at 1 after each login; metadata operations and
// Logout send it and advance it; partition and non-replicated requests send
// it without advancing.
func TestRequestNumbering(t *testing.T) {
	forEachTransport(t, func(t *testing.T, transport string) {
		f := newFakeOn(t, transport)
		f.setScript(func(fc *fakeConn, r fakeRequest) bool {
			switch {
			case r.operation == 130 || r.operation == 131 || r.operation == 161:
				fc.reply(r, r.operation, 0, ok(nil))
			case r.operation == 2 && r.code == 201:
				fc.reply(r, 2, 0, nil)
			default:
				return false
			}
			return true
		})
		c := loggedIn(t, f, testOptions(f))
		ctx := t.Context()
		steps := []struct {
			name    string
			run     func() error
			op      uint8
			request uint64
		}{
			{"read", func() error { _, err := c.GetStreams(ctx); return err }, 2, 1},
			{"metadata", func() error { return c.DeleteStream(ctx, wire.ID(1)) }, 130, 1},
			{"metadata", func() error { return c.PurgeStream(ctx, wire.ID(1)) }, 131, 2},
			{"partition", func() error {
				return c.StoreConsumerOffset(ctx, wire.SingleConsumer(wire.ID(1)), wire.ID(0), wire.ID(0), wire.Partition(0), 0, wire.AckQuorum)
			}, 161, 3},
			{"read", func() error { _, err := c.GetStreams(ctx); return err }, 2, 3},
			{"partition again", func() error {
				return c.StoreConsumerOffset(ctx, wire.SingleConsumer(wire.ID(1)), wire.ID(0), wire.ID(0), wire.Partition(0), 0, wire.AckNone)
			}, 161, 3},
			{"metadata", func() error { return c.DeleteStream(ctx, wire.ID(1)) }, 130, 3},
			{"logout", func() error { return c.Logout(ctx) }, 3, 4},
			{"login", func() error { _, err := c.Login(ctx, "iggy", "iggy"); return err }, 1, 0},
			{"metadata after login", func() error { return c.DeleteStream(ctx, wire.ID(1)) }, 130, 1},
		}
		for _, s := range steps {
			n := len(f.requests())
			if err := s.run(); err != nil {
				t.Fatalf("%s: %v", s.name, err)
			}
			r := f.requests()[n]
			if r.operation != s.op || r.request != s.request {
				t.Fatalf("%s: sent operation %d request %d, want %d / %d", s.name, r.operation, r.request, s.op, s.request)
			}
			if s.op != 1 && (r.session != 42 || r.userID != 7) {
				t.Fatalf("%s: session %d user %d not echoed", s.name, r.session, r.userID)
			}
		}
	})
}

// 12.3, 17.1, 17.4: with stamping on, Register, Logout and metadata
// operations carry XXH3-64(body) widened; reads and partition operations
// carry 0. Off by default.
func TestRequestChecksumStamping(t *testing.T) {
	f := newFake(t)
	f.setScript(func(fc *fakeConn, r fakeRequest) bool {
		if r.operation == 130 || r.operation == 161 {
			fc.reply(r, r.operation, 0, ok(nil))
			return true
		}
		return false
	})
	opts := testOptions(f)
	opts.SDKName, opts.SDKVersion = "rust-sdk", "0.11.0"
	opts.StampRequestChecksums = true
	c := loggedIn(t, f, opts)
	ctx := t.Context()
	if err := c.DeleteStream(ctx, wire.ID(3)); err != nil {
		t.Fatal(err)
	}
	if err := c.StoreConsumerOffset(ctx, wire.SingleConsumer(wire.ID(1)), wire.ID(0), wire.ID(0), wire.Partition(0), 0, wire.AckQuorum); err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Logout(ctx); err != nil {
		t.Fatal(err)
	}
	zero := make([]byte, 16)
	widened := func(v uint64) []byte {
		return binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, v), 0)
	}
	reg, _ := f.last(1, 0)
	if want := unhex(t, "95 80 3f 2a 3c 20 de 8f 00 00 00 00 00 00 00 00"); !bytes.Equal(reg.checksum, want) {
		t.Errorf("register checksum %x, want %x (17.4)", reg.checksum, want)
	}
	logout, _ := f.last(3, 0)
	if want := unhex(t, "c2 94 d3 38 05 80 06 2d 00 00 00 00 00 00 00 00"); !bytes.Equal(logout.checksum, want) {
		t.Errorf("logout checksum %x, want %x (17.1)", logout.checksum, want)
	}
	del, _ := f.last(130, 0)
	if want := widened(xxh3.Hash(del.body)); !bytes.Equal(del.checksum, want) {
		t.Errorf("metadata checksum %x, want %x", del.checksum, want)
	}
	store, _ := f.last(161, 0)
	ping, _ := f.last(2, 1)
	if !bytes.Equal(store.checksum, zero) || !bytes.Equal(ping.checksum, zero) {
		t.Errorf("partition %x / read %x must not be stamped", store.checksum, ping.checksum)
	}
}

// 4.3, 4.4: a deny frame is a *wire.StatusError with the code; the
// connection is kept.
func TestDenyFrame(t *testing.T) {
	forEachTransport(t, func(t *testing.T, transport string) {
		f := newFakeOn(t, transport)
		f.setScript(func(fc *fakeConn, r fakeRequest) bool {
			if r.operation == 2 && r.code == 200 {
				fc.reply(r, 2, 1009, nil)
				return true
			}
			return false
		})
		c := loggedIn(t, f, testOptions(f))
		_, err := c.GetStream(t.Context(), wire.ID(9))
		var se *wire.StatusError
		if !errors.As(err, &se) || se.Code != wire.ErrStreamIdNotFound {
			t.Fatalf("got %v, want StatusError 1009", err)
		}
		if err := c.Ping(t.Context()); err != nil || f.connections() != 1 {
			t.Fatalf("connection not kept after a deny: %v, %d connections", err, f.connections())
		}
	})
}

// 4.3, 18 #11: result framing is decided by the reply's operation byte.
func TestResultFramingByReplyOperation(t *testing.T) {
	forEachTransport(t, func(t *testing.T, transport string) {
		f := newFakeOn(t, transport)
		var replyOp atomic.Uint32
		var code atomic.Uint32
		f.setScript(func(fc *fakeConn, r fakeRequest) bool {
			if r.operation >= 128 {
				fc.reply(r, uint8(replyOp.Load()), 0, rejection(code.Load()))
				return true
			}
			return false
		})
		c := loggedIn(t, f, testOptions(f))
		ctx := t.Context()
		cases := []struct {
			name    string
			replyOp uint8
			code    uint32
			run     func() error
			want    wire.ErrorCode // 0 = success
		}{
			{"DeleteStream rejected", 130, 1009, func() error { return c.DeleteStream(ctx, wire.ID(0)) }, wire.ErrStreamIdNotFound},
			{"CreateTopic rejected under 64", 64, 2013, func() error {
				_, err := c.CreateTopic(ctx, wire.ID(0), "t", 1, nil)
				return err
			}, wire.ErrTopicNameAlreadyExists},
			{"DeleteSegments under 68 is framed", 68, 3007, func() error { return c.DeleteSegments(ctx, wire.ID(0), wire.ID(0), 0, 1) }, wire.ErrPartitionNotFound},
			{"DeleteSegments under 138 is not framed", 138, 3007, func() error { return c.DeleteSegments(ctx, wire.ID(0), wire.ID(0), 0, 1) }, 0},
		}
		for _, tc := range cases {
			replyOp.Store(uint32(tc.replyOp))
			code.Store(tc.code)
			err := tc.run()
			if tc.want == 0 {
				if err != nil {
					t.Errorf("%s: %v", tc.name, err)
				}
				continue
			}
			var re *wire.ResultError
			if !errors.As(err, &re) || re.Code != tc.want {
				t.Errorf("%s: got %v, want ResultError %d", tc.name, err, tc.want)
			}
		}
	})
}

// 4.4: status 0 with an undefined operation is InvalidCommand; the frame
// was read whole, so the connection is kept.
func TestUndefinedReplyOperation(t *testing.T) {
	forEachTransport(t, func(t *testing.T, transport string) {
		f := newFakeOn(t, transport)
		f.setScript(func(fc *fakeConn, r fakeRequest) bool {
			if r.operation == 2 && r.code == 201 {
				fc.reply(r, 200, 0, nil)
				return true
			}
			return false
		})
		c := loggedIn(t, f, testOptions(f))
		_, err := c.GetStreams(t.Context())
		var pe *ProtocolError
		if !errors.As(err, &pe) || pe.Dropped || !isErr(err, wire.ErrInvalidCommand) {
			t.Fatalf("got %v, want a kept-connection InvalidCommand", err)
		}
		if err := c.Ping(t.Context()); err != nil || f.connections() != 1 {
			t.Fatalf("connection not kept: %v", err)
		}
	})
}

// 16: every eviction reason maps to its SDK error; the session and the
// connection are dropped, and the next request logs in again.
func TestEvictionMapping(t *testing.T) {
	forEachTransport(t, func(t *testing.T, transport string) {
		cases := []struct {
			reason   uint8
			max, min uint32
			want     wire.ErrorCode
		}{
			{0, 0, 0, wire.ErrInvalidCommand},
			{1, 0, 0, wire.ErrUnauthenticated},
			{2, 0, 0, wire.ErrInvalidCommand},
			{3, 0, 0, wire.ErrInvalidCommand},
			{4, 0, 0, wire.ErrInvalidCommand},
			{5, 0, 0, wire.ErrInvalidCommand},
			{6, 0, 0, wire.ErrInvalidCommand},
			{7, 0, 0, wire.ErrUnauthenticated},
			{8, 0, 0, wire.ErrUnauthenticated},
			{9, 0, 0, wire.ErrInvalidCredentials},
			{10, 0, 0, wire.ErrInvalidPersonalAccessToken},
			{11, 0, 0, wire.ErrUnauthenticated},
			{12, 0, 0, wire.ErrUnauthenticated},
			{13, 0, 0, wire.ErrStaleClient},
			{14, 11264, 11264, wire.ErrIncompatibleProtocolVersion},
			{14, 0, 0, wire.ErrUnauthenticated},         // degenerate window: min 0
			{14, 11264, 12000, wire.ErrUnauthenticated}, // degenerate window: max < min
			{15, 0, 0, wire.ErrInvalidFormat},
			{16, 0, 0, wire.ErrInvalidCommand}, // above 15: the Go SDK's InvalidCommand
			{255, 0, 0, wire.ErrInvalidCommand},
		}
		f := newFakeOn(t, transport)
		var evict atomic.Pointer[[]byte]
		f.setScript(func(fc *fakeConn, r fakeRequest) bool {
			if r.operation == 2 && r.code == 1 {
				fc.send(*evict.Load())
				return true
			}
			return false
		})
		opts := testOptions(f)
		opts.Username, opts.Password = "iggy", "iggy"
		c, err := Connect(t.Context(), opts)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		for _, tc := range cases {
			frame := evictionFrame(tc.reason, tc.max, tc.min)
			evict.Store(&frame)
			conn := f.connections()
			err := c.Ping(t.Context())
			var ev *wire.EvictionError
			if !errors.As(err, &ev) || uint8(ev.Reason) != tc.reason {
				t.Fatalf("reason %d: got %v", tc.reason, err)
			}
			if code, _ := wire.CodeOf(err); code != tc.want {
				t.Errorf("reason %d window %d/%d: mapped to %d, want %d", tc.reason, tc.min, tc.max, code, tc.want)
			}
			if tc.reason == 14 && (ev.MaxVersion != wire.Version(tc.max) || ev.MinVersion != wire.Version(tc.min)) {
				t.Errorf("reason 14: window %v..%v", ev.MinVersion, ev.MaxVersion)
			}
			if s, _ := c.Session(); s != 0 {
				t.Errorf("reason %d: session %d kept", tc.reason, s)
			}
			if !f.waitEOF(conn) {
				t.Errorf("reason %d: connection %d not dropped", tc.reason, conn)
			}
		}
		// The next request dials and logs in again with the stored credentials.
		f.setScript(nil)
		if err := c.Ping(t.Context()); err != nil {
			t.Fatal(err)
		}
		if s, _ := c.Session(); s != 42 {
			t.Fatalf("no re-login after eviction: session %d", s)
		}
	})
}

// 3, 4.4: a reply whose request differs, a command other than 8/13, or a
// size outside 256..=64 MiB drops the connection.
func TestFramingViolationsDropTheConnection(t *testing.T) {
	forEachTransport(t, func(t *testing.T, transport string) {
		oversize := replyFrame(0, 2, 0, nil)
		binary.LittleEndian.PutUint32(oversize[48:], 64<<20+1)
		undersize := replyFrame(0, 2, 0, nil)
		binary.LittleEndian.PutUint32(undersize[48:], 255)
		cases := []struct {
			name  string
			frame func(r fakeRequest) []byte
			check func(error) bool
		}{
			{"request mismatch", func(r fakeRequest) []byte { return replyFrame(r.request+1, 2, 0, nil) }, func(err error) bool {
				var pe *ProtocolError
				return errors.As(err, &pe) && pe.Dropped && isErr(err, wire.ErrInvalidCommand)
			}},
			{"deny with a mismatched request", func(r fakeRequest) []byte { return replyFrame(r.request+7, 2, 41, nil) }, func(err error) bool {
				var pe *ProtocolError
				return errors.As(err, &pe) && pe.Dropped
			}},
			{"command 5", func(r fakeRequest) []byte {
				f := replyFrame(r.request, 2, 0, nil)
				f[60] = 5
				return f
			}, func(err error) bool { return isErr(err, wire.ErrInvalidCommand) }},
			{"oversized", func(fakeRequest) []byte { return oversize[:256] }, func(err error) bool {
				var fe *FrameError
				return errors.As(err, &fe) && fe.Size == 64<<20+1
			}},
			{"undersized", func(fakeRequest) []byte { return undersize }, func(err error) bool {
				var fe *FrameError
				return errors.As(err, &fe) && fe.Size == 255
			}},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				f := newFakeOn(t, transport)
				f.setScript(func(fc *fakeConn, r fakeRequest) bool {
					if r.operation == 2 && r.code == 201 {
						fc.send(tc.frame(r))
						return true
					}
					return false
				})
				c := loggedIn(t, f, testOptions(f))
				_, err := c.GetStreams(t.Context())
				if !tc.check(err) {
					t.Fatalf("got %v", err)
				}
				if !f.waitEOF(1) {
					t.Fatal("connection not dropped")
				}
				if s, _ := c.Session(); s != 0 {
					t.Fatal("session kept on a dropped connection")
				}
			})
		}
	})
}

// 5.3: 57 is replayed on the same connection with the same header until it
// resolves; a 57 deny on Logout too.
func TestReplayNotCommitted(t *testing.T) {
	forEachTransport(t, func(t *testing.T, transport string) {
		f := newFakeOn(t, transport)
		var deletes, logouts atomic.Int32
		f.setScript(func(fc *fakeConn, r fakeRequest) bool {
			switch r.operation {
			case 130:
				if deletes.Add(1) <= 2 {
					fc.reply(r, 130, 0, rejection(57))
				} else {
					fc.reply(r, 130, 0, ok(nil))
				}
				return true
			case 3:
				if logouts.Add(1) == 1 {
					fc.reply(r, 3, 57, nil)
					return true
				}
			}
			return false
		})
		c := loggedIn(t, f, testOptions(f))
		if err := c.DeleteStream(t.Context(), wire.ID(0)); err != nil {
			t.Fatal(err)
		}
		var sent []fakeRequest
		for _, r := range f.requests() {
			if r.operation == 130 {
				sent = append(sent, r)
			}
		}
		if len(sent) != 3 {
			t.Fatalf("%d sends, want 3", len(sent))
		}
		for _, r := range sent[1:] {
			if !bytes.Equal(r.raw, sent[0].raw) || r.conn != 1 {
				t.Fatalf("replay differs from the first send or left the connection")
			}
		}
		if err := c.Logout(t.Context()); err != nil {
			t.Fatal(err)
		}
		if logouts.Load() != 2 {
			t.Fatalf("logout sent %d times", logouts.Load())
		}
	})
}

// 5.3: 58 is replayed briefly, then reported.
func TestReplayNotAcceptedGivesUp(t *testing.T) {
	f := newFake(t)
	var n atomic.Int32
	f.setScript(func(fc *fakeConn, r fakeRequest) bool {
		if r.operation == 131 {
			n.Add(1)
			fc.reply(r, 131, 0, rejection(58))
			return true
		}
		return false
	})
	c := loggedIn(t, f, testOptions(f))
	start := time.Now()
	err := c.PurgeStream(t.Context(), wire.ID(0))
	if !isErr(err, wire.ErrTransientNotAccepted) {
		t.Fatalf("got %v", err)
	}
	if n.Load() < 3 || time.Since(start) > 2500*time.Millisecond {
		t.Fatalf("%d attempts in %v", n.Load(), time.Since(start))
	}
}

// A request deadline bounds a 57 storm and drops nothing but the request.
func TestReplayNotCommittedStopsAtDeadline(t *testing.T) {
	f := newFake(t)
	f.setScript(func(fc *fakeConn, r fakeRequest) bool {
		if r.operation == 130 {
			fc.reply(r, 130, 0, rejection(57))
			return true
		}
		return false
	})
	c := loggedIn(t, f, testOptions(f))
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if err := c.DeleteStream(ctx, wire.ID(0)); !isErr(err, wire.ErrTransientNotCommitted) {
		t.Fatalf("got %v", err)
	}
}

// Reconnect: a dropped connection is redialled, the client logs in again
// with a fresh client id, and a read is retried once; a written metadata
// request is not retried.
func TestReconnectAndRelogin(t *testing.T) {
	forEachTransport(t, func(t *testing.T, transport string) {
		f := newFakeOn(t, transport)
		f.setScript(func(fc *fakeConn, r fakeRequest) bool {
			switch {
			case r.operation == 2 && r.code == 201 && fc.id == 1:
				fc.close()
			case r.operation == 2 && r.code == 201:
				fc.reply(r, 2, 0, nil)
			case r.operation == 130 && fc.id == 2:
				fc.close()
			case r.operation == 130:
				fc.reply(r, 130, 0, ok(nil))
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
		if _, err := c.GetStreams(t.Context()); err != nil {
			t.Fatalf("read not retried after reconnect: %v", err)
		}
		regs := []fakeRequest{}
		for _, r := range f.requests() {
			if r.operation == 1 {
				regs = append(regs, r)
			}
		}
		if len(regs) != 2 || regs[1].conn != 2 || regs[0].clientLo == regs[1].clientLo {
			t.Fatalf("re-login: %d registers", len(regs))
		}
		read, _ := f.last(2, 201)
		if read.conn != 2 || read.session != 42 || read.clientLo != regs[1].clientLo || read.request != 1 {
			t.Fatalf("retried read %+v", read)
		}
		err = c.DeleteStream(t.Context(), wire.ID(0))
		var d *DisconnectedError
		if !errors.As(err, &d) || !d.Written || !isErr(err, wire.ErrDisconnected) {
			t.Fatalf("written metadata request: got %v", err)
		}
		deletes := 0
		for _, r := range f.requests() {
			if r.operation == 130 {
				deletes++
			}
		}
		if deletes != 1 {
			t.Fatalf("written metadata request sent %d times", deletes)
		}
		// The next request reconnects (connection 3) and succeeds.
		if err := c.DeleteStream(t.Context(), wire.ID(0)); err != nil {
			t.Fatal(err)
		}
		if del, _ := f.last(130, 0); del.conn != 3 || del.request != 1 {
			t.Fatalf("request after reconnect %+v", del)
		}
	})
}

// Without reconnect retries a dropped read is reported, and the next
// request dials again.
func TestNoRetryWithoutReconnect(t *testing.T) {
	f := newFake(t)
	var closed atomic.Bool
	f.setScript(func(fc *fakeConn, r fakeRequest) bool {
		if r.operation == 2 && r.code == 201 && !closed.Swap(true) {
			fc.close()
			return true
		}
		if r.operation == 2 && r.code == 201 {
			fc.reply(r, 2, 0, nil)
			return true
		}
		return false
	})
	c := loggedIn(t, f, testOptions(f))
	if _, err := c.GetStreams(t.Context()); !isErr(err, wire.ErrDisconnected) {
		t.Fatalf("got %v", err)
	}
	if _, err := c.GetStreams(t.Context()); err != nil {
		t.Fatal(err)
	}
	if f.connections() != 2 {
		t.Fatalf("%d connections", f.connections())
	}
}

// 7.15, transports.md 8.6: after login a 2-node roster whose healthy leader
// is elsewhere moves the client there, with a fresh client id.
func TestLeaderRedirect(t *testing.T) {
	forEachTransport(t, func(t *testing.T, transport string) {
		a, b := newFakeOn(t, transport), newFakeOn(t, transport)
		roster := func() []byte {
			return rosterFor(transport, "c", node{"a", "127.0.0.1", a.port(), 1, 0}, node{"b", "LOCALHOST", b.port(), 0, 0})
		}
		a.roster, b.roster = roster, roster
		c := loggedIn(t, a, testOptions(a))
		if got := c.Address(); !sameAddress(got, b.addr()) {
			t.Fatalf("client at %s, want the leader %s", got, b.addr())
		}
		ra, rb := a.requests(), b.requests()
		if len(rb) < 2 || rb[0].operation != 1 || rb[1].code != 12 {
			t.Fatalf("leader saw %d requests", len(rb))
		}
		if ra[0].clientLo == rb[0].clientLo {
			t.Fatal("redirect reused the client id")
		}
		if !a.waitEOF(1) {
			t.Fatal("the follower connection was not closed")
		}
		if err := c.Ping(t.Context()); err != nil {
			t.Fatal(err)
		}
		if p, _ := b.last(2, 1); p.session != 42 {
			t.Fatal("ping did not go to the leader")
		}
	})
}

// At most 3 redirects; a roster where the leader keeps moving stops there.
func TestLeaderRedirectLimit(t *testing.T) {
	a, b := newFake(t), newFake(t)
	a.roster = func() []byte {
		return rosterBody("c", node{"a", "127.0.0.1", a.port(), 1, 0}, node{"b", "127.0.0.1", b.port(), 0, 0})
	}
	b.roster = func() []byte {
		return rosterBody("c", node{"a", "127.0.0.1", a.port(), 0, 0}, node{"b", "127.0.0.1", b.port(), 1, 0})
	}
	loggedIn(t, a, testOptions(a))
	regs := 0
	for _, f := range []*fake{a, b} {
		for _, r := range f.requests() {
			if r.operation == 1 {
				regs++
			}
		}
	}
	if regs != 4 {
		t.Fatalf("%d logins, want 1 + 3 redirects", regs)
	}
}

// A roster without a healthy leader is re-read (every 250 ms); one node, a
// deny or an undecodable roster leave the client where it is.
func TestLeaderRosterTolerance(t *testing.T) {
	t.Run("leaderless then self", func(t *testing.T) {
		f := newFake(t)
		var reads atomic.Int32
		f.roster = func() []byte {
			role := uint8(1)
			if reads.Add(1) > 1 {
				role = 0
			}
			return rosterBody("c", node{"a", "127.0.0.1", f.port(), role, 0}, node{"b", "127.0.0.1", 1, 1, 0})
		}
		c := loggedIn(t, f, testOptions(f))
		if reads.Load() != 2 || !sameAddress(c.Address(), f.addr()) {
			t.Fatalf("%d roster reads, at %s", reads.Load(), c.Address())
		}
	})
	t.Run("one node elsewhere", func(t *testing.T) {
		f := newFake(t)
		f.roster = func() []byte { return rosterBody("single-node", node{"x", "10.9.9.9", 1, 0, 0}) }
		c := loggedIn(t, f, testOptions(f))
		if !sameAddress(c.Address(), f.addr()) {
			t.Fatal("redirected on a one-node roster")
		}
	})
	for name, answer := range map[string]func(fc *fakeConn, r fakeRequest){
		"deny":        func(fc *fakeConn, r fakeRequest) { fc.reply(r, 2, 40, nil) },
		"undecodable": func(fc *fakeConn, r fakeRequest) { fc.reply(r, 2, 0, []byte{1, 2, 3}) },
		"bad role": func(fc *fakeConn, r fakeRequest) {
			fc.reply(r, 2, 0, rosterBody("c", node{"a", "h", 1, 7, 0}, node{"b", "h", 2, 0, 0}))
		},
		"65 nodes max": func(fc *fakeConn, r fakeRequest) { fc.reply(r, 2, 0, (&lb{}).str32("c").u32(65).out()) },
	} {
		t.Run(name, func(t *testing.T) {
			f := newFake(t)
			f.setScript(func(fc *fakeConn, r fakeRequest) bool {
				if r.operation == 2 && r.code == 12 {
					answer(fc, r)
					return true
				}
				return false
			})
			c := loggedIn(t, f, testOptions(f))
			if s, _ := c.Session(); s != 42 || f.connections() != 1 {
				t.Fatal("login did not survive the roster answer")
			}
		})
	}
}

// Lockstep under concurrency: many goroutines share one client.
func TestConcurrentRequests(t *testing.T) {
	forEachTransport(t, func(t *testing.T, transport string) {
		f := newFakeOn(t, transport)
		c := loggedIn(t, f, testOptions(f))
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for range 8 {
			wg.Go(func() {
				for range 25 {
					if err := c.Ping(t.Context()); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if n := len(f.requests()); n != 2+200 {
			t.Fatalf("%d requests", n)
		}
	})
}

// Ping works before login with session 0 and request 1 (17.3); replicated
// requests are refused locally without a session.
func TestBeforeLogin(t *testing.T) {
	f := newFake(t)
	c, _ := New(testOptions(f))
	defer c.Close()
	if err := c.Ping(t.Context()); err != nil {
		t.Fatal(err)
	}
	p, _ := f.last(2, 1)
	if p.session != 0 || p.request != 1 || p.size != 256 || (p.clientLo == 0 && p.clientHi == 0) {
		t.Fatalf("ping %+v", p)
	}
	if err := c.DeleteStream(t.Context(), wire.ID(0)); !isErr(err, wire.ErrUnauthenticated) {
		t.Fatalf("got %v", err)
	}
	if n := len(f.requests()); n != 1 {
		t.Fatalf("%d requests sent", n)
	}
	if err := c.Logout(t.Context()); err != nil {
		t.Fatalf("logout without a session: %v", err)
	}
}

func TestClosedClient(t *testing.T) {
	f := newFake(t)
	c := loggedIn(t, f, testOptions(f))
	c.Close()
	if err := c.Ping(t.Context()); !isErr(err, wire.ErrClientShutdown) {
		t.Fatalf("got %v", err)
	}
}

// iggy+http:// builds the HTTP transport (http.go); with nothing
// listening the connect fails like any dial.
func TestHTTPConnectionString(t *testing.T) {
	o, err := ParseConnectionString("iggy+http://a:b@127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	o.Reconnect.Retries = 0
	c, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.transport.Name() != TransportHTTP {
		t.Fatalf("transport %s", c.transport.Name())
	}
	if err := c.Connect(t.Context()); !errors.Is(err, wire.ErrCannotEstablishConnection) {
		t.Errorf("connect to a closed port: %v", err)
	}
}

func TestHeartbeatPingsWhenIdle(t *testing.T) {
	f := newFake(t)
	opts := testOptions(f)
	opts.Username, opts.Password = "iggy", "iggy"
	opts.HeartbeatInterval = 40 * time.Millisecond
	c, err := Connect(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	time.Sleep(250 * time.Millisecond)
	if _, ok := f.last(2, 1); !ok {
		t.Fatal("no heartbeat ping")
	}
}

// transports.md 1.3: a request without a reply ends at its deadline as
// Disconnected and the connection is thrown away; cancelling the context
// does the same.
func TestRequestDeadlineAndCancel(t *testing.T) {
	forEachTransport(t, func(t *testing.T, transport string) {
		f := newFakeOn(t, transport)
		f.setScript(func(fc *fakeConn, r fakeRequest) bool {
			return r.operation == 2 && r.code == 201 // swallow: no reply
		})
		opts := testOptions(f)
		opts.RequestTimeout = 150 * time.Millisecond
		c := loggedIn(t, f, opts)
		start := time.Now()
		_, err := c.GetStreams(t.Context())
		if !isErr(err, wire.ErrDisconnected) || !isErr(err, context.DeadlineExceeded) {
			t.Fatalf("got %v", err)
		}
		if d := time.Since(start); d < 100*time.Millisecond || d > time.Second {
			t.Fatalf("deadline after %v", d)
		}
		if !f.waitEOF(1) {
			t.Fatal("connection kept after a timeout")
		}
		opts.RequestTimeout = 5 * time.Second
		c2 := loggedIn(t, f, opts)
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(50*time.Millisecond, cancel)
		if _, err := c2.GetStreams(ctx); !isErr(err, context.Canceled) {
			t.Fatalf("got %v", err)
		}
	})
}

// A login is bounded by LoginTimeout, not RequestTimeout: a server slow
// to judge it (Argon2id, a commit in a cluster) logs a client in whose
// other requests time out quickly; without LoginTimeout the login ends at
// RequestTimeout.
func TestLoginTimeoutBoundsTheLogin(t *testing.T) {
	f := newFake(t)
	f.setScript(func(_ *fakeConn, r fakeRequest) bool {
		if r.operation == uint8(wire.OpRegister) {
			time.Sleep(400 * time.Millisecond) // then the fake answers it
		}
		return false
	})
	opts := testOptions(f)
	opts.Username, opts.Password = "iggy", "iggy"
	opts.RequestTimeout = 150 * time.Millisecond
	if _, err := Connect(t.Context(), opts); !isErr(err, context.DeadlineExceeded) {
		t.Fatalf("a 400 ms login within a 150 ms RequestTimeout: %v, want a deadline", err)
	}
	opts.LoginTimeout = 5 * time.Second
	c, err := Connect(t.Context(), opts)
	if err != nil {
		t.Fatalf("a 400 ms login within a 5 s LoginTimeout: %v", err)
	}
	defer c.Close()
	if s, _ := c.Session(); s == 0 {
		t.Fatal("logged in without a session")
	}
}

// The login of a reconnect is bounded by LoginTimeout too: the request
// that found the connection gone fails at its own deadline, but the
// client is logged in again for the next one, which succeeds. Bounded by
// RequestTimeout, every request would redial and time its login out.
func TestReconnectLogsInWithinLoginTimeout(t *testing.T) {
	f := newFake(t)
	f.setScript(func(fc *fakeConn, r fakeRequest) bool {
		switch {
		case r.operation == uint8(wire.OpRegister) && fc.id > 1:
			time.Sleep(400 * time.Millisecond) // then the fake answers it
		case r.operation == 2 && r.code == uint32(wire.CodePing) && fc.id == 1:
			fc.close() // the first connection dies under its first ping
			return true
		}
		return false
	})
	opts := testOptions(f)
	opts.RequestTimeout, opts.LoginTimeout = 150*time.Millisecond, 5*time.Second
	opts.Reconnect = ReconnectOptions{Retries: -1, Interval: 10 * time.Millisecond}
	c := loggedIn(t, f, opts)
	if err := c.Ping(t.Context()); !isErr(err, wire.ErrDisconnected) {
		t.Fatalf("ping on a dying connection whose reconnect outlasts it: %v, want Disconnected", err)
	}
	if err := c.Ping(t.Context()); err != nil {
		t.Fatalf("ping after the reconnect: %v", err)
	}
	var logins int
	for _, r := range f.requests() {
		if r.operation == uint8(wire.OpRegister) {
			logins++
		}
	}
	if logins != 2 {
		t.Fatalf("%d logins, want 2 (the first and the reconnect's)", logins)
	}
}

// Dialing gives up after the configured retries.
func TestDialRetriesExhausted(t *testing.T) {
	f := newFake(t)
	addr := f.addr()
	f.stop()
	opts := Options{Address: addr, Reconnect: ReconnectOptions{Retries: 2, Interval: 10 * time.Millisecond}}
	start := time.Now()
	_, err := Connect(t.Context(), opts)
	if !isErr(err, wire.ErrCannotEstablishConnection) {
		t.Fatalf("got %v", err)
	}
	if d := time.Since(start); d < 20*time.Millisecond {
		t.Fatalf("gave up after %v, before two retry intervals", d)
	}
}

// ReestablishAfter: a reconnect waits out the rest of the interval since
// the last connect.
func TestReestablishAfter(t *testing.T) {
	f := newFake(t)
	var dropped atomic.Bool
	f.setScript(func(fc *fakeConn, r fakeRequest) bool {
		if r.operation == 2 && r.code == 201 && !dropped.Swap(true) {
			fc.close()
			return true
		}
		if r.operation == 2 && r.code == 201 {
			fc.reply(r, 2, 0, nil)
			return true
		}
		return false
	})
	opts := testOptions(f)
	opts.Username, opts.Password = "iggy", "iggy"
	opts.Reconnect = ReconnectOptions{Retries: 1, ReestablishAfter: 300 * time.Millisecond}
	c, err := Connect(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	if _, err := c.GetStreams(t.Context()); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Fatalf("reconnected after %v", d)
	}
}

// A node that stops answering but keeps accepting connections (a paused
// or cut-off container) eats a whole request deadline per attempt. The
// reconnect after such a failure tries the next roster node, not the hung
// one again, so the client reaches the new leader within a request or two.
func TestReconnectMovesPastAHungNode(t *testing.T) {
	a, b := newFake(t), newFake(t)
	var hung atomic.Bool
	roster := func() []byte {
		if hung.Load() {
			return rosterBody("c", node{"a", "127.0.0.1", a.port(), 1, 0}, node{"b", "127.0.0.1", b.port(), 0, 0})
		}
		return rosterBody("c", node{"a", "127.0.0.1", a.port(), 0, 0}, node{"b", "127.0.0.1", b.port(), 1, 0})
	}
	a.roster, b.roster = roster, roster
	a.setScript(func(*fakeConn, fakeRequest) bool { return hung.Load() }) // swallow every request once hung
	opts := testOptions(a)
	opts.Username, opts.Password = "iggy", "iggy"
	opts.RequestTimeout = 300 * time.Millisecond
	opts.Reconnect = ReconnectOptions{Retries: -1, Interval: 10 * time.Millisecond}
	c, err := Connect(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !sameAddress(c.Address(), a.addr()) {
		t.Fatalf("client at %s, want the leader a", c.Address())
	}
	hung.Store(true)
	if err := c.Ping(t.Context()); err == nil {
		t.Fatal("a hung node answered")
	}
	if err := c.Ping(t.Context()); err != nil {
		t.Fatalf("the ping after the hang: %v", err)
	}
	if !sameAddress(c.Address(), b.addr()) {
		t.Fatalf("client at %s, want b", c.Address())
	}
}
