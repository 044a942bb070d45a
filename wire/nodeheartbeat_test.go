package wire_test

import (
	"bytes"
	"testing"

	"iggynode/wire"
)

// wire/nodeheartbeat.go layout: the golden frame decodes to its fields
// and the encoder reproduces it byte for byte.
func TestGolden_NodeHeartbeat(t *testing.T) {
	vec := loadGolden(t, "node_heartbeat.hex")
	want := wire.NodeHeartbeat{Cluster: clusterA2, Replica: 2, Incarnation: wire.U128{Lo: 0x0123456789abcdef, Hi: 1}, Beat: 5,
		Entries: []wire.NodeHeartbeatEntry{
			{Group: 0x5_0020_0007, Commit: 42, View: 3, Kind: wire.NodeHeartbeatNotice},
			{Group: 0, Commit: 7, View: 1, Kind: wire.NodeHeartbeatConfirm},
		}}
	got, err := wire.DecodeNodeHeartbeat(vec)
	if err != nil {
		t.Fatalf("DecodeNodeHeartbeat: %v", err)
	}
	if got.Cluster != want.Cluster || got.Replica != want.Replica || got.Incarnation != want.Incarnation || got.Beat != want.Beat ||
		len(got.Entries) != 2 || got.Entries[0] != want.Entries[0] || got.Entries[1] != want.Entries[1] {
		t.Errorf("decoded %+v\nwant    %+v", got, want)
	}
	assertBytes(t, "NodeHeartbeat.AppendTo", want.AppendTo(nil), vec)
	if !wire.CmdNodeHeartbeat.Extension() || wire.CmdNodeHeartbeat.Valid() {
		t.Error("command 64 must be an extension, outside the spec's 0..29")
	}
	if g, ok := wire.GroupOf(wire.HeaderOf(vec)); ok {
		t.Errorf("a node heartbeat belongs to no group, got %#x", g)
	}
}

// Every damaged field is refused, never accepted as another frame.
func TestNodeHeartbeatRefusesDamage(t *testing.T) {
	good := wire.NodeHeartbeat{Cluster: clusterA2, Replica: 1, Incarnation: wire.U128{Lo: 9}, Beat: 1,
		Entries: []wire.NodeHeartbeatEntry{{Group: 3, Commit: 4, View: 5, Kind: wire.NodeHeartbeatNotice}}}.AppendTo(nil)
	reseal := func(f []byte) []byte {
		h := wire.HeaderOf(f)
		h.SetChecksumBody(wire.BodySeal(f[wire.HeaderSize:]))
		h.Seal()
		return f
	}
	for _, c := range []struct {
		name   string
		damage func([]byte) []byte
	}{
		{"short", func(f []byte) []byte { return f[:100] }},
		{"frame seal", func(f []byte) []byte { f[40] ^= 1; return f }},
		{"body seal", func(f []byte) []byte { f[wire.HeaderSize] ^= 1; return f }},
		{"count above the size", func(f []byte) []byte { f[152] = 2; return reseal(f) }},
		{"count too large", func(f []byte) []byte { f[154] = 0xff; return reseal(f) }},
		{"size not the frame's", func(f []byte) []byte { return reseal(append(f, make([]byte, 24)...)) }},
		{"unknown kind", func(f []byte) []byte { f[wire.HeaderSize+20] = 3; return reseal(f) }},
		{"entry reserved", func(f []byte) []byte { f[wire.HeaderSize+22] = 1; return reseal(f) }},
		{"header reserved", func(f []byte) []byte { f[200] = 1; return reseal(f) }},
		{"view", func(f []byte) []byte { f[52] = 1; return reseal(f) }},
		{"zero incarnation", func(f []byte) []byte { clear(f[128:144]); return reseal(f) }},
		{"command", func(f []byte) []byte { f[60] = byte(wire.CmdCommit); return reseal(f) }},
	} {
		if _, err := wire.DecodeNodeHeartbeat(c.damage(bytes.Clone(good))); err == nil {
			t.Errorf("%s: accepted", c.name)
		}
	}
}

func FuzzNodeHeartbeat(f *testing.F) {
	f.Add(wire.NodeHeartbeat{Cluster: clusterA2, Replica: 1, Incarnation: wire.U128{Lo: 9}, Beat: 1}.AppendTo(nil))
	f.Add(wire.NodeHeartbeat{Cluster: clusterA2, Replica: 2, Incarnation: wire.U128{Hi: 1}, Beat: 7,
		Entries: []wire.NodeHeartbeatEntry{{Group: 1, Commit: 2, View: 3, Kind: 1}, {Group: 4, Commit: 5, View: 6, Kind: 2}}}.AppendTo(nil))
	f.Fuzz(func(t *testing.T, frame []byte) {
		m, err := wire.DecodeNodeHeartbeat(frame)
		if err != nil {
			return
		}
		// What decodes re-encodes to the same frame (the layout has no
		// freedom left: reserved bytes are zero, seals are determined).
		if again := m.AppendTo(nil); !bytes.Equal(again, frame) {
			t.Fatalf("re-encoded differently:\n%x\n%x", again, frame)
		}
	})
}
