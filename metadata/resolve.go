package metadata

import (
	"sort"

	"iggynode/wire"
)

// Resolution helpers for the request path (replica-plane.md 4.1, 13.4):
// identifiers against committed metadata, to numeric ids and the partition
// group id.

// ResolveStream returns the numeric id of a stream identifier.
func (s *State) ResolveStream(id wire.Identifier) (uint32, bool) {
	st, ok := s.stream(id)
	if !ok {
		return 0, false
	}
	return st.ID, true
}

// ResolveTopic returns the numeric ids of a stream and topic, or the
// not-found code: StreamIdNotFound (1009) or TopicIdNotFound (2010).
func (s *State) ResolveTopic(stream, topic wire.Identifier) (streamID, topicID uint32, code wire.ErrorCode) {
	st, t, code := s.resolveTopic(stream, topic)
	if code != 0 {
		return 0, 0, code
	}
	return st.ID, t.ID, 0
}

// ResolvePartition resolves an explicit partition id (polls, offsets,
// delete segments), or the not-found code: 1009, 2010 or
// PartitionNotFound (3007).
func (s *State) ResolvePartition(stream, topic wire.Identifier, partitionID uint32) (PartitionRef, wire.ErrorCode) {
	st, t, code := s.resolveTopic(stream, topic)
	if code != 0 {
		return PartitionRef{}, code
	}
	if int64(partitionID) >= int64(len(t.Partitions)) {
		return PartitionRef{}, wire.ErrPartitionNotFound
	}
	return refOf(st, t, t.Partitions[partitionID]), 0
}

// ResolveSend picks the target partition of a SendMessages (13.4 rule 2;
// client-plane.md 14.2): PartitionId(p) must exist; Balanced takes index
// cursor mod count in ascending id order and advances the topic's
// in-memory cursor (not replicated, starts at 0); MessagesKey(k) takes
// index XXH32(k) mod count. Any failure, a topic without partitions
// included, is ResourceNotFound (20).
func (s *State) ResolveSend(stream, topic wire.Identifier, p wire.Partitioning) (PartitionRef, wire.ErrorCode) {
	st, t, code := s.resolveTopic(stream, topic)
	if code != 0 {
		return PartitionRef{}, wire.ErrResourceNotFound
	}
	idx, ok := sendIndex(uint32(len(t.Partitions)), p, s.cursor(st.ID, t.ID))
	if !ok {
		return PartitionRef{}, wire.ErrResourceNotFound
	}
	return refOf(st, t, t.Partitions[idx]), 0
}

// Partitions lists every existing partition, ascending by group id, so
// the shell can start the partition actors at boot.
func (s *State) Partitions() []PartitionRef {
	var out []PartitionRef
	for _, st := range s.streams {
		for _, t := range st.topics {
			for _, p := range t.Partitions {
				out = append(out, refOf(st, t, p))
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Group < out[j].Group })
	return out
}

// TopicPartitions lists one topic's partitions, by id (nil for an unknown
// topic): a topic's share of Partitions, without walking every topic.
func (s *State) TopicPartitions(stream, topic uint32) []PartitionRef {
	st, ok := s.streams[stream]
	if !ok {
		return nil
	}
	t, ok := st.topics[topic]
	if !ok {
		return nil
	}
	out := make([]PartitionRef, 0, len(t.Partitions))
	for _, p := range t.Partitions {
		out = append(out, refOf(st, t, p))
	}
	return out
}

// PartitionCount is how many partitions a topic has (0 for an unknown one).
func (s *State) PartitionCount(stream, topic uint32) int {
	if st, ok := s.streams[stream]; ok {
		if t, ok := st.topics[topic]; ok {
			return len(t.Partitions)
		}
	}
	return 0
}

// Partition returns the partition of a group id, if it exists.
func (s *State) Partition(group uint64) (PartitionRef, bool) {
	if _, ok := s.partitionByGroup(group); !ok {
		return PartitionRef{}, false
	}
	sid, tid, pid := wire.SplitPartitionGroup(group)
	st := s.streams[sid]
	t := st.topics[tid]
	return refOf(st, t, t.Partitions[pid]), true
}

// TopicSettings returns a topic's effective settings (explicit over
// derived; the updatable three as the header reports them).
func (s *State) TopicSettings(stream, topic uint32) (TopicSettings, bool) {
	st, ok := s.streams[stream]
	if !ok {
		return TopicSettings{}, false
	}
	t, ok := st.topics[topic]
	if !ok {
		return TopicSettings{}, false
	}
	return t.settings, true
}

// DeleteBelow returns a partition's truncation watermark (one more than
// the highest committed TruncatePartition offset; 0 = nothing deletable).
func (s *State) DeleteBelow(group uint64) uint64 {
	if p, ok := s.partitionByGroup(group); ok {
		return p.DeleteBelow
	}
	return 0
}

// UserExists reports whether a user id exists (a session whose user was
// deleted is unauthenticated for gated commands, server-behaviour.md 2.2.6).
func (s *State) UserExists(userID uint32) bool { _, ok := s.users[userID]; return ok }
