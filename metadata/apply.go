package metadata

import (
	"iggynode/wire"
)

// PartitionRef names a partition for the shell: its numeric ids, its
// partition consensus group (replica-plane.md 4.1) and its creation id
// (13.1), which tells a re-created partition from a deleted predecessor
// with the same group id.
type PartitionRef struct {
	Stream, Topic, Partition uint32
	Group                    uint64
	CreationID               uint64
	PurgeGeneration          uint64
}

// TopicRef names a topic.
type TopicRef struct{ Stream, Topic uint32 }

// Truncation is a committed DeleteSegments watermark: the partition may
// drop sealed segments whose last offset is <= UpToOffset (subject to the
// consumer barrier, server-behaviour.md 5.9).
type Truncation struct {
	Partition  PartitionRef
	UpToOffset uint64
}

// Effects are the side effects the shell carries out after a commit, on
// every replica. Lists are in ascending (stream, topic, partition) order.
type Effects struct {
	CreatedPartitions []PartitionRef // start a partition actor / group
	DeletedPartitions []PartitionRef // stop it and remove its data and offsets
	PurgedPartitions  []PartitionRef // reset to one empty segment at offset 0, clear offsets
	Truncated         []Truncation
	UpdatedTopics     []TopicRef // settings changed: re-read TopicSettings
	// Revocations are the pending hand-offs a JoinConsumerGroup started,
	// ascending by (stream, topic, group, partition): the primary submits
	// their Completion() when the group's offset catches up or after
	// consumer_group.rebalancing_timeout (server-behaviour.md 7.4.6).
	// PendingRevocations lists all of them at any time.
	Revocations []PendingRevocation
	// DeletedGroups are consumer groups a DeleteConsumerGroup removed: purge
	// their offsets from every partition of the topic (6.6).
	DeletedGroups []GroupRef
}

// Result is the outcome of applying one committed prepare.
type Result struct {
	Op        uint64
	Operation wire.Operation
	Client    wire.U128
	Request   uint64
	UserID    uint32
	// Code is 0 on success, else the committed business rejection that the
	// reply's result section carries.
	Code wire.ErrorCode
	// Reply is the complete reply frame (256-byte ReplyHeader + body),
	// byte-identical on every replica; the client table caches the same
	// slice, so treat it as read-only. Nil only for a frame shorter than a
	// header.
	Reply   []byte
	Effects Effects
}

// applyCtx is one apply call: the prepare header, its body and the effects
// gathered so far.
type applyCtx struct {
	ph      wire.PrepareHeader
	body    []byte
	effects Effects
}

type handler func(s *State, c *applyCtx) (wire.ErrorCode, []byte)

// handlers dispatch by prepared operation.
var handlers = map[wire.Operation]handler{
	wire.OpCreateUser:                      (*State).applyCreateUser,
	wire.OpUpdateUser:                      (*State).applyUpdateUser,
	wire.OpDeleteUser:                      (*State).applyDeleteUser,
	wire.OpChangePassword:                  (*State).applyChangePassword,
	wire.OpUpdatePermissions:               (*State).applyUpdatePermissions,
	wire.OpCreatePersonalAccessToken:       (*State).applyCreateToken,
	wire.OpDeletePersonalAccessToken:       (*State).applyDeleteToken,
	wire.OpCreateConsumerGroup:             (*State).applyCreateGroup,
	wire.OpDeleteConsumerGroup:             (*State).applyDeleteGroup,
	wire.OpJoinConsumerGroup:               (*State).applyJoinGroup,
	wire.OpLeaveConsumerGroup:              (*State).applyLeaveGroup,
	wire.OpCompleteConsumerGroupRevocation: (*State).applyCompleteRevocation,
	wire.OpCreateStream:                    (*State).applyCreateStream,
	wire.OpUpdateStream:                    (*State).applyUpdateStream,
	wire.OpDeleteStream:                    (*State).applyDeleteStream,
	wire.OpPurgeStream:                     (*State).applyPurgeStream,
	wire.OpCreateTopicWithAssignments:      (*State).applyCreateTopic,
	wire.OpUpdateTopic:                     (*State).applyUpdateTopic,
	wire.OpDeleteTopic:                     (*State).applyDeleteTopic,
	wire.OpPurgeTopic:                      (*State).applyPurgeTopic,
	wire.OpCreatePartitionsWithAssignments: (*State).applyCreatePartitions,
	wire.OpDeletePartitions:                (*State).applyDeletePartitions,
	wire.OpTruncatePartition:               (*State).applyTruncatePartition,
	wire.OpReconfigure:                     (*State).applyReconfigure,
}

// Apply applies one committed prepare frame (256-byte prepare header +
// body) deterministically, updates the client table, and returns the reply
// frame and the effects (replica-plane.md 5.9, 5.11, 5.12.3). A business
// rejection is a no-op whose code travels in the reply's result section;
// authorization of metadata writes is evaluated here with the prepare's
// user_id (server-behaviour.md 0.7). A body that does not decode is
// answered like a rejection with InvalidCommand (3), so Apply never fails.
func (s *State) Apply(frame []byte) Result {
	if len(frame) < wire.HeaderSize {
		return Result{Code: wire.ErrInvalidFormat}
	}
	ph := wire.HeaderOf(frame).Prepare()
	c := &applyCtx{ph: ph, body: frame[wire.HeaderSize:]}
	res := Result{Op: ph.Op, Operation: ph.Operation, Client: ph.Client, Request: ph.Request, UserID: ph.UserID}
	// A prepare with an undefined operation never passes
	// DecodePrepareHeader; should one arrive, it is answered but not cached
	// (a cached reply must parse as a Reply frame, 7.8.2).
	table := ph.Op > s.clientTableFrontier && ph.Operation.Defined()
	switch ph.Operation {
	case wire.OpRegister:
		payload := wire.LoginRegisterResponse{
			UserID: ph.UserID, Session: ph.Op,
			ServerProtocolVersion: wire.ProtocolVersion, ServerVersion: wire.ServerVersion,
		}
		res.Reply = replyFrame(ph, ph.Op, payload.AppendTo(wire.AppendResultOK(nil)))
		if table {
			s.clients.CommitRegister(ph.Client, ph.UserID, res.Reply)
		}
	case wire.OpLogout:
		// Class H (client-plane.md 4.4): op is the epoch that was bound.
		var epoch uint64
		if e, ok := s.clients.Lookup(ph.Client); ok {
			epoch = e.Epoch
		}
		if table {
			s.clients.Logout(ph.Client)
		}
		s.leaveAllGroups(ph.Client) // runs even at or below the frontier (5.9)
		res.Reply = replyFrame(ph, epoch, nil)
	default:
		s.observeAssignments(ph.Operation, c.body)
		code, payload := wire.ErrInvalidCommand, []byte(nil)
		if h, ok := handlers[ph.Operation]; ok {
			code, payload = h(s, c)
		} else if ph.Operation == wire.OpRemoveConsumerGroupMember {
			code = wire.ErrFeatureUnavailable // never prepared: it rides Logout (13.1)
		}
		var body []byte
		if code != 0 {
			body = wire.AppendResultError(nil, code)
		} else {
			body = append(wire.AppendResultOK(make([]byte, 0, 4+len(payload))), payload...)
		}
		res.Code, res.Effects = code, c.effects
		if code == 0 && routingOp(ph.Operation) {
			s.routes = nil // rebuilt when next asked for (routes.go)
		}
		s.followPartitions(c.effects)
		s.placePartitions(c.effects)
		res.Reply = replyFrame(ph, ph.Op, body)
		if table {
			s.clients.CommitReply(ph.Client, res.Reply)
		}
	}
	s.appliedOp, s.appliedTimestamp = ph.Op, ph.Timestamp
	return res
}

// replyFrame builds a reply per replica-plane.md 5.11 (class C): every
// field from the prepare, commit = the prepare's op, status 0.
func replyFrame(ph wire.PrepareHeader, op uint64, body []byte) []byte {
	frame := make([]byte, wire.HeaderSize+len(body))
	rh := wire.ReplyHeader{
		Cluster: ph.Cluster, Size: uint32(len(frame)), View: ph.View, Release: ph.Release, Replica: ph.Replica,
		RequestChecksum: ph.RequestChecksum, Client: ph.Client, Op: op, Commit: ph.Op,
		Timestamp: ph.Timestamp, Request: ph.Request, Operation: ph.Operation,
	}
	rh.Encode(wire.HeaderOf(frame))
	copy(frame[wire.HeaderSize:], body)
	return frame
}

// ObservePrepare lifts the creation-id allocator past the ids of a 64/65
// prepare this replica journals (replica-plane.md 5.4, 13.1), so a later
// primary never reissues one. Apply does the same for every committed op.
func (s *State) ObservePrepare(op wire.Operation, body []byte) {
	for _, a := range assignmentsOf(op, body) {
		if a.ConsensusGroupID >= s.allocator && a.ConsensusGroupID != ^uint64(0) {
			s.allocator = a.ConsensusGroupID + 1
		}
	}
}

// observeAssignments lifts both the committed next_creation_id and the
// allocator past a committed 64/65, whatever its business outcome.
func (s *State) observeAssignments(op wire.Operation, body []byte) {
	for _, a := range assignmentsOf(op, body) {
		if a.ConsensusGroupID >= s.nextCreationID && a.ConsensusGroupID != ^uint64(0) {
			s.nextCreationID = a.ConsensusGroupID + 1
		}
	}
	s.allocator = max(s.allocator, s.nextCreationID)
}

func assignmentsOf(op wire.Operation, body []byte) []wire.PartitionAssignment {
	switch op {
	case wire.OpCreateTopicWithAssignments:
		var x wire.CreateTopicWithAssignments
		if x.Decode(body) == nil {
			return x.Assignments
		}
	case wire.OpCreatePartitionsWithAssignments:
		var x wire.CreatePartitionsWithAssignments
		if x.Decode(body) == nil {
			return x.Assignments
		}
	}
	return nil
}

// Streams (client-plane.md 8.6).

func (s *State) applyCreateStream(c *applyCtx) (wire.ErrorCode, []byte) {
	var req wire.CreateStream
	if req.Decode(c.body) != nil {
		return wire.ErrInvalidCommand, nil
	}
	// Not object-scoped: denied regardless (server-behaviour.md 2.6.1).
	if !s.Allowed(c.ph.UserID, RuleStreamCreate, 0, 0) {
		return wire.ErrUnauthorized, nil
	}
	if len(req.Options) > 0 {
		return wire.ErrInvalidOptionValue, nil
	}
	if _, taken := s.streamByName[req.Name]; taken {
		return wire.ErrStreamNameAlreadyExists, nil
	}
	id, ok := lowestFree(MaxStreams, func(id uint32) bool { _, used := s.streams[id]; return used })
	if !ok {
		return wire.ErrTooManyStreams, nil
	}
	st := newStream(id, c.ph.Timestamp, req.Name, req.Options)
	s.streams[id] = st
	s.streamByName[st.Name] = id
	return 0, s.streamDetails(st).AppendTo(nil)
}

func (s *State) applyUpdateStream(c *applyCtx) (wire.ErrorCode, []byte) {
	var req wire.UpdateStream
	if req.Decode(c.body) != nil {
		return wire.ErrInvalidCommand, nil
	}
	st, code := s.manageableStream(c, req.Stream)
	if code != 0 {
		return code, nil
	}
	if len(req.Options) > 0 {
		return wire.ErrInvalidOptionValue, nil
	}
	if other, taken := s.streamByName[req.Name]; taken && other != st.ID {
		return wire.ErrStreamNameAlreadyExists, nil
	}
	delete(s.streamByName, st.Name)
	st.Name = req.Name
	s.streamByName[st.Name] = st.ID
	return 0, nil
}

func (s *State) applyDeleteStream(c *applyCtx) (wire.ErrorCode, []byte) {
	var req wire.DeleteStream
	if req.Decode(c.body) != nil {
		return wire.ErrInvalidCommand, nil
	}
	st, code := s.manageableStream(c, req.Stream)
	if code != 0 {
		return code, nil
	}
	for _, t := range st.sortedTopics() {
		s.dropTopic(c, st, t)
	}
	delete(s.streams, st.ID)
	delete(s.streamByName, st.Name)
	return 0, nil
}

func (s *State) applyPurgeStream(c *applyCtx) (wire.ErrorCode, []byte) {
	var req wire.PurgeStream
	if req.Decode(c.body) != nil {
		return wire.ErrInvalidCommand, nil
	}
	st, code := s.manageableStream(c, req.Stream)
	if code != 0 {
		return code, nil
	}
	for _, t := range st.sortedTopics() {
		s.purgeTopic(c, st, t)
	}
	return 0, nil
}

// Topics (client-plane.md 8.7).

func (s *State) applyCreateTopic(c *applyCtx) (wire.ErrorCode, []byte) {
	var x wire.CreateTopicWithAssignments
	if x.Decode(c.body) != nil {
		return wire.ErrInvalidCommand, nil
	}
	req, err := x.CreateTopic()
	if err != nil {
		return wire.ErrInvalidCommand, nil
	}
	st, ok := s.stream(req.Stream)
	if !ok {
		return wire.ErrStreamIdNotFound, nil
	}
	if !s.Allowed(c.ph.UserID, RuleTopicCreate, st.ID, 0) {
		return wire.ErrUnauthorized, nil
	}
	if _, taken := st.topicByName[req.Name]; taken {
		return wire.ErrTopicNameAlreadyExists, nil
	}
	id, ok := lowestFree(MaxTopicsPerStream, func(id uint32) bool { _, used := st.topics[id]; return used })
	if !ok {
		return wire.ErrTooManyTopics, nil
	}
	settings, ok := settingsOf(req.Options, x.Derived)
	if !ok {
		return wire.ErrInvalidOptionValue, nil
	}
	if req.PartitionsCount > MaxPartitionsPerChange || len(x.Assignments) != int(req.PartitionsCount) {
		return wire.ErrInvalidPartitionsCount, nil
	}
	for i, a := range x.Assignments {
		if a.PartitionID != uint32(i) {
			return wire.ErrInvalidPartitionsCount, nil
		}
	}
	t := &Topic{
		ID: id, CreatedAt: c.ph.Timestamp, Name: req.Name,
		MessageExpiry: settings.MessageExpiry, Compression: settings.Compression, MaxTopicSize: settings.MaxTopicSize,
		Explicit: req.Options.Sorted(), Derived: x.Derived.Sorted(), settings: settings,
	}
	for _, a := range x.Assignments {
		t.Partitions = append(t.Partitions, &Partition{ID: a.PartitionID, CreatedAt: c.ph.Timestamp, CreationID: a.ConsensusGroupID})
	}
	st.addTopic(t)
	for _, p := range t.Partitions {
		c.effects.CreatedPartitions = append(c.effects.CreatedPartitions, refOf(st, t, p))
	}
	details := s.topicDetails(st, t, false)
	return 0, details.AppendTo(nil)
}

func (s *State) applyUpdateTopic(c *applyCtx) (wire.ErrorCode, []byte) {
	var req wire.UpdateTopic
	if req.Decode(c.body) != nil {
		return wire.ErrInvalidCommand, nil
	}
	st, t, code := s.manageableTopic(c, req.Stream, req.Topic)
	if code != 0 {
		return code, nil
	}
	patch, code := planUpdateTopic(req.Options, t.settings.SegmentSize)
	if code != 0 {
		// Admission checked the block against the committed topic; only a
		// topic re-created in between can fail here ("option block not
		// applicable").
		return wire.ErrInvalidOptionValue, nil
	}
	if other, taken := st.topicByName[req.Name]; taken && other != t.ID {
		return wire.ErrTopicNameAlreadyExists, nil
	}
	delete(st.topicByName, t.Name)
	t.Name = req.Name
	st.topicByName[t.Name] = t.ID
	t.Explicit = mergeExplicit(t.Explicit, patch.verbatim)
	for key, v := range patch.set {
		t.settings.set(key, v)
	}
	t.MessageExpiry, t.Compression, t.MaxTopicSize = t.settings.MessageExpiry, t.settings.Compression, t.settings.MaxTopicSize
	c.effects.UpdatedTopics = append(c.effects.UpdatedTopics, TopicRef{Stream: st.ID, Topic: t.ID})
	return 0, nil
}

func (s *State) applyDeleteTopic(c *applyCtx) (wire.ErrorCode, []byte) {
	var req wire.DeleteTopic
	if req.Decode(c.body) != nil {
		return wire.ErrInvalidCommand, nil
	}
	st, t, code := s.manageableTopic(c, req.Stream, req.Topic)
	if code != 0 {
		return code, nil
	}
	s.dropTopic(c, st, t)
	return 0, nil
}

func (s *State) applyPurgeTopic(c *applyCtx) (wire.ErrorCode, []byte) {
	var req wire.PurgeTopic
	if req.Decode(c.body) != nil {
		return wire.ErrInvalidCommand, nil
	}
	st, t, code := s.manageableTopic(c, req.Stream, req.Topic)
	if code != 0 {
		return code, nil
	}
	s.purgeTopic(c, st, t)
	return 0, nil
}

// manageableStream resolves a stream for a stream-manage operation: not
// found before unauthorized.
func (s *State) manageableStream(c *applyCtx, id wire.Identifier) (*Stream, wire.ErrorCode) {
	st, ok := s.stream(id)
	if !ok {
		return nil, wire.ErrStreamIdNotFound
	}
	if !s.Allowed(c.ph.UserID, RuleStreamManage, st.ID, 0) {
		return nil, wire.ErrUnauthorized
	}
	return st, 0
}

// manageableTopic resolves a topic for a topic-manage operation: not found
// before unauthorized.
func (s *State) manageableTopic(c *applyCtx, stream, topic wire.Identifier) (*Stream, *Topic, wire.ErrorCode) {
	st, t, code := s.resolveTopic(stream, topic)
	if code != 0 {
		return nil, nil, code
	}
	if !s.Allowed(c.ph.UserID, RuleTopicManage, st.ID, t.ID) {
		return nil, nil, wire.ErrUnauthorized
	}
	return st, t, 0
}

// dropPartitions forgets parts of t and reports them deleted.
func (s *State) dropPartitions(c *applyCtx, st *Stream, t *Topic, parts []*Partition) {
	for _, p := range parts {
		ref := refOf(st, t, p)
		c.effects.DeletedPartitions = append(c.effects.DeletedPartitions, ref)
		s.forgetPartition(ref)
	}
}

// dropTopic removes a topic with its partitions and groups (cascade, 1.2.2).
func (s *State) dropTopic(c *applyCtx, st *Stream, t *Topic) {
	s.dropPartitions(c, st, t, t.Partitions)
	delete(s.cursors, topicKey(st.ID, t.ID))
	delete(st.topics, t.ID)
	delete(st.topicByName, t.Name)
}

// purgeTopic wipes every partition of t (server-behaviour.md 5.8): a new
// purge generation, no pending truncation watermark, zeroed statistics.
func (s *State) purgeTopic(c *applyCtx, st *Stream, t *Topic) {
	for _, p := range t.Partitions {
		p.PurgeGeneration++
		p.DeleteBelow = 0
		ref := refOf(st, t, p)
		if _, known := s.stats[ref.Group]; known {
			s.stats[ref.Group] = PartitionStats{}
		}
		c.effects.PurgedPartitions = append(c.effects.PurgedPartitions, ref)
	}
}

// Partitions and segments (client-plane.md 8.8, 8.9).

func (s *State) applyCreatePartitions(c *applyCtx) (wire.ErrorCode, []byte) {
	var x wire.CreatePartitionsWithAssignments
	if x.Decode(c.body) != nil {
		return wire.ErrInvalidCommand, nil
	}
	req, err := x.CreatePartitions()
	if err != nil {
		return wire.ErrInvalidCommand, nil
	}
	st, t, code := s.manageableTopic(c, req.Stream, req.Topic)
	if code != 0 {
		return code, nil
	}
	if req.PartitionsCount == 0 || req.PartitionsCount > MaxPartitionsPerChange {
		return wire.ErrTooManyPartitions, nil
	}
	if len(x.Assignments) != int(req.PartitionsCount) {
		return wire.ErrInvalidPartitionsCount, nil
	}
	for i, a := range x.Assignments {
		if a.PartitionID != uint32(i) {
			return wire.ErrInvalidPartitionsCount, nil
		}
	}
	first := uint32(len(t.Partitions))
	if uint64(first)+uint64(req.PartitionsCount)-1 > MaxPartitionID {
		return wire.ErrPartitionIdSpaceExhausted, nil
	}
	for _, a := range x.Assignments {
		p := &Partition{ID: first + a.PartitionID, CreatedAt: c.ph.Timestamp, CreationID: a.ConsensusGroupID}
		t.Partitions = append(t.Partitions, p)
		c.effects.CreatedPartitions = append(c.effects.CreatedPartitions, refOf(st, t, p))
	}
	t.rebalanceGroups()
	return 0, nil
}

func (s *State) applyDeletePartitions(c *applyCtx) (wire.ErrorCode, []byte) {
	var req wire.DeletePartitions
	if req.Decode(c.body) != nil {
		return wire.ErrInvalidCommand, nil
	}
	st, t, code := s.manageableTopic(c, req.Stream, req.Topic)
	if code != 0 {
		return code, nil
	}
	if req.PartitionsCount == 0 || req.PartitionsCount > MaxPartitionsPerChange {
		return wire.ErrTooManyPartitions, nil
	}
	if int(req.PartitionsCount) > len(t.Partitions) {
		return wire.ErrInvalidPartitionsCount, nil
	}
	keep := len(t.Partitions) - int(req.PartitionsCount)
	s.dropPartitions(c, st, t, t.Partitions[keep:])
	t.Partitions = t.Partitions[:keep:keep]
	t.rebalanceGroups()
	return 0, nil
}

func (s *State) applyTruncatePartition(c *applyCtx) (wire.ErrorCode, []byte) {
	var req wire.TruncatePartition
	if req.Decode(c.body) != nil {
		return wire.ErrInvalidCommand, nil
	}
	st, t, code := s.resolveTopic(req.Stream, req.Topic)
	if code != 0 {
		return code, nil
	}
	if int64(req.PartitionID) >= int64(len(t.Partitions)) {
		return wire.ErrPartitionNotFound, nil
	}
	if !s.Allowed(c.ph.UserID, RuleTopicManage, st.ID, t.ID) {
		return wire.ErrUnauthorized, nil
	}
	if req.UpToOffset == noTruncation {
		return 0, nil // nothing sealed to delete: a committed no-op (5.9.2)
	}
	p := t.Partitions[req.PartitionID]
	p.DeleteBelow = max(p.DeleteBelow, req.UpToOffset+1) // only moves forward (5.9.3)
	c.effects.Truncated = append(c.effects.Truncated, Truncation{Partition: refOf(st, t, p), UpToOffset: p.DeleteBelow - 1})
	return 0, nil
}
