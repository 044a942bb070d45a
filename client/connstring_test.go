package client

import (
	"errors"
	"testing"
	"time"

	"iggynode/wire"
)

// transports.md 8.1-8.4, rule by rule.
func TestParseConnectionStringValid(t *testing.T) {
	cases := []struct {
		in    string
		check func(o Options) bool
	}{
		// 8.1 grammar and defaults (8.2).
		{"iggy://iggy:iggy@127.0.0.1:8090", func(o Options) bool {
			return o.Transport == "tcp" && o.Username == "iggy" && o.Password == "iggy" && o.Address == "127.0.0.1:8090" &&
				o.Reconnect.Retries == -1 && o.Reconnect.Interval == time.Second && o.Reconnect.ReestablishAfter == 5*time.Second &&
				o.HeartbeatInterval == 5*time.Second && !o.TLS.Enabled && !o.NoDelay && !o.TLS.InsecureSkipVerify
		}},
		{"iggy+tcp://user:secret@iggy.example.com:8090?tls=true&tls_ca_file=ca.pem", func(o Options) bool {
			return o.Transport == "tcp" && o.TLS.Enabled && o.TLS.CAFile == "ca.pem" && !o.TLS.InsecureSkipVerify &&
				o.Address == "iggy.example.com:8090"
		}},
		{"iggy+quic://iggypat-abc@127.0.0.1:8080?validate_certificate=true", func(o Options) bool {
			return o.Transport == "quic" && o.PersonalAccessToken == "iggypat-abc" && o.Username == "" && o.QUIC.ValidateCertificate &&
				o.QUIC.InitialMTU == 1200 && o.QUIC.ResponseBufferSize == 10_000_000 && o.QUIC.ServerName == "localhost"
		}},
		{"iggy+ws://user:secret@127.0.0.1:8092?tls=true&tls_domain=localhost", func(o Options) bool {
			return o.Transport == "ws" && o.TLS.Enabled && o.TLS.Domain == "localhost" && o.TLS.InsecureSkipVerify
		}},
		{"iggy+http://u:p@127.0.0.1:3000", func(o Options) bool { return o.Transport == "http" && o.HTTP.Retries == 3 }},
		// Empty option list: accepted for ws only.
		{"iggy+ws://u:p@h:1?", func(o Options) bool { return o.Transport == "ws" }},
		// The port is the segment after the first ':' up to any further ':'.
		{"iggy://u:p@host:8090:extra", func(o Options) bool { return o.Address == "host:8090:extra" }},
		// Booleans: only the literal "true".
		{"iggy://u:p@h:1?tls=yes&nodelay=TRUE", func(o Options) bool { return !o.TLS.Enabled && !o.NoDelay }},
		{"iggy://u:p@h:1?tls=&nodelay=true", func(o Options) bool { return !o.TLS.Enabled && o.NoDelay }},
		// Retries: a number or unlimited.
		{"iggy://u:p@h:1?reconnection_retries=5", func(o Options) bool { return o.Reconnect.Retries == 5 }},
		{"iggy://u:p@h:1?reconnection_retries=0", func(o Options) bool { return o.Reconnect.Retries == 0 }},
		{"iggy://u:p@h:1?reconnection_retries=unlimited", func(o Options) bool { return o.Reconnect.Retries == -1 }},
		// Durations: human form; 0, unlimited, disabled and none are zero.
		{"iggy://u:p@h:1?reconnection_interval=500ms&reestablish_after=1m&heartbeat_interval=2s", func(o Options) bool {
			return o.Reconnect.Interval == 500*time.Millisecond && o.Reconnect.ReestablishAfter == time.Minute && o.HeartbeatInterval == 2*time.Second
		}},
		{"iggy://u:p@h:1?heartbeat_interval=1h 30m", func(o Options) bool { return o.HeartbeatInterval == 90*time.Minute }},
		{"iggy://u:p@h:1?heartbeat_interval=2days", func(o Options) bool { return o.HeartbeatInterval == 48*time.Hour }},
		{"iggy://u:p@h:1?heartbeat_interval=0", func(o Options) bool { return o.HeartbeatInterval == 0 }},
		{"iggy://u:p@h:1?heartbeat_interval=unlimited", func(o Options) bool { return o.HeartbeatInterval == 0 }},
		{"iggy://u:p@h:1?heartbeat_interval=disabled", func(o Options) bool { return o.HeartbeatInterval == 0 }},
		{"iggy://u:p@h:1?reestablish_after=none", func(o Options) bool { return o.Reconnect.ReestablishAfter == 0 }},
		// 8.3: every QUIC key, including its own reconnection key names.
		{"iggy+quic://u:p@h:1?response_buffer_size=1&max_concurrent_bidi_streams=2&datagram_send_buffer_size=3&initial_mtu=1500" +
			"&send_window=4&receive_window=5&keep_alive_interval=0&max_idle_timeout=20000&heartbeat_interval=3s" +
			"&reconnection_max_retries=3&reconnection_interval=2s&reconnection_reestablish_after=4s", func(o Options) bool {
			q := o.QUIC
			return q.ResponseBufferSize == 1 && q.MaxConcurrentBidiStreams == 2 && q.DatagramSendBufferSize == 3 && q.InitialMTU == 1500 &&
				q.SendWindow == 4 && q.ReceiveWindow == 5 && q.KeepAliveInterval == 0 && q.MaxIdleTimeout == 20*time.Second &&
				o.HeartbeatInterval == 3*time.Second && o.Reconnect.Retries == 3 && o.Reconnect.Interval == 2*time.Second &&
				o.Reconnect.ReestablishAfter == 4*time.Second && !q.ValidateCertificate
		}},
		// 8.4: every WebSocket key.
		{"iggy+ws://u:p@h:1?heartbeat_interval=1s&reconnection_retries=2&reconnection_interval=3s&reestablish_after=4s" +
			"&read_buffer_size=10&write_buffer_size=11&max_write_buffer_size=12&max_message_size=13&max_frame_size=14" +
			"&accept_unmasked_frames=true&tls=true&tls_domain=d&tls_ca_file=ca&tls_validate_certificate=true", func(o Options) bool {
			w := o.WebSocket
			return o.HeartbeatInterval == time.Second && o.Reconnect.Retries == 2 && o.Reconnect.Interval == 3*time.Second &&
				o.Reconnect.ReestablishAfter == 4*time.Second && w.ReadBufferSize == 10 && w.WriteBufferSize == 11 &&
				w.MaxWriteBufferSize == 12 && w.MaxMessageSize == 13 && w.MaxFrameSize == 14 && w.AcceptUnmaskedFrames &&
				o.TLS.Enabled && o.TLS.Domain == "d" && o.TLS.CAFile == "ca" && !o.TLS.InsecureSkipVerify
		}},
		{"iggy+ws://u:p@h:1", func(o Options) bool {
			w := o.WebSocket
			return w.ReadBufferSize == 128<<10 && w.MaxMessageSize == 64<<20 && w.MaxFrameSize == 16<<20 && w.MaxWriteBufferSize == 0
		}},
		{"iggy+http://u:p@h:1?heartbeat_interval=1s&retries=7", func(o Options) bool {
			return o.HeartbeatInterval == time.Second && o.HTTP.Retries == 7
		}},
	}
	for _, tc := range cases {
		o, err := ParseConnectionString(tc.in)
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if !tc.check(o) {
			t.Errorf("%s: parsed %+v", tc.in, o)
		}
	}
}

func TestParseConnectionStringErrors(t *testing.T) {
	cases := []struct {
		in   string
		want error
	}{
		// "://" and "@" exactly once.
		{"iggy:/u:p@h:1", wire.ErrInvalidConnectionString},
		{"iggy://u:p@h:1?tls_domain=a://b", wire.ErrInvalidConnectionString},
		{"iggy://u:p@h@x:1", wire.ErrInvalidConnectionString},
		{"iggy://h:1", wire.ErrInvalidConnectionString},
		// Scheme: case-sensitive, no wss/tls/https.
		{"IGGY://u:p@h:1", wire.ErrInvalidConnectionString},
		{"iggy+TCP://u:p@h:1", wire.ErrInvalidConnectionString},
		{"iggy+wss://u:p@h:1", wire.ErrInvalidConnectionString},
		{"iggy+tls://u:p@h:1", wire.ErrInvalidConnectionString},
		{"iggy+https://u:p@h:1", wire.ErrInvalidConnectionString},
		{"http://u:p@h:1", wire.ErrInvalidConnectionString},
		// Credentials: mandatory; user and password non-empty; one ':' at most.
		{"iggy://@h:1", wire.ErrInvalidConnectionString},
		{"iggy://u:@h:1", wire.ErrInvalidConnectionString},
		{"iggy://:p@h:1", wire.ErrInvalidConnectionString},
		{"iggy://a:b:c@h:1", wire.ErrInvalidConnectionString},
		// host:port.
		{"iggy://u:p@host", wire.ErrInvalidConnectionString},
		{"iggy://u:p@:8090", wire.ErrInvalidConnectionString},
		{"iggy://u:p@h:", wire.ErrInvalidConnectionString},
		{"iggy://u:p@h:65536", wire.ErrInvalidConnectionString},
		{"iggy://u:p@h:-1", wire.ErrInvalidConnectionString},
		{"iggy://u:p@h:port", wire.ErrInvalidConnectionString},
		{"iggy://u:p@[::1]:8090", wire.ErrInvalidConnectionString},
		// Options: one '?', key=value with one '=', no empty list (but ws), no unknown keys.
		{"iggy://u:p@h:1?tls=true?nodelay=true", wire.ErrInvalidConnectionString},
		{"iggy://u:p@h:1?", wire.ErrInvalidConnectionString},
		{"iggy+quic://u:p@h:1?", wire.ErrInvalidConnectionString},
		{"iggy+http://u:p@h:1?", wire.ErrInvalidConnectionString},
		{"iggy://u:p@h:1?tls", wire.ErrInvalidConnectionString},
		{"iggy://u:p@h:1?tls==true", wire.ErrInvalidConnectionString},
		{"iggy://u:p@h:1?tls=true&", wire.ErrInvalidConnectionString},
		{"iggy://u:p@h:1?foo=1", wire.ErrInvalidConnectionString},
		{"iggy://u:p@h:1?initial_mtu=1200", wire.ErrInvalidConnectionString},
		{"iggy://u:p@h:1?tls_validate_certificate=true", wire.ErrInvalidConnectionString},
		{"iggy://u:p@h:1?reconnection_max_retries=1", wire.ErrInvalidConnectionString},
		{"iggy+quic://u:p@h:1?nodelay=true", wire.ErrInvalidConnectionString},
		{"iggy+quic://u:p@h:1?reconnection_retries=1", wire.ErrInvalidConnectionString},
		{"iggy+quic://u:p@h:1?tls=true", wire.ErrInvalidConnectionString},
		{"iggy+ws://u:p@h:1?nodelay=true", wire.ErrInvalidConnectionString},
		{"iggy+http://u:p@h:1?tls=true", wire.ErrInvalidConnectionString},
		{"iggy+http://u:p@h:1?reconnection_retries=1", wire.ErrInvalidConnectionString},
		// Durations.
		{"iggy://u:p@h:1?reconnection_interval=5", wire.ErrInvalidConnectionString},
		{"iggy://u:p@h:1?reconnection_interval=abc", wire.ErrInvalidConnectionString},
		{"iggy://u:p@h:1?reconnection_interval=", wire.ErrInvalidConnectionString},
		{"iggy://u:p@h:1?heartbeat_interval=-1s", wire.ErrInvalidConnectionString},
		{"iggy://u:p@h:1?heartbeat_interval=5parsecs", wire.ErrInvalidConnectionString},
		{"iggy://u:p@h:1?heartbeat_interval=99999999999999999999s", wire.ErrInvalidConnectionString},
		// Numbers that are not retry counts.
		{"iggy+quic://u:p@h:1?initial_mtu=70000", wire.ErrInvalidConnectionString},
		{"iggy+quic://u:p@h:1?send_window=x", wire.ErrInvalidConnectionString},
		{"iggy+ws://u:p@h:1?max_frame_size=-1", wire.ErrInvalidConnectionString},
		{"iggy+http://u:p@h:1?retries=x", wire.ErrInvalidConnectionString},
		// A bad retry count is InvalidNumberValue.
		{"iggy://u:p@h:1?reconnection_retries=abc", wire.ErrInvalidNumberValue},
		{"iggy://u:p@h:1?reconnection_retries=-1", wire.ErrInvalidNumberValue},
		{"iggy://u:p@h:1?reconnection_retries=4294967296", wire.ErrInvalidNumberValue},
		{"iggy+quic://u:p@h:1?reconnection_max_retries=x", wire.ErrInvalidNumberValue},
		{"iggy+ws://u:p@h:1?reconnection_retries=1.5", wire.ErrInvalidNumberValue},
	}
	for _, tc := range cases {
		_, err := ParseConnectionString(tc.in)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.in, err, tc.want)
		}
		if tc.want == wire.ErrInvalidConnectionString && errors.Is(err, wire.ErrInvalidNumberValue) {
			t.Errorf("%s: InvalidNumberValue is only for retry counts", tc.in)
		}
	}
}

// A connection string connects and logs in with its credentials.
func TestConnectString(t *testing.T) {
	f := newFake(t)
	c, err := ConnectString(t.Context(), "iggy://iggy:secret@"+f.addr()+"?heartbeat_interval=disabled&nodelay=true")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	reg := f.requests()[0]
	if reg.operation != 1 || string(reg.body[len(reg.body)-15:len(reg.body)-4]) != "iggy\x06secret" {
		t.Fatalf("auto-login body %q", reg.body)
	}
}
