package wire

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// Cluster admin requests and reply (docs/reconfiguration.md, "Admin
// surface"). The vectors are written by hand from the doc's tables; they
// join reqAllVectors (so TestRequestVectors checks encode, decode, every
// truncation and the rejected trailing byte, and FuzzRequest seeds from
// them). The whole-layout golden vectors are in cluster_golden_test.go.

func reqClusterVectors() []reqVector {
	return []reqVector{
		{"ClusterAdd/minimal", &ClusterAdd{Spec: NodeSpec{ID: 0, ReplicaAddress: "a"}},
			`00  01 61  00  00  00 00 00 00 00 00 00 00`, -1, tailRejected},
		{"ClusterAdd/id 31, every field", &ClusterAdd{Spec: NodeSpec{ID: 31, ReplicaAddress: "r:1", Name: "n", IP: "i",
			TCPPort: 1, QUICPort: 0x0203, HTTPPort: 0xffff, WebSocketPort: 0x0100}},
			`1f  03 72 3a 31  01 6e  01 69  01 00  03 02  ff ff  00 01`, -1, tailRejected},
		{"ClusterRemove", &ClusterRemove{ID: 7}, `07`, -1, tailRejected},
		{"ClusterReplace/move in place", &ClusterReplace{OldID: 2, Spec: NodeSpec{ID: 2, ReplicaAddress: "b:9"}},
			`02  02  03 62 3a 39  00  00  00 00 00 00 00 00 00 00`, -1, tailRejected},
		{"ClusterStatus", &ClusterStatus{}, ``, -1, tailRejected},
	}
}

func TestClusterRequestMalformed(t *testing.T) {
	for _, c := range []struct {
		name string
		mk   Body
		hex  string
	}{
		{"ClusterAdd empty", &ClusterAdd{}, ``},
		{"ClusterAdd id 32", &ClusterAdd{}, `20  01 61  00  00  00 00 00 00 00 00 00 00`},
		{"ClusterAdd empty replica_address", &ClusterAdd{}, `00  00  00  00  00 00 00 00 00 00 00 00`},
		{"ClusterAdd name not UTF-8", &ClusterAdd{}, `00  01 61  01 ff  00  00 00 00 00 00 00 00 00`},
		{"ClusterAdd ports short", &ClusterAdd{}, `00  01 61  00  00  00 00 00 00 00 00 00`},
		{"ClusterRemove empty", &ClusterRemove{}, ``},
		{"ClusterRemove id 32", &ClusterRemove{}, `20`},
		{"ClusterRemove two bytes", &ClusterRemove{}, `01 02`},
		{"ClusterReplace old_id 40", &ClusterReplace{}, `28  02  03 62 3a 39  00  00  00 00 00 00 00 00 00 00`},
		{"ClusterReplace new id 32", &ClusterReplace{}, `02  20  03 62 3a 39  00  00  00 00 00 00 00 00 00 00`},
		{"ClusterStatus one byte", &ClusterStatus{}, `00`},
	} {
		t.Run(c.name, func(t *testing.T) {
			reqAssertMalformed(t, c.name, c.mk.Decode(reqHex(t, c.hex)))
		})
	}
}

// clusterFuzzBody is the shared oracle of the cluster fuzz targets: no
// panic; a failure is ErrMalformed and leaves the receiver untouched; a
// decoded value validates and re-encodes to exactly the input (every
// layout is canonical: strict, fixed-width, no flags).
func clusterFuzzBody(t *testing.T, fresh func() Body, body []byte) {
	v := fresh()
	if err := v.Decode(body); err != nil {
		if !errors.Is(err, ErrMalformed) {
			t.Fatalf("%T: error %v is not ErrMalformed", v, err)
		}
		if !reflect.DeepEqual(v, fresh()) {
			t.Fatalf("%T: failed decode changed the receiver to %+v", v, v)
		}
		return
	}
	if val, ok := v.(interface{ Validate() error }); ok {
		if err := val.Validate(); err != nil {
			t.Fatalf("%T: decoded %+v does not validate: %v", v, v, err)
		}
	}
	if enc := v.AppendTo(nil); !bytes.Equal(enc, body) {
		t.Fatalf("%T: re-encode differs\n got %x\nwant %x", v, enc, body)
	}
}

func clusterFuzzSeeds(f *testing.F, seeds ...string) {
	f.Add([]byte{})
	for _, s := range seeds {
		f.Add(reqHex(f, s))
	}
}

const (
	clusterSpecSeed   = `03 0d 31 30 2e 30 2e 30 2e 34 3a 38 30 37 30 06 6e 6f 64 65 2d 33 00 9a 1f 90 1f b8 0b 9c 1f`
	clusterStatusSeed = `01 00 00 00 05 00 00 00 08 00 00 00 0d 00 00 00 12 04 00 00 00 00 00 00 02 00 00 01
		02 00 00 00
		00 00 01 00 1a 04 00 00 00 00 00 00 07 6e 30 3a 38 30 37 30 02 6e 30 00 9a 1f 00 00 00 00 00 00
		03 01 00 01 19 04 00 00 00 00 00 00 01 68 00 00 00 00 00 00 00 00 00 00`
)

func FuzzNodeSpec(f *testing.F) {
	clusterFuzzSeeds(f, clusterSpecSeed, `00 01 61 00 00 00 00 00 00 00 00 00 00`)
	f.Fuzz(func(t *testing.T, body []byte) { clusterFuzzBody(t, func() Body { return new(NodeSpec) }, body) })
}

func FuzzClusterAdd(f *testing.F) {
	clusterFuzzSeeds(f, clusterSpecSeed, `1f 03 72 3a 31 01 6e 01 69 01 00 03 02 ff ff 00 01`)
	f.Fuzz(func(t *testing.T, body []byte) { clusterFuzzBody(t, func() Body { return new(ClusterAdd) }, body) })
}

func FuzzClusterRemove(f *testing.F) {
	clusterFuzzSeeds(f, `02`, `1f`, `20`)
	f.Fuzz(func(t *testing.T, body []byte) { clusterFuzzBody(t, func() Body { return new(ClusterRemove) }, body) })
}

func FuzzClusterReplace(f *testing.F) {
	clusterFuzzSeeds(f, `01 `+clusterSpecSeed, `02 02 03 62 3a 39 00 00 00 00 00 00 00 00 00 00`)
	f.Fuzz(func(t *testing.T, body []byte) { clusterFuzzBody(t, func() Body { return new(ClusterReplace) }, body) })
}

func FuzzClusterStatus(f *testing.F) {
	clusterFuzzSeeds(f, `00`)
	f.Fuzz(func(t *testing.T, body []byte) { clusterFuzzBody(t, func() Body { return new(ClusterStatus) }, body) })
}

func FuzzClusterStatusReply(f *testing.F) {
	clusterFuzzSeeds(f, clusterStatusSeed, `00 00 00 00 01 00 00 00 00 00 00 00 01 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00`)
	f.Fuzz(func(t *testing.T, body []byte) {
		clusterFuzzBody(t, func() Body { return new(ClusterStatusReply) }, body)
	})
}
