package vsr

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"

	"iggynode/wire"
)

// State transfer, the receiver's side (replica-plane.md 7.6): a pure,
// lockstep session that asks a peer for an offer, pulls its artifacts one
// chunk at a time and verifies them. The shell owns it (the server's side
// and the install need the state machine and the store), feeds it the
// peer's StateTransferTarget and StateChunk frames and ticks, and sends
// what it returns. The core only says when a transfer is needed
// (Ready.NeedTransfer) and takes the installed commit point (Installed).
//
// A session checks what arrives as it arrives: each artifact is hashed
// chunk by chunk and each SEGMENT_LOG artifact walked record by record
// (13.3 rule 3), so verifying needs no second pass over the bytes and a
// partition session can keep its segments out of memory: with a Stage,
// SEGMENT_LOG chunks go there (the node stages them in files, 13.3 rule
// 5) and only the offsets and the roster are held.

// TransferSession is one metadata state transfer from one peer.
type TransferSession struct {
	// RequesterView is the requester's view when it asks (the
	// RequestStateTransfer header's view field): a server serves a
	// requester of an older epoch from any replica (vsr/reconfig.go S3,
	// S6), the others only from a caught-up primary.
	RequesterView uint32
	cluster       wire.U128
	replica       uint8
	group         uint64
	Peer          uint8
	Nonce         wire.U128
	// partition: a partition transfer (7.7): SEGMENT_LOG and
	// CONSUMER_OFFSETS artifacts instead of a snapshot and a table.
	partition bool
	// View is the server's view on its offer.
	View uint32
	// ChunkMax is C of 7.6 step 4: min(256 KiB, max_message_size - 256).
	ChunkMax int
	// RefusedTransiently counts the transient refusals a partition
	// session waited through before its offer (7.7 rule 5; logged with
	// the install).
	RefusedTransiently int

	Manifest *wire.StateManifest
	// Artifacts holds the artifacts kept in memory as they arrive; the
	// entry of one that went to Stage stays empty.
	Artifacts [][]byte
	// Stage, set before the offer arrives, takes a partition session's
	// SEGMENT_LOG artifacts (nil: they are kept in Artifacts).
	Stage SegmentStage
	// Reusable are the segments an earlier session of the group staged
	// whole (its Completed), set before the offer arrives: an entry of
	// the offer that matches one is taken from the Stage, not fetched
	// (replica-plane.md 7.7 rule 6).
	Reusable  []StagedSegment
	CommitOp  uint64
	CommitMax uint64
	// received counts each artifact's bytes so far; sums holds the H64 of
	// each complete one and ends, of a SEGMENT_LOG one, the offset after
	// its last record, batches its records as the walk read their headers
	// (what the receiver's log indexes, without reading the files back),
	// sealed whether the Stage holds it whole; hash and walk are the
	// pending artifact's so far.
	received   []uint64
	sums, ends []uint64
	batches    [][]SegmentBatch
	sealed     []bool
	hash       hash.Hash64
	walk       segmentWalk
	// failed is the error OnChunk ended the session with: sticky, so a
	// session that completed around it never verifies.
	failed error
	// idle counts ticks without progress; attempts the stall retries in a
	// row (7.6 step 7).
	idle, attempts int
}

// Transfer limits of 7.6 step 3.
const (
	maxArtifactBytes   = 1 << 30
	maxManifestBytes   = 4 << 30
	maxSegmentArtifact = 1088 << 20
	maxOffsetsArtifact = 32 << 20
	maxPartitionBytes  = 1 << 40
	transferChunkMax   = 256 << 10
	transferMaxRetries = 5
)

// SegmentStage keeps the SEGMENT_LOG artifacts of a partition session
// out of memory (replica-plane.md 13.3 rule 5). Its errors end the
// session; the shell that made it deletes what it staged, or hands it,
// with the session's Completed, to the group's next session.
type SegmentStage interface {
	// Keep is told, as an offer is accepted, the frontiers of the staged
	// segments it reuses (Reusable): every other staged file goes.
	Keep(frontiers []uint64) error
	// Reserve is told, next, how many bytes the segments it fetches
	// hold: an error (no room for them) refuses the offer.
	Reserve(bytes uint64) error
	// Write appends chunk to artifact i, the segment whose first record's
	// base_offset is frontier.
	Write(i int, frontier uint64, chunk []byte) error
	// Seal is told that artifact i is complete, so it is made durable.
	Seal(i int) error
}

// Errors a session ends with.
var (
	ErrTransferRefused = errors.New("vsr: state transfer refused by the peer")
	ErrTransferStalled = errors.New("vsr: state transfer stalled")
)

// NewTransfer arms a session of this replica's group against peer (7.6
// step 1), with a nonce from the replica's seeded generator; Request is
// its first frame.
func (r *Replica) NewTransfer(peer uint8, maxMessageSize int) *TransferSession {
	return NewTransferSession(r.cfg.Cluster, r.cfg.Replica, r.cfg.Group, peer, !r.cfg.Metadata, maxMessageSize,
		wire.U128{Lo: r.random(), Hi: r.random()})
}

// NewTransferSession arms a session for replica of group against peer
// with the given nonce, for a shell that runs it away from the core (an
// actor of its own).
func NewTransferSession(cluster wire.U128, replica uint8, group uint64, peer uint8, partition bool, maxMessageSize int, nonce wire.U128) *TransferSession {
	chunk := transferChunkMax
	if maxMessageSize > wire.HeaderSize {
		chunk = min(chunk, maxMessageSize-wire.HeaderSize)
	}
	return &TransferSession{cluster: cluster, replica: replica, group: group, Peer: peer,
		Nonce: nonce, ChunkMax: max(chunk, 1), partition: partition}
}

// Request is the frame to send now: RequestStateTransfer until an offer is
// accepted, then the pending RequestStateChunk.
func (s *TransferSession) Request() Envelope {
	head := make([]byte, wire.HeaderSize)
	if s.Manifest == nil {
		q := wire.RequestStateTransferHeader{Cluster: s.cluster, View: s.RequesterView, Replica: s.replica, Nonce: s.Nonce, Group: s.group}
		q.Encode(wire.HeaderOf(head))
		return Envelope{To: s.Peer, Head: head}
	}
	i := s.pending()
	e := s.Manifest.Entries[i]
	q := wire.RequestStateChunkHeader{Cluster: s.cluster, Replica: s.replica, Nonce: s.Nonce, Group: s.group,
		Offset: s.received[i], Artifact: uint32(i),
		Len: uint32(min(uint64(s.ChunkMax), e.Len-s.received[i]))}
	q.Encode(wire.HeaderOf(head))
	return Envelope{To: s.Peer, Head: head}
}

// pending is the first incomplete artifact (len(Entries) when all are).
func (s *TransferSession) pending() int {
	for i, e := range s.Manifest.Entries {
		if s.received[i] < e.Len {
			return i
		}
	}
	return len(s.Manifest.Entries)
}

// Complete reports whether every artifact arrived.
func (s *TransferSession) Complete() bool {
	return s.Manifest != nil && s.pending() == len(s.Manifest.Entries)
}

// OnTarget takes the peer's StateTransferTarget frame (7.6 step 3). It
// returns the next request to send, or an error that ends the session:
// ErrTransferRefused for a refusal (the caller falls back to repair), or
// the Stage's refusal to reserve room for the segments. A partition
// session waits through a transient refusal of its request (7.7 rule 5:
// asked again by the stall retry). A refusal after the offer ends the
// session too: the peer no longer holds the offer (expired, its segments
// unreadable or deleted to free the disk), so no chunk would come.
// Frames for another session or a duplicate offer are ignored (nil, nil).
func (s *TransferSession) OnTarget(frame []byte) (*Envelope, error) {
	t, err := wire.DecodeStateTransferTargetHeader(wire.HeaderOf(frame))
	if err != nil || t.Nonce != s.Nonce || t.Group != s.group || t.Replica != s.Peer {
		return nil, nil
	}
	if !t.Available {
		if t.UnavailableTransient && s.partition && s.Manifest == nil {
			// 7.7 rule 5: a transient refusal of a partition offer (a
			// build in rounds, the served bound full) re-arms after a
			// fixed delay: the stall retry asks again a full interval
			// from now, and burns one of its attempts doing so (more
			// than 5 in a row end the session as stalled). 7.6 step 3
			// (metadata) and a refusal after the offer end it at once.
			s.idle = 0
			s.RefusedTransiently++
			return nil, nil
		}
		return nil, fmt.Errorf("%w (transient %v)", ErrTransferRefused, t.UnavailableTransient)
	}
	if s.Manifest != nil {
		return nil, nil
	}
	var m wire.StateManifest
	if err := m.Decode(frame[wire.HeaderSize:]); err != nil {
		return nil, nil // the session stays armed; the stall retry asks again
	}
	if !s.acceptable(m) || t.CommitOp > t.CommitMax {
		return nil, nil
	}
	n := len(m.Entries)
	s.Artifacts, s.received, s.sums, s.ends = make([][]byte, n), make([]uint64, n), make([]uint64, n), make([]uint64, n)
	s.batches, s.sealed = make([][]SegmentBatch, n), make([]bool, n)
	staged, kept := uint64(0), []uint64(nil)
	reusable := make(map[uint64]StagedSegment, len(s.Reusable)) // by frontier: a manifest may have thousands
	for _, r := range s.Reusable {
		reusable[r.Frontier] = r
	}
	for i, e := range m.Entries {
		s.ends[i] = e.Frontier
		if e.Len == 0 {
			s.sums[i] = wire.ArtifactChecksum(nil)
		}
		if s.staged(e) {
			if r, ok := reusable[e.Frontier]; ok && r.Len == e.Len && r.Checksum == e.Checksum && e.Len > 0 {
				s.received[i], s.sums[i], s.ends[i], s.batches[i], s.sealed[i] = e.Len, r.Checksum, r.End, r.Batches, true
				kept = append(kept, e.Frontier)
				continue
			}
			staged += e.Len
			continue
		}
		// Grown as chunks arrive: a manifest's lengths are the peer's word.
		s.Artifacts[i] = make([]byte, 0, min(e.Len, uint64(s.ChunkMax)))
	}
	if s.partition && s.Stage != nil {
		if err := s.Stage.Keep(kept); err != nil {
			return nil, fmt.Errorf("vsr: staged segments: %w", err)
		}
	}
	s.Reusable = nil
	if staged > 0 {
		if err := s.Stage.Reserve(staged); err != nil {
			return nil, fmt.Errorf("vsr: no room to stage the offer's %d segment bytes: %w", staged, err)
		}
	}
	s.Manifest, s.CommitOp, s.CommitMax, s.View = &m, t.CommitOp, t.CommitMax, t.View
	s.hash = wire.NewArtifactHash()
	s.idle, s.attempts = 0, 0
	if s.Complete() {
		return nil, nil
	}
	next := s.Request()
	return &next, nil
}

// acceptable applies the manifest limits of 7.6 step 3 (metadata) or 7.7
// rule 4 (partition).
func (s *TransferSession) acceptable(m wire.StateManifest) bool {
	total, snapshot, offsets, rosters := uint64(0), false, 0, 0
	for _, e := range m.Entries {
		total += e.Len
		switch {
		case !s.partition && e.Len > maxArtifactBytes:
			return false
		case !s.partition:
			snapshot = snapshot || e.Kind == wire.ArtifactMetadataSnapshot
		case e.Kind == wire.ArtifactSegmentLog && e.Len <= maxSegmentArtifact:
		case e.Kind == wire.ArtifactConsumerOffsets && e.Len <= maxOffsetsArtifact:
			offsets++
		case e.Kind == wire.ArtifactGroupRoster && e.Len == GroupRosterSize:
			rosters++
		default:
			return false
		}
	}
	if s.partition {
		return total <= maxPartitionBytes && offsets == 1 && rosters <= 1
	}
	return total <= maxManifestBytes && snapshot
}

// StagedSegment is a SEGMENT_LOG artifact a session staged whole, whose
// hash matched its manifest entry: what a later session needs to take it
// from the Stage instead of fetching it (7.7 rule 6). An entry with the
// same frontier, length and checksum (the staged file's own hash) names
// the same bytes.
type StagedSegment struct {
	Frontier, Len, Checksum uint64
	End                     uint64 // the offset after its last record
	Batches                 []SegmentBatch
}

// Completed lists the segments this session staged whole with the hash
// its manifest names (sealed in the Stage), for the group's next session
// (Reusable) if this one ends without an install.
func (s *TransferSession) Completed() []StagedSegment {
	if s.Manifest == nil {
		return nil
	}
	var out []StagedSegment
	for i, e := range s.Manifest.Entries {
		if s.staged(e) && s.sealed[i] && s.sums[i] == e.Checksum && e.Len > 0 {
			out = append(out, StagedSegment{Frontier: e.Frontier, Len: e.Len, Checksum: e.Checksum, End: s.ends[i], Batches: s.batches[i]})
		}
	}
	return out
}

// Batches are the records of the session's SEGMENT_LOG artifacts in
// offset order (manifest order, which VerifyPartition checks).
func (s *TransferSession) Batches() []SegmentBatch {
	if s.Manifest == nil {
		return nil
	}
	var out []SegmentBatch
	for _, b := range s.batches {
		out = append(out, b...)
	}
	return out
}

// staged reports whether artifact e goes to the Stage.
func (s *TransferSession) staged(e wire.ManifestEntry) bool {
	return s.partition && s.Stage != nil && e.Kind == wire.ArtifactSegmentLog
}

// OnChunk takes a StateChunk frame (7.6 step 6) and returns the next
// request, or nil when the chunk is not the one awaited or the transfer
// is complete (check Complete). It fails, ending the session, when the
// Stage does or a segment stops walking (13.3 rule 3: the artifact is
// undecodable, fetching the rest of it would be wasted).
func (s *TransferSession) OnChunk(frame []byte) (*Envelope, error) {
	if s.failed != nil {
		return nil, s.failed
	}
	next, err := s.onChunk(frame)
	s.failed = err
	return next, err
}

func (s *TransferSession) onChunk(frame []byte) (*Envelope, error) {
	c, err := wire.DecodeStateChunkHeader(wire.HeaderOf(frame))
	if err != nil || c.Nonce != s.Nonce || c.Group != s.group || s.Manifest == nil || s.Complete() {
		return nil, nil
	}
	i := s.pending()
	body := frame[wire.HeaderSize:]
	e := s.Manifest.Entries[i]
	if int(c.Artifact) != i || c.Offset != s.received[i] || len(body) == 0 ||
		c.Offset+uint64(len(body)) > e.Len {
		return nil, nil
	}
	if s.staged(e) {
		if err := s.Stage.Write(i, e.Frontier, body); err != nil {
			return nil, fmt.Errorf("vsr: stage artifact %d: %w", i, err)
		}
	} else {
		s.Artifacts[i] = append(s.Artifacts[i], body...)
	}
	_, _ = s.hash.Write(body)
	segment := s.partition && e.Kind == wire.ArtifactSegmentLog
	if segment {
		if s.received[i] == 0 {
			s.walk = segmentWalk{next: e.Frontier, out: &s.batches[i]}
		}
		if err := s.walk.feed(body); err != nil {
			return nil, fmt.Errorf("vsr: segment at %d: %w", e.Frontier, err)
		}
	}
	s.received[i] += uint64(len(body))
	if s.received[i] == e.Len {
		s.sums[i] = s.hash.Sum64()
		s.hash.Reset()
		if segment {
			if err := s.walk.end(); err != nil {
				return nil, fmt.Errorf("vsr: segment at %d: %w", e.Frontier, err)
			}
			s.ends[i] = s.walk.next
		}
		if s.staged(e) {
			if err := s.Stage.Seal(i); err != nil {
				return nil, fmt.Errorf("vsr: stage artifact %d: %w", i, err)
			}
			s.sealed[i] = true
		}
	}
	s.idle, s.attempts = 0, 0
	if s.Complete() {
		return nil, nil
	}
	next := s.Request()
	return &next, nil
}

// SegmentBatch is one record of a fetched SEGMENT_LOG artifact, from its
// header.
type SegmentBatch struct {
	BaseOffset, BaseTimestamp uint64
	Count, Length             uint32 // message_count, batch_length
}

// segmentWalk checks a SEGMENT_LOG artifact record by record as its
// bytes arrive (13.3 rule 3): the records walk it by batch_length, and
// each one's base_offset is next (the frontier, then the one before's
// plus its message_count). Each record it walks is appended to out.
type segmentWalk struct {
	next uint64
	out  *[]SegmentBatch
	// skip is what is left of the current record after its header; head
	// gathers a header that spans chunks, fill of it so far.
	skip uint64
	head [wire.BatchHeaderSize]byte
	fill int
	err  error
}

func (w *segmentWalk) feed(p []byte) error {
	for len(p) > 0 && w.err == nil {
		if w.skip > 0 {
			n := min(w.skip, uint64(len(p)))
			w.skip -= n
			p = p[n:]
			continue
		}
		n := copy(w.head[w.fill:], p)
		w.fill += n
		p = p[n:]
		if w.fill < len(w.head) {
			break
		}
		w.fill = 0
		b := wire.Batch(w.head[:])
		if b.Length() < wire.BatchHeaderSize || b.Length() > 1<<32-1 || b.BaseOffset() != w.next || b.MessageCount() == 0 {
			w.err = fmt.Errorf("a batch at %d does not walk", w.next)
			break
		}
		*w.out = append(*w.out, SegmentBatch{BaseOffset: w.next, BaseTimestamp: b.BaseTimestamp(),
			Count: b.MessageCount(), Length: uint32(b.Length())})
		w.next += uint64(b.MessageCount())
		w.skip = b.Length() - wire.BatchHeaderSize
	}
	return w.err
}

// end reports whether the walk ended on a record boundary.
func (w *segmentWalk) end() error {
	if w.err == nil && (w.fill > 0 || w.skip > 0) {
		return fmt.Errorf("ends inside the batch at %d", w.next)
	}
	return w.err
}

// Tick is the stall retry of 7.6 step 7: every retryTicks without
// progress it returns the request to send again; after more than 5 in a
// row, ErrTransferStalled.
func (s *TransferSession) Tick(retryTicks int) (*Envelope, error) {
	if s.Complete() {
		return nil, nil
	}
	s.idle++
	if s.idle < retryTicks {
		return nil, nil
	}
	s.idle = 0
	s.attempts++
	if s.attempts > transferMaxRetries {
		return nil, ErrTransferStalled
	}
	next := s.Request()
	return &next, nil
}

// Verify is 7.6 step 8: every artifact's H64 matches its manifest entry,
// and the kinds are exactly one METADATA_SNAPSHOT and one CLIENT_TABLE.
// It returns the two artifacts.
func (s *TransferSession) Verify() (snapshot, table []byte, tableFrontier, snapshotFrontier uint64, err error) {
	if s.failed != nil {
		return nil, nil, 0, 0, s.failed
	}
	if !s.Complete() {
		return nil, nil, 0, 0, errors.New("vsr: state transfer incomplete")
	}
	for i, e := range s.Manifest.Entries {
		if s.sums[i] != e.Checksum {
			return nil, nil, 0, 0, fmt.Errorf("vsr: artifact %d (%v) checksum mismatch", i, e.Kind)
		}
		switch {
		case e.Kind == wire.ArtifactMetadataSnapshot && snapshot == nil:
			snapshot, snapshotFrontier = s.Artifacts[i], e.Frontier
		case e.Kind == wire.ArtifactClientTable && table == nil:
			table, tableFrontier = s.Artifacts[i], e.Frontier
		default:
			return nil, nil, 0, 0, fmt.Errorf("vsr: unexpected artifact %d of kind %v", i, e.Kind)
		}
	}
	if snapshot == nil || table == nil {
		return nil, nil, 0, 0, errors.New("vsr: a metadata transfer needs a snapshot and a client table")
	}
	if tableFrontier > s.CommitOp || snapshotFrontier > s.CommitOp {
		return nil, nil, 0, 0, fmt.Errorf("vsr: artifacts (%d, %d) beyond the offer's commit %d", snapshotFrontier, tableFrontier, s.CommitOp)
	}
	return snapshot, table, tableFrontier, snapshotFrontier, nil
}

// VerifyPartition is 7.6 step 8 for a partition offer, with 13.3 rule 3:
// every artifact's H64 matches, each SEGMENT_LOG walks exactly as stamped
// batches whose base offsets follow one another from its frontier, the
// segments are contiguous, and the ICO1 offsets decode. It returns the
// offsets; the segments are in Artifacts, or staged.
func (s *TransferSession) VerifyPartition() (offsets wire.ConsumerOffsetsArtifact, err error) {
	if s.failed != nil {
		return offsets, s.failed
	}
	if !s.Complete() {
		return offsets, errors.New("vsr: state transfer incomplete")
	}
	next, first := uint64(0), true
	for i, e := range s.Manifest.Entries {
		if s.sums[i] != e.Checksum {
			return offsets, fmt.Errorf("vsr: artifact %d (%v) checksum mismatch", i, e.Kind)
		}
		if e.Kind == wire.ArtifactConsumerOffsets {
			if err := offsets.Decode(s.Artifacts[i]); err != nil {
				return offsets, err
			}
			continue
		}
		if e.Kind == wire.ArtifactGroupRoster {
			continue // GroupRoster
		}
		if !first && e.Frontier != next {
			return offsets, fmt.Errorf("vsr: segment at %d does not follow %d", e.Frontier, next)
		}
		next, first = s.ends[i], false // walked as it arrived (OnChunk)
	}
	if !first && offsets.NextOffset < next {
		return offsets, fmt.Errorf("vsr: offsets artifact's next offset %d below the segments' end %d", offsets.NextOffset, next)
	}
	return offsets, nil
}

// GroupRosterSize is an ArtifactGroupRoster's length.
const GroupRosterSize = RosterBodySize + 8

// EncodeGroupRoster is the ArtifactGroupRoster of a group's roster and
// the op that opened its epoch.
func EncodeGroupRoster(ro Roster, epochOp uint64) []byte {
	return binary.LittleEndian.AppendUint64(EncodeRoster(make([]byte, 0, GroupRosterSize), ro), epochOp)
}

// GroupRoster is the roster a complete, verified partition session
// carries (nil: the group never reconfigured, it sent none).
func (s *TransferSession) GroupRoster() (*Roster, error) {
	if s.Manifest == nil {
		return nil, nil
	}
	for i, e := range s.Manifest.Entries {
		if e.Kind != wire.ArtifactGroupRoster {
			continue
		}
		a := s.Artifacts[i]
		if len(a) != GroupRosterSize || wire.ArtifactChecksum(a) != e.Checksum {
			return nil, fmt.Errorf("vsr: group roster artifact of %d bytes or checksum mismatch", len(a))
		}
		ro, err := DecodeRoster(a[:RosterBodySize])
		if err != nil {
			return nil, err
		}
		return &ro, nil
	}
	return nil, nil
}

// Transferring reports whether a state transfer is running (7.6: the
// replica sends no PrepareOk, ignores Prepares and does not run its
// commit walk meanwhile).
func (r *Replica) Transferring() bool { return r.transferring }

// SetTransferring marks the start or the abandonment of a transfer.
func (r *Replica) SetTransferring(on bool) {
	r.transferring = on
	if !on {
		r.NeedTransfer = -1
		r.commitJournal()
		r.maybeRepair()
	}
}

// Installed takes the state a transfer installed (7.9.4 steps 4-7): the
// snapshot's op becomes commit_min (its journal below was dropped by the
// shell), commit_max rises to the offer's, and journal repair fetches the
// tail from this view's primary (7.9.4 step 7 names the transfer's
// server, which may be gone).
//
// The shell installs only what InstallAllowed accepts, asked right before
// it writes anything: a replica that became a primary (or an elect, or
// went Recovering) while it fetched must not throw its log away.
func (r *Replica) Installed(snapshotOp, commitMax uint64) {
	r.transferring = false
	r.NeedTransfer = -1
	if snapshotOp > r.commitMin {
		assert(r.status == StatusNormal && !r.IsPrimary(), "install only as a backup in normal status")
		// The shell truncated its journal from snapshotOp + 1 (7.9.4 step
		// 2a): what was held above is asked again. Nothing it held
		// before is servable now: the ring goes too, so a request below
		// the install is answered RangeEvicted.
		clear(r.log)
		r.retained = retained{}
		r.cancelFates(snapshotOp) // committed past here: not seen
		r.commitMin, r.sequencer = snapshotOp, snapshotOp
		r.committedChecksum, r.lastChecksum = wire.U128{}, wire.U128{} // its identity did not travel
		r.repair = repairSession{}
		r.refusedInARow, r.repairBackoff = 0, 0
	}
	r.commitMax = max(r.commitMax, commitMax, r.commitMin)
	r.advanceSequencer()
	r.commitJournal()
	r.maybeRepair() // the tail, from this view's primary (the transfer peer may be gone)
}

// InstallAllowed reports whether a fetched state at commitOp may be
// installed now: this replica is a backup in normal status and the state
// is ahead of its commit point.
func (r *Replica) InstallAllowed(commitOp uint64) bool {
	return r.status == StatusNormal && !r.IsPrimary() && commitOp > r.commitMin
}

// Offer is a state transfer offer as its server holds it (7.6 step 2, 7.7
// rule 2): the artifacts, their manifest and the commit point they are
// at. The shells build it from their state; answering requests from it
// is the same for both planes and for the simulator. An artifact is held
// in memory (Add) or read from a file range chunk by chunk (AddSection:
// a partition's segments, so an offer does not copy the partition).
type Offer struct {
	Manifest  []byte
	CommitOp  uint64
	CommitMax uint64
	entries   []wire.ManifestEntry
	artifacts []offered
}

// offered is one artifact: its bytes, or the range they are read from.
type offered struct {
	mem     []byte
	section *io.SectionReader
}

func (a offered) size() uint64 {
	if a.section != nil {
		return uint64(a.section.Size())
	}
	return uint64(len(a.mem))
}

// Add appends an artifact of kind with its frontier (7.8.1).
func (o *Offer) Add(kind wire.ArtifactKind, frontier uint64, artifact []byte) {
	o.add(kind, frontier, offered{mem: artifact}, wire.ArtifactChecksum(artifact))
}

// AddSection appends an artifact read from r when asked for, whose H64
// the caller computed (over the same bytes: a range that changes under
// the offer fails the receiver's check, 7.6 step 8).
func (o *Offer) AddSection(kind wire.ArtifactKind, frontier uint64, r *io.SectionReader, checksum uint64) {
	o.add(kind, frontier, offered{section: r}, checksum)
}

func (o *Offer) add(kind wire.ArtifactKind, frontier uint64, a offered, checksum uint64) {
	o.artifacts = append(o.artifacts, a)
	o.entries = append(o.entries, wire.ManifestEntry{Kind: kind, Frontier: frontier, Len: a.size(), Checksum: checksum})
	o.Manifest = wire.StateManifest{Entries: o.entries}.AppendTo(o.Manifest[:0])
}

// Artifacts is the number of artifacts offered.
func (o *Offer) Artifacts() int { return len(o.artifacts) }

// Server names the replica answering: its cluster, view, id, group and
// commit_max, which every StateTransferTarget carries (1.4.11).
type Server struct {
	Cluster   wire.U128
	View      uint32
	Replica   uint8
	Group     uint64
	CommitMax uint64
}

// Target is the StateTransferTarget answering nonce: the offer o, or a
// refusal when o is nil (transient: "retry later", 7.7 rule 3).
func (s Server) Target(nonce wire.U128, o *Offer, transient bool) (head, body []byte) {
	t := wire.StateTransferTargetHeader{Cluster: s.Cluster, Size: wire.HeaderSize, View: s.View, Replica: s.Replica,
		Nonce: nonce, Group: s.Group, CommitMax: s.CommitMax}
	if o != nil {
		t.Available, t.CommitOp, t.CommitMax = true, o.CommitOp, o.CommitMax
		t.Size += uint32(len(o.Manifest))
		body = o.Manifest
	} else {
		t.UnavailableTransient = transient
	}
	head = make([]byte, wire.HeaderSize)
	t.Encode(wire.HeaderOf(head))
	return head, body
}

// ErrChunkOutside: a RequestStateChunk for an artifact or offset the
// offer does not have (ignored: not this offer's receiver, or a bad one).
var ErrChunkOutside = errors.New("vsr: chunk outside the offer")

// Chunk answers a RequestStateChunk from o (7.6 step 5): bytes [offset,
// offset + min(len, chunkMax)) of the artifact, clipped to its end; tail
// reports that the chunk ends the last artifact. A chunk of a section is
// read into a buffer of its own. It fails with ErrChunkOutside for an
// artifact or offset out of range, or with the read's error for a
// section that could not be read: the offer cannot be served any more
// (7.7 rule 3: unreadable segment, a permanent refusal).
func (s Server) Chunk(o *Offer, q wire.RequestStateChunkHeader, chunkMax uint32) (head, body []byte, tail bool, err error) {
	if int(q.Artifact) >= len(o.artifacts) || q.Offset >= o.artifacts[q.Artifact].size() {
		return nil, nil, false, ErrChunkOutside
	}
	a := o.artifacts[q.Artifact]
	end := min(q.Offset+uint64(min(q.Len, chunkMax)), a.size())
	if a.section == nil {
		body = a.mem[q.Offset:end]
	} else {
		body = make([]byte, end-q.Offset)
		if _, err := a.section.ReadAt(body, int64(q.Offset)); err != nil {
			return nil, nil, false, fmt.Errorf("vsr: artifact %d at %d: %w", q.Artifact, q.Offset, err)
		}
	}
	c := wire.StateChunkHeader{Cluster: s.Cluster, Size: uint32(wire.HeaderSize + end - q.Offset), Replica: s.Replica,
		Nonce: q.Nonce, Offset: q.Offset, Group: s.Group, Artifact: q.Artifact}
	head = make([]byte, wire.HeaderSize)
	c.Encode(wire.HeaderOf(head))
	return head, body, int(q.Artifact) == len(o.artifacts)-1 && end == a.size(), nil
}
