package httpplane

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"iggynode/config"
)

func testIssuer(t *testing.T, now func() time.Time, tune ...func(*config.HTTPJWT)) *issuer {
	t.Helper()
	cfg := config.Default().HTTP.JWT
	cfg.EncodingSecret = "test-secret-test-secret-test-secret"
	for _, f := range tune {
		f(&cfg)
	}
	i, _, err := newIssuer(cfg, t.TempDir(), "", now)
	if err != nil {
		t.Fatal(err)
	}
	return i
}

// sign makes a token with arbitrary claims under the test secret.
func sign(t *testing.T, method jwt.SigningMethod, key string, c jwt.MapClaims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(method, c).SignedString([]byte(key))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// http.md 3.5 and the failure table of 3.9: what verifies and what not.
func TestVerificationTable(t *testing.T) {
	base := time.Unix(1_800_000_000, 0)
	now := base
	i := testIssuer(t, func() time.Time { return now })
	const key = "test-secret-test-secret-test-secret"
	claims := func(mod func(jwt.MapClaims)) jwt.MapClaims {
		c := jwt.MapClaims{"jti": "j", "iss": "iggy.apache.org", "aud": "iggy.apache.org", "sub": "7",
			"iat": base.Unix(), "exp": base.Add(time.Hour).Unix(), "nbf": base.Unix()}
		if mod != nil {
			mod(c)
		}
		return c
	}
	cases := []struct {
		name  string
		token string
		at    time.Time
		ok    bool
	}{
		{"fresh", sign(t, jwt.SigningMethodHS256, key, claims(nil)), base, true},
		{"aud as an array", sign(t, jwt.SigningMethodHS256, key, claims(func(c jwt.MapClaims) { c["aud"] = []string{"other", "iggy.apache.org"} })), base, true},
		{"expired within the skew", sign(t, jwt.SigningMethodHS256, key, claims(nil)), base.Add(time.Hour + 4*time.Second), true},
		{"expired beyond the skew", sign(t, jwt.SigningMethodHS256, key, claims(nil)), base.Add(time.Hour + 6*time.Second), false},
		{"not yet valid beyond the skew", sign(t, jwt.SigningMethodHS256, key, claims(func(c jwt.MapClaims) { c["nbf"] = base.Add(time.Minute).Unix() })), base, false},
		{"not yet valid within the skew", sign(t, jwt.SigningMethodHS256, key, claims(func(c jwt.MapClaims) { c["nbf"] = base.Add(3 * time.Second).Unix() })), base, true},
		{"no exp", sign(t, jwt.SigningMethodHS256, key, claims(func(c jwt.MapClaims) { delete(c, "exp") })), base, false},
		{"wrong alg", sign(t, jwt.SigningMethodHS384, key, claims(nil)), base, false},
		{"wrong key", sign(t, jwt.SigningMethodHS256, key+"x", claims(nil)), base, false},
		{"wrong issuer", sign(t, jwt.SigningMethodHS256, key, claims(func(c jwt.MapClaims) { c["iss"] = "evil" })), base, false},
		{"wrong audience", sign(t, jwt.SigningMethodHS256, key, claims(func(c jwt.MapClaims) { c["aud"] = "evil" })), base, false},
		{"non-numeric sub", sign(t, jwt.SigningMethodHS256, key, claims(func(c jwt.MapClaims) { c["sub"] = "root" })), base, false},
		{"sub beyond u32", sign(t, jwt.SigningMethodHS256, key, claims(func(c jwt.MapClaims) { c["sub"] = "4294967296" })), base, false},
		{"alg none", "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0." + strings.Split(sign(t, jwt.SigningMethodHS256, key, claims(nil)), ".")[1] + ".", base, false},
		{"garbage", "garbage", base, false},
	}
	for _, tc := range cases {
		now = tc.at
		tok, err := i.check(tc.token)
		if tc.ok && (err != nil || tok.userID != 7) {
			t.Errorf("%s: %v (user %d)", tc.name, err, tok.userID)
		}
		if !tc.ok && err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
}

// 3.7.3 (our choice): a revoked token is refused until its expiry; the
// list is bounded and pruned at expiry.
func TestRevocation(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	i := testIssuer(t, func() time.Time { return now }, func(c *config.HTTPJWT) { c.MaxRevokedTokens = 2 })
	var toks []string
	var ids []token
	for range 3 {
		s, _, err := i.issue(1)
		if err != nil {
			t.Fatal(err)
		}
		tok, err := i.check(s)
		if err != nil {
			t.Fatal(err)
		}
		toks, ids = append(toks, s), append(ids, tok)
		now = now.Add(time.Second) // later tokens expire later
	}
	i.revoke(ids[0])
	if _, err := i.check(toks[0]); err == nil {
		t.Fatal("a revoked token verified")
	}
	i.revoke(ids[1])
	i.revoke(ids[2]) // full: the entry closest to its expiry (token 0) makes room
	if n := i.revoked.len(); n != 2 {
		t.Fatalf("%d revoked, want the bound 2", n)
	}
	for k, want := range []bool{true, false, false} {
		if _, err := i.check(toks[k]); (err == nil) != want {
			t.Errorf("token %d verifies: %v, want %v", k, err == nil, want)
		}
	}
	now = now.Add(2 * time.Hour)
	i.revoke(token{jti: "later", exp: now.Add(time.Hour)})
	if n := i.revoked.len(); n != 1 {
		t.Fatalf("%d revoked after the others expired, want 1 (pruned)", n)
	}
}

// 1.3.1: with no secret the generated key is persisted 0600 and reused,
// so tokens survive a restart; the cluster-derived key is shared.
func TestKeyMaterial(t *testing.T) {
	dir := t.TempDir()
	cfg := config.Default().HTTP.JWT
	a, clusterKey, err := newIssuer(cfg, dir, "", nil)
	if err != nil || clusterKey {
		t.Fatal(err, clusterKey)
	}
	st, err := os.Stat(filepath.Join(dir, keyFile))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", err, st)
	}
	tok, _, _ := a.issue(3)
	b, _, err := newIssuer(cfg, dir, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.check(tok); err != nil {
		t.Fatalf("token from before the restart: %v", err)
	}
	other, _, _ := newIssuer(cfg, t.TempDir(), "", nil)
	if _, err := other.check(tok); err == nil {
		t.Fatal("another node's generated key verified the token")
	}
	secret := strings.Repeat("s", 32)
	x, shared, _ := newIssuer(cfg, t.TempDir(), secret, nil)
	y, _, _ := newIssuer(cfg, t.TempDir(), secret, nil)
	tok, _, _ = x.issue(4)
	if _, err := y.check(tok); err != nil || !shared {
		t.Fatalf("cluster-derived key: %v shared=%v", err, shared)
	}
}
