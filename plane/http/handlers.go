package httpplane

import (
	"net/http"
	"time"

	"iggynode/wire"
	"iggynode/wire/jsonmodel"
)

// Handlers, one per route of http.md 2.1, in the table's order. Each
// builds the binary request of the route's command and lets the actors
// decide: permissions, validation and errors are the binary plane's.

// decodeInto decodes a reply payload into out, as a 503 when it does not.
func decodeInto(out wire.Body, body []byte) *apiError {
	if out.Decode(body) != nil {
		return typed(wire.ErrInvalidCommand)
	}
	return nil
}

// Sessions (3.2, 3.3, 3.6, 3.7).

func (s *Server) identity(c *reqCtx, userID uint32) *apiError {
	tok, exp, err := s.jwt.issue(userID)
	if err != nil {
		return errUnavailable
	}
	return c.ok(http.StatusOK, jsonmodel.IdentityInfo{UserID: userID, AccessToken: &jsonmodel.TokenInfo{Token: tok, Expiry: exp}})
}

func (s *Server) login(c *reqCtx) *apiError {
	var b jsonmodel.LoginUser
	if e := c.body(&b); e != nil {
		return e
	}
	if len(*b.Username) < 3 || len(*b.Username) > 50 || len(*b.Password) < 3 || len(*b.Password) > 100 {
		return typed(wire.ErrInvalidCredentials)
	}
	uid, o, err := s.sessions.verify(c.ctx, c.r.RemoteAddr, &wire.LoginRegister{ClientInfo: versionInfo(), Username: *b.Username, Password: *b.Password})
	switch {
	case err != nil:
		return errUnavailable
	case o.code == wire.ErrTransientNotAccepted || o.code == wire.ErrTransientNotCommitted:
		return typed(o.code)
	case !o.ok():
		return typed(wire.ErrInvalidCredentials) // every failure, inactive users included (3.2)
	}
	return s.identity(c, uid)
}

func (s *Server) loginWithToken(c *reqCtx) *apiError {
	var b jsonmodel.Token
	if e := c.body(&b); e != nil {
		return e
	}
	uid, o, err := s.sessions.verify(c.ctx, c.r.RemoteAddr, &wire.LoginRegisterWithPAT{ClientInfo: versionInfo(), Token: *b.Token})
	switch {
	case err != nil:
		return errUnavailable
	case o.evict == wire.EvictUserInactive:
		return typed(wire.ErrUserInactive)
	case o.code == wire.ErrTransientNotAccepted || o.code == wire.ErrTransientNotCommitted:
		return typed(o.code)
	case !o.ok():
		return typed(wire.ErrInvalidPersonalAccessToken)
	}
	return s.identity(c, uid)
}

// refresh issues a new token for a valid one; the old one stays valid
// (3.6.2).
func (s *Server) refresh(c *reqCtx) *apiError {
	var b jsonmodel.Token
	if e := c.body(&b); e != nil {
		return e
	}
	t, err := s.jwt.check(*b.Token)
	if err != nil {
		return errUnauthenticated
	}
	return s.identity(c, t.userID)
}

// logout releases the caller's session (the binary Logout) and, a choice
// of ours (3.7.3), revokes the presented JWT until its expiry.
func (s *Server) logout(c *reqCtx) *apiError {
	if c.cred.jwt != nil {
		s.jwt.revoke(*c.cred.jwt)
	}
	if sess := s.sessions.existing(c.cred.key); sess != nil {
		sess.mu.Lock()
		if sess.epoch != 0 {
			if o, err := sess.exchange(c.ctx, wire.CodeLogoutUser, wire.OpLogout, nil); err != nil || !o.ok() {
				s.log.Debug("http logout: binary logout failed", "code", o.code, "err", err)
			}
		}
		sess.mu.Unlock()
		s.sessions.drop(sess)
	}
	return c.empty(http.StatusNoContent)
}

// System (5.1).

func (s *Server) stats(c *reqCtx) *apiError {
	o, e := c.do(wire.GetStats{}, false)
	if e != nil {
		return e
	}
	var st wire.Stats
	if e := decodeInto(&st, o.body); e != nil {
		return e
	}
	return c.ok(http.StatusOK, jsonmodel.FromStats(st))
}

func (s *Server) snapshot(c *reqCtx) *apiError {
	var b jsonmodel.Snapshot
	if e := c.body(&b); e != nil {
		return e
	}
	req, err := b.ToWire()
	if err != nil {
		plainText(c.w, http.StatusUnprocessableEntity, err.Error())
		return errHandled
	}
	o, e := c.do(req, false)
	if e != nil {
		return e
	}
	c.view()
	c.w.Header().Set("Content-Type", "application/zip")
	c.w.Header().Set("Content-Disposition", `attachment; filename="iggy_snapshot_`+time.Now().Format("20060102_150405")+`.zip"`)
	c.w.WriteHeader(http.StatusOK)
	_, _ = c.w.Write(o.body)
	return nil
}

func (s *Server) clusterMetadata(c *reqCtx) *apiError {
	o, e := c.do(wire.GetClusterMetadata{}, false)
	if e != nil {
		return e
	}
	var md wire.ClusterMetadata
	if e := decodeInto(&md, o.body); e != nil {
		return e
	}
	// A single node's reply names its bound ports, this listener's
	// included (server-behaviour.md 8.7.1, http.md 4.12).
	return c.ok(http.StatusOK, jsonmodel.FromClusterMetadata(md))
}

func (s *Server) options(c *reqCtx) *apiError {
	scopes := map[string]uint8{"topic": 1, "stream": 2, "user": 3}
	scope, ok := scopes[c.r.PathValue("scope")]
	if !ok {
		return typed(wire.ErrInvalidCommand)
	}
	o, e := c.do(wire.DescribeOptions{Scope: scope}, false)
	if e != nil {
		return e
	}
	var cat wire.OptionCatalog
	if e := decodeInto(&cat, o.body); e != nil {
		return e
	}
	return c.ok(http.StatusOK, jsonmodel.FromOptionCatalog(cat))
}

func (s *Server) clients(c *reqCtx) *apiError {
	o, e := c.do(wire.GetClients{}, false)
	if e != nil {
		return e
	}
	var list wire.Clients
	if e := decodeInto(&list, o.body); e != nil {
		return e
	}
	return c.ok(http.StatusOK, jsonmodel.FromClients(list))
}

func (s *Server) client(c *reqCtx) *apiError {
	id, e := c.u32Path("client_id")
	if e != nil {
		return e
	}
	o, e := c.do(wire.GetClient{ClientID: id}, false)
	if e != nil {
		return e
	}
	if len(o.body) == 0 {
		return errGeneric404
	}
	var d wire.ClientDetails
	if e := decodeInto(&d, o.body); e != nil {
		return e
	}
	return c.ok(http.StatusOK, jsonmodel.FromClientDetails(d))
}

// Users (5.3).

func (s *Server) users(c *reqCtx) *apiError {
	o, e := c.do(wire.GetUsers{}, false)
	if e != nil {
		return e
	}
	var list wire.Users
	if e := decodeInto(&list, o.body); e != nil {
		return e
	}
	return c.ok(http.StatusOK, jsonmodel.FromUsers(list))
}

func (s *Server) user(c *reqCtx) *apiError {
	var id wire.Identifier
	if c.r.PathValue("user_id") == "me" {
		id = wire.ID(c.cred.user) // 2.2.6: "me" only here
	} else {
		var e *apiError
		if id, e = c.id("user_id"); e != nil {
			return e
		}
	}
	o, e := c.do(wire.GetUser{User: id}, false)
	if e != nil {
		return e
	}
	if len(o.body) == 0 {
		return errGeneric404
	}
	var d wire.UserDetails
	if e := decodeInto(&d, o.body); e != nil {
		return e
	}
	return c.ok(http.StatusOK, jsonmodel.FromUserDetails(d))
}

func checkUser(username, password *string) *apiError {
	if username != nil && (len(*username) < 3 || len(*username) > 50) {
		return typed(wire.ErrInvalidUsername)
	}
	if password != nil && (len(*password) < 3 || len(*password) > 100) {
		return typed(wire.ErrInvalidPassword)
	}
	return nil
}

func (s *Server) createUser(c *reqCtx) *apiError {
	var b jsonmodel.CreateUser
	if e := c.body(&b); e != nil {
		return e
	}
	if e := checkUser(b.Username, b.Password); e != nil {
		return e
	}
	status, _ := jsonmodel.ParseStatus(*b.Status)
	o, e := c.do(wire.CreateUser{Username: *b.Username, Password: *b.Password, Status: uint8(status), Permissions: b.Permissions.ToWire()}, true)
	if e != nil {
		return e
	}
	var d wire.UserDetails
	if e := decodeInto(&d, o.body); e != nil {
		return e
	}
	return c.ok(http.StatusOK, jsonmodel.FromUserDetails(d))
}

func (s *Server) updateUser(c *reqCtx) *apiError {
	id, e := c.id("user_id")
	if e != nil {
		return e
	}
	var b jsonmodel.UpdateUser
	if e := c.body(&b); e != nil {
		return e
	}
	if e := checkUser(b.Username, nil); e != nil {
		return e
	}
	req := wire.UpdateUser{User: id, Username: b.Username, Options: jsonmodel.StringOptions(b.Options)}
	if b.Status != nil {
		st, _ := jsonmodel.ParseStatus(*b.Status)
		v := uint8(st)
		req.Status = &v
	}
	return c.write(req, http.StatusNoContent)
}

// write runs a command whose success has no body.
func (c *reqCtx) write(req request, status int) *apiError {
	if _, e := c.do(req, true); e != nil {
		return e
	}
	return c.empty(status)
}

func (s *Server) deleteUser(c *reqCtx) *apiError {
	id, e := c.id("user_id")
	if e != nil {
		return e
	}
	return c.write(wire.DeleteUser{User: id}, http.StatusNoContent)
}

func (s *Server) changePassword(c *reqCtx) *apiError {
	id, e := c.id("user_id")
	if e != nil {
		return e
	}
	var b jsonmodel.ChangePassword
	if e := c.body(&b); e != nil {
		return e
	}
	if e := checkUser(nil, b.CurrentPassword); e != nil {
		return e
	}
	if e := checkUser(nil, b.NewPassword); e != nil {
		return e
	}
	return c.write(wire.ChangePassword{User: id, CurrentPassword: *b.CurrentPassword, NewPassword: *b.NewPassword}, http.StatusNoContent)
}

func (s *Server) updatePermissions(c *reqCtx) *apiError {
	id, e := c.id("user_id")
	if e != nil {
		return e
	}
	var b jsonmodel.UpdatePermissions
	if e := c.body(&b); e != nil {
		return e
	}
	return c.write(wire.UpdatePermissions{User: id, Permissions: b.Permissions.ToWire()}, http.StatusNoContent)
}

// Personal access tokens (5.4).

func (s *Server) tokens(c *reqCtx) *apiError {
	o, e := c.do(wire.GetPersonalAccessTokens{}, false)
	if e != nil {
		return e
	}
	var list wire.PersonalAccessTokens
	if e := decodeInto(&list, o.body); e != nil {
		return e
	}
	return c.ok(http.StatusOK, jsonmodel.FromTokens(list))
}

func (s *Server) createToken(c *reqCtx) *apiError {
	var b jsonmodel.CreatePersonalAccessToken
	if e := c.body(&b); e != nil {
		return e
	}
	if len(*b.Name) < 3 || len(*b.Name) > 30 {
		return typed(wire.ErrInvalidPersonalAccessTokenName)
	}
	o, e := c.do(wire.CreatePersonalAccessToken{Name: *b.Name, Expiry: *b.Expiry}, true)
	if e != nil {
		return e
	}
	var t wire.RawToken
	if e := decodeInto(&t, o.body); e != nil {
		return e
	}
	return c.ok(http.StatusOK, jsonmodel.RawPersonalAccessToken{Token: t.Token})
}

func (s *Server) deleteToken(c *reqCtx) *apiError {
	name := c.r.PathValue("name")
	if len(name) < 1 || len(name) > 255 {
		return typed(wire.ErrInvalidPersonalAccessTokenName)
	}
	return c.write(wire.DeletePersonalAccessToken{Name: name}, http.StatusNoContent)
}

// Streams (5.5).

func (s *Server) streams(c *reqCtx) *apiError {
	o, e := c.do(wire.GetStreams{}, false)
	if e != nil {
		return e
	}
	var list wire.Streams
	if e := decodeInto(&list, o.body); e != nil {
		return e
	}
	return c.ok(http.StatusOK, jsonmodel.FromStreams(list))
}

func (s *Server) stream(c *reqCtx) *apiError {
	id, e := c.id("stream_id")
	if e != nil {
		return e
	}
	o, e := c.do(wire.GetStream{Stream: id}, false)
	if e != nil {
		return e
	}
	if len(o.body) == 0 {
		return errGeneric404
	}
	var d wire.StreamDetails
	if e := decodeInto(&d, o.body); e != nil {
		return e
	}
	return c.ok(http.StatusOK, jsonmodel.FromStreamDetails(d))
}

func validName(n string) bool { return len(n) >= 1 && len(n) <= 255 }

func (s *Server) createStream(c *reqCtx) *apiError {
	var b jsonmodel.CreateStream
	if e := c.body(&b); e != nil {
		return e
	}
	if !validName(*b.Name) {
		return typed(wire.ErrInvalidStreamName)
	}
	o, e := c.do(wire.CreateStream{Name: *b.Name}, true)
	if e != nil {
		return e
	}
	var d wire.StreamDetails
	if e := decodeInto(&d, o.body); e != nil {
		return e
	}
	return c.ok(http.StatusOK, jsonmodel.FromStreamDetails(d))
}

func (s *Server) updateStream(c *reqCtx) *apiError {
	id, e := c.id("stream_id")
	if e != nil {
		return e
	}
	var b jsonmodel.UpdateStream
	if e := c.body(&b); e != nil {
		return e
	}
	if !validName(*b.Name) {
		return typed(wire.ErrInvalidStreamName)
	}
	return c.write(wire.UpdateStream{Stream: id, Name: *b.Name, Options: jsonmodel.StringOptions(b.Options)}, http.StatusNoContent)
}

func (s *Server) deleteStream(c *reqCtx) *apiError {
	id, e := c.id("stream_id")
	if e != nil {
		return e
	}
	return c.write(wire.DeleteStream{Stream: id}, http.StatusNoContent)
}

func (s *Server) purgeStream(c *reqCtx) *apiError {
	id, e := c.id("stream_id")
	if e != nil {
		return e
	}
	return c.write(wire.PurgeStream{Stream: id}, http.StatusNoContent)
}

// Topics (5.6).

func (c *reqCtx) streamTopic() (wire.Identifier, wire.Identifier, *apiError) {
	stream, e := c.id("stream_id")
	if e != nil {
		return stream, stream, e
	}
	topic, e := c.id("topic_id")
	return stream, topic, e
}

func (s *Server) topics(c *reqCtx) *apiError {
	id, e := c.id("stream_id")
	if e != nil {
		return e
	}
	o, e := c.do(wire.GetTopics{Stream: id}, false)
	if e != nil {
		return e
	}
	var list wire.Topics
	if e := decodeInto(&list, o.body); e != nil {
		return e
	}
	return c.ok(http.StatusOK, jsonmodel.FromTopics(list))
}

func (s *Server) topic(c *reqCtx) *apiError {
	stream, topic, e := c.streamTopic()
	if e != nil {
		return e
	}
	o, e := c.call(wire.GetTopic{Stream: stream, Topic: topic}, false)
	if e != nil {
		return e
	}
	if o.code == wire.ErrStreamIdNotFound || o.code == wire.ErrTopicIdNotFound || (o.code == 0 && len(o.body) == 0) {
		return errGeneric404
	}
	if o.code != 0 {
		return typed(o.code)
	}
	var d wire.TopicDetails
	if e := decodeInto(&d, o.body); e != nil {
		return e
	}
	return c.ok(http.StatusOK, jsonmodel.FromTopicDetails(d))
}

func (s *Server) createTopic(c *reqCtx) *apiError {
	stream, e := c.id("stream_id")
	if e != nil {
		return e
	}
	var b jsonmodel.CreateTopic
	if e := c.body(&b); e != nil {
		return e
	}
	if !validName(*b.Name) {
		return typed(wire.ErrInvalidTopicName)
	}
	if b.PartitionsCount != nil && *b.PartitionsCount > 1000 {
		return typed(wire.ErrTooManyPartitions)
	}
	o, e := c.do(b.ToWire(stream), true)
	if e != nil {
		return e
	}
	var d wire.TopicDetails
	if e := decodeInto(&d, o.body); e != nil {
		return e
	}
	return c.ok(http.StatusOK, jsonmodel.FromTopicDetails(d))
}

func (s *Server) updateTopic(c *reqCtx) *apiError {
	stream, topic, e := c.streamTopic()
	if e != nil {
		return e
	}
	var b jsonmodel.UpdateTopic
	if e := c.body(&b); e != nil {
		return e
	}
	if !validName(*b.Name) {
		return typed(wire.ErrInvalidTopicName)
	}
	return c.write(b.ToWire(stream, topic), http.StatusNoContent)
}

func (s *Server) deleteTopic(c *reqCtx) *apiError {
	stream, topic, e := c.streamTopic()
	if e != nil {
		return e
	}
	return c.write(wire.DeleteTopic{Stream: stream, Topic: topic}, http.StatusNoContent)
}

func (s *Server) purgeTopic(c *reqCtx) *apiError {
	stream, topic, e := c.streamTopic()
	if e != nil {
		return e
	}
	return c.write(wire.PurgeTopic{Stream: stream, Topic: topic}, http.StatusNoContent)
}

// Partitions and segments (5.7).

func (s *Server) createPartitions(c *reqCtx) *apiError {
	stream, topic, e := c.streamTopic()
	if e != nil {
		return e
	}
	var b jsonmodel.CreatePartitions
	if e := c.body(&b); e != nil {
		return e
	}
	if *b.PartitionsCount < 1 || *b.PartitionsCount > 1000 {
		return typed(wire.ErrTooManyPartitions)
	}
	return c.write(wire.CreatePartitions{Stream: stream, Topic: topic, PartitionsCount: *b.PartitionsCount}, http.StatusOK)
}

func (s *Server) deletePartitions(c *reqCtx) *apiError {
	stream, topic, e := c.streamTopic()
	if e != nil {
		return e
	}
	q := c.query()
	n := uint32(q.uint("partitions_count", 32, 0, true))
	if q.err != nil {
		return q.err
	}
	if n < 1 || n > 1000 {
		return typed(wire.ErrTooManyPartitions)
	}
	return c.write(wire.DeletePartitions{Stream: stream, Topic: topic, PartitionsCount: n}, http.StatusNoContent)
}

func (s *Server) deleteSegments(c *reqCtx) *apiError {
	stream, topic, e := c.streamTopic()
	if e != nil {
		return e
	}
	partition, e := c.u32Path("partition_id")
	if e != nil {
		return e
	}
	q := c.query()
	n := uint32(q.uint("segments_count", 32, 0, true))
	if q.err != nil {
		return q.err
	}
	return c.write(wire.DeleteSegments{Stream: stream, Topic: topic, PartitionID: partition, SegmentsCount: n}, http.StatusNoContent)
}

// Consumer groups (5.8).

func (s *Server) groups(c *reqCtx) *apiError {
	stream, topic, e := c.streamTopic()
	if e != nil {
		return e
	}
	o, e := c.do(wire.GetConsumerGroups{Stream: stream, Topic: topic}, false)
	if e != nil {
		return e
	}
	var list wire.ConsumerGroups
	if e := decodeInto(&list, o.body); e != nil {
		return e
	}
	return c.ok(http.StatusOK, jsonmodel.FromConsumerGroups(list))
}

func (s *Server) group(c *reqCtx) *apiError {
	stream, topic, e := c.streamTopic()
	if e != nil {
		return e
	}
	group, e := c.id("group_id")
	if e != nil {
		return e
	}
	o, e := c.call(wire.GetConsumerGroup{Stream: stream, Topic: topic, Group: group}, false)
	if e != nil {
		return e
	}
	if o.code == wire.ErrConsumerGroupIdNotFound || (o.code == 0 && len(o.body) == 0) {
		return errGeneric404
	}
	if o.code != 0 {
		return typed(o.code)
	}
	var d wire.ConsumerGroupDetails
	if e := decodeInto(&d, o.body); e != nil {
		return e
	}
	return c.ok(http.StatusOK, jsonmodel.FromConsumerGroupDetails(d))
}

func (s *Server) createGroup(c *reqCtx) *apiError {
	stream, topic, e := c.streamTopic()
	if e != nil {
		return e
	}
	var b jsonmodel.CreateConsumerGroup
	if e := c.body(&b); e != nil {
		return e
	}
	if !validName(*b.Name) {
		return typed(wire.ErrInvalidConsumerGroupName)
	}
	o, e := c.do(wire.CreateConsumerGroup{Stream: stream, Topic: topic, Name: *b.Name}, true)
	if e != nil {
		return e
	}
	var d wire.ConsumerGroupDetails
	if e := decodeInto(&d, o.body); e != nil {
		return e
	}
	return c.ok(http.StatusOK, jsonmodel.FromConsumerGroupDetails(d))
}

func (s *Server) deleteGroup(c *reqCtx) *apiError {
	stream, topic, e := c.streamTopic()
	if e != nil {
		return e
	}
	group, e := c.id("group_id")
	if e != nil {
		return e
	}
	return c.write(wire.DeleteConsumerGroup{Stream: stream, Topic: topic, Group: group}, http.StatusNoContent)
}

// Messages (6).

var pollKinds = map[string]wire.PollingKind{"offset": wire.PollOffset, "o": wire.PollOffset, "timestamp": wire.PollTimestamp,
	"t": wire.PollTimestamp, "first": wire.PollFirst, "f": wire.PollFirst, "last": wire.PollLast, "l": wire.PollLast,
	"next": wire.PollNext, "n": wire.PollNext}

func (s *Server) poll(c *reqCtx) *apiError {
	stream, topic, e := c.streamTopic()
	if e != nil {
		return e
	}
	q := c.query()
	consumer := q.identifier("consumer_id", wire.ID(1))
	partition := uint32(q.uint("partition_id", 32, 0, false))
	kind := wire.PollOffset
	if k, ok := q.v["kind"]; ok {
		if kind, ok = pollKinds[k[0]]; !ok {
			q.fail("kind")
		}
	}
	value := q.uint("value", 64, 0, false)
	count := uint32(q.uint("count", 32, 10, false))
	autoCommit := q.boolean("auto_commit", false)
	q.linearizable()
	if q.err != nil {
		return q.err
	}
	o, e := c.call(wire.PollMessages{Consumer: wire.SingleConsumer(consumer), Stream: stream, Topic: topic,
		Partition: wire.Partition(partition), Strategy: wire.PollingStrategy{Kind: kind, Value: value}, Count: count, AutoCommit: autoCommit}, false)
	if e != nil {
		return e
	}
	switch o.code {
	case 0:
	case wire.ErrPartitionNotFound, wire.ErrUnauthorized:
		return typed(o.code)
	default:
		return errGeneric404 // stream or topic does not resolve (6.6)
	}
	var p wire.PolledMessages
	if e := decodeInto(&p, o.body); e != nil {
		return e
	}
	return c.ok(http.StatusOK, jsonmodel.FromPolled(&p))
}

// In-flight write caps (6.5.4).
const (
	sessionWriteCap = 32
	globalWriteCap  = 128
)

// admitWrite takes an in-flight slot; the release func gives it back.
func (c *reqCtx) admitWrite() (func(), *apiError) {
	sess, e := c.session()
	if e != nil {
		return nil, e
	}
	if sess.inflight.Add(1) > sessionWriteCap {
		sess.inflight.Add(-1)
		return nil, handBuilt(http.StatusTooManyRequests, "too_many_in_flight_writes",
			"session reached its in-flight write cap; await outstanding writes and retry")
	}
	select {
	case c.s.writes <- struct{}{}:
	default:
		sess.inflight.Add(-1)
		return nil, handBuilt(http.StatusServiceUnavailable, "server_busy", "shard is at its in-flight write budget; retry with backoff")
	}
	return func() { <-c.s.writes; sess.inflight.Add(-1) }, nil
}

func (s *Server) send(c *reqCtx) *apiError {
	stream, topic, e := c.streamTopic()
	if e != nil {
		return e
	}
	q := c.query()
	ackNone := false
	if a, ok := q.v["ack"]; ok {
		switch a[0] {
		case "replicated":
		case "none":
			ackNone = true
		default:
			q.fail("ack")
		}
	}
	if q.err != nil {
		return q.err
	}
	var b jsonmodel.SendMessages
	if e := c.body(&b); e != nil {
		return e
	}
	partitioning, msgs, code := b.ToWire(uint64(time.Now().UnixMicro()))
	if code != 0 {
		return typed(code)
	}
	body := wire.AppendSendMessagesHeader(nil, stream, topic, partitioning, uint32(len(msgs)))
	body, err := wire.AppendBatch(body, msgs)
	if err != nil {
		plainText(c.w, http.StatusUnprocessableEntity, "Failed to deserialize the JSON body into the target type: "+err.Error())
		return errHandled
	}
	release, e := c.admitWrite()
	if e != nil {
		return e
	}
	req := raw{code: wire.CodeSendMessages, body: body}
	if ackNone {
		// 6.5.2: answered after dispatch; the outcome is not reported.
		sess := c.sess
		go func() {
			defer release()
			if _, err := sess.call(c.s.detached(), req); err != nil {
				s.log.Debug("http send with ack=none", "err", err)
			}
		}()
		c.w.Header().Set("Iggy-Durability", "none")
		return c.empty(http.StatusAccepted)
	}
	defer release()
	o, e := c.call(req, true)
	if e != nil {
		return e
	}
	switch o.code {
	case 0:
	case wire.ErrResourceNotFound:
		return typed(wire.ErrResourceNotFound)
	default:
		return typed(o.code)
	}
	var conf wire.SendConfirmations
	out := jsonmodel.SendMessagesConfirmations{Confirmations: []jsonmodel.Confirmation{}}
	if conf.Decode(o.body) == nil {
		out = jsonmodel.FromConfirmations(conf)
	}
	c.w.Header().Set("Iggy-Durability", "replicated-memory")
	return c.ok(http.StatusCreated, out)
}

// Consumer offsets (5.10): the consumer is always of kind 1.

func (s *Server) getOffset(c *reqCtx) *apiError {
	stream, topic, e := c.streamTopic()
	if e != nil {
		return e
	}
	q := c.query()
	consumer := q.identifier("consumer_id", wire.ID(1))
	partition := uint32(q.uint("partition_id", 32, 0, false))
	q.linearizable()
	if q.err != nil {
		return q.err
	}
	o, e := c.call(wire.GetConsumerOffset{Consumer: wire.SingleConsumer(consumer), Stream: stream, Topic: topic,
		Partition: wire.Partition(partition)}, false)
	if e != nil {
		return e
	}
	if o.code == wire.ErrUnauthorized {
		return typed(o.code)
	}
	var off wire.ConsumerOffset
	if o.code != 0 || len(o.body) == 0 || off.Decode(o.body) != nil {
		return errGeneric404 // every other outcome (5.10.1)
	}
	return c.ok(http.StatusOK, jsonmodel.FromConsumerOffset(off))
}

func (s *Server) storeOffset(c *reqCtx) *apiError {
	stream, topic, e := c.streamTopic()
	if e != nil {
		return e
	}
	var b jsonmodel.StoreConsumerOffset
	if e := c.body(&b); e != nil {
		return e
	}
	consumer := wire.ID(1)
	if b.ConsumerID != nil {
		consumer = b.ConsumerID.Identifier
	}
	var part wire.OptionalPartition
	if b.PartitionID != nil {
		part = wire.Partition(*b.PartitionID)
	}
	release, e := c.admitWrite()
	if e != nil {
		return e
	}
	defer release()
	return c.write(wire.StoreConsumerOffset{Consumer: wire.SingleConsumer(consumer), Stream: stream, Topic: topic,
		Partition: part, Offset: *b.Offset, Ack: wire.AckQuorum}, http.StatusNoContent)
}

func (s *Server) deleteOffset(c *reqCtx) *apiError {
	stream, topic, e := c.streamTopic()
	if e != nil {
		return e
	}
	consumer, e := c.id("consumer_id")
	if e != nil {
		return e
	}
	q := c.query()
	var part wire.OptionalPartition
	if q.has("partition_id") {
		part = wire.Partition(uint32(q.uint("partition_id", 32, 0, false)))
	}
	if q.err != nil {
		return q.err
	}
	release, e := c.admitWrite()
	if e != nil {
		return e
	}
	defer release()
	return c.write(wire.DeleteConsumerOffset{Consumer: wire.SingleConsumer(consumer), Stream: stream, Topic: topic,
		Partition: part, Ack: wire.AckQuorum}, http.StatusNoContent)
}
