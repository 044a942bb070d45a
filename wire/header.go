package wire

import (
	"encoding/binary"
	"fmt"

	"github.com/zeebo/xxh3"
)

const (
	// HeaderSize is the size of every header on both planes.
	HeaderSize = 256
	// SizeOffset is where the u32 total frame length sits, readable before
	// the header is typed.
	SizeOffset = 48
	// CommandOffset is where the command byte sits.
	CommandOffset = 60
	// DefaultMaxFrameSize is the default bus limit for a whole frame (64 MiB).
	DefaultMaxFrameSize = 64 << 20
)

// Header is the generic 256-byte header shared by every frame of both
// planes. The first 128 bytes are common (replica-plane.md 1.2); bytes
// 128..256 are read through the per-command views (RequestHeader,
// ReplyHeader, EvictionHeader here; the replica-plane views alongside).
type Header [HeaderSize]byte

// HeaderOf views the first 256 bytes of b as a Header (b must hold them).
func HeaderOf(b []byte) *Header { return (*Header)(b[:HeaderSize]) }

// FrameSize reads the `size` field of a frame prefix that holds at least 52
// bytes. It does not judge the value; see CheckFrameSize.
func FrameSize(prefix []byte) (uint32, error) {
	if len(prefix) < SizeOffset+4 {
		return 0, decodeErr("size", errShort)
	}
	return binary.LittleEndian.Uint32(prefix[SizeOffset:]), nil
}

// CheckFrameSize enforces 256 <= size <= max (client-plane.md 1, 3). A frame
// outside the window closes the connection (QUIC: abandons its stream).
func CheckFrameSize(size, max uint32) error {
	if size < HeaderSize {
		return decodeErr("size", fmt.Sprintf("%d below the 256-byte header", size))
	}
	if size > max {
		return decodeErr("size", fmt.Sprintf("%d above the %d-byte limit", size, max))
	}
	return nil
}

// Common fields (replica-plane.md 1.2).

func (h *Header) Checksum() U128         { return getU128(h[0:]) }
func (h *Header) SetChecksum(v U128)     { putU128(h[0:], v) }
func (h *Header) ChecksumBody() U128     { return getU128(h[16:]) }
func (h *Header) SetChecksumBody(v U128) { putU128(h[16:], v) }
func (h *Header) Cluster() U128          { return getU128(h[32:]) }
func (h *Header) SetCluster(v U128)      { putU128(h[32:], v) }
func (h *Header) Size() uint32           { return binary.LittleEndian.Uint32(h[48:]) }
func (h *Header) SetSize(v uint32)       { binary.LittleEndian.PutUint32(h[48:], v) }
func (h *Header) View() uint32           { return binary.LittleEndian.Uint32(h[52:]) }
func (h *Header) SetView(v uint32)       { binary.LittleEndian.PutUint32(h[52:], v) }
func (h *Header) Release() uint32        { return binary.LittleEndian.Uint32(h[56:]) }
func (h *Header) SetRelease(v uint32)    { binary.LittleEndian.PutUint32(h[56:], v) }
func (h *Header) Command() Command       { return Command(h[60]) }
func (h *Header) SetCommand(c Command)   { h[60] = byte(c) }
func (h *Header) Replica() uint8         { return h[61] }
func (h *Header) SetReplica(v uint8)     { h[61] = v }

// Field accessors for the per-command area, shared by every view.

func (h *Header) u32(off int) uint32       { return binary.LittleEndian.Uint32(h[off:]) }
func (h *Header) u64(off int) uint64       { return binary.LittleEndian.Uint64(h[off:]) }
func (h *Header) u128(off int) U128        { return getU128(h[off:]) }
func (h *Header) putU32(off int, v uint32) { binary.LittleEndian.PutUint32(h[off:], v) }
func (h *Header) putU64(off int, v uint64) { binary.LittleEndian.PutUint64(h[off:], v) }
func (h *Header) putU128(off int, v U128)  { putU128(h[off:], v) }

// zero reports whether h[from:to] is all zero.
func (h *Header) zero(from, to int) bool {
	for _, b := range h[from:to] {
		if b != 0 {
			return false
		}
	}
	return true
}

// common carries the first-128-byte fields a view echoes or sets.
type common struct {
	Cluster U128
	Size    uint32
	View    uint32
	Release uint32
	Replica uint8
}

func (h *Header) readCommon() common {
	return common{Cluster: h.Cluster(), Size: h.Size(), View: h.View(), Release: h.Release(), Replica: h.Replica()}
}

func (h *Header) writeCommon(c common, cmd Command) {
	h.SetCluster(c.Cluster)
	h.SetSize(c.Size)
	h.SetView(c.View)
	h.SetRelease(c.Release)
	h.SetCommand(cmd)
	h.SetReplica(c.Replica)
}

// RequestChecksum is the optional request stamp: XXH3-64 of the whole body,
// widened (client-plane.md 12.3).
func RequestChecksum(body []byte) U128 { return Widen(xxh3.Hash(body)) }
