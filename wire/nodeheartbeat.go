package wire

import (
	"encoding/binary"
	"fmt"
)

// NodeHeartbeat (command 64) is an iggynode extension of the replica
// plane, not part of replica-plane.md: the node-level heartbeat that
// carries the liveness of a node and the quiescence entries of its
// consensus groups (vsr/quiesce.go, vsr/liveness.go), one frame per peer
// link per interval however many groups the nodes share. Only iggynode
// nodes send it: a reference server closes the link on a command above 29
// (1.1 rule 3), so a mixed cluster must run with cluster.quiescence off.
//
// Layout (little-endian, offsets absolute; the first 128 bytes are the
// common header of 1.2):
//
//	0    16  checksum       u128  frame seal (2.1): W(H64(header[16..256]))
//	16   16  checksum_body  u128  body seal (2.3): W(H64(body))
//	32   16  cluster        u128  the cluster id (3.3)
//	48    4  size           u32   256 + 24 * entry_count
//	52    4  view           u32   0
//	56    4  release        u32   0
//	60    1  command        u8    64
//	61    1  replica        u8    the sender's replica id
//	62   66  reserved_frame       zero
//	128  16  incarnation    u128  the sender's boot id (random per start, never 0)
//	144   8  beat           u64   the sender's heartbeat counter, +1 per frame
//	152   4  entry_count    u32   at most NodeHeartbeatMaxEntries
//	156 100  reserved             zero
//
// Body: entry_count entries of 24 bytes:
//
//	0   8  group   u64  the consensus group (4.1)
//	8   8  commit  u64  the commit point the entry names
//	16  4  view    u32  the view of that commit point
//	20  1  kind    u8   1: notice (the sender, the group's primary, is idle
//	                       at (view, commit)); 2: confirm (the sender, a
//	                       backup, applied the view's log up to commit and is
//	                       quiet)
//	21  3  reserved     zero
//
// Validation (DecodeNodeHeartbeat): command 64, size as above with the
// count in range, frame seal, body seal, zero reserved bytes, a known kind
// in every entry, non-zero incarnation. A failure drops the frame only.

// CmdNodeHeartbeat is the node-level heartbeat extension.
const CmdNodeHeartbeat Command = 64

// NodeHeartbeatEntrySize is the size of one body entry.
const NodeHeartbeatEntrySize = 24

// NodeHeartbeatMaxEntries bounds entry_count: a frame stays under 2 MiB.
const NodeHeartbeatMaxEntries = 1 << 16

// Extension reports whether c is a command of the iggynode extensions of
// the replica plane (accepted on that plane only).
func (c Command) Extension() bool { return c == CmdNodeHeartbeat }

// NodeHeartbeatEntry is one quiescence entry.
type NodeHeartbeatEntry struct {
	Group  uint64
	Commit uint64
	View   uint32
	Kind   uint8
}

// Entry kinds.
const (
	NodeHeartbeatNotice  uint8 = 1
	NodeHeartbeatConfirm uint8 = 2
)

// NodeHeartbeat is a decoded command 64 frame.
type NodeHeartbeat struct {
	Cluster     U128
	Replica     uint8
	Incarnation U128
	Beat        uint64
	Entries     []NodeHeartbeatEntry
}

// AppendTo appends the sealed frame (header and body) to dst.
func (m NodeHeartbeat) AppendTo(dst []byte) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, HeaderSize+NodeHeartbeatEntrySize*len(m.Entries))...)
	frame := dst[start:]
	body := frame[HeaderSize:]
	for i, e := range m.Entries {
		b := body[i*NodeHeartbeatEntrySize:]
		binary.LittleEndian.PutUint64(b[0:], e.Group)
		binary.LittleEndian.PutUint64(b[8:], e.Commit)
		binary.LittleEndian.PutUint32(b[16:], e.View)
		b[20] = e.Kind
	}
	h := HeaderOf(frame)
	h.writeCommon(common{Cluster: m.Cluster, Size: uint32(len(frame)), Replica: m.Replica}, CmdNodeHeartbeat)
	h.putU128(128, m.Incarnation)
	h.putU64(144, m.Beat)
	h.putU32(152, uint32(len(m.Entries)))
	h.SetChecksumBody(BodySeal(body))
	h.Seal()
	return dst
}

// DecodeNodeHeartbeat validates and decodes a whole command 64 frame. The
// entries are copied out: frame may be reused.
func DecodeNodeHeartbeat(frame []byte) (NodeHeartbeat, error) {
	var m NodeHeartbeat
	if len(frame) < HeaderSize {
		return m, decodeErr("size", fmt.Sprintf("%d bytes is shorter than a header", len(frame)))
	}
	h := HeaderOf(frame)
	count := h.u32(152)
	switch {
	case h.Command() != CmdNodeHeartbeat:
		return m, decodeErr("command", fmt.Sprintf("%v is not a node heartbeat", h.Command()))
	case count > NodeHeartbeatMaxEntries:
		return m, decodeErr("entry_count", fmt.Sprintf("%d entries, at most %d", count, NodeHeartbeatMaxEntries))
	case uint64(h.Size()) != uint64(HeaderSize)+uint64(count)*NodeHeartbeatEntrySize || int(h.Size()) != len(frame):
		return m, decodeErr("size", fmt.Sprintf("%d for %d entries in a frame of %d bytes", h.Size(), count, len(frame)))
	case !h.SealValid():
		return m, decodeErr("checksum", "frame seal mismatch")
	case h.ChecksumBody() != BodySeal(frame[HeaderSize:]):
		return m, decodeErr("checksum_body", "body seal mismatch")
	case h.View() != 0 || h.Release() != 0 || !h.zero(62, 128) || !h.zero(156, 256):
		return m, decodeErr("reserved", "nonzero")
	}
	m = NodeHeartbeat{Cluster: h.Cluster(), Replica: h.Replica(), Incarnation: h.u128(128), Beat: h.u64(144)}
	if m.Incarnation.IsZero() {
		return m, decodeErr("incarnation", "zero")
	}
	if count > 0 {
		m.Entries = make([]NodeHeartbeatEntry, count)
	}
	body := frame[HeaderSize:]
	for i := range m.Entries {
		b := body[i*NodeHeartbeatEntrySize : (i+1)*NodeHeartbeatEntrySize]
		e := NodeHeartbeatEntry{Group: binary.LittleEndian.Uint64(b), Commit: binary.LittleEndian.Uint64(b[8:]),
			View: binary.LittleEndian.Uint32(b[16:]), Kind: b[20]}
		if e.Kind != NodeHeartbeatNotice && e.Kind != NodeHeartbeatConfirm {
			return m, decodeErr("kind", fmt.Sprintf("entry %d has kind %d", i, e.Kind))
		}
		if b[21] != 0 || b[22] != 0 || b[23] != 0 {
			return m, decodeErr("reserved", fmt.Sprintf("entry %d", i))
		}
		m.Entries[i] = e
	}
	return m, nil
}
