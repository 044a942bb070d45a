package metadata

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/zeebo/xxh3"

	"iggynode/wire"
)

// sealH64 appends an H64 trailer (replica-plane.md 2.6).
func sealH64(b []byte) []byte {
	return binary.LittleEndian.AppendUint64(append([]byte(nil), b...), xxh3.Hash(b))
}

// replyOf builds a reply frame with the fields the client table reads.
func replyOf(client wire.U128, request uint64, checksum wire.U128, commit uint64, op wire.Operation, body []byte) []byte {
	f := make([]byte, wire.HeaderSize+len(body))
	rh := wire.ReplyHeader{Size: uint32(len(f)), Client: client, RequestChecksum: checksum, Op: commit,
		Commit: commit, Request: request, Operation: op}
	rh.Encode(wire.HeaderOf(f))
	copy(f[wire.HeaderSize:], body)
	return f
}

var (
	clientA = wire.U128{Lo: 0xA}
	clientB = wire.U128{Lo: 0xB}
	clientC = wire.U128{Lo: 0xC}
	clientD = wire.U128{Lo: 0xD}
	sumX    = wire.U128{Lo: 0x1111}
	sumY    = wire.U128{Lo: 0x2222}
	sum5    = wire.U128{Lo: 0x5555}
)

// replica-plane.md 5.12.2: every verdict of check_request.
func TestClientTableVerdicts(t *testing.T) {
	tab := NewClientTable(8)
	tab.CommitRegister(clientA, 3, replyOf(clientA, 0, wire.U128{}, 10, wire.OpRegister, nil))
	for _, r := range []struct {
		req uint64
		sum wire.U128
	}{{1, wire.U128{}}, {2, wire.U128{}}, {3, wire.U128{}}, {4, sumY}, {5, sum5}, {7, sumX}} {
		tab.CommitReply(clientA, replyOf(clientA, r.req, r.sum, 10+r.req, wire.OpCreateStream, []byte{0, 0, 0, 0}))
	}
	// The register reply and request 1 fell out of the five-entry ring.
	cases := []struct {
		name    string
		client  wire.U128
		epoch   uint64
		request uint64
		sum     wire.U128
		want    Verdict
		replied uint64 // request number of the cached reply, for Duplicate
	}{
		{"no entry", clientB, 10, 1, wire.U128{}, VerdictNoSession, 0},
		{"older epoch", clientA, 9, 8, wire.U128{}, VerdictFenced, 0},
		{"newer epoch", clientA, 11, 8, wire.U128{}, VerdictEpochAhead, 0},
		{"next request", clientA, 10, 8, sumY, VerdictNew, 0},
		{"gap", clientA, 10, 100, wire.U128{}, VerdictNew, 0},
		{"watermark, other body", clientA, 10, 7, sumY, VerdictChecksumMismatch, 0},
		{"watermark, same body", clientA, 10, 7, sumX, VerdictDuplicate, 7},
		{"watermark, unstamped", clientA, 10, 7, wire.U128{}, VerdictDuplicate, 7},
		{"cached, other body", clientA, 10, 5, sumY, VerdictChecksumMismatch, 0},
		{"cached, unstamped", clientA, 10, 5, wire.U128{}, VerdictDuplicate, 5},
		{"cached unstamped reply", clientA, 10, 3, sumY, VerdictDuplicate, 3},
		{"not cached", clientA, 10, 6, wire.U128{}, VerdictAlreadyApplied, 0},
		{"aged out", clientA, 10, 1, wire.U128{}, VerdictAlreadyApplied, 0},
	}
	for _, c := range cases {
		v, reply := tab.Check(c.client, c.epoch, c.request, c.sum)
		if v != c.want {
			t.Errorf("%s: %v, want %v", c.name, v, c.want)
			continue
		}
		if v == VerdictDuplicate && wire.HeaderOf(reply).Reply().Request != c.replied {
			t.Errorf("%s: replayed request %d", c.name, wire.HeaderOf(reply).Reply().Request)
		}
		if (v == VerdictDuplicate) != (reply != nil) {
			t.Errorf("%s: reply %v with verdict %v", c.name, reply != nil, v)
		}
	}
}

// replica-plane.md 5.12.3 rules 1-3.
func TestClientTableMutations(t *testing.T) {
	tab := NewClientTable(8)
	tab.CommitRegister(clientA, 1, replyOf(clientA, 0, wire.U128{}, 4, wire.OpRegister, nil))
	e, _ := tab.Lookup(clientA)
	if e.Epoch != 4 || e.UserID != 1 || e.Watermark != 0 || !e.WatermarkChecksum.IsZero() || e.LatestCommit != 4 || len(e.ring) != 1 {
		t.Fatalf("new entry %+v", e)
	}
	tab.CommitReply(clientA, replyOf(clientA, 2, sumX, 6, wire.OpCreateStream, nil))
	if e.Watermark != 2 || e.WatermarkChecksum != sumX || e.LatestCommit != 6 || len(e.ring) != 2 {
		t.Fatalf("after reply %+v", e)
	}
	// Same request number again: replaced in place, no push.
	tab.CommitReply(clientA, replyOf(clientA, 2, sumY, 7, wire.OpCreateStream, []byte{1}))
	if len(e.ring) != 2 || e.WatermarkChecksum != sumY || e.ring[1].commit != 7 {
		t.Fatalf("replace in place %+v", e)
	}
	// Regressions are skipped.
	tab.CommitReply(clientA, replyOf(clientA, 9, sumX, 5, wire.OpCreateStream, nil)) // commit < latest
	tab.CommitReply(clientA, replyOf(clientA, 1, sumX, 9, wire.OpCreateStream, nil)) // request < watermark
	tab.CommitReply(clientB, replyOf(clientB, 1, sumX, 9, wire.OpCreateStream, nil)) // no entry
	if e.Watermark != 2 || e.LatestCommit != 7 || len(e.ring) != 2 || tab.Len() != 1 {
		t.Fatalf("regression applied %+v", e)
	}
	// The ring keeps the last five.
	for r := uint64(3); r <= 8; r++ {
		tab.CommitReply(clientA, replyOf(clientA, r, wire.U128{}, 10+r, wire.OpCreateStream, nil))
	}
	if len(e.ring) != 5 || e.ring[0].request != 4 || e.ring[4].request != 8 {
		t.Fatalf("ring %v", e.Replies())
	}
	// Rebind: epoch and user change, watermark kept, register reply replaced.
	tab.CommitRegister(clientA, 2, replyOf(clientA, 0, wire.U128{}, 30, wire.OpRegister, nil))
	tab.CommitRegister(clientA, 2, replyOf(clientA, 0, wire.U128{}, 31, wire.OpRegister, nil))
	if e.Epoch != 31 || e.UserID != 2 || e.Watermark != 8 || len(e.ring) != 5 || e.ring[4].request != 0 || e.ring[3].request != 8 {
		t.Fatalf("rebind %+v ring %v", e, e.ring)
	}
	if n := countRequest(e, 0); n != 1 {
		t.Fatalf("%d register replies in the ring", n)
	}
	if !tab.OwnedByOther(clientA, 1) || tab.OwnedByOther(clientA, 2) || tab.OwnedByOther(clientB, 1) {
		t.Fatal("ownership gate")
	}
	if got := tab.Logout(clientA); got != 31 || tab.Len() != 0 {
		t.Fatalf("logout returned %d, len %d", got, tab.Len())
	}
	if got := tab.Logout(clientA); got != 0 {
		t.Fatal("second logout found an entry")
	}
}

func countRequest(e *ClientEntry, request uint64) int {
	n := 0
	for _, r := range e.ring {
		if r.request == request {
			n++
		}
	}
	return n
}

// replica-plane.md 5.12.3 rule 4: a full table evicts the smallest
// latest_commit, the lowest slot on ties, and the newcomer takes that slot.
func TestClientTableCapacityEviction(t *testing.T) {
	tab := NewClientTable(3)
	tab.CommitRegister(clientA, 0, replyOf(clientA, 0, wire.U128{}, 1, wire.OpRegister, nil))
	tab.CommitRegister(clientB, 0, replyOf(clientB, 0, wire.U128{}, 2, wire.OpRegister, nil))
	tab.CommitRegister(clientC, 0, replyOf(clientC, 0, wire.U128{}, 3, wire.OpRegister, nil))
	tab.CommitReply(clientA, replyOf(clientA, 1, wire.U128{}, 4, wire.OpCreateStream, nil))
	tab.CommitRegister(clientD, 0, replyOf(clientD, 0, wire.U128{}, 5, wire.OpRegister, nil))
	if _, ok := tab.Lookup(clientB); ok || tab.Len() != 3 {
		t.Fatal("B (oldest latest_commit) not evicted")
	}
	if tab.index[clientD] != 1 {
		t.Fatalf("D in slot %d, want B's slot 1", tab.index[clientD])
	}
	if v, _ := tab.Check(clientB, 2, 1, wire.U128{}); v != VerdictNoSession {
		t.Fatalf("evicted client verdict %v", v)
	}
	// Tie on latest_commit: the lowest slot goes.
	tab.CommitReply(clientA, replyOf(clientA, 2, wire.U128{}, 9, wire.OpCreateStream, nil))
	tab.CommitReply(clientC, replyOf(clientC, 1, wire.U128{}, 9, wire.OpCreateStream, nil))
	tab.CommitReply(clientD, replyOf(clientD, 1, wire.U128{}, 10, wire.OpCreateStream, nil))
	tab.CommitRegister(clientB, 0, replyOf(clientB, 0, wire.U128{}, 11, wire.OpRegister, nil))
	if _, ok := tab.Lookup(clientA); ok {
		t.Fatal("tie: slot 0 (A) should be evicted before slot 2 (C)")
	}
	if tab.index[clientB] != 0 {
		t.Fatalf("B in slot %d, want 0", tab.index[clientB])
	}
}

// client-plane.md 5.3: preflight answers, including the replayed token
// create (R 51) and the aged-out request (R 59); a retry of a committed
// request gets the first reply's bytes.
func TestPreflight(t *testing.T) {
	h := newHarness(t)
	body := wire.CreateStream{Name: "s"}.AppendTo(nil)
	first := h.ok(wire.OpCreateStream, body)
	epoch := uint64(1)
	pf := h.s.Preflight(h.client, epoch, h.request, wire.RequestChecksum(body))
	if pf.Verdict != VerdictDuplicate || !bytes.Equal(pf.Reply, first.Reply) || pf.Code != 0 {
		t.Fatalf("replay %+v", pf)
	}
	if pf := h.s.Preflight(h.client, epoch, h.request, sumY); pf.Verdict != VerdictChecksumMismatch {
		t.Fatalf("reused number: %v", pf.Verdict)
	}
	if pf := h.s.Preflight(h.client, epoch, h.request+1, sumY); pf.Verdict != VerdictNew {
		t.Fatalf("next: %v", pf.Verdict)
	}
	if pf := h.s.Preflight(wire.U128{Lo: 1}, epoch, 1, sumY); pf.Verdict != VerdictNoSession {
		t.Fatalf("stranger: %v", pf.Verdict)
	}
	for i := 0; i < 5; i++ {
		h.ok(wire.OpCreateStream, wire.CreateStream{Name: string(rune('a' + i))}.AppendTo(nil))
	}
	if pf := h.s.Preflight(h.client, epoch, 1, wire.U128{}); pf.Verdict != VerdictAlreadyApplied || pf.Code != wire.ErrRequestAlreadyApplied {
		t.Fatalf("aged out %+v", pf)
	}
	tab := h.s.Clients()
	tab.CommitReply(h.client, replyOf(h.client, 50, wire.U128{}, 1000, wire.OpCreatePersonalAccessToken, hx("00000000 02 61 62")))
	if pf := h.s.Preflight(h.client, epoch, 50, wire.U128{}); pf.Code != wire.ErrPersonalAccessTokenAlreadyExists || pf.Reply != nil {
		t.Fatalf("token replay %+v", pf)
	}
	rej := replyOf(h.client, 51, wire.U128{}, 1001, wire.OpCreatePersonalAccessToken, hx("01000000 00000000 33000000"))
	tab.CommitReply(h.client, rej)
	if pf := h.s.Preflight(h.client, epoch, 51, wire.U128{}); pf.Code != 0 || !bytes.Equal(pf.Reply, rej) {
		t.Fatalf("token rejection replay %+v", pf)
	}
}

// replica-plane.md 7.8.2: ICT2 round trip and decode rules.
func TestICT2(t *testing.T) {
	tab := NewClientTable(4)
	tab.CommitRegister(clientA, 1, replyOf(clientA, 0, wire.U128{}, 1, wire.OpRegister, nil))
	tab.CommitRegister(clientB, 2, replyOf(clientB, 0, sumX, 2, wire.OpRegister, []byte{0, 0, 0, 0}))
	for r := uint64(1); r <= 6; r++ {
		tab.CommitReply(clientA, replyOf(clientA, r, sumY, 2+r, wire.OpCreateStream, []byte{0, 0, 0, 0}))
	}
	tab.Logout(clientB)
	tab.CommitRegister(clientC, 3, replyOf(clientC, 0, wire.U128{}, 20, wire.OpRegister, nil))
	full := tab.EncodeICT2(true)
	got, err := DecodeICT2(full, 2)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.EncodeICT2(true), full) || got.Capacity() != 2 || got.Len() != 2 {
		t.Fatalf("round trip: capacity %d len %d", got.Capacity(), got.Len())
	}
	e, _ := got.Lookup(clientA)
	if len(e.ring) != 5 || e.LatestCommit != 8 || e.Watermark != 6 || e.WatermarkChecksum != sumY {
		t.Fatalf("decoded entry %+v", e)
	}
	// A checkpoint keeps the latest reply only.
	latest, err := DecodeICT2(tab.EncodeICT2(false), 8)
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := latest.Lookup(clientA); len(e.ring) != 1 || e.ring[0].request != 6 || latest.Capacity() != 8 {
		t.Fatalf("latest only: %+v", e)
	}
	reseal := func(b []byte) []byte { return sealH64(b[:len(b)-8]) }
	// Layout by hand: magic, count, then the first entry's fixed fields.
	if !bytes.Equal(full[:8], hx("49435432 02000000")) || !bytes.Equal(full[8:24], hx("0a000000000000000000000000000000")) {
		t.Fatalf("layout % x", full[:24])
	}
	ringLenAt := 8 + 16 + 8 + 4 + 8 + 16
	bad := map[string][]byte{
		"trailer":   append(append([]byte(nil), full[:len(full)-1]...), full[len(full)-1]^1),
		"magic":     reseal(append([]byte("ICT3"), full[4:]...)),
		"ring 0":    reseal(patch(full, ringLenAt, 0)),
		"ring 6":    reseal(patch(full, ringLenAt, 6)),
		"trailing":  sealH64(append(append([]byte(nil), full[:len(full)-8]...), 0)),
		"truncated": sealH64(full[:len(full)-20]),
		"short":     []byte{1, 2, 3},
	}
	dup := NewClientTable(4)
	dup.CommitRegister(clientA, 1, replyOf(clientA, 0, wire.U128{}, 1, wire.OpRegister, nil))
	one := dup.EncodeICT2(true)
	body := one[8 : len(one)-8]
	twice := append(append(hx("49435432 02000000"), body...), body...)
	bad["duplicate"] = sealH64(twice)
	notReply := append([]byte(nil), one...)
	notReply[8+16+8+4+8+16+1+4+60] = 5 // command byte of the cached frame
	bad["not a reply"] = reseal(notReply)
	for name, b := range bad {
		if _, err := DecodeICT2(b, 4); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}

func patch(b []byte, at int, v byte) []byte {
	out := append([]byte(nil), b...)
	out[at] = v
	return out
}
