package metadata

import (
	"math/bits"

	"iggynode/wire"
)

// Request is a metadata request as the primary admits it: the bound
// session's client id and user id (never the header's user_id), the
// operation the client sent and its body.
type Request struct {
	Client    wire.U128
	UserID    uint32
	Operation wire.Operation
	Body      []byte
}

// Prepare is what admission hands to the VSR core: the operation and body
// of the prepare (replica-plane.md 5.4, 13.1). The prepare keeps the
// client's request_checksum even when the body is rewritten.
type Prepare struct {
	Operation wire.Operation
	Body      []byte
	// RawToken is the personal access token a CreatePersonalAccessToken
	// minted (68 base64 characters). It never enters the log: the shell
	// keeps it with the pending request and answers the commit with
	// Result.WireReply(RawToken).
	RawToken string
}

// Denial is a pre-consensus answer. Exactly one of Status, Result and
// Evict is set.
type Denial struct {
	// Status is a deny frame: header status, empty body (client-plane.md
	// 4.4 class B2).
	Status wire.ErrorCode
	// Result is a result-section rejection that was not committed (class
	// D), sent under reply operation ReplyOp.
	Result  wire.ErrorCode
	ReplyOp wire.Operation
	// Evict is an eviction frame.
	Evict wire.EvictionReason
}

func deny(code wire.ErrorCode) *Denial { return &Denial{Status: code} }

// AdmitEnv supplies what admission cannot compute itself.
type AdmitEnv struct {
	// Random fills b with cryptographically secure random bytes (password
	// salts, raw tokens). Nil uses crypto/rand.
	Random func(b []byte)
	// InFlight reports, for a JoinConsumerGroup, the partitions of group g
	// the group was served messages from beyond its committed offset
	// (last polled > committed; server-behaviour.md 7.4.5). Admission
	// keeps those a member owns, ascending, in the 148 body; they become
	// pending revocations instead of moving at once. Nil or an empty
	// answer: nothing is in flight.
	InFlight func(g GroupRef) []uint32
	// SealedUpTo resolves a DeleteSegments on the node owning the
	// partition: the last offset of the count-th oldest sealed segment,
	// clamped to the sealed segments (the active one never counts).
	// sealed=false means nothing is sealed (a committed no-op). A non-nil
	// err means the partition replica is not caught up: result rejection
	// TransientNotAccepted (58) under operation 68. A nil SealedUpTo
	// answers the same 58.
	SealedUpTo func(p PartitionRef, count uint32) (upTo uint64, sealed bool, err error)
}

// Admit runs the pre-consensus checks of a metadata request on the
// primary, after the client-table preflight, and returns the prepare to
// submit or the denial to answer (client-plane.md 4.2 step 10, 8; the
// "decode before admission" rule of 8.2.4: every body is decoded here and
// an undecodable one is S 3). Authorization is not checked here: it
// happens at apply (R 41), after these validations (server-behaviour.md
// 2.6.2).
func (s *State) Admit(req Request, env AdmitEnv) (Prepare, *Denial) {
	op, body := req.Operation, req.Body
	switch {
	case op == wire.OpRegister:
		// 5.3.2 rule 3: the client id is already bound to another user.
		if s.clients.OwnedByOther(req.Client, req.UserID) {
			return Prepare{}, &Denial{Evict: wire.EvictSessionError}
		}
		return Prepare{Operation: op}, nil
	case op == wire.OpLogout:
		return Prepare{Operation: op}, nil
	case op.Internal():
		// 64..=68 are server-internal; a client-sent 68 is refused too
		// (client-plane.md 4.1, Compatible server).
		return Prepare{}, &Denial{Evict: wire.EvictInvalidRequestOperation}
	case !op.Metadata():
		return Prepare{}, deny(wire.ErrInvalidCommand)
	}
	switch op {
	case wire.OpCreateStream:
		var x wire.CreateStream
		return verbatim(op, body, &x, func() wire.ErrorCode { return noOptions(x.Options) })
	case wire.OpUpdateStream:
		var x wire.UpdateStream
		return verbatim(op, body, &x, func() wire.ErrorCode { return noOptions(x.Options) })
	case wire.OpDeleteStream:
		return verbatim(op, body, &wire.DeleteStream{}, nil)
	case wire.OpPurgeStream:
		return verbatim(op, body, &wire.PurgeStream{}, nil)
	case wire.OpCreateTopic:
		return s.admitCreateTopic(body)
	case wire.OpUpdateTopic:
		var x wire.UpdateTopic
		return verbatim(op, body, &x, func() wire.ErrorCode { return s.checkUpdateTopic(x) })
	case wire.OpDeleteTopic:
		return verbatim(op, body, &wire.DeleteTopic{}, nil)
	case wire.OpPurgeTopic:
		return verbatim(op, body, &wire.PurgeTopic{}, nil)
	case wire.OpCreatePartitions:
		return s.admitCreatePartitions(body)
	case wire.OpDeletePartitions:
		var x wire.DeletePartitions
		return verbatim(op, body, &x, func() wire.ErrorCode { return partitionCount(x.PartitionsCount) })
	case wire.OpDeleteSegments:
		return s.admitDeleteSegments(body, env)
	case wire.OpCreateUser:
		return s.admitCreateUser(body, env)
	case wire.OpUpdateUser:
		var x wire.UpdateUser
		return verbatim(op, body, &x, func() wire.ErrorCode { return noOptions(x.Options) })
	case wire.OpDeleteUser:
		return verbatim(op, body, &wire.DeleteUser{}, nil)
	case wire.OpChangePassword:
		return s.admitChangePassword(body, env)
	case wire.OpUpdatePermissions:
		return verbatim(op, body, &wire.UpdatePermissions{}, nil)
	case wire.OpCreatePersonalAccessToken:
		return s.admitCreateToken(req, env)
	case wire.OpDeletePersonalAccessToken:
		return admitDeleteToken(req)
	case wire.OpCreateConsumerGroup:
		return verbatim(op, body, &wire.CreateConsumerGroup{}, nil)
	case wire.OpDeleteConsumerGroup:
		return verbatim(op, body, &wire.DeleteConsumerGroup{}, nil)
	case wire.OpJoinConsumerGroup:
		return s.admitJoinGroup(req, env)
	case wire.OpLeaveConsumerGroup:
		return admitLeaveGroup(req)
	}
	return Prepare{}, deny(wire.ErrInvalidCommand) // unreachable: every metadata op is listed
}

// verbatim decodes body into x (S 3 on failure), runs check, and carries
// the client body unchanged (replica-plane.md 13.1).
func verbatim(op wire.Operation, body []byte, x wire.Body, check func() wire.ErrorCode) (Prepare, *Denial) {
	if x.Decode(body) != nil {
		return Prepare{}, deny(wire.ErrInvalidCommand)
	}
	if check != nil {
		if code := check(); code != 0 {
			return Prepare{}, deny(code)
		}
	}
	return Prepare{Operation: op, Body: body}, nil
}

// noOptions: the stream and user catalogs are empty (server-behaviour.md
// 4.1.3), so any key is UnsupportedOptionKey.
func noOptions(o wire.Options) wire.ErrorCode {
	if len(o) > 0 {
		return wire.ErrUnsupportedOptionKey
	}
	return 0
}

// partitionCount: CreatePartitions and DeletePartitions take 1..=1000.
func partitionCount(n uint32) wire.ErrorCode {
	if n == 0 || n > MaxPartitionsPerChange {
		return wire.ErrTooManyPartitions
	}
	return 0
}

// admitCreateTopic rewrites CreateTopic (132) into
// CreateTopicWithAssignments (64): the client body with the explicit block
// re-encoded, the derived block, and the partitions' creation ids.
func (s *State) admitCreateTopic(body []byte) (Prepare, *Denial) {
	var x wire.CreateTopic
	if x.Decode(body) != nil {
		return Prepare{}, deny(wire.ErrInvalidCommand)
	}
	plan, code := PlanCreateTopic(x.Options, x.PartitionsCount)
	if code != 0 {
		return Prepare{}, deny(code)
	}
	if int(plan.Settings.ReplicationFactor) > max(1, bits.OnesCount32(s.ClusterVoters())) {
		return Prepare{}, deny(wire.ErrInvalidReplicationFactor) // more copies than nodes
	}
	x.Options = plan.Explicit
	out := wire.CreateTopicWithAssignments{
		Request:     x.AppendTo(nil),
		Derived:     plan.Derived,
		Assignments: s.allocate(x.PartitionsCount),
	}
	return Prepare{Operation: wire.OpCreateTopicWithAssignments, Body: out.AppendTo(nil)}, nil
}

// admitCreatePartitions rewrites CreatePartitions (136) into
// CreatePartitionsWithAssignments (65).
func (s *State) admitCreatePartitions(body []byte) (Prepare, *Denial) {
	var x wire.CreatePartitions
	if x.Decode(body) != nil {
		return Prepare{}, deny(wire.ErrInvalidCommand)
	}
	if code := partitionCount(x.PartitionsCount); code != 0 {
		return Prepare{}, deny(code)
	}
	out := wire.CreatePartitionsWithAssignments{Request: x.AppendTo(nil), Assignments: s.allocate(x.PartitionsCount)}
	return Prepare{Operation: wire.OpCreatePartitionsWithAssignments, Body: out.AppendTo(nil)}, nil
}

// allocate hands out n creation ids, indexes 0..n-1 (13.1).
func (s *State) allocate(n uint32) []wire.PartitionAssignment {
	s.allocator = max(s.allocator, s.nextCreationID)
	out := make([]wire.PartitionAssignment, n)
	for i := range out {
		out[i] = wire.PartitionAssignment{PartitionID: uint32(i), ConsensusGroupID: s.allocator}
		s.allocator++
	}
	return out
}

// checkUpdateTopic validates the options block against the committed
// topic's segment size; an unresolved topic skips the size floor (apply
// then commits 1009/2010).
func (s *State) checkUpdateTopic(x wire.UpdateTopic) wire.ErrorCode {
	segment := uint64(0)
	if _, t, code := s.resolveTopic(x.Stream, x.Topic); code == 0 {
		segment = t.settings.SegmentSize
	}
	return PlanUpdateTopic(x.Options, segment)
}

// admitDeleteSegments converts DeleteSegments (138) into TruncatePartition
// (68) with a concrete offset (server-behaviour.md 5.9). Count 0, nothing
// sealed, or a partition that does not resolve carry the no-op offset
// u64::MAX; apply then reports success or the not-found code.
func (s *State) admitDeleteSegments(body []byte, env AdmitEnv) (Prepare, *Denial) {
	var x wire.DeleteSegments
	if x.Decode(body) != nil {
		return Prepare{}, deny(wire.ErrInvalidCommand)
	}
	upTo := noTruncation
	if ref, code := s.ResolvePartition(x.Stream, x.Topic, x.PartitionID); code == 0 && x.SegmentsCount > 0 {
		if env.SealedUpTo == nil {
			return Prepare{}, &Denial{Result: wire.ErrTransientNotAccepted, ReplyOp: wire.OpTruncatePartition}
		}
		off, sealed, err := env.SealedUpTo(ref, x.SegmentsCount)
		if err != nil {
			return Prepare{}, &Denial{Result: wire.ErrTransientNotAccepted, ReplyOp: wire.OpTruncatePartition}
		}
		if sealed && off != noTruncation {
			upTo = off
		}
	}
	out := wire.TruncatePartition{Stream: x.Stream, Topic: x.Topic, PartitionID: x.PartitionID, UpToOffset: upTo}
	return Prepare{Operation: wire.OpTruncatePartition, Body: out.AppendTo(nil)}, nil
}
