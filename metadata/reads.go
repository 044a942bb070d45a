package metadata

import "iggynode/wire"

// Non-replicated reads served from committed state (client-plane.md 8).
// Each returns a header status and a payload: status 0 with a nil payload
// is the empty "not found" reply (Z); a nonzero status is a deny frame
// (S) whose payload is nil. Authorization failures are S 41, and a target
// that does not resolve wins over authorization (server-behaviour.md 2.6.1).

// ReadAs is Read for a session bound to client: it also serves
// SyncConsumerGroup (606), whose answer depends on the caller's client id
// (any failure, an undecodable body included, is Z; 7.5).
func (s *State) ReadAs(userID uint32, client wire.U128, code wire.CommandCode, body []byte) (status wire.ErrorCode, payload []byte, ok bool) {
	if code == wire.CodeSyncConsumerGroup {
		var req wire.SyncConsumerGroup
		if req.Decode(body) != nil {
			return 0, nil, true
		}
		return 0, s.SyncConsumerGroup(client, req), true
	}
	return s.Read(userID, code, body)
}

// Read dispatches a non-replicated read of the metadata plane by command
// code: it decodes the body (S 3 when it does not decode) and calls the
// typed read. ok is false for codes this package does not serve (Ping,
// stats, clients, cluster metadata, polls, offsets: the shell's) and for
// SyncConsumerGroup, which needs the session's client id (ReadAs).
func (s *State) Read(userID uint32, code wire.CommandCode, body []byte) (status wire.ErrorCode, payload []byte, ok bool) {
	switch code {
	case wire.CodeGetStream:
		var req wire.GetStream
		if req.Decode(body) != nil {
			return wire.ErrInvalidCommand, nil, true
		}
		status, payload = s.GetStream(userID, req)
	case wire.CodeGetStreams:
		status, payload = s.GetStreams(userID)
	case wire.CodeGetTopic:
		var req wire.GetTopic
		if req.Decode(body) != nil {
			return wire.ErrInvalidCommand, nil, true
		}
		status, payload = s.GetTopic(userID, req)
	case wire.CodeGetTopics:
		var req wire.GetTopics
		if req.Decode(body) != nil {
			return wire.ErrInvalidCommand, nil, true
		}
		status, payload = s.GetTopics(userID, req)
	case wire.CodeGetUser:
		var req wire.GetUser
		if req.Decode(body) != nil {
			return wire.ErrInvalidCommand, nil, true
		}
		status, payload = s.GetUser(userID, req)
	case wire.CodeGetUsers:
		status, payload = s.GetUsers(userID)
	case wire.CodeDescribeOptions:
		var req wire.DescribeOptions
		if req.Decode(body) != nil {
			return wire.ErrInvalidCommand, nil, true
		}
		status, payload = DescribeOptions(req)
	case wire.CodeGetPersonalAccessTokens:
		status, payload = s.GetPersonalAccessTokens(userID)
	case wire.CodeGetConsumerGroup:
		var req wire.GetConsumerGroup
		if req.Decode(body) != nil {
			return wire.ErrInvalidCommand, nil, true
		}
		status, payload = s.GetConsumerGroup(userID, req)
	case wire.CodeGetConsumerGroups:
		var req wire.GetConsumerGroups
		if req.Decode(body) != nil {
			return wire.ErrInvalidCommand, nil, true
		}
		status, payload = s.GetConsumerGroups(userID, req)
	default:
		return 0, nil, false
	}
	return status, payload, true
}

// GetStream (200): StreamDetails; Z when the stream does not resolve;
// S 41 without R-stream-read.
func (s *State) GetStream(userID uint32, req wire.GetStream) (wire.ErrorCode, []byte) {
	st, ok := s.stream(req.Stream)
	if !ok {
		return 0, nil
	}
	if !s.Allowed(userID, RuleStreamRead, st.ID, 0) {
		return wire.ErrUnauthorized, nil
	}
	return 0, s.streamDetails(st).AppendTo(nil)
}

// GetStreams (201): every stream, ascending id, no count; S 41 without
// R-streams-list.
func (s *State) GetStreams(userID uint32) (wire.ErrorCode, []byte) {
	if !s.Allowed(userID, RuleStreamsList, 0, 0) {
		return wire.ErrUnauthorized, nil
	}
	var out wire.Streams
	for _, st := range s.sortedStreams() {
		out = append(out, s.streamDetails(st).StreamResponse)
	}
	return 0, out.AppendTo(nil)
}

// GetTopic (300): TopicDetails; Z when the stream or topic does not
// resolve; S 41 without R-topic-read.
func (s *State) GetTopic(userID uint32, req wire.GetTopic) (wire.ErrorCode, []byte) {
	st, t, code := s.resolveTopic(req.Stream, req.Topic)
	if code != 0 {
		return 0, nil
	}
	if !s.Allowed(userID, RuleTopicRead, st.ID, t.ID) {
		return wire.ErrUnauthorized, nil
	}
	return 0, s.topicDetails(st, t, true).AppendTo(nil)
}

// GetTopics (301): [count][TopicHeader]*, ascending id; an unknown stream
// is count 0; S 41 without R-topics-list.
func (s *State) GetTopics(userID uint32, req wire.GetTopics) (wire.ErrorCode, []byte) {
	st, ok := s.stream(req.Stream)
	if !ok {
		return 0, wire.Topics(nil).AppendTo(nil)
	}
	if !s.Allowed(userID, RuleTopicsList, st.ID, 0) {
		return wire.ErrUnauthorized, nil
	}
	var out wire.Topics
	for _, t := range st.sortedTopics() {
		out = append(out, s.topicHeader(st, t))
	}
	return 0, out.AppendTo(nil)
}

// GetUser (31): UserDetails (canonical permissions); Z when unknown. A
// caller may always read itself; anyone else needs R-users-read, checked
// before the lookup (user reads are not object-scoped, 2.6.1).
func (s *State) GetUser(userID uint32, req wire.GetUser) (wire.ErrorCode, []byte) {
	u, ok := s.user(req.User)
	if !(ok && u.ID == userID) && !s.Allowed(userID, RuleUsersRead, 0, 0) {
		return wire.ErrUnauthorized, nil
	}
	if !ok {
		return 0, nil
	}
	return 0, wire.UserDetails{UserResponse: userResponse(u), Permissions: u.Permissions}.AppendTo(nil)
}

// GetUsers (32): every user, ascending id, without permissions; S 41
// without R-users-read.
func (s *State) GetUsers(userID uint32) (wire.ErrorCode, []byte) {
	if !s.Allowed(userID, RuleUsersRead, 0, 0) {
		return wire.ErrUnauthorized, nil
	}
	var b []byte
	for _, u := range s.sortedUsers() {
		b = userResponse(u).AppendTo(b)
	}
	return 0, b
}

// DescribeOptions (13): the topic catalog for scope 1, an empty catalog
// (`00 00 00 00`) for streams and users. Authentication only.
func DescribeOptions(req wire.DescribeOptions) (wire.ErrorCode, []byte) {
	switch req.Scope {
	case 1:
		return 0, wire.TopicOptionCatalog().AppendTo(nil)
	case 2, 3:
		return 0, wire.OptionCatalog(nil).AppendTo(nil)
	}
	return wire.ErrInvalidCommand, nil
}

func userResponse(u *User) wire.UserResponse {
	return wire.UserResponse{ID: u.ID, CreatedAt: u.CreatedAt, Status: u.Status, Username: u.Username, Options: u.Options}
}

func (s *State) streamDetails(st *Stream) wire.StreamDetails {
	d := wire.StreamDetails{StreamResponse: wire.StreamResponse{
		ID: st.ID, CreatedAt: st.CreatedAt, Name: st.Name, Options: st.Options,
	}}
	for _, t := range st.sortedTopics() {
		h := s.topicHeader(st, t)
		d.SizeBytes += h.SizeBytes
		d.MessagesCount += h.MessagesCount
		d.Topics = append(d.Topics, h)
	}
	d.TopicsCount = uint32(len(d.Topics))
	return d
}

func (s *State) topicHeader(st *Stream, t *Topic) wire.TopicHeader {
	h := wire.TopicHeader{
		ID: t.ID, CreatedAt: t.CreatedAt, PartitionsCount: uint32(len(t.Partitions)),
		MessageExpiry: t.MessageExpiry, CompressionAlgorithm: t.Compression, MaxTopicSize: t.MaxTopicSize,
		Name: t.Name, ExplicitOptions: t.Explicit, DerivedOptions: t.Derived,
	}
	for _, p := range t.Partitions {
		ps := s.partitionStats(partitionGroup(st.ID, t.ID, p.ID))
		h.SizeBytes += ps.SizeBytes
		h.MessagesCount += ps.MessagesCount
	}
	return h
}

// topicDetails builds TopicDetails. Reads report at least one segment per
// partition; the CreateTopic reply reports zero counters (7.4).
func (s *State) topicDetails(st *Stream, t *Topic, read bool) wire.TopicDetails {
	d := wire.TopicDetails{TopicHeader: s.topicHeader(st, t)}
	for _, p := range t.Partitions {
		r := wire.PartitionResponse{ID: p.ID, CreatedAt: p.CreatedAt}
		if read {
			ps := s.partitionStats(partitionGroup(st.ID, t.ID, p.ID))
			r.SegmentsCount = max(ps.SegmentsCount, 1)
			r.CurrentOffset, r.SizeBytes, r.MessagesCount = ps.CurrentOffset, ps.SizeBytes, ps.MessagesCount
		}
		d.Partitions = append(d.Partitions, r)
	}
	if !read {
		d.SizeBytes, d.MessagesCount = 0, 0
	}
	return d
}

// Totals are the counters GetStats reports from metadata (client-plane.md
// 7.14), and the users the metrics count (server-behaviour.md 13.3).
type Totals struct {
	Streams, Topics, Partitions, Segments, ConsumerGroups, Users uint32
	MessagesCount, SizeBytes                                     uint64
}

// Totals sums the state for GetStats; each partition counts at least one
// segment.
func (s *State) Totals() Totals {
	out := Totals{Users: uint32(len(s.users))}
	for _, st := range s.streams {
		out.Streams++
		for _, t := range st.topics {
			out.Topics++
			out.ConsumerGroups += uint32(len(t.groups))
			for _, p := range t.Partitions {
				ps := s.partitionStats(partitionGroup(st.ID, t.ID, p.ID))
				out.Partitions++
				out.Segments += max(ps.SegmentsCount, 1)
				out.MessagesCount += ps.MessagesCount
				out.SizeBytes += ps.SizeBytes
			}
		}
	}
	return out
}
