package clientplane_test

import (
	"crypto/tls"
	"net"
	"testing"
	"time"

	clientplane "iggynode/plane/client"
)

// Conn.SendSpliced: a reply given as a built part and splices arrives as
// the one frame they make, in order with the frames around it, over every
// transport (TCP and TLS by writev or record writes, WebSocket as one
// message, QUIC joined).
func TestSplicedRepliesOverEveryTransport(t *testing.T) {
	ss := generate(t)
	h := newEcho()
	h.splice = true
	t.Run("tcp", func(t *testing.T) {
		l, err := clientplane.ListenTCP("127.0.0.1:0", testConfig(), h)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		nc := dialTCP(t, l.Addr().String())
		defer nc.Close()
		roundTrips(t, 12, tcpExchange(t, nc))
	})
	t.Run("tls", func(t *testing.T) {
		cfg := testConfig()
		cfg.TLS = ss.ServerConfig()
		l, err := clientplane.ListenTCP("127.0.0.1:0", cfg, h)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		nc, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", l.Addr().String(),
			&tls.Config{RootCAs: ss.CertPool(), ServerName: "localhost"})
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		roundTrips(t, 12, tcpExchange(t, nc))
	})
	t.Run("websocket", func(t *testing.T) {
		l := listenWS(t, testConfig(), h)
		defer l.Close()
		ws := dialWS(t, "ws://"+l.Addr().String()+"/", nil)
		defer ws.Close()
		roundTrips(t, 12, wsExchange(t, ws))
	})
	t.Run("quic", func(t *testing.T) {
		l := listenQUIC(t, ss, quicTestConfig(), h)
		defer l.Close()
		qc := dialQUIC(t, ss, l.Addr().String())
		defer qc.CloseWithError(0, "")
		roundTrips(t, 12, quicExchange(t, qc))
	})
}
