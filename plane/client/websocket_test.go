package clientplane_test

import (
	"bytes"
	"crypto/tls"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	clientplane "iggynode/plane/client"
)

func listenWS(t *testing.T, cfg clientplane.Config, h clientplane.Handler) *clientplane.WSListener {
	t.Helper()
	return listenWSWith(t, cfg, clientplane.WebSocketConfig{}, h)
}

func listenWSWith(t *testing.T, cfg clientplane.Config, wcfg clientplane.WebSocketConfig, h clientplane.Handler) *clientplane.WSListener {
	t.Helper()
	l, err := clientplane.ListenWebSocket("127.0.0.1:0", cfg, wcfg, h)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func dialWS(t *testing.T, url string, tlsConf *tls.Config) *websocket.Conn {
	t.Helper()
	d := websocket.Dialer{HandshakeTimeout: 5 * time.Second, TLSClientConfig: tlsConf}
	ws, resp, err := d.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p := resp.Header.Get("Sec-WebSocket-Protocol"); p != "" {
		t.Errorf("subprotocol %q returned, want none", p)
	}
	if e := resp.Header.Get("Sec-WebSocket-Extensions"); e != "" {
		t.Errorf("extension %q negotiated, want none", e)
	}
	return ws
}

func wsExchange(t *testing.T, ws *websocket.Conn) func([]byte) []byte {
	return func(frame []byte) []byte {
		t.Helper()
		_ = ws.SetWriteDeadline(time.Now().Add(5 * time.Second))
		if err := ws.WriteMessage(websocket.BinaryMessage, frame); err != nil {
			t.Fatal(err)
		}
		_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
		kind, reply, err := ws.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		if kind != websocket.BinaryMessage {
			t.Fatalf("reply message type %d, want binary", kind)
		}
		return reply
	}
}

// expectWSClose asserts the server ends the connection with a Close frame
// that carries no status code (transports.md 6.4: the peer sees 1005).
func expectWSClose(t *testing.T, ws *websocket.Conn) {
	t.Helper()
	_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, _, err := ws.ReadMessage()
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.CloseNoStatusReceived {
		t.Fatalf("read error %v, want a Close frame without status (1005)", err)
	}
}

// transports.md 6.3: one frame per binary message in both directions, any
// path; a reply larger than the write buffer (sent fragmented) still
// arrives as one message.
func TestWebSocketRoundTripInOrder(t *testing.T) {
	h := newEcho()
	l := listenWSWith(t, testConfig(), clientplane.WebSocketConfig{WriteBufferSize: 4096}, h)
	defer l.Close()
	ws := dialWS(t, "ws://"+l.Addr().String()+"/any/path?x=1", nil)
	defer ws.Close()
	ex := wsExchange(t, ws)
	roundTrips(t, 8, ex)
	big := bytes.Repeat([]byte("0123456789abcdef"), (testMaxFrame-512)/16)
	checkReply(t, ex(requestFrame(50, big)), 50, big)
	// Ping is answered by the library; the connection keeps serving.
	if err := ws.WriteControl(websocket.PingMessage, []byte("p"), time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	roundTrips(t, 2, ex)
}

// transports.md 1.2, 6.3-6.4: framing errors, text messages and a message
// whose length differs from size close the connection.
func TestWebSocketBadMessagesClose(t *testing.T) {
	h := newEcho()
	l := listenWS(t, testConfig(), h)
	defer l.Close()
	url := "ws://" + l.Addr().String() + "/"
	type message struct {
		name string
		kind int
		data []byte
	}
	cases := []message{
		{"text message", websocket.TextMessage, requestFrame(1, nil)},
		{"shorter than 256", websocket.BinaryMessage, requestFrame(1, nil)[:200]},
		{"shorter than size", websocket.BinaryMessage, withSize(requestFrame(1, []byte("abc")), 300)},
		{"longer than size", websocket.BinaryMessage, append(requestFrame(1, []byte("abc")), 'x')},
		{"two frames in one message", websocket.BinaryMessage, append(requestFrame(1, nil), requestFrame(2, nil)...)},
	}
	for _, bf := range badFrames() {
		cases = append(cases, message{bf.name, websocket.BinaryMessage, bf.frame})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ws := dialWS(t, url, nil)
			defer ws.Close()
			roundTrips(t, 1, wsExchange(t, ws))
			if err := ws.WriteMessage(tc.kind, tc.data); err != nil {
				t.Fatal(err)
			}
			expectWSClose(t, ws)
			h.waitClosed(t, clientplane.TransportWebSocket)
		})
	}
}

// transports.md 6.5: WSS with the generated certificate, verified.
func TestWSSRoundTrip(t *testing.T) {
	ss := generate(t)
	cfg := testConfig()
	cfg.TLS = ss.ServerConfig()
	h := newEcho()
	l := listenWS(t, cfg, h)
	defer l.Close()
	ws := dialWS(t, "wss://localhost:"+portOf(l.Addr().String())+"/", &tls.Config{RootCAs: ss.CertPool()})
	defer ws.Close()
	roundTrips(t, 5, wsExchange(t, ws))
	if err := ws.WriteMessage(websocket.BinaryMessage, withCommand(requestFrame(1, nil), 200)); err != nil {
		t.Fatal(err)
	}
	expectWSClose(t, ws)
}

// transports.md 6.1: a request that is not an upgrade is refused and the
// socket closed; a client that never finishes the upgrade is dropped
// after handshake_grace. Neither opens a Session.
func TestWebSocketFailedUpgrade(t *testing.T) {
	cfg := testConfig()
	cfg.HandshakeGrace = 200 * time.Millisecond
	h := newEcho()
	l := listenWS(t, cfg, h)
	defer l.Close()
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get("http://" + l.Addr().String() + "/")
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("plain GET: status %d, want 400", resp.StatusCode)
		}
	}
	nc := dialTCP(t, l.Addr().String())
	defer nc.Close()
	_, _ = nc.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n")) // never finished
	expectEOF(t, nc)
	if n := h.opened.Load(); n != 0 {
		t.Errorf("%d sessions opened for failed upgrades", n)
	}
}

func TestWebSocketStopAcceptingAndCloseLeaveNoGoroutines(t *testing.T) {
	check := goroutineBaseline(t)
	h := newEcho()
	l := listenWS(t, testConfig(), h)
	url := "ws://" + l.Addr().String() + "/"
	ws := dialWS(t, url, nil)
	defer ws.Close()
	roundTrips(t, 2, wsExchange(t, ws))
	l.StopAccepting()
	d := websocket.Dialer{HandshakeTimeout: time.Second}
	if c, _, err := d.Dial(url, nil); err == nil {
		c.Close()
		t.Fatal("dial succeeded after StopAccepting")
	}
	roundTrips(t, 2, wsExchange(t, ws))
	l.Close()
	expectWSClose(t, ws)
	h.waitClosed(t, clientplane.TransportWebSocket)
	ws.Close()
	http.DefaultClient.CloseIdleConnections()
	check()
}

func portOf(addr string) string {
	for i := len(addr) - 1; i >= 0; i-- {
		if addr[i] == ':' {
			return addr[i+1:]
		}
	}
	return addr
}
