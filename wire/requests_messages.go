package wire

import "errors"

// Message requests (client-plane.md 8.4, 13.1; commands.md "Messages").

// PollMessages (100): [consumer][stream][topic][partition: 5 bytes]
// [strategy: 9 bytes][count u32][auto_commit bool8] (8.4.1).
type PollMessages struct {
	Consumer   Consumer
	Stream     Identifier
	Topic      Identifier
	Partition  OptionalPartition
	Strategy   PollingStrategy
	Count      uint32
	AutoCommit bool
}

func (PollMessages) Code() CommandCode { return CodePollMessages }

func (x PollMessages) AppendTo(b []byte) []byte {
	b = AppendConsumer(b, x.Consumer)
	b = AppendIdentifier(b, x.Stream)
	b = AppendIdentifier(b, x.Topic)
	b = AppendOptionalPartition(b, x.Partition)
	b = AppendPollingStrategy(b, x.Strategy)
	b = AppendU32(b, x.Count)
	return AppendBool8(b, x.AutoCommit)
}

func (x *PollMessages) Decode(body []byte) error {
	r := Reader{b: body}
	*x = PollMessages{
		Consumer:   r.Consumer("consumer"),
		Stream:     r.Identifier("stream"),
		Topic:      r.Identifier("topic"),
		Partition:  r.OptionalPartition("partition"),
		Strategy:   r.PollingStrategy("strategy"),
		Count:      r.U32("count"),
		AutoCommit: r.Bool8("auto_commit"),
	}
	return r.err
}

func (x PollMessages) Validate() error {
	return reqFirstErr(reqCheckConsumer(x.Consumer), x.Stream.Validate(), x.Topic.Validate(),
		reqCheckStrategy(x.Strategy))
}

// ErrSendMetadata matches the SendMessages decode failures of 13.1 steps
// 1-2 that the server answers with S 20 (ResourceNotFound): a body too short
// for metadata_length, a metadata_length past the end of the body, or a
// metadata section that does not decode within metadata_length bytes. A
// metadata_length larger than the section it holds is a layout error that
// does not match ErrSendMetadata (the compatible answer is S 3). Both match
// ErrMalformed.
var ErrSendMetadata = errors.New("wire: SendMessages metadata malformed")

// sendMetadataError carries the decode failure and matches ErrSendMetadata.
type sendMetadataError struct{ err error }

func (e *sendMetadataError) Error() string   { return e.err.Error() }
func (e *sendMetadataError) Unwrap() []error { return []error{ErrSendMetadata, e.err} }

// SendMessages (101, operation 160): [metadata_length u32][stream][topic]
// [partitioning][messages_count u32][batch] (8.4.2). metadata_length counts
// stream through messages_count and is computed by AppendTo.
//
// Decode implements 13.1 steps 1-2 only: Batch aliases the input body (no
// copy) and is not validated here; batch admission (steps 3-6) is the batch
// codec's. Numeric identifiers and PartitionId partitioning decode without
// allocating.
type SendMessages struct {
	Stream        Identifier
	Topic         Identifier
	Partitioning  Partitioning
	MessagesCount uint32
	Batch         []byte
}

func (SendMessages) Code() CommandCode { return CodeSendMessages }

func (x SendMessages) AppendTo(b []byte) []byte {
	b = AppendSendMessagesHeader(b, x.Stream, x.Topic, x.Partitioning, x.MessagesCount)
	return append(b, x.Batch...)
}

// AppendSendMessagesHeader appends everything of a SendMessages body before
// the batch, metadata_length included, so a producer can append the batch
// right after it without an intermediate copy.
func AppendSendMessagesHeader(b []byte, stream, topic Identifier, p Partitioning, count uint32) []byte {
	n := stream.EncodedLen() + topic.EncodedLen() + p.EncodedLen() + 4
	b = AppendU32(b, uint32(n))
	b = AppendIdentifier(b, stream)
	b = AppendIdentifier(b, topic)
	b = AppendPartitioning(b, p)
	return AppendU32(b, count)
}

func (x *SendMessages) Decode(body []byte) error {
	r := Reader{b: body}
	n := r.U32("metadata_length")
	if r.err == nil && uint64(n) > uint64(r.Len()) {
		r.Fail("metadata_length", "exceeds the body")
	}
	if r.err != nil {
		return &sendMetadataError{r.err}
	}
	end := 4 + int(n)
	m := Reader{b: body[4:end]}
	stream := m.Identifier("stream")
	topic := m.Identifier("topic")
	p := m.Partitioning("partitioning")
	count := m.U32("messages_count")
	if m.err != nil {
		return &sendMetadataError{m.err}
	}
	if m.Len() != 0 {
		return decodeErr("metadata_length", "larger than the metadata section")
	}
	*x = SendMessages{Stream: stream, Topic: topic, Partitioning: p, MessagesCount: count, Batch: body[end:]}
	return nil
}

// Validate checks the metadata section; the batch is the batch codec's.
func (x SendMessages) Validate() error {
	return reqFirstErr(x.Stream.Validate(), x.Topic.Validate(), x.Partitioning.Validate())
}

// FlushUnsavedBuffer (102): [stream][topic][partition_id u32][fsync bool8].
// Always answered S 5 (8.4.3); the codec exists for completeness.
type FlushUnsavedBuffer struct {
	Stream      Identifier
	Topic       Identifier
	PartitionID uint32
	Fsync       bool
}

func (FlushUnsavedBuffer) Code() CommandCode { return CodeFlushUnsavedBuffer }

func (x FlushUnsavedBuffer) AppendTo(b []byte) []byte {
	b = AppendIdentifier(b, x.Stream)
	b = AppendIdentifier(b, x.Topic)
	b = AppendU32(b, x.PartitionID)
	return AppendBool8(b, x.Fsync)
}

func (x *FlushUnsavedBuffer) Decode(body []byte) error {
	r := NewReader(body)
	*x = FlushUnsavedBuffer{
		Stream:      r.Identifier("stream"),
		Topic:       r.Identifier("topic"),
		PartitionID: r.U32("partition_id"),
		Fsync:       r.Bool8("fsync"),
	}
	return r.Err()
}

func (x FlushUnsavedBuffer) Validate() error {
	return reqFirstErr(x.Stream.Validate(), x.Topic.Validate())
}
