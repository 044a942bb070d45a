package httpplane

import (
	"context"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/zeebo/blake3"

	"iggynode/telemetry"
	"iggynode/wire"
	"iggynode/wire/jsonmodel"
)

// authKind is a route's credential rule (http.md 2.1 "Auth").
type authKind int

const (
	public authKind = iota
	readAuth
	writeAuth
)

// credential is a verified bearer (3.1.3).
type credential struct {
	key     string // session key: jwt:<jti> or pat:<hash>
	user    uint32
	expires time.Time
	jwt     *token
}

// reqCtx is one request being served.
type reqCtx struct {
	s    *Server
	w    http.ResponseWriter
	r    *http.Request
	ctx  context.Context
	cred *credential
	sess *session
	temp bool // sess is a one-request connection (table full, read)
}

type handlerFunc func(c *reqCtx) *apiError

// request is the encoding half of a wire request.
type request interface {
	AppendTo([]byte) []byte
	Code() wire.CommandCode
}

// raw is a prebuilt binary body.
type raw struct {
	code wire.CommandCode
	body []byte
}

func (r raw) AppendTo(b []byte) []byte { return append(b, r.body...) }
func (r raw) Code() wire.CommandCode   { return r.code }

// route wraps a handler with the steps of 2.4 that precede it:
// credential check, then (for write routes in a cluster) forwarding.
func (s *Server) route(auth authKind, fwd bool, fn handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := &reqCtx{s: s, w: w, r: r, ctx: r.Context()}
		if v, ok := r.URL.Query()["consistency"]; ok && v[0] != "serializable" && v[0] != "linearizable" {
			plainText(w, http.StatusBadRequest, "Failed to deserialize query string: unknown variant `"+v[0]+"` for `consistency`")
			return
		}
		if r.Header.Get("Iggy-Forwarded") != "" {
			c.ctx = context.WithValue(c.ctx, relayedKey{}, true)
		}
		if auth != public {
			cred, e := s.authenticate(c.ctx, r)
			if e != nil {
				writeError(w, e)
				return
			}
			c.cred = cred
			if fwd && s.relay != nil && s.relay.wanted(r) && s.relay.forward(c) {
				return
			}
		}
		defer c.release()
		if e := fn(c); e != nil && e != errHandled {
			writeError(w, e)
		}
	})
}

// authenticate applies 3.1.2-3.1.3 and 3.9.
func (s *Server) authenticate(ctx context.Context, r *http.Request) (*credential, *apiError) {
	raw, ok := bearer(r)
	if !ok {
		return nil, errMissingToken
	}
	if t, err := s.jwt.check(raw); err == nil {
		return &credential{key: "jwt:" + t.jti, user: t.userID, expires: t.exp, jwt: &t}, nil
	}
	// A raw personal access token: the actors verify it on every request,
	// so a deleted token stops working at once (5.4.3).
	uid, o, err := s.sessions.verify(ctx, r.RemoteAddr, &wire.LoginRegisterWithPAT{ClientInfo: versionInfo(), Token: raw})
	if err != nil || !o.ok() {
		return nil, errUnauthenticated
	}
	sum := blake3.Sum256([]byte(raw))
	return &credential{key: "pat:" + hex.EncodeToString(sum[:]), user: uid}, nil
}

func versionInfo() wire.ClientVersionInfo {
	return wire.ClientVersionInfo{Version: wire.ProtocolVersion, SDKName: "iggynode-http", SDKVersion: wire.ServerVersion}
}

// bearer reads "Authorization: Bearer <credential>" exactly (3.1.2).
func bearer(r *http.Request) (string, bool) {
	v, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || v == "" {
		return "", false
	}
	for i := 0; i < len(v); i++ {
		if v[i] < 0x21 || v[i] > 0x7e {
			return "", false
		}
	}
	return v, true
}

// session is the caller's session, opened on first use.
func (c *reqCtx) session() (*session, *apiError) {
	if c.sess != nil {
		return c.sess, nil
	}
	s, err := c.s.sessions.get(c.cred.key, c.r.RemoteAddr, c.cred.user, c.cred.expires)
	if errors.Is(err, errSessionsFull) {
		return nil, errUnavailable
	}
	c.sess = s
	return s, nil
}

// readSession is session, or a one-request connection when the table is
// full: reads never need a session slot (3.8.1).
func (c *reqCtx) readSession() *session {
	if s, e := c.session(); e == nil {
		return s
	}
	conn := c.s.sessions.open(c.r.RemoteAddr, c.cred.user, true, false)
	c.sess, c.temp = &session{conn: conn, userID: c.cred.user, clientID: newClientID()}, true
	return c.sess
}

func (c *reqCtx) release() {
	if c.temp && c.sess != nil {
		c.sess.conn.end()
	}
}

// call runs req on the caller's session and maps what is not the route's
// to decide: evictions (401), a lost reply (503), a broken session.
func (c *reqCtx) call(req request, write bool) (outcome, *apiError) {
	var s *session
	if write {
		var e *apiError
		if s, e = c.session(); e != nil {
			return outcome{}, e
		}
	} else {
		s = c.readSession()
	}
	o, err := s.call(c.ctx, req)
	if o.evict != 0 || err != nil {
		c.s.log.Debug("http session lost", "code", req.Code(), "evict", o.evict, "err", err)
	}
	if o.evict != 0 || s.broken {
		if !c.temp {
			c.s.sessions.drop(s)
		}
		c.sess = nil
	}
	switch {
	case errors.Is(err, errNoReply):
		return o, timeoutFor(req.Code())
	case err != nil:
		return o, errUnavailable
	case o.evict != 0:
		return o, errUnauthenticated
	}
	return o, nil
}

// timeoutFor is the 504 of a write or read whose outcome is unknown
// (6.5.3, 5.10.2, 6.6), the shared 503 for the rest.
func timeoutFor(code wire.CommandCode) *apiError {
	switch code {
	case wire.CodeSendMessages:
		return handBuilt(http.StatusGatewayTimeout, "produce_timeout", "produce was not acknowledged in time; the write may still commit")
	case wire.CodeStoreConsumerOffset, wire.CodeDeleteConsumerOffset:
		return handBuilt(http.StatusGatewayTimeout, "offset_write_timeout", "the offset write was not acknowledged in time; it may still commit")
	case wire.CodePollMessages, wire.CodeGetConsumerOffset:
		return handBuilt(http.StatusGatewayTimeout, "partition_read_timeout", "the partition owner did not answer the read in time; retry")
	}
	return errUnavailable
}

// do runs req and answers any failure with its typed error.
func (c *reqCtx) do(req request, write bool) (outcome, *apiError) {
	o, e := c.call(req, write)
	if e != nil {
		return o, e
	}
	if o.code != 0 {
		return o, typed(o.code)
	}
	return o, nil
}

// ok answers a 2xx JSON body with iggy-view.
func (c *reqCtx) ok(status int, v any) *apiError {
	c.view()
	writeJSON(c.w, status, v)
	return nil
}

// empty answers a 2xx without a body.
func (c *reqCtx) empty(status int) *apiError {
	c.view()
	c.w.WriteHeader(status)
	return nil
}

func (c *reqCtx) view() {
	c.w.Header().Set(viewHeader, strconv.FormatUint(uint64(c.s.node.MetadataView()), 10))
}

// body decodes the JSON body into v (2.4.1, 1.5).
func (c *reqCtx) body(v any) *apiError {
	if !isJSON(c.r.Header.Get("Content-Type")) {
		plainText(c.w, http.StatusUnsupportedMediaType, "Expected request with `Content-Type: application/json`")
		return errHandled
	}
	b, err := io.ReadAll(http.MaxBytesReader(c.w, c.r.Body, int64(c.s.cfg.HTTP.MaxRequestSize)))
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			c.w.Header().Set("Connection", "close")
			plainText(c.w, http.StatusRequestEntityTooLarge, "Failed to buffer the request body: length limit exceeded")
			return errHandled
		}
		plainText(c.w, http.StatusBadRequest, "Failed to buffer the request body: "+err.Error())
		return errHandled
	}
	if err := jsonmodel.Decode(b, v); err != nil {
		var be *jsonmodel.BodyError
		status := http.StatusUnprocessableEntity
		if errors.As(err, &be) && be.Syntax {
			status = http.StatusBadRequest
		}
		plainText(c.w, status, err.Error())
		return errHandled
	}
	return nil
}

// errHandled: the response was written already.
var errHandled = &apiError{}

// id reads an identifier path segment (2.2.2).
func (c *reqCtx) id(name string) (wire.Identifier, *apiError) {
	id, err := jsonmodel.ParseIdentifier(c.r.PathValue(name))
	if err != nil {
		return id, typed(wire.ErrInvalidIdentifier)
	}
	return id, nil
}

// u32Path reads a u32 path segment (2.2.3).
func (c *reqCtx) u32Path(name string) (uint32, *apiError) {
	v, err := strconv.ParseUint(c.r.PathValue(name), 10, 32)
	if err != nil {
		plainText(c.w, http.StatusBadRequest, "Invalid URL: Cannot parse `"+name+"`")
		return 0, errHandled
	}
	return uint32(v), nil
}

// query reads typed query parameters (2.3); a bad or missing required one
// is a 400 plain-text rejection.
type query struct {
	c   *reqCtx
	v   url.Values
	err *apiError
}

func (c *reqCtx) query() *query { return &query{c: c, v: c.r.URL.Query()} }

func (q *query) fail(name string) {
	if q.err == nil {
		plainText(q.c.w, http.StatusBadRequest, "Failed to deserialize query string: invalid or missing `"+name+"`")
		q.err = errHandled
	}
}

func (q *query) uint(name string, bits int, def uint64, required bool) uint64 {
	s, ok := q.v[name]
	if !ok {
		if required {
			q.fail(name)
		}
		return def
	}
	v, err := strconv.ParseUint(s[0], 10, bits)
	if err != nil {
		q.fail(name)
	}
	return v
}

func (q *query) has(name string) bool { _, ok := q.v[name]; return ok }

func (q *query) boolean(name string, def bool) bool {
	s, ok := q.v[name]
	if !ok {
		return def
	}
	switch s[0] {
	case "true":
		return true
	case "false":
		return false
	}
	q.fail(name)
	return def
}

func (q *query) identifier(name string, def wire.Identifier) wire.Identifier {
	s, ok := q.v[name]
	if !ok {
		return def
	}
	id, err := jsonmodel.ParseIdentifier(s[0])
	if err != nil {
		q.fail(name)
	}
	return id
}

// consistency reads ?consistency= (2.6): true for linearizable.
func (q *query) linearizable() bool {
	s, ok := q.v["consistency"]
	if !ok {
		return false
	}
	switch s[0] {
	case "serializable":
		return false
	case "linearizable":
		return true
	}
	q.fail("consistency")
	return false
}

// routes is the route table of http.md 2.1.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	h := func(pattern string, auth authKind, fwd bool, fn handlerFunc) {
		mux.Handle(pattern, s.route(auth, fwd, fn))
	}
	ping := http.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("pong"))
	}))
	if s.cfg.Surface != nil && s.cfg.Surface.Ping != nil {
		ping = s.cfg.Surface.Ping
	}
	mux.Handle("GET /ping", ping)
	mux.Handle("GET "+ReadyRoute, readiness(s.cfg.Ready))
	if s.cfg.Surface != nil && s.cfg.Surface.Metrics != nil {
		mux.Handle("GET "+s.cfg.HTTP.Metrics.Endpoint, s.metricsRoute(s.cfg.Surface.Metrics))
	}
	h("POST /users/login", public, false, s.login)
	h("POST /personal-access-tokens/login", public, false, s.loginWithToken)
	h("POST /users/refresh-token", public, false, s.refresh)
	h("DELETE /users/logout", writeAuth, true, s.logout)
	h("GET /stats", readAuth, false, s.stats)
	h("POST /snapshot", readAuth, false, s.snapshot)
	h("GET /cluster/metadata", readAuth, false, s.clusterMetadata)
	h("GET /options/{scope}", readAuth, false, s.options)
	h("GET /clients", readAuth, false, s.clients)
	h("GET /clients/{client_id}", readAuth, false, s.client)
	h("GET /users", readAuth, true, s.users)
	h("POST /users", writeAuth, true, s.createUser)
	h("GET /users/{user_id}", readAuth, true, s.user)
	h("PUT /users/{user_id}", writeAuth, true, s.updateUser)
	h("DELETE /users/{user_id}", writeAuth, true, s.deleteUser)
	h("PUT /users/{user_id}/password", writeAuth, true, s.changePassword)
	h("PUT /users/{user_id}/permissions", writeAuth, true, s.updatePermissions)
	h("GET /personal-access-tokens", readAuth, true, s.tokens)
	h("POST /personal-access-tokens", writeAuth, true, s.createToken)
	h("DELETE /personal-access-tokens/{name}", writeAuth, true, s.deleteToken)
	h("GET /streams", readAuth, true, s.streams)
	h("POST /streams", writeAuth, true, s.createStream)
	h("GET /streams/{stream_id}", readAuth, true, s.stream)
	h("PUT /streams/{stream_id}", writeAuth, true, s.updateStream)
	h("DELETE /streams/{stream_id}", writeAuth, true, s.deleteStream)
	h("DELETE /streams/{stream_id}/purge", writeAuth, true, s.purgeStream)
	h("GET /streams/{stream_id}/topics", readAuth, true, s.topics)
	h("POST /streams/{stream_id}/topics", writeAuth, true, s.createTopic)
	h("GET /streams/{stream_id}/topics/{topic_id}", readAuth, true, s.topic)
	h("PUT /streams/{stream_id}/topics/{topic_id}", writeAuth, true, s.updateTopic)
	h("DELETE /streams/{stream_id}/topics/{topic_id}", writeAuth, true, s.deleteTopic)
	h("DELETE /streams/{stream_id}/topics/{topic_id}/purge", writeAuth, true, s.purgeTopic)
	h("POST /streams/{stream_id}/topics/{topic_id}/partitions", writeAuth, true, s.createPartitions)
	h("DELETE /streams/{stream_id}/topics/{topic_id}/partitions", writeAuth, true, s.deletePartitions)
	h("DELETE /streams/{stream_id}/topics/{topic_id}/partitions/{partition_id}", writeAuth, true, s.deleteSegments)
	h("GET /streams/{stream_id}/topics/{topic_id}/consumer-groups", readAuth, true, s.groups)
	h("POST /streams/{stream_id}/topics/{topic_id}/consumer-groups", writeAuth, true, s.createGroup)
	h("GET /streams/{stream_id}/topics/{topic_id}/consumer-groups/{group_id}", readAuth, true, s.group)
	h("DELETE /streams/{stream_id}/topics/{topic_id}/consumer-groups/{group_id}", writeAuth, true, s.deleteGroup)
	h("GET /streams/{stream_id}/topics/{topic_id}/messages", readAuth, false, s.poll)
	h("POST /streams/{stream_id}/topics/{topic_id}/messages", writeAuth, false, s.send)
	h("GET /streams/{stream_id}/topics/{topic_id}/consumer-offsets", readAuth, false, s.getOffset)
	h("PUT /streams/{stream_id}/topics/{topic_id}/consumer-offsets", writeAuth, false, s.storeOffset)
	h("DELETE /streams/{stream_id}/topics/{topic_id}/consumer-offsets/{consumer_id}", writeAuth, false, s.deleteOffset)
	// Static segments outrank parameters for every method (2.1.1): the
	// other methods on these paths are 405, not a user or a token named
	// "logout" / "login", nor a stream read through "purge".
	for path, allow := range map[string]string{"/users/logout": "DELETE", "/personal-access-tokens/login": "POST",
		"/streams/{stream_id}/purge": "DELETE", "/streams/{stream_id}/topics/{topic_id}/purge": "DELETE"} {
		for _, m := range []string{"GET", "POST", "PUT", "DELETE", "PATCH"} {
			if m != allow {
				mux.Handle(m+" "+path, methodNotAllowed(allow))
			}
		}
	}
	return bareMisses(mux)
}

func methodNotAllowed(allow string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Allow", allow)
		w.WriteHeader(http.StatusMethodNotAllowed)
	})
}

// bareMisses answers unknown paths with an empty 404 and known paths with
// another method with an empty 405 and Allow (2.1.2).
func bareMisses(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := mux.Handler(r); pattern != "" {
			mux.ServeHTTP(w, r)
			return
		}
		var allow []string
		for _, m := range []string{"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH"} {
			probe := r.Clone(r.Context())
			probe.Method = m
			if _, p := mux.Handler(probe); p != "" {
				allow = append(allow, m)
			}
		}
		if len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		w.WriteHeader(http.StatusNotFound)
	})
}

// metricsRoute guards the exposition (1.4): a JWT or personal access
// token, or the static http.metrics.token.
func (s *Server) metricsRoute(prom http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !telemetry.BearerMatches(r, s.cfg.HTTP.Metrics.Token) {
			if _, e := s.authenticate(r.Context(), r); e != nil {
				writeError(w, e)
				return
			}
		}
		w.Header().Set(viewHeader, strconv.FormatUint(uint64(s.node.MetadataView()), 10))
		prom.ServeHTTP(w, r)
	})
}

// ReadyRoute is the readiness route (ours; the reference server has none).
const ReadyRoute = "/ready"

// readiness serves GET /ready: 200 "ready" once ready reports true, 503
// "catching up" before. Liveness stays on /ping, which answers as long
// as the process serves: a pod that takes long to catch up (a state
// transfer) must not be killed for it, only kept out of the client
// Service. Like /ping it needs no credential.
func readiness(ready func() bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if ready != nil && !ready() {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("catching up"))
			return
		}
		_, _ = w.Write([]byte("ready"))
	})
}
