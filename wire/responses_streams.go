package wire

// StreamResponse is one stream (client-plane.md 7.1): an element of the
// GetStreams list and the head of StreamDetails.
type StreamResponse struct {
	ID            uint32
	CreatedAt     uint64 // µs since epoch
	TopicsCount   uint32
	SizeBytes     uint64
	MessagesCount uint64
	Name          string
	// Options holds the keys the client set; encoded behind a u32 length in
	// ascending key order (10.3).
	Options Options
}

func (s StreamResponse) AppendTo(b []byte) []byte {
	b = AppendU32(b, s.ID)
	b = AppendU64(b, s.CreatedAt)
	b = AppendU32(b, s.TopicsCount)
	b = AppendU64(b, s.SizeBytes)
	b = AppendU64(b, s.MessagesCount)
	b = AppendName(b, s.Name)
	return AppendOptions32(b, s.Options)
}

func (s *StreamResponse) Decode(body []byte) error {
	return respDecode(s, body, "stream", true, (*StreamResponse).read)
}

func (s *StreamResponse) read(r *Reader) {
	s.ID = r.U32("stream id")
	s.CreatedAt = r.U64("stream created_at")
	s.TopicsCount = r.U32("stream topics_count")
	s.SizeBytes = r.U64("stream size_bytes")
	s.MessagesCount = r.U64("stream messages_count")
	s.Name = r.Name("stream name")
	s.Options = r.Options32("stream options")
}

// StreamDetails is GetStream's reply and the CreateStream payload (7.2):
// the stream followed by exactly topics_count topic headers. AppendTo
// writes len(Topics) as topics_count.
type StreamDetails struct {
	StreamResponse
	Topics []TopicHeader
}

func (s StreamDetails) AppendTo(b []byte) []byte {
	head := s.StreamResponse
	head.TopicsCount = uint32(len(s.Topics))
	b = head.AppendTo(b)
	for _, t := range s.Topics {
		b = t.AppendTo(b)
	}
	return b
}

func (s *StreamDetails) Decode(body []byte) error {
	return respDecode(s, body, "stream details", true, (*StreamDetails).read)
}

func (s *StreamDetails) read(r *Reader) {
	s.StreamResponse.read(r)
	n := r.respFitCount("stream topics_count", s.TopicsCount, minTopicHeaderSize)
	s.Topics = respReadN(r, n, (*TopicHeader).read)
}

// Streams is GetStreams' reply (8.6): stream responses to the end of the
// body, no count; an empty body is no streams.
type Streams []StreamResponse

func (s Streams) AppendTo(b []byte) []byte {
	for _, v := range s {
		b = v.AppendTo(b)
	}
	return b
}

func (s *Streams) Decode(body []byte) error {
	return respDecode(s, body, "streams", true, func(s *Streams, r *Reader) {
		*s = respReadToEnd(r, (*StreamResponse).read)
	})
}

// TopicHeader is one topic without its partitions (7.3).
type TopicHeader struct {
	ID              uint32
	CreatedAt       uint64 // µs since epoch
	PartitionsCount uint32
	// MessageExpiry is in µs; 0 is the server-default sentinel, u64::MAX never.
	MessageExpiry uint64
	// CompressionAlgorithm is 1 none, 2 gzip.
	CompressionAlgorithm uint8
	// MaxTopicSize is in bytes; 0 is the server-default sentinel, u64::MAX unlimited.
	MaxTopicSize  uint64
	SizeBytes     uint64
	MessagesCount uint64
	Name          string
	// ExplicitOptions are the keys the client set; DerivedOptions the keys
	// the server resolved from defaults at create. Explicit wins.
	ExplicitOptions Options
	DerivedOptions  Options
}

func (t TopicHeader) AppendTo(b []byte) []byte {
	b = AppendU32(b, t.ID)
	b = AppendU64(b, t.CreatedAt)
	b = AppendU32(b, t.PartitionsCount)
	b = AppendU64(b, t.MessageExpiry)
	b = AppendU8(b, t.CompressionAlgorithm)
	b = AppendU64(b, t.MaxTopicSize)
	b = AppendU64(b, t.SizeBytes)
	b = AppendU64(b, t.MessagesCount)
	b = AppendName(b, t.Name)
	b = AppendOptions32(b, t.ExplicitOptions)
	return AppendOptions32(b, t.DerivedOptions)
}

func (t *TopicHeader) Decode(body []byte) error {
	return respDecode(t, body, "topic", true, (*TopicHeader).read)
}

func (t *TopicHeader) read(r *Reader) {
	t.ID = r.U32("topic id")
	t.CreatedAt = r.U64("topic created_at")
	t.PartitionsCount = r.U32("topic partitions_count")
	t.MessageExpiry = r.U64("topic message_expiry")
	t.CompressionAlgorithm = r.U8("topic compression_algorithm")
	t.MaxTopicSize = r.U64("topic max_topic_size")
	t.SizeBytes = r.U64("topic size_bytes")
	t.MessagesCount = r.U64("topic messages_count")
	t.Name = r.Name("topic name")
	t.ExplicitOptions = r.Options32("topic explicit options")
	t.DerivedOptions = r.Options32("topic derived options")
}

// PartitionResponse is one partition (7.4, 40 bytes).
type PartitionResponse struct {
	ID            uint32
	CreatedAt     uint64 // µs since epoch
	SegmentsCount uint32
	CurrentOffset uint64 // newest message's offset; 0 when empty
	SizeBytes     uint64
	MessagesCount uint64
}

func (p PartitionResponse) AppendTo(b []byte) []byte {
	b = AppendU32(b, p.ID)
	b = AppendU64(b, p.CreatedAt)
	b = AppendU32(b, p.SegmentsCount)
	b = AppendU64(b, p.CurrentOffset)
	b = AppendU64(b, p.SizeBytes)
	return AppendU64(b, p.MessagesCount)
}

func (p *PartitionResponse) Decode(body []byte) error {
	return respDecode(p, body, "partition", true, (*PartitionResponse).read)
}

func (p *PartitionResponse) read(r *Reader) {
	p.ID = r.U32("partition id")
	p.CreatedAt = r.U64("partition created_at")
	p.SegmentsCount = r.U32("partition segments_count")
	p.CurrentOffset = r.U64("partition current_offset")
	p.SizeBytes = r.U64("partition size_bytes")
	p.MessagesCount = r.U64("partition messages_count")
}

// TopicDetails is GetTopic's reply and the CreateTopic payload (7.5): the
// header followed by exactly partitions_count partitions, ascending ids.
// AppendTo writes len(Partitions) as partitions_count.
type TopicDetails struct {
	TopicHeader
	Partitions []PartitionResponse
}

func (t TopicDetails) AppendTo(b []byte) []byte {
	head := t.TopicHeader
	head.PartitionsCount = uint32(len(t.Partitions))
	b = head.AppendTo(b)
	for _, p := range t.Partitions {
		b = p.AppendTo(b)
	}
	return b
}

func (t *TopicDetails) Decode(body []byte) error {
	return respDecode(t, body, "topic details", true, (*TopicDetails).read)
}

func (t *TopicDetails) read(r *Reader) {
	t.TopicHeader.read(r)
	n := r.respFitCount("topic partitions_count", t.PartitionsCount, partitionResponseSize)
	t.Partitions = respReadN(r, n, (*PartitionResponse).read)
}

// Topics is GetTopics' reply (8.7.1): unlike the other lists it has a
// leading u32 count. An unknown stream answers count 0.
type Topics []TopicHeader

func (t Topics) AppendTo(b []byte) []byte {
	b = AppendU32(b, uint32(len(t)))
	for _, v := range t {
		b = v.AppendTo(b)
	}
	return b
}

func (t *Topics) Decode(body []byte) error {
	return respDecode(t, body, "topics", true, func(t *Topics, r *Reader) {
		n := r.Count("topics count", minTopicHeaderSize)
		*t = respReadN(r, n, (*TopicHeader).read)
	})
}
