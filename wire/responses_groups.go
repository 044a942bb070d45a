package wire

// ConsumerGroupResponse is one consumer group (client-plane.md 7.6).
type ConsumerGroupResponse struct {
	ID              uint32 // per topic, never reused
	PartitionsCount uint32 // partitions of the topic
	MembersCount    uint32
	Name            string
}

func (g ConsumerGroupResponse) AppendTo(b []byte) []byte {
	b = AppendU32(b, g.ID)
	b = AppendU32(b, g.PartitionsCount)
	b = AppendU32(b, g.MembersCount)
	return AppendName(b, g.Name)
}

func (g *ConsumerGroupResponse) Decode(body []byte) error {
	return respDecode(g, body, "consumer group", true, (*ConsumerGroupResponse).read)
}

func (g *ConsumerGroupResponse) read(r *Reader) {
	g.ID = r.U32("group id")
	g.PartitionsCount = r.U32("group partitions_count")
	g.MembersCount = r.U32("group members_count")
	g.Name = r.Name("group name")
}

// ConsumerGroupMember is one member slot and the partitions it owns,
// including ones pending hand-off (7.7).
type ConsumerGroupMember struct {
	ID         uint32
	Partitions []uint32
}

func (m ConsumerGroupMember) AppendTo(b []byte) []byte {
	b = AppendU32(b, m.ID)
	b = AppendU32(b, uint32(len(m.Partitions)))
	for _, p := range m.Partitions {
		b = AppendU32(b, p)
	}
	return b
}

func (m *ConsumerGroupMember) Decode(body []byte) error {
	return respDecode(m, body, "group member", true, (*ConsumerGroupMember).read)
}

func (m *ConsumerGroupMember) read(r *Reader) {
	m.ID = r.U32("member id")
	m.Partitions = r.respU32List("member partitions_count")
}

// respU32List reads [count u32][u32 x count].
func (r *Reader) respU32List(field string) []uint32 {
	n := r.Count(field, 4)
	if n == 0 {
		return nil
	}
	out := make([]uint32, n)
	for i := range out {
		out[i] = r.U32(field)
	}
	return out
}

// ConsumerGroupDetails is GetConsumerGroup's reply and the
// CreateConsumerGroup payload (7.8). AppendTo writes len(Members) as
// members_count.
type ConsumerGroupDetails struct {
	ConsumerGroupResponse
	Members []ConsumerGroupMember
}

func (g ConsumerGroupDetails) AppendTo(b []byte) []byte {
	head := g.ConsumerGroupResponse
	head.MembersCount = uint32(len(g.Members))
	b = head.AppendTo(b)
	for _, m := range g.Members {
		b = m.AppendTo(b)
	}
	return b
}

func (g *ConsumerGroupDetails) Decode(body []byte) error {
	return respDecode(g, body, "consumer group details", true, (*ConsumerGroupDetails).read)
}

func (g *ConsumerGroupDetails) read(r *Reader) {
	g.ConsumerGroupResponse.read(r)
	n := r.respFitCount("group members_count", g.MembersCount, minConsumerGroupMemberSize)
	g.Members = respReadN(r, n, (*ConsumerGroupMember).read)
}

// ConsumerGroups is GetConsumerGroups' reply (8.10): groups to the end of
// the body, no count; an empty body is no groups.
type ConsumerGroups []ConsumerGroupResponse

func (g ConsumerGroups) AppendTo(b []byte) []byte {
	for _, v := range g {
		b = v.AppendTo(b)
	}
	return b
}

func (g *ConsumerGroups) Decode(body []byte) error {
	return respDecode(g, body, "consumer groups", true, func(g *ConsumerGroups, r *Reader) {
		*g = respReadToEnd(r, (*ConsumerGroupResponse).read)
	})
}

// ConsumerOffset is GetConsumerOffset's reply (7.19, 20 bytes).
type ConsumerOffset struct {
	PartitionID   uint32
	CurrentOffset uint64 // the partition's newest offset
	StoredOffset  uint64
}

func (o ConsumerOffset) AppendTo(b []byte) []byte {
	b = AppendU32(b, o.PartitionID)
	b = AppendU64(b, o.CurrentOffset)
	return AppendU64(b, o.StoredOffset)
}

func (o *ConsumerOffset) Decode(body []byte) error {
	return respDecode(o, body, "consumer offset", true, func(o *ConsumerOffset, r *Reader) {
		o.PartitionID = r.U32("offset partition_id")
		o.CurrentOffset = r.U64("offset current_offset")
		o.StoredOffset = r.U64("offset stored_offset")
	})
}

// Assignment is SyncConsumerGroup's reply (7.20): the group's generation and
// the caller's pollable partitions. A non-member gets an empty body, which
// does not decode (the caller treats it as "not a member").
type Assignment struct {
	Generation uint64
	Partitions []uint32
}

func (a Assignment) AppendTo(b []byte) []byte {
	b = AppendU64(b, a.Generation)
	b = AppendU32(b, uint32(len(a.Partitions)))
	for _, p := range a.Partitions {
		b = AppendU32(b, p)
	}
	return b
}

func (a *Assignment) Decode(body []byte) error {
	return respDecode(a, body, "assignment", true, func(a *Assignment, r *Reader) {
		a.Generation = r.U64("assignment generation")
		a.Partitions = r.respU32List("assignment partitions_count")
	})
}
