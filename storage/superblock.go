package storage

import (
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/zeebo/xxh3"

	"iggynode/wire"
)

// Superblock record (replica-plane.md 9.2).
const (
	superblockMagic       = 0x53424C4B // on-disk bytes 4B 4C 42 53
	superblockVersion     = 1
	superblockFramingSize = 28
	superblockTrailerSize = 8
	// VsrStatePayloadSize is the VsrState payload; the 58-byte legacy form
	// without offset_frontier is accepted on read.
	VsrStatePayloadSize       = 66
	vsrStateLegacyPayloadSize = 58
	// SuperblockRecordSize is the size of every record this package writes.
	SuperblockRecordSize = superblockFramingSize + VsrStatePayloadSize + superblockTrailerSize
)

// VsrState is a group's durable VSR state, the 9.2 payload.
type VsrState struct {
	Cluster            wire.U128
	ReplicaID          uint8
	ReplicaCount       uint8
	View               uint32
	LogView            uint32
	CommitMax          uint64
	CheckpointOp       uint64
	CheckpointChecksum wire.U128 // W(H64(snapshot payload)), SnapshotChecksum
	// OffsetFrontier is the next message offset of a partition group; 0 for
	// the metadata group.
	OffsetFrontier uint64
}

// appendSuperblock appends the 9.2 record holding s with the given sequence:
// framing, the 66-byte payload, and the trailer H64(framing + payload).
func appendSuperblock(dst []byte, sequence uint64, s VsrState) []byte {
	at := len(dst)
	dst = wire.AppendU32(dst, superblockMagic)
	dst = wire.AppendU16(dst, superblockVersion)
	dst = wire.AppendU16(dst, 0) // reserved
	dst = wire.AppendU64(dst, sequence)
	dst = wire.AppendU64(dst, 0) // parent_checksum
	dst = wire.AppendU32(dst, VsrStatePayloadSize)
	dst = wire.AppendU128(dst, s.Cluster)
	dst = wire.AppendU8(dst, s.ReplicaID)
	dst = wire.AppendU8(dst, s.ReplicaCount)
	dst = wire.AppendU32(dst, s.View)
	dst = wire.AppendU32(dst, s.LogView)
	dst = wire.AppendU64(dst, s.CommitMax)
	dst = wire.AppendU64(dst, s.CheckpointOp)
	dst = wire.AppendU128(dst, s.CheckpointChecksum)
	dst = wire.AppendU64(dst, s.OffsetFrontier)
	return wire.AppendU64(dst, xxh3.Hash(dst[at:]))
}

// decodeSuperblock verifies a 9.2 record (exact length, trailer, magic,
// version, payload length) and decodes it. reserved and parent_checksum are
// not checked: they are covered by the trailer and carry nothing.
func decodeSuperblock(b []byte) (sequence uint64, s VsrState, err error) {
	if len(b) < superblockFramingSize+superblockTrailerSize {
		return 0, s, fmt.Errorf("%w: superblock of %d bytes", ErrCorrupt, len(b))
	}
	n := binary.LittleEndian.Uint32(b[24:])
	if n != VsrStatePayloadSize && n != vsrStateLegacyPayloadSize {
		return 0, s, fmt.Errorf("%w: superblock payload_len %d", ErrCorrupt, n)
	}
	end := superblockFramingSize + int(n)
	if len(b) != end+superblockTrailerSize {
		return 0, s, fmt.Errorf("%w: superblock of %d bytes, payload_len %d", ErrCorrupt, len(b), n)
	}
	if sum := xxh3.Hash(b[:end]); sum != binary.LittleEndian.Uint64(b[end:]) {
		return 0, s, fmt.Errorf("%w: superblock trailer %#x, computed %#x", ErrCorrupt, binary.LittleEndian.Uint64(b[end:]), sum)
	}
	r := wire.NewReader(b[:end])
	if m := r.U32("magic"); m != superblockMagic {
		return 0, s, fmt.Errorf("%w: superblock magic %#x", ErrCorrupt, m)
	}
	if v := r.U16("version"); v != superblockVersion {
		return 0, s, fmt.Errorf("%w: superblock version %d", ErrCorrupt, v)
	}
	r.U16("reserved")
	sequence = r.U64("sequence")
	r.U64("parent_checksum")
	r.U32("payload_len")
	s.Cluster = r.U128("cluster")
	s.ReplicaID = r.U8("replica_id")
	s.ReplicaCount = r.U8("replica_count")
	s.View = r.U32("view")
	s.LogView = r.U32("log_view")
	s.CommitMax = r.U64("commit_max")
	s.CheckpointOp = r.U64("checkpoint_op")
	s.CheckpointChecksum = r.U128("checkpoint_checksum")
	if n == VsrStatePayloadSize {
		s.OffsetFrontier = r.U64("offset_frontier")
	}
	if r.Err() != nil || r.Len() != 0 {
		return 0, s, fmt.Errorf("%w: superblock: %v", ErrCorrupt, r.Err())
	}
	return sequence, s, nil
}

// superblockSeq is the last sequence written for a group; it serializes
// the group's superblock writes so sequences only grow.
type superblockSeq struct {
	mu     sync.Mutex
	loaded bool
	seq    uint64
}

func (s *Store) superblockSeq(group uint64) *superblockSeq {
	s.seqMu.Lock()
	defer s.seqMu.Unlock()
	g := s.seqs[group]
	if g == nil {
		g = &superblockSeq{}
		s.seqs[group] = g
	}
	return g
}

// SaveVsrState writes group's superblock record with the next sequence.
// With sync it is fsynced before the call returns, as 6.13 requires before
// a view-scoped send. One key replaces the ping-pong pair of 9.1: a badger
// commit is atomic, so a torn write leaves the previous record. A stored
// record that fails verification refuses the write (9.3 step 2).
func (s *Store) SaveVsrState(group uint64, st VsrState, sync bool) error {
	g := s.superblockSeq(group)
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.loaded {
		seq, _, ok, err := s.loadSuperblock(group)
		if err != nil {
			return err
		}
		if ok {
			g.seq = seq
		}
		g.loaded = true
	}
	rec := appendSuperblock(make([]byte, 0, SuperblockRecordSize), g.seq+1, st)
	if err := s.set(kindPrefix(group, kindSuperblock), rec, sync); err != nil {
		return fmt.Errorf("storage: save vsr state group %d: %w", group, err)
	}
	g.seq++
	return nil
}

// LoadVsrState reads group's superblock record and verifies its trailer; a
// record that fails verification is an error wrapping ErrCorrupt.
func (s *Store) LoadVsrState(group uint64) (VsrState, bool, error) {
	_, st, ok, err := s.loadSuperblock(group)
	return st, ok, err
}

func (s *Store) loadSuperblock(group uint64) (uint64, VsrState, bool, error) {
	b, ok, err := s.get(kindPrefix(group, kindSuperblock))
	if err != nil || !ok {
		if err != nil {
			err = fmt.Errorf("storage: load vsr state group %d: %w", group, err)
		}
		return 0, VsrState{}, false, err
	}
	seq, st, err := decodeSuperblock(b)
	if err != nil {
		return 0, VsrState{}, false, fmt.Errorf("storage: vsr state group %d: %w", group, err)
	}
	return seq, st, true, nil
}
