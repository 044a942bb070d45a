package client

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"iggynode/internal/units"
	"iggynode/wire"
)

// ParseConnectionString parses an iggy:// connection string exactly as
// transports.md 8.1-8.4 describe it:
//
//	iggy://<credentials>@<host>:<port>[?<options>]
//	iggy+<tcp|quic|http|ws>://<credentials>@<host>:<port>[?<options>]
//
// Credentials are user:password or a personal access token and are
// mandatory. Every failure wraps wire.ErrInvalidConnectionString, except a
// bad reconnection retry count, which wraps wire.ErrInvalidNumberValue. The
// result starts from DefaultOptions; TCP+TLS built from a string always
// verifies the certificate.
func ParseConnectionString(s string) (Options, error) {
	if strings.Count(s, "://") != 1 || strings.Count(s, "@") != 1 {
		return Options{}, connErr("must contain \"://\" and \"@\" exactly once")
	}
	scheme, rest, _ := strings.Cut(s, "://")
	transport, ok := schemeTransport(scheme)
	if !ok {
		return Options{}, connErr(fmt.Sprintf("unknown scheme %q", scheme))
	}
	o := DefaultOptions(transport)
	creds, target, _ := strings.Cut(rest, "@")
	if err := o.setCredentials(creds); err != nil {
		return Options{}, err
	}
	if strings.Count(target, "?") > 1 {
		return Options{}, connErr("more than one \"?\"")
	}
	addr, query, hasQuery := strings.Cut(target, "?")
	if err := checkAddress(addr); err != nil {
		return Options{}, err
	}
	o.Address = addr
	if hasQuery {
		if err := o.setOptions(query); err != nil {
			return Options{}, err
		}
	}
	return o, nil
}

func connErr(reason string) error {
	return fmt.Errorf("client: connection string: %s: %w", reason, wire.ErrInvalidConnectionString)
}

// schemeTransport maps the case-sensitive scheme to its transport.
func schemeTransport(scheme string) (string, bool) {
	switch scheme {
	case "iggy", "iggy+tcp":
		return TransportTCP, true
	case "iggy+quic":
		return TransportQUIC, true
	case "iggy+http":
		return TransportHTTP, true
	case "iggy+ws":
		return TransportWS, true
	}
	return "", false
}

// setCredentials: one ':' is user:password (both non-empty), none is a
// token, more is an error. No percent-decoding.
func (o *Options) setCredentials(creds string) error {
	switch strings.Count(creds, ":") {
	case 0:
		if creds == "" {
			return connErr("credentials are mandatory")
		}
		o.PersonalAccessToken = creds
	case 1:
		user, pass, _ := strings.Cut(creds, ":")
		if user == "" || pass == "" {
			return connErr("username and password must both be non-empty")
		}
		o.Username, o.Password = user, pass
	default:
		return connErr("credentials hold more than one \":\"")
	}
	return nil
}

// checkAddress: host:port must contain ':', must not start with it, and the
// segment after the first ':' (up to any further ':') must parse as u16.
func checkAddress(addr string) error {
	if !strings.Contains(addr, ":") || strings.HasPrefix(addr, ":") {
		return connErr(fmt.Sprintf("address %q is not host:port", addr))
	}
	port := strings.Split(addr, ":")[1]
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return connErr(fmt.Sprintf("port %q is not a u16", port))
	}
	return nil
}

// setOptions applies key=value pairs. An empty list is an error except for
// ws; unknown keys are errors.
func (o *Options) setOptions(query string) error {
	if query == "" {
		if o.Transport == TransportWS {
			return nil
		}
		return connErr("empty option list")
	}
	for _, pair := range strings.Split(query, "&") {
		if strings.Count(pair, "=") != 1 {
			return connErr(fmt.Sprintf("option %q is not key=value", pair))
		}
		key, value, _ := strings.Cut(pair, "=")
		var err error
		switch o.Transport {
		case TransportTCP:
			err = o.setTCPOption(key, value)
		case TransportQUIC:
			err = o.setQUICOption(key, value)
		case TransportWS:
			err = o.setWSOption(key, value)
		case TransportHTTP:
			err = o.setHTTPOption(key, value)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func unknownKey(key string) error { return connErr(fmt.Sprintf("unknown option %q", key)) }

// setSharedOption handles the heartbeat and reconnect keys whose names the
// TCP and WebSocket tables share.
func (o *Options) setSharedOption(key, value string) (bool, error) {
	var err error
	switch key {
	case "heartbeat_interval":
		o.HeartbeatInterval, err = parseDuration(value)
	case "reconnection_retries":
		o.Reconnect.Retries, err = parseRetries(value)
	case "reconnection_interval":
		o.Reconnect.Interval, err = parseDuration(value)
	case "reestablish_after":
		o.Reconnect.ReestablishAfter, err = parseDuration(value)
	case "tls":
		o.TLS.Enabled = parseBool(value)
	case "tls_domain":
		o.TLS.Domain = value
	case "tls_ca_file":
		o.TLS.CAFile = value
	default:
		return false, nil
	}
	return true, err
}

// setTCPOption: transports.md 8.2.
func (o *Options) setTCPOption(key, value string) error {
	if ok, err := o.setSharedOption(key, value); ok {
		return err
	}
	if key == "nodelay" {
		o.NoDelay = parseBool(value)
		return nil
	}
	return unknownKey(key)
}

// setWSOption: transports.md 8.4. WSS verifies certificates only when asked.
func (o *Options) setWSOption(key, value string) error {
	if ok, err := o.setSharedOption(key, value); ok {
		return err
	}
	var err error
	w := &o.WebSocket
	switch key {
	case "read_buffer_size":
		w.ReadBufferSize, err = parseU64(value)
	case "write_buffer_size":
		w.WriteBufferSize, err = parseU64(value)
	case "max_write_buffer_size":
		w.MaxWriteBufferSize, err = parseU64(value)
	case "max_message_size":
		w.MaxMessageSize, err = parseU64(value)
	case "max_frame_size":
		w.MaxFrameSize, err = parseU64(value)
	case "accept_unmasked_frames":
		w.AcceptUnmaskedFrames = parseBool(value)
	case "tls_validate_certificate":
		o.TLS.InsecureSkipVerify = !parseBool(value)
	default:
		return unknownKey(key)
	}
	return err
}

// setQUICOption: transports.md 8.3 (note the reconnection key names).
func (o *Options) setQUICOption(key, value string) error {
	var err error
	q := &o.QUIC
	switch key {
	case "response_buffer_size":
		q.ResponseBufferSize, err = parseU64(value)
	case "max_concurrent_bidi_streams":
		q.MaxConcurrentBidiStreams, err = parseU64(value)
	case "datagram_send_buffer_size":
		q.DatagramSendBufferSize, err = parseU64(value)
	case "initial_mtu":
		var v uint64
		v, err = strconv.ParseUint(value, 10, 16)
		if err != nil {
			err = connErr(fmt.Sprintf("%q is not a u16", value))
		}
		q.InitialMTU = uint16(v)
	case "send_window":
		q.SendWindow, err = parseU64(value)
	case "receive_window":
		q.ReceiveWindow, err = parseU64(value)
	case "keep_alive_interval":
		q.KeepAliveInterval, err = parseMillis(value)
	case "max_idle_timeout":
		q.MaxIdleTimeout, err = parseMillis(value)
	case "validate_certificate":
		q.ValidateCertificate = parseBool(value)
	case "heartbeat_interval":
		o.HeartbeatInterval, err = parseDuration(value)
	case "reconnection_max_retries":
		o.Reconnect.Retries, err = parseRetries(value)
	case "reconnection_interval":
		o.Reconnect.Interval, err = parseDuration(value)
	case "reconnection_reestablish_after":
		o.Reconnect.ReestablishAfter, err = parseDuration(value)
	default:
		return unknownKey(key)
	}
	return err
}

// setHTTPOption: transports.md 8.4 (heartbeat_interval and retries only).
func (o *Options) setHTTPOption(key, value string) error {
	switch key {
	case "heartbeat_interval":
		var err error
		o.HeartbeatInterval, err = parseDuration(value)
		return err
	case "retries":
		v, err := strconv.ParseUint(value, 10, 32)
		if err != nil {
			return connErr(fmt.Sprintf("%q is not a u32", value))
		}
		o.HTTP.Retries = uint32(v)
		return nil
	}
	return unknownKey(key)
}

// parseBool: only the literal "true" is true (transports.md 8.1).
func parseBool(v string) bool { return v == "true" }

func parseU64(v string) (uint64, error) {
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, connErr(fmt.Sprintf("%q is not an unsigned integer", v))
	}
	return n, nil
}

func parseMillis(v string) (time.Duration, error) {
	n, err := parseU64(v)
	if err != nil {
		return 0, err
	}
	if n > uint64(1<<63-1)/uint64(time.Millisecond) {
		return 0, connErr(fmt.Sprintf("%q milliseconds overflows", v))
	}
	return time.Duration(n) * time.Millisecond, nil
}

// parseRetries: a u32 or "unlimited" (-1); a bad number is InvalidNumberValue.
func parseRetries(v string) (int, error) {
	if v == "unlimited" {
		return -1, nil
	}
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("client: connection string: retries %q: %w", v, wire.ErrInvalidNumberValue)
	}
	return int(n), nil
}

// parseDuration reads a human duration ("5s", "500ms", "1m", "1h 30m",
// units.ParseDuration); "0", "unlimited", "disabled" and "none" mean zero
// (transports.md 8.1).
func parseDuration(v string) (time.Duration, error) {
	switch v {
	case "0", "unlimited", "disabled", "none":
		return 0, nil
	}
	d, err := units.ParseDuration(v)
	if err != nil {
		return 0, connErr(fmt.Sprintf("duration %q", v))
	}
	return d, nil
}
