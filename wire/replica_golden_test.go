package wire_test

// Replica-plane golden vectors (replica-plane.md 1.4, 3, 6.5, 7.8,
// Appendix A). Frames are hand-written from the 1.4 offset tables in
// testdata/golden/replica_*.hex; the spec lists no seal for them, so their
// seals were computed with the C reference libxxhash 0.8.1 (see each file),
// never with this package. The handshake values are Appendix A2-A5 and the
// artifact encodings A8-A10, copied verbatim.

import (
	"errors"
	"reflect"
	"testing"

	"iggynode/wire"
)

const repTS = 1_700_000_000_000_000 // the A7 timestamp

var (
	repPartition527 = uint64(0x5_0020_0007) // (5,2,7), 4.1 example
	repPartition100 = uint64(0x1_0000_0000) // (1,0,0)
	repIncarnation  = wire.U128{Lo: 0x1122334455667788, Hi: 0x99aabbccddeeff00}
	repFwdNonce5    = wire.U128{Lo: 5, Hi: 1} // 8.2: replica 1 << 64 | counter
	repFwdNonce6    = wire.U128{Lo: 6, Hi: 1}
	repA7Identity   = wire.Widen(0x026205ea9f8b4eb8)
)

// repGolden checks one view against its vector: decode gives want, and
// encoding want gives the vector's header bytes (seal included).
func repGolden[T comparable](t *testing.T, file string, want T, decode func(*wire.Header) (T, error), encode func(T, *wire.Header)) []byte {
	t.Helper()
	vec := loadGolden(t, file)
	h := header(t, vec[:wire.HeaderSize])
	got, err := decode(h)
	if err != nil {
		t.Fatalf("%s: decode: %v", file, err)
	}
	if got != want {
		t.Errorf("%s: decoded %+v\nwant    %+v", file, got, want)
	}
	var enc wire.Header
	encode(want, &enc)
	assertBytes(t, file+" Encode", enc[:], vec[:wire.HeaderSize])
	return vec
}

func TestReplicaGolden_1_4_Views(t *testing.T) {
	meta := wire.MetadataGroup
	t.Run("StartViewChange", func(t *testing.T) {
		repGolden(t, "replica_start_view_change.hex",
			wire.StartViewChangeHeader{Cluster: clusterA2, View: 4, Replica: 2, Group: repPartition527},
			wire.DecodeStartViewChangeHeader, func(v wire.StartViewChangeHeader, h *wire.Header) { v.Encode(h) })
	})
	t.Run("StartView", func(t *testing.T) {
		repGolden(t, "replica_start_view.hex",
			wire.StartViewHeader{Cluster: clusterA2, Size: 256, View: 5, Op: 9, Commit: 7, Group: meta, Incarnation: repIncarnation},
			wire.DecodeStartViewHeader, func(v wire.StartViewHeader, h *wire.Header) { v.Encode(h) })
	})
	t.Run("RequestStartView", func(t *testing.T) {
		repGolden(t, "replica_request_start_view.hex",
			wire.RequestStartViewHeader{Cluster: clusterA2, View: 6, Replica: 3, Group: repPartition100, Incarnation: repIncarnation},
			wire.DecodeRequestStartViewHeader, func(v wire.RequestStartViewHeader, h *wire.Header) { v.Encode(h) })
	})
	t.Run("RequestPrepares", func(t *testing.T) {
		repGolden(t, "replica_request_prepares.hex",
			wire.RequestPreparesHeader{Cluster: clusterA2, Replica: 2, Nonce: c2, FromOp: 5, ToOp: 9, Group: meta},
			wire.DecodeRequestPreparesHeader, func(v wire.RequestPreparesHeader, h *wire.Header) { v.Encode(h) })
	})
	t.Run("RepairDone", func(t *testing.T) {
		repGolden(t, "replica_repair_done.hex",
			wire.RepairRangeReplyHeader{Command: wire.CmdRepairDone, Cluster: clusterA2, Nonce: c2, Op: 9, Group: meta},
			wire.DecodeRepairRangeReplyHeader, func(v wire.RepairRangeReplyHeader, h *wire.Header) { v.Encode(h) })
	})
	t.Run("RangeEvicted", func(t *testing.T) {
		repGolden(t, "replica_range_evicted.hex",
			wire.RepairRangeReplyHeader{Command: wire.CmdRangeEvicted, Cluster: clusterA2, Nonce: c2, Op: 6, Group: meta},
			wire.DecodeRepairRangeReplyHeader, func(v wire.RepairRangeReplyHeader, h *wire.Header) { v.Encode(h) })
	})
	t.Run("RequestStateTransfer", func(t *testing.T) {
		repGolden(t, "replica_request_state_transfer.hex",
			wire.RequestStateTransferHeader{Cluster: clusterA2, Replica: 1, Nonce: c2, Group: repPartition527},
			wire.DecodeRequestStateTransferHeader, func(v wire.RequestStateTransferHeader, h *wire.Header) { v.Encode(h) })
	})
	t.Run("StateTransferTarget", func(t *testing.T) {
		vec := repGolden(t, "replica_state_transfer_target.hex",
			wire.StateTransferTargetHeader{Cluster: clusterA2, Size: 298, View: 7, Nonce: c2, CommitOp: 5, Group: meta,
				Available: true, CommitMax: 6},
			wire.DecodeStateTransferTargetHeader, func(v wire.StateTransferTargetHeader, h *wire.Header) { v.Encode(h) })
		var m wire.StateManifest
		if err := m.Decode(vec[wire.HeaderSize:]); err != nil {
			t.Fatalf("offer body: %v", err)
		}
		want := []wire.ManifestEntry{{Kind: wire.ArtifactClientTable, Frontier: 5, Len: 3, Checksum: 0x78af5f94892f3950}}
		if !reflect.DeepEqual(m.Entries, want) {
			t.Errorf("offer manifest %+v, want %+v", m.Entries, want)
		}
	})
	t.Run("RequestStateChunk", func(t *testing.T) {
		repGolden(t, "replica_request_state_chunk.hex",
			wire.RequestStateChunkHeader{Cluster: clusterA2, Replica: 1, Nonce: c2, Offset: 256 << 10, Group: meta, Len: 256 << 10, Artifact: 1},
			wire.DecodeRequestStateChunkHeader, func(v wire.RequestStateChunkHeader, h *wire.Header) { v.Encode(h) })
	})
	t.Run("StateChunk", func(t *testing.T) {
		vec := repGolden(t, "replica_state_chunk.hex",
			wire.StateChunkHeader{Cluster: clusterA2, Size: 259, Nonce: c2, Group: meta, Artifact: 1},
			wire.DecodeStateChunkHeader, func(v wire.StateChunkHeader, h *wire.Header) { v.Encode(h) })
		// 2.6: the artifact checksum of "abc" is A9's entry checksum.
		if got := wire.ArtifactChecksum(vec[wire.HeaderSize:]); got != 0x78af5f94892f3950 {
			t.Errorf("ArtifactChecksum(abc) = %#x", got)
		}
	})
	t.Run("ForwardRegister", func(t *testing.T) {
		repGolden(t, "replica_forward_register.hex",
			wire.ForwardRegisterHeader{Cluster: clusterA2, View: 2, Replica: 1, Client: c1, Nonce: repFwdNonce5, UserID: 7},
			wire.DecodeForwardRegisterHeader, func(v wire.ForwardRegisterHeader, h *wire.Header) { v.Encode(h) })
	})
	t.Run("ForwardRegisterResult", func(t *testing.T) {
		repGolden(t, "replica_forward_register_result.hex",
			wire.ForwardRegisterResultHeader{Cluster: clusterA2, View: 2, Nonce: repFwdNonce5, Client: c1, Epoch: 12, Watermark: 3,
				Outcome: wire.ForwardRegisterOk},
			wire.DecodeForwardRegisterResultHeader, func(v wire.ForwardRegisterResultHeader, h *wire.Header) { v.Encode(h) })
	})
	t.Run("ForwardLogout", func(t *testing.T) {
		repGolden(t, "replica_forward_logout.hex",
			wire.ForwardLogoutHeader{Cluster: clusterA2, View: 2, Replica: 1, Client: c1, Nonce: repFwdNonce6, Session: 12, Request: ^uint64(0)},
			wire.DecodeForwardLogoutHeader, func(v wire.ForwardLogoutHeader, h *wire.Header) { v.Encode(h) })
	})
	t.Run("ForwardLogoutResult", func(t *testing.T) {
		repGolden(t, "replica_forward_logout_result.hex",
			wire.ForwardLogoutResultHeader{Cluster: clusterA2, View: 2, Nonce: repFwdNonce6, Client: c1, Outcome: wire.ForwardLogoutInProgress},
			wire.DecodeForwardLogoutResultHeader, func(v wire.ForwardLogoutResultHeader, h *wire.Header) { v.Encode(h) })
	})
	t.Run("RoutedRequest", func(t *testing.T) {
		repGolden(t, "replica_routed_request.hex",
			wire.RequestHeader{Cluster: clusterA2, Size: 256, Replica: 1, Client: c1, Request: 8, Operation: wire.OpCreateStream,
				Session: 42, Group: meta},
			wire.DecodeRoutedRequest, func(v wire.RequestHeader, h *wire.Header) { v.Encode(h) })
	})
	t.Run("DoViewChangeHeader", func(t *testing.T) {
		repGolden(t, "replica_do_view_change_2.hex",
			wire.DoViewChangeHeader{ChecksumBody: wire.Widen(0x9fae4164aa2423af), Cluster: clusterA2, Size: 768, View: 4, Replica: 1,
				Op: 2, Group: meta, LogView: 3, NackBitset: wire.U128{Lo: 1}, PresentBitset: wire.U128{Lo: 2}},
			wire.DecodeDoViewChangeHeader, func(v wire.DoViewChangeHeader, h *wire.Header) { v.Encode(h) })
	})
}

// ---------------------------------------------------------------------------
// Handshake (3.3 - 3.6, Appendix A2-A5)

func repNonce(b byte) (n [32]byte) {
	for i := range n {
		n[i] = b
	}
	return n
}

func repArr32(t *testing.T, s string) (a [32]byte) {
	t.Helper()
	b := hx(t, s)
	if len(b) != 32 {
		t.Fatalf("vector is %d bytes", len(b))
	}
	copy(a[:], b)
	return a
}

func TestReplicaGolden_A2_ClusterID(t *testing.T) {
	got := wire.ClusterID("iggy-cluster")
	assertBytes(t, "ClusterID(iggy-cluster)", wire.AppendU128(nil, got), hx(t, "21bb05c88727bab88d0ec27be8a72d46"))
	if got != clusterA2 {
		t.Errorf("ClusterID = %v, want %v", got, clusterA2)
	}
	if wire.ClusterID("iggy-cluster2") == got {
		t.Error("a different name gave the same id")
	}
}

func TestReplicaGolden_A3_A5_HandshakeMAC(t *testing.T) {
	key := wire.MACKey([]byte("0123456789abcdef0123456789abcdef"))
	wantKey := repArr32(t, "39ec545024b097198cbf082b239525e97c0da3a60f3a18fd29f7d169de6a54be")
	if key != wantKey {
		t.Fatalf("A3 MACKey = %x, want %x", key, wantKey)
	}
	nd, na, zero := repNonce(0x11), repNonce(0x22), [32]byte{}
	a4 := repArr32(t, "a883c0ee40ebada280ceb697aba6e4555ccf902d9f033f2691ab08708cb2cd08")
	a5 := repArr32(t, "044b521980f2163017c3fa3730ab0587838513d52fe697b0c6f947a3e8d33b48")
	if got := wire.HandshakeMAC(key, clusterA2, 0, 1, nd, na, false, zero, wire.MACByDialer); got != a4 {
		t.Errorf("A4 mac_d = %x, want %x", got, a4)
	}
	if got := wire.HandshakeMAC(key, clusterA2, 0, 1, nd, na, false, zero, wire.MACByAcceptor); got != a5 {
		t.Errorf("A5 mac_a = %x, want %x", got, a5)
	}
	// Every input field is bound: changing any one changes the MAC.
	variants := map[string][32]byte{
		"cluster":   wire.HandshakeMAC(key, wire.U128{Lo: 1}, 0, 1, nd, na, false, zero, 1),
		"dialer":    wire.HandshakeMAC(key, clusterA2, 2, 1, nd, na, false, zero, 1),
		"acceptor":  wire.HandshakeMAC(key, clusterA2, 0, 2, nd, na, false, zero, 1),
		"nonce_d":   wire.HandshakeMAC(key, clusterA2, 0, 1, na, na, false, zero, 1),
		"nonce_a":   wire.HandshakeMAC(key, clusterA2, 0, 1, nd, nd, false, zero, 1),
		"mode":      wire.HandshakeMAC(key, clusterA2, 0, 1, nd, na, true, zero, 1),
		"exporter":  wire.HandshakeMAC(key, clusterA2, 0, 1, nd, na, false, nd, 1),
		"key (K')":  wire.HandshakeMAC(wire.MACKey([]byte("another secret of at least 32 bytes")), clusterA2, 0, 1, nd, na, false, zero, 1),
		"direction": wire.HandshakeMAC(key, clusterA2, 0, 1, nd, na, false, zero, 2),
	}
	for name, mac := range variants {
		if mac == a4 {
			t.Errorf("MAC does not depend on %s", name)
		}
	}
	if !wire.MACEqual(a4, a4) || wire.MACEqual(a4, a5) {
		t.Error("MACEqual")
	}
	var oneBit = a4
	oneBit[31] ^= 1
	if wire.MACEqual(a4, oneBit) {
		t.Error("MACEqual ignores the last bit")
	}
}

func TestReplicaGolden_3_4_HandshakeFrames(t *testing.T) {
	key := wire.MACKey([]byte("0123456789abcdef0123456789abcdef"))
	var zero [32]byte
	hello := repGolden(t, "replica_hello.hex",
		wire.HelloHeader{Cluster: clusterA2, Nonce: repNonce(0x11)},
		wire.DecodeHelloHeader, func(v wire.HelloHeader, h *wire.Header) { v.Encode(h) })
	challenge := repGolden(t, "replica_challenge.hex",
		wire.ChallengeHeader{Cluster: clusterA2, Replica: 1, Nonce: repNonce(0x22),
			MAC: repArr32(t, "044b521980f2163017c3fa3730ab0587838513d52fe697b0c6f947a3e8d33b48"), Status: wire.HandshakeOk},
		wire.DecodeChallengeHeader, func(v wire.ChallengeHeader, h *wire.Header) { v.Encode(h) })
	finish := repGolden(t, "replica_finish.hex",
		wire.FinishHeader{Cluster: clusterA2, MAC: repArr32(t, "a883c0ee40ebada280ceb697aba6e4555ccf902d9f033f2691ab08708cb2cd08")},
		wire.DecodeFinishHeader, func(v wire.FinishHeader, h *wire.Header) { v.Encode(h) })

	// The exchange as 3.6 runs it, from the decoded frames alone.
	hl, _ := wire.DecodeHelloHeader(header(t, hello))
	ch, _ := wire.DecodeChallengeHeader(header(t, challenge))
	fi, _ := wire.DecodeFinishHeader(header(t, finish))
	macA := wire.HandshakeMAC(key, hl.Cluster, hl.Replica, ch.Replica, hl.Nonce, ch.Nonce, false, zero, wire.MACByAcceptor)
	if !wire.MACEqual(macA, ch.MAC) {
		t.Error("dialer: mac_a of the Challenge does not verify")
	}
	macD := wire.HandshakeMAC(key, hl.Cluster, hl.Replica, ch.Replica, hl.Nonce, ch.Nonce, false, zero, wire.MACByDialer)
	if !wire.MACEqual(macD, fi.MAC) {
		t.Error("acceptor: mac_d of the Finish does not verify")
	}

	// Decode rules: command and size only; any status byte decodes (a
	// dialer rejects all but 0, 3.4).
	for _, tc := range []struct {
		name   string
		vec    []byte
		mutate func(*wire.Header)
		decode func(*wire.Header) error
		field  string
	}{
		{"hello with command 15", hello, func(h *wire.Header) { h.SetCommand(wire.CmdReplicaChallenge) }, repErr(wire.DecodeHelloHeader), "command"},
		{"hello with a body", hello, func(h *wire.Header) { h.SetSize(257) }, repErr(wire.DecodeHelloHeader), "size"},
		{"challenge with command 16", challenge, func(h *wire.Header) { h.SetCommand(wire.CmdReplicaFinish) }, repErr(wire.DecodeChallengeHeader), "command"},
		{"challenge with a body", challenge, func(h *wire.Header) { h.SetSize(512) }, repErr(wire.DecodeChallengeHeader), "size"},
		{"challenge with unknown status 9", challenge, func(h *wire.Header) { h[192] = 9 }, repErr(wire.DecodeChallengeHeader), ""},
		{"finish with command 14", finish, func(h *wire.Header) { h.SetCommand(wire.CmdReplicaHello) }, repErr(wire.DecodeFinishHeader), "command"},
		{"finish with a body", finish, func(h *wire.Header) { h.SetSize(300) }, repErr(wire.DecodeFinishHeader), "size"},
	} {
		h := header(t, tc.vec)
		tc.mutate(h)
		repWantField(t, tc.name, tc.decode(h), tc.field)
	}
	if s := wire.HandshakeStatus(2); s.String() != "ClusterMismatch" {
		t.Errorf("status 2 = %v", s)
	}
}

// ---------------------------------------------------------------------------
// Validator rules (1.4.x), one failing row per rule, and the 1.5 order.

// repErr adapts a typed decoder to an error-only one.
func repErr[T any](decode func(*wire.Header) (T, error)) func(*wire.Header) error {
	return func(h *wire.Header) error { _, err := decode(h); return err }
}

// repWantField checks err is a *DecodeError on field ("" = no error).
func repWantField(t *testing.T, name string, err error, field string) {
	t.Helper()
	if field == "" {
		if err != nil {
			t.Errorf("%s: unexpected error %v", name, err)
		}
		return
	}
	var de *wire.DecodeError
	if !errors.As(err, &de) || !errors.Is(err, wire.ErrMalformed) {
		t.Errorf("%s: error %v, want a DecodeError on %q", name, err, field)
		return
	}
	if de.Field != field {
		t.Errorf("%s: failed on %q (%v), want %q", name, de.Field, err, field)
	}
}

type repRule struct {
	name   string
	mutate func(*wire.Header)
	field  string // "" = still valid
}

func repPut64(off int, v uint64) func(*wire.Header) {
	return func(h *wire.Header) { copy(h[off:], wire.AppendU64(nil, v)) }
}

func repPut32(off int, v uint32) func(*wire.Header) {
	return func(h *wire.Header) { copy(h[off:], wire.AppendU32(nil, v)) }
}

func repSetByte(off int, v byte) func(*wire.Header) { return func(h *wire.Header) { h[off] = v } }

func repZero(off, n int) func(*wire.Header) {
	return func(h *wire.Header) { clear(h[off : off+n]) }
}

func TestReplicaGolden_1_4_ValidatorRules(t *testing.T) {
	cases := []struct {
		file   string
		sealed bool
		decode func(*wire.Header) error
		rules  []repRule
	}{
		{"replica_commit_a6.hex", true, repErr(wire.DecodeCommitHeader), []repRule{ // 1.4.3
			{"size 512", func(h *wire.Header) { h.SetSize(512) }, "size"},
			{"reserved not validated", repSetByte(200, 1), ""},
		}},
		{"replica_start_view_change.hex", true, repErr(wire.DecodeStartViewChangeHeader), []repRule{ // 1.4.4
			{"release 1", func(h *wire.Header) { h.SetRelease(1) }, "release"},
			{"size not checked", func(h *wire.Header) { h.SetSize(300) }, ""},
			{"reserved not validated", repSetByte(200, 1), ""},
		}},
		{"replica_do_view_change_2.hex", true, repErr(wire.DecodeDoViewChangeHeader), []repRule{ // 1.4.5
			{"release 1", func(h *wire.Header) { h.SetRelease(1) }, "release"},
			{"log_view 5 > view 4", repPut32(152, 5), "log_view"},
			{"log_view == view", repPut32(152, 4), ""},
			{"commit 3 > op 2", repPut64(136, 3), "commit"},
			{"commit == op", repPut64(136, 2), ""},
			{"size 255", func(h *wire.Header) { h.SetSize(255) }, "size"},
			{"size 256+100", func(h *wire.Header) { h.SetSize(356) }, "size"},
			{"k = 129", func(h *wire.Header) { h.SetSize(256 + 129*256) }, "size"},
			{"k = 128, every bit allowed", func(h *wire.Header) {
				h.SetSize(256 + 128*256)
				copy(h[224:], wire.AppendU128(nil, wire.U128{Lo: ^uint64(0), Hi: 1 << 63}))
			}, ""},
			{"nack bit 2 with k = 2", repSetByte(224, 0b101), "nack_bitset"},
			{"nack bit 127 with k = 2", repSetByte(239, 0x80), "nack_bitset"},
			{"present bit 64 with k = 2", repSetByte(248, 1), "present_bitset"},
			{"no body, no bits", func(h *wire.Header) { h.SetSize(256); clear(h[224:256]) }, ""},
			{"no body, nack bit 0", func(h *wire.Header) { h.SetSize(256); clear(h[240:256]) }, "nack_bitset"},
		}},
		{"replica_start_view.hex", true, repErr(wire.DecodeStartViewHeader), []repRule{ // 1.4.6
			{"release 1", func(h *wire.Header) { h.SetRelease(1) }, "release"},
			{"commit 10 > op 9", repPut64(136, 10), "commit"},
			{"size 256+1", func(h *wire.Header) { h.SetSize(257) }, "size"},
			{"k = 129", func(h *wire.Header) { h.SetSize(256 + 129*256) }, "size"},
			{"k = 128", func(h *wire.Header) { h.SetSize(256 + 128*256) }, ""},
		}},
		{"replica_request_start_view.hex", true, repErr(wire.DecodeRequestStartViewHeader), []repRule{ // 1.4.7
			{"release 1", func(h *wire.Header) { h.SetRelease(1) }, "release"},
		}},
		{"replica_request_prepares.hex", true, repErr(wire.DecodeRequestPreparesHeader), []repRule{ // 1.4.8
			{"from_op 0", repPut64(144, 0), "from_op"},
			{"from_op 10 > to_op 9", repPut64(144, 10), "from_op"},
			{"from_op == to_op", repPut64(144, 9), ""},
		}},
		{"replica_repair_done.hex", true, repErr(wire.DecodeRepairRangeReplyHeader), []repRule{ // 1.4.9
			{"command 21 shares the type", func(h *wire.Header) { h.SetCommand(wire.CmdRangeEvicted) }, ""},
			{"command 19", func(h *wire.Header) { h.SetCommand(wire.CmdRepairPrepare) }, "command"},
		}},
		{"replica_request_state_transfer.hex", true, repErr(wire.DecodeRequestStateTransferHeader), []repRule{ // 1.4.10
			{"size 257", func(h *wire.Header) { h.SetSize(257) }, "size"},
		}},
		{"replica_state_transfer_target.hex", true, repErr(wire.DecodeStateTransferTargetHeader), []repRule{ // 1.4.11
			{"available 2", repSetByte(160, 2), "available"},
			{"unavailable_transient 2", repSetByte(161, 2), "unavailable_transient"},
			{"both 1", repSetByte(161, 1), "unavailable_transient"},
			{"refusal with a body", repSetByte(160, 0), "size"},
			{"refusal, size 256", func(h *wire.Header) { h[160] = 0; h.SetSize(256) }, ""},
			{"transient refusal, size 256", func(h *wire.Header) { h[160], h[161] = 0, 1; h.SetSize(256) }, ""},
		}},
		{"replica_request_state_chunk.hex", true, repErr(wire.DecodeRequestStateChunkHeader), []repRule{ // 1.4.12
			{"len 0", repPut32(160, 0), "len"},
			{"size 512", func(h *wire.Header) { h.SetSize(512) }, "size"},
		}},
		{"replica_state_chunk.hex", true, repErr(wire.DecodeStateChunkHeader), []repRule{ // 1.4.13
			{"size 255", func(h *wire.Header) { h.SetSize(255) }, "size"},
			{"size 256 (empty chunk decodes)", func(h *wire.Header) { h.SetSize(256) }, ""},
		}},
		{"replica_forward_register.hex", true, repErr(wire.DecodeForwardRegisterHeader), []repRule{ // 1.4.14, 1.4.18
			{"size 512", func(h *wire.Header) { h.SetSize(512) }, "size"},
			{"client 0", repZero(128, 16), "client"},
			{"nonce 0", repZero(144, 16), "nonce"},
			{"reserved byte 164", repSetByte(164, 1), "reserved"},
			{"reserved byte 255", repSetByte(255, 1), "reserved"},
			{"reserved_frame not validated", repSetByte(100, 1), ""},
		}},
		{"replica_forward_register_result.hex", true, repErr(wire.DecodeForwardRegisterResultHeader), []repRule{ // 1.4.15, 1.4.18
			{"size 512", func(h *wire.Header) { h.SetSize(512) }, "size"},
			{"client 0", repZero(144, 16), "client"},
			{"nonce 0", repZero(128, 16), "nonce"},
			{"reserved byte 176", repSetByte(176, 1), "reserved"},
			{"reserved byte 254", repSetByte(254, 1), "reserved"},
			{"outcome 7", repSetByte(255, 7), "outcome"},
			{"outcome 1 with epoch", repSetByte(255, 1), "epoch"},
			{"outcome 6 with only watermark", func(h *wire.Header) { h[255] = 6; clear(h[160:168]) }, "epoch"},
			{"outcome 5, epoch and watermark 0", func(h *wire.Header) { h[255] = 5; clear(h[160:176]) }, ""},
			{"reserved_frame not validated", repSetByte(62, 1), ""},
		}},
		{"replica_forward_logout.hex", true, repErr(wire.DecodeForwardLogoutHeader), []repRule{ // 1.4.16, 1.4.18
			{"size 512", func(h *wire.Header) { h.SetSize(512) }, "size"},
			{"client 0", repZero(128, 16), "client"},
			{"nonce 0", repZero(144, 16), "nonce"},
			{"reserved byte 176", repSetByte(176, 1), "reserved"},
			{"session 0", repPut64(160, 0), "session"},
			{"request 0", repPut64(168, 0), "request"},
		}},
		{"replica_forward_logout_result.hex", true, repErr(wire.DecodeForwardLogoutResultHeader), []repRule{ // 1.4.17, 1.4.18
			{"size 512", func(h *wire.Header) { h.SetSize(512) }, "size"},
			{"client 0", repZero(144, 16), "client"},
			{"nonce 0", repZero(128, 16), "nonce"},
			{"reserved byte 168", repSetByte(168, 1), "reserved"},
			{"outcome 5", repSetByte(255, 5), "outcome"},
			{"outcome 3 with commit", repPut64(160, 9), "commit"},
			{"outcome 0 with commit", func(h *wire.Header) { h[255] = 0; copy(h[160:], wire.AppendU64(nil, 9)) }, ""},
		}},
		{"replica_routed_request.hex", false, repErr(wire.DecodeRoutedRequest), []repRule{ // 1.4.19
			{"command 6", func(h *wire.Header) { h.SetCommand(wire.CmdPrepare) }, "command"},
			{"client 0", repZero(128, 16), "client"},
			{"operation 4 undefined", repSetByte(176, 4), "operation"},
			{"operation Reserved", repSetByte(176, 0), "operation"},
			{"register with request and session", repSetByte(176, 1), "request"},
			{"register with 0/0", func(h *wire.Header) { h[176] = 1; clear(h[168:176]); clear(h[184:192]) }, ""},
			{"non-replicated with 0/0", func(h *wire.Header) { h[176] = 2; clear(h[168:176]); clear(h[184:192]) }, ""},
			{"session 0", repZero(184, 8), "request"},
			{"request 0", repZero(168, 8), "request"},
			{"checksum not checked (not sealed)", repSetByte(0, 1), ""},
		}},
	}
	for _, c := range cases {
		vec := loadGolden(t, c.file)[:wire.HeaderSize]
		repWantField(t, c.file+" as given", c.decode(header(t, vec)), "")
		h := header(t, vec)
		h.SetCommand(wire.CmdReply)
		repWantField(t, c.file+" command 8", c.decode(h), "command")
		for _, r := range c.rules {
			h := header(t, vec)
			r.mutate(h)
			if c.sealed {
				h.Seal()
			}
			repWantField(t, c.file+": "+r.name, c.decode(h), r.field)
		}
		if !c.sealed {
			continue
		}
		// 2.1 rule 4 and 1.5 step 4: a wrong or zero seal drops the frame.
		h = header(t, vec)
		h[0] ^= 1
		repWantField(t, c.file+": seal off by one bit", c.decode(h), "checksum")
		h = header(t, vec)
		h.SetChecksum(wire.U128{})
		repWantField(t, c.file+": zero seal", c.decode(h), "checksum")
		// 1.5: the seal is verified before any validator rule: the same
		// rule violations without resealing fail on the seal.
		for _, r := range c.rules {
			if r.field == "" || r.field == "command" || r.field == "outcome" {
				continue
			}
			h := header(t, vec)
			r.mutate(h)
			repWantField(t, c.file+": unsealed "+r.name, c.decode(h), "checksum")
		}
	}
}

// 1.5 step 3 before step 4: an undefined outcome fails as such even when
// the seal is wrong too.
func TestReplicaGolden_1_5_OutcomeBeforeSeal(t *testing.T) {
	h := header(t, loadGolden(t, "replica_forward_register_result.hex"))
	h[255] = 200
	repWantField(t, "register outcome 200, stale seal", repErr(wire.DecodeForwardRegisterResultHeader)(h), "outcome")
	h = header(t, loadGolden(t, "replica_forward_logout_result.hex"))
	h[255] = 5
	repWantField(t, "logout outcome 5, stale seal", repErr(wire.DecodeForwardLogoutResultHeader)(h), "outcome")
	if wire.ForwardRegisterOutcome(6).String() != "ClientIdOwnedByAnotherUser" || wire.ForwardLogoutOutcome(4).String() != "Canceled" {
		t.Error("outcome names (8.3, 8.4)")
	}
}

// ---------------------------------------------------------------------------
// Routing and connection rules (1.1, 4.2)

func TestReplicaGolden_4_2_GroupOf(t *testing.T) {
	meta := wire.MetadataGroup
	for _, tc := range []struct {
		file  string
		group uint64
		ok    bool
	}{
		{"replica_prepare_a7.hex", meta, true},
		{"replica_commit_a6.hex", meta, true},
		{"replica_start_view_change.hex", repPartition527, true},
		{"replica_do_view_change_2.hex", meta, true},
		{"replica_start_view.hex", meta, true},
		{"replica_request_start_view.hex", repPartition100, true},
		{"replica_request_prepares.hex", meta, true},
		{"replica_repair_done.hex", meta, true},
		{"replica_range_evicted.hex", meta, true},
		{"replica_request_state_transfer.hex", repPartition527, true},
		{"replica_state_transfer_target.hex", meta, true},
		{"replica_request_state_chunk.hex", meta, true},
		{"replica_state_chunk.hex", meta, true},
		{"replica_forward_register.hex", meta, true},
		{"replica_forward_register_result.hex", meta, true},
		{"replica_forward_logout.hex", meta, true},
		{"replica_forward_logout_result.hex", meta, true},
		{"replica_routed_request.hex", meta, true},
		{"replica_hello.hex", 0, false},
		{"replica_challenge.hex", 0, false},
		{"replica_finish.hex", 0, false},
	} {
		g, ok := wire.GroupOf(header(t, loadGolden(t, tc.file)[:wire.HeaderSize]))
		if g != tc.group || ok != tc.ok {
			t.Errorf("GroupOf(%s) = %#x, %v; want %#x, %v", tc.file, g, ok, tc.group, tc.ok)
		}
	}
	// PrepareOk: group at 200.
	var h wire.Header
	(&wire.PrepareOkHeader{Op: 1, Operation: wire.OpSendMessages, Group: repPartition527}).Encode(&h)
	if g, ok := wire.GroupOf(&h); g != repPartition527 || !ok {
		t.Errorf("GroupOf(PrepareOk) = %#x, %v", g, ok)
	}
	// 4.2 rules 4-5: RepairPrepare legacy group 0 and misrouted metadata.
	a7 := loadGolden(t, "replica_prepare_a7.hex")
	for _, tc := range []struct {
		name  string
		op    wire.Operation
		group uint64
		want  uint64
		ok    bool
	}{
		{"metadata op, group 0 (legacy)", wire.OpRegister, 0, meta, true},
		{"metadata op, metadata group", wire.OpCreateStream, meta, meta, true},
		{"metadata op, partition group", wire.OpCreateStream, repPartition527, 0, false},
		{"partition op, group 0", wire.OpSendMessages, 0, 0, true},
		{"partition op, partition group", wire.OpSendMessages, repPartition527, repPartition527, true},
	} {
		h := header(t, a7)
		h.SetCommand(wire.CmdRepairPrepare)
		h[208] = byte(tc.op)
		copy(h[216:], wire.AppendU64(nil, tc.group))
		if g, ok := wire.GroupOf(h); g != tc.want || ok != tc.ok {
			t.Errorf("RepairPrepare %s: %#x, %v; want %#x, %v", tc.name, g, ok, tc.want, tc.ok)
		}
		// A live Prepare has no legacy rule: group 0 is partition (0,0,0).
		h.SetCommand(wire.CmdPrepare)
		if g, ok := wire.GroupOf(h); g != tc.group || !ok {
			t.Errorf("Prepare %s: %#x, %v", tc.name, g, ok)
		}
	}
	for _, c := range []wire.Command{0, 1, 4, 8, 13, 14, 16, 30, 255} {
		var h wire.Header
		h.SetCommand(c)
		copy(h[128:], wire.AppendU64(nil, 7))
		if _, ok := wire.GroupOf(&h); ok {
			t.Errorf("GroupOf(command %d) routed", c)
		}
	}
}

func TestReplicaGolden_1_1_ValidReplicaCommand(t *testing.T) {
	accepted := map[int]bool{5: true, 6: true, 7: true, 9: true, 10: true, 11: true, 12: true}
	for c := 17; c <= 29; c++ {
		accepted[c] = true
	}
	for c := 0; c < 256; c++ {
		if got := wire.ValidReplicaCommand(wire.Command(c)); got != accepted[c] {
			t.Errorf("ValidReplicaCommand(%d) = %v, want %v", c, got, accepted[c])
		}
	}
}

// ---------------------------------------------------------------------------
// DoViewChange / StartView suffix (6.5, 2.3, 2.4)

func TestReplicaGolden_6_5_DoViewChangeTwoEntries(t *testing.T) {
	vec := loadGolden(t, "replica_do_view_change_2.hex")
	a7 := loadGolden(t, "replica_prepare_a7.hex")
	d, entries, err := wire.DecodeDoViewChange(vec)
	if err != nil {
		t.Fatalf("DecodeDoViewChange: %v", err)
	}
	if d.Op != 2 || d.LogView != 3 || d.Entries() != 2 || d.ChecksumBody != wire.Widen(0x9fae4164aa2423af) {
		t.Errorf("header %+v", d)
	}
	if len(entries) != 2 {
		t.Fatalf("%d entries", len(entries))
	}
	e0, e1 := entries[0], entries[1]
	if !e0.Blank || !e0.Nack || e0.Present || e0.Prepare.Op != 2 || e0.Prepare.Command != wire.CmdPrepare {
		t.Errorf("entry 0 %+v, want the nacked blank for op 2", e0)
	}
	if e1.Blank || e1.Nack || !e1.Present || e1.Prepare.Checksum != repA7Identity || e1.Prepare.Op != 1 ||
		e1.Prepare.Operation != wire.OpRegister || e1.Prepare.Timestamp != repTS {
		t.Errorf("entry 1 %+v, want A7 present", e1)
	}
	assertBytes(t, "entry 1 bytes", e1.Header[:], a7)
	blank := wire.BlankPrepare(2)
	assertBytes(t, "BlankPrepare(2)", blank[:], vec[256:512])

	// Re-encode from the decoded values.
	body := wire.AppendSuffix(nil, entries)
	nack, present := wire.SuffixBitsets(entries)
	if nack != d.NackBitset || present != d.PresentBitset {
		t.Errorf("SuffixBitsets = %v, %v", nack, present)
	}
	d.Size, d.ChecksumBody = 0, wire.U128{} // AppendDoViewChange derives them
	assertBytes(t, "AppendDoViewChange", wire.AppendDoViewChange(nil, d, body), vec)

	// 6.5.2: the same suffix built from a journal holding only op 1,
	// head 2, commit 0.
	var a7h wire.Header
	copy(a7h[:], a7)
	built := wire.BuildSuffix(wire.SuffixSource{Commit: 0, Head: 2, Journal: repJournal(map[uint64]*wire.Header{1: &a7h})})
	if built.Top != 2 || built.Nack != (wire.U128{Lo: 1}) || built.Present != (wire.U128{Lo: 2}) {
		t.Errorf("BuildSuffix top %d nack %v present %v", built.Top, built.Nack, built.Present)
	}
	assertBytes(t, "BuildSuffix body", built.Body, vec[256:])

	// 2.4 rule 2: the body seal is checked before the suffix is used.
	bad := append([]byte(nil), vec...)
	bad[0x2c0]++ // A7's timestamp: body changes, seals do not
	if _, _, err := wire.DecodeDoViewChange(bad); err == nil {
		t.Error("a body that does not match checksum_body decoded")
	} else {
		repWantField(t, "stale body seal", err, "checksum_body")
	}
	// A frame shorter or longer than its size field.
	repWantField(t, "truncated frame", repDVCErr(vec[:700]), "size")
	repWantField(t, "frame with extra bytes", repDVCErr(append(append([]byte(nil), vec...), 0)), "size")
}

func repDVCErr(frame []byte) error { _, _, err := wire.DecodeDoViewChange(frame); return err }

func repJournal(m map[uint64]*wire.Header) func(uint64) (*wire.Header, bool) {
	return func(op uint64) (*wire.Header, bool) { h, ok := m[op]; return h, ok }
}

// repChain builds sealed prepares for ops 1..n (op 1 is A7-like), each
// parented on the one before, timestamps ascending.
func repChain(n int) []wire.Header {
	out := make([]wire.Header, n)
	parent := wire.U128{}
	for i := range out {
		p := wire.PrepareHeader{
			ChecksumBody: wire.BodySeal(nil), Cluster: clusterA2, Size: 256, View: 3, Command: wire.CmdPrepare,
			Client: c1, Parent: parent, Op: uint64(i + 1), Timestamp: repTS + uint64(i)*10, Request: uint64(i + 1),
			Operation: wire.OpCreateStream, Group: wire.MetadataGroup, UserID: 1,
		}
		p.Encode(&out[i])
		out[i].SetChecksum(wire.PrepareIdentity(&out[i]))
		parent = out[i].Checksum()
	}
	return out
}

// repBody lays out headers descending: ops[i] for entry i.
func repBody(hs ...wire.Header) []byte {
	var b []byte
	for i := range hs {
		b = append(b, hs[i][:]...)
	}
	return b
}

func TestReplicaGolden_6_5_3_SuffixRules(t *testing.T) {
	ch := repChain(4) // ops 1..4 at ch[0..3]
	valid := repBody(ch[3], ch[2], ch[1], ch[0])
	if es, err := wire.DecodeSuffix(4, valid, wire.U128{}, wire.U128{Lo: 0xf}); err != nil || len(es) != 4 {
		t.Fatalf("valid 4-entry suffix: %v", err)
	}
	mut := func(i int, f func(*wire.Header), reseal bool) []byte {
		hs := []wire.Header{ch[3], ch[2], ch[1], ch[0]}
		f(&hs[i])
		if reseal {
			hs[i].SetChecksum(wire.PrepareIdentity(&hs[i]))
		}
		return repBody(hs...)
	}
	big := make([]byte, 129*256)
	for _, tc := range []struct {
		name          string
		op            uint64
		body          []byte
		nack, present wire.U128
		ok            bool
	}{
		{"rule 1: body not whole headers", 4, valid[:1000], wire.U128{}, wire.U128{}, false},
		{"rule 1: 129 entries", 200, big, wire.U128{}, wire.U128{}, false},
		{"rule 1: nack bit at count", 4, valid, wire.U128{Lo: 1 << 4}, wire.U128{}, false},
		{"rule 1: present bit at count", 4, valid, wire.U128{}, wire.U128{Hi: 1}, false},
		{"rule 2: entry reserved nonzero", 4, mut(1, func(h *wire.Header) { h[230] = 1 }, true), wire.U128{}, wire.U128{}, false},
		{"rule 2: entry reserved_frame nonzero", 4, mut(1, func(h *wire.Header) { h[70] = 1 }, true), wire.U128{}, wire.U128{}, false},
		{"rule 2: entry undefined operation", 4, mut(1, func(h *wire.Header) { h[208] = 99 }, true), wire.U128{}, wire.U128{}, false},
		{"rule 2: entry command 9", 4, mut(1, func(h *wire.Header) { h.SetCommand(wire.CmdCommit) }, true), wire.U128{}, wire.U128{}, false},
		{"rule 3: message op 5", 5, valid, wire.U128{}, wire.U128{}, false},
		{"rule 3: message op 3 below the entries", 3, valid, wire.U128{}, wire.U128{}, false},
		{"rule 3: entries climb", 1, repBody(ch[0], ch[1]), wire.U128{}, wire.U128{}, false},
		{"rule 4: identity mismatch", 4, mut(2, func(h *wire.Header) { h[200]++ }, false), wire.U128{}, wire.U128{}, false},
		{"rule 4: zero checksum skips identity", 4, mut(0, func(h *wire.Header) { h[200]++; h.SetChecksum(wire.U128{}) }, false), wire.U128{}, wire.U128{}, true},
		{"rule 5: timestamp equal", 4, mut(0, func(h *wire.Header) { copy(h[192:], wire.AppendU64(nil, repTS+20)) }, true), wire.U128{}, wire.U128{}, false},
		{"rule 5: timestamp climbing down", 4, mut(1, func(h *wire.Header) { copy(h[192:], wire.AppendU64(nil, repTS+99)) }, true), wire.U128{}, wire.U128{}, false},
		{"rule 5: parent mismatch", 4, mut(0, func(h *wire.Header) { h[144]++ }, true), wire.U128{}, wire.U128{}, false},
		{"rule 5: lower checksum 0 suspends the parent check", 4, mut(1, func(h *wire.Header) { h.SetChecksum(wire.U128{}) }, false), wire.U128{}, wire.U128{}, true},
		{"rule 5: blanks are skipped, no parent check across a gap", 4,
			repBody(ch[3], wire.BlankPrepare(3), ch[1], ch[0]), wire.U128{Lo: 2}, wire.U128{}, true},
		{"rule 6: entry views not checked", 4, mut(1, func(h *wire.Header) { h.SetView(77) }, false), wire.U128{}, wire.U128{}, true},
		{"empty suffix", 9, nil, wire.U128{}, wire.U128{}, true},
	} {
		_, err := wire.DecodeSuffix(tc.op, tc.body, tc.nack, tc.present)
		if (err == nil) != tc.ok {
			t.Errorf("%s: err = %v, want ok=%v", tc.name, err, tc.ok)
		}
		if err != nil && !errors.Is(err, wire.ErrMalformed) {
			t.Errorf("%s: %v is not a DecodeError", tc.name, err)
		}
	}
	// Blank with a gap: op 4's parent is not checked against op 2 (not
	// adjacent), but timestamps still descend across the blank.
	gap := repBody(ch[3], wire.BlankPrepare(3), ch[1])
	es, err := wire.DecodeSuffix(4, gap, wire.U128{Lo: 2}, wire.U128{Lo: 5})
	if err != nil {
		t.Fatalf("suffix with a blank: %v", err)
	}
	if !es[1].Blank || !es[1].Nack || es[0].Blank || !es[2].Present {
		t.Errorf("flags %+v %+v %+v", es[0].Blank, es[1], es[2].Present)
	}
	hs := []wire.Header{ch[3], wire.BlankPrepare(3), ch[1]}
	copy(hs[2][192:], wire.AppendU64(nil, repTS+40))
	hs[2].SetChecksum(wire.PrepareIdentity(&hs[2]))
	if _, err := wire.DecodeSuffix(4, repBody(hs...), wire.U128{}, wire.U128{}); err == nil {
		t.Error("timestamps not descending across a blank decoded")
	}
}

func TestReplicaGolden_6_5_StartViewFrames(t *testing.T) {
	ch := repChain(3)
	body := repBody(ch[2], ch[1])
	sv := wire.StartViewHeader{Cluster: clusterA2, View: 5, Op: 3, Commit: 2, Group: wire.MetadataGroup}
	frame := wire.AppendStartView(nil, sv, body)
	if len(frame) != 256+512 {
		t.Fatalf("frame %d bytes", len(frame))
	}
	h := wire.HeaderOf(frame)
	if h.Size() != 768 || h.ChecksumBody() != wire.BodySeal(body) || !h.SealValid() {
		t.Errorf("size %d, checksum_body %v, seal %v", h.Size(), h.ChecksumBody(), h.SealValid())
	}
	got, es, err := wire.DecodeStartView(frame)
	if err != nil || len(es) != 2 || got.Op != 3 || es[1].Prepare.Op != 2 {
		t.Fatalf("DecodeStartView: %+v %d %v", got, len(es), err)
	}
	// 2.3: an empty body has checksum_body 0; 2.4 rule 2: an empty body is
	// accepted whatever checksum_body says.
	empty := wire.AppendStartView(nil, sv, nil)
	if wire.HeaderOf(empty).ChecksumBody() != (wire.U128{}) {
		t.Error("empty StartView body sealed")
	}
	hEmpty := wire.HeaderOf(empty)
	hEmpty.SetChecksumBody(wire.U128{Lo: 99})
	hEmpty.Seal()
	if _, _, err := wire.DecodeStartView(empty); err != nil {
		t.Errorf("empty body with a stray checksum_body: %v", err)
	}
	// A non-empty body with checksum_body 0 is a mismatch.
	h.SetChecksumBody(wire.U128{})
	h.Seal()
	_, _, err = wire.DecodeStartView(frame)
	repWantField(t, "zero checksum_body, non-empty body", err, "checksum_body")
	if err := wire.VerifySuffixBodySeal(wire.U128{}, nil); err != nil {
		t.Errorf("VerifySuffixBodySeal(empty): %v", err)
	}
}

func TestReplicaGolden_6_5_2_BuildSuffix(t *testing.T) {
	ch := repChain(6)
	journal := map[uint64]*wire.Header{}
	for _, op := range []uint64{1, 2, 4} {
		journal[op] = &ch[op-1]
	}
	adopted := map[uint64]*wire.Header{5: &ch[4]}
	blank6 := wire.BlankPrepare(6)
	adopted[6] = &blank6 // a blank in V is no information
	b := wire.BuildSuffix(wire.SuffixSource{Commit: 2, Head: 4, AdoptedTop: 6,
		Journal: repJournal(journal), Adopted: repJournal(adopted)})
	// top = 6, low = 2: entries ops 6,5,4,3,2.
	if b.Top != 6 || len(b.Body) != 5*256 {
		t.Fatalf("top %d, %d bytes", b.Top, len(b.Body))
	}
	es, err := wire.DecodeSuffix(b.Top, b.Body, b.Nack, b.Present)
	if err != nil {
		t.Fatalf("built suffix does not decode: %v", err)
	}
	want := []struct{ blank, nack, present bool }{
		{true, true, false},   // op 6: blank above commit
		{false, false, false}, // op 5: adopted, known, not servable
		{false, false, true},  // op 4: journaled
		{true, true, false},   // op 3: missing above commit
		{false, false, true},  // op 2: journaled (the commit point)
	}
	for i, w := range want {
		if es[i].Blank != w.blank || es[i].Nack != w.nack || es[i].Present != w.present {
			t.Errorf("entry %d (op %d): blank %v nack %v present %v, want %+v", i, es[i].Prepare.Op, es[i].Blank, es[i].Nack, es[i].Present, w)
		}
	}
	// Missing at or below commit: blank without a nack.
	b = wire.BuildSuffix(wire.SuffixSource{Commit: 3, Head: 4, Journal: repJournal(map[uint64]*wire.Header{4: &ch[3]})})
	if b.Top != 4 || len(b.Body) != 512 || b.Nack != (wire.U128{}) || b.Present != (wire.U128{Lo: 1}) {
		t.Errorf("commit-point blank: top %d len %d nack %v present %v", b.Top, len(b.Body), b.Nack, b.Present)
	}
	// Empty suffixes (rules 1-2).
	if b := wire.BuildSuffix(wire.SuffixSource{}); b.Top != 0 || b.Body != nil {
		t.Errorf("top 0: %+v", b)
	}
	if b := wire.BuildSuffix(wire.SuffixSource{Commit: 5, Head: 4}); b.Body != nil {
		t.Errorf("low > top: %+v", b)
	}
	// Rule 3: keep the highest 128 entries.
	b = wire.BuildSuffix(wire.SuffixSource{Commit: 0, Head: 300})
	if len(b.Body) != 128*256 || b.Nack != (wire.U128{Lo: ^uint64(0), Hi: ^uint64(0)}) {
		t.Errorf("window: %d bytes, nack %v", len(b.Body), b.Nack)
	}
	es, err = wire.DecodeSuffix(300, b.Body, b.Nack, b.Present)
	if err != nil || es[127].Prepare.Op != 173 {
		t.Errorf("window decode: %v", err)
	}
}

// ---------------------------------------------------------------------------
// Artifacts (7.8.1, 7.8.3; Appendix A8-A10)

func TestReplicaGolden_7_8_1_StateManifest(t *testing.T) {
	for _, tc := range []struct {
		name string
		vec  string
		want wire.StateManifest
	}{
		{"A8 empty", "49534d3100000000 19 c4c2c6afa4031121", wire.StateManifest{}},
		{"A9 one entry", "49534d31 01000000 19 01 0500000000000000 0300000000000000 50392f89945faf78 fd845b2c0b1062ca",
			wire.StateManifest{Entries: []wire.ManifestEntry{{Kind: wire.ArtifactClientTable, Frontier: 5, Len: 3, Checksum: 0x78af5f94892f3950}}}},
	} {
		vec := hx(t, tc.vec)
		var m wire.StateManifest
		if err := m.Decode(vec); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !reflect.DeepEqual(m, tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.name, m, tc.want)
		}
		assertBytes(t, tc.name+" AppendTo", tc.want.AppendTo(nil), vec)
		assertBytes(t, tc.name+" AppendTo after a prefix", tc.want.AppendTo([]byte{9, 9})[2:], vec)
	}
	if got := wire.ArtifactChecksum([]byte("abc")); got != 0x78af5f94892f3950 {
		t.Errorf("H64(abc) = %#x", got)
	}
	a9 := hx(t, "49534d31 01000000 19 01 0500000000000000 0300000000000000 50392f89945faf78 fd845b2c0b1062ca")
	// entry_len 26: the extra byte is skipped (forward compatibility).
	long := append(append(append([]byte(nil), a9[:8]...), 26), a9[9:34]...)
	long = repTrailer(append(long, 0xee))
	var m wire.StateManifest
	if err := m.Decode(long); err != nil || len(m.Entries) != 1 || m.Entries[0].Checksum != 0x78af5f94892f3950 {
		t.Errorf("entry_len 26: %+v %v", m, err)
	}
	for _, tc := range []struct {
		name  string
		b     []byte
		field string
	}{
		{"trailer mismatch", append(append([]byte(nil), a9[:41]...), a9[41]^1), "trailer"},
		{"trailer checked first (bad magic, bad trailer)", append([]byte("XSM1"), a9[4:]...), "trailer"},
		{"too short", a9[:16], "manifest"},
		{"bad magic", repTrailer(append([]byte("ISM2"), a9[4:34]...)), "magic"},
		{"count 65537", repTrailer([]byte("ISM1\x01\x00\x01\x00\x19")), "count"},
		{"entry_len 24", repTrailer(append(append([]byte(nil), a9[:8]...), 24)), "entry_len"},
		{"count 2, one entry", repTrailer(append([]byte("ISM1\x02\x00\x00\x00"), a9[8:34]...)), "entries"},
		{"trailing byte after entries", repTrailer(append(append([]byte(nil), a9[:34]...), 0)), "entries"},
	} {
		var m wire.StateManifest
		repWantField(t, "manifest "+tc.name, m.Decode(tc.b), tc.field)
	}
	if wire.ArtifactKind(9).Known() || !wire.ArtifactConsumerOffsets.Known() || wire.ArtifactSegmentLog.String() != "SEGMENT_LOG" {
		t.Error("ArtifactKind")
	}
}

// repTrailer appends the H64 trailer (our hash; used only for rejection
// rows whose subject is not the trailer).
func repTrailer(b []byte) []byte { return wire.AppendU64(b, wire.ArtifactChecksum(b)) }

func TestReplicaGolden_7_8_3_ConsumerOffsets(t *testing.T) {
	a10 := hx(t, "49434f31 01 0000000000000000 0000000000000000 00000000 00000000 13b573637212f421")
	var a wire.ConsumerOffsetsArtifact
	if err := a.Decode(a10); err != nil || !reflect.DeepEqual(a, wire.ConsumerOffsetsArtifact{}) {
		t.Fatalf("A10: %+v %v", a, err)
	}
	assertBytes(t, "A10 AppendTo", wire.ConsumerOffsetsArtifact{}.AppendTo(nil), a10)

	vec := loadGolden(t, "replica_ico1_entries.hex")
	want := wire.ConsumerOffsetsArtifact{PurgeGeneration: 2, NextOffset: 100,
		Consumers: []wire.OffsetEntry{{ID: 1, Offset: 10}, {ID: 7, Offset: 99}}, Groups: []wire.OffsetEntry{{ID: 3, Offset: 50}}}
	if err := a.Decode(vec); err != nil || !reflect.DeepEqual(a, want) {
		t.Fatalf("entries: %+v %v", a, err)
	}
	assertBytes(t, "ICO1 AppendTo", want.AppendTo(nil), vec)

	payload := vec[:len(vec)-8]
	edit := func(off int, v byte) []byte {
		b := append([]byte(nil), payload...)
		b[off] = v
		return repTrailer(b)
	}
	for _, tc := range []struct {
		name  string
		b     []byte
		field string
	}{
		{"trailer mismatch", append(append([]byte(nil), payload...), 0, 0, 0, 0, 0, 0, 0, 0), "trailer"},
		{"too short", a10[:36], "consumer offsets"},
		{"bad magic", edit(3, '2'), "magic"},
		{"version 2", edit(4, 2), "version"},
		{"consumer_count 2^20+1", repTrailer(append(append([]byte(nil), a10[:21]...), 1, 0, 0x10, 0, 0, 0, 0, 0)), "consumer_count"},
		{"group_count 2^20+1", repTrailer(append(append([]byte(nil), a10[:21]...), 0, 0, 0, 0, 1, 0, 0x10, 0)), "group_count"},
		{"counts exceed the entries", edit(0x19, 2), "entries"},
		{"trailing byte", repTrailer(append(append([]byte(nil), payload...), 0)), "entries"},
		{"consumer ids not ascending", edit(0x29, 1), "consumers"},
		{"group id equal after a consumer id is fine", edit(0x35, 1), ""},
	} {
		var a wire.ConsumerOffsetsArtifact
		repWantField(t, "ICO1 "+tc.name, a.Decode(tc.b), tc.field)
	}
	// Groups must ascend too.
	two := wire.ConsumerOffsetsArtifact{Groups: []wire.OffsetEntry{{ID: 4}, {ID: 4}}}
	repWantField(t, "ICO1 duplicate group id", (&wire.ConsumerOffsetsArtifact{}).Decode(two.AppendTo(nil)), "groups")
}
