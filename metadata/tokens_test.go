package metadata

import (
	"bytes"
	"encoding/base64"
	"math"
	"strings"
	"testing"

	"iggynode/wire"
)

// createToken admits and commits a CreatePersonalAccessToken as user and
// returns the raw token (the test fails unless it commits successfully).
func (h *harness) createToken(user uint32, name string, expiry uint64) string {
	h.t.Helper()
	body := wire.CreatePersonalAccessToken{Name: name, Expiry: expiry}.AppendTo(nil)
	p, d := h.s.Admit(Request{Client: h.client, UserID: user, Operation: wire.OpCreatePersonalAccessToken, Body: body}, h.env)
	if d != nil {
		h.t.Fatalf("token %q denied: %+v", name, d)
	}
	h.request++
	if res := h.commit(h.frame(p.Operation, p.Body, user, h.request)); res.Code != 0 {
		h.t.Fatalf("token %q committed %d", name, res.Code)
	}
	return p.RawToken
}

// server-behaviour.md 3.3; BLAKE3 reference vectors.
func TestTokenHash(t *testing.T) {
	for in, want := range map[string]string{
		"":    "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262",
		"abc": "6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85",
	} {
		if got := TokenHash(in); got != want {
			t.Errorf("TokenHash(%q) = %s, want %s", in, got, want)
		}
	}
}

// client-plane.md 8.3.2, 7.13, 5.3; replica-plane.md 13.1: the prepare
// carries [user_id][name][expiry][hash] and never the raw token; the
// committed reply is the empty success on every replica; the admitting
// node answers with RawToken; a replay gets R 51.
func TestCreateToken(t *testing.T) {
	h := newHarness(t)
	alice := addUser(h, 1, "alice", &wire.Permissions{}) // no flags needed
	body := hx("02 6369  0500000000000000")              // name "ci", expiry 5 µs
	p, d := h.s.Admit(Request{Client: h.client, UserID: alice, Operation: wire.OpCreatePersonalAccessToken, Body: body}, h.env)
	if d != nil {
		t.Fatal(d)
	}
	minted := make([]byte, 50)
	for i := range minted {
		minted[i] = byte(i)
	}
	raw := base64.StdEncoding.EncodeToString(minted)
	if p.RawToken != raw || len(raw) != 68 || !strings.HasSuffix(raw, "=") {
		t.Fatalf("raw token %q", p.RawToken)
	}
	want := append(hx("01000000 02 6369 0500000000000000"), TokenHash(raw)...)
	if p.Operation != wire.OpCreatePersonalAccessToken || !bytes.Equal(p.Body, want) {
		t.Fatalf("prepare\n got % x\nwant % x", p.Body, want)
	}
	if bytes.Contains(p.Body, []byte(raw)) {
		t.Fatal("raw token in the log")
	}
	h.request++
	res := h.commit(h.frame(p.Operation, p.Body, alice, h.request))
	if res.Code != 0 || !bytes.Equal(res.Reply[wire.HeaderSize:], hx("00000000")) {
		t.Fatalf("committed reply % x", res.Reply[wire.HeaderSize:])
	}
	wire1 := res.WireReply(p.RawToken)
	wantBody := append(hx("00000000 44"), raw...)
	if !bytes.Equal(wire1[wire.HeaderSize:], wantBody) || wire.HeaderOf(wire1).Size() != uint32(len(wire1)) ||
		!bytes.Equal(wire1[:48], res.Reply[:48]) || !bytes.Equal(wire1[52:wire.HeaderSize], res.Reply[52:wire.HeaderSize]) {
		t.Fatalf("wire reply % x", wire1[wire.HeaderSize:])
	}
	if !bytes.Equal(res.WireReply(""), res.Reply) {
		t.Fatal("a node without the raw token must send the committed reply")
	}
	// Another replica applying the same prepare gets the same bytes.
	other := New(Config{})
	other.Bootstrap("iggy", testHash)
	other.addUser(&User{ID: 1, Username: "alice", Status: wire.UserActive, PasswordHash: testHash, Permissions: &wire.Permissions{}})
	if r2 := other.Apply(h.log[len(h.log)-1]); !bytes.Equal(r2.Reply, res.Reply) {
		t.Fatal("replicas disagree on the committed reply")
	}
	pf := h.s.Preflight(h.client, 1, h.request, wire.U128{}) // unstamped retry
	if pf.Verdict != VerdictDuplicate || pf.Code != wire.ErrPersonalAccessTokenAlreadyExists {
		t.Fatalf("replay %+v", pf)
	}
	tok := h.s.users[1].Tokens["ci"]
	if tok == nil || tok.ExpiryAt != h.ts+5 || tok.Hash != TokenHash(raw) {
		t.Fatalf("stored %+v at %d", tok, h.ts)
	}
	// A rejection carries no token even on the admitting node.
	rej := h.rejected(alice, wire.OpCreatePersonalAccessToken, body, wire.ErrPersonalAccessTokenAlreadyExists)
	if !bytes.Equal(rej.WireReply(raw), rej.Reply) {
		t.Fatal("token substituted into a rejection")
	}
}

// server-behaviour.md 3.4, 3.5, 3.6; client-plane.md 8.3.2: expiry rules
// against the commit timestamp, the per-user cap (S 52 before the
// duplicate check), duplicates R 51.
func TestTokenLimitsAndExpiry(t *testing.T) {
	h := newHarness(t)
	h.s.cfg.MaxTokensPerUser = 3
	cases := []struct {
		name   string
		expiry uint64
		code   wire.ErrorCode
		at     func(ts uint64) uint64
	}{
		{"never0", 0, 0, func(uint64) uint64 { return 0 }},
		{"nevermax", math.MaxUint64, 0, func(uint64) uint64 { return 0 }},
		{"overflow", math.MaxUint64 - 1, wire.ErrInvalidPersonalAccessTokenExpiry, nil},
		{"wrap", math.MaxUint64 - 1_000, wire.ErrInvalidPersonalAccessTokenExpiry, nil},
		{"gosdk", 7 << 32, 0, func(ts uint64) uint64 { return ts + 7<<32 }},
	}
	for _, c := range cases {
		body := wire.CreatePersonalAccessToken{Name: c.name, Expiry: c.expiry}.AppendTo(nil)
		if c.code != 0 {
			h.rejected(0, wire.OpCreatePersonalAccessToken, body, c.code)
			continue
		}
		h.ok(wire.OpCreatePersonalAccessToken, body)
		if got := h.s.users[0].Tokens[c.name].ExpiryAt; got != c.at(h.ts) {
			t.Errorf("%s: expiry_at %d, want %d", c.name, got, c.at(h.ts))
		}
	}
	// At the cap: 52 in the status channel, duplicate name or not.
	h.denied(0, wire.OpCreatePersonalAccessToken, wire.CreatePersonalAccessToken{Name: "x"}.AppendTo(nil), wire.ErrPersonalAccessTokensLimitReached)
	h.denied(0, wire.OpCreatePersonalAccessToken, wire.CreatePersonalAccessToken{Name: "never0"}.AppendTo(nil), wire.ErrPersonalAccessTokensLimitReached)
	h.ok(wire.OpDeletePersonalAccessToken, wire.DeletePersonalAccessToken{Name: "never0"}.AppendTo(nil))
	h.rejected(0, wire.OpCreatePersonalAccessToken, wire.CreatePersonalAccessToken{Name: "nevermax"}.AppendTo(nil),
		wire.ErrPersonalAccessTokenAlreadyExists)
	h.denied(0, wire.OpCreatePersonalAccessToken, hx("00 0000000000000000"), wire.ErrInvalidCommand)
	h.denied(0, wire.OpCreatePersonalAccessToken, hx("02 6162 00000000"), wire.ErrInvalidCommand)
	if New(Config{}).cfg.MaxTokensPerUser != 100 {
		t.Fatal("default max_tokens_per_user")
	}
	// A session whose user is gone cannot create or delete (R 41).
	h.rejected(42, wire.OpCreatePersonalAccessToken, wire.CreatePersonalAccessToken{Name: "z"}.AppendTo(nil), wire.ErrUnauthorized)
	h.rejected(42, wire.OpDeletePersonalAccessToken, wire.DeletePersonalAccessToken{Name: "z"}.AppendTo(nil), wire.ErrUnauthorized)
}

// client-plane.md 8.3.1, 8.3.3, 7.13: delete (prepare body, R 20) and the
// list (sorted by name, empty body when none).
func TestDeleteAndListTokens(t *testing.T) {
	h := newHarness(t)
	bob := addUser(h, 1, "bob", nil) // no permission set at all: tokens need none
	if status, p, ok := h.s.Read(bob, wire.CodeGetPersonalAccessTokens, nil); !ok || status != 0 || p != nil {
		t.Fatalf("no tokens: %d % x", status, p)
	}
	h.createToken(bob, "zeta", 0)
	h.createToken(bob, "alpha", 1_000_000)
	alphaAt := h.ts + 1_000_000
	h.createToken(0, "root-only", 0)
	_, p, _ := h.s.Read(bob, wire.CodeGetPersonalAccessTokens, nil)
	want := append(hx("05 616c706861"), u64le(alphaAt)...)
	want = append(want, hx("04 7a657461 0000000000000000")...)
	if !bytes.Equal(p, want) {
		t.Fatalf("list\n got % x\nwant % x", p, want)
	}
	body := hx("04 7a657461")
	pr, d := h.s.Admit(Request{Client: h.client, UserID: bob, Operation: wire.OpDeletePersonalAccessToken, Body: body}, h.env)
	if d != nil || !bytes.Equal(pr.Body, hx("01000000 04 7a657461 00")) {
		t.Fatalf("delete prepare % x", pr.Body)
	}
	h.submitAs(bob, wire.OpDeletePersonalAccessToken, body, 0)
	h.rejected(bob, wire.OpDeletePersonalAccessToken, body, wire.ErrResourceNotFound)
	// Tokens are per user: bob cannot delete root's.
	h.rejected(bob, wire.OpDeletePersonalAccessToken, hx("09 726f6f742d6f6e6c79"), wire.ErrResourceNotFound)
	h.denied(bob, wire.OpDeletePersonalAccessToken, hx("05 6162"), wire.ErrInvalidCommand)
	if _, p, _ := h.s.Read(bob, wire.CodeGetPersonalAccessTokens, nil); !bytes.Equal(p, want[:len(want)-13]) {
		t.Fatalf("after delete % x", p)
	}
}

// server-behaviour.md 3.4.2, 3.9: ExpiredTokens with an injected clock and
// the cleaner's only_if_expired delete, which spares a token re-created
// under the same name.
func TestTokenCleaner(t *testing.T) {
	h := newHarness(t)
	alice := addUser(h, 1, "alice", nil)
	h.createToken(alice, "b", 10_000)
	bAt := h.ts + 10_000
	h.createToken(alice, "a", 20_000)
	h.createToken(0, "r", 5_000)
	rAt := h.ts + 5_000
	h.createToken(0, "forever", 0)
	if got := h.s.ExpiredTokens(rAt - 1); len(got) != 0 {
		t.Fatalf("expired too early: %v", got)
	}
	got := h.s.ExpiredTokens(bAt)
	if len(got) != 2 || got[0] != (TokenRef{UserID: 0, Name: "r"}) || got[1] != (TokenRef{UserID: 1, Name: "b"}) {
		t.Fatalf("expired at %d: %v", bAt, got)
	}
	in := CleanupToken(got[1])
	if in.Client != (wire.U128{}) || in.Request != 0 || in.Operation != wire.OpDeletePersonalAccessToken ||
		!bytes.Equal(in.Body, hx("01000000 01 62 01")) {
		t.Fatalf("cleanup prepare %+v", in)
	}
	// Committed before the expiry: nothing happens (R 20).
	h.ts = bAt - 2_000
	if res := h.commitInternal(in); res.Code != wire.ErrResourceNotFound || h.s.users[1].Tokens["b"] == nil {
		t.Fatalf("early cleanup %d", res.Code)
	}
	h.ts = bAt
	if res := h.commitInternal(in); res.Code != 0 || h.s.users[1].Tokens["b"] != nil {
		t.Fatalf("cleanup %d", res.Code)
	}
	if res := h.commitInternal(in); res.Code != wire.ErrResourceNotFound {
		t.Fatalf("second cleanup %d", res.Code)
	}
	if res := h.commitInternal(CleanupToken(TokenRef{UserID: 77, Name: "x"})); res.Code != wire.ErrResourceNotFound {
		t.Fatalf("cleanup of a missing user %d", res.Code)
	}
}

// client-plane.md 5.2 step 4; server-behaviour.md 3.8: token logins.
func TestLoginWithToken(t *testing.T) {
	h := newHarness(t)
	alice := addUser(h, 1, "alice", nil)
	raw := h.createToken(alice, "t", 1_000)
	at := h.ts + 1_000
	h.env.Random = func(b []byte) {
		for i := range b {
			b[i] = byte(200 - i)
		}
	}
	forever := h.createToken(alice, "f", 0)
	cases := []struct {
		name   string
		token  string
		now    uint64
		id     uint32
		reason wire.EvictionReason
	}{
		{"valid", raw, at - 1, 1, 0},
		{"expired at expiry_at", raw, at, 0, wire.EvictInvalidToken},
		{"unknown", raw[:67] + "A", at - 1, 0, wire.EvictInvalidToken},
		{"empty", "", 0, 0, wire.EvictInvalidToken},
		{"never expires", forever, math.MaxUint64, 1, 0},
	}
	for _, c := range cases {
		if id, reason := h.s.LoginWithToken(c.token, c.now); id != c.id || reason != c.reason {
			t.Errorf("%s: %d %v, want %d %v", c.name, id, reason, c.id, c.reason)
		}
	}
	h.s.users[1].Status = wire.UserInactive
	if _, reason := h.s.LoginWithToken(forever, 0); reason != wire.EvictUserInactive {
		t.Fatalf("inactive owner: %v", reason)
	}
	// An expired token of an inactive owner is still InvalidToken.
	if _, reason := h.s.LoginWithToken(raw, at); reason != wire.EvictInvalidToken {
		t.Fatalf("expired, inactive: %v", reason)
	}
	h.ok(wire.OpDeleteUser, wire.DeleteUser{User: wire.ID(1)}.AppendTo(nil))
	if _, reason := h.s.LoginWithToken(forever, 0); reason != wire.EvictInvalidToken {
		t.Fatalf("owner gone: %v", reason)
	}
}
