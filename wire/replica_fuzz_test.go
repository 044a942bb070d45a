package wire

import (
	"encoding/binary"
	"reflect"
	"testing"

	"github.com/zeebo/xxh3"
)

// replicaRoundTrip decodes h with decode; a header that decodes must
// re-encode to a header that decodes to the same value.
func replicaRoundTrip[T comparable](t *testing.T, name string, h *Header, decode func(*Header) (T, error), encode func(T, *Header)) {
	t.Helper()
	v, err := decode(h)
	if err != nil {
		return
	}
	var again Header
	encode(v, &again)
	v2, err := decode(&again)
	if err != nil || v2 != v {
		t.Fatalf("%s round trip: %+v\nvs %+v (%v)", name, v, v2, err)
	}
}

// replicaFuzzSeeds are valid frames of every replica view.
func replicaFuzzSeeds() [][]byte {
	cluster := ClusterID("iggy-cluster")
	nonce := U128{Lo: 0x8899aabbccddeeff, Hi: 0x0011223344556677}
	client := U128{Lo: 0xfedcba9876543210, Hi: 0x0123456789abcdef}
	var out [][]byte
	add := func(enc func(h *Header)) {
		var h Header
		enc(&h)
		out = append(out, append([]byte(nil), h[:]...))
	}
	add((&StartViewChangeHeader{Cluster: cluster, View: 4, Replica: 2, Group: 7}).Encode)
	add((&StartViewHeader{Cluster: cluster, Size: 256, View: 5, Op: 9, Commit: 7, Group: MetadataGroup}).Encode)
	add((&RequestStartViewHeader{Cluster: cluster, View: 6, Group: 1, Incarnation: nonce}).Encode)
	add((&RequestPreparesHeader{Cluster: cluster, Nonce: nonce, FromOp: 5, ToOp: 9, Group: MetadataGroup}).Encode)
	add((&RepairRangeReplyHeader{Command: CmdRangeEvicted, Cluster: cluster, Nonce: nonce, Op: 6, Group: 3}).Encode)
	add((&RequestStateTransferHeader{Cluster: cluster, Nonce: nonce, Group: MetadataGroup}).Encode)
	add((&StateTransferTargetHeader{Cluster: cluster, Size: 256, Nonce: nonce, UnavailableTransient: true, CommitMax: 4}).Encode)
	add((&RequestStateChunkHeader{Cluster: cluster, Nonce: nonce, Len: 1 << 18, Artifact: 1}).Encode)
	add((&StateChunkHeader{Cluster: cluster, Size: 256, Nonce: nonce, Offset: 9}).Encode)
	add((&ForwardRegisterHeader{Cluster: cluster, Client: client, Nonce: nonce, UserID: 1}).Encode)
	add((&ForwardRegisterResultHeader{Cluster: cluster, Client: client, Nonce: nonce, Epoch: 3, Watermark: 1}).Encode)
	add((&ForwardLogoutHeader{Cluster: cluster, Client: client, Nonce: nonce, Session: 3, Request: 1}).Encode)
	add((&ForwardLogoutResultHeader{Cluster: cluster, Client: client, Nonce: nonce, Outcome: ForwardLogoutCanceled}).Encode)
	add((&RequestHeader{Cluster: cluster, Size: 256, Client: client, Request: 1, Session: 2, Operation: OpCreateStream, Group: MetadataGroup}).Encode)
	add((&HelloHeader{Cluster: cluster, Replica: 1, Nonce: [32]byte{1}}).Encode)
	add((&ChallengeHeader{Cluster: cluster, Nonce: [32]byte{2}, MAC: [32]byte{3}}).Encode)
	add((&FinishHeader{Cluster: cluster, MAC: [32]byte{4}}).Encode)
	// A DoViewChange with a blank and a journaled prepare (6.5.2).
	var prep Header
	(&PrepareHeader{ChecksumBody: BodySeal(nil), Cluster: cluster, Size: 256, View: 3, Command: CmdPrepare,
		Client: client, Op: 1, Timestamp: 1_700_000_000_000_000, Operation: OpRegister, Group: MetadataGroup, UserID: 1}).Encode(&prep)
	prep.SetChecksum(PrepareIdentity(&prep))
	s := BuildSuffix(SuffixSource{Head: 2, Journal: func(op uint64) (*Header, bool) { return &prep, op == 1 }})
	out = append(out, AppendDoViewChange(nil, DoViewChangeHeader{Cluster: cluster, View: 4, Op: s.Top, Group: MetadataGroup,
		LogView: 3, NackBitset: s.Nack, PresentBitset: s.Present}, s.Body))
	out = append(out, AppendStartView(nil, StartViewHeader{Cluster: cluster, View: 4, Op: s.Top, Group: MetadataGroup}, s.Body))
	return out
}

// FuzzReplicaViews types arbitrary frames of 256 bytes or more with every
// replica-plane decoder, as given and resealed (so the validators behind
// the seal are reached): no decoder may panic, and whatever decodes must
// re-encode to a frame that decodes to the same value.
func FuzzReplicaViews(f *testing.F) {
	for _, s := range replicaFuzzSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < HeaderSize {
			return
		}
		raw := *HeaderOf(b)
		sealed := raw
		sealed.Seal()
		for _, h := range []*Header{&raw, &sealed} {
			replicaViewsRoundTrip(t, h)
			_, _ = GroupOf(h)
			_ = ValidReplicaCommand(h.Command())
		}
		// Whole DoViewChange/StartView frames: as given, then with size,
		// body seal and frame seal made consistent.
		fixed := append([]byte(nil), b...)
		fh := HeaderOf(fixed)
		fh.SetSize(uint32(len(fixed)))
		fh.SetChecksumBody(SuffixBodySeal(fixed[HeaderSize:]))
		fh.Seal()
		for _, frame := range [][]byte{b, fixed} {
			// 2.4 rule 2 ignores checksum_body on an empty body, so only
			// a non-empty body's seal survives re-encoding.
			if d, es, err := DecodeDoViewChange(frame); err == nil {
				again := AppendDoViewChange(nil, d, AppendSuffix(nil, es))
				d2, es2, err := DecodeDoViewChange(again)
				if len(es) == 0 {
					d.ChecksumBody = U128{}
				}
				if err != nil || d2 != d || !reflect.DeepEqual(es2, es) {
					t.Fatalf("DoViewChange frame round trip: %+v vs %+v (%v)", d, d2, err)
				}
			}
			if s, es, err := DecodeStartView(frame); err == nil {
				again := AppendStartView(nil, s, AppendSuffix(nil, es))
				s2, es2, err := DecodeStartView(again)
				if len(es) == 0 {
					s.ChecksumBody = U128{}
				}
				if err != nil || s2 != s || !reflect.DeepEqual(es2, es) {
					t.Fatalf("StartView frame round trip: %+v vs %+v (%v)", s, s2, err)
				}
			}
		}
	})
}

func replicaViewsRoundTrip(t *testing.T, h *Header) {
	replicaRoundTrip(t, "StartViewChange", h, DecodeStartViewChangeHeader, func(v StartViewChangeHeader, h *Header) { v.Encode(h) })
	replicaRoundTrip(t, "DoViewChange", h, DecodeDoViewChangeHeader, func(v DoViewChangeHeader, h *Header) { v.Encode(h) })
	replicaRoundTrip(t, "StartView", h, DecodeStartViewHeader, func(v StartViewHeader, h *Header) { v.Encode(h) })
	replicaRoundTrip(t, "RequestStartView", h, DecodeRequestStartViewHeader, func(v RequestStartViewHeader, h *Header) { v.Encode(h) })
	replicaRoundTrip(t, "RequestPrepares", h, DecodeRequestPreparesHeader, func(v RequestPreparesHeader, h *Header) { v.Encode(h) })
	replicaRoundTrip(t, "RepairRangeReply", h, DecodeRepairRangeReplyHeader, func(v RepairRangeReplyHeader, h *Header) { v.Encode(h) })
	replicaRoundTrip(t, "RequestStateTransfer", h, DecodeRequestStateTransferHeader, func(v RequestStateTransferHeader, h *Header) { v.Encode(h) })
	replicaRoundTrip(t, "StateTransferTarget", h, DecodeStateTransferTargetHeader, func(v StateTransferTargetHeader, h *Header) { v.Encode(h) })
	replicaRoundTrip(t, "RequestStateChunk", h, DecodeRequestStateChunkHeader, func(v RequestStateChunkHeader, h *Header) { v.Encode(h) })
	replicaRoundTrip(t, "StateChunk", h, DecodeStateChunkHeader, func(v StateChunkHeader, h *Header) { v.Encode(h) })
	replicaRoundTrip(t, "ForwardRegister", h, DecodeForwardRegisterHeader, func(v ForwardRegisterHeader, h *Header) { v.Encode(h) })
	replicaRoundTrip(t, "ForwardRegisterResult", h, DecodeForwardRegisterResultHeader, func(v ForwardRegisterResultHeader, h *Header) { v.Encode(h) })
	replicaRoundTrip(t, "ForwardLogout", h, DecodeForwardLogoutHeader, func(v ForwardLogoutHeader, h *Header) { v.Encode(h) })
	replicaRoundTrip(t, "ForwardLogoutResult", h, DecodeForwardLogoutResultHeader, func(v ForwardLogoutResultHeader, h *Header) { v.Encode(h) })
	replicaRoundTrip(t, "RoutedRequest", h, DecodeRoutedRequest, func(v RequestHeader, h *Header) { v.Encode(h) })
	replicaRoundTrip(t, "Hello", h, DecodeHelloHeader, func(v HelloHeader, h *Header) { v.Encode(h) })
	replicaRoundTrip(t, "Challenge", h, DecodeChallengeHeader, func(v ChallengeHeader, h *Header) { v.Encode(h) })
	replicaRoundTrip(t, "Finish", h, DecodeFinishHeader, func(v FinishHeader, h *Header) { v.Encode(h) })
	replicaRoundTrip(t, "PrepareOk", h, DecodePrepareOkHeader, func(v PrepareOkHeader, h *Header) { v.Encode(h) })
	replicaRoundTrip(t, "Commit", h, DecodeCommitHeader, func(v CommitHeader, h *Header) { v.Encode(h) })
}

// FuzzReplicaSuffix decodes arbitrary suffix bodies (6.5.3), as given and
// with every entry's op, command and reserved regions forced into shape (so
// the timestamp and chain rules are reached): no panic, and an accepted
// suffix re-encodes to one that decodes equal.
func FuzzReplicaSuffix(f *testing.F) {
	for _, s := range replicaFuzzSeeds()[len(replicaFuzzSeeds())-2:] {
		h := HeaderOf(s)
		d := h.DoViewChange()
		f.Add(d.Op, d.NackBitset.Lo, d.NackBitset.Hi, d.PresentBitset.Lo, d.PresentBitset.Hi, s[HeaderSize:])
	}
	f.Fuzz(func(t *testing.T, op, nackLo, nackHi, presentLo, presentHi uint64, body []byte) {
		nack, present := U128{Lo: nackLo, Hi: nackHi}, U128{Lo: presentLo, Hi: presentHi}
		shaped := append([]byte(nil), body...)
		for i := 0; (i+1)*HeaderSize <= len(shaped); i++ {
			e := HeaderOf(shaped[i*HeaderSize:])
			e.SetCommand(CmdPrepare)
			clear(e[62:128])
			clear(e[228:256])
			e.putU64(176, op-uint64(i))
			if !Operation(e[208]).Defined() {
				e[208] = byte(OpCreateStream)
			}
		}
		for _, b := range [][]byte{body, shaped} {
			es, err := DecodeSuffix(op, b, nack, present)
			if err != nil {
				continue
			}
			n, p := SuffixBitsets(es)
			es2, err := DecodeSuffix(op, AppendSuffix(nil, es), n, p)
			if err != nil || !reflect.DeepEqual(es2, es) {
				t.Fatalf("suffix round trip: %v", err)
			}
		}
	})
}

// FuzzReplicaArtifacts decodes arbitrary bytes as an ISM1 manifest and an
// ICO1 consumer-offsets artifact, as given and with a correct trailer (so
// the checks behind it are reached): no panic, and what decodes re-encodes
// to bytes that decode equal.
func FuzzReplicaArtifacts(f *testing.F) {
	f.Add(StateManifest{}.AppendTo(nil))
	f.Add(StateManifest{Entries: []ManifestEntry{{Kind: ArtifactClientTable, Frontier: 5, Len: 3, Checksum: ArtifactChecksum([]byte("abc"))},
		{Kind: ArtifactSegmentLog, Frontier: 100, Len: 1 << 20, Checksum: 7}}}.AppendTo(nil))
	f.Add(ConsumerOffsetsArtifact{}.AppendTo(nil))
	f.Add(ConsumerOffsetsArtifact{PurgeGeneration: 2, NextOffset: 100, Consumers: []OffsetEntry{{1, 10}, {7, 99}},
		Groups: []OffsetEntry{{3, 50}}}.AppendTo(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		inputs := [][]byte{b}
		if len(b) >= 8 {
			fixed := append([]byte(nil), b...)
			binary.LittleEndian.PutUint64(fixed[len(fixed)-8:], xxh3.Hash(fixed[:len(fixed)-8]))
			inputs = append(inputs, fixed)
		}
		for _, in := range inputs {
			var m StateManifest
			if m.Decode(in) == nil {
				var m2 StateManifest
				if err := m2.Decode(m.AppendTo(nil)); err != nil || !reflect.DeepEqual(m2, m) {
					t.Fatalf("manifest round trip: %+v vs %+v (%v)", m, m2, err)
				}
			}
			var a ConsumerOffsetsArtifact
			if a.Decode(in) == nil {
				var a2 ConsumerOffsetsArtifact
				if err := a2.Decode(a.AppendTo(nil)); err != nil || !reflect.DeepEqual(a2, a) {
					t.Fatalf("ICO1 round trip: %+v vs %+v (%v)", a, a2, err)
				}
			}
		}
	})
}
