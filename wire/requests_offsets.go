package wire

// Consumer offset requests (client-plane.md 8.5; commands.md "Consumer
// offsets").

// GetConsumerOffset (120): [consumer][stream][topic][partition: 5 bytes].
// An absent partition reads partition 0 (8.5.1).
type GetConsumerOffset struct {
	Consumer  Consumer
	Stream    Identifier
	Topic     Identifier
	Partition OptionalPartition
}

func (GetConsumerOffset) Code() CommandCode { return CodeGetConsumerOffset }

func (x GetConsumerOffset) AppendTo(b []byte) []byte {
	return reqAppendOffsetTarget(b, x.Consumer, x.Stream, x.Topic, x.Partition)
}

func (x *GetConsumerOffset) Decode(body []byte) error {
	r := NewReader(body)
	*x = GetConsumerOffset{
		Consumer:  r.Consumer("consumer"),
		Stream:    r.Identifier("stream"),
		Topic:     r.Identifier("topic"),
		Partition: r.OptionalPartition("partition"),
	}
	return r.Err()
}

func (x GetConsumerOffset) Validate() error {
	return reqCheckOffsetTarget(x.Consumer, x.Stream, x.Topic, 0)
}

// StoreConsumerOffset (121, operation 161): [consumer][stream][topic]
// [partition: 5 bytes][offset u64][ack u8]. The ack byte is mandatory and
// must be 0 or 1 (commands.md; 2.7). An absent partition is not defaulted:
// the server answers S 20 (8.5.2).
type StoreConsumerOffset struct {
	Consumer  Consumer
	Stream    Identifier
	Topic     Identifier
	Partition OptionalPartition
	Offset    uint64
	Ack       AckLevel
}

func (StoreConsumerOffset) Code() CommandCode { return CodeStoreConsumerOffset }

func (x StoreConsumerOffset) AppendTo(b []byte) []byte {
	b = reqAppendOffsetTarget(b, x.Consumer, x.Stream, x.Topic, x.Partition)
	return append(AppendU64(b, x.Offset), byte(x.Ack))
}

func (x *StoreConsumerOffset) Decode(body []byte) error {
	r := NewReader(body)
	*x = StoreConsumerOffset{
		Consumer:  r.Consumer("consumer"),
		Stream:    r.Identifier("stream"),
		Topic:     r.Identifier("topic"),
		Partition: r.OptionalPartition("partition"),
		Offset:    r.U64("offset"),
		Ack:       r.AckLevel("ack"),
	}
	return r.Err()
}

func (x StoreConsumerOffset) Validate() error {
	return reqCheckOffsetTarget(x.Consumer, x.Stream, x.Topic, x.Ack)
}

// DeleteConsumerOffset (122, operation 162): [consumer][stream][topic]
// [partition: 5 bytes][ack u8], the ack byte mandatory (8.5.3).
type DeleteConsumerOffset struct {
	Consumer  Consumer
	Stream    Identifier
	Topic     Identifier
	Partition OptionalPartition
	Ack       AckLevel
}

func (DeleteConsumerOffset) Code() CommandCode { return CodeDeleteConsumerOffset }

func (x DeleteConsumerOffset) AppendTo(b []byte) []byte {
	b = reqAppendOffsetTarget(b, x.Consumer, x.Stream, x.Topic, x.Partition)
	return append(b, byte(x.Ack))
}

func (x *DeleteConsumerOffset) Decode(body []byte) error {
	r := NewReader(body)
	*x = DeleteConsumerOffset{
		Consumer:  r.Consumer("consumer"),
		Stream:    r.Identifier("stream"),
		Topic:     r.Identifier("topic"),
		Partition: r.OptionalPartition("partition"),
		Ack:       r.AckLevel("ack"),
	}
	return r.Err()
}

func (x DeleteConsumerOffset) Validate() error {
	return reqCheckOffsetTarget(x.Consumer, x.Stream, x.Topic, x.Ack)
}

func reqAppendOffsetTarget(b []byte, c Consumer, stream, topic Identifier, p OptionalPartition) []byte {
	b = AppendConsumer(b, c)
	b = AppendIdentifier(b, stream)
	b = AppendIdentifier(b, topic)
	return AppendOptionalPartition(b, p)
}

func reqCheckOffsetTarget(c Consumer, stream, topic Identifier, ack AckLevel) error {
	return reqFirstErr(reqCheckConsumer(c), stream.Validate(), topic.Validate(), reqCheckAck(ack))
}
