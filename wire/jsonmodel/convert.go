package jsonmodel

import (
	"encoding/binary"
	"math"
	"slices"
	"strconv"
	"strings"

	"iggynode/wire"
)

// From* convert the binary replies (package wire) into their JSON models.

func FromStream(s wire.StreamResponse) Stream {
	return Stream{ID: s.ID, CreatedAt: s.CreatedAt, Name: s.Name, Size: ByteSize(s.SizeBytes), MessagesCount: s.MessagesCount,
		TopicsCount: s.TopicsCount, Options: optionsMap(s.Options, nil)}
}

func FromStreams(list wire.Streams) []Stream {
	out := make([]Stream, 0, len(list))
	for _, s := range list {
		out = append(out, FromStream(s))
	}
	slices.SortFunc(out, func(a, b Stream) int { return int(a.ID) - int(b.ID) })
	return out
}

func FromStreamDetails(d wire.StreamDetails) StreamDetails {
	s := FromStream(d.StreamResponse)
	topics := make([]Topic, 0, len(d.Topics))
	for _, t := range d.Topics {
		topics = append(topics, FromTopic(t))
	}
	slices.SortFunc(topics, func(a, b Topic) int { return int(a.ID) - int(b.ID) })
	return StreamDetails{ID: s.ID, CreatedAt: s.CreatedAt, Name: s.Name, Size: s.Size, MessagesCount: s.MessagesCount,
		TopicsCount: uint32(len(topics)), Topics: topics, Options: s.Options}
}

// effective maps the server-default sentinel 0 to the default, u64::MAX
// (never expire, unlimited; 4.2).
func effective(v uint64) uint64 {
	if v == 0 {
		return math.MaxUint64
	}
	return v
}

func FromTopic(t wire.TopicHeader) Topic {
	return Topic{ID: t.ID, CreatedAt: t.CreatedAt, Name: t.Name, Size: ByteSize(t.SizeBytes),
		MessageExpiry: effective(t.MessageExpiry), CompressionAlgorithm: compressionName(t.CompressionAlgorithm),
		MaxTopicSize: effective(t.MaxTopicSize), MessagesCount: t.MessagesCount, PartitionsCount: t.PartitionsCount,
		Options: optionsMap(t.ExplicitOptions, t.DerivedOptions)}
}

func FromTopics(list wire.Topics) []Topic {
	out := make([]Topic, 0, len(list))
	for _, t := range list {
		out = append(out, FromTopic(t))
	}
	slices.SortFunc(out, func(a, b Topic) int { return int(a.ID) - int(b.ID) })
	return out
}

func FromTopicDetails(d wire.TopicDetails) TopicDetails {
	t := FromTopic(d.TopicHeader)
	parts := make([]Partition, 0, len(d.Partitions))
	for _, p := range d.Partitions {
		parts = append(parts, Partition{ID: p.ID, CreatedAt: p.CreatedAt, SegmentsCount: max(p.SegmentsCount, 1),
			CurrentOffset: p.CurrentOffset, Size: ByteSize(p.SizeBytes), MessagesCount: p.MessagesCount})
	}
	slices.SortFunc(parts, func(a, b Partition) int { return int(a.ID) - int(b.ID) })
	return TopicDetails{ID: t.ID, CreatedAt: t.CreatedAt, Name: t.Name, Size: t.Size, MessageExpiry: t.MessageExpiry,
		CompressionAlgorithm: t.CompressionAlgorithm, MaxTopicSize: t.MaxTopicSize, MessagesCount: t.MessagesCount,
		PartitionsCount: uint32(len(parts)), Partitions: parts, Options: t.Options}
}

// optionsMap merges explicit and derived options (explicit wins), values
// rendered as a request would send them (4.4).
func optionsMap(explicit, derived wire.Options) OptionsMap {
	out := OptionsMap{}
	for _, kv := range derived {
		out[kv.Key] = OptionValue{Value: OptionText(kv.Kind, kv.Value), Explicit: false}
	}
	for _, kv := range explicit {
		out[kv.Key] = OptionValue{Value: OptionText(kv.Kind, kv.Value), Explicit: true}
	}
	return out
}

// OptionText renders a typed option value as text: strings as is, bools
// true/false, integers in decimal, floats in shortest form, anything else
// base64-free decimal bytes joined by commas.
func OptionText(kind wire.HeaderKind, v []byte) string {
	le := func(n int) uint64 {
		var b [8]byte
		copy(b[:], v[:min(n, len(v))])
		return binary.LittleEndian.Uint64(b[:])
	}
	size := kind.FixedSize()
	if size != 0 && len(v) != size {
		kind = wire.KindRaw
	}
	switch kind {
	case wire.KindString:
		return string(v)
	case wire.KindBool:
		return strconv.FormatBool(v[0] != 0)
	case wire.KindUint8, wire.KindUint16, wire.KindUint32, wire.KindUint64:
		return strconv.FormatUint(le(size), 10)
	case wire.KindInt8:
		return strconv.FormatInt(int64(int8(v[0])), 10)
	case wire.KindInt16:
		return strconv.FormatInt(int64(int16(le(2))), 10)
	case wire.KindInt32:
		return strconv.FormatInt(int64(int32(le(4))), 10)
	case wire.KindInt64:
		return strconv.FormatInt(int64(le(8)), 10)
	case wire.KindFloat32:
		return strconv.FormatFloat(float64(math.Float32frombits(uint32(le(4)))), 'g', -1, 32)
	case wire.KindFloat64:
		return strconv.FormatFloat(math.Float64frombits(le(8)), 'g', -1, 64)
	case wire.KindUint128, wire.KindInt128:
		return MessageID{Lo: binary.LittleEndian.Uint64(v), Hi: binary.LittleEndian.Uint64(v[8:])}.big().String()
	}
	out := ""
	for i, c := range v {
		if i > 0 {
			out += ","
		}
		out += strconv.Itoa(int(c))
	}
	return out
}

func FromConsumerGroup(g wire.ConsumerGroupResponse) ConsumerGroup {
	return ConsumerGroup{ID: g.ID, Name: g.Name, PartitionsCount: g.PartitionsCount, MembersCount: g.MembersCount}
}

func FromConsumerGroups(list wire.ConsumerGroups) []ConsumerGroup {
	out := make([]ConsumerGroup, 0, len(list))
	for _, g := range list {
		out = append(out, FromConsumerGroup(g))
	}
	slices.SortFunc(out, func(a, b ConsumerGroup) int { return int(a.ID) - int(b.ID) })
	return out
}

func FromConsumerGroupDetails(d wire.ConsumerGroupDetails) ConsumerGroupDetails {
	members := make([]ConsumerGroupMember, 0, len(d.Members))
	for _, m := range d.Members {
		members = append(members, ConsumerGroupMember{ID: m.ID, PartitionsCount: uint32(len(m.Partitions)),
			Partitions: append([]uint32{}, m.Partitions...)})
	}
	slices.SortFunc(members, func(a, b ConsumerGroupMember) int { return int(a.ID) - int(b.ID) })
	return ConsumerGroupDetails{ID: d.ID, Name: d.Name, PartitionsCount: d.PartitionsCount,
		MembersCount: uint32(len(members)), Members: members}
}

func statusName(s wire.UserStatus) string {
	if s == wire.UserInactive {
		return "inactive"
	}
	return "active"
}

func FromUser(u wire.UserResponse) UserInfo {
	return UserInfo{ID: u.ID, CreatedAt: u.CreatedAt, Status: statusName(u.Status), Username: u.Username, Options: optionsMap(u.Options, nil)}
}

func FromUsers(list wire.Users) []UserInfo {
	out := make([]UserInfo, 0, len(list))
	for _, u := range list {
		out = append(out, FromUser(u))
	}
	slices.SortFunc(out, func(a, b UserInfo) int { return int(a.ID) - int(b.ID) })
	return out
}

func FromUserDetails(d wire.UserDetails) UserInfoDetails {
	u := FromUser(d.UserResponse)
	return UserInfoDetails{ID: u.ID, CreatedAt: u.CreatedAt, Status: u.Status, Username: u.Username,
		Permissions: FromPermissions(d.Permissions), Options: u.Options}
}

func flag(v bool) *bool { return &v }

// FromPermissions is nil for a user without a permission set.
func FromPermissions(p *wire.Permissions) *Permissions {
	if p == nil {
		return nil
	}
	g := p.Global
	out := &Permissions{Global: GlobalPermissions{ManageServers: flag(g.ManageServers), ReadServers: flag(g.ReadServers),
		ManageUsers: flag(g.ManageUsers), ReadUsers: flag(g.ReadUsers), ManageStreams: flag(g.ManageStreams),
		ReadStreams: flag(g.ReadStreams), ManageTopics: flag(g.ManageTopics), ReadTopics: flag(g.ReadTopics),
		PollMessages: flag(g.PollMessages), SendMessages: flag(g.SendMessages)}}
	for sid, s := range p.Streams {
		sp := StreamPermissions{ManageStream: flag(s.ManageStream), ReadStream: flag(s.ReadStream), ManageTopics: flag(s.ManageTopics),
			ReadTopics: flag(s.ReadTopics), PollMessages: flag(s.PollMessages), SendMessages: flag(s.SendMessages)}
		for tid, t := range s.Topics {
			if sp.Topics == nil {
				sp.Topics = IDMap[TopicPermissions]{}
			}
			sp.Topics[tid] = TopicPermissions{ManageTopic: flag(t.ManageTopic), ReadTopic: flag(t.ReadTopic),
				PollMessages: flag(t.PollMessages), SendMessages: flag(t.SendMessages)}
		}
		if out.Streams == nil {
			out.Streams = IDMap[StreamPermissions]{}
		}
		out.Streams[sid] = sp
	}
	return out
}

func FromTokens(list wire.PersonalAccessTokens) []PersonalAccessTokenInfo {
	out := make([]PersonalAccessTokenInfo, 0, len(list))
	for _, t := range list {
		info := PersonalAccessTokenInfo{Name: t.Name}
		if t.ExpiryAt != 0 && t.ExpiryAt != math.MaxUint64 {
			at := t.ExpiryAt
			info.ExpiryAt = &at
		}
		out = append(out, info)
	}
	slices.SortFunc(out, func(a, b PersonalAccessTokenInfo) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return out
}

func FromStats(s wire.Stats) Stats {
	out := Stats{ProcessID: s.ProcessID, CPUUsage: s.CPUUsage, TotalCPUUsage: s.TotalCPUUsage, MemoryUsage: ByteSize(s.MemoryUsage),
		TotalMemory: ByteSize(s.TotalMemory), AvailableMemory: ByteSize(s.AvailableMemory), RunTime: s.RunTime, StartTime: s.StartTime,
		ReadBytes: ByteSize(s.ReadBytes), WrittenBytes: ByteSize(s.WrittenBytes), MessagesSizeBytes: ByteSize(s.MessagesSizeBytes),
		StreamsCount: s.StreamsCount, TopicsCount: s.TopicsCount, PartitionsCount: s.PartitionsCount, SegmentsCount: s.SegmentsCount,
		MessagesCount: s.MessagesCount, ClientsCount: s.ClientsCount, ConsumerGroupsCount: s.ConsumerGroupsCount,
		Hostname: s.Hostname, OSName: s.OSName, OSVersion: s.OSVersion, KernelVersion: s.KernelVersion,
		IggyServerVersion: s.IggyServerVersion, CacheMetrics: map[string]CacheMetric{}, ThreadsCount: s.ThreadsCount,
		FreeDiskSpace: ByteSize(s.FreeDiskSpace), TotalDiskSpace: ByteSize(s.TotalDiskSpace)}
	if s.IggyServerSemver != 0 {
		v := s.IggyServerSemver
		out.IggyServerSemver = &v
	}
	for _, m := range s.CacheMetrics {
		key := strconv.Itoa(int(m.StreamID)) + "-" + strconv.Itoa(int(m.TopicID)) + "-" + strconv.Itoa(int(m.PartitionID))
		out.CacheMetrics[key] = CacheMetric{Hits: m.Hits, Misses: m.Misses, HitRatio: m.HitRatio}
	}
	return out
}

// TransportName is ClientInfo.transport (4.11).
func TransportName(t wire.TransportKind) string {
	switch t {
	case wire.TransportTCP:
		return "TCP"
	case wire.TransportQUIC:
		return "QUIC"
	case wire.TransportHTTP:
		return "HTTP"
	case wire.TransportWebSocket:
		return "WebSocket"
	}
	return "Unknown"
}

func userID(id uint32) *uint32 {
	if id == wire.UserIDNone {
		return nil
	}
	return &id
}

func FromClient(c wire.ClientResponse) ClientInfo {
	return ClientInfo{ClientID: c.ClientID, UserID: userID(c.UserID), Address: c.Address, Transport: TransportName(c.Transport),
		ConsumerGroupsCount: c.ConsumerGroupsCount}
}

func FromClients(list wire.Clients) []ClientInfo {
	out := make([]ClientInfo, 0, len(list))
	for _, c := range list {
		out = append(out, FromClient(c))
	}
	slices.SortFunc(out, func(a, b ClientInfo) int { return int(a.ClientID) - int(b.ClientID) })
	return out
}

func FromClientDetails(d wire.ClientDetails) ClientInfoDetails {
	c := FromClient(d.ClientResponse)
	groups := make([]ClientConsumerGroup, 0, len(d.ConsumerGroups))
	for _, g := range d.ConsumerGroups {
		groups = append(groups, ClientConsumerGroup{StreamID: g.StreamID, TopicID: g.TopicID, GroupID: g.GroupID})
	}
	slices.SortFunc(groups, func(a, b ClientConsumerGroup) int { return int(a.GroupID) - int(b.GroupID) })
	return ClientInfoDetails{ClientID: c.ClientID, UserID: c.UserID, Address: c.Address, Transport: c.Transport,
		ConsumerGroupsCount: uint32(len(groups)), ConsumerGroups: groups}
}

func FromClusterMetadata(m wire.ClusterMetadata) ClusterMetadata {
	out := ClusterMetadata{Name: m.Name, Nodes: []ClusterNode{}}
	for _, n := range m.Nodes {
		out.Nodes = append(out.Nodes, ClusterNode{Name: n.Name, IP: n.IP,
			Endpoints: Endpoints{TCP: n.TCPPort, QUIC: n.QUICPort, HTTP: n.HTTPPort, WebSocket: n.WebSocketPort},
			Role:      n.Role.String(), Status: n.Status.String()})
	}
	return out
}

func FromConsumerOffset(o wire.ConsumerOffset) ConsumerOffsetInfo {
	return ConsumerOffsetInfo{PartitionID: o.PartitionID, CurrentOffset: o.CurrentOffset, StoredOffset: o.StoredOffset}
}

func FromOptionCatalog(c wire.OptionCatalog) []OptionSpec {
	out := make([]OptionSpec, 0, len(c))
	for _, d := range c {
		out = append(out, OptionSpec{Key: d.Key, Kind: d.Kind.String(), DefaultValue: ByteArray(append([]byte{}, d.Default...)),
			Description: d.Description})
	}
	return out
}

func FromConfirmations(c wire.SendConfirmations) SendMessagesConfirmations {
	out := SendMessagesConfirmations{Confirmations: []Confirmation{}}
	for _, x := range c {
		out.Confirmations = append(out.Confirmations, Confirmation{StreamID: x.StreamID, TopicID: x.TopicID,
			PartitionID: x.PartitionID, BaseOffset: x.BaseOffset})
	}
	return out
}

// FromPolled converts a poll reply; payloads and headers are copied.
func FromPolled(p *wire.PolledMessages) PolledMessages {
	out := PolledMessages{PartitionID: p.PartitionID, CurrentOffset: p.CurrentOffset, Messages: []Message{}}
	for it := p.Messages(); ; {
		m, ok := it.Next()
		if !ok {
			break
		}
		out.Messages = append(out.Messages, Message{
			Header: MessageHeader{Checksum: m.Checksum, ID: MessageID(m.ID), Offset: m.Offset, Timestamp: m.Timestamp,
				OriginTimestamp: m.OriginTimestamp, UserHeadersLength: uint32(len(m.UserHeaders)), PayloadLength: uint32(len(m.Payload))},
			Payload:     Bytes(append([]byte{}, m.Payload...)),
			UserHeaders: HeadersOut(m.UserHeaders),
		})
	}
	out.Count = uint32(len(out.Messages))
	return out
}

// HeadersOut parses a stored header block into entries sorted by key
// (kind code, then key bytes), or keeps it raw when it does not parse.
func HeadersOut(block []byte) UserHeadersOut {
	if len(block) == 0 {
		return UserHeadersOut{}
	}
	hs, err := wire.DecodeUserHeaders(block)
	if err != nil {
		return UserHeadersOut{Raw: append([]byte{}, block...)}
	}
	entries := make([]HeaderEntry, 0, len(hs))
	for _, kv := range hs {
		entries = append(entries, HeaderEntry{Key: HeaderField{Kind: "string", Value: Bytes(kv.Key)},
			Value: HeaderField{Kind: kv.Kind.String(), Value: Bytes(kv.Value)}})
	}
	slices.SortFunc(entries, func(a, b HeaderEntry) int {
		switch {
		case string(a.Key.Value) < string(b.Key.Value):
			return -1
		case string(a.Key.Value) > string(b.Key.Value):
			return 1
		}
		return 0
	})
	return UserHeadersOut{Entries: entries}
}

// Error builds the error body of IggyError code c (7.1, 7.3).
func Error(c wire.ErrorCode, reason string) ErrorBody {
	if reason == "" {
		reason = Reason(c)
	}
	body := ErrorBody{ID: uint32(c), Code: SnakeName(c), Reason: reason}
	if f, ok := errorFields[c]; ok {
		body.Field = &f
	}
	return body
}

var errorFields = map[wire.ErrorCode]string{
	wire.ErrStreamIdNotFound: "stream_id", wire.ErrInvalidStreamId: "stream_id",
	wire.ErrTopicIdNotFound: "topic_id", wire.ErrInvalidTopicId: "topic_id",
	wire.ErrPartitionNotFound: "partition_id", wire.ErrSegmentNotFound: "segment_id", wire.ErrClientNotFound: "client_id",
	wire.ErrInvalidStreamName: "name", wire.ErrStreamNameAlreadyExists: "name", wire.ErrInvalidTopicName: "name",
	wire.ErrTopicNameAlreadyExists: "name", wire.ErrConsumerGroupNameAlreadyExists: "name",
	wire.ErrPersonalAccessTokenAlreadyExists: "name", wire.ErrInvalidOffset: "offset",
	wire.ErrInvalidConsumerGroupId: "consumer_group_id", wire.ErrUserAlreadyExists: "username",
}

// HandBuilt is a hand-built HTTP-layer error (7.4): id is the status
// unless given.
func HandBuilt(id uint32, code, reason string) ErrorBody {
	return ErrorBody{ID: id, Code: code, Reason: reason}
}

// SnakeName is the snake_case of the IggyError variant name (7.1):
// StreamIdNotFound -> stream_id_not_found.
func SnakeName(c wire.ErrorCode) string {
	name := c.Name()
	out := make([]byte, 0, len(name)+8)
	for i := 0; i < len(name); i++ {
		ch := name[i]
		if ch >= 'A' && ch <= 'Z' {
			if i > 0 {
				out = append(out, '_')
			}
			ch += 'a' - 'A'
		}
		out = append(out, ch)
	}
	return string(out)
}

// reasons are the message templates of the codes the API produces most,
// with the default arguments a rebuilt error shows (7.6).
var reasons = map[wire.ErrorCode]string{
	wire.ErrInvalidCommand: "Invalid command", wire.ErrInvalidIdentifier: "Invalid identifier",
	wire.ErrCannotEstablishConnection: "Cannot establish connection",
	wire.ErrResourceNotFound:          "Resource with key:  was not found.", wire.ErrUnauthenticated: "Unauthenticated",
	wire.ErrUnauthorized: "Unauthorized", wire.ErrInvalidCredentials: "Invalid credentials",
	wire.ErrInvalidUsername: "Invalid username", wire.ErrInvalidPassword: "Invalid password",
	wire.ErrUserAlreadyExists: "User already exists", wire.ErrUserInactive: "User is inactive",
	wire.ErrCannotDeleteUser: "Cannot delete user with ID: 0", wire.ErrCannotChangePermissions: "Cannot change permissions for user with ID: 0",
	wire.ErrInvalidPersonalAccessToken: "Invalid personal access token",
	wire.ErrAccessTokenMissing:         "Access token is missing", wire.ErrInvalidAccessToken: "Invalid access token",
	wire.ErrTransientNotCommitted: "Transient: not committed", wire.ErrTransientNotAccepted: "Transient: not accepted",
	wire.ErrStreamIdNotFound: "Stream with ID: 0 was not found.", wire.ErrStreamNameAlreadyExists: "Stream with name:  already exists.",
	wire.ErrTopicIdNotFound:        "Topic with ID: 0 for stream with ID: 0 was not found.",
	wire.ErrTopicNameAlreadyExists: "Topic with name:  for stream with ID: 0 already exists.",
	wire.ErrPartitionNotFound:      "Partition with ID: 0 for topic with ID: 0 for stream with ID: 0 was not found.",
	wire.ErrTooManyPartitions:      "Too many partitions", wire.ErrInvalidOffset: "Invalid offset: 0",
	wire.ErrConsumerOffsetNotFound:  "Consumer offset for consumer with ID: 0 was not found.",
	wire.ErrConsumerGroupIdNotFound: "Consumer group with ID: 0 for topic with ID: 0 was not found.",
}

// Reason is the message of code c.
func Reason(c wire.ErrorCode) string {
	if r, ok := reasons[c]; ok {
		return r
	}
	if m := c.Meaning(); m != "" {
		return strings.ToUpper(m[:1]) + m[1:]
	}
	return c.Name()
}
