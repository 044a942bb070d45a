package wire

// Partition and segment requests (client-plane.md 8.8, 8.9), and the
// replica-internal bodies derived from them (6, 4.1).

// CreatePartitions (402, operation 136, reply operation 65):
// [stream][topic][partitions_count u32]. The count's 1..=1000 bound is the
// server's (S 2015).
type CreatePartitions struct {
	Stream          Identifier
	Topic           Identifier
	PartitionsCount uint32
}

func (CreatePartitions) Code() CommandCode { return CodeCreatePartitions }

func (x CreatePartitions) AppendTo(b []byte) []byte {
	return AppendU32(reqAppendIDs(b, x.Stream, x.Topic), x.PartitionsCount)
}

func (x *CreatePartitions) Decode(body []byte) error {
	r := NewReader(body)
	*x = CreatePartitions{
		Stream:          r.Identifier("stream"),
		Topic:           r.Identifier("topic"),
		PartitionsCount: r.U32("partitions_count"),
	}
	return r.Err()
}

func (x CreatePartitions) Validate() error { return reqCheckIDs(x.Stream, x.Topic) }

// DeletePartitions (403, operation 137): [stream][topic][partitions_count u32];
// removes that many partitions with the highest ids.
type DeletePartitions struct {
	Stream          Identifier
	Topic           Identifier
	PartitionsCount uint32
}

func (DeletePartitions) Code() CommandCode { return CodeDeletePartitions }

func (x DeletePartitions) AppendTo(b []byte) []byte {
	return AppendU32(reqAppendIDs(b, x.Stream, x.Topic), x.PartitionsCount)
}

func (x *DeletePartitions) Decode(body []byte) error {
	r := NewReader(body)
	*x = DeletePartitions{
		Stream:          r.Identifier("stream"),
		Topic:           r.Identifier("topic"),
		PartitionsCount: r.U32("partitions_count"),
	}
	return r.Err()
}

func (x DeletePartitions) Validate() error { return reqCheckIDs(x.Stream, x.Topic) }

// DeleteSegments (503, operation 138, reply operation 68):
// [stream][topic][partition_id u32][segments_count u32].
type DeleteSegments struct {
	Stream        Identifier
	Topic         Identifier
	PartitionID   uint32
	SegmentsCount uint32
}

func (DeleteSegments) Code() CommandCode { return CodeDeleteSegments }

func (x DeleteSegments) AppendTo(b []byte) []byte {
	b = reqAppendIDs(b, x.Stream, x.Topic)
	return AppendU32(AppendU32(b, x.PartitionID), x.SegmentsCount)
}

func (x *DeleteSegments) Decode(body []byte) error {
	r := NewReader(body)
	*x = DeleteSegments{
		Stream:        r.Identifier("stream"),
		Topic:         r.Identifier("topic"),
		PartitionID:   r.U32("partition_id"),
		SegmentsCount: r.U32("segments_count"),
	}
	return r.Err()
}

func (x DeleteSegments) Validate() error { return reqCheckIDs(x.Stream, x.Topic) }

// TruncatePartition is the body of internal operation 68, a DeleteSegments
// resolved to a concrete offset by the partition's owner (4.1;
// replica-plane.md 13.1): [stream][topic][partition_id u32][up_to_offset u64],
// identifiers as the client sent them. Fixed shape: trailing bytes ignored.
type TruncatePartition struct {
	Stream      Identifier
	Topic       Identifier
	PartitionID uint32
	UpToOffset  uint64
}

// Operation is the internal operation the body is prepared under.
func (TruncatePartition) Operation() Operation { return OpTruncatePartition }

func (x TruncatePartition) AppendTo(b []byte) []byte {
	b = reqAppendIDs(b, x.Stream, x.Topic)
	return AppendU64(AppendU32(b, x.PartitionID), x.UpToOffset)
}

func (x *TruncatePartition) Decode(body []byte) error {
	r := NewReader(body)
	*x = TruncatePartition{
		Stream:      r.Identifier("stream"),
		Topic:       r.Identifier("topic"),
		PartitionID: r.U32("partition_id"),
		UpToOffset:  r.U64("up_to_offset"),
	}
	return r.Err()
}

func (x TruncatePartition) Validate() error { return reqCheckIDs(x.Stream, x.Topic) }

// PartitionAssignment pairs a partition with the consensus group the
// primary allocated for it (replica-plane.md calls the id creation_id).
type PartitionAssignment struct {
	PartitionID      uint32
	ConsensusGroupID uint64
}

// partitionAssignmentSize is one {partition_id u32, consensus_group_id u64}.
const partitionAssignmentSize = 12

// CreatePartitionsWithAssignments is the replica-internal body of operation
// 65, the primary's rewrite of a CreatePartitions (client-plane.md 6):
// [req_len u32][CreatePartitions body][count u32]
// [count x {partition_id u32, consensus_group_id u64}], partition ids
// relative to the first new id. Request keeps the embedded body as bytes
// (decode it with CreatePartitions()). Consumed exactly.
type CreatePartitionsWithAssignments struct {
	Request     []byte
	Assignments []PartitionAssignment
}

// Operation is the internal operation the body is prepared under.
func (CreatePartitionsWithAssignments) Operation() Operation {
	return OpCreatePartitionsWithAssignments
}

func (x CreatePartitionsWithAssignments) AppendTo(b []byte) []byte {
	b = AppendU32(b, uint32(len(x.Request)))
	b = append(b, x.Request...)
	return reqAppendAssignments(b, x.Assignments)
}

func (x *CreatePartitionsWithAssignments) Decode(body []byte) error {
	r := NewReader(body)
	req := reqReadBlock(r, "request")
	if err := r.Err(); err != nil {
		return err
	}
	assignments, err := reqReadAssignments(r)
	if err != nil {
		return err
	}
	*x = CreatePartitionsWithAssignments{Request: append([]byte(nil), req...), Assignments: assignments}
	return nil
}

// CreatePartitions decodes the embedded CreatePartitions body.
func (x CreatePartitionsWithAssignments) CreatePartitions() (CreatePartitions, error) {
	var p CreatePartitions
	err := p.Decode(x.Request)
	return p, err
}

func (x CreatePartitionsWithAssignments) Validate() error {
	if uint64(len(x.Request)) > 0xFFFFFFFF {
		return decodeErr("request", "longer than 2^32-1 bytes")
	}
	return reqCheckAssignments(x.Assignments)
}

func reqAppendAssignments(b []byte, as []PartitionAssignment) []byte {
	b = AppendU32(b, uint32(len(as)))
	for _, a := range as {
		b = AppendU64(AppendU32(b, a.PartitionID), a.ConsensusGroupID)
	}
	return b
}

// reqReadAssignments reads the counted assignment list that ends an internal
// body; nothing may follow it.
func reqReadAssignments(r *Reader) ([]PartitionAssignment, error) {
	n := r.Count("assignments_count", partitionAssignmentSize)
	if err := r.Err(); err != nil {
		return nil, err
	}
	var out []PartitionAssignment
	if n > 0 {
		out = make([]PartitionAssignment, n)
	}
	for i := range out {
		out[i] = PartitionAssignment{PartitionID: r.U32("partition_id"), ConsensusGroupID: r.U64("consensus_group_id")}
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	if r.Len() != 0 {
		return nil, decodeErr("assignments", "trailing bytes")
	}
	return out, nil
}

func reqCheckAssignments(as []PartitionAssignment) error {
	if uint64(len(as)) > 0xFFFFFFFF {
		return decodeErr("assignments", "more than 2^32-1 entries")
	}
	return nil
}
