package wire

import (
	"encoding/binary"
	"fmt"
	"hash"

	"github.com/zeebo/xxh3"
)

// The DoViewChange / StartView suffix (replica-plane.md 6.5) and the
// state-transfer artifact encodings this package owns (7.8.1 state
// manifest, 7.8.3 ICO1 consumer offsets; the ICT2 client table belongs to
// the metadata package).

// ---------------------------------------------------------------------------
// Suffix (6.5.2 construction, 6.5.3 validation, 2.3/2.4 body seal)

// BlankPrepare is the blank slot for op (6.5.2 rule 5): all zero except
// command 6 (byte 60) and op (176..184).
func BlankPrepare(op uint64) Header {
	var h Header
	h.SetCommand(CmdPrepare)
	h.putU64(176, op)
	return h
}

// IsBlankPrepare reports whether h is exactly the blank for its own op.
func IsBlankPrepare(h *Header) bool {
	return *h == BlankPrepare(h.u64(176))
}

// SuffixEntry is one decoded suffix slot. Header keeps the bytes as sent:
// they are what the identity covers and what a merged log installs.
type SuffixEntry struct {
	Header  Header
	Prepare PrepareHeader // typed view of Header
	Blank   bool
	Nack    bool // DoViewChange nack_bitset bit: the sender never prepared it
	Present bool // DoViewChange present_bitset bit: the sender can serve its body
}

// SuffixSource is what a DoViewChange suffix is built from (6.5.2).
type SuffixSource struct {
	Commit uint64 // min(commit_max, head) of the sender
	Head   uint64 // the sender's sequencer
	// AdoptedTop is the highest op of the adopted-view headers V (the
	// parked StartView suffix), 0 when there are none.
	AdoptedTop uint64
	// Journal returns the journaled prepare header at op, if any.
	Journal func(op uint64) (*Header, bool)
	// Adopted returns V's header at op, if any; nil when V is empty.
	Adopted func(op uint64) (*Header, bool)
}

// BuiltSuffix is a suffix ready to send: Body is the DoViewChange or
// StartView body, entry 0 describing op Top.
type BuiltSuffix struct {
	Top     uint64
	Body    []byte
	Nack    U128
	Present U128
}

// BuildSuffix runs 6.5.2: entries from top = max(head, AdoptedTop) down to
// max(commit, 1), at most MaxSuffixEntries (the highest ones). A journaled
// header sets its present bit; a non-blank adopted header sets no bit; a
// missing op becomes a blank, nacked when above commit.
func BuildSuffix(src SuffixSource) BuiltSuffix {
	top := max(src.Head, src.AdoptedTop)
	low := max(src.Commit, 1)
	if top == 0 || low > top {
		return BuiltSuffix{}
	}
	if top-low+1 > MaxSuffixEntries {
		low = top - (MaxSuffixEntries - 1)
	}
	out := BuiltSuffix{Top: top, Body: make([]byte, 0, (top-low+1)*HeaderSize)}
	for o := top; o >= low; o-- {
		i := int(top - o)
		if h, ok := lookup(src.Journal, o); ok {
			out.Body = append(out.Body, h[:]...)
			out.Present = out.Present.WithBit(i, true)
			continue
		}
		if h, ok := lookup(src.Adopted, o); ok && !IsBlankPrepare(h) {
			out.Body = append(out.Body, h[:]...)
			continue
		}
		blank := BlankPrepare(o)
		out.Body = append(out.Body, blank[:]...)
		if o > src.Commit {
			out.Nack = out.Nack.WithBit(i, true)
		}
	}
	return out
}

func lookup(f func(uint64) (*Header, bool), op uint64) (*Header, bool) {
	if f == nil {
		return nil, false
	}
	h, ok := f(op)
	return h, ok && h != nil
}

// AppendSuffix appends the entries' bytes in index order: a suffix body.
func AppendSuffix(b []byte, entries []SuffixEntry) []byte {
	for i := range entries {
		b = append(b, entries[i].Header[:]...)
	}
	return b
}

// SuffixBitsets collects the Nack and Present flags of entries into the
// DoViewChange bitsets.
func SuffixBitsets(entries []SuffixEntry) (nack, present U128) {
	for i := range entries {
		if i >= MaxSuffixEntries {
			break
		}
		if entries[i].Nack {
			nack = nack.WithBit(i, true)
		}
		if entries[i].Present {
			present = present.WithBit(i, true)
		}
	}
	return nack, present
}

// SuffixBodySeal is checksum_body for a DVC/SV body (2.3): W(H64(body)),
// or 0 for an empty body.
func SuffixBodySeal(body []byte) U128 {
	if len(body) == 0 {
		return U128{}
	}
	return BodySeal(body)
}

// VerifySuffixBodySeal is 2.4 rule 2: an empty body passes whatever
// checksumBody holds; otherwise it must equal W(H64(body)), so a zero
// checksumBody with a non-empty body fails.
func VerifySuffixBodySeal(checksumBody U128, body []byte) error {
	if len(body) != 0 && checksumBody != BodySeal(body) {
		return decodeErr("checksum_body", "suffix body seal mismatch")
	}
	return nil
}

// DecodeSuffix decodes and validates a suffix body (6.5.3) against the
// message's op and, for a DoViewChange, its bitsets (pass zeros for a
// StartView). Any failure rejects the whole message.
func DecodeSuffix(op uint64, body []byte, nack, present U128) ([]SuffixEntry, error) {
	if len(body)%HeaderSize != 0 {
		return nil, decodeErr("suffix", fmt.Sprintf("body of %d bytes is not a whole number of prepare headers", len(body)))
	}
	k := len(body) / HeaderSize
	switch {
	case k > MaxSuffixEntries:
		return nil, decodeErr("suffix", fmt.Sprintf("%d entries, at most %d", k, MaxSuffixEntries))
	case bitsFrom(nack, k):
		return nil, decodeErr("nack_bitset", fmt.Sprintf("bit set at or above entry count %d", k))
	case bitsFrom(present, k):
		return nil, decodeErr("present_bitset", fmt.Sprintf("bit set at or above entry count %d", k))
	case k > 0 && op < uint64(k-1):
		return nil, decodeErr("suffix", fmt.Sprintf("%d entries descend below op 0 from op %d", k, op))
	}
	entries := make([]SuffixEntry, k)
	higher := -1 // index of the last non-blank entry seen, walking down
	for i := range entries {
		e := &entries[i]
		copy(e.Header[:], body[i*HeaderSize:])
		p, err := DecodePrepareHeader(&e.Header)
		if err != nil {
			return nil, suffixErr(i, err)
		}
		e.Prepare = p
		e.Blank = IsBlankPrepare(&e.Header)
		e.Nack, e.Present = nack.Bit(i), present.Bit(i)
		if p.Op != op-uint64(i) {
			return nil, decodeErr("suffix", fmt.Sprintf("entry %d has op %d, want %d", i, p.Op, op-uint64(i)))
		}
		if e.Blank {
			continue
		}
		if !p.Checksum.IsZero() && p.Checksum != PrepareIdentity(&e.Header) {
			return nil, decodeErr("suffix", fmt.Sprintf("entry %d (op %d): identity mismatch", i, p.Op))
		}
		if higher >= 0 {
			hi := &entries[higher].Prepare
			if p.Timestamp >= hi.Timestamp {
				return nil, decodeErr("suffix", fmt.Sprintf("entry %d (op %d): timestamp not below op %d's", i, p.Op, hi.Op))
			}
			if hi.Op == p.Op+1 && !p.Checksum.IsZero() && !hi.Parent.IsZero() && hi.Parent != p.Checksum { // 2.5 rule 3: a zero identity on either end suspends it
				return nil, decodeErr("suffix", fmt.Sprintf("op %d's parent is not op %d's identity", hi.Op, p.Op))
			}
		}
		higher = i
	}
	return entries, nil
}

func suffixErr(i int, err error) error {
	if de, ok := err.(*DecodeError); ok {
		return decodeErr("suffix", fmt.Sprintf("entry %d: %s: %s", i, de.Field, de.Reason))
	}
	return err
}

// AppendDoViewChange appends a whole DoViewChange frame: Size and
// ChecksumBody are set from body (2.3: body, then checksum_body, then the
// frame seal). body must be whole prepare headers (BuildSuffix).
func AppendDoViewChange(b []byte, d DoViewChangeHeader, body []byte) []byte {
	d.Size = uint32(HeaderSize + len(body))
	d.ChecksumBody = SuffixBodySeal(body)
	var h Header
	d.Encode(&h)
	return append(append(b, h[:]...), body...)
}

// AppendStartView appends a whole StartView frame, as AppendDoViewChange.
func AppendStartView(b []byte, s StartViewHeader, body []byte) []byte {
	s.Size = uint32(HeaderSize + len(body))
	s.ChecksumBody = SuffixBodySeal(body)
	var h Header
	s.Encode(&h)
	return append(append(b, h[:]...), body...)
}

// wholeFrame checks that frame is exactly one frame of its size field.
func wholeFrame(frame []byte) error {
	if len(frame) < HeaderSize {
		return decodeErr("frame", errShort)
	}
	if size := HeaderOf(frame).Size(); uint64(size) != uint64(len(frame)) {
		return decodeErr("size", fmt.Sprintf("%d but the frame holds %d bytes", size, len(frame)))
	}
	return nil
}

// DecodeDoViewChange types a whole DoViewChange frame (header || body):
// the header (1.4.5), then the body seal (2.4 rule 2), then the suffix
// (6.5.3). Any failure drops the whole message (6.6 step 1).
func DecodeDoViewChange(frame []byte) (DoViewChangeHeader, []SuffixEntry, error) {
	if err := wholeFrame(frame); err != nil {
		return DoViewChangeHeader{}, nil, err
	}
	d, err := DecodeDoViewChangeHeader(HeaderOf(frame))
	if err != nil {
		return d, nil, err
	}
	body := frame[HeaderSize:]
	if err := VerifySuffixBodySeal(d.ChecksumBody, body); err != nil {
		return d, nil, err
	}
	entries, err := DecodeSuffix(d.Op, body, d.NackBitset, d.PresentBitset)
	return d, entries, err
}

// DecodeStartView types a whole StartView frame as DecodeDoViewChange does.
func DecodeStartView(frame []byte) (StartViewHeader, []SuffixEntry, error) {
	if err := wholeFrame(frame); err != nil {
		return StartViewHeader{}, nil, err
	}
	s, err := DecodeStartViewHeader(HeaderOf(frame))
	if err != nil {
		return s, nil, err
	}
	body := frame[HeaderSize:]
	if err := VerifySuffixBodySeal(s.ChecksumBody, body); err != nil {
		return s, nil, err
	}
	entries, err := DecodeSuffix(s.Op, body, U128{}, U128{})
	return s, entries, err
}

// ---------------------------------------------------------------------------
// State manifest (7.8.1): the StateTransferTarget offer body.

// ArtifactKind is a manifest entry's kind byte (7.8.1). Decoding keeps any
// value (7.6 step 8 refuses unknown kinds at verification, not at decode).
type ArtifactKind uint8

const (
	ArtifactMetadataSnapshot ArtifactKind = 0
	ArtifactClientTable      ArtifactKind = 1
	ArtifactSegmentLog       ArtifactKind = 2
	ArtifactConsumerOffsets  ArtifactKind = 3
	// ArtifactGroupRoster is iggynode's (outside 7.8.1's kinds): a
	// partition group's roster once it reconfigured (vsr.EncodeRoster and
	// the u64 op that opened its epoch), which the joiner installing the
	// group must take with the state. A group that never reconfigured
	// sends none, so offers between it and a reference peer are the
	// spec's.
	ArtifactGroupRoster ArtifactKind = 200
)

var artifactKindNames = [...]string{"METADATA_SNAPSHOT", "CLIENT_TABLE", "SEGMENT_LOG", "CONSUMER_OFFSETS"}

// Known reports whether k is one of the four defined kinds.
func (k ArtifactKind) Known() bool { return int(k) < len(artifactKindNames) }

func (k ArtifactKind) String() string {
	if k.Known() {
		return artifactKindNames[k]
	}
	if k == ArtifactGroupRoster {
		return "GROUP_ROSTER"
	}
	return fmt.Sprintf("ArtifactKind(%d)", uint8(k))
}

const (
	// ManifestMagic opens a state manifest.
	ManifestMagic = "ISM1"
	// MaxManifestEntries bounds a manifest's count (Appendix B).
	MaxManifestEntries = 65536
	// ManifestEntryLen is the entry length encoders write and the minimum a
	// decoder accepts; longer entries have their tail skipped.
	ManifestEntryLen = 25
)

// ArtifactChecksum is a manifest entry's checksum: H64 of the artifact
// bytes, not widened (2.6).
func ArtifactChecksum(artifact []byte) uint64 { return xxh3.Hash(artifact) }

// NewArtifactHash is ArtifactChecksum over an artifact written in pieces
// (a receiver hashes chunks as they arrive): its Sum64 equals
// ArtifactChecksum of the concatenation.
func NewArtifactHash() hash.Hash64 { return xxh3.New() }

// ManifestEntry describes one artifact (7.8.1). Frontier means: snapshot
// sequence number (METADATA_SNAPSHOT), commit_op (CLIENT_TABLE and
// CONSUMER_OFFSETS), segment base offset (SEGMENT_LOG).
type ManifestEntry struct {
	Kind     ArtifactKind
	Frontier uint64
	Len      uint64
	Checksum uint64
}

// StateManifest is the ISM1 manifest; an empty one is legal.
type StateManifest struct {
	Entries []ManifestEntry
}

// AppendTo appends the manifest with 25-byte entries and its trailer.
func (m StateManifest) AppendTo(b []byte) []byte {
	start := len(b)
	b = append(b, ManifestMagic...)
	b = AppendU32(b, uint32(len(m.Entries)))
	b = append(b, ManifestEntryLen)
	for _, e := range m.Entries {
		b = append(b, byte(e.Kind))
		b = AppendU64(b, e.Frontier)
		b = AppendU64(b, e.Len)
		b = AppendU64(b, e.Checksum)
	}
	return AppendU64(b, xxh3.Hash(b[start:]))
}

// Decode replaces m from an encoded manifest: trailer first, then magic,
// count <= 65536, entry_len >= 25, and exactly count entries before the
// trailer.
func (m *StateManifest) Decode(body []byte) error {
	payload, err := trailed("manifest", body, len(ManifestMagic)+4+1)
	if err != nil {
		return err
	}
	if string(payload[:4]) != ManifestMagic {
		return decodeErr("magic", fmt.Sprintf("%q is not %q", payload[:4], ManifestMagic))
	}
	count := binary.LittleEndian.Uint32(payload[4:])
	entryLen := int(payload[8])
	entries := payload[9:]
	switch {
	case count > MaxManifestEntries:
		return decodeErr("count", fmt.Sprintf("%d entries, at most %d", count, MaxManifestEntries))
	case entryLen < ManifestEntryLen:
		return decodeErr("entry_len", fmt.Sprintf("%d below %d", entryLen, ManifestEntryLen))
	case uint64(count)*uint64(entryLen) != uint64(len(entries)):
		return decodeErr("entries", fmt.Sprintf("%d entries of %d bytes in %d bytes", count, entryLen, len(entries)))
	}
	m.Entries = nil
	if count > 0 {
		m.Entries = make([]ManifestEntry, count)
	}
	for i := range m.Entries {
		e := entries[i*entryLen:]
		m.Entries[i] = ManifestEntry{
			Kind:     ArtifactKind(e[0]),
			Frontier: binary.LittleEndian.Uint64(e[1:]),
			Len:      binary.LittleEndian.Uint64(e[9:]),
			Checksum: binary.LittleEndian.Uint64(e[17:]),
		}
	}
	return nil
}

// trailed checks the 8-byte H64 trailer of an artifact encoding (2.6) and
// returns the bytes before it; they must hold at least minPayload bytes.
func trailed(what string, b []byte, minPayload int) ([]byte, error) {
	if len(b) < minPayload+8 {
		return nil, decodeErr(what, errShort)
	}
	payload := b[:len(b)-8]
	if xxh3.Hash(payload) != binary.LittleEndian.Uint64(b[len(b)-8:]) {
		return nil, decodeErr("trailer", what+" checksum mismatch")
	}
	return payload, nil
}

// ---------------------------------------------------------------------------
// ICO1 consumer offsets (7.8.3): the CONSUMER_OFFSETS artifact.

const (
	// ConsumerOffsetsMagic opens an ICO1 artifact.
	ConsumerOffsetsMagic = "ICO1"
	// ConsumerOffsetsVersion is the only version decoders accept.
	ConsumerOffsetsVersion = 1
	// MaxOffsetEntries bounds each ICO1 section (Appendix B).
	MaxOffsetEntries = 1 << 20
)

// OffsetEntry is one stored offset: a consumer id (or group id) and its
// offset.
type OffsetEntry struct {
	ID     uint32
	Offset uint64
}

// ConsumerOffsetsArtifact is a partition's consumer and group offset
// tables with its applied purge generation and next offset. Each section
// is ordered by strictly ascending ID; AppendTo writes them as given.
type ConsumerOffsetsArtifact struct {
	PurgeGeneration uint64
	NextOffset      uint64
	Consumers       []OffsetEntry
	Groups          []OffsetEntry
}

// AppendTo appends the ICO1 encoding with its trailer.
func (a ConsumerOffsetsArtifact) AppendTo(b []byte) []byte {
	start := len(b)
	b = append(b, ConsumerOffsetsMagic...)
	b = append(b, ConsumerOffsetsVersion)
	b = AppendU64(b, a.PurgeGeneration)
	b = AppendU64(b, a.NextOffset)
	b = AppendU32(b, uint32(len(a.Consumers)))
	b = AppendU32(b, uint32(len(a.Groups)))
	for _, s := range [2][]OffsetEntry{a.Consumers, a.Groups} {
		for _, e := range s {
			b = AppendU32(b, e.ID)
			b = AppendU64(b, e.Offset)
		}
	}
	return AppendU64(b, xxh3.Hash(b[start:]))
}

// Decode replaces a from an ICO1 encoding: trailer, magic, version 1,
// section counts <= 2^20, exact length, strictly ascending ids per section.
func (a *ConsumerOffsetsArtifact) Decode(body []byte) error {
	const fixed = 29
	payload, err := trailed("consumer offsets", body, fixed)
	if err != nil {
		return err
	}
	if string(payload[:4]) != ConsumerOffsetsMagic {
		return decodeErr("magic", fmt.Sprintf("%q is not %q", payload[:4], ConsumerOffsetsMagic))
	}
	if v := payload[4]; v != ConsumerOffsetsVersion {
		return decodeErr("version", fmt.Sprintf("unknown ICO1 version %d", v))
	}
	consumers := binary.LittleEndian.Uint32(payload[21:])
	groups := binary.LittleEndian.Uint32(payload[25:])
	switch {
	case consumers > MaxOffsetEntries:
		return decodeErr("consumer_count", fmt.Sprintf("%d, at most %d", consumers, MaxOffsetEntries))
	case groups > MaxOffsetEntries:
		return decodeErr("group_count", fmt.Sprintf("%d, at most %d", groups, MaxOffsetEntries))
	case (uint64(consumers)+uint64(groups))*12 != uint64(len(payload)-fixed):
		return decodeErr("entries", fmt.Sprintf("%d+%d entries in %d bytes", consumers, groups, len(payload)-fixed))
	}
	r := NewReader(payload[fixed:])
	c, err := offsetSection(r, "consumers", int(consumers))
	if err != nil {
		return err
	}
	g, err := offsetSection(r, "groups", int(groups))
	if err != nil {
		return err
	}
	*a = ConsumerOffsetsArtifact{
		PurgeGeneration: binary.LittleEndian.Uint64(payload[5:]),
		NextOffset:      binary.LittleEndian.Uint64(payload[13:]),
		Consumers:       c,
		Groups:          g,
	}
	return nil
}

// offsetSection reads n entries whose ids strictly ascend.
func offsetSection(r *Reader, field string, n int) ([]OffsetEntry, error) {
	if n == 0 {
		return nil, nil
	}
	out := make([]OffsetEntry, n)
	for i := range out {
		out[i] = OffsetEntry{ID: r.U32(field), Offset: r.U64(field)}
		if i > 0 && out[i].ID <= out[i-1].ID {
			return nil, decodeErr(field, fmt.Sprintf("id %d not above %d", out[i].ID, out[i-1].ID))
		}
	}
	return out, r.Err()
}
