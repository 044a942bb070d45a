package vsr

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"testing"

	"iggynode/wire"
)

// offerFrame is a StateTransferTarget from replica 0 offering artifacts.
func offerFrame(s *TransferSession, commitOp uint64, artifacts ...[]byte) []byte {
	m := wire.StateManifest{}
	kinds := []wire.ArtifactKind{wire.ArtifactMetadataSnapshot, wire.ArtifactClientTable}
	for i, a := range artifacts {
		m.Entries = append(m.Entries, wire.ManifestEntry{Kind: kinds[i%2], Frontier: commitOp, Len: uint64(len(a)), Checksum: wire.ArtifactChecksum(a)})
	}
	body := m.AppendTo(nil)
	t := wire.StateTransferTargetHeader{Size: uint32(wire.HeaderSize + len(body)), Nonce: s.Nonce, CommitOp: commitOp,
		Group: 5, Available: true, CommitMax: commitOp + 2}
	var h wire.Header
	t.Encode(&h)
	return append(h[:], body...)
}

func chunkFrame(s *TransferSession, artifact uint32, offset uint64, data []byte) []byte {
	c := wire.StateChunkHeader{Size: uint32(wire.HeaderSize + len(data)), Nonce: s.Nonce, Offset: offset, Group: 5, Artifact: artifact}
	var h wire.Header
	c.Encode(&h)
	return append(h[:], data...)
}

// 7.6 steps 3-6 and 8: the offer is accepted, chunks are pulled in
// lockstep (one request, of at most C bytes, for the first incomplete
// artifact at the bytes received), chunks out of turn are ignored, and
// the artifacts verify.
func TestTransferPullsInLockstep(t *testing.T) {
	r := New(Config{Group: 5, Replica: 2, ReplicaCount: 3, Metadata: true})
	s := r.NewTransfer(0, wire.HeaderSize+4) // C = 4 bytes
	if q := wire.HeaderOf(s.Request().Head); q.Command() != wire.CmdRequestStateTransfer {
		t.Fatalf("first request %v", q.Command())
	}
	snap, table := []byte("snapshot!"), []byte("tbl")
	next, err := s.OnTarget(offerFrame(s, 7, snap, table))
	if err != nil || next == nil {
		t.Fatalf("offer: %v %v", next, err)
	}
	want := []struct {
		artifact uint32
		offset   uint64
		len      uint32
	}{{0, 0, 4}, {0, 4, 4}, {0, 8, 1}, {1, 0, 3}}
	all := [][]byte{snap, table}
	for i, w := range want {
		q := wire.HeaderOf(next.Head).RequestStateChunk()
		if q.Artifact != w.artifact || q.Offset != w.offset || q.Len != w.len {
			t.Fatalf("request %d: %+v, want %+v", i, q, w)
		}
		if next, err := s.OnChunk(chunkFrame(s, w.artifact, w.offset+1, []byte("x"))); next != nil || err != nil {
			t.Fatal("a chunk at the wrong offset was taken")
		}
		data := all[w.artifact][w.offset : w.offset+uint64(w.len)]
		if next, err = s.OnChunk(chunkFrame(s, w.artifact, w.offset, data)); err != nil {
			t.Fatal(err)
		}
	}
	if next != nil || !s.Complete() {
		t.Fatal("not complete after the last chunk")
	}
	gotSnap, gotTable, _, frontier, err := s.Verify()
	if err != nil || !bytes.Equal(gotSnap, snap) || !bytes.Equal(gotTable, table) || frontier != 7 {
		t.Fatalf("verify: %v", err)
	}
}

// 7.6 step 8: an artifact whose bytes do not hash to the manifest's
// checksum fails verification; step 3: a refusal ends the session; step
// 7: a silent peer ends it after 5 retries.
func TestTransferFailures(t *testing.T) {
	r := New(Config{Group: 5, Replica: 2, ReplicaCount: 3, Metadata: true})
	s := r.NewTransfer(0, 1<<20)
	frame := offerFrame(s, 3, []byte("abc"), []byte("d"))
	if _, err := s.OnTarget(frame); err != nil {
		t.Fatal(err)
	}
	s.OnChunk(chunkFrame(s, 0, 0, []byte("abX")))
	s.OnChunk(chunkFrame(s, 1, 0, []byte("d")))
	if _, _, _, _, err := s.Verify(); err == nil {
		t.Fatal("a corrupted artifact verified")
	}

	s = r.NewTransfer(0, 1<<20)
	refusal := wire.StateTransferTargetHeader{Size: wire.HeaderSize, Nonce: s.Nonce, Group: 5, UnavailableTransient: true}
	var h wire.Header
	refusal.Encode(&h)
	if _, err := s.OnTarget(h[:]); !errors.Is(err, ErrTransferRefused) {
		t.Fatalf("refusal: %v", err)
	}

	s = r.NewTransfer(0, 1<<20)
	retries := 0
	for tick := 0; tick < 10*100; tick++ {
		next, err := s.Tick(100)
		if errors.Is(err, ErrTransferStalled) {
			if retries != 5 {
				t.Fatalf("gave up after %d retries", retries)
			}
			return
		}
		if next != nil {
			retries++
		}
	}
	t.Fatal("a silent peer never ended the session")
}

// 7.9.4 steps 4-7: after an install the snapshot's op is commit_min, the
// journal above it is dropped, and repair asks this view's primary for
// the tail (the transfer's server may be gone).
func TestInstalledRepairsTheTail(t *testing.T) {
	r := New(Config{Group: 5, Replica: 2, ReplicaCount: 3, Metadata: true})
	r.SetTransferring(true)
	r.Installed(40, 45)
	rd := r.Ready()
	if r.CommitMin() != 40 || r.Op() != 40 || r.Transferring() || len(rd.Send) != 1 {
		t.Fatalf("commit %d op %d transferring %v sends %d", r.CommitMin(), r.Op(), r.Transferring(), len(rd.Send))
	}
	q := wire.HeaderOf(rd.Send[0].Head).RequestPrepares()
	if rd.Send[0].To != r.Primary() || q.FromOp != 41 || q.ToOp != 45 {
		t.Fatalf("repair request %+v to %d", q, rd.Send[0].To)
	}
}

// A partition offer of a group that reconfigured carries its roster
// (wire.ArtifactGroupRoster): the session accepts one, verifies the
// partition state around it and hands the roster back; two rosters, or
// one of the wrong size, make the offer unacceptable.
func TestPartitionTransferCarriesTheGroupRoster(t *testing.T) {
	ro := Roster{Epoch: 3, Voters: 0b1110, Target: 0b1110}
	offsets := wire.ConsumerOffsetsArtifact{NextOffset: 0}.AppendTo(nil)
	run := func(artifacts ...[2]any) (*TransferSession, error) {
		s := NewTransferSession(wire.U128{}, 2, 5, 0, true, 1<<20, wire.U128{Lo: 9})
		o := &Offer{CommitOp: 7, CommitMax: 7}
		for _, a := range artifacts {
			o.Add(a[0].(wire.ArtifactKind), 7, a[1].([]byte))
		}
		sv := Server{Group: 5, CommitMax: 7}
		head, body := sv.Target(s.Nonce, o, false)
		next, err := s.OnTarget(append(head, body...))
		for err == nil && next != nil {
			q, qerr := wire.DecodeRequestStateChunkHeader(wire.HeaderOf(next.Head))
			if qerr != nil {
				return s, qerr
			}
			h, b, _, cerr := sv.Chunk(o, q, 1<<20)
			if cerr != nil {
				return s, cerr
			}
			next, err = s.OnChunk(append(h, b...))
		}
		return s, err
	}
	s, err := run([2]any{wire.ArtifactConsumerOffsets, offsets}, [2]any{wire.ArtifactGroupRoster, EncodeGroupRoster(ro, 12)})
	if err != nil || !s.Complete() {
		t.Fatalf("offer with a roster: complete %v, %v", s.Complete(), err)
	}
	if _, err := s.VerifyPartition(); err != nil {
		t.Fatal(err)
	}
	if got, err := s.GroupRoster(); err != nil || got == nil || *got != ro {
		t.Fatalf("roster %v %v, want %v", got, err, ro)
	}
	s, err = run([2]any{wire.ArtifactConsumerOffsets, offsets})
	if got, gerr := s.GroupRoster(); err != nil || gerr != nil || got != nil {
		t.Fatalf("a group that never reconfigured: %v %v %v", got, gerr, err)
	}
	for name, bad := range map[string][][2]any{
		"two rosters": {{wire.ArtifactConsumerOffsets, offsets}, {wire.ArtifactGroupRoster, EncodeGroupRoster(ro, 1)}, {wire.ArtifactGroupRoster, EncodeGroupRoster(ro, 1)}},
		"short":       {{wire.ArtifactConsumerOffsets, offsets}, {wire.ArtifactGroupRoster, EncodeGroupRoster(ro, 1)[:10]}},
	} {
		if s, err := run(bad...); err == nil && s.Complete() {
			t.Fatalf("%s: accepted", name)
		}
	}
}

// stampedBatch is a stored batch of count messages at base.
func stampedBatch(t *testing.T, base uint64, count int) []byte {
	t.Helper()
	msgs := make([]wire.Message, count)
	for i := range msgs {
		msgs[i] = wire.Message{ID: wire.U128{Lo: base + uint64(i) + 1}, Payload: bytes.Repeat([]byte{byte(i)}, 40+i)}
	}
	b, err := wire.AppendBatch(nil, msgs)
	if err != nil {
		t.Fatal(err)
	}
	wire.Batch(b).StampAppend(base, 1000+base)
	return b
}

// memoryStage is a SegmentStage that records what it is given.
type memoryStage struct {
	full     map[int]bool // artifacts whose writes fail
	kept     []uint64
	reserved uint64
	refuse   error
	segments map[int][]byte
	sealed   map[int]bool
}

func (m *memoryStage) Keep(frontiers []uint64) error { m.kept = frontiers; return nil }
func (m *memoryStage) Reserve(n uint64) error        { m.reserved += n; return m.refuse }
func (m *memoryStage) Write(i int, frontier uint64, chunk []byte) error {
	if m.full[i] {
		return errors.New("no space")
	}
	if m.sealed[i] {
		return errors.New("write after seal")
	}
	m.segments[i] = append(m.segments[i], chunk...)
	return nil
}
func (m *memoryStage) Seal(i int) error { m.sealed[i] = true; return nil }

// pullPartition runs a partition session with stage against an offer of
// artifacts (kind, frontier, bytes) in chunks of chunk bytes; it returns
// the session, the first error and how many chunks were taken.
func pullPartition(t *testing.T, stage SegmentStage, chunk int, artifacts ...[3]any) (*TransferSession, int, error) {
	t.Helper()
	s := NewTransferSession(wire.U128{}, 2, 5, 0, true, wire.HeaderSize+chunk, wire.U128{Lo: 9})
	s.Stage = stage
	o := &Offer{CommitOp: 7, CommitMax: 7}
	for _, a := range artifacts {
		o.Add(a[0].(wire.ArtifactKind), a[1].(uint64), a[2].([]byte))
	}
	taken, err := pullOffer(t, s, o, chunk)
	return s, taken, err
}

// pullOffer runs session s against offer o, served by group 5's server
// in chunks of at most chunk bytes, until it completes or fails; it
// returns how many chunks were taken and the first error.
func pullOffer(t *testing.T, s *TransferSession, o *Offer, chunk int) (taken int, err error) {
	t.Helper()
	sv := Server{Group: 5, CommitMax: o.CommitMax}
	head, body := sv.Target(s.Nonce, o, false)
	next, err := s.OnTarget(append(head, body...))
	for err == nil && next != nil {
		q, qerr := wire.DecodeRequestStateChunkHeader(wire.HeaderOf(next.Head))
		if qerr != nil {
			t.Fatal(qerr)
		}
		h, b, _, cerr := sv.Chunk(o, q, uint32(chunk))
		if cerr != nil {
			t.Fatalf("chunk request %+v not served: %v", q, cerr)
		}
		taken++
		next, err = s.OnChunk(append(h, b...))
	}
	return taken, err
}

// 13.3 rules 3 and 5: with a Stage, a partition session hands every
// SEGMENT_LOG byte to it as it arrives (the records walked across chunk
// boundaries) and keeps only the offsets in memory; it asks the stage to
// reserve the segments' bytes first and seals each one when complete.
func TestPartitionTransferStagesItsSegments(t *testing.T) {
	segA := append(stampedBatch(t, 10, 3), stampedBatch(t, 13, 2)...)
	segB := stampedBatch(t, 15, 4)
	offsets := wire.ConsumerOffsetsArtifact{NextOffset: 19}.AppendTo(nil)
	stage := &memoryStage{segments: map[int][]byte{}, sealed: map[int]bool{}}
	s, _, err := pullPartition(t, stage, 100, // headers of 256 bytes span three chunks
		[3]any{wire.ArtifactSegmentLog, uint64(10), segA}, [3]any{wire.ArtifactSegmentLog, uint64(15), segB},
		[3]any{wire.ArtifactConsumerOffsets, uint64(7), offsets})
	if err != nil || !s.Complete() {
		t.Fatalf("complete %v, %v", s.Complete(), err)
	}
	if stage.reserved != uint64(len(segA)+len(segB)) {
		t.Fatalf("reserved %d, want %d", stage.reserved, len(segA)+len(segB))
	}
	if !bytes.Equal(stage.segments[0], segA) || !bytes.Equal(stage.segments[1], segB) || !stage.sealed[0] || !stage.sealed[1] {
		t.Fatalf("staged %d and %d bytes, sealed %v", len(stage.segments[0]), len(stage.segments[1]), stage.sealed)
	}
	if len(s.Artifacts[0])+len(s.Artifacts[1]) != 0 || !bytes.Equal(s.Artifacts[2], offsets) {
		t.Fatalf("in memory: %d, %d and %d bytes", len(s.Artifacts[0]), len(s.Artifacts[1]), len(s.Artifacts[2]))
	}
	got, err := s.VerifyPartition()
	if err != nil || got.NextOffset != 19 {
		t.Fatalf("verify: %v, next offset %d", err, got.NextOffset)
	}
	// The walk kept each record's index fields, for the install.
	var want []SegmentBatch
	for _, b := range []wire.Batch{wire.Batch(segA), wire.Batch(segA[wire.Batch(segA).Length():]), wire.Batch(segB)} {
		want = append(want, SegmentBatch{BaseOffset: b.BaseOffset(), BaseTimestamp: b.BaseTimestamp(), Count: b.MessageCount(), Length: uint32(b.Length())})
	}
	if !slices.Equal(s.Batches(), want) || want[1].BaseOffset != 13 || want[1].Count != 2 {
		t.Fatalf("walked %+v, want %+v", s.Batches(), want)
	}

	// The walk runs as bytes arrive: a record at the wrong offset ends
	// the session at the chunk that shows it, not after the whole artifact.
	bad := append(stampedBatch(t, 10, 3), stampedBatch(t, 14, 2)...) // 13 expected
	bad = append(bad, bytes.Repeat(stampedBatch(t, 16, 1), 20)...)
	stage = &memoryStage{segments: map[int][]byte{}, sealed: map[int]bool{}}
	s, taken, err := pullPartition(t, stage, 100,
		[3]any{wire.ArtifactSegmentLog, uint64(10), bad}, [3]any{wire.ArtifactConsumerOffsets, uint64(7), offsets})
	if err == nil || taken*100 >= len(bad)/2 {
		t.Fatalf("a segment that does not walk: %v after %d of %d chunks", err, taken, len(bad)/100+1)
	}
	if _, verr := s.VerifyPartition(); verr == nil {
		t.Fatal("a failed session verified")
	}

	// A segment that ends inside a record fails as it completes, and the
	// failure sticks.
	short := segA[:len(segA)-1]
	stage = &memoryStage{segments: map[int][]byte{}, sealed: map[int]bool{}}
	s, _, err = pullPartition(t, stage, 100,
		[3]any{wire.ArtifactSegmentLog, uint64(10), short}, [3]any{wire.ArtifactConsumerOffsets, uint64(7), offsets})
	if err == nil {
		t.Fatal("a segment ending inside a batch was taken")
	}
	if _, verr := s.VerifyPartition(); verr == nil {
		t.Fatal("a segment ending inside a batch verified")
	}

	// No room to stage: the offer is refused before any chunk is asked.
	stage = &memoryStage{segments: map[int][]byte{}, sealed: map[int]bool{}, refuse: errors.New("disk full")}
	if _, taken, err := pullPartition(t, stage, 100,
		[3]any{wire.ArtifactSegmentLog, uint64(10), segA}, [3]any{wire.ArtifactConsumerOffsets, uint64(7), offsets}); err == nil || taken != 0 {
		t.Fatalf("no room: %v after %d chunks", err, taken)
	}

	// Without a Stage the same segments stay in memory and verify alike,
	// and a gap between segments fails.
	s, _, err = pullPartition(t, nil, 100,
		[3]any{wire.ArtifactSegmentLog, uint64(10), segA}, [3]any{wire.ArtifactSegmentLog, uint64(16), stampedBatch(t, 16, 3)},
		[3]any{wire.ArtifactConsumerOffsets, uint64(7), offsets})
	if err != nil || !bytes.Equal(s.Artifacts[0], segA) {
		t.Fatalf("in memory: %v", err)
	}
	if _, err := s.VerifyPartition(); err == nil {
		t.Fatal("segments with a gap verified")
	}
}

// An offer's artifact read from a range (AddSection, a partition's batch
// file) is served chunk by chunk as one held in memory is; a range that
// cannot be read fails with the read's error (the server refuses the
// offer), one outside the offer with ErrChunkOutside.
func TestOfferServesSectionsChunkByChunk(t *testing.T) {
	seg := append(stampedBatch(t, 0, 3), stampedBatch(t, 3, 5)...)
	offsets := wire.ConsumerOffsetsArtifact{NextOffset: 8}.AppendTo(nil)
	o := &Offer{CommitOp: 7, CommitMax: 7}
	o.AddSection(wire.ArtifactSegmentLog, 0, io.NewSectionReader(bytes.NewReader(seg), 0, int64(len(seg))), wire.ArtifactChecksum(seg))
	o.Add(wire.ArtifactConsumerOffsets, 7, offsets)
	s := NewTransferSession(wire.U128{}, 2, 5, 0, true, wire.HeaderSize+100, wire.U128{Lo: 9})
	chunks, err := pullOffer(t, s, o, 100)
	if err != nil || !bytes.Equal(s.Artifacts[0], seg) || chunks != (len(seg)+99)/100+1 {
		t.Fatalf("%v: %d of %d bytes in %d chunks", err, len(s.Artifacts[0]), len(seg), chunks)
	}
	if got, err := s.VerifyPartition(); err != nil || got.NextOffset != 8 {
		t.Fatalf("verify: %v", err)
	}
	short := &Offer{}
	short.AddSection(wire.ArtifactSegmentLog, 0, io.NewSectionReader(bytes.NewReader(seg[:10]), 0, int64(len(seg))), 0)
	if _, _, _, err := (Server{Group: 5}).Chunk(short, wire.RequestStateChunkHeader{Len: 100, Offset: 50}, 100); err == nil || errors.Is(err, ErrChunkOutside) {
		t.Fatalf("a chunk past what the range could read: %v", err)
	}
	if _, _, _, err := (Server{Group: 5}).Chunk(short, wire.RequestStateChunkHeader{Len: 100, Artifact: 1}, 100); !errors.Is(err, ErrChunkOutside) {
		t.Fatalf("a chunk of an artifact the offer lacks: %v", err)
	}
}

// A refusal of the session's nonce after its offer ends the session: the
// peer dropped the offer, and no chunk would come (before this, the
// receiver stalled through every retry); a duplicate offer is ignored.
func TestARefusalAfterTheOfferEndsTheSession(t *testing.T) {
	o := &Offer{CommitOp: 7, CommitMax: 7}
	o.Add(wire.ArtifactConsumerOffsets, 7, wire.ConsumerOffsetsArtifact{NextOffset: 8}.AppendTo(nil))
	s := NewTransferSession(wire.U128{}, 2, 5, 0, true, wire.HeaderSize+4, wire.U128{Lo: 9})
	sv := Server{Group: 5, CommitMax: 7}
	head, body := sv.Target(s.Nonce, o, false)
	offer := append(head, body...)
	if next, err := s.OnTarget(offer); err != nil || next == nil {
		t.Fatalf("the offer: %v, %v", next, err)
	}
	if next, err := s.OnTarget(offer); err != nil || next != nil {
		t.Fatalf("a duplicate offer: %v, %v", next, err)
	}
	other, _ := sv.Target(wire.U128{Lo: 10}, nil, false)
	if _, err := s.OnTarget(other); err != nil {
		t.Fatalf("another session's refusal: %v", err)
	}
	refusal, _ := sv.Target(s.Nonce, nil, false)
	if _, err := s.OnTarget(refusal); !errors.Is(err, ErrTransferRefused) {
		t.Fatalf("a refusal after the offer: %v", err)
	}
}

// 7.7 rule 6: a session that ends without an install leaves the segments
// it staged whole (Completed); the group's next session takes an entry
// of its offer that names the same frontier, length and checksum from
// the stage instead of fetching it, and fetches one that differs.
func TestALaterSessionReusesTheSegmentsStagedWhole(t *testing.T) {
	segA := append(stampedBatch(t, 10, 3), stampedBatch(t, 13, 2)...)
	segB := stampedBatch(t, 15, 4)
	offsets := wire.ConsumerOffsetsArtifact{NextOffset: 19}.AppendTo(nil)
	artifacts := func(a []byte) [][3]any {
		return [][3]any{{wire.ArtifactSegmentLog, uint64(10), a}, {wire.ArtifactSegmentLog, uint64(15), segB},
			{wire.ArtifactConsumerOffsets, uint64(7), offsets}}
	}
	first := &memoryStage{segments: map[int][]byte{}, sealed: map[int]bool{}, full: map[int]bool{1: true}}
	s1, _, err := pullPartition(t, first, 100, artifacts(segA)...)
	if err == nil {
		t.Fatal("a session whose second segment could not be staged went on")
	}
	done := s1.Completed()
	if len(done) != 1 || done[0].Frontier != 10 || done[0].Len != uint64(len(segA)) || done[0].End != 15 || len(done[0].Batches) != 2 {
		t.Fatalf("completed %+v, want segment 10 (5 records, two batches) alone", done)
	}

	next := func(reuse []StagedSegment, a []byte) (*TransferSession, *memoryStage, int) {
		stage := &memoryStage{segments: map[int][]byte{}, sealed: map[int]bool{}}
		s := NewTransferSession(wire.U128{}, 2, 5, 0, true, wire.HeaderSize+100, wire.U128{Lo: 10})
		s.Stage, s.Reusable = stage, reuse
		o := &Offer{CommitOp: 7, CommitMax: 7}
		for _, x := range artifacts(a) {
			o.Add(x[0].(wire.ArtifactKind), x[1].(uint64), x[2].([]byte))
		}
		taken, err := pullOffer(t, s, o, 100)
		if err != nil || !s.Complete() {
			t.Fatalf("the next session: %v", err)
		}
		if _, err := s.VerifyPartition(); err != nil {
			t.Fatalf("the next session verifies: %v", err)
		}
		return s, stage, taken
	}
	s2, stage, taken := next(done, segA)
	if want := (len(segB)+99)/100 + 1; taken != want || len(stage.segments[0]) != 0 || !bytes.Equal(stage.segments[1], segB) {
		t.Fatalf("reusing segment 10: %d chunks (want %d), staged %d and %d bytes", taken, want, len(stage.segments[0]), len(stage.segments[1]))
	}
	if !slices.Equal(stage.kept, []uint64{10}) || stage.reserved != uint64(len(segB)) {
		t.Fatalf("kept %v, reserved %d; want segment 10 kept and segment 15's %d bytes reserved", stage.kept, stage.reserved, len(segB))
	}
	if got := s2.Batches(); len(got) != 3 || got[0].BaseOffset != 10 || got[1].BaseOffset != 13 || got[2].BaseOffset != 15 {
		t.Fatalf("records %+v, want 10, 13, 15", got)
	}

	other := bytes.Clone(segA)
	other[len(other)-1] ^= 0xff // the same records, other bytes: another checksum
	_, stage, taken = next(done, other)
	if len(stage.kept) != 0 || !bytes.Equal(stage.segments[0], other) || taken != (len(other)+99)/100+(len(segB)+99)/100+1 {
		t.Fatalf("a segment with another checksum: kept %v, fetched %d bytes in %d chunks", stage.kept, len(stage.segments[0]), taken)
	}
}

// 7.7 rule 5: a transient refusal of a partition request (an offer built
// in rounds, the served bound full) re-arms after a fixed delay: the
// session stays armed and its stall retry asks again a full interval
// later, so the offer built meanwhile is taken; refused more than 5
// times in a row it ends as stalled. A permanent refusal, and any
// refusal of a metadata session (7.6 step 3), end it at once.
func TestATransientRefusalOfAPartitionRequestIsAskedAgain(t *testing.T) {
	const retry = 4
	sv := Server{Group: 5, CommitMax: 7}
	s := NewTransferSession(wire.U128{}, 2, 5, 0, true, wire.HeaderSize+4, wire.U128{Lo: 9})
	refusal := func(transient bool) []byte { head, _ := sv.Target(s.Nonce, nil, transient); return head }
	if next, err := s.OnTarget(refusal(true)); err != nil || next != nil || s.RefusedTransiently != 1 {
		t.Fatalf("a transient refusal: %v, %v, %d counted", next, err, s.RefusedTransiently)
	}
	for i := 1; i < retry; i++ {
		if next, err := s.Tick(retry); err != nil || next != nil {
			t.Fatalf("tick %d after the refusal: %v, %v", i, next, err)
		}
	}
	next, err := s.Tick(retry)
	if err != nil || next == nil || wire.HeaderOf(next.Head).Command() != wire.CmdRequestStateTransfer {
		t.Fatalf("the request asked again a full interval after the refusal: %v, %v", next, err)
	}
	o := &Offer{CommitOp: 7, CommitMax: 7}
	o.Add(wire.ArtifactConsumerOffsets, 7, wire.ConsumerOffsetsArtifact{NextOffset: 8}.AppendTo(nil))
	head, body := sv.Target(s.Nonce, o, false)
	if next, err := s.OnTarget(append(head, body...)); err != nil || next == nil {
		t.Fatalf("the offer after the refusal: %v, %v", next, err)
	}

	s = NewTransferSession(wire.U128{}, 2, 5, 0, true, wire.HeaderSize+4, wire.U128{Lo: 10})
	stalled := false
	for refused := 0; refused < 10 && !stalled; refused++ {
		if _, err := s.OnTarget(refusal(true)); err != nil {
			t.Fatalf("transient refusal %d: %v", refused, err)
		}
		for range retry {
			if _, err := s.Tick(retry); errors.Is(err, ErrTransferStalled) {
				if refused != transferMaxRetries {
					t.Fatalf("stalled after %d transient refusals, want %d", refused+1, transferMaxRetries+1)
				}
				stalled = true
			}
		}
	}
	if !stalled {
		t.Fatal("a peer that refuses transiently for ever never ended the session")
	}

	s = NewTransferSession(wire.U128{}, 2, 5, 0, true, wire.HeaderSize+4, wire.U128{Lo: 11})
	if _, err := s.OnTarget(refusal(false)); !errors.Is(err, ErrTransferRefused) {
		t.Fatalf("a permanent refusal: %v", err)
	}
	s = NewTransferSession(wire.U128{}, 2, 5, 0, false, wire.HeaderSize+4, wire.U128{Lo: 12})
	if _, err := s.OnTarget(refusal(true)); !errors.Is(err, ErrTransferRefused) {
		t.Fatalf("a transient refusal of a metadata session: %v", err)
	}
}
