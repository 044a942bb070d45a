package jsonmodel

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"iggynode/wire"
)

// Request bodies (http.md 3, 5, 6). Required fields are pointers: a
// decoder reports a missing one as a model error (422).

type LoginUser struct {
	Username *string `json:"username"`
	Password *string `json:"password"`
	Version  *string `json:"version"`
	Context  *string `json:"context"`
}

// Token is the body of the PAT login and of the refresh (3.3, 3.6).
type Token struct {
	Token *string `json:"token"`
}

type CreateStream struct {
	Name *string `json:"name"`
}

type UpdateStream struct {
	Name    *string           `json:"name"`
	Options map[string]string `json:"options,omitempty"`
}

type CreateTopic struct {
	Name                 *string `json:"name"`
	PartitionsCount      *uint32 `json:"partitions_count"`
	CompressionAlgorithm *string `json:"compression_algorithm"`
	MessageExpiry        *uint64 `json:"message_expiry"`
	MaxTopicSize         *uint64 `json:"max_topic_size"`
	// ReplicationFactor is the field older Iggy servers took (and the Rust
	// SDK still sends, 0 when unset): the replication_factor extension
	// option (metadata/placement.go) when above 0.
	ReplicationFactor *uint8            `json:"replication_factor,omitempty"`
	Options           map[string]string `json:"options,omitempty"`
}

type UpdateTopic struct {
	Name                 *string           `json:"name"`
	CompressionAlgorithm *string           `json:"compression_algorithm"`
	MessageExpiry        *uint64           `json:"message_expiry"`
	MaxTopicSize         *uint64           `json:"max_topic_size"`
	Options              map[string]string `json:"options,omitempty"`
}

type CreatePartitions struct {
	PartitionsCount *uint32 `json:"partitions_count"`
}

type CreateConsumerGroup struct {
	Name *string `json:"name"`
}

type CreateUser struct {
	Username    *string      `json:"username"`
	Password    *string      `json:"password"`
	Status      *string      `json:"status"`
	Permissions *Permissions `json:"permissions"`
}

type UpdateUser struct {
	Username *string           `json:"username"`
	Status   *string           `json:"status"`
	Options  map[string]string `json:"options,omitempty"`
}

type ChangePassword struct {
	CurrentPassword *string `json:"current_password"`
	NewPassword     *string `json:"new_password"`
}

type UpdatePermissions struct {
	Permissions *Permissions `json:"permissions"`
}

type CreatePersonalAccessToken struct {
	Name   *string `json:"name"`
	Expiry *uint64 `json:"expiry"`
}

// StoreConsumerOffset is the PUT .../consumer-offsets body (5.10.2).
type StoreConsumerOffset struct {
	ConsumerID  *ConsumerID `json:"consumer_id"`
	PartitionID *uint32     `json:"partition_id"`
	Offset      *uint64     `json:"offset"`
}

// ConsumerID is a u32 number or a string (numeric-looking strings are
// numeric ids, others names).
type ConsumerID struct{ wire.Identifier }

func (c ConsumerID) MarshalJSON() ([]byte, error) {
	if c.IsNumeric() {
		return []byte(strconv.FormatUint(uint64(c.Num), 10)), nil
	}
	return json.Marshal(c.Str)
}

func (c *ConsumerID) UnmarshalJSON(b []byte) error {
	var n uint32
	if err := json.Unmarshal(b, &n); err == nil {
		c.Identifier = wire.ID(n)
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("consumer_id must be a u32 or a string")
	}
	id, err := ParseIdentifier(s)
	if err != nil {
		return err
	}
	c.Identifier = id
	return nil
}

type Snapshot struct {
	Compression   *string  `json:"compression"`
	SnapshotTypes []string `json:"snapshot_types"`
}

// SendMessages is the send body (6.1); its top level takes exactly these
// two keys.
type SendMessages struct {
	Partitioning *PartitioningIn `json:"partitioning"`
	Messages     []MessageIn     `json:"messages"`
}

type PartitioningIn struct {
	Kind  *string `json:"kind"`
	Value Bytes   `json:"value"`
}

// MessageIn is one message to send: id absent or null means "mint one".
type MessageIn struct {
	ID          *MessageIDIn   `json:"id,omitempty"`
	Payload     Bytes          `json:"payload"`
	UserHeaders *UserHeadersIn `json:"user_headers,omitempty"`
}

// MessageIDIn is a message id on input: it reads every form of 6.3.1 and
// writes a decimal string, the one form that carries all 128 bits.
type MessageIDIn MessageID

func (m MessageIDIn) MarshalJSON() ([]byte, error) {
	return json.Marshal(MessageID(m).big().String())
}

// UnmarshalJSON takes numbers up to u64::MAX only: larger ids must be
// strings (6.3.1).
func (m *MessageIDIn) UnmarshalJSON(b []byte) error {
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] != '"' {
		n, err := strconv.ParseUint(string(t), 10, 64)
		if err != nil {
			return fmt.Errorf("message id %s must be a non-negative integer up to u64::MAX or a string", t)
		}
		*m = MessageIDIn{Lo: n}
		return nil
	}
	return (*MessageID)(m).UnmarshalJSON(b)
}

// UserHeadersIn is the array form or one base64 string of an encoded
// header block (6.4.1).
type UserHeadersIn struct {
	Entries []HeaderEntry
	Raw     []byte
	IsRaw   bool
}

func (u UserHeadersIn) MarshalJSON() ([]byte, error) {
	if u.IsRaw {
		return json.Marshal(u.Raw)
	}
	if u.Entries == nil {
		return []byte("[]"), nil
	}
	return json.Marshal(u.Entries)
}

func (u *UserHeadersIn) UnmarshalJSON(b []byte) error {
	var o UserHeadersOut
	if err := o.UnmarshalJSON(b); err != nil {
		return err
	}
	*u = UserHeadersIn{Entries: o.Entries, Raw: o.Raw, IsRaw: o.Raw != nil}
	return nil
}

// Decode decodes a request body into v (one of the types above) and
// checks its required fields; every failure is a *BodyError.
func Decode(body []byte, v any) error {
	_, strict := v.(*SendMessages)
	if err := decode(body, v, strict); err != nil {
		return err
	}
	if r, ok := v.(interface{ required() error }); ok {
		if err := r.required(); err != nil {
			return &BodyError{Err: err}
		}
	}
	return nil
}

func need(fields ...any) error {
	for i := 0; i+1 < len(fields); i += 2 {
		missing := false
		switch p := fields[i+1].(type) {
		case *string:
			missing = p == nil
		case *uint32:
			missing = p == nil
		case *uint64:
			missing = p == nil
		case *PartitioningIn:
			missing = p == nil
		case []MessageIn:
			missing = p == nil
		case []string:
			missing = p == nil
		}
		if missing {
			return fmt.Errorf("missing field `%s`", fields[i])
		}
	}
	return nil
}

func (x *LoginUser) required() error { return need("username", x.Username, "password", x.Password) }
func (x *Token) required() error     { return need("token", x.Token) }
func (x *CreateStream) required() error {
	return need("name", x.Name)
}
func (x *UpdateStream) required() error        { return need("name", x.Name) }
func (x *CreateTopic) required() error         { return need("name", x.Name) }
func (x *UpdateTopic) required() error         { return need("name", x.Name) }
func (x *CreatePartitions) required() error    { return need("partitions_count", x.PartitionsCount) }
func (x *CreateConsumerGroup) required() error { return need("name", x.Name) }
func (x *ChangePassword) required() error {
	return need("current_password", x.CurrentPassword, "new_password", x.NewPassword)
}
func (x *CreatePersonalAccessToken) required() error { return need("name", x.Name, "expiry", x.Expiry) }
func (x *StoreConsumerOffset) required() error       { return need("offset", x.Offset) }
func (x *Snapshot) required() error {
	return need("compression", x.Compression, "snapshot_types", x.SnapshotTypes)
}

func (x *CreateUser) required() error {
	if err := need("username", x.Username, "password", x.Password, "status", x.Status); err != nil {
		return err
	}
	if _, err := ParseStatus(*x.Status); err != nil {
		return err
	}
	return x.Permissions.check()
}

func (x *UpdateUser) required() error {
	if x.Status != nil {
		if _, err := ParseStatus(*x.Status); err != nil {
			return err
		}
	}
	return nil
}

func (x *UpdatePermissions) required() error { return x.Permissions.check() }

func (x *SendMessages) required() error {
	if err := need("partitioning", x.Partitioning, "messages", x.Messages); err != nil {
		return err
	}
	if x.Partitioning.Kind == nil {
		return fmt.Errorf("missing field `kind`")
	}
	switch *x.Partitioning.Kind {
	case "balanced", "partition_id", "messages_key":
	default:
		return fmt.Errorf("unknown partitioning kind %q", *x.Partitioning.Kind)
	}
	for i, m := range x.Messages {
		if m.Payload == nil {
			return fmt.Errorf("message %d: missing field `payload`", i)
		}
		if len(m.Payload) == 0 || len(m.Payload) > 64_000_000 {
			return fmt.Errorf("message %d: payload of %d bytes (InvalidMessagePayloadLength)", i, len(m.Payload))
		}
		if m.UserHeaders != nil {
			if _, err := m.UserHeaders.headers(); err != nil {
				return fmt.Errorf("message %d: %w", i, err)
			}
		}
	}
	return nil
}

// ParseStatus reads "active" / "inactive".
func ParseStatus(s string) (wire.UserStatus, error) {
	switch s {
	case "active":
		return wire.UserActive, nil
	case "inactive":
		return wire.UserInactive, nil
	}
	return 0, fmt.Errorf("unknown user status %q", s)
}

func (p *Permissions) check() error {
	if p == nil {
		return nil
	}
	g := p.Global
	for _, f := range []*bool{g.ManageServers, g.ReadServers, g.ManageUsers, g.ReadUsers, g.ManageStreams, g.ReadStreams,
		g.ManageTopics, g.ReadTopics, g.PollMessages, g.SendMessages} {
		if f == nil {
			return fmt.Errorf("global permissions: a flag is missing")
		}
	}
	for sid, s := range p.Streams {
		for _, f := range []*bool{s.ManageStream, s.ReadStream, s.ManageTopics, s.ReadTopics, s.PollMessages, s.SendMessages} {
			if f == nil {
				return fmt.Errorf("stream %d permissions: a flag is missing", sid)
			}
		}
		for tid, t := range s.Topics {
			for _, f := range []*bool{t.ManageTopic, t.ReadTopic, t.PollMessages, t.SendMessages} {
				if f == nil {
					return fmt.Errorf("topic %d permissions: a flag is missing", tid)
				}
			}
		}
	}
	return nil
}

func v(b *bool) bool { return b != nil && *b }

// ToWire converts a checked permission set (nil stays nil).
func (p *Permissions) ToWire() *wire.Permissions {
	if p == nil {
		return nil
	}
	g := p.Global
	out := &wire.Permissions{Global: wire.GlobalPermissions{ManageServers: v(g.ManageServers), ReadServers: v(g.ReadServers),
		ManageUsers: v(g.ManageUsers), ReadUsers: v(g.ReadUsers), ManageStreams: v(g.ManageStreams), ReadStreams: v(g.ReadStreams),
		ManageTopics: v(g.ManageTopics), ReadTopics: v(g.ReadTopics), PollMessages: v(g.PollMessages), SendMessages: v(g.SendMessages)}}
	for sid, s := range p.Streams {
		sp := wire.StreamPermissions{ManageStream: v(s.ManageStream), ReadStream: v(s.ReadStream), ManageTopics: v(s.ManageTopics),
			ReadTopics: v(s.ReadTopics), PollMessages: v(s.PollMessages), SendMessages: v(s.SendMessages)}
		for tid, t := range s.Topics {
			if sp.Topics == nil {
				sp.Topics = map[uint32]wire.TopicPermissions{}
			}
			sp.Topics[tid] = wire.TopicPermissions{ManageTopic: v(t.ManageTopic), ReadTopic: v(t.ReadTopic),
				PollMessages: v(t.PollMessages), SendMessages: v(t.SendMessages)}
		}
		if out.Streams == nil {
			out.Streams = map[uint32]wire.StreamPermissions{}
		}
		out.Streams[sid] = sp
	}
	return out
}

// StringOptions converts a flat string map into an options block of String
// values in ascending key order.
func StringOptions(m map[string]string) wire.Options {
	var out wire.Options
	for k, val := range m {
		out = append(out, wire.KeyValue{Key: k, Kind: wire.KindString, Value: []byte(val)})
	}
	sortOptions(out)
	return out
}

func sortOptions(o wire.Options) {
	for i := 1; i < len(o); i++ {
		for j := i; j > 0 && o[j].Key < o[j-1].Key; j-- {
			o[j], o[j-1] = o[j-1], o[j]
		}
	}
}

func setOption(o wire.Options, key string, kind wire.HeaderKind, val []byte) wire.Options {
	for i := range o {
		if o[i].Key == key {
			o[i].Kind, o[i].Value = kind, val
			return o
		}
	}
	o = append(o, wire.KeyValue{Key: key, Kind: kind, Value: val})
	sortOptions(o)
	return o
}

// topicOptions applies 5.6.2: the typed fields become options only when
// set, overriding a same-named entry of options.
func topicOptions(compression *string, expiry, maxSize *uint64, options map[string]string) wire.Options {
	o := StringOptions(options)
	if compression != nil && !strings.EqualFold(*compression, "none") {
		o = setOption(o, wire.OptCompressionAlgorithm, wire.KindString, []byte(strings.ToLower(*compression)))
	}
	if expiry != nil && *expiry != 0 {
		o = setOption(o, wire.OptMessageExpiry, wire.KindUint64, binary.LittleEndian.AppendUint64(nil, *expiry))
	}
	if maxSize != nil && *maxSize != 0 {
		o = setOption(o, wire.OptMaxTopicSize, wire.KindUint64, binary.LittleEndian.AppendUint64(nil, *maxSize))
	}
	return o
}

// ToWire builds the binary CreateTopic for stream.
func (x *CreateTopic) ToWire(stream wire.Identifier) wire.CreateTopic {
	var count uint32
	if x.PartitionsCount != nil {
		count = *x.PartitionsCount
	}
	o := topicOptions(x.CompressionAlgorithm, x.MessageExpiry, x.MaxTopicSize, x.Options)
	if x.ReplicationFactor != nil && *x.ReplicationFactor > 0 {
		o = setOption(o, wire.OptReplicationFactor, wire.KindUint8, []byte{*x.ReplicationFactor})
	}
	return wire.CreateTopic{Stream: stream, PartitionsCount: count, Name: *x.Name, Options: o}
}

// ToWire builds the binary UpdateTopic.
func (x *UpdateTopic) ToWire(stream, topic wire.Identifier) wire.UpdateTopic {
	return wire.UpdateTopic{Stream: stream, Topic: topic, Name: *x.Name,
		Options: topicOptions(x.CompressionAlgorithm, x.MessageExpiry, x.MaxTopicSize, x.Options)}
}

// headers builds the header block of one message (6.4).
func (u *UserHeadersIn) headers() (wire.UserHeaders, error) {
	if u == nil {
		return nil, nil
	}
	if u.IsRaw {
		hs, err := wire.DecodeUserHeaders(u.Raw)
		if err != nil {
			return nil, fmt.Errorf("user_headers: %w", err)
		}
		return hs, nil
	}
	var hs wire.UserHeaders
	for _, e := range u.Entries {
		if e.Key.Kind != "string" && e.Key.Kind != "raw" {
			return nil, fmt.Errorf("header key kind %q: keys are strings", e.Key.Kind)
		}
		if !utf8.Valid(e.Key.Value) || len(e.Key.Value) == 0 || len(e.Key.Value) > 255 {
			return nil, fmt.Errorf("header key must be 1..=255 bytes of UTF-8")
		}
		kind, ok := KindByName(e.Value.Kind)
		if !ok {
			return nil, fmt.Errorf("unknown header kind %q", e.Value.Kind)
		}
		if len(e.Value.Value) == 0 || len(e.Value.Value) > 255 {
			return nil, fmt.Errorf("header value must be 1..=255 bytes")
		}
		kv := wire.KeyValue{Key: string(e.Key.Value), Kind: kind, Value: e.Value.Value}
		replaced := false
		for i := range hs {
			if hs[i].Key == kv.Key {
				hs[i], replaced = kv, true // a repeated key keeps the last value
			}
		}
		if !replaced {
			hs = append(hs, kv)
		}
	}
	if hs.EncodedLen() > wire.MaxUserHeadersSize {
		return nil, fmt.Errorf("user headers exceed %d bytes", wire.MaxUserHeadersSize)
	}
	return hs, nil
}

// KindByName maps a header kind name (6.4.2) to its code.
func KindByName(name string) (wire.HeaderKind, bool) {
	for k := wire.KindRaw; k <= wire.KindFloat64; k++ {
		if k.String() == name {
			return k, true
		}
	}
	return 0, false
}

// ToWire builds the partitioning and the messages of a checked send body.
// Ids of 0 are minted (a random UUID v4 read little-endian, 6.3.2);
// origin timestamps are nowUs. It fails with the IggyError code of 6.1
// step 3-4 (4028, 4009, 3).
func (x *SendMessages) ToWire(nowUs uint64) (wire.Partitioning, []wire.Message, wire.ErrorCode) {
	var p wire.Partitioning
	val := []byte(x.Partitioning.Value)
	switch *x.Partitioning.Kind {
	case "balanced":
		if len(val) > 255 {
			return p, nil, wire.ErrInvalidKeyValueLength
		}
		p = wire.Balanced()
	case "partition_id":
		if len(val) == 0 || len(val) > 255 {
			return p, nil, wire.ErrInvalidKeyValueLength
		}
		if len(val) < 4 {
			return p, nil, wire.ErrInvalidCommand
		}
		p = wire.PartitionID(binary.LittleEndian.Uint32(val))
	case "messages_key":
		if len(val) == 0 || len(val) > 255 {
			return p, nil, wire.ErrInvalidKeyValueLength
		}
		p = wire.MessagesKey(append([]byte{}, val...))
	}
	if len(x.Messages) == 0 {
		return p, nil, wire.ErrInvalidMessagesCount
	}
	msgs := make([]wire.Message, 0, len(x.Messages))
	for _, m := range x.Messages {
		var id wire.U128
		if m.ID != nil {
			id = wire.U128(*m.ID)
		}
		if id.IsZero() {
			id = NewMessageID()
		}
		hs, _ := m.UserHeaders.headers() // checked by Decode
		msgs = append(msgs, wire.Message{ID: id, OriginTimestamp: nowUs, Payload: m.Payload, Headers: hs})
	}
	return p, msgs, 0
}

// NewMessageID is a random UUID v4 read as a little-endian u128.
func NewMessageID() wire.U128 {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return wire.U128{Lo: binary.LittleEndian.Uint64(b[:8]), Hi: binary.LittleEndian.Uint64(b[8:])}
}

// ParseIdentifier reads a path segment or query value (2.2.2): a u32 in
// decimal (optional leading +, leading zeros) is numeric; anything else of
// 1..=255 bytes is a name; longer is InvalidIdentifier (6).
func ParseIdentifier(s string) (wire.Identifier, error) {
	digits := strings.TrimPrefix(s, "+")
	if digits != "" && strings.Trim(digits, "0123456789") == "" {
		if n, err := strconv.ParseUint(digits, 10, 32); err == nil {
			return wire.ID(uint32(n)), nil
		}
	}
	if len(s) == 0 || len(s) > 255 || !utf8.ValidString(s) {
		return wire.Identifier{}, wire.ErrInvalidIdentifier
	}
	return wire.Named(s), nil
}

// SnapshotCompressions and SnapshotTypes name the snapshot enums (5.1.4)
// in their code order (CP 8.1.3: compression 1.., types 1..).
var SnapshotCompressions = []string{"Stored", "Deflated", "Bzip2", "Zstd", "Lzma", "Xz"}
var SnapshotTypes = []string{"FilesystemOverview", "ProcessList", "ResourceUsage", "Test", "ServerLogs", "ServerConfig", "All"}

// ToWire maps the snapshot body to the binary request; an unknown name is
// a model error.
func (x *Snapshot) ToWire() (wire.GetSnapshot, error) {
	out := wire.GetSnapshot{}
	c := indexOf(SnapshotCompressions, *x.Compression)
	if c < 0 {
		return out, modelErr("unknown compression %q", *x.Compression)
	}
	out.Compression = uint8(c + 1)
	for _, t := range x.SnapshotTypes {
		i := indexOf(SnapshotTypes, t)
		if i < 0 {
			return out, modelErr("unknown snapshot type %q", t)
		}
		code := uint8(i + 1)
		if t == "All" {
			code = 100
		}
		out.Types = append(out.Types, code)
	}
	return out, nil
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}
