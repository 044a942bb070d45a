package vsr

import (
	"bytes"
	"errors"
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
		if s.OnChunk(chunkFrame(s, w.artifact, w.offset+1, []byte("x"))) != nil {
			t.Fatal("a chunk at the wrong offset was taken")
		}
		data := all[w.artifact][w.offset : w.offset+uint64(w.len)]
		next = s.OnChunk(chunkFrame(s, w.artifact, w.offset, data))
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
			h, b, _, ok := sv.Chunk(o, q, 1<<20)
			if !ok {
				return s, errors.New("chunk out of range")
			}
			next = s.OnChunk(append(h, b...))
		}
		return s, err
	}
	s, err := run([2]any{wire.ArtifactConsumerOffsets, offsets}, [2]any{wire.ArtifactGroupRoster, EncodeGroupRoster(ro, 12)})
	if err != nil || !s.Complete() {
		t.Fatalf("offer with a roster: complete %v, %v", s.Complete(), err)
	}
	if _, _, err := s.VerifyPartition(); err != nil {
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
