package storage

import (
	"encoding/binary"
	"fmt"
)

// OffsetKey names one stored consumer offset within a partition: the
// consumer kind (1 consumer, 2 consumer group; client-plane.md 2.3) and the
// consumer key (the consumer's numeric id or name hash, or the group id).
type OffsetKey struct {
	Kind     uint8
	Consumer uint32
}

// StoreOffset stores a consumer offset of group (replica-plane.md 9.4 rule
// 3: when its op commits). sync follows the topic's enforce_fsync.
func (s *Store) StoreOffset(group uint64, kind uint8, consumerKey uint32, offset uint64, sync bool) error {
	v := binary.LittleEndian.AppendUint64(make([]byte, 0, 8), offset)
	if err := s.set(offsetKey(group, kind, consumerKey), v, sync); err != nil {
		return fmt.Errorf("storage: store offset group %d %d/%d: %w", group, kind, consumerKey, err)
	}
	return nil
}

// DeleteOffset deletes a consumer offset of group; deleting a missing one is
// not an error. Not synced (as the reference server removes its offset
// file): it survives a process crash.
func (s *Store) DeleteOffset(group uint64, kind uint8, consumerKey uint32) error {
	if err := s.del(offsetKey(group, kind, consumerKey)); err != nil {
		return fmt.Errorf("storage: delete offset group %d %d/%d: %w", group, kind, consumerKey, err)
	}
	return nil
}

// LoadOffsets returns every stored consumer offset of group.
func (s *Store) LoadOffsets(group uint64) (map[OffsetKey]uint64, error) {
	out := make(map[OffsetKey]uint64)
	prefix := kindPrefix(group, kindOffset)
	err := s.scan(prefix, prefix, func(key, v []byte) error {
		if len(key) != offsetKeyLen || len(v) != 8 {
			return fmt.Errorf("%w: offset key %x holds %d bytes", ErrCorrupt, key, len(v))
		}
		k := OffsetKey{Kind: key[kindPrefixLen], Consumer: binary.BigEndian.Uint32(key[kindPrefixLen+1:])}
		out[k] = binary.LittleEndian.Uint64(v)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("storage: load offsets group %d: %w", group, err)
	}
	return out, nil
}
