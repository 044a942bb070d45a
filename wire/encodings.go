package wire

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// IdentifierKind is byte 0 of an Identifier.
type IdentifierKind uint8

const (
	IDNumeric IdentifierKind = 1
	IDString  IdentifierKind = 2
)

// Identifier names a stream, topic, user or consumer group by 0-based number
// or by exact name (client-plane.md 2.2). A numeric identifier never matches
// a name and a string identifier never matches a number.
type Identifier struct {
	Kind IdentifierKind
	Num  uint32
	Str  string
}

// ID is a numeric identifier.
func ID(n uint32) Identifier { return Identifier{Kind: IDNumeric, Num: n} }

// Named is a string identifier.
func Named(s string) Identifier { return Identifier{Kind: IDString, Str: s} }

// IsNumeric reports whether the identifier is numeric.
func (id Identifier) IsNumeric() bool { return id.Kind == IDNumeric }

func (id Identifier) String() string {
	if id.Kind == IDNumeric {
		return strconv.FormatUint(uint64(id.Num), 10)
	}
	return strconv.Quote(id.Str)
}

// Validate checks the identifier can be encoded.
func (id Identifier) Validate() error {
	switch id.Kind {
	case IDNumeric:
		return nil
	case IDString:
		if !ValidName(id.Str) {
			return decodeErr("identifier", "string must be 1..=255 bytes of UTF-8")
		}
		return nil
	}
	return decodeErr("identifier", fmt.Sprintf("kind %d", id.Kind))
}

// EncodedLen is the identifier's size on the wire.
func (id Identifier) EncodedLen() int {
	if id.Kind == IDNumeric {
		return 6
	}
	return 2 + len(id.Str)
}

// AppendIdentifier appends [kind][len][value].
func AppendIdentifier(b []byte, id Identifier) []byte {
	if id.Kind == IDNumeric {
		return AppendU32(append(b, byte(IDNumeric), 4), id.Num)
	}
	return append(append(b, byte(IDString), uint8(len(id.Str))), id.Str...)
}

// Identifier reads an Identifier.
func (r *Reader) Identifier(field string) Identifier {
	kind := IdentifierKind(r.U8(field))
	n := r.U8(field)
	if r.err != nil {
		return Identifier{}
	}
	switch kind {
	case IDNumeric:
		if n != 4 {
			r.Fail(field, "numeric identifier length must be 4")
			return Identifier{}
		}
		return ID(r.U32(field))
	case IDString:
		if n == 0 {
			r.Fail(field, "empty string identifier")
			return Identifier{}
		}
		b := r.take(field, int(n))
		if b == nil {
			return Identifier{}
		}
		if !utf8.Valid(b) {
			r.Fail(field, "invalid UTF-8")
			return Identifier{}
		}
		return Named(string(b))
	}
	r.Fail(field, fmt.Sprintf("identifier kind %d", kind))
	return Identifier{}
}

// ConsumerKind is byte 0 of a Consumer.
type ConsumerKind uint8

const (
	ConsumerSingle ConsumerKind = 1
	ConsumerGroup  ConsumerKind = 2
)

// Consumer is [kind][Identifier] (client-plane.md 2.3).
type Consumer struct {
	Kind ConsumerKind
	ID   Identifier
}

// SingleConsumer is a plain consumer.
func SingleConsumer(id Identifier) Consumer { return Consumer{Kind: ConsumerSingle, ID: id} }

// GroupConsumer is a consumer-group consumer.
func GroupConsumer(id Identifier) Consumer { return Consumer{Kind: ConsumerGroup, ID: id} }

func AppendConsumer(b []byte, c Consumer) []byte {
	return AppendIdentifier(append(b, byte(c.Kind)), c.ID)
}

// Consumer reads a Consumer; kinds other than 1 and 2 fail.
func (r *Reader) Consumer(field string) Consumer {
	k := ConsumerKind(r.U8(field))
	if r.err == nil && k != ConsumerSingle && k != ConsumerGroup {
		r.Fail(field, fmt.Sprintf("consumer kind %d", k))
		return Consumer{}
	}
	return Consumer{Kind: k, ID: r.Identifier(field)}
}

// OptionalPartition is the 5-byte [flag][u32]; only flag 1 means present
// (client-plane.md 2.4).
type OptionalPartition struct {
	Set bool
	ID  uint32
}

// Partition is a present partition id.
func Partition(id uint32) OptionalPartition { return OptionalPartition{Set: true, ID: id} }

// AppendOptionalPartition writes flag 1 and the id, or flag 0 and value 0.
func AppendOptionalPartition(b []byte, p OptionalPartition) []byte {
	if !p.Set {
		return AppendU32(append(b, 0), 0)
	}
	return AppendU32(append(b, 1), p.ID)
}

func (r *Reader) OptionalPartition(field string) OptionalPartition {
	flag := r.U8(field)
	id := r.U32(field)
	if flag != 1 {
		return OptionalPartition{}
	}
	return OptionalPartition{Set: true, ID: id}
}

// PartitioningKind is byte 0 of a Partitioning.
type PartitioningKind uint8

const (
	PartitionBalanced     PartitioningKind = 1
	PartitionByID         PartitioningKind = 2
	PartitionByMessageKey PartitioningKind = 3
)

// Partitioning chooses the partition of a send (client-plane.md 2.5, 14.2).
type Partitioning struct {
	Kind PartitioningKind
	ID   uint32 // PartitionByID
	Key  []byte // PartitionByMessageKey, 1..=255 bytes, not necessarily UTF-8
}

func Balanced() Partitioning              { return Partitioning{Kind: PartitionBalanced} }
func PartitionID(id uint32) Partitioning  { return Partitioning{Kind: PartitionByID, ID: id} }
func MessagesKey(key []byte) Partitioning { return Partitioning{Kind: PartitionByMessageKey, Key: key} }

// EncodedLen is the partitioning's size on the wire.
func (p Partitioning) EncodedLen() int {
	switch p.Kind {
	case PartitionByID:
		return 6
	case PartitionByMessageKey:
		return 2 + len(p.Key)
	}
	return 2
}

// Validate checks the partitioning can be encoded.
func (p Partitioning) Validate() error {
	switch p.Kind {
	case PartitionBalanced, PartitionByID:
		return nil
	case PartitionByMessageKey:
		if len(p.Key) < 1 || len(p.Key) > 255 {
			return decodeErr("partitioning", "messages key must be 1..=255 bytes")
		}
		return nil
	}
	return decodeErr("partitioning", fmt.Sprintf("kind %d", p.Kind))
}

func AppendPartitioning(b []byte, p Partitioning) []byte {
	switch p.Kind {
	case PartitionByID:
		return AppendU32(append(b, byte(PartitionByID), 4), p.ID)
	case PartitionByMessageKey:
		return append(append(b, byte(PartitionByMessageKey), uint8(len(p.Key))), p.Key...)
	}
	return append(b, byte(PartitionBalanced), 0)
}

func (r *Reader) Partitioning(field string) Partitioning {
	k := PartitioningKind(r.U8(field))
	n := r.U8(field)
	if r.err != nil {
		return Partitioning{}
	}
	switch k {
	case PartitionBalanced:
		if n != 0 {
			r.Fail(field, "balanced length must be 0")
			return Partitioning{}
		}
		return Balanced()
	case PartitionByID:
		if n != 4 {
			r.Fail(field, "partition id length must be 4")
			return Partitioning{}
		}
		return PartitionID(r.U32(field))
	case PartitionByMessageKey:
		if n == 0 {
			r.Fail(field, "empty messages key")
			return Partitioning{}
		}
		key := r.take(field, int(n))
		if key == nil {
			return Partitioning{}
		}
		return MessagesKey(append([]byte(nil), key...))
	}
	r.Fail(field, fmt.Sprintf("partitioning kind %d", k))
	return Partitioning{}
}

// PollingKind is byte 0 of a PollingStrategy.
type PollingKind uint8

const (
	PollOffset    PollingKind = 1
	PollTimestamp PollingKind = 2
	PollFirst     PollingKind = 3
	PollLast      PollingKind = 4
	PollNext      PollingKind = 5
)

func (k PollingKind) String() string {
	switch k {
	case PollOffset:
		return "offset"
	case PollTimestamp:
		return "timestamp"
	case PollFirst:
		return "first"
	case PollLast:
		return "last"
	case PollNext:
		return "next"
	}
	return fmt.Sprintf("PollingKind(%d)", uint8(k))
}

// PollingStrategy is the fixed 9-byte [kind][u64] (client-plane.md 2.6).
// Value is the start offset for Offset and µs since the epoch for
// Timestamp; it is carried but ignored for First, Last and Next.
type PollingStrategy struct {
	Kind  PollingKind
	Value uint64
}

func OffsetStrategy(o uint64) PollingStrategy     { return PollingStrategy{PollOffset, o} }
func TimestampStrategy(us uint64) PollingStrategy { return PollingStrategy{PollTimestamp, us} }
func FirstStrategy() PollingStrategy              { return PollingStrategy{Kind: PollFirst} }
func LastStrategy() PollingStrategy               { return PollingStrategy{Kind: PollLast} }
func NextStrategy() PollingStrategy               { return PollingStrategy{Kind: PollNext} }

func AppendPollingStrategy(b []byte, s PollingStrategy) []byte {
	return AppendU64(append(b, byte(s.Kind)), s.Value)
}

func (r *Reader) PollingStrategy(field string) PollingStrategy {
	k := PollingKind(r.U8(field))
	v := r.U64(field)
	if r.err == nil && (k < PollOffset || k > PollNext) {
		r.Fail(field, fmt.Sprintf("polling kind %d", k))
		return PollingStrategy{}
	}
	return PollingStrategy{k, v}
}

// AckLevel is the durability a consumer-offset write asks for (2.7).
type AckLevel uint8

const (
	AckNone   AckLevel = 0 // leader-local write
	AckQuorum AckLevel = 1 // replicate, reply after quorum commit
)

func (r *Reader) AckLevel(field string) AckLevel {
	a := AckLevel(r.U8(field))
	if r.err == nil && a > AckQuorum {
		r.Fail(field, fmt.Sprintf("ack level %d", a))
		return 0
	}
	return a
}
