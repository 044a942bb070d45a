package client

import (
	"crypto/tls"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"iggynode/wire"
)

// newWSSFake serves WebSocket over TLS with a self-signed certificate for
// 127.0.0.1 and localhost and returns the path of its PEM.
func newWSSFake(t *testing.T) (*fake, string) {
	t.Helper()
	cert, path := testCertificate(t)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	return startWSFake(t, ln), path
}

// transports.md 3.3, 6.5, 8.4: WSS verifies only when asked, then against
// the given CA and tls_domain (else the host of the address).
func TestWSS(t *testing.T) {
	f, ca := newWSSFake(t)
	cases := []struct {
		name string
		tls  TLSOptions
		ok   bool
	}{
		{"not validated by default", DefaultOptions(TransportWS).TLS, true},
		{"trusted CA, name from address", TLSOptions{CAFile: ca}, true},
		{"trusted CA, explicit domain", TLSOptions{CAFile: ca, Domain: "localhost"}, true},
		{"validated without the CA", TLSOptions{}, false},
		{"wrong domain", TLSOptions{CAFile: ca, Domain: "other.example"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := testOptions(f)
			opts.TLS = tc.tls
			opts.TLS.Enabled = true
			c, err := New(opts)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_, err = c.Login(t.Context(), "iggy", "iggy")
			if tc.ok && err != nil {
				t.Fatalf("login over WSS: %v", err)
			}
			if !tc.ok && !isErr(err, wire.ErrCannotEstablishConnection) {
				t.Fatalf("got %v, want CannotEstablishConnection", err)
			}
		})
	}
	// Plain WebSocket against the TLS port fails the upgrade.
	opts := testOptions(f)
	c, _ := New(opts)
	defer c.Close()
	if err := c.Ping(t.Context()); !isErr(err, wire.ErrCannotEstablishConnection) {
		t.Fatalf("plain ws to a wss port: %v", err)
	}
}

// transports.md 3.3, 8.3: a QUIC connection string does not verify by
// default, Options built in Go do (the issue's "verification on by
// default"); with
// validate_certificate it verifies against the CA for server name
// "localhost" (or the one given), never the address.
func TestQUICCertificate(t *testing.T) {
	cert, ca := testCertificate(t)
	f := startQUICFake(t, cert)
	cases := []struct {
		name string
		quic QUICOptions
		ok   bool
	}{
		{"connection-string defaults do not validate", DefaultOptions(TransportQUIC).QUIC, true},
		{"zero Options verify (untrusted certificate refused)", QUICOptions{}, false},
		{"zero Options with the CA trusted", QUICOptions{CAFile: ca}, true},
		{"trusted CA, localhost", QUICOptions{ValidateCertificate: true, CAFile: ca}, true},
		{"validated against the system roots", QUICOptions{ValidateCertificate: true}, false},
		{"wrong server name", QUICOptions{ValidateCertificate: true, CAFile: ca, ServerName: "other.example"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := testOptions(f)
			opts.QUIC = tc.quic
			c, err := New(opts)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_, err = c.Login(t.Context(), "iggy", "iggy")
			if tc.ok && err != nil {
				t.Fatalf("login over QUIC: %v", err)
			}
			if !tc.ok && !isErr(err, wire.ErrCannotEstablishConnection) {
				t.Fatalf("got %v, want CannotEstablishConnection", err)
			}
		})
	}
}

// transports.md 6.3: a reply is one binary message exactly size bytes
// long; anything else is a protocol violation that drops the connection,
// and the next request dials again.
func TestWSReplyMessageMustBeOneFrame(t *testing.T) {
	cases := []struct {
		name string
		send func(fc *fakeConn, r fakeRequest)
	}{
		{"longer than size", func(fc *fakeConn, r fakeRequest) {
			fc.send(append(replyFrame(r.request, 2, 0, nil), 0xEE))
		}},
		{"shorter than size", func(fc *fakeConn, r fakeRequest) {
			fc.send(replyFrame(r.request, 2, 0, []byte{1, 2, 3, 4})[:258])
		}},
		{"shorter than a header", func(fc *fakeConn, r fakeRequest) {
			fc.send(replyFrame(r.request, 2, 0, nil)[:100])
		}},
		{"text message", func(fc *fakeConn, r fakeRequest) {
			_ = fc.link.(*wsLink).ws.WriteMessage(websocket.TextMessage, replyFrame(r.request, 2, 0, nil))
		}},
		{"over max_message_size", func(fc *fakeConn, r fakeRequest) {
			fc.send(replyFrame(r.request, 2, 0, make([]byte, 2000)))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeOn(t, TransportWS)
			var bad atomic.Bool
			f.setScript(func(fc *fakeConn, r fakeRequest) bool {
				if r.operation == 2 && r.code == 201 {
					if !bad.Swap(true) {
						tc.send(fc, r)
					} else {
						fc.reply(r, 2, 0, nil)
					}
					return true
				}
				return false
			})
			opts := testOptions(f)
			opts.WebSocket.MaxMessageSize = 2000 // bounds replies below 64 MiB
			opts.Reconnect.Retries = 3           // a protocol violation is still not retried
			c := loggedIn(t, f, opts)
			_, err := c.GetStreams(t.Context())
			var pe *ProtocolError
			if !errors.As(err, &pe) || !pe.Dropped || !isErr(err, wire.ErrInvalidCommand) {
				t.Fatalf("got %v, want a dropping ProtocolError", err)
			}
			if !f.waitEOF(1) {
				t.Fatal("connection not dropped")
			}
			if _, err := c.GetStreams(t.Context()); err != nil || f.connections() != 2 {
				t.Fatalf("next request: %v on %d connections", err, f.connections())
			}
		})
	}
}

// transports.md 6.3: the client answers a server Ping while it waits for a
// reply (the library's handler).
func TestWSPingAnswered(t *testing.T) {
	f := newFakeOn(t, TransportWS)
	pongs := make(chan string, 1)
	f.setScript(func(fc *fakeConn, r fakeRequest) bool {
		if r.operation == 2 && r.code == 201 {
			ws := fc.link.(*wsLink).ws
			ws.SetPongHandler(func(data string) error { pongs <- data; return nil })
			_ = ws.WriteControl(websocket.PingMessage, []byte("beat"), time.Now().Add(time.Second))
			fc.reply(r, 2, 0, nil)
			return true
		}
		return false
	})
	c := loggedIn(t, f, testOptions(f))
	if _, err := c.GetStreams(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(t.Context()); err != nil { // the fake reads the pong before this request
		t.Fatal(err)
	}
	select {
	case got := <-pongs:
		if got != "beat" {
			t.Fatalf("pong %q", got)
		}
	default:
		t.Fatal("no pong")
	}
}

// transports.md 4.4: every request, replays included, rides its own
// stream; a stream the server finishes without a frame (EmptyResponse) is
// a lost connection, which a read survives by reconnecting.
func TestQUICStreams(t *testing.T) {
	f := newFakeOn(t, TransportQUIC)
	var empty atomic.Bool
	f.setScript(func(fc *fakeConn, r fakeRequest) bool {
		if r.operation == 2 && r.code == 201 {
			if !empty.Swap(true) {
				fc.send(nil) // FIN with no data
			} else {
				fc.reply(r, 2, 0, nil)
			}
			return true
		}
		return false
	})
	opts := testOptions(f)
	opts.Username, opts.Password = "iggy", "iggy"
	opts.Reconnect = ReconnectOptions{Retries: 1, Interval: 10 * time.Millisecond}
	c, err := Connect(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.GetStreams(t.Context()); err != nil {
		t.Fatalf("read after an abandoned stream: %v", err)
	}
	if f.connections() != 2 {
		t.Fatalf("%d connections, want a reconnect", f.connections())
	}
	for range 5 {
		if err := c.Ping(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	// Stream ids of one connection: client-initiated bidirectional ids
	// 0, 4, 8, ... one per request.
	var ids []int64
	for _, r := range f.requests() {
		if r.conn == 2 {
			ids = append(ids, r.stream)
		}
	}
	for i, id := range ids {
		if id != int64(4*i) {
			t.Fatalf("connection 2 streams %v, want 0, 4, 8, ...", ids)
		}
	}
	if len(ids) != 2+1+5 {
		t.Fatalf("%d requests on connection 2", len(ids))
	}
}

// 8.3: response_buffer_size bounds a QUIC reply; a bigger one is a frame
// error that drops the connection.
func TestQUICResponseBufferSize(t *testing.T) {
	f := newFakeOn(t, TransportQUIC)
	f.setScript(func(fc *fakeConn, r fakeRequest) bool {
		if r.operation == 2 && r.code == 201 {
			fc.reply(r, 2, 0, make([]byte, 1000))
			return true
		}
		return false
	})
	opts := testOptions(f)
	opts.QUIC.ResponseBufferSize = 1000
	c := loggedIn(t, f, opts)
	_, err := c.GetStreams(t.Context())
	var fe *FrameError
	if !errors.As(err, &fe) || fe.Size != 1256 {
		t.Fatalf("got %v, want FrameError 1256", err)
	}
	if !f.waitEOF(1) {
		t.Fatal("connection not dropped")
	}
}

// transports.md 4.3, 8.3: the QUIC options as quic-go settings.
func TestQUICOptionsMapping(t *testing.T) {
	qt, err := NewQUICTransport(DefaultOptions(TransportQUIC))
	if err != nil {
		t.Fatal(err)
	}
	c := qt.Config
	if c.KeepAlivePeriod != 5*time.Second || c.MaxIdleTimeout != 10*time.Second || c.InitialPacketSize != 1200 ||
		c.InitialConnectionReceiveWindow != 100_000 || c.MaxConnectionReceiveWindow != 100_000 ||
		c.MaxIncomingStreams != 10_000 || c.MaxIncomingUniStreams != -1 || c.EnableDatagrams {
		t.Fatalf("quic config %+v", c)
	}
	if qt.LocalAddress != "127.0.0.1:0" || qt.MaxFrameSize != 10_000_000 {
		t.Fatalf("local %s, reply limit %d", qt.LocalAddress, qt.MaxFrameSize)
	}
	if qt.TLS.ServerName != "localhost" || !qt.TLS.InsecureSkipVerify || len(qt.TLS.NextProtos) != 0 || qt.TLS.MinVersion != tls.VersionTLS13 {
		t.Fatalf("quic tls: name %q, skip %v, alpn %v", qt.TLS.ServerName, qt.TLS.InsecureSkipVerify, qt.TLS.NextProtos)
	}
	o, err := ParseConnectionString("iggy+quic://a:b@127.0.0.1:8080?keep_alive_interval=0&max_idle_timeout=0&initial_mtu=1400&receive_window=2000000&validate_certificate=true")
	if err != nil {
		t.Fatal(err)
	}
	if qt, err = NewQUICTransport(o); err != nil {
		t.Fatal(err)
	}
	c = qt.Config
	if c.KeepAlivePeriod != 0 || c.MaxIdleTimeout != quicNoIdleTimeout || c.InitialPacketSize != 1400 || c.MaxConnectionReceiveWindow != 2_000_000 || qt.TLS.InsecureSkipVerify {
		t.Fatalf("quic config from a string %+v (skip verify %v)", c, qt.TLS.InsecureSkipVerify)
	}
	o.QUIC.ClientAddress = "nowhere"
	if _, err := NewQUICTransport(o); !isErr(err, wire.ErrInvalidConfiguration) {
		t.Fatalf("bad client address: %v", err)
	}
}

// 8.4: the WebSocket options as gorilla settings; WSS from a string does not
// verify unless tls_validate_certificate=true.
func TestWSOptionsMapping(t *testing.T) {
	o, err := ParseConnectionString("iggy+ws://a:b@127.0.0.1:8092?read_buffer_size=65536&write_buffer_size=1073741824&max_message_size=1048576&tls=true")
	if err != nil {
		t.Fatal(err)
	}
	wt, err := NewWSTransport(o)
	if err != nil {
		t.Fatal(err)
	}
	if wt.ReadBufferSize != 65536 || wt.WriteBufferSize != 16<<20 || wt.MaxFrameSize != 1<<20 || wt.TLS == nil || !wt.TLS.InsecureSkipVerify {
		t.Fatalf("ws transport %+v", wt)
	}
	o, _ = ParseConnectionString("iggy+ws://a:b@127.0.0.1:8092?tls=true&tls_validate_certificate=true&tls_domain=localhost")
	if wt, _ = NewWSTransport(o); wt.TLS.InsecureSkipVerify || wt.TLS.ServerName != "localhost" {
		t.Fatalf("validated wss: %+v", wt.TLS)
	}
	if wt, _ = NewWSTransport(DefaultOptions(TransportWS)); wt.TLS != nil || wt.MaxFrameSize != 64<<20 {
		t.Fatalf("plain ws %+v", wt)
	}
}

// transports.md 8.1, 8.3, 8.4: quic and ws connection strings connect, log
// in with their credentials and serve requests; tls=true selects WSS.
func TestConnectStringQUICAndWS(t *testing.T) {
	wss, ca := newWSSFake(t)
	cases := []struct {
		name string
		f    *fake
		opts string
	}{
		{"quic", newFakeOn(t, TransportQUIC), "?heartbeat_interval=disabled&reconnection_max_retries=2"},
		{"ws", newFakeOn(t, TransportWS), "?heartbeat_interval=disabled"},
		{"ws with an empty option list", newFakeOn(t, TransportWS), "?"},
		{"wss", wss, "?tls=true&tls_domain=localhost&tls_validate_certificate=true&tls_ca_file=" + ca},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ConnectString(t.Context(), "iggy+"+tc.f.kind+"://iggy:secret@"+tc.f.addr()+tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			reg := tc.f.requests()[0]
			if reg.operation != 1 || !strings.HasSuffix(string(reg.body), "iggy\x06secret\x00\x00\x00\x00") {
				t.Fatalf("auto-login body %q", reg.body)
			}
			if err := c.Ping(t.Context()); err != nil {
				t.Fatal(err)
			}
			if s, _ := c.Session(); s != 42 {
				t.Fatalf("session %d", s)
			}
		})
	}
	// validate_certificate=true checks against the system roots, which do
	// not hold the test CA.
	f := newFakeOn(t, TransportQUIC)
	if _, err := ConnectString(t.Context(), "iggy+quic://iggy:secret@"+f.addr()+"?validate_certificate=true&reconnection_max_retries=0"); !isErr(err, wire.ErrCannotEstablishConnection) {
		t.Fatalf("validated quic without the CA: %v", err)
	}
}

// The QUIC client binds the configured local address (8.3: 127.0.0.1:0).
func TestQUICClientAddress(t *testing.T) {
	f := newFakeOn(t, TransportQUIC)
	opts := testOptions(f)
	probe, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	local := probe.LocalAddr().String()
	probe.Close()
	opts.QUIC.ClientAddress = local
	loggedIn(t, f, opts)
	if got := f.remotes(); len(got) != 1 || got[0] != local {
		t.Fatalf("client came from %v, want %s", got, local)
	}
}
