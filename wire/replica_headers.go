package wire

import (
	"fmt"

	"github.com/zeebo/xxh3"
)

// Replica-plane header views (replica-plane.md 1.4). They share the generic
// Header and its first 128 bytes with the client-plane views; only bytes
// 128..256 differ per command.

// MetadataGroup is the consensus group id of the metadata plane (4.1).
const MetadataGroup uint64 = 1 << 63

// PartitionGroup packs (stream, topic, partition) into a partition group id
// (replica-plane.md 4.1). Out-of-range triples are refused, never masked.
func PartitionGroup(stream, topic, partition uint32) (uint64, error) {
	if stream >= 1<<20 || topic >= 4096 || partition >= 1_000_000 {
		return 0, decodeErr("group", fmt.Sprintf("(%d,%d,%d) out of range", stream, topic, partition))
	}
	return uint64(stream)<<32 | uint64(topic)<<20 | uint64(partition), nil
}

// SplitPartitionGroup unpacks a partition group id.
func SplitPartitionGroup(g uint64) (stream, topic, partition uint32) {
	return uint32(g >> 32 & 0xFFFFF), uint32(g >> 20 & 0xFFF), uint32(g & 0xFFFFF)
}

// PrepareHeader is the view of Prepare (6) and RepairPrepare (19)
// (replica-plane.md 1.4.1).
type PrepareHeader struct {
	Checksum        U128
	ChecksumBody    U128
	Cluster         U128
	Size            uint32
	View            uint32
	Release         uint32
	Command         Command // CmdPrepare or CmdRepairPrepare
	Replica         uint8
	Client          U128
	Parent          U128
	RequestChecksum U128
	Op              uint64
	Commit          uint64
	Timestamp       uint64
	Request         uint64
	Operation       Operation
	Group           uint64
	UserID          uint32
}

// Prepare reads the PrepareHeader fields of h without validating them.
func (h *Header) Prepare() PrepareHeader {
	return PrepareHeader{
		Checksum: h.Checksum(), ChecksumBody: h.ChecksumBody(), Cluster: h.Cluster(),
		Size: h.Size(), View: h.View(), Release: h.Release(), Command: h.Command(), Replica: h.Replica(),
		Client: h.u128(128), Parent: h.u128(144), RequestChecksum: h.u128(160),
		Op: h.u64(176), Commit: h.u64(184), Timestamp: h.u64(192), Request: h.u64(200),
		Operation: Operation(h[208]), Group: h.u64(216), UserID: h.u32(224),
	}
}

// Encode writes p into h (every other byte zero), checksum fields as given.
func (p *PrepareHeader) Encode(h *Header) {
	*h = Header{}
	h.SetChecksum(p.Checksum)
	h.SetChecksumBody(p.ChecksumBody)
	h.writeCommon(common{p.Cluster, p.Size, p.View, p.Release, p.Replica}, p.Command)
	h.putU128(128, p.Client)
	h.putU128(144, p.Parent)
	h.putU128(160, p.RequestChecksum)
	h.putU64(176, p.Op)
	h.putU64(184, p.Commit)
	h.putU64(192, p.Timestamp)
	h.putU64(200, p.Request)
	h[208] = byte(p.Operation)
	h.putU64(216, p.Group)
	h.putU32(224, p.UserID)
}

// DecodePrepareHeader types h as a Prepare or RepairPrepare and validates
// it (1.4.1): command, zero reserved_frame (62..128) and reserved
// (228..256), a defined operation.
func DecodePrepareHeader(h *Header) (PrepareHeader, error) {
	if c := h.Command(); c != CmdPrepare && c != CmdRepairPrepare {
		return PrepareHeader{}, decodeErr("command", fmt.Sprintf("%v is not a prepare", c))
	}
	p := h.Prepare()
	switch {
	case !h.zero(62, 128):
		return p, decodeErr("reserved_frame", "nonzero")
	case !h.zero(228, 256):
		return p, decodeErr("reserved", "nonzero")
	case !p.Operation.Defined():
		return p, decodeErr("operation", fmt.Sprintf("undefined discriminant %d", p.Operation))
	}
	return p, nil
}

// PrepareIdentity is W(H64(h')) where h' is the header with checksum and
// view zeroed (replica-plane.md 2.2): restamping the view keeps it valid.
//
// The command byte is hashed as Prepare (6) for a RepairPrepare (19) too:
// 7.3 step 6 says serving a journaled prepare as a RepairPrepare keeps its
// identity, which 2.2 as written (hashing byte 60 as is) would break.
func PrepareIdentity(h *Header) U128 {
	var tmp Header = *h
	tmp.SetChecksum(U128{})
	tmp.SetView(0)
	if tmp.Command() == CmdRepairPrepare {
		tmp.SetCommand(CmdPrepare)
	}
	return Widen(xxh3.Hash(tmp[:]))
}

// BodySeal is W(H64(body)) (2.3).
func BodySeal(body []byte) U128 { return Widen(xxh3.Hash(body)) }

// FrameSeal is W(H64(header[16..256])) (2.1), written last.
func FrameSeal(h *Header) U128 { return Widen(xxh3.Hash(h[16:])) }

// Seal writes the frame seal into h.
func (h *Header) Seal() { h.SetChecksum(FrameSeal(h)) }

// SealValid reports whether h carries a correct, nonzero frame seal.
func (h *Header) SealValid() bool {
	c := h.Checksum()
	return !c.IsZero() && c == FrameSeal(h)
}

// VerifyPrepare checks a prepare frame's identity and body seal (2.4 rule
// 1); a zero field skips its check.
func VerifyPrepare(frame []byte) error {
	if len(frame) < HeaderSize {
		return decodeErr("prepare", errShort)
	}
	h := HeaderOf(frame)
	if c := h.Checksum(); !c.IsZero() && c != PrepareIdentity(h) {
		return decodeErr("checksum", "prepare identity mismatch")
	}
	if cb := h.ChecksumBody(); !cb.IsZero() && cb != BodySeal(frame[HeaderSize:]) {
		return decodeErr("checksum_body", "body seal mismatch")
	}
	return nil
}

// PrepareOkHeader is the view of PrepareOk (7) (1.4.2).
type PrepareOkHeader struct {
	Cluster         U128
	View            uint32
	Replica         uint8
	Parent          U128
	PrepareChecksum U128
	Op              uint64
	Commit          uint64
	Timestamp       uint64
	Request         uint64
	Operation       Operation
	Group           uint64
}

// PrepareOk reads the fields without validating them.
func (h *Header) PrepareOk() PrepareOkHeader {
	return PrepareOkHeader{
		Cluster: h.Cluster(), View: h.View(), Replica: h.Replica(),
		Parent: h.u128(128), PrepareChecksum: h.u128(144), Op: h.u64(160), Commit: h.u64(168),
		Timestamp: h.u64(176), Request: h.u64(184), Operation: Operation(h[192]), Group: h.u64(200),
	}
}

// Encode writes p into h, size 256, and seals it.
func (p *PrepareOkHeader) Encode(h *Header) {
	*h = Header{}
	h.writeCommon(common{Cluster: p.Cluster, Size: HeaderSize, View: p.View, Replica: p.Replica}, CmdPrepareOk)
	h.putU128(128, p.Parent)
	h.putU128(144, p.PrepareChecksum)
	h.putU64(160, p.Op)
	h.putU64(168, p.Commit)
	h.putU64(176, p.Timestamp)
	h.putU64(184, p.Request)
	h[192] = byte(p.Operation)
	h.putU64(200, p.Group)
	h.Seal()
}

// DecodePrepareOkHeader types and validates a PrepareOk: command, defined
// operation, seal.
func DecodePrepareOkHeader(h *Header) (PrepareOkHeader, error) {
	if h.Command() != CmdPrepareOk {
		return PrepareOkHeader{}, decodeErr("command", fmt.Sprintf("%v is not PrepareOk", h.Command()))
	}
	p := h.PrepareOk()
	if !p.Operation.Defined() {
		return p, decodeErr("operation", "undefined")
	}
	if !h.SealValid() {
		return p, decodeErr("checksum", "frame seal mismatch")
	}
	return p, nil
}

// CommitHeader is the view of Commit (9) (1.4.3).
type CommitHeader struct {
	Cluster            U128
	View               uint32
	Replica            uint8
	TimestampMonotonic uint64
	Commit             uint64
	Group              uint64
}

func (h *Header) CommitMsg() CommitHeader {
	return CommitHeader{Cluster: h.Cluster(), View: h.View(), Replica: h.Replica(),
		TimestampMonotonic: h.u64(144), Commit: h.u64(152), Group: h.u64(168)}
}

// Encode writes c into h, size 256, and seals it.
func (c *CommitHeader) Encode(h *Header) {
	*h = Header{}
	h.writeCommon(common{Cluster: c.Cluster, Size: HeaderSize, View: c.View, Replica: c.Replica}, CmdCommit)
	h.putU64(144, c.TimestampMonotonic)
	h.putU64(152, c.Commit)
	h.putU64(168, c.Group)
	h.Seal()
}

// DecodeCommitHeader types and validates a Commit: command, seal, size 256.
func DecodeCommitHeader(h *Header) (CommitHeader, error) {
	if h.Command() != CmdCommit {
		return CommitHeader{}, decodeErr("command", fmt.Sprintf("%v is not Commit", h.Command()))
	}
	// 1.5: the seal is verified before the validator reads any field.
	if !h.SealValid() {
		return h.CommitMsg(), decodeErr("checksum", "frame seal mismatch")
	}
	if h.Size() != HeaderSize {
		return h.CommitMsg(), decodeErr("size", "a commit has no body")
	}
	return h.CommitMsg(), nil
}
