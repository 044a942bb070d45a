package jsonmodel

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"

	"iggynode/wire"
)

// Stream is a GET /streams element (4.1); StreamDetails adds its topics.
type Stream struct {
	ID            uint32     `json:"id"`
	CreatedAt     uint64     `json:"created_at"`
	Name          string     `json:"name"`
	Size          ByteSize   `json:"size"`
	MessagesCount uint64     `json:"messages_count"`
	TopicsCount   uint32     `json:"topics_count"`
	Options       OptionsMap `json:"options"`
}

type StreamDetails struct {
	ID            uint32     `json:"id"`
	CreatedAt     uint64     `json:"created_at"`
	Name          string     `json:"name"`
	Size          ByteSize   `json:"size"`
	MessagesCount uint64     `json:"messages_count"`
	TopicsCount   uint32     `json:"topics_count"`
	Topics        []Topic    `json:"topics"`
	Options       OptionsMap `json:"options"`
}

// Topic is a GET .../topics element (4.2); TopicDetails adds partitions.
type Topic struct {
	ID                   uint32     `json:"id"`
	CreatedAt            uint64     `json:"created_at"`
	Name                 string     `json:"name"`
	Size                 ByteSize   `json:"size"`
	MessageExpiry        uint64     `json:"message_expiry"`
	CompressionAlgorithm string     `json:"compression_algorithm"`
	MaxTopicSize         uint64     `json:"max_topic_size"`
	MessagesCount        uint64     `json:"messages_count"`
	PartitionsCount      uint32     `json:"partitions_count"`
	Options              OptionsMap `json:"options"`
}

type TopicDetails struct {
	ID                   uint32      `json:"id"`
	CreatedAt            uint64      `json:"created_at"`
	Name                 string      `json:"name"`
	Size                 ByteSize    `json:"size"`
	MessageExpiry        uint64      `json:"message_expiry"`
	CompressionAlgorithm string      `json:"compression_algorithm"`
	MaxTopicSize         uint64      `json:"max_topic_size"`
	MessagesCount        uint64      `json:"messages_count"`
	PartitionsCount      uint32      `json:"partitions_count"`
	Partitions           []Partition `json:"partitions"`
	Options              OptionsMap  `json:"options"`
}

// Partition is 4.3.
type Partition struct {
	ID            uint32   `json:"id"`
	CreatedAt     uint64   `json:"created_at"`
	SegmentsCount uint32   `json:"segments_count"`
	CurrentOffset uint64   `json:"current_offset"`
	Size          ByteSize `json:"size"`
	MessagesCount uint64   `json:"messages_count"`
}

// OptionValue is one entry of an OptionsMap (4.4).
type OptionValue struct {
	Value    string `json:"value"`
	Explicit bool   `json:"explicit"`
}

// OptionsMap is keyed by option name; encoding/json sorts the keys. Never
// nil on output: an empty map is written {}.
type OptionsMap map[string]OptionValue

func (o OptionsMap) MarshalJSON() ([]byte, error) {
	if o == nil {
		return []byte("{}"), nil
	}
	return json.Marshal(map[string]OptionValue(o))
}

// ConsumerGroup is 4.5; ConsumerGroupDetails adds the members.
type ConsumerGroup struct {
	ID              uint32 `json:"id"`
	Name            string `json:"name"`
	PartitionsCount uint32 `json:"partitions_count"`
	MembersCount    uint32 `json:"members_count"`
}

type ConsumerGroupDetails struct {
	ID              uint32                `json:"id"`
	Name            string                `json:"name"`
	PartitionsCount uint32                `json:"partitions_count"`
	MembersCount    uint32                `json:"members_count"`
	Members         []ConsumerGroupMember `json:"members"`
}

type ConsumerGroupMember struct {
	ID              uint32   `json:"id"`
	PartitionsCount uint32   `json:"partitions_count"`
	Partitions      []uint32 `json:"partitions"`
}

// UserInfo is 4.6; UserInfoDetails adds the permissions.
type UserInfo struct {
	ID        uint32     `json:"id"`
	CreatedAt uint64     `json:"created_at"`
	Status    string     `json:"status"`
	Username  string     `json:"username"`
	Options   OptionsMap `json:"options"`
}

type UserInfoDetails struct {
	ID          uint32       `json:"id"`
	CreatedAt   uint64       `json:"created_at"`
	Status      string       `json:"status"`
	Username    string       `json:"username"`
	Permissions *Permissions `json:"permissions"`
	Options     OptionsMap   `json:"options"`
}

// Permissions is 4.7. On input every flag is required; streams and
// topics may be missing or null.
type Permissions struct {
	Global  GlobalPermissions        `json:"global"`
	Streams IDMap[StreamPermissions] `json:"streams"`
}

type GlobalPermissions struct {
	ManageServers *bool `json:"manage_servers"`
	ReadServers   *bool `json:"read_servers"`
	ManageUsers   *bool `json:"manage_users"`
	ReadUsers     *bool `json:"read_users"`
	ManageStreams *bool `json:"manage_streams"`
	ReadStreams   *bool `json:"read_streams"`
	ManageTopics  *bool `json:"manage_topics"`
	ReadTopics    *bool `json:"read_topics"`
	PollMessages  *bool `json:"poll_messages"`
	SendMessages  *bool `json:"send_messages"`
}

type StreamPermissions struct {
	ManageStream *bool                   `json:"manage_stream"`
	ReadStream   *bool                   `json:"read_stream"`
	ManageTopics *bool                   `json:"manage_topics"`
	ReadTopics   *bool                   `json:"read_topics"`
	PollMessages *bool                   `json:"poll_messages"`
	SendMessages *bool                   `json:"send_messages"`
	Topics       IDMap[TopicPermissions] `json:"topics"`
}

type TopicPermissions struct {
	ManageTopic  *bool `json:"manage_topic"`
	ReadTopic    *bool `json:"read_topic"`
	PollMessages *bool `json:"poll_messages"`
	SendMessages *bool `json:"send_messages"`
}

// IDMap is a map keyed by numeric id, written as an object with decimal
// string keys in ascending numeric order, and null when empty (4.7).
type IDMap[T any] map[uint32]T

func (m IDMap[T]) MarshalJSON() ([]byte, error) {
	if len(m) == 0 {
		return []byte("null"), nil
	}
	ids := make([]uint32, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var b bytes.Buffer
	b.WriteByte('{')
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"` + strconv.FormatUint(uint64(id), 10) + `":`)
		v, err := json.Marshal(m[id])
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func (m *IDMap[T]) UnmarshalJSON(data []byte) error {
	var raw map[string]T
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	if raw == nil {
		*m = nil
		return nil
	}
	out := make(IDMap[T], len(raw))
	for k, v := range raw {
		id, err := strconv.ParseUint(k, 10, 32)
		if err != nil {
			return modelErr("permission map key %q is not a numeric id", k)
		}
		out[uint32(id)] = v
	}
	*m = out
	return nil
}

// PersonalAccessTokenInfo is 4.8; ExpiryAt nil never expires.
type PersonalAccessTokenInfo struct {
	Name     string  `json:"name"`
	ExpiryAt *uint64 `json:"expiry_at"`
}

// RawPersonalAccessToken is the one-time token of a create (4.8).
type RawPersonalAccessToken struct {
	Token string `json:"token"`
}

// IdentityInfo is 4.9; AccessToken.Expiry is Unix seconds.
type IdentityInfo struct {
	UserID      uint32     `json:"user_id"`
	AccessToken *TokenInfo `json:"access_token"`
}

type TokenInfo struct {
	Token  string `json:"token"`
	Expiry uint64 `json:"expiry"`
}

// Stats is 4.10.
type Stats struct {
	ProcessID           uint32                 `json:"process_id"`
	CPUUsage            float32                `json:"cpu_usage"`
	TotalCPUUsage       float32                `json:"total_cpu_usage"`
	MemoryUsage         ByteSize               `json:"memory_usage"`
	TotalMemory         ByteSize               `json:"total_memory"`
	AvailableMemory     ByteSize               `json:"available_memory"`
	RunTime             uint64                 `json:"run_time"`
	StartTime           uint64                 `json:"start_time"`
	ReadBytes           ByteSize               `json:"read_bytes"`
	WrittenBytes        ByteSize               `json:"written_bytes"`
	MessagesSizeBytes   ByteSize               `json:"messages_size_bytes"`
	StreamsCount        uint32                 `json:"streams_count"`
	TopicsCount         uint32                 `json:"topics_count"`
	PartitionsCount     uint32                 `json:"partitions_count"`
	SegmentsCount       uint32                 `json:"segments_count"`
	MessagesCount       uint64                 `json:"messages_count"`
	ClientsCount        uint32                 `json:"clients_count"`
	ConsumerGroupsCount uint32                 `json:"consumer_groups_count"`
	Hostname            string                 `json:"hostname"`
	OSName              string                 `json:"os_name"`
	OSVersion           string                 `json:"os_version"`
	KernelVersion       string                 `json:"kernel_version"`
	IggyServerVersion   string                 `json:"iggy_server_version"`
	IggyServerSemver    *uint32                `json:"iggy_server_semver"`
	CacheMetrics        map[string]CacheMetric `json:"cache_metrics"`
	ThreadsCount        uint32                 `json:"threads_count"`
	FreeDiskSpace       ByteSize               `json:"free_disk_space"`
	TotalDiskSpace      ByteSize               `json:"total_disk_space"`
}

type CacheMetric struct {
	Hits     uint64  `json:"hits"`
	Misses   uint64  `json:"misses"`
	HitRatio float32 `json:"hit_ratio"`
}

// ClientInfo is 4.11; ClientInfoDetails adds the group memberships.
type ClientInfo struct {
	ClientID            uint32  `json:"client_id"`
	UserID              *uint32 `json:"user_id"`
	Address             string  `json:"address"`
	Transport           string  `json:"transport"`
	ConsumerGroupsCount uint32  `json:"consumer_groups_count"`
}

type ClientInfoDetails struct {
	ClientID            uint32                `json:"client_id"`
	UserID              *uint32               `json:"user_id"`
	Address             string                `json:"address"`
	Transport           string                `json:"transport"`
	ConsumerGroupsCount uint32                `json:"consumer_groups_count"`
	ConsumerGroups      []ClientConsumerGroup `json:"consumer_groups"`
}

type ClientConsumerGroup struct {
	StreamID uint32 `json:"stream_id"`
	TopicID  uint32 `json:"topic_id"`
	GroupID  uint32 `json:"group_id"`
}

// ClusterMetadata is 4.12.
type ClusterMetadata struct {
	Name  string        `json:"name"`
	Nodes []ClusterNode `json:"nodes"`
}

type ClusterNode struct {
	Name      string    `json:"name"`
	IP        string    `json:"ip"`
	Endpoints Endpoints `json:"endpoints"`
	Role      string    `json:"role"`
	Status    string    `json:"status"`
}

type Endpoints struct {
	TCP       uint16 `json:"tcp"`
	QUIC      uint16 `json:"quic"`
	HTTP      uint16 `json:"http"`
	WebSocket uint16 `json:"websocket"`
}

// ConsumerOffsetInfo is 4.13.
type ConsumerOffsetInfo struct {
	PartitionID   uint32 `json:"partition_id"`
	CurrentOffset uint64 `json:"current_offset"`
	StoredOffset  uint64 `json:"stored_offset"`
}

// OptionSpec is 4.14.
type OptionSpec struct {
	Key          string    `json:"key"`
	Kind         string    `json:"kind"`
	DefaultValue ByteArray `json:"default_value"`
	Description  string    `json:"description"`
}

// SendMessagesConfirmations is 4.15.
type SendMessagesConfirmations struct {
	Confirmations []Confirmation `json:"confirmations"`
}

type Confirmation struct {
	StreamID    uint32 `json:"stream_id"`
	TopicID     uint32 `json:"topic_id"`
	PartitionID uint32 `json:"partition_id"`
	BaseOffset  uint64 `json:"base_offset"`
}

// PolledMessages is 4.16.
type PolledMessages struct {
	PartitionID   uint32    `json:"partition_id"`
	CurrentOffset uint64    `json:"current_offset"`
	Count         uint32    `json:"count"`
	Messages      []Message `json:"messages"`
}

// Message is a polled message: header, base64 payload, headers.
type Message struct {
	Header      MessageHeader  `json:"header"`
	Payload     Bytes          `json:"payload"`
	UserHeaders UserHeadersOut `json:"user_headers"`
}

type MessageHeader struct {
	Checksum          uint64    `json:"checksum"`
	ID                MessageID `json:"id"`
	Offset            uint64    `json:"offset"`
	Timestamp         uint64    `json:"timestamp"`
	OriginTimestamp   uint64    `json:"origin_timestamp"`
	UserHeadersLength uint32    `json:"user_headers_length"`
	PayloadLength     uint32    `json:"payload_length"`
	Reserved          uint64    `json:"reserved"`
}

// HeaderEntry is one user header; HeaderField a typed value (6.4.2).
type HeaderEntry struct {
	Key   HeaderField `json:"key"`
	Value HeaderField `json:"value"`
}

type HeaderField struct {
	Kind  string `json:"kind"`
	Value Bytes  `json:"value"`
}

// UserHeadersOut is the entries sorted by key, or (Raw set) the raw block
// as one base64 string when it does not parse (4.16).
type UserHeadersOut struct {
	Entries []HeaderEntry
	Raw     []byte
}

func (u UserHeadersOut) MarshalJSON() ([]byte, error) {
	if u.Raw != nil {
		return json.Marshal(u.Raw)
	}
	if u.Entries == nil {
		return []byte("[]"), nil
	}
	return json.Marshal(u.Entries)
}

func (u *UserHeadersOut) UnmarshalJSON(b []byte) error {
	*u = UserHeadersOut{}
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		return nil
	case len(b) > 0 && b[0] == '"':
		var raw []byte
		if err := json.Unmarshal(b, &raw); err != nil {
			return err
		}
		u.Raw = raw
		return nil
	}
	return json.Unmarshal(b, &u.Entries)
}

// ErrorBody is the error object of 7.1.
type ErrorBody struct {
	ID     uint32  `json:"id"`
	Code   string  `json:"code"`
	Reason string  `json:"reason"`
	Field  *string `json:"field"`
}

// compressionName is the JSON name of a topic's compression byte.
func compressionName(c uint8) string {
	if c == 2 {
		return "gzip"
	}
	return "none"
}

var _ = wire.KindRaw
