package wire

// Topic requests (client-plane.md 8.7; commands.md "Topics").

// GetTopic (300): [stream][topic].
type GetTopic struct{ Stream, Topic Identifier }

func (GetTopic) Code() CommandCode { return CodeGetTopic }

func (x GetTopic) AppendTo(b []byte) []byte { return reqAppendIDs(b, x.Stream, x.Topic) }

func (x *GetTopic) Decode(body []byte) error {
	r := NewReader(body)
	*x = GetTopic{Stream: r.Identifier("stream"), Topic: r.Identifier("topic")}
	return r.Err()
}

func (x GetTopic) Validate() error { return reqCheckIDs(x.Stream, x.Topic) }

// GetTopics (301): [stream].
type GetTopics struct{ Stream Identifier }

func (GetTopics) Code() CommandCode { return CodeGetTopics }

func (x GetTopics) AppendTo(b []byte) []byte { return AppendIdentifier(b, x.Stream) }

func (x *GetTopics) Decode(body []byte) error {
	r := NewReader(body)
	x.Stream = r.Identifier("stream")
	return r.Err()
}

func (x GetTopics) Validate() error { return x.Stream.Validate() }

// CreateTopic (302, operation 132, reply operation 64):
// [stream][partitions_count u32][name Name][OptBlock] (8.7.2). Every topic
// setting rides the options block; which keys and values are accepted is the
// server's check (10.4), the codec only applies 10.1.
type CreateTopic struct {
	Stream          Identifier
	PartitionsCount uint32
	Name            string
	Options         Options
}

func (CreateTopic) Code() CommandCode { return CodeCreateTopic }

func (x CreateTopic) AppendTo(b []byte) []byte {
	b = AppendIdentifier(b, x.Stream)
	b = AppendU32(b, x.PartitionsCount)
	return AppendOptions(AppendName(b, x.Name), x.Options)
}

func (x *CreateTopic) Decode(body []byte) error {
	r := NewReader(body)
	v := CreateTopic{
		Stream:          r.Identifier("stream"),
		PartitionsCount: r.U32("partitions_count"),
		Name:            r.Name("name"),
	}
	if err := reqDecodeOptions(r, &v.Options); err != nil {
		return err
	}
	*x = v
	return nil
}

func (x CreateTopic) Validate() error {
	return reqFirstErr(x.Stream.Validate(), reqCheckName("name", x.Name), x.Options.Validate())
}

// DeleteTopic (303, operation 134): [stream][topic].
type DeleteTopic struct{ Stream, Topic Identifier }

func (DeleteTopic) Code() CommandCode { return CodeDeleteTopic }

func (x DeleteTopic) AppendTo(b []byte) []byte { return reqAppendIDs(b, x.Stream, x.Topic) }

func (x *DeleteTopic) Decode(body []byte) error {
	r := NewReader(body)
	*x = DeleteTopic{Stream: r.Identifier("stream"), Topic: r.Identifier("topic")}
	return r.Err()
}

func (x DeleteTopic) Validate() error { return reqCheckIDs(x.Stream, x.Topic) }

// UpdateTopic (304, operation 133): [stream][topic][name Name][OptBlock]
// (8.7.3). The name is always replaced; options patch.
type UpdateTopic struct {
	Stream  Identifier
	Topic   Identifier
	Name    string
	Options Options
}

func (UpdateTopic) Code() CommandCode { return CodeUpdateTopic }

func (x UpdateTopic) AppendTo(b []byte) []byte {
	b = reqAppendIDs(b, x.Stream, x.Topic)
	return AppendOptions(AppendName(b, x.Name), x.Options)
}

func (x *UpdateTopic) Decode(body []byte) error {
	r := NewReader(body)
	v := UpdateTopic{
		Stream: r.Identifier("stream"),
		Topic:  r.Identifier("topic"),
		Name:   r.Name("name"),
	}
	if err := reqDecodeOptions(r, &v.Options); err != nil {
		return err
	}
	*x = v
	return nil
}

func (x UpdateTopic) Validate() error {
	return reqFirstErr(reqCheckIDs(x.Stream, x.Topic), reqCheckName("name", x.Name), x.Options.Validate())
}

// PurgeTopic (305, operation 135): [stream][topic].
type PurgeTopic struct{ Stream, Topic Identifier }

func (PurgeTopic) Code() CommandCode { return CodePurgeTopic }

func (x PurgeTopic) AppendTo(b []byte) []byte { return reqAppendIDs(b, x.Stream, x.Topic) }

func (x *PurgeTopic) Decode(body []byte) error {
	r := NewReader(body)
	*x = PurgeTopic{Stream: r.Identifier("stream"), Topic: r.Identifier("topic")}
	return r.Err()
}

func (x PurgeTopic) Validate() error { return reqCheckIDs(x.Stream, x.Topic) }

// CreateTopicWithAssignments is the replica-internal body of operation 64,
// the primary's rewrite of a CreateTopic (client-plane.md 6;
// replica-plane.md 13.1):
// [req_len u32][CreateTopic body][derived_len u32][derived options TLV]
// [count u32][count x {partition_id u32, consensus_group_id u64}].
// Request keeps the embedded CreateTopic body as bytes (decode it with
// CreateTopic()); Derived holds every catalogue key the client did not set,
// resolved to its default. Internal bodies must be consumed exactly.
type CreateTopicWithAssignments struct {
	Request     []byte
	Derived     Options
	Assignments []PartitionAssignment
}

// Operation is the internal operation the body is prepared under.
func (CreateTopicWithAssignments) Operation() Operation { return OpCreateTopicWithAssignments }

func (x CreateTopicWithAssignments) AppendTo(b []byte) []byte {
	b = AppendU32(b, uint32(len(x.Request)))
	b = append(b, x.Request...)
	b = AppendU32(b, uint32(x.Derived.EncodedLen()))
	b = AppendOptions(b, x.Derived)
	return reqAppendAssignments(b, x.Assignments)
}

func (x *CreateTopicWithAssignments) Decode(body []byte) error {
	r := NewReader(body)
	req := reqReadBlock(r, "request")
	derivedBytes := reqReadBlock(r, "derived")
	if err := r.Err(); err != nil {
		return err
	}
	derived, err := DecodeOptions(derivedBytes)
	if err != nil {
		return err
	}
	assignments, err := reqReadAssignments(r)
	if err != nil {
		return err
	}
	*x = CreateTopicWithAssignments{
		Request:     append([]byte(nil), req...),
		Derived:     derived,
		Assignments: assignments,
	}
	return nil
}

// CreateTopic decodes the embedded CreateTopic body.
func (x CreateTopicWithAssignments) CreateTopic() (CreateTopic, error) {
	var t CreateTopic
	err := t.Decode(x.Request)
	return t, err
}

func (x CreateTopicWithAssignments) Validate() error {
	if uint64(len(x.Request)) > 0xFFFFFFFF {
		return decodeErr("request", "longer than 2^32-1 bytes")
	}
	return reqFirstErr(x.Derived.Validate(), reqCheckAssignments(x.Assignments))
}

func reqAppendIDs(b []byte, ids ...Identifier) []byte {
	for _, id := range ids {
		b = AppendIdentifier(b, id)
	}
	return b
}

func reqCheckIDs(ids ...Identifier) error {
	for _, id := range ids {
		if err := id.Validate(); err != nil {
			return err
		}
	}
	return nil
}

// reqReadBlock reads [len u32][bytes], aliasing the input.
func reqReadBlock(r *Reader, field string) []byte {
	n := r.U32(field + "_len")
	if r.Err() == nil && uint64(n) > uint64(r.Len()) {
		r.Fail(field+"_len", "exceeds the body")
	}
	return r.Bytes(field, int(n))
}
