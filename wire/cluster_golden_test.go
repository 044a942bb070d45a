package wire_test

// Golden vectors of the cluster admin surface (docs/reconfiguration.md,
// "Admin surface"): testdata/golden/cluster_*.hex, written by hand from the
// doc's tables. Each test decodes the vector and checks every field, encodes
// the expected value and checks the bytes, then mutates single fields of
// the vector into what the strict decoders must refuse.

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"iggynode/wire"
)

// mutations maps a name to a change of a copy of vec that must not decode.
type mutations map[string]func(b []byte) []byte

func assertRefused(t *testing.T, what string, vec []byte, decode func([]byte) error, ms mutations) {
	t.Helper()
	for name, mutate := range ms {
		err := decode(mutate(append([]byte(nil), vec...)))
		if err == nil {
			t.Errorf("%s %s: accepted", what, name)
		} else if !errors.Is(err, wire.ErrMalformed) {
			t.Errorf("%s %s: %v is not ErrMalformed", what, name, err)
		}
	}
}

// Mutations every body that ends with a NodeSpec shares; at is the
// offset of the spec's id.
func nodeSpecMutations(at int) mutations {
	return mutations{
		"trailing byte":         func(b []byte) []byte { return append(b, 0) },
		"truncated":             func(b []byte) []byte { return b[:len(b)-1] },
		"id 32":                 func(b []byte) []byte { b[at] = 32; return b },
		"id 255":                func(b []byte) []byte { b[at] = 255; return b },
		"empty replica_address": func(b []byte) []byte { return append(b[:at+1:at+1], append([]byte{0}, b[at+2+int(b[at+1]):]...)...) },
		"replica_address past the end": func(b []byte) []byte {
			b[at+1] = 255
			return b
		},
		"replica_address not UTF-8": func(b []byte) []byte { b[at+2] = 0xff; return b },
	}
}

func TestGolden_ClusterAdd9001(t *testing.T) {
	vec := loadGolden(t, "cluster_add_body.hex")
	want := wire.ClusterAdd{Spec: wire.NodeSpec{ID: 3, ReplicaAddress: "10.0.0.4:8070", Name: "node-3",
		TCPPort: 8090, QUICPort: 8080, HTTPPort: 3000, WebSocketPort: 8092}}
	var got wire.ClusterAdd
	if err := got.Decode(vec); err != nil {
		t.Fatalf("ClusterAdd.Decode: %v", err)
	}
	if got != want {
		t.Errorf("decoded %+v\nwant    %+v", got, want)
	}
	if want.Code() != 9001 || wire.CodeClusterAdd.String() != "ClusterAdd" {
		t.Errorf("code %d %v", want.Code(), wire.CodeClusterAdd)
	}
	if err := want.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	assertBytes(t, "ClusterAdd.AppendTo", want.AppendTo(nil), vec)
	// The same bytes are the NodeSpec alone.
	var spec wire.NodeSpec
	if err := spec.Decode(vec); err != nil || spec != want.Spec {
		t.Errorf("NodeSpec.Decode = %+v, %v", spec, err)
	}
	assertBytes(t, "NodeSpec.AppendTo", want.Spec.AppendTo(nil), vec)
	ms := nodeSpecMutations(0)
	ms["name not UTF-8"] = func(b []byte) []byte { b[0x10] = 0xc3; b[0x11] = 0x28; return b }
	ms["name past the end"] = func(b []byte) []byte { b[0x0f] = 40; return b }
	ms["ip past the end"] = func(b []byte) []byte { b[0x16] = 9; return b }
	assertRefused(t, "ClusterAdd", vec, new(wire.ClusterAdd).Decode, ms)
	assertRefused(t, "NodeSpec", vec, new(wire.NodeSpec).Decode, ms)
}

func TestGolden_ClusterRemove9002(t *testing.T) {
	vec := loadGolden(t, "cluster_remove_body.hex")
	want := wire.ClusterRemove{ID: 2}
	var got wire.ClusterRemove
	if err := got.Decode(vec); err != nil || got != want {
		t.Fatalf("ClusterRemove.Decode = %+v, %v", got, err)
	}
	assertBytes(t, "ClusterRemove.AppendTo", want.AppendTo(nil), vec)
	if want.Code() != 9002 {
		t.Errorf("code %d", want.Code())
	}
	assertRefused(t, "ClusterRemove", vec, new(wire.ClusterRemove).Decode, mutations{
		"empty":         func([]byte) []byte { return nil },
		"trailing byte": func(b []byte) []byte { return append(b, 0) },
		"id 32":         func(b []byte) []byte { b[0] = 32; return b },
	})
	if (wire.ClusterRemove{ID: 31}).Validate() != nil || (wire.ClusterRemove{ID: 32}).Validate() == nil {
		t.Error("Validate does not bound the id to 0..=31")
	}
}

func TestGolden_ClusterReplace9003(t *testing.T) {
	vec := loadGolden(t, "cluster_replace_body.hex")
	want := wire.ClusterReplace{OldID: 1, Spec: wire.NodeSpec{ID: 5, ReplicaAddress: "h5:8070", IP: "192.0.2.7", TCPPort: 8090}}
	var got wire.ClusterReplace
	if err := got.Decode(vec); err != nil {
		t.Fatalf("ClusterReplace.Decode: %v", err)
	}
	if got != want {
		t.Errorf("decoded %+v\nwant    %+v", got, want)
	}
	assertBytes(t, "ClusterReplace.AppendTo", want.AppendTo(nil), vec)
	if want.Code() != 9003 {
		t.Errorf("code %d", want.Code())
	}
	ms := nodeSpecMutations(1)
	ms["old_id 32"] = func(b []byte) []byte { b[0] = 32; return b }
	ms["only old_id"] = func(b []byte) []byte { return b[:1] }
	assertRefused(t, "ClusterReplace", vec, new(wire.ClusterReplace).Decode, ms)
}

func TestGolden_ClusterStatus9004Request(t *testing.T) {
	var x wire.ClusterStatus
	if err := x.Decode(nil); err != nil {
		t.Fatalf("empty body: %v", err)
	}
	if b := x.AppendTo(nil); len(b) != 0 {
		t.Errorf("encodes %x, want nothing", b)
	}
	if err := x.Decode([]byte{0}); !errors.Is(err, wire.ErrMalformed) {
		t.Errorf("a 1-byte body: %v, want malformed", err)
	}
	if x.Code() != 9004 {
		t.Errorf("code %d", x.Code())
	}
}

// statusReplyWant is the value of cluster_status_reply.hex.
func statusReplyWant() wire.ClusterStatusReply {
	return wire.ClusterStatusReply{
		Epoch: 1, Voters: 0b0101, Learners: 0b1000, Target: 0b1101, EpochOp: 1042, View: 0x01000002,
		Nodes: []wire.ClusterStatusNode{
			{Spec: wire.NodeSpec{ID: 0, ReplicaAddress: "n0:8070", Name: "node-0", IP: "n0",
				TCPPort: 8090, QUICPort: 8080, HTTPPort: 3000, WebSocketPort: 8092},
				Role: wire.MemberVoter, Primary: true, Status: wire.MemberLive, Commit: 1050},
			{Spec: wire.NodeSpec{ID: 2, ReplicaAddress: "n2:8070", Name: "node-2", IP: "n2", TCPPort: 8090},
				Role: wire.MemberVoter, Status: wire.MemberUnreachable},
			{Spec: wire.NodeSpec{ID: 3, ReplicaAddress: "n3:8070", TCPPort: 8090, QUICPort: 8080, WebSocketPort: 8092},
				Role: wire.MemberLearner, Status: wire.MemberLive, Commit: 1049},
		},
	}
}

// The optional placement section (issue 23).
func TestGolden_ClusterStatusReplyPlaced(t *testing.T) {
	vec := loadGolden(t, "cluster_status_reply_placed.hex")
	want := wire.ClusterStatusReply{Voters: 0b11111, Target: 0b11111, View: 7, Partitions: []wire.ClusterStatusPartition{
		{Stream: 1, Topic: 2, Partition: 0, Replicas: 0b111, Voters: 0b111, Preferred: 1, Primary: 1},
		{Stream: 1, Topic: 2, Partition: 1, Replicas: 0b11100, Voters: 0b1110, Preferred: 4, Primary: wire.NoPrimary},
	}}
	var got wire.ClusterStatusReply
	if err := got.Decode(vec); err != nil {
		t.Fatalf("ClusterStatusReply.Decode: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("decoded %+v\nwant    %+v", got, want)
	}
	assertBytes(t, "ClusterStatusReply.AppendTo", want.AppendTo(nil), vec)
	if got.Partitions[0].Moving() || !got.Partitions[1].Moving() {
		t.Errorf("moving: %v %v, want false true", got.Partitions[0].Moving(), got.Partitions[1].Moving())
	}
	assertRefused(t, "ClusterStatusReply", vec, new(wire.ClusterStatusReply).Decode, mutations{
		"partitions_count 0":        func(b []byte) []byte { b[0x20] = 0; return b },
		"partitions_count 3":        func(b []byte) []byte { b[0x20] = 3; return b },
		"a trailing byte":           func(b []byte) []byte { return append(b, 0) },
		"an entry cut short":        func(b []byte) []byte { return b[:len(b)-1] },
		"empty replica set":         func(b []byte) []byte { b[0x30] = 0; return b },
		"preferred outside its set": func(b []byte) []byte { b[0x38] = 3; return b },
		"primary 32":                func(b []byte) []byte { b[0x39] = 32; return b },
	})
}

func TestGolden_ClusterStatusReply(t *testing.T) {
	vec := loadGolden(t, "cluster_status_reply.hex")
	want := statusReplyWant()
	var got wire.ClusterStatusReply
	if err := got.Decode(vec); err != nil {
		t.Fatalf("ClusterStatusReply.Decode: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("decoded %+v\nwant    %+v", got, want)
	}
	if err := want.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	assertBytes(t, "ClusterStatusReply.AppendTo", want.AppendTo(nil), vec)
	if n, ok := got.Node(3); !ok || n.Role != wire.MemberLearner {
		t.Errorf("Node(3) = %+v, %v", n, ok)
	}
	if _, ok := got.Node(1); ok {
		t.Error("Node(1) found in a reply without it")
	}
	for v, s := range map[interface{ String() string }]string{
		wire.MemberVoter: "voter", wire.MemberLearner: "learner", wire.MemberRemoved: "removed", wire.MemberRole(3): "role(3)",
		wire.MemberLive: "live", wire.MemberUnreachable: "unreachable", wire.MemberStatus(2): "status(2)",
	} {
		if v.String() != s {
			t.Errorf("%#v.String() = %q, want %q", v, v.String(), s)
		}
	}
	assertRefused(t, "ClusterStatusReply", vec, new(wire.ClusterStatusReply).Decode, mutations{
		"trailing byte":         func(b []byte) []byte { return append(b, 0) },
		"truncated":             func(b []byte) []byte { return b[:len(b)-1] },
		"header only":           func(b []byte) []byte { return b[:0x1c] },
		"nodes_count 4":         func(b []byte) []byte { b[0x1c] = 4; return b },
		"nodes_count 33":        func(b []byte) []byte { b[0x1c] = 33; return b },
		"nodes_count 2^32-1":    func(b []byte) []byte { copy(b[0x1c:], []byte{0xff, 0xff, 0xff, 0xff}); return b },
		"node id 32":            func(b []byte) []byte { b[0x20] = 32; return b },
		"role 3":                func(b []byte) []byte { b[0x21] = 3; return b },
		"primary 2":             func(b []byte) []byte { b[0x22] = 2; return b },
		"status 2":              func(b []byte) []byte { b[0x23] = 2; return b },
		"ids not ascending":     func(b []byte) []byte { b[0x46] = 0; return b },
		"ids descending":        func(b []byte) []byte { b[0x6c] = 1; return b },
		"empty replica_address": func(b []byte) []byte { return append(b[:0x2c:0x2c], append([]byte{0}, b[0x34:]...)...) },
		"ip past the end":       func(b []byte) []byte { b[0x81] = 9; return b },
	})

	// An empty roster (a node that knows none, e.g. before its first
	// roster) is 32 bytes with nodes_count 0.
	empty := hx(t, `01 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
		00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00`)
	if err := got.Decode(empty); err != nil || got.Epoch != 1 || got.Nodes != nil {
		t.Errorf("empty roster: %+v, %v", got, err)
	}
	// A failed decode leaves the receiver as it was.
	before := got
	if err := got.Decode(vec[:len(vec)-1]); err == nil || !reflect.DeepEqual(got, before) {
		t.Errorf("failed decode changed the receiver: %+v, %v", got, err)
	}
}

func TestClusterValidate(t *testing.T) {
	ok := wire.NodeSpec{ID: 31, ReplicaAddress: "h:1"}
	if err := ok.Validate(); err != nil {
		t.Fatalf("%+v: %v", ok, err)
	}
	for name, s := range map[string]wire.NodeSpec{
		"id 32":                 {ID: 32, ReplicaAddress: "h:1"},
		"empty replica_address": {ID: 1},
		"long replica_address":  {ID: 1, ReplicaAddress: strings.Repeat("a", 256)},
		"long name":             {ID: 1, ReplicaAddress: "h:1", Name: strings.Repeat("a", 256)},
		"ip not UTF-8":          {ID: 1, ReplicaAddress: "h:1", IP: "\xff"},
	} {
		if err := s.Validate(); !errors.Is(err, wire.ErrMalformed) {
			t.Errorf("%s: Validate = %v", name, err)
		}
		if err := (wire.ClusterAdd{Spec: s}).Validate(); err == nil {
			t.Errorf("%s: ClusterAdd validates", name)
		}
		if err := (wire.ClusterReplace{OldID: 0, Spec: s}).Validate(); err == nil {
			t.Errorf("%s: ClusterReplace validates", name)
		}
	}
	if (wire.ClusterReplace{OldID: 32, Spec: ok}).Validate() == nil {
		t.Error("ClusterReplace old_id 32 validates")
	}
	r := statusReplyWant()
	r.Nodes[1].Spec.ID = 0
	if r.Validate() == nil {
		t.Error("a reply with duplicate ids validates")
	}
	r = statusReplyWant()
	r.Nodes[2].Role = 3
	if r.Validate() == nil {
		t.Error("a reply with role 3 validates")
	}
}

// The admin commands are catalogue entries that travel as NonReplicated
// and are not accepted before login; the two error codes are named.
func TestClusterCatalogueAndCodes(t *testing.T) {
	for _, c := range []struct {
		code wire.CommandCode
		name string
	}{{9001, "ClusterAdd"}, {9002, "ClusterRemove"}, {9003, "ClusterReplace"}, {9004, "ClusterStatus"}} {
		info, ok := c.code.Info()
		if !ok || info.Name != c.name || info.Operation != wire.OpNonReplicated || info.PreLogin || info.ReplyOp != 0 {
			t.Errorf("%d: %+v, %v", c.code, info, ok)
		}
		if c.code.Replicated() {
			t.Errorf("%d reports replicated", c.code)
		}
		r, ok := wire.NewRequest(c.code)
		if !ok || r.Code() != c.code {
			t.Errorf("NewRequest(%d) = %T, %v", c.code, r, ok)
		}
	}
	for _, c := range []struct {
		code          wire.ErrorCode
		name, meaning string
	}{
		{wire.ErrNodeRemoved, "NodeRemoved", "node removed from the cluster"},
		{wire.ErrReconfigurationInProgress, "ReconfigurationInProgress", "a cluster change is in progress"},
	} {
		if !c.code.Known() || c.code.Name() != c.name || c.code.Meaning() != c.meaning {
			t.Errorf("%d: known %v name %q meaning %q", uint32(c.code), c.code.Known(), c.code.Name(), c.code.Meaning())
		}
		found := false
		for _, k := range wire.ErrorCodes() {
			found = found || k == c.code
		}
		if !found {
			t.Errorf("ErrorCodes() lacks %d", uint32(c.code))
		}
	}
	if wire.ErrNodeRemoved != 20001 || wire.ErrReconfigurationInProgress != 20002 {
		t.Error("codes moved")
	}
	if got := wire.ErrReconfigurationInProgress.Error(); got != "ReconfigurationInProgress (20002)" {
		t.Errorf("Error() = %q", got)
	}
}
