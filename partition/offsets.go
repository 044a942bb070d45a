package partition

import (
	"cmp"
	"slices"

	"iggynode/wire"
)

// Consumer offsets (client-plane.md 2.3, 8.5; server-behaviour.md 6).
//
// The table is keyed by (consumer kind, key): for a plain consumer (kind 1)
// the key is its numeric id or wire.ConsumerNameKey of its name (XXH32), for
// a consumer group (kind 2) the group's numeric id. Plain consumers and
// groups live in separate slots (6.1).

type offsetSlot struct {
	kind wire.ConsumerKind
	key  uint32
}

// StoredOffset is one row of the table.
type StoredOffset struct {
	Kind   wire.ConsumerKind
	Key    uint32
	Offset uint64
}

// CheckStore validates a StoreConsumerOffset at admission, against the
// committed state (server-behaviour.md 6.3.2; replica-plane.md 5.13 rule
// 5): InvalidOffset (4100) when the partition holds no message or offset is
// past the newest one; storing exactly the current offset is allowed. 0
// means valid.
func (l *Log) CheckStore(offset uint64) wire.ErrorCode {
	if !l.HasMessages() || offset > l.CurrentOffset() {
		return wire.ErrInvalidOffset
	}
	return 0
}

// CheckDelete validates a DeleteConsumerOffset at admission (6.4):
// ConsumerOffsetNotFound (3021) when nothing is stored. 0 means valid.
func (l *Log) CheckDelete(kind wire.ConsumerKind, key uint32) wire.ErrorCode {
	if _, ok := l.offsets[offsetSlot{kind, key}]; !ok {
		return wire.ErrConsumerOffsetNotFound
	}
	return 0
}

// GetOffset returns the stored offset of a consumer or group; false when
// none is stored (never stored, deleted, or wiped by a purge).
func (l *Log) GetOffset(kind wire.ConsumerKind, key uint32) (uint64, bool) {
	o, ok := l.offsets[offsetSlot{kind, key}]
	return o, ok
}

// ApplyStoreOffset stores a consumer offset: a committed
// StoreConsumerOffset, a NoAck store on the primary (6.5) or a poll's
// auto-commit (5.5.7). Storing overwrites and may move backwards (6.3.4).
// A stored offset never passes the commit frontier: an offset past the
// newest committed message, or any offset on an empty partition (a write
// admitted before a purge, 5.8.3), is discarded and false returned.
func (l *Log) ApplyStoreOffset(kind wire.ConsumerKind, key uint32, offset uint64) bool {
	if l.CheckStore(offset) != 0 {
		return false
	}
	l.offsets[offsetSlot{kind, key}] = offset
	return true
}

// ApplyDeleteOffset deletes a stored offset (a committed
// DeleteConsumerOffset, a NoAck delete, or a deleted group's cleanup, 6.6);
// false when none was stored.
func (l *Log) ApplyDeleteOffset(kind wire.ConsumerKind, key uint32) bool {
	s := offsetSlot{kind, key}
	if _, ok := l.offsets[s]; !ok {
		return false
	}
	delete(l.offsets, s)
	return true
}

// ConsumerOffsets returns the table sorted by (kind, key), for persistence
// and tests.
func (l *Log) ConsumerOffsets() []StoredOffset {
	out := make([]StoredOffset, 0, len(l.offsets))
	for s, o := range l.offsets {
		out = append(out, StoredOffset{Kind: s.kind, Key: s.key, Offset: o})
	}
	slices.SortFunc(out, func(a, b StoredOffset) int {
		if c := cmp.Compare(a.Kind, b.Kind); c != 0 {
			return c
		}
		return cmp.Compare(a.Key, b.Key)
	})
	return out
}

// ConsumerBarrier is the smallest stored offset across every consumer and
// group (5.7.4); false when nobody stored an offset (no barrier).
func (l *Log) ConsumerBarrier() (uint64, bool) {
	var barrier uint64
	found := false
	for _, o := range l.offsets {
		if !found || o < barrier {
			barrier, found = o, true
		}
	}
	return barrier, found
}
