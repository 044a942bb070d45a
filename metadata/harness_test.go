package metadata

import (
	"encoding/binary"
	"encoding/hex"
	"strings"
	"testing"

	"iggynode/wire"
)

// testHash is a syntactically valid PHC string for tests that never log in
// (hashing costs ~50 ms, so only the login tests hash for real).
const testHash = "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$Hk4AxBB9JGlrN5ynQ1J7yd7NM3I7cn0/KfHUTTu/+BA"

// hx decodes hex written with spaces and newlines.
func hx(s string) []byte {
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		panic(err)
	}
	return b
}

// harness plays the shell of a single replica: it admits requests, builds
// prepare frames the way the VSR core would, and applies them in op order.
type harness struct {
	t       *testing.T
	s       *State
	client  wire.U128
	op      uint64
	ts      uint64
	request uint64
	env     AdmitEnv
	log     [][]byte // every committed prepare frame
	sealed  map[uint64]uint64
	// inFlight is what AdmitEnv.InFlight answers per group.
	inFlight    map[GroupRef][]uint32
	randomCalls int
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	s := New(Config{})
	if err := s.Bootstrap("iggy", testHash); err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, s: s, client: wire.U128{Lo: 0xC11E, Hi: 0x7}, ts: 1_700_000_000_000_000, sealed: map[uint64]uint64{},
		inFlight: map[GroupRef][]uint32{}}
	h.env = AdmitEnv{
		// Deterministic and different per call: the first call writes
		// 0, 1, 2, ...; call n adds 7n to every byte.
		Random: func(b []byte) {
			for i := range b {
				b[i] = byte(i + 7*h.randomCalls)
			}
			h.randomCalls++
		},
		SealedUpTo: func(p PartitionRef, count uint32) (uint64, bool, error) {
			off, ok := h.sealed[p.Group]
			return off, ok, nil
		},
		InFlight: func(g GroupRef) []uint32 { return h.inFlight[g] },
	}
	h.register(RootUserID)
	return h
}

// frame builds a prepare frame as vsr.Replica.prepare would (5.4).
func (h *harness) frame(op wire.Operation, body []byte, user uint32, request uint64) []byte {
	h.op++
	h.ts += 1000
	f := make([]byte, wire.HeaderSize+len(body))
	copy(f[wire.HeaderSize:], body)
	ph := wire.PrepareHeader{
		Cluster: wire.U128{Lo: 0xC1}, Size: uint32(len(f)), View: 3, Replica: 1, Command: wire.CmdPrepare,
		Client: h.client, RequestChecksum: wire.RequestChecksum(body), Op: h.op, Commit: h.op - 1,
		Timestamp: h.ts, Request: request, Operation: op, Group: wire.MetadataGroup, UserID: user,
	}
	ph.Encode(wire.HeaderOf(f))
	return f
}

// commitInternal commits a server-originated prepare with the header
// fields of replica-plane.md 13.1 (user 0, checksum 0).
func (h *harness) commitInternal(in Internal) Result {
	h.t.Helper()
	saved := h.client
	h.client = in.Client
	f := h.frame(in.Operation, in.Body, RootUserID, in.Request)
	h.client = saved
	ph := wire.HeaderOf(f).Prepare()
	ph.RequestChecksum = wire.U128{}
	ph.Encode(wire.HeaderOf(f))
	return h.commit(f)
}

// as runs fn with the harness acting for client.
func (h *harness) as(client wire.U128, fn func()) {
	saved := h.client
	h.client = client
	defer func() { h.client = saved }()
	fn()
}

func (h *harness) commit(frame []byte) Result {
	h.log = append(h.log, frame)
	return h.s.Apply(frame)
}

func (h *harness) register(user uint32) Result {
	h.request = 0
	p, d := h.s.Admit(Request{Client: h.client, UserID: user, Operation: wire.OpRegister}, h.env)
	if d != nil {
		h.t.Fatalf("register denied: %+v", d)
	}
	return h.commit(h.frame(p.Operation, p.Body, user, 0))
}

// submit admits and commits one client request of user.
func (h *harness) submit(user uint32, op wire.Operation, body []byte) (Result, *Denial) {
	h.t.Helper()
	h.request++
	p, d := h.s.Admit(Request{Client: h.client, UserID: user, Operation: op, Body: body}, h.env)
	if d != nil {
		return Result{}, d
	}
	return h.commit(h.frame(p.Operation, p.Body, user, h.request)), nil
}

// ok submits as root and fails the test unless it commits successfully.
func (h *harness) ok(op wire.Operation, body []byte) Result {
	h.t.Helper()
	res, d := h.submit(RootUserID, op, body)
	if d != nil {
		h.t.Fatalf("%v denied: %+v", op, d)
	}
	if res.Code != 0 {
		h.t.Fatalf("%v rejected: %v", op, res.Code)
	}
	return res
}

// rejected submits as user and expects committed rejection code.
func (h *harness) rejected(user uint32, op wire.Operation, body []byte, code wire.ErrorCode) Result {
	h.t.Helper()
	res, d := h.submit(user, op, body)
	if d != nil {
		h.t.Fatalf("%v denied before commit: %+v, want R %d", op, d, code)
	}
	if res.Code != code {
		h.t.Fatalf("%v committed %d, want R %d", op, res.Code, code)
	}
	want := hx("01000000 00000000")
	want = binary.LittleEndian.AppendUint32(want, uint32(code))
	if body := res.Reply[wire.HeaderSize:]; string(body) != string(want) {
		h.t.Fatalf("%v reply body % x, want % x", op, body, want)
	}
	return res
}

// denied submits as user and expects a pre-consensus status code.
func (h *harness) denied(user uint32, op wire.Operation, body []byte, code wire.ErrorCode) {
	h.t.Helper()
	_, d := h.submit(user, op, body)
	if d == nil || d.Status != code {
		h.t.Fatalf("%v: denial %+v, want S %d", op, d, code)
	}
}

func (h *harness) createStream(name string) uint32 {
	h.t.Helper()
	res := h.ok(wire.OpCreateStream, wire.CreateStream{Name: name}.AppendTo(nil))
	return binary.LittleEndian.Uint32(res.Reply[wire.HeaderSize+4:])
}

func (h *harness) createTopic(stream wire.Identifier, name string, partitions uint32, opts wire.Options) uint32 {
	h.t.Helper()
	res := h.ok(wire.OpCreateTopic, wire.CreateTopic{Stream: stream, PartitionsCount: partitions, Name: name, Options: opts}.AppendTo(nil))
	return binary.LittleEndian.Uint32(res.Reply[wire.HeaderSize+4:])
}

// payload returns the typed payload of a successful result-framed reply.
func payload(t *testing.T, res Result) []byte {
	t.Helper()
	p, err := wire.SplitResult(res.Reply[wire.HeaderSize:])
	if err != nil {
		t.Fatalf("reply: %v", err)
	}
	return p
}

func u64le(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }
func u32le(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }

// tlv writes one option pair by hand: [02][key_len u32][key][kind][len u32][value].
func tlv(key string, kind wire.HeaderKind, value []byte) []byte {
	b := append([]byte{2}, u32le(uint32(len(key)))...)
	b = append(b, key...)
	b = append(b, byte(kind))
	b = append(b, u32le(uint32(len(value)))...)
	return append(b, value...)
}

func opt(key string, kind wire.HeaderKind, value []byte) wire.KeyValue {
	return wire.KeyValue{Key: key, Kind: kind, Value: value}
}

func str(key, v string) wire.KeyValue { return opt(key, wire.KindString, []byte(v)) }
