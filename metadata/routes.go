package metadata

import (
	"maps"
	"sync/atomic"

	"iggynode/wire"
)

// Routes is an immutable copy of what routing partition traffic needs
// (stream and topic names and ids, each topic's partitions, the users'
// permissions), so the shell can route a SendMessages or a consumer's
// PollMessages off the actor that applies metadata (DESIGN.md, "one
// mailbox must never carry everything"). It answers only the requests it
// can route: any miss (an unknown name, a denied permission) returns
// false, and the caller asks the state itself, which gives the error
// code. The rules (partition choice, permissions) are the state's own
// functions; the Balanced cursor is shared with the state (one cursor per
// topic, advanced atomically from every goroutine that routes).
type Routes struct {
	streams      map[uint32]*routeStream
	streamByName map[string]uint32
	// perms are every user's permissions; decoded permissions are
	// replaced, never changed in place.
	perms map[uint32]*wire.Permissions
}

type routeStream struct {
	topics      map[uint32]*routeTopic
	topicByName map[string]uint32
}

type routeTopic struct {
	partitions []PartitionRef
	cursor     *atomic.Uint32
}

// Routes returns the routes of the current state. They are rebuilt, at
// O(streams + topics + partitions + users), only after an op that can
// change them (an Apply or Bootstrap drops s.routes): logins, consumer
// group and token ops never do, so a login flood costs no rebuild.
func (s *State) Routes() *Routes {
	if s.routes != nil {
		return s.routes
	}
	r := &Routes{
		streams:      make(map[uint32]*routeStream, len(s.streams)),
		streamByName: maps.Clone(s.streamByName),
		perms:        make(map[uint32]*wire.Permissions, len(s.users)),
	}
	for id, st := range s.streams {
		rs := &routeStream{topics: make(map[uint32]*routeTopic, len(st.topics)), topicByName: maps.Clone(st.topicByName)}
		for tid, t := range st.topics {
			rt := &routeTopic{partitions: make([]PartitionRef, len(t.Partitions)), cursor: s.cursor(st.ID, t.ID)}
			for i, p := range t.Partitions {
				rt.partitions[i] = refOf(st, t, p)
			}
			rs.topics[tid] = rt
		}
		r.streams[id] = rs
	}
	for id, u := range s.users {
		r.perms[id] = u.Permissions
	}
	s.routes = r
	return r
}

// routingOp reports whether a committed op of the default kind can change
// Routes; the others (consumer groups, tokens, passwords) are frequent or
// unrelated, and rebuilding for them would make the rebuild's O(partitions)
// cost grow with traffic that never routes.
func routingOp(op wire.Operation) bool {
	switch op {
	case wire.OpCreateConsumerGroup, wire.OpDeleteConsumerGroup, wire.OpJoinConsumerGroup,
		wire.OpLeaveConsumerGroup, wire.OpCompleteConsumerGroupRevocation,
		wire.OpCreatePersonalAccessToken, wire.OpDeletePersonalAccessToken, wire.OpChangePassword:
		return false
	}
	return true
}

// cursor is the Balanced cursor of (stream, topic), created at 0.
func (s *State) cursor(stream, topic uint32) *atomic.Uint32 {
	key := topicKey(stream, topic)
	c := s.cursors[key]
	if c == nil {
		c = new(atomic.Uint32)
		s.cursors[key] = c
	}
	return c
}

func (r *Routes) topic(stream, topic wire.Identifier) (*routeTopic, bool) {
	st, ok := lookup(stream, r.streams, r.streamByName)
	if !ok {
		return nil, false
	}
	return lookup(topic, st.topics, st.topicByName)
}

// SendAs is State.ResolveSend where it succeeds for a user that
// State.Allowed lets send to the topic; the permission is checked before
// a Balanced cursor moves, so a send this refuses (and the state then
// answers) advances it once, as on the state alone.
func (r *Routes) SendAs(userID uint32, stream, topic wire.Identifier, p wire.Partitioning) (PartitionRef, bool) {
	t, ok := r.topic(stream, topic)
	if !ok || len(t.partitions) == 0 {
		return PartitionRef{}, false
	}
	if first := t.partitions[0]; !r.Allowed(userID, RuleSend, first.Stream, first.Topic) {
		return PartitionRef{}, false
	}
	idx, ok := sendIndex(uint32(len(t.partitions)), p, t.cursor)
	if !ok {
		return PartitionRef{}, false
	}
	return t.partitions[idx], true
}

// ResolvePartition is State.ResolvePartition where it succeeds.
func (r *Routes) ResolvePartition(stream, topic wire.Identifier, partitionID uint32) (PartitionRef, bool) {
	t, ok := r.topic(stream, topic)
	if !ok || int64(partitionID) >= int64(len(t.partitions)) {
		return PartitionRef{}, false
	}
	return t.partitions[partitionID], true
}

// Allowed is State.Allowed.
func (r *Routes) Allowed(userID uint32, rule Rule, stream, topic uint32) bool {
	return permitted(userID, r.perms[userID], rule, stream, topic)
}

// sendIndex is the partition index a SendMessages' partitioning picks
// among n (13.4 rule 2; client-plane.md 14.2), advancing a Balanced
// cursor.
func sendIndex(n uint32, p wire.Partitioning, cursor *atomic.Uint32) (uint32, bool) {
	if n == 0 {
		return 0, false
	}
	switch p.Kind {
	case wire.PartitionByID:
		return p.ID, p.ID < n
	case wire.PartitionBalanced:
		for { // cursor mod n, then the cursor is the next index (it wraps with the count)
			c := cursor.Load()
			if cursor.CompareAndSwap(c, c%n+1) {
				return c % n, true
			}
		}
	case wire.PartitionByMessageKey:
		return wire.PartitionIndexForKey(p.Key, n), true
	}
	return 0, false
}
