package storage

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/zeebo/xxh3"

	"iggynode/wire"
)

// unhex decodes hex written with spaces and line breaks.
func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// seal appends the 9.2 trailer H64(framing + payload), 8 LE bytes.
func seal(b []byte) []byte {
	return binary.LittleEndian.AppendUint64(b, xxh3.Hash(b))
}

var sampleVsrState = VsrState{
	Cluster:            wire.U128{Lo: 0x0807060504030201, Hi: 0x100F0E0D0C0B0A09},
	ReplicaID:          2,
	ReplicaCount:       3,
	View:               0x11223344,
	LogView:            0x11223340,
	CommitMax:          0x0102030405060708,
	CheckpointOp:       0x99,
	CheckpointChecksum: wire.U128{Lo: 0xAABBCCDDEEFF0011},
	OffsetFrontier:     0x1000,
}

// replica-plane.md 9.2, written field by field from the offset tables.
const sampleSuperblockHex = `
	4B 4C 42 53                         magic 0x53424C4B
	01 00                               version 1
	00 00                               reserved
	05 00 00 00 00 00 00 00             sequence 5
	00 00 00 00 00 00 00 00             parent_checksum 0
	42 00 00 00                         payload_len 66
	01 02 03 04 05 06 07 08 09 0A 0B 0C 0D 0E 0F 10   @0  cluster u128
	02                                  @16 replica_id
	03                                  @17 replica_count
	44 33 22 11                         @18 view
	40 33 22 11                         @22 log_view
	08 07 06 05 04 03 02 01             @26 commit_max
	99 00 00 00 00 00 00 00             @34 checkpoint_op
	11 00 FF EE DD CC BB AA 00 00 00 00 00 00 00 00   @42 checkpoint_checksum
	00 10 00 00 00 00 00 00             @58 offset_frontier
`

// hexOnly strips the annotations (anything after two spaces that is not
// hex) from the layout above.
func hexOnly(s string) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		for _, f := range strings.Fields(line) {
			if len(f) != 2 {
				break
			}
			if _, err := hex.DecodeString(f); err != nil {
				break
			}
			out = append(out, f)
		}
	}
	return strings.Join(out, "")
}

func TestSuperblockEncodingMatchesSpecLayout(t *testing.T) {
	want := seal(unhex(t, hexOnly(sampleSuperblockHex)))
	if len(want) != 102 || SuperblockRecordSize != 102 {
		t.Fatalf("hand-written record is %d bytes, const %d", len(want), SuperblockRecordSize)
	}
	got := appendSuperblock(nil, 5, sampleVsrState)
	if !bytes.Equal(got, want) {
		t.Fatalf("record\n got %x\nwant %x", got, want)
	}
	seq, st, err := decodeSuperblock(want)
	if err != nil || seq != 5 || st != sampleVsrState {
		t.Fatalf("decode: seq %d %+v %v", seq, st, err)
	}
}

// 9.2: the 58-byte legacy payload (no offset_frontier) is accepted on read.
func TestSuperblockLegacyPayload(t *testing.T) {
	b := unhex(t, hexOnly(sampleSuperblockHex))
	b = b[:28+58]
	b[24] = 58 // payload_len
	_, st, err := decodeSuperblock(seal(b))
	want := sampleVsrState
	want.OffsetFrontier = 0
	if err != nil || st != want {
		t.Fatalf("legacy: %+v %v", st, err)
	}
}

func TestSuperblockCorruptionRejected(t *testing.T) {
	good := seal(unhex(t, hexOnly(sampleSuperblockHex)))
	framing := func(mut func(b []byte)) []byte { // edit, then reseal
		b := bytes.Clone(good[:len(good)-8])
		mut(b)
		return seal(b)
	}
	cases := map[string][]byte{
		"flipped payload bit":  func() []byte { b := bytes.Clone(good); b[40] ^= 1; return b }(),
		"flipped trailer bit":  func() []byte { b := bytes.Clone(good); b[101] ^= 0x80; return b }(),
		"flipped sequence bit": func() []byte { b := bytes.Clone(good); b[8] ^= 1; return b }(),
		"truncated":            good[:101],
		"trailing byte":        append(bytes.Clone(good), 0),
		"empty":                nil,
		"bad magic resealed":   framing(func(b []byte) { b[0] = 0x4C }),
		"version 2 resealed":   framing(func(b []byte) { b[4] = 2 }),
		"payload_len 65":       framing(func(b []byte) { b[24] = 65 }),
		"payload_len huge":     framing(func(b []byte) { b[27] = 0xFF }),
	}
	for name, b := range cases {
		if _, _, err := decodeSuperblock(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestVsrStateStoreRoundTripAndCorruption(t *testing.T) {
	s := openTest(t)
	if _, ok, err := s.LoadVsrState(4); ok || err != nil {
		t.Fatalf("fresh group: %v %v", ok, err)
	}
	for i := range 3 {
		st := sampleVsrState
		st.View += uint32(i)
		if err := s.SaveVsrState(4, st, i == 2); err != nil {
			t.Fatal(err)
		}
		got, ok, err := s.LoadVsrState(4)
		if err != nil || !ok || got != st {
			t.Fatalf("round %d: %+v %v %v", i, got, ok, err)
		}
		if seq := storedSequence(t, s, 4); seq != uint64(i+1) {
			t.Fatalf("sequence %d after %d writes", seq, i+1)
		}
	}
	// A corrupt stored record: loads fail and the store refuses to write
	// over it (9.3 step 2), also after a restart.
	raw, _, _ := s.get(kindPrefix(4, kindSuperblock))
	raw[30] ^= 0xFF
	if err := s.set(kindPrefix(4, kindSuperblock), raw, false); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.LoadVsrState(4); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("load of a corrupt record: %v", err)
	}
	s = reopen(t, s)
	if _, _, err := s.LoadVsrState(4); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("load after reopen: %v", err)
	}
	if err := s.SaveVsrState(4, sampleVsrState, true); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("save over a corrupt record: %v", err)
	}
}

func TestSnapshotTrailer(t *testing.T) {
	s := openTest(t)
	if _, ok, err := s.LoadSnapshot(0); ok || err != nil {
		t.Fatalf("missing snapshot: %v %v", ok, err)
	}
	payload := []byte("hello")
	if err := s.SaveSnapshot(0, payload); err != nil {
		t.Fatal(err)
	}
	// 2.6: payload, magic 0x49534E50 (50 4E 53 49), W(H64(payload)).
	want := unhex(t, "68656C6C6F 504E5349")
	want = binary.LittleEndian.AppendUint64(want, xxh3.Hash(payload))
	want = append(want, make([]byte, 8)...)
	raw, _, _ := s.get(kindPrefix(0, kindSnapshot))
	if !bytes.Equal(raw, want) {
		t.Fatalf("stored\n got %x\nwant %x", raw, want)
	}
	if SnapshotChecksum(payload) != (wire.U128{Lo: xxh3.Hash(payload)}) {
		t.Fatal("SnapshotChecksum is not W(H64(payload))")
	}
	got, ok, err := s.LoadSnapshot(0)
	if err != nil || !ok || !bytes.Equal(got, payload) {
		t.Fatalf("load: %q %v %v", got, ok, err)
	}
	// An empty payload is a valid snapshot.
	if err := s.SaveSnapshot(1, nil); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := s.LoadSnapshot(1); err != nil || !ok || len(got) != 0 {
		t.Fatalf("empty: %q %v %v", got, ok, err)
	}

	bad := map[string][]byte{
		"flipped payload":   func() []byte { b := bytes.Clone(want); b[0] ^= 1; return b }(),
		"bad magic":         func() []byte { b := bytes.Clone(want); b[5] = 0; return b }(),
		"hash high nonzero": func() []byte { b := bytes.Clone(want); b[len(b)-1] = 1; return b }(),
		"no trailer":        []byte("hello"),
		"short":             want[:19],
	}
	for name, v := range bad {
		if err := s.set(kindPrefix(2, kindSnapshot), v, false); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.LoadSnapshot(2); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func FuzzDecodeSuperblock(f *testing.F) {
	f.Add(appendSuperblock(nil, 1, sampleVsrState))
	f.Add(appendSuperblock(nil, 0, VsrState{}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		seq, st, err := decodeSuperblock(b)
		if err != nil {
			return
		}
		again, st2, err := decodeSuperblock(appendSuperblock(nil, seq, st))
		if err != nil || again != seq || st2 != st {
			t.Fatalf("re-encode: %d %+v %v", again, st2, err)
		}
	})
}

func FuzzOpenSnapshot(f *testing.F) {
	f.Add(wire.AppendU128(unhex(f, "504E5349"), SnapshotChecksum(nil)))
	f.Add(unhex(f, "504E5349"+strings.Repeat("00", 16)))
	f.Add([]byte("hello"))
	f.Fuzz(func(t *testing.T, v []byte) {
		p, err := openSnapshot(v)
		if err != nil {
			return
		}
		// The trailer is canonical: resealing gives the input back.
		re := append(bytes.Clone(p), 0x50, 0x4E, 0x53, 0x49)
		re = wire.AppendU128(re, SnapshotChecksum(p))
		if !bytes.Equal(re, v) {
			t.Fatalf("reseal differs")
		}
	})
}
