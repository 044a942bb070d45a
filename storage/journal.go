package storage

import (
	"fmt"

	"iggynode/wire"
)

// maxPrepareFrameBytes: a journal entry larger than 64 MiB is corrupt
// (replica-plane.md 9.1), so one is never written.
const maxPrepareFrameBytes = 64 << 20

// AppendPrepare journals a prepare frame (256-byte header + body) verbatim
// under (group, op), replacing a frame already held at op (repair installs
// the canonical prepare over a divergent one). With sync the frame is
// fsynced before the call returns (metadata prepares: replica-plane.md 9.1,
// 9.5 rule 1); without it the frame survives a process crash, not a power
// loss. The frame may be reused once the call returns.
func (s *Store) AppendPrepare(group, op uint64, frame []byte, sync bool) error {
	if len(frame) < wire.HeaderSize || len(frame) > maxPrepareFrameBytes {
		return fmt.Errorf("storage: prepare op %d: frame of %d bytes", op, len(frame))
	}
	if err := s.set(u64Key(group, kindPrepare, op), frame, sync); err != nil {
		return fmt.Errorf("storage: append prepare group %d op %d: %w", group, op, err)
	}
	return nil
}

// ScanPrepares calls fn for every journaled op >= fromOp of group in
// ascending op order. frame is valid only during the call (it may point
// into badger's memory-mapped files): copy what you keep. An error from fn
// ends the scan and is returned, except ErrStopScan which ends it cleanly.
func (s *Store) ScanPrepares(group, fromOp uint64, fn func(op uint64, frame []byte) error) error {
	return s.scan(kindPrefix(group, kindPrepare), u64Key(group, kindPrepare, fromOp), func(key, v []byte) error {
		return fn(keyU64(key), v)
	})
}

// GetPrepare returns a copy of the frame journaled at (group, op), if any.
func (s *Store) GetPrepare(group, op uint64) ([]byte, bool, error) {
	return s.get(u64Key(group, kindPrepare, op))
}

// TruncatePrepares drops every journaled op >= fromOp of group (a rejected
// uncommitted suffix, replica-plane.md 6.10 step 8, 9.3 step 3). It is
// synced: ops truncated for a new view must not come back after a power
// loss next to the prepares that replace them.
func (s *Store) TruncatePrepares(group, fromOp uint64) error {
	if err := s.deleteRange(kindPrefix(group, kindPrepare), u64Key(group, kindPrepare, fromOp), nil, true); err != nil {
		return fmt.Errorf("storage: truncate prepares group %d from op %d: %w", group, fromOp, err)
	}
	return nil
}

// CompactPrepares drops every journaled op < belowOp of group, after a
// checkpoint made them redundant (replica-plane.md 9.1 step 4: pass
// belowOp = snap_op to keep the commit-point entry). It is not synced: a
// compaction lost to a power loss only leaves entries the next one drops.
func (s *Store) CompactPrepares(group, belowOp uint64) error {
	prefix := kindPrefix(group, kindPrepare)
	if err := s.deleteRange(prefix, prefix, u64Key(group, kindPrepare, belowOp), false); err != nil {
		return fmt.Errorf("storage: compact prepares group %d below op %d: %w", group, belowOp, err)
	}
	return nil
}
