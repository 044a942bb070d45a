package metadata

import "iggynode/wire"

// Prepare bodies of the rewritten and internal operations this package
// adds to the log (replica-plane.md 13.1, unchanged). 141 and 144 reuse
// the client codecs (wire.CreateUser, wire.ChangePassword) with the
// password fields rewritten. Every decoder here consumes its body exactly.

// tokenCreateBody is 146: [user_id u32][name Name][expiry u64][token_hash: 64 bytes].
type tokenCreateBody struct {
	UserID uint32
	Name   string
	Expiry uint64 // duration in µs as the client sent it
	Hash   string // lowercase hex BLAKE3 of the raw token
}

func (x tokenCreateBody) AppendTo(b []byte) []byte {
	b = wire.AppendName(wire.AppendU32(b, x.UserID), x.Name)
	return append(wire.AppendU64(b, x.Expiry), x.Hash...)
}

func (x *tokenCreateBody) Decode(body []byte) error {
	r := wire.NewReader(body)
	v := tokenCreateBody{UserID: r.U32("user_id"), Name: r.Name("name"), Expiry: r.U64("expiry")}
	hash := r.Bytes("token_hash", tokenHashLen)
	if r.Err() == nil && !isLowerHex(hash) {
		r.Fail("token_hash", "not lowercase hex")
	}
	if err := exact(r); err != nil {
		return err
	}
	v.Hash = string(hash)
	*x = v
	return nil
}

// tokenDeleteBody is 147: [user_id u32][name Name][only_if_expired u8]; the
// cleaner sets OnlyIfExpired (server-behaviour.md 3.9).
type tokenDeleteBody struct {
	UserID        uint32
	Name          string
	OnlyIfExpired bool
}

func (x tokenDeleteBody) AppendTo(b []byte) []byte {
	return wire.AppendBool8(wire.AppendName(wire.AppendU32(b, x.UserID), x.Name), x.OnlyIfExpired)
}

func (x *tokenDeleteBody) Decode(body []byte) error {
	r := wire.NewReader(body)
	v := tokenDeleteBody{UserID: r.U32("user_id"), Name: r.Name("name")}
	flag := r.U8("only_if_expired")
	if r.Err() == nil && flag > 1 {
		r.Fail("only_if_expired", "must be 0 or 1")
	}
	if err := exact(r); err != nil {
		return err
	}
	v.OnlyIfExpired = flag == 1
	*x = v
	return nil
}

// joinBody is 148: [stream][topic][group][client u128][in_flight_count u32]
// [partition_id u32 x in_flight_count], the in-flight partitions ascending.
type joinBody struct {
	Stream, Topic, Group wire.Identifier
	Client               wire.U128
	InFlight             []uint32
}

func (x joinBody) AppendTo(b []byte) []byte {
	b = appendIDs(b, x.Stream, x.Topic, x.Group)
	b = wire.AppendU32(wire.AppendU128(b, x.Client), uint32(len(x.InFlight)))
	for _, p := range x.InFlight {
		b = wire.AppendU32(b, p)
	}
	return b
}

func (x *joinBody) Decode(body []byte) error {
	r := wire.NewReader(body)
	v := joinBody{Stream: r.Identifier("stream"), Topic: r.Identifier("topic"), Group: r.Identifier("group"),
		Client: r.U128("client")}
	n := r.Count("in_flight_count", 4)
	for i := 0; i < n && r.Err() == nil; i++ {
		p := r.U32("in_flight partition")
		if r.Err() == nil && i > 0 && p <= v.InFlight[i-1] {
			r.Fail("in_flight partition", "not strictly ascending")
		}
		v.InFlight = append(v.InFlight, p)
	}
	if err := exact(r); err != nil {
		return err
	}
	*x = v
	return nil
}

// leaveBody is 149: [stream][topic][group][client u128].
type leaveBody struct {
	Stream, Topic, Group wire.Identifier
	Client               wire.U128
}

func (x leaveBody) AppendTo(b []byte) []byte {
	return wire.AppendU128(appendIDs(b, x.Stream, x.Topic, x.Group), x.Client)
}

func (x *leaveBody) Decode(body []byte) error {
	r := wire.NewReader(body)
	v := leaveBody{Stream: r.Identifier("stream"), Topic: r.Identifier("topic"), Group: r.Identifier("group"),
		Client: r.U128("client")}
	if err := exact(r); err != nil {
		return err
	}
	*x = v
	return nil
}

// revocationBody is 67: [stream][topic][group_id u64][source_client u128]
// [partition_id u32].
type revocationBody struct {
	Stream, Topic wire.Identifier
	GroupID       uint64
	Source        wire.U128
	Partition     uint32
}

func (x revocationBody) AppendTo(b []byte) []byte {
	b = wire.AppendU64(appendIDs(b, x.Stream, x.Topic), x.GroupID)
	return wire.AppendU32(wire.AppendU128(b, x.Source), x.Partition)
}

func (x *revocationBody) Decode(body []byte) error {
	r := wire.NewReader(body)
	v := revocationBody{Stream: r.Identifier("stream"), Topic: r.Identifier("topic"), GroupID: r.U64("group_id"),
		Source: r.U128("source_client"), Partition: r.U32("partition_id")}
	if err := exact(r); err != nil {
		return err
	}
	*x = v
	return nil
}

func appendIDs(b []byte, ids ...wire.Identifier) []byte {
	for _, id := range ids {
		b = wire.AppendIdentifier(b, id)
	}
	return b
}

// exact reports the reader's error, or one for unconsumed bytes.
func exact(r *wire.Reader) error {
	if r.Err() == nil && r.Len() != 0 {
		r.Fail("body", "trailing bytes")
	}
	return r.Err()
}

// Internal is a server-originated metadata prepare with the header fields
// of replica-plane.md 13.1 ("Header fields of server-originated
// prepares"): the shell submits it with this Client and Request, a zero
// request_checksum and user_id 0 (root).
type Internal struct {
	Client    wire.U128
	Request   uint64
	Operation wire.Operation
	Body      []byte
}

// TokenRef names a personal access token.
type TokenRef struct {
	UserID uint32
	Name   string
}

// CleanupToken is the token cleaner's delete of t (server-behaviour.md
// 3.9): a 147 with only_if_expired = 1 from client 0, request 0. The apply
// removes the token only if it is still expired at the prepare timestamp.
func CleanupToken(t TokenRef) Internal {
	return Internal{Operation: wire.OpDeletePersonalAccessToken,
		Body: tokenDeleteBody{UserID: t.UserID, Name: t.Name, OnlyIfExpired: true}.AppendTo(nil)}
}

// Completion is the 67 CompleteConsumerGroupRevocation that completes r
// (server-behaviour.md 7.4.6), from the reserved client id of 13.1: high
// 64 bits all ones, low 64 bits (group_id << 32) | partition_id, request
// u64::MAX.
func (r PendingRevocation) Completion() Internal {
	body := revocationBody{Stream: wire.ID(r.Stream), Topic: wire.ID(r.Topic), GroupID: uint64(r.Group),
		Source: r.Source, Partition: r.Partition}
	return Internal{
		Client:    wire.U128{Hi: ^uint64(0), Lo: uint64(r.Group)<<32 | uint64(r.Partition)},
		Request:   ^uint64(0),
		Operation: wire.OpCompleteConsumerGroupRevocation,
		Body:      body.AppendTo(nil),
	}
}
