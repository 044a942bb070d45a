package client

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"iggynode/wire"
	"iggynode/wire/jsonmodel"
)

// HTTPTransport carries the SDK's commands over the REST API
// (docs/spec/http.md) behind the frame seam: a Conn takes each request
// frame, sends the route of its command with a JSON body built by
// package wire/jsonmodel, and hands back the reply frame the binary plane
// would have sent, so sessions, retries and decoding stay the Client's.
// A Register logs in (password or token) and keeps the JWT; a Logout
// logs out. Commands without a route answer FeatureUnavailable locally,
// as the SDKs do (join, leave and sync of consumer groups, GetMe, flush;
// http.md 2.1.3). Failures become the channel the binary plane uses for
// the same operation: a result section for result-framed operations, a
// header status otherwise; the generic 404 of a read is its empty "not
// found" reply. With TLS set the scheme is https (HTTP/2 by ALPN).
type HTTPTransport struct {
	TLS    *TLSOptions
	Client *http.Client
}

// NewHTTPTransport builds the HTTP transport the options describe.
func NewHTTPTransport(o Options) (*HTTPTransport, error) {
	t := &HTTPTransport{}
	tr := &http.Transport{MaxIdleConnsPerHost: 16, ForceAttemptHTTP2: true}
	if o.TLS.Enabled {
		cfg, err := tlsConfig(o.TLS.Domain, o.TLS.CAFile, o.TLS.InsecureSkipVerify)
		if err != nil {
			return nil, err
		}
		cfg.NextProtos = []string{"h2", "http/1.1"}
		tr.TLSClientConfig = cfg
		tls := o.TLS
		t.TLS = &tls
	}
	t.Client = &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return t, nil
}

func (t *HTTPTransport) Name() string { return TransportHTTP }

// Dial checks the server answers /ping and returns a connection bound to it.
func (t *HTTPTransport) Dial(ctx context.Context, addr string) (Conn, error) {
	scheme := "http://"
	if t.TLS != nil {
		scheme = "https://"
	}
	c := &httpConn{t: t, base: scheme + addr}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/ping", nil)
	if err != nil {
		return nil, fmt.Errorf("client: %w: %w", wire.ErrInvalidServerAddress, err)
	}
	resp, err := t.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("client: dial %s: %w: %w", addr, wire.ErrCannotEstablishConnection, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return c, nil
}

// httpConn is one "connection": the base URL and the session's JWT.
type httpConn struct {
	t     *HTTPTransport
	base  string
	token string
	user  uint32
	reply []byte
}

func (c *httpConn) Close() error { return nil }

func (c *httpConn) WriteFrame(ctx context.Context, deadline time.Time, frame []byte) error {
	if len(frame) < wire.HeaderSize {
		return fmt.Errorf("client: short frame")
	}
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	hdr := wire.HeaderOf(frame).Request()
	reply, err := c.serve(ctx, hdr, frame[wire.HeaderSize:])
	if err != nil {
		return ioErr(ctx, err)
	}
	c.reply = reply
	return nil
}

func (c *httpConn) ReadFrame(context.Context, time.Time) ([]byte, error) {
	if c.reply == nil {
		return nil, io.ErrUnexpectedEOF
	}
	r := c.reply
	c.reply = nil
	return r, nil
}

// answer is an HTTP reply read whole.
type answer struct {
	status int
	body   []byte
}

// send runs one route; body nil sends none, a []byte is sent as is.
func (c *httpConn) send(ctx context.Context, method, path string, body any, auth bool) (answer, error) {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			return answer{}, err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return answer{}, err
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if auth {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.t.Client.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{}, err
	}
	return answer{status: resp.StatusCode, body: b}, nil
}

// code is the IggyError code of a failed answer: the error body's id when
// it is a code, else one the status implies.
func (a answer) code() wire.ErrorCode {
	var e jsonmodel.ErrorBody
	if json.Unmarshal(a.body, &e) == nil && e.Code != "" && e.ID != uint32(a.status) {
		return wire.ErrorCode(e.ID)
	}
	switch a.status {
	case http.StatusUnauthorized:
		return wire.ErrUnauthenticated
	case http.StatusForbidden:
		return wire.ErrUnauthorized
	case http.StatusNotFound:
		return wire.ErrResourceNotFound
	case http.StatusTooManyRequests, http.StatusServiceUnavailable, http.StatusGatewayTimeout, http.StatusBadGateway:
		return wire.ErrTransientNotAccepted
	}
	return wire.ErrHttpError
}

func (a answer) generic404() bool {
	var e jsonmodel.ErrorBody
	return a.status == http.StatusNotFound && json.Unmarshal(a.body, &e) == nil && e.Code == "not_found"
}

// frames builds reply frames for request header h.
type frames struct{ h wire.RequestHeader }

func (f frames) reply(op wire.Operation, status wire.ErrorCode, body []byte) []byte {
	out := make([]byte, wire.HeaderSize+len(body))
	rh := wire.ReplyHeader{Size: uint32(len(out)), Client: f.h.Client, Request: f.h.Request, Operation: op, Status: uint32(status),
		Op: 1, Commit: 1}
	rh.Encode(wire.HeaderOf(out))
	copy(out[wire.HeaderSize:], body)
	return out
}

// ok is a success with payload, result-framed when op is.
func (f frames) ok(payload []byte) []byte {
	op := f.h.Operation
	if op.ResultFramed() {
		return f.reply(op, 0, append(wire.AppendResultOK(nil), payload...))
	}
	return f.reply(op, 0, payload)
}

// fail is code on the channel the binary plane uses for op.
func (f frames) fail(code wire.ErrorCode) []byte {
	op := f.h.Operation
	if op.ResultFramed() && op != wire.OpRegister {
		return f.reply(op, 0, wire.AppendResultError(nil, code))
	}
	return f.reply(op, code, nil)
}

func (f frames) evict(reason wire.EvictionReason) []byte {
	out := make([]byte, wire.HeaderSize)
	e := wire.EvictionHeader{Client: f.h.Client, Reason: reason}
	e.Encode(wire.HeaderOf(out))
	return out
}

// reply is a decoded JSON model that converts to a wire body.
func decodeJSON[T any](a answer) (T, error) {
	var v T
	err := json.Unmarshal(a.body, &v)
	return v, err
}

func pathID(id wire.Identifier) string {
	if id.IsNumeric() {
		return strconv.FormatUint(uint64(id.Num), 10)
	}
	return url.PathEscape(id.Str)
}

func topicPath(s, t wire.Identifier) string { return "/streams/" + pathID(s) + "/topics/" + pathID(t) }

func strp(s string) *string { return &s }

// serve maps one request frame to its route and returns the reply frame.
func (c *httpConn) serve(ctx context.Context, h wire.RequestHeader, body []byte) ([]byte, error) {
	f := frames{h: h}
	switch h.Operation {
	case wire.OpRegister:
		return c.login(ctx, f, body)
	case wire.OpLogout:
		if _, err := c.send(ctx, http.MethodDelete, "/users/logout", nil, true); err != nil {
			return nil, err
		}
		c.token = ""
		return f.reply(wire.OpLogout, 0, nil), nil
	}
	code := h.Code
	if h.Operation != wire.OpNonReplicated {
		code, _ = wire.CodeForOperation(h.Operation) // replicated requests name their command by operation
	}
	h.Code = code
	rt, ok := routeFor(code, body)
	if !ok {
		return f.fail(wire.ErrFeatureUnavailable), nil
	}
	if rt.err != 0 {
		return f.fail(rt.err), nil
	}
	if h.Code == wire.CodePing {
		if _, err := c.send(ctx, http.MethodGet, "/ping", nil, false); err != nil {
			return nil, err
		}
		return f.ok(nil), nil
	}
	a, err := c.send(ctx, rt.method, rt.path, rt.body, true)
	if err != nil {
		return nil, err
	}
	switch {
	case a.status/100 == 2:
	case a.generic404() && rt.emptyOn404:
		return f.ok(nil), nil
	default:
		return f.fail(a.code()), nil
	}
	if rt.convert == nil {
		return f.ok(nil), nil
	}
	payload, err := rt.convert(a)
	if err != nil {
		return f.fail(wire.ErrInvalidCommand), nil
	}
	return f.ok(payload), nil
}

// login runs a Register as POST /users/login or the token login.
func (c *httpConn) login(ctx context.Context, f frames, body []byte) ([]byte, error) {
	rb, err := wire.DecodeRegister(body)
	if err != nil {
		return f.evict(wire.EvictMalformedLogin), nil
	}
	var a answer
	switch {
	case rb.Password != nil:
		a, err = c.send(ctx, http.MethodPost, "/users/login", jsonmodel.LoginUser{Username: &rb.Password.Username, Password: &rb.Password.Password}, false)
	case rb.Token != nil:
		a, err = c.send(ctx, http.MethodPost, "/personal-access-tokens/login", jsonmodel.Token{Token: &rb.Token.Token}, false)
	default:
		return f.evict(wire.EvictMalformedLogin), nil
	}
	if err != nil {
		return nil, err
	}
	if a.status != http.StatusOK {
		switch a.code() {
		case wire.ErrInvalidPersonalAccessToken:
			return f.evict(wire.EvictInvalidToken), nil
		case wire.ErrUserInactive:
			return f.evict(wire.EvictUserInactive), nil
		case wire.ErrTransientNotAccepted, wire.ErrTransientNotCommitted, wire.ErrCannotEstablishConnection:
			return f.reply(wire.OpRegister, 0, wire.AppendResultError(nil, wire.ErrTransientNotAccepted)), nil
		}
		return f.evict(wire.EvictInvalidCredentials), nil
	}
	id, err := decodeJSON[jsonmodel.IdentityInfo](a)
	if err != nil || id.AccessToken == nil {
		return f.evict(wire.EvictSessionError), nil
	}
	c.token, c.user = id.AccessToken.Token, id.UserID
	resp := wire.LoginRegisterResponse{UserID: id.UserID, Session: 1, ServerProtocolVersion: wire.ProtocolVersion, ServerVersion: "http"}
	return f.ok(resp.AppendTo(nil)), nil
}

// httpRoute is one command's HTTP form.
type httpRoute struct {
	method, path string
	body         any
	// convert turns the JSON answer into the binary payload; nil: none.
	convert func(answer) ([]byte, error)
	// emptyOn404: the generic 404 is the binary "not found" (empty body).
	emptyOn404 bool
	err        wire.ErrorCode // refused locally
}

func as[T interface{ ToWire() W }, W interface{ AppendTo([]byte) []byte }](a answer) ([]byte, error) {
	v, err := decodeJSON[T](a)
	if err != nil {
		return nil, err
	}
	return v.ToWire().AppendTo(nil), nil
}

func list[T interface{ ToWire() W }, W any](a answer, app func([]W) []byte) ([]byte, error) {
	v, err := decodeJSON[[]T](a)
	if err != nil {
		return nil, err
	}
	out := make([]W, 0, len(v))
	for _, x := range v {
		out = append(out, x.ToWire())
	}
	return app(out), nil
}

func fixed(code wire.ErrorCode) (httpRoute, bool) { return httpRoute{err: code}, true }

// routeFor maps a command code and its binary body to its route.
func routeFor(code wire.CommandCode, body []byte) (httpRoute, bool) {
	decode := func(v wire.Body) bool { return v.Decode(body) == nil }
	switch code {
	case wire.CodePing:
		return httpRoute{}, true
	case wire.CodeGetStats:
		return httpRoute{method: "GET", path: "/stats", convert: as[jsonmodel.Stats, wire.Stats]}, true
	case wire.CodeGetSnapshot:
		var r wire.GetSnapshot
		if !decode(&r) || r.Compression < 1 || int(r.Compression) > len(jsonmodel.SnapshotCompressions) {
			return fixed(wire.ErrInvalidCommand)
		}
		b := jsonmodel.Snapshot{Compression: strp(jsonmodel.SnapshotCompressions[r.Compression-1]), SnapshotTypes: []string{}}
		for _, t := range r.Types {
			switch {
			case t == 100:
				b.SnapshotTypes = append(b.SnapshotTypes, "All")
			case t >= 1 && int(t) < len(jsonmodel.SnapshotTypes):
				b.SnapshotTypes = append(b.SnapshotTypes, jsonmodel.SnapshotTypes[t-1])
			default:
				return fixed(wire.ErrInvalidCommand)
			}
		}
		return httpRoute{method: "POST", path: "/snapshot", body: b, convert: func(a answer) ([]byte, error) { return a.body, nil }}, true
	case wire.CodeGetClusterMetadata:
		return httpRoute{method: "GET", path: "/cluster/metadata", convert: as[jsonmodel.ClusterMetadata, wire.ClusterMetadata]}, true
	case wire.CodeDescribeOptions:
		var r wire.DescribeOptions
		scopes := map[uint8]string{1: "topic", 2: "stream", 3: "user"}
		if !decode(&r) || scopes[r.Scope] == "" {
			return fixed(wire.ErrInvalidCommand)
		}
		return httpRoute{method: "GET", path: "/options/" + scopes[r.Scope], convert: func(a answer) ([]byte, error) {
			return list[jsonmodel.OptionSpec](a, func(v []wire.OptionDescriptor) []byte { return wire.OptionCatalog(v).AppendTo(nil) })
		}}, true
	case wire.CodeGetClient:
		var r wire.GetClient
		if !decode(&r) {
			return fixed(wire.ErrInvalidCommand)
		}
		return httpRoute{method: "GET", path: "/clients/" + strconv.FormatUint(uint64(r.ClientID), 10), emptyOn404: true,
			convert: as[jsonmodel.ClientInfoDetails, wire.ClientDetails]}, true
	case wire.CodeGetClients:
		return httpRoute{method: "GET", path: "/clients", convert: func(a answer) ([]byte, error) {
			return list[jsonmodel.ClientInfo](a, func(v []wire.ClientResponse) []byte { return wire.Clients(v).AppendTo(nil) })
		}}, true
	}
	if r, ok := userRoute(code, decode); ok {
		return r, true
	}
	if r, ok := streamRoute(code, decode); ok {
		return r, true
	}
	return messageRoute(code, body, decode)
}

func userRoute(code wire.CommandCode, decode func(wire.Body) bool) (httpRoute, bool) {
	switch code {
	case wire.CodeGetUser:
		var r wire.GetUser
		if !decode(&r) {
			return fixed(wire.ErrInvalidCommand)
		}
		return httpRoute{method: "GET", path: "/users/" + pathID(r.User), emptyOn404: true, convert: as[jsonmodel.UserInfoDetails, wire.UserDetails]}, true
	case wire.CodeGetUsers:
		return httpRoute{method: "GET", path: "/users", convert: func(a answer) ([]byte, error) {
			return list[jsonmodel.UserInfo](a, func(v []wire.UserResponse) []byte { return wire.Users(v).AppendTo(nil) })
		}}, true
	case wire.CodeCreateUser:
		var r wire.CreateUser
		if !decode(&r) {
			return fixed(wire.ErrInvalidCommand)
		}
		st := "active"
		if wire.UserStatus(r.Status) == wire.UserInactive {
			st = "inactive"
		}
		b := jsonmodel.CreateUser{Username: &r.Username, Password: &r.Password, Status: &st, Permissions: jsonmodel.FromPermissions(r.Permissions)}
		return httpRoute{method: "POST", path: "/users", body: b, convert: as[jsonmodel.UserInfoDetails, wire.UserDetails]}, true
	case wire.CodeDeleteUser:
		var r wire.DeleteUser
		if !decode(&r) {
			return fixed(wire.ErrInvalidCommand)
		}
		return httpRoute{method: "DELETE", path: "/users/" + pathID(r.User)}, true
	case wire.CodeUpdateUser:
		var r wire.UpdateUser
		if !decode(&r) {
			return fixed(wire.ErrInvalidCommand)
		}
		b := jsonmodel.UpdateUser{Username: r.Username}
		if r.Status != nil {
			st := "active"
			if wire.UserStatus(*r.Status) == wire.UserInactive {
				st = "inactive"
			}
			b.Status = &st
		}
		return httpRoute{method: "PUT", path: "/users/" + pathID(r.User), body: b}, true
	case wire.CodeUpdatePermissions:
		var r wire.UpdatePermissions
		if !decode(&r) {
			return fixed(wire.ErrInvalidCommand)
		}
		return httpRoute{method: "PUT", path: "/users/" + pathID(r.User) + "/permissions",
			body: jsonmodel.UpdatePermissions{Permissions: jsonmodel.FromPermissions(r.Permissions)}}, true
	case wire.CodeChangePassword:
		var r wire.ChangePassword
		if !decode(&r) {
			return fixed(wire.ErrInvalidCommand)
		}
		return httpRoute{method: "PUT", path: "/users/" + pathID(r.User) + "/password",
			body: jsonmodel.ChangePassword{CurrentPassword: &r.CurrentPassword, NewPassword: &r.NewPassword}}, true
	case wire.CodeGetPersonalAccessTokens:
		return httpRoute{method: "GET", path: "/personal-access-tokens", convert: func(a answer) ([]byte, error) {
			return list[jsonmodel.PersonalAccessTokenInfo](a, func(v []wire.PersonalAccessTokenInfo) []byte {
				return wire.PersonalAccessTokens(v).AppendTo(nil)
			})
		}}, true
	case wire.CodeCreatePersonalAccessToken:
		var r wire.CreatePersonalAccessToken
		if !decode(&r) {
			return fixed(wire.ErrInvalidCommand)
		}
		return httpRoute{method: "POST", path: "/personal-access-tokens", body: jsonmodel.CreatePersonalAccessToken{Name: &r.Name, Expiry: &r.Expiry},
			convert: func(a answer) ([]byte, error) {
				t, err := decodeJSON[jsonmodel.RawPersonalAccessToken](a)
				return wire.RawToken{Token: t.Token}.AppendTo(nil), err
			}}, true
	case wire.CodeDeletePersonalAccessToken:
		var r wire.DeletePersonalAccessToken
		if !decode(&r) {
			return fixed(wire.ErrInvalidCommand)
		}
		return httpRoute{method: "DELETE", path: "/personal-access-tokens/" + url.PathEscape(r.Name)}, true
	case wire.CodeGetMe, wire.CodeJoinConsumerGroup, wire.CodeLeaveConsumerGroup, wire.CodeSyncConsumerGroup, wire.CodeFlushUnsavedBuffer:
		return fixed(wire.ErrFeatureUnavailable) // no route (http.md 2.1.3)
	}
	return httpRoute{}, false
}

func optionsMap(o wire.Options) map[string]string {
	if len(o) == 0 {
		return nil
	}
	m := map[string]string{}
	for _, kv := range o {
		m[kv.Key] = jsonmodel.OptionText(kv.Kind, kv.Value)
	}
	return m
}

func streamRoute(code wire.CommandCode, decode func(wire.Body) bool) (httpRoute, bool) {
	switch code {
	case wire.CodeGetStream:
		var r wire.GetStream
		if !decode(&r) {
			return fixed(wire.ErrInvalidCommand)
		}
		return httpRoute{method: "GET", path: "/streams/" + pathID(r.Stream), emptyOn404: true, convert: as[jsonmodel.StreamDetails, wire.StreamDetails]}, true
	case wire.CodeGetStreams:
		return httpRoute{method: "GET", path: "/streams", convert: func(a answer) ([]byte, error) {
			return list[jsonmodel.Stream](a, func(v []wire.StreamResponse) []byte { return wire.Streams(v).AppendTo(nil) })
		}}, true
	case wire.CodeCreateStream:
		var r wire.CreateStream
		if !decode(&r) {
			return fixed(wire.ErrInvalidCommand)
		}
		if len(r.Options) > 0 {
			return fixed(wire.ErrUnsupportedOptionKey) // the route takes a name only; no stream option exists (5.5.3)
		}
		return httpRoute{method: "POST", path: "/streams", body: jsonmodel.CreateStream{Name: &r.Name}, convert: as[jsonmodel.StreamDetails, wire.StreamDetails]}, true
	case wire.CodeUpdateStream:
		var r wire.UpdateStream
		if !decode(&r) {
			return fixed(wire.ErrInvalidCommand)
		}
		return httpRoute{method: "PUT", path: "/streams/" + pathID(r.Stream), body: jsonmodel.UpdateStream{Name: &r.Name, Options: optionsMap(r.Options)}}, true
	case wire.CodeDeleteStream, wire.CodePurgeStream:
		var r wire.DeleteStream
		if !decode(&r) {
			return fixed(wire.ErrInvalidCommand)
		}
		p := "/streams/" + pathID(r.Stream)
		if code == wire.CodePurgeStream {
			p += "/purge"
		}
		return httpRoute{method: "DELETE", path: p}, true
	case wire.CodeGetTopic:
		var r wire.GetTopic
		if !decode(&r) {
			return fixed(wire.ErrInvalidCommand)
		}
		return httpRoute{method: "GET", path: topicPath(r.Stream, r.Topic), emptyOn404: true, convert: as[jsonmodel.TopicDetails, wire.TopicDetails]}, true
	case wire.CodeGetTopics:
		var r wire.GetTopics
		if !decode(&r) {
			return fixed(wire.ErrInvalidCommand)
		}
		return httpRoute{method: "GET", path: "/streams/" + pathID(r.Stream) + "/topics", convert: func(a answer) ([]byte, error) {
			return list[jsonmodel.Topic](a, func(v []wire.TopicHeader) []byte { return wire.Topics(v).AppendTo(nil) })
		}}, true
	case wire.CodeCreateTopic:
		var r wire.CreateTopic
		if !decode(&r) {
			return fixed(wire.ErrInvalidCommand)
		}
		return httpRoute{method: "POST", path: "/streams/" + pathID(r.Stream) + "/topics",
			body:    jsonmodel.CreateTopic{Name: &r.Name, PartitionsCount: &r.PartitionsCount, Options: optionsMap(r.Options)},
			convert: as[jsonmodel.TopicDetails, wire.TopicDetails]}, true
	case wire.CodeUpdateTopic:
		var r wire.UpdateTopic
		if !decode(&r) {
			return fixed(wire.ErrInvalidCommand)
		}
		return httpRoute{method: "PUT", path: topicPath(r.Stream, r.Topic), body: jsonmodel.UpdateTopic{Name: &r.Name, Options: optionsMap(r.Options)}}, true
	case wire.CodeDeleteTopic, wire.CodePurgeTopic:
		var r wire.DeleteTopic
		if !decode(&r) {
			return fixed(wire.ErrInvalidCommand)
		}
		p := topicPath(r.Stream, r.Topic)
		if code == wire.CodePurgeTopic {
			p += "/purge"
		}
		return httpRoute{method: "DELETE", path: p}, true
	case wire.CodeCreatePartitions:
		var r wire.CreatePartitions
		if !decode(&r) {
			return fixed(wire.ErrInvalidCommand)
		}
		return httpRoute{method: "POST", path: topicPath(r.Stream, r.Topic) + "/partitions", body: jsonmodel.CreatePartitions{PartitionsCount: &r.PartitionsCount}}, true
	case wire.CodeDeletePartitions:
		var r wire.DeletePartitions
		if !decode(&r) {
			return fixed(wire.ErrInvalidCommand)
		}
		return httpRoute{method: "DELETE", path: topicPath(r.Stream, r.Topic) + "/partitions?partitions_count=" + strconv.FormatUint(uint64(r.PartitionsCount), 10)}, true
	case wire.CodeDeleteSegments:
		var r wire.DeleteSegments
		if !decode(&r) {
			return fixed(wire.ErrInvalidCommand)
		}
		return httpRoute{method: "DELETE", path: topicPath(r.Stream, r.Topic) + "/partitions/" + strconv.FormatUint(uint64(r.PartitionID), 10) +
			"?segments_count=" + strconv.FormatUint(uint64(r.SegmentsCount), 10)}, true
	case wire.CodeGetConsumerGroup:
		var r wire.GetConsumerGroup
		if !decode(&r) {
			return fixed(wire.ErrInvalidCommand)
		}
		return httpRoute{method: "GET", path: topicPath(r.Stream, r.Topic) + "/consumer-groups/" + pathID(r.Group), emptyOn404: true,
			convert: as[jsonmodel.ConsumerGroupDetails, wire.ConsumerGroupDetails]}, true
	case wire.CodeGetConsumerGroups:
		var r wire.GetConsumerGroups
		if !decode(&r) {
			return fixed(wire.ErrInvalidCommand)
		}
		return httpRoute{method: "GET", path: topicPath(r.Stream, r.Topic) + "/consumer-groups", convert: func(a answer) ([]byte, error) {
			return list[jsonmodel.ConsumerGroup](a, func(v []wire.ConsumerGroupResponse) []byte { return wire.ConsumerGroups(v).AppendTo(nil) })
		}}, true
	case wire.CodeCreateConsumerGroup:
		var r wire.CreateConsumerGroup
		if !decode(&r) {
			return fixed(wire.ErrInvalidCommand)
		}
		return httpRoute{method: "POST", path: topicPath(r.Stream, r.Topic) + "/consumer-groups", body: jsonmodel.CreateConsumerGroup{Name: &r.Name},
			convert: as[jsonmodel.ConsumerGroupDetails, wire.ConsumerGroupDetails]}, true
	case wire.CodeDeleteConsumerGroup:
		var r wire.DeleteConsumerGroup
		if !decode(&r) {
			return fixed(wire.ErrInvalidCommand)
		}
		return httpRoute{method: "DELETE", path: topicPath(r.Stream, r.Topic) + "/consumer-groups/" + pathID(r.Group)}, true
	}
	return httpRoute{}, false
}

func messageRoute(code wire.CommandCode, body []byte, decode func(wire.Body) bool) (httpRoute, bool) {
	switch code {
	case wire.CodePollMessages:
		var r wire.PollMessages
		if !decode(&r) {
			return fixed(wire.ErrInvalidCommand)
		}
		if r.Consumer.Kind == wire.ConsumerGroup {
			return fixed(wire.ErrFeatureUnavailable) // HTTP callers are never group members (6.8)
		}
		q := url.Values{}
		q.Set("consumer_id", pathIDQuery(r.Consumer.ID))
		q.Set("partition_id", strconv.FormatUint(uint64(r.Partition.ID), 10))
		q.Set("kind", r.Strategy.Kind.String())
		q.Set("value", strconv.FormatUint(r.Strategy.Value, 10))
		q.Set("count", strconv.FormatUint(uint64(r.Count), 10))
		q.Set("auto_commit", strconv.FormatBool(r.AutoCommit))
		return httpRoute{method: "GET", path: topicPath(r.Stream, r.Topic) + "/messages?" + q.Encode(), convert: func(a answer) ([]byte, error) {
			p, err := decodeJSON[jsonmodel.PolledMessages](a)
			if err != nil {
				return nil, err
			}
			w, err := p.ToWire()
			return w.AppendTo(nil), err
		}}, true
	case wire.CodeSendMessages:
		var r wire.SendMessages
		if !decode(&r) {
			return fixed(wire.ErrInvalidCommand)
		}
		b, ok := sendBody(r)
		if !ok {
			return fixed(wire.ErrInvalidCommand)
		}
		return httpRoute{method: "POST", path: topicPath(r.Stream, r.Topic) + "/messages", body: b, convert: as[jsonmodel.SendMessagesConfirmations, wire.SendConfirmations]}, true
	case wire.CodeGetConsumerOffset:
		var r wire.GetConsumerOffset
		if !decode(&r) {
			return fixed(wire.ErrInvalidCommand)
		}
		if r.Consumer.Kind == wire.ConsumerGroup {
			return fixed(wire.ErrFeatureUnavailable) // consumers over HTTP are kind 1 (5.10)
		}
		return httpRoute{method: "GET", path: topicPath(r.Stream, r.Topic) + "/consumer-offsets?consumer_id=" + url.QueryEscape(pathIDQuery(r.Consumer.ID)) +
			"&partition_id=" + strconv.FormatUint(uint64(r.Partition.ID), 10), emptyOn404: true, convert: func(a answer) ([]byte, error) {
			o, err := decodeJSON[jsonmodel.ConsumerOffsetInfo](a)
			return wire.ConsumerOffset{PartitionID: o.PartitionID, CurrentOffset: o.CurrentOffset, StoredOffset: o.StoredOffset}.AppendTo(nil), err
		}}, true
	case wire.CodeStoreConsumerOffset:
		var r wire.StoreConsumerOffset
		if !decode(&r) {
			return fixed(wire.ErrInvalidCommand)
		}
		if r.Consumer.Kind == wire.ConsumerGroup {
			return fixed(wire.ErrFeatureUnavailable)
		}
		b := jsonmodel.StoreConsumerOffset{ConsumerID: &jsonmodel.ConsumerID{Identifier: r.Consumer.ID}, Offset: &r.Offset}
		if r.Partition.Set {
			b.PartitionID = &r.Partition.ID
		}
		return httpRoute{method: "PUT", path: topicPath(r.Stream, r.Topic) + "/consumer-offsets", body: b}, true
	case wire.CodeDeleteConsumerOffset:
		var r wire.DeleteConsumerOffset
		if !decode(&r) {
			return fixed(wire.ErrInvalidCommand)
		}
		if r.Consumer.Kind == wire.ConsumerGroup {
			return fixed(wire.ErrFeatureUnavailable)
		}
		p := topicPath(r.Stream, r.Topic) + "/consumer-offsets/" + pathID(r.Consumer.ID)
		if r.Partition.Set {
			p += "?partition_id=" + strconv.FormatUint(uint64(r.Partition.ID), 10)
		}
		return httpRoute{method: "DELETE", path: p}, true
	}
	_ = body
	return httpRoute{}, false
}

func pathIDQuery(id wire.Identifier) string {
	if id.IsNumeric() {
		return strconv.FormatUint(uint64(id.Num), 10)
	}
	return id.Str
}

// sendBody turns a binary send into its JSON body: ids as decimal
// strings (u128 does not fit a JSON number an SDK writes), headers typed.
func sendBody(r wire.SendMessages) (jsonmodel.SendMessages, bool) {
	kind := map[wire.PartitioningKind]string{wire.PartitionBalanced: "balanced", wire.PartitionByID: "partition_id",
		wire.PartitionByMessageKey: "messages_key"}[r.Partitioning.Kind]
	p := &jsonmodel.PartitioningIn{Kind: &kind, Value: jsonmodel.Bytes{}}
	switch r.Partitioning.Kind {
	case wire.PartitionByID:
		p.Value = binary.LittleEndian.AppendUint32(nil, r.Partitioning.ID)
	case wire.PartitionByMessageKey:
		p.Value = r.Partitioning.Key
	}
	out := jsonmodel.SendMessages{Partitioning: p, Messages: []jsonmodel.MessageIn{}}
	it := wire.Batch(r.Batch).Frames()
	if len(r.Batch) < wire.BatchHeaderSize {
		return out, false
	}
	for {
		f, ok := it.Next()
		if !ok {
			break
		}
		id := jsonmodel.MessageIDIn(f.ID())
		m := jsonmodel.MessageIn{ID: &id, Payload: append(jsonmodel.Bytes{}, f.Payload()...)}
		if hb := f.UserHeaders(); len(hb) > 0 {
			m.UserHeaders = &jsonmodel.UserHeadersIn{Raw: append([]byte{}, hb...), IsRaw: true}
		}
		out.Messages = append(out.Messages, m)
	}
	return out, true
}

var _ = errors.New
