package wire

import "fmt"

// The remaining replica-plane header views (replica-plane.md 1.4.4 to
// 1.4.19), in the style of replica_headers.go: for each shape a struct, a
// Header method that reads it without judging it, an Encode that writes
// size, command and the common fields (and seals where 1.3 says sealed),
// and a DecodeXxxHeader that runs the typed decode order of 1.5:
//
//  1. the typed header accepts the command byte;
//  2. enumerated fields (operation, outcome) hold a defined bit pattern;
//  3. sealed types: the frame seal (2.1) verifies, before any other field
//     is believed;
//  4. the 1.4.x validator.
//
// A decode failure drops the frame only (1.1 rule 4). Fields a validator
// does not read (reserved regions, `reserved_frame` except on prepares) are
// not carried by the views: re-encoding writes them as zero.

// MaxSuffixEntries is the most prepare headers a DoViewChange or StartView
// body may carry (1.4.5, Appendix B).
const MaxSuffixEntries = 128

// ValidReplicaCommand reports whether a frame with command c is typed and
// handled on an established replica-plane connection (1.1 rules 3-6,
// 1.5). It is false for commands 0-4 and 14-16 (dropped as unparsable after
// the handshake), for Reply (8) and Eviction (13) (client-bound, dropped),
// and for bytes above 29, which are not commands at all: for those the
// caller closes the connection (c.Valid() is false) instead of dropping the
// frame. Command 5 (the routed request) is accepted as upstream does; the
// spec lets an implementation drop it (1.1 rule 6).
func ValidReplicaCommand(c Command) bool {
	switch {
	case c == CmdRequest, c == CmdPrepare, c == CmdPrepareOk, c == CmdCommit:
		return true
	case c >= CmdStartViewChange && c <= CmdStartView:
		return true
	case c >= CmdRequestStartView && c <= MaxCommand:
		return true
	}
	return false
}

// groupOffset is where each group-carrying command holds `group` (1.3).
var groupOffset = [MaxCommand + 1]int{
	CmdRequest: 248, CmdPrepare: 216, CmdPrepareOk: 200, CmdCommit: 168,
	CmdStartViewChange: 128, CmdDoViewChange: 144, CmdStartView: 144,
	CmdRequestStartView: 128, CmdRequestPrepares: 160, CmdRepairPrepare: 216,
	CmdRepairDone: 152, CmdRangeEvicted: 152, CmdRequestStateTransfer: 144,
	CmdStateTransferTarget: 152, CmdRequestStateChunk: 152, CmdStateChunk: 152,
}

// GroupOf is the consensus group a frame routes to (replica-plane.md 4.2):
// the `group` field at its per-command offset, MetadataGroup for the
// session-forwarding commands 26..29, and ok = false for commands that
// carry no group (handshake, client-bound, reserved). Two RepairPrepare
// special cases (4.2 rules 4-5): group 0 with a metadata-plane operation is
// a legacy metadata entry and routes to MetadataGroup; a metadata-plane
// RepairPrepare naming any other group is dropped (ok = false). It reads
// the raw field: call it on a header that passed its typed decode.
func GroupOf(h *Header) (group uint64, ok bool) {
	c := h.Command()
	switch {
	case c >= CmdForwardRegister && c <= CmdForwardLogoutResult:
		return MetadataGroup, true
	case !c.Valid() || groupOffset[c] == 0:
		return 0, false
	}
	g := h.u64(groupOffset[c])
	if c == CmdRepairPrepare && metadataPlane(Operation(h[208])) {
		if g == 0 || g == MetadataGroup {
			return MetadataGroup, true
		}
		return 0, false
	}
	return g, true
}

// metadataPlane is the metadata plane of 1.7: 1, 3, 64..68, 128..137,
// 139..149 (DeleteSegments 138 is never replicated as itself).
func metadataPlane(o Operation) bool { return o.Metadata() && o != OpDeleteSegments }

// wantCommand is step 1 of 1.5.
func wantCommand(h *Header, name string, accepted ...Command) error {
	for _, c := range accepted {
		if h.Command() == c {
			return nil
		}
	}
	return decodeErr("command", fmt.Sprintf("%v is not %s", h.Command(), name))
}

// checkSeal is step 3 of 1.5 (2.1 rule 4: an all-zero checksum fails too).
func checkSeal(h *Header) error {
	if !h.SealValid() {
		return decodeErr("checksum", "frame seal mismatch")
	}
	return nil
}

// encodeSealed writes the common fields of a sealed header; the caller
// fills the per-command area and then calls h.Seal().
func encodeSealed(h *Header, c common, cmd Command) {
	*h = Header{}
	h.writeCommon(c, cmd)
}

// Bit reports bit i (0..127) of u (the DVC bitsets, 1.4.5).
func (u U128) Bit(i int) bool {
	if i < 64 {
		return u.Lo>>uint(i)&1 != 0
	}
	return u.Hi>>uint(i-64)&1 != 0
}

// WithBit returns u with bit i (0..127) set to on.
func (u U128) WithBit(i int, on bool) U128 {
	w, b := &u.Lo, uint(i)
	if i >= 64 {
		w, b = &u.Hi, uint(i-64)
	}
	if on {
		*w |= 1 << b
	} else {
		*w &^= 1 << b
	}
	return u
}

// bitsFrom reports whether any bit at index >= k is set.
func bitsFrom(u U128, k int) bool {
	switch {
	case k >= 128:
		return false
	case k >= 64:
		return u.Hi>>uint(k-64) != 0
	}
	return u.Hi != 0 || u.Lo>>uint(k) != 0
}

// suffixCount checks the DVC/SV size rules of 1.4.5 and returns k.
func suffixCount(size uint32) (int, error) {
	switch {
	case size < HeaderSize:
		return 0, decodeErr("size", "below the 256-byte header")
	case (size-HeaderSize)%HeaderSize != 0:
		return 0, decodeErr("size", fmt.Sprintf("body of %d bytes is not a whole number of prepare headers", size-HeaderSize))
	case (size-HeaderSize)/HeaderSize > MaxSuffixEntries:
		return 0, decodeErr("size", fmt.Sprintf("%d suffix entries, at most %d", (size-HeaderSize)/HeaderSize, MaxSuffixEntries))
	}
	return int((size - HeaderSize) / HeaderSize), nil
}

// ---------------------------------------------------------------------------
// View change (1.4.4 - 1.4.7)

// StartViewChangeHeader is the view of StartViewChange (10) (1.4.4). View
// is the view being proposed.
type StartViewChangeHeader struct {
	Cluster U128
	View    uint32
	Replica uint8
	Group   uint64
}

// StartViewChange reads the fields of h without validating them.
func (h *Header) StartViewChange() StartViewChangeHeader {
	return StartViewChangeHeader{Cluster: h.Cluster(), View: h.View(), Replica: h.Replica(), Group: h.u64(128)}
}

// Encode writes s into h, size 256, and seals it.
func (s *StartViewChangeHeader) Encode(h *Header) {
	encodeSealed(h, common{Cluster: s.Cluster, Size: HeaderSize, View: s.View, Replica: s.Replica}, CmdStartViewChange)
	h.putU64(128, s.Group)
	h.Seal()
}

// DecodeStartViewChangeHeader types h as a StartViewChange: command, seal,
// release 0.
func DecodeStartViewChangeHeader(h *Header) (StartViewChangeHeader, error) {
	if err := wantCommand(h, "StartViewChange", CmdStartViewChange); err != nil {
		return StartViewChangeHeader{}, err
	}
	s := h.StartViewChange()
	if err := checkSeal(h); err != nil {
		return s, err
	}
	if h.Release() != 0 {
		return s, decodeErr("release", "nonzero")
	}
	return s, nil
}

// DoViewChangeHeader is the view of DoViewChange (11) (1.4.5). The body is
// Entries() prepare headers (the suffix, 6.5); ChecksumBody is its body
// seal, W(H64(body)) when the body is non-empty, else 0 (2.3). Build whole
// frames with AppendDoViewChange, which sets Size and ChecksumBody.
type DoViewChangeHeader struct {
	ChecksumBody  U128
	Cluster       U128
	Size          uint32
	View          uint32 // the view being elected
	Replica       uint8
	Op            uint64 // sender's head
	Commit        uint64 // min(commit_max, op)
	Group         uint64
	LogView       uint32
	NackBitset    U128 // bit i: the sender never prepared suffix entry i
	PresentBitset U128 // bit i: the sender can serve entry i's body
}

// Entries is k, the number of suffix entries the size announces (0 for a
// size below 256 + 256).
func (d *DoViewChangeHeader) Entries() int {
	if d.Size < HeaderSize {
		return 0
	}
	return int((d.Size - HeaderSize) / HeaderSize)
}

// DoViewChange reads the fields of h without validating them.
func (h *Header) DoViewChange() DoViewChangeHeader {
	return DoViewChangeHeader{
		ChecksumBody: h.ChecksumBody(), Cluster: h.Cluster(), Size: h.Size(), View: h.View(), Replica: h.Replica(),
		Op: h.u64(128), Commit: h.u64(136), Group: h.u64(144), LogView: h.u32(152),
		NackBitset: h.u128(224), PresentBitset: h.u128(240),
	}
}

// Encode writes d into h as given (Size and ChecksumBody included) and
// seals it.
func (d *DoViewChangeHeader) Encode(h *Header) {
	encodeSealed(h, common{Cluster: d.Cluster, Size: d.Size, View: d.View, Replica: d.Replica}, CmdDoViewChange)
	h.SetChecksumBody(d.ChecksumBody)
	h.putU64(128, d.Op)
	h.putU64(136, d.Commit)
	h.putU64(144, d.Group)
	h.putU32(152, d.LogView)
	h.putU128(224, d.NackBitset)
	h.putU128(240, d.PresentBitset)
	h.Seal()
}

// DecodeDoViewChangeHeader types h as a DoViewChange, in the order of
// 1.4.5 after the seal: release 0, log_view <= view, commit <= op, size
// 256 + 256k with k <= 128, and no bitset bit at index >= k. The body seal
// and the suffix are checked by DecodeDoViewChange.
func DecodeDoViewChangeHeader(h *Header) (DoViewChangeHeader, error) {
	if err := wantCommand(h, "DoViewChange", CmdDoViewChange); err != nil {
		return DoViewChangeHeader{}, err
	}
	d := h.DoViewChange()
	if err := checkSeal(h); err != nil {
		return d, err
	}
	switch {
	case h.Release() != 0:
		return d, decodeErr("release", "nonzero")
	case d.LogView > d.View:
		return d, decodeErr("log_view", fmt.Sprintf("%d above view %d", d.LogView, d.View))
	case d.Commit > d.Op:
		return d, decodeErr("commit", fmt.Sprintf("%d above op %d", d.Commit, d.Op))
	}
	k, err := suffixCount(d.Size)
	if err != nil {
		return d, err
	}
	if bitsFrom(d.NackBitset, k) {
		return d, decodeErr("nack_bitset", fmt.Sprintf("bit set at or above entry count %d", k))
	}
	if bitsFrom(d.PresentBitset, k) {
		return d, decodeErr("present_bitset", fmt.Sprintf("bit set at or above entry count %d", k))
	}
	return d, nil
}

// StartViewHeader is the view of StartView (12) (1.4.6). The body is
// Entries() prepare headers descending from Op (6.9); ChecksumBody as for
// DoViewChange. Build whole frames with AppendStartView.
type StartViewHeader struct {
	ChecksumBody U128
	Cluster      U128
	Size         uint32
	View         uint32
	Replica      uint8
	Op           uint64
	Commit       uint64
	Group        uint64
	Incarnation  U128 // echo of the probe's incarnation, 0 when unsolicited
}

// Entries is k, the number of suffix entries the size announces.
func (s *StartViewHeader) Entries() int {
	if s.Size < HeaderSize {
		return 0
	}
	return int((s.Size - HeaderSize) / HeaderSize)
}

// StartView reads the fields of h without validating them.
func (h *Header) StartView() StartViewHeader {
	return StartViewHeader{
		ChecksumBody: h.ChecksumBody(), Cluster: h.Cluster(), Size: h.Size(), View: h.View(), Replica: h.Replica(),
		Op: h.u64(128), Commit: h.u64(136), Group: h.u64(144), Incarnation: h.u128(240),
	}
}

// Encode writes s into h as given (Size and ChecksumBody included) and
// seals it.
func (s *StartViewHeader) Encode(h *Header) {
	encodeSealed(h, common{Cluster: s.Cluster, Size: s.Size, View: s.View, Replica: s.Replica}, CmdStartView)
	h.SetChecksumBody(s.ChecksumBody)
	h.putU64(128, s.Op)
	h.putU64(136, s.Commit)
	h.putU64(144, s.Group)
	h.putU128(240, s.Incarnation)
	h.Seal()
}

// DecodeStartViewHeader types h as a StartView (1.4.6): command, seal,
// release 0, commit <= op, size 256 + 256k with k <= 128.
func DecodeStartViewHeader(h *Header) (StartViewHeader, error) {
	if err := wantCommand(h, "StartView", CmdStartView); err != nil {
		return StartViewHeader{}, err
	}
	s := h.StartView()
	if err := checkSeal(h); err != nil {
		return s, err
	}
	switch {
	case h.Release() != 0:
		return s, decodeErr("release", "nonzero")
	case s.Commit > s.Op:
		return s, decodeErr("commit", fmt.Sprintf("%d above op %d", s.Commit, s.Op))
	}
	if _, err := suffixCount(s.Size); err != nil {
		return s, err
	}
	return s, nil
}

// RequestStartViewHeader is the view of RequestStartView (17) (1.4.7).
// View is the prober's current view.
type RequestStartViewHeader struct {
	Cluster     U128
	View        uint32
	Replica     uint8
	Group       uint64
	Incarnation U128
}

// RequestStartView reads the fields of h without validating them.
func (h *Header) RequestStartView() RequestStartViewHeader {
	return RequestStartViewHeader{Cluster: h.Cluster(), View: h.View(), Replica: h.Replica(),
		Group: h.u64(128), Incarnation: h.u128(240)}
}

// Encode writes r into h, size 256, and seals it.
func (r *RequestStartViewHeader) Encode(h *Header) {
	encodeSealed(h, common{Cluster: r.Cluster, Size: HeaderSize, View: r.View, Replica: r.Replica}, CmdRequestStartView)
	h.putU64(128, r.Group)
	h.putU128(240, r.Incarnation)
	h.Seal()
}

// DecodeRequestStartViewHeader types h as a RequestStartView: command,
// seal, release 0.
func DecodeRequestStartViewHeader(h *Header) (RequestStartViewHeader, error) {
	if err := wantCommand(h, "RequestStartView", CmdRequestStartView); err != nil {
		return RequestStartViewHeader{}, err
	}
	r := h.RequestStartView()
	if err := checkSeal(h); err != nil {
		return r, err
	}
	if h.Release() != 0 {
		return r, decodeErr("release", "nonzero")
	}
	return r, nil
}

// ---------------------------------------------------------------------------
// Journal repair (1.4.8, 1.4.9)

// RequestPreparesHeader is the view of RequestPrepares (18) (1.4.8).
// Senders set View to 0 (1.6).
type RequestPreparesHeader struct {
	Cluster U128
	View    uint32
	Replica uint8
	Nonce   U128
	FromOp  uint64
	ToOp    uint64
	Group   uint64
}

// RequestPrepares reads the fields of h without validating them.
func (h *Header) RequestPrepares() RequestPreparesHeader {
	return RequestPreparesHeader{Cluster: h.Cluster(), View: h.View(), Replica: h.Replica(),
		Nonce: h.u128(128), FromOp: h.u64(144), ToOp: h.u64(152), Group: h.u64(160)}
}

// Encode writes r into h, size 256, and seals it.
func (r *RequestPreparesHeader) Encode(h *Header) {
	encodeSealed(h, common{Cluster: r.Cluster, Size: HeaderSize, View: r.View, Replica: r.Replica}, CmdRequestPrepares)
	h.putU128(128, r.Nonce)
	h.putU64(144, r.FromOp)
	h.putU64(152, r.ToOp)
	h.putU64(160, r.Group)
	h.Seal()
}

// DecodeRequestPreparesHeader types h as a RequestPrepares: command, seal,
// 0 < from_op <= to_op.
func DecodeRequestPreparesHeader(h *Header) (RequestPreparesHeader, error) {
	if err := wantCommand(h, "RequestPrepares", CmdRequestPrepares); err != nil {
		return RequestPreparesHeader{}, err
	}
	r := h.RequestPrepares()
	if err := checkSeal(h); err != nil {
		return r, err
	}
	switch {
	case r.FromOp == 0:
		return r, decodeErr("from_op", "zero")
	case r.FromOp > r.ToOp:
		return r, decodeErr("from_op", fmt.Sprintf("%d above to_op %d", r.FromOp, r.ToOp))
	}
	return r, nil
}

// RepairRangeReplyHeader is the shared view of RepairDone (20) and
// RangeEvicted (21) (1.4.9); Command tells them apart. Op is the last op
// served (RepairDone) or the first op the server will serve (RangeEvicted).
type RepairRangeReplyHeader struct {
	Command Command // CmdRepairDone or CmdRangeEvicted
	Cluster U128
	View    uint32
	Replica uint8
	Nonce   U128
	Op      uint64
	Group   uint64
}

// RepairRangeReply reads the fields of h without validating them.
func (h *Header) RepairRangeReply() RepairRangeReplyHeader {
	return RepairRangeReplyHeader{Command: h.Command(), Cluster: h.Cluster(), View: h.View(), Replica: h.Replica(),
		Nonce: h.u128(128), Op: h.u64(144), Group: h.u64(152)}
}

// Encode writes r into h with r.Command, size 256, and seals it.
func (r *RepairRangeReplyHeader) Encode(h *Header) {
	encodeSealed(h, common{Cluster: r.Cluster, Size: HeaderSize, View: r.View, Replica: r.Replica}, r.Command)
	h.putU128(128, r.Nonce)
	h.putU64(144, r.Op)
	h.putU64(152, r.Group)
	h.Seal()
}

// DecodeRepairRangeReplyHeader types h as a RepairDone or RangeEvicted:
// command, seal.
func DecodeRepairRangeReplyHeader(h *Header) (RepairRangeReplyHeader, error) {
	if err := wantCommand(h, "RepairDone or RangeEvicted", CmdRepairDone, CmdRangeEvicted); err != nil {
		return RepairRangeReplyHeader{}, err
	}
	r := h.RepairRangeReply()
	return r, checkSeal(h)
}

// ---------------------------------------------------------------------------
// State transfer (1.4.10 - 1.4.13)

// RequestStateTransferHeader is the view of RequestStateTransfer (22)
// (1.4.10). Senders set View to 0.
type RequestStateTransferHeader struct {
	Cluster U128
	View    uint32
	Replica uint8
	Nonce   U128
	Group   uint64
}

// RequestStateTransfer reads the fields of h without validating them.
func (h *Header) RequestStateTransfer() RequestStateTransferHeader {
	return RequestStateTransferHeader{Cluster: h.Cluster(), View: h.View(), Replica: h.Replica(),
		Nonce: h.u128(128), Group: h.u64(144)}
}

// Encode writes r into h, size 256, and seals it.
func (r *RequestStateTransferHeader) Encode(h *Header) {
	encodeSealed(h, common{Cluster: r.Cluster, Size: HeaderSize, View: r.View, Replica: r.Replica}, CmdRequestStateTransfer)
	h.putU128(128, r.Nonce)
	h.putU64(144, r.Group)
	h.Seal()
}

// DecodeRequestStateTransferHeader types h: command, seal, size 256.
func DecodeRequestStateTransferHeader(h *Header) (RequestStateTransferHeader, error) {
	if err := wantCommand(h, "RequestStateTransfer", CmdRequestStateTransfer); err != nil {
		return RequestStateTransferHeader{}, err
	}
	r := h.RequestStateTransfer()
	if err := checkSeal(h); err != nil {
		return r, err
	}
	if h.Size() != HeaderSize {
		return r, decodeErr("size", "a RequestStateTransfer has no body")
	}
	return r, nil
}

// StateTransferTargetHeader is the view of StateTransferTarget (23)
// (1.4.11): an offer (Available, body = the StateManifest encoding, Size =
// 256 + its length) or a refusal (header only). View is the server's
// current view.
type StateTransferTargetHeader struct {
	Cluster              U128
	Size                 uint32
	View                 uint32
	Replica              uint8
	Nonce                U128
	CommitOp             uint64 // server's commit_min for the offer, 0 on refusal
	Group                uint64
	Available            bool
	UnavailableTransient bool // a refusal meaning "retry later"
	CommitMax            uint64
}

// StateTransferTarget reads the fields of h without validating them; the
// two flag bytes read as true when nonzero.
func (h *Header) StateTransferTarget() StateTransferTargetHeader {
	return StateTransferTargetHeader{Cluster: h.Cluster(), Size: h.Size(), View: h.View(), Replica: h.Replica(),
		Nonce: h.u128(128), CommitOp: h.u64(144), Group: h.u64(152),
		Available: h[160] != 0, UnavailableTransient: h[161] != 0, CommitMax: h.u64(168)}
}

// Encode writes s into h (Size as given; 256 for a refusal) and seals it.
func (s *StateTransferTargetHeader) Encode(h *Header) {
	encodeSealed(h, common{Cluster: s.Cluster, Size: s.Size, View: s.View, Replica: s.Replica}, CmdStateTransferTarget)
	h.putU128(128, s.Nonce)
	h.putU64(144, s.CommitOp)
	h.putU64(152, s.Group)
	if s.Available {
		h[160] = 1
	}
	if s.UnavailableTransient {
		h[161] = 1
	}
	h.putU64(168, s.CommitMax)
	h.Seal()
}

// DecodeStateTransferTargetHeader types h (1.4.11): command, seal,
// available <= 1, unavailable_transient <= 1, not both 1, and a refusal
// has no body.
func DecodeStateTransferTargetHeader(h *Header) (StateTransferTargetHeader, error) {
	if err := wantCommand(h, "StateTransferTarget", CmdStateTransferTarget); err != nil {
		return StateTransferTargetHeader{}, err
	}
	s := h.StateTransferTarget()
	if err := checkSeal(h); err != nil {
		return s, err
	}
	switch {
	case h[160] > 1:
		return s, decodeErr("available", fmt.Sprintf("%d is not 0 or 1", h[160]))
	case h[161] > 1:
		return s, decodeErr("unavailable_transient", fmt.Sprintf("%d is not 0 or 1", h[161]))
	case s.Available && s.UnavailableTransient:
		return s, decodeErr("unavailable_transient", "set on an offer")
	case !s.Available && s.Size != HeaderSize:
		return s, decodeErr("size", "a refusal has no body")
	}
	return s, nil
}

// RequestStateChunkHeader is the view of RequestStateChunk (24) (1.4.12).
// Senders set View to 0.
type RequestStateChunkHeader struct {
	Cluster  U128
	View     uint32
	Replica  uint8
	Nonce    U128
	Offset   uint64
	Group    uint64
	Len      uint32 // bytes asked for; the server clamps it
	Artifact uint32 // manifest entry index
}

// RequestStateChunk reads the fields of h without validating them.
func (h *Header) RequestStateChunk() RequestStateChunkHeader {
	return RequestStateChunkHeader{Cluster: h.Cluster(), View: h.View(), Replica: h.Replica(),
		Nonce: h.u128(128), Offset: h.u64(144), Group: h.u64(152), Len: h.u32(160), Artifact: h.u32(164)}
}

// Encode writes r into h, size 256, and seals it.
func (r *RequestStateChunkHeader) Encode(h *Header) {
	encodeSealed(h, common{Cluster: r.Cluster, Size: HeaderSize, View: r.View, Replica: r.Replica}, CmdRequestStateChunk)
	h.putU128(128, r.Nonce)
	h.putU64(144, r.Offset)
	h.putU64(152, r.Group)
	h.putU32(160, r.Len)
	h.putU32(164, r.Artifact)
	h.Seal()
}

// DecodeRequestStateChunkHeader types h: command, seal, len != 0, size 256.
func DecodeRequestStateChunkHeader(h *Header) (RequestStateChunkHeader, error) {
	if err := wantCommand(h, "RequestStateChunk", CmdRequestStateChunk); err != nil {
		return RequestStateChunkHeader{}, err
	}
	r := h.RequestStateChunk()
	if err := checkSeal(h); err != nil {
		return r, err
	}
	switch {
	case r.Len == 0:
		return r, decodeErr("len", "zero")
	case h.Size() != HeaderSize:
		return r, decodeErr("size", "a RequestStateChunk has no body")
	}
	return r, nil
}

// StateChunkHeader is the view of StateChunk (25) (1.4.13): the body is
// artifact bytes [Offset, Offset+Size-256). checksum_body stays 0 (chunks
// carry no integrity of their own, 2.4 rule 3). Senders set View to 0.
type StateChunkHeader struct {
	Cluster  U128
	Size     uint32
	View     uint32
	Replica  uint8
	Nonce    U128
	Offset   uint64
	Group    uint64
	Artifact uint32
}

// StateChunk reads the fields of h without validating them.
func (h *Header) StateChunk() StateChunkHeader {
	return StateChunkHeader{Cluster: h.Cluster(), Size: h.Size(), View: h.View(), Replica: h.Replica(),
		Nonce: h.u128(128), Offset: h.u64(144), Group: h.u64(152), Artifact: h.u32(160)}
}

// Encode writes s into h (Size as given) and seals it.
func (s *StateChunkHeader) Encode(h *Header) {
	encodeSealed(h, common{Cluster: s.Cluster, Size: s.Size, View: s.View, Replica: s.Replica}, CmdStateChunk)
	h.putU128(128, s.Nonce)
	h.putU64(144, s.Offset)
	h.putU64(152, s.Group)
	h.putU32(160, s.Artifact)
	h.Seal()
}

// DecodeStateChunkHeader types h: command, seal, size >= 256.
func DecodeStateChunkHeader(h *Header) (StateChunkHeader, error) {
	if err := wantCommand(h, "StateChunk", CmdStateChunk); err != nil {
		return StateChunkHeader{}, err
	}
	s := h.StateChunk()
	if err := checkSeal(h); err != nil {
		return s, err
	}
	if s.Size < HeaderSize {
		return s, decodeErr("size", "below the 256-byte header")
	}
	return s, nil
}

// ---------------------------------------------------------------------------
// Session forwarding (1.4.14 - 1.4.18, outcomes in 8.3 and 8.4)

// ForwardRegisterOutcome is the outcome byte (255) of a
// ForwardRegisterResult (replica-plane.md 8.3).
type ForwardRegisterOutcome uint8

const (
	ForwardRegisterOk                         ForwardRegisterOutcome = 0
	ForwardRegisterNotPrimary                 ForwardRegisterOutcome = 1
	ForwardRegisterNotCaughtUp                ForwardRegisterOutcome = 2 // defined, never emitted upstream
	ForwardRegisterPipelineFull               ForwardRegisterOutcome = 3
	ForwardRegisterInProgress                 ForwardRegisterOutcome = 4
	ForwardRegisterCanceled                   ForwardRegisterOutcome = 5 // also the catch-all error
	ForwardRegisterClientIDOwnedByAnotherUser ForwardRegisterOutcome = 6 // terminal refusal
)

var forwardRegisterOutcomeNames = [...]string{"Ok", "NotPrimary", "NotCaughtUp", "PipelineFull",
	"InProgress", "Canceled", "ClientIdOwnedByAnotherUser"}

// Valid reports whether o is a defined outcome (0..=6).
func (o ForwardRegisterOutcome) Valid() bool { return int(o) < len(forwardRegisterOutcomeNames) }

func (o ForwardRegisterOutcome) String() string {
	if o.Valid() {
		return forwardRegisterOutcomeNames[o]
	}
	return fmt.Sprintf("ForwardRegisterOutcome(%d)", uint8(o))
}

// ForwardLogoutOutcome is the outcome byte (255) of a ForwardLogoutResult
// (replica-plane.md 8.4).
type ForwardLogoutOutcome uint8

const (
	ForwardLogoutOk           ForwardLogoutOutcome = 0
	ForwardLogoutNotPrimary   ForwardLogoutOutcome = 1
	ForwardLogoutPipelineFull ForwardLogoutOutcome = 2
	ForwardLogoutInProgress   ForwardLogoutOutcome = 3
	ForwardLogoutCanceled     ForwardLogoutOutcome = 4
)

var forwardLogoutOutcomeNames = [...]string{"Ok", "NotPrimary", "PipelineFull", "InProgress", "Canceled"}

// Valid reports whether o is a defined outcome (0..=4).
func (o ForwardLogoutOutcome) Valid() bool { return int(o) < len(forwardLogoutOutcomeNames) }

func (o ForwardLogoutOutcome) String() string {
	if o.Valid() {
		return forwardLogoutOutcomeNames[o]
	}
	return fmt.Sprintf("ForwardLogoutOutcome(%d)", uint8(o))
}

// forwardCommon runs the checks 1.4.18 rules 1-3 share after the seal:
// size 256, nonzero client and nonce, and a zero command-area reserved
// region [from, to). reserved_frame (62..128) is deliberately not checked.
func forwardCommon(h *Header, client, nonce U128, from, to int) error {
	switch {
	case h.Size() != HeaderSize:
		return decodeErr("size", "a forwarding frame has no body")
	case client.IsZero():
		return decodeErr("client", "zero")
	case nonce.IsZero():
		return decodeErr("nonce", "zero")
	case !h.zero(from, to):
		return decodeErr("reserved", "nonzero")
	}
	return nil
}

// ForwardRegisterHeader is the view of ForwardRegister (26) (1.4.14).
// View is the sender's metadata view, informational only.
type ForwardRegisterHeader struct {
	Cluster U128
	View    uint32
	Replica uint8
	Client  U128
	Nonce   U128
	UserID  uint32
}

// ForwardRegister reads the fields of h without validating them.
func (h *Header) ForwardRegister() ForwardRegisterHeader {
	return ForwardRegisterHeader{Cluster: h.Cluster(), View: h.View(), Replica: h.Replica(),
		Client: h.u128(128), Nonce: h.u128(144), UserID: h.u32(160)}
}

// Encode writes f into h, size 256, and seals it.
func (f *ForwardRegisterHeader) Encode(h *Header) {
	encodeSealed(h, common{Cluster: f.Cluster, Size: HeaderSize, View: f.View, Replica: f.Replica}, CmdForwardRegister)
	h.putU128(128, f.Client)
	h.putU128(144, f.Nonce)
	h.putU32(160, f.UserID)
	h.Seal()
}

// DecodeForwardRegisterHeader types h (1.4.18): command, seal, size 256,
// nonzero client and nonce, zero 164..256.
func DecodeForwardRegisterHeader(h *Header) (ForwardRegisterHeader, error) {
	if err := wantCommand(h, "ForwardRegister", CmdForwardRegister); err != nil {
		return ForwardRegisterHeader{}, err
	}
	f := h.ForwardRegister()
	if err := checkSeal(h); err != nil {
		return f, err
	}
	return f, forwardCommon(h, f.Client, f.Nonce, 164, 256)
}

// ForwardRegisterResultHeader is the view of ForwardRegisterResult (27)
// (1.4.15). Epoch and Watermark are set only for ForwardRegisterOk.
type ForwardRegisterResultHeader struct {
	Cluster   U128
	View      uint32
	Replica   uint8
	Nonce     U128
	Client    U128
	Epoch     uint64
	Watermark uint64
	Outcome   ForwardRegisterOutcome
}

// ForwardRegisterResult reads the fields of h without validating them.
func (h *Header) ForwardRegisterResult() ForwardRegisterResultHeader {
	return ForwardRegisterResultHeader{Cluster: h.Cluster(), View: h.View(), Replica: h.Replica(),
		Nonce: h.u128(128), Client: h.u128(144), Epoch: h.u64(160), Watermark: h.u64(168),
		Outcome: ForwardRegisterOutcome(h[255])}
}

// Encode writes f into h, size 256, and seals it.
func (f *ForwardRegisterResultHeader) Encode(h *Header) {
	encodeSealed(h, common{Cluster: f.Cluster, Size: HeaderSize, View: f.View, Replica: f.Replica}, CmdForwardRegisterResult)
	h.putU128(128, f.Nonce)
	h.putU128(144, f.Client)
	h.putU64(160, f.Epoch)
	h.putU64(168, f.Watermark)
	h[255] = byte(f.Outcome)
	h.Seal()
}

// DecodeForwardRegisterResultHeader types h (1.4.18): command, outcome in
// 0..=6, seal, size 256, nonzero client and nonce, zero 176..255, and
// epoch = watermark = 0 unless the outcome is Ok.
func DecodeForwardRegisterResultHeader(h *Header) (ForwardRegisterResultHeader, error) {
	if err := wantCommand(h, "ForwardRegisterResult", CmdForwardRegisterResult); err != nil {
		return ForwardRegisterResultHeader{}, err
	}
	f := h.ForwardRegisterResult()
	if !f.Outcome.Valid() {
		return f, decodeErr("outcome", fmt.Sprintf("undefined ForwardRegister outcome %d", f.Outcome))
	}
	if err := checkSeal(h); err != nil {
		return f, err
	}
	if err := forwardCommon(h, f.Client, f.Nonce, 176, 255); err != nil {
		return f, err
	}
	if f.Outcome != ForwardRegisterOk && (f.Epoch != 0 || f.Watermark != 0) {
		return f, decodeErr("epoch", fmt.Sprintf("epoch/watermark set with outcome %v", f.Outcome))
	}
	return f, nil
}

// ForwardLogoutHeader is the view of ForwardLogout (28) (1.4.16). A Logout
// issued because the client disconnected uses Request = math.MaxUint64.
type ForwardLogoutHeader struct {
	Cluster U128
	View    uint32
	Replica uint8
	Client  U128
	Nonce   U128
	Session uint64
	Request uint64
}

// ForwardLogout reads the fields of h without validating them.
func (h *Header) ForwardLogout() ForwardLogoutHeader {
	return ForwardLogoutHeader{Cluster: h.Cluster(), View: h.View(), Replica: h.Replica(),
		Client: h.u128(128), Nonce: h.u128(144), Session: h.u64(160), Request: h.u64(168)}
}

// Encode writes f into h, size 256, and seals it.
func (f *ForwardLogoutHeader) Encode(h *Header) {
	encodeSealed(h, common{Cluster: f.Cluster, Size: HeaderSize, View: f.View, Replica: f.Replica}, CmdForwardLogout)
	h.putU128(128, f.Client)
	h.putU128(144, f.Nonce)
	h.putU64(160, f.Session)
	h.putU64(168, f.Request)
	h.Seal()
}

// DecodeForwardLogoutHeader types h (1.4.18): command, seal, size 256,
// nonzero client and nonce, zero 176..256, nonzero session and request.
func DecodeForwardLogoutHeader(h *Header) (ForwardLogoutHeader, error) {
	if err := wantCommand(h, "ForwardLogout", CmdForwardLogout); err != nil {
		return ForwardLogoutHeader{}, err
	}
	f := h.ForwardLogout()
	if err := checkSeal(h); err != nil {
		return f, err
	}
	if err := forwardCommon(h, f.Client, f.Nonce, 176, 256); err != nil {
		return f, err
	}
	switch {
	case f.Session == 0:
		return f, decodeErr("session", "zero")
	case f.Request == 0:
		return f, decodeErr("request", "zero")
	}
	return f, nil
}

// ForwardLogoutResultHeader is the view of ForwardLogoutResult (29)
// (1.4.17). Commit is set only for ForwardLogoutOk.
type ForwardLogoutResultHeader struct {
	Cluster U128
	View    uint32
	Replica uint8
	Nonce   U128
	Client  U128
	Commit  uint64
	Outcome ForwardLogoutOutcome
}

// ForwardLogoutResult reads the fields of h without validating them.
func (h *Header) ForwardLogoutResult() ForwardLogoutResultHeader {
	return ForwardLogoutResultHeader{Cluster: h.Cluster(), View: h.View(), Replica: h.Replica(),
		Nonce: h.u128(128), Client: h.u128(144), Commit: h.u64(160), Outcome: ForwardLogoutOutcome(h[255])}
}

// Encode writes f into h, size 256, and seals it.
func (f *ForwardLogoutResultHeader) Encode(h *Header) {
	encodeSealed(h, common{Cluster: f.Cluster, Size: HeaderSize, View: f.View, Replica: f.Replica}, CmdForwardLogoutResult)
	h.putU128(128, f.Nonce)
	h.putU128(144, f.Client)
	h.putU64(160, f.Commit)
	h[255] = byte(f.Outcome)
	h.Seal()
}

// DecodeForwardLogoutResultHeader types h (1.4.18): command, outcome in
// 0..=4, seal, size 256, nonzero client and nonce, zero 168..255, and
// commit = 0 unless the outcome is Ok.
func DecodeForwardLogoutResultHeader(h *Header) (ForwardLogoutResultHeader, error) {
	if err := wantCommand(h, "ForwardLogoutResult", CmdForwardLogoutResult); err != nil {
		return ForwardLogoutResultHeader{}, err
	}
	f := h.ForwardLogoutResult()
	if !f.Outcome.Valid() {
		return f, decodeErr("outcome", fmt.Sprintf("undefined ForwardLogout outcome %d", f.Outcome))
	}
	if err := checkSeal(h); err != nil {
		return f, err
	}
	if err := forwardCommon(h, f.Client, f.Nonce, 168, 255); err != nil {
		return f, err
	}
	if f.Outcome != ForwardLogoutOk && f.Commit != 0 {
		return f, decodeErr("commit", fmt.Sprintf("set with outcome %v", f.Outcome))
	}
	return f, nil
}

// ---------------------------------------------------------------------------
// Routed request (1.4.19)

// DecodeRoutedRequest types h as the routed request shape of command 5 on
// the replica plane: the client RequestHeader with Group (248..256) set.
// Order per 1.5: command 5, a defined operation, then 1.4.19 (nonzero
// client, operation not Reserved, Register with request = session = 0,
// NonReplicated free, anything else with both nonzero). Not sealed.
func DecodeRoutedRequest(h *Header) (RequestHeader, error) {
	if err := wantCommand(h, "Request", CmdRequest); err != nil {
		return RequestHeader{}, err
	}
	r := h.Request()
	if !r.Operation.Defined() {
		return r, decodeErr("operation", fmt.Sprintf("undefined discriminant %d", r.Operation))
	}
	return r, r.Validate()
}
