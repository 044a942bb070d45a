package e2e

import (
	"encoding/base64"
	"testing"
	"time"

	"iggynode/client"
	"iggynode/config"
	"iggynode/wire"
)

// startTokenNode runs a node on an injected clock with a small token cap.
// The segment cleaner's ticker (which also runs the token cleaner) is off,
// so only Node.Maintain cleans and an expired token stays listed until then.
func startTokenNode(t *testing.T, clock *fakeClock, maxTokens uint32) *testNode {
	t.Helper()
	clock.us.Store(uint64(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC).UnixMicro()))
	n := startNodeWith(t, t.TempDir(), func(c *config.Config) {
		c.DataMaintenance.Messages.CleanerEnabled = false
		c.PersonalAccessToken.MaxTokensPerUser = maxTokens
		c.PersonalAccessToken.Cleaner.Enabled = true
		c.PersonalAccessToken.Cleaner.Interval = config.Duration(24 * time.Hour)
	}, clock.now)
	t.Cleanup(func() { _ = n.Close() })
	return n
}

func tokenNames(ts wire.PersonalAccessTokens) []string {
	var out []string
	for _, x := range ts {
		out = append(out, x.Name)
	}
	return out
}

// Personal access tokens through the SDK (server-behaviour.md 3;
// client-plane.md 8.3): the raw token once, login with it, the list
// without secrets, duplicate names, deletes, expiry on the injected clock
// and the cleaner run by Node.Maintain.
func TestPersonalAccessTokens(t *testing.T) {
	clock := &fakeClock{}
	n := startTokenNode(t, clock, 100)
	root := connect(t, n)
	ctx := ctxT(t)
	if _, err := root.CreateUser(ctx, "tess", "tess-pw", wire.UserActive, nil); err != nil {
		t.Fatal(err)
	}
	tess := connectAs(t, n, "tess", "tess-pw")

	raw, err := tess.CreatePersonalAccessToken(ctx, "ci", client.NeverExpire)
	if err != nil {
		t.Fatal(err)
	}
	// 3.2: 50 random bytes, standard base64 with padding: 68 characters.
	if dec, derr := base64.StdEncoding.DecodeString(raw); len(raw) != 68 || raw[67] != '=' || derr != nil || len(dec) != 50 {
		t.Fatalf("raw token %q (%d chars): want 68 base64 characters of 50 bytes", raw, len(raw))
	}
	other, err := tess.CreatePersonalAccessToken(ctx, "another", 0)
	if err != nil || other == raw {
		t.Fatalf("second token: %v (tokens must differ)", err)
	}
	const hour = uint64(time.Hour / time.Microsecond)
	beforeCreate := clock.us.Load()
	short, err := tess.CreatePersonalAccessToken(ctx, "short", hour)
	afterCreate := clock.us.Load()
	if err != nil {
		t.Fatal(err)
	}

	// The list names the caller's tokens, sorted, with absolute expiry
	// (0 = never) and no secret (3.4.3).
	list, err := tess.GetPersonalAccessTokens(ctx)
	if err != nil || len(list) != 3 {
		t.Fatalf("list: %+v %v", list, err)
	}
	byName := map[string]uint64{}
	for _, x := range list {
		byName[x.Name] = x.ExpiryAt
	}
	if at := byName["short"]; at <= beforeCreate+hour-1 || at > afterCreate+hour || byName["ci"] != 0 || byName["another"] != 0 {
		t.Fatalf("expiries %v: short should expire one hour after its commit (%d..%d)", byName, beforeCreate+hour, afterCreate+hour)
	}
	if names := tokenNames(list); names[0] != "another" || names[1] != "ci" || names[2] != "short" {
		t.Fatalf("list order %v, want by name", names)
	}
	if rootList, err := root.GetPersonalAccessTokens(ctx); err != nil || len(rootList) != 0 {
		t.Fatalf("root sees %v: tokens are per user", tokenNames(rootList))
	}

	// Login with a token: through Options and through LoginWithToken.
	for _, tok := range []string{raw, other, short} {
		c, err := dialToken(t, n, tok)
		if err != nil {
			t.Fatalf("token login: %v", err)
		}
		if _, uid := c.Session(); uid != 1 {
			t.Fatalf("token logged in as user %d, want tess (1)", uid)
		}
	}
	o := clientOptions(t, n)
	o.RequestTimeout = 10 * time.Second
	c, err := client.New(o) // no credentials: LoginWithToken dials and logs in
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if resp, err := c.LoginWithToken(ctx, raw); err != nil || resp.UserID != 1 {
		t.Fatalf("LoginWithToken: %+v %v", resp, err)
	}
	if me, err := c.GetMe(ctx); err != nil || me.UserID != 1 {
		t.Fatalf("GetMe after token login: %+v %v", me, err)
	}
	_, err = dialToken(t, n, raw[:67]+"A")
	mustEvict(t, err, wire.EvictInvalidToken, "unknown token")

	// Duplicate names commit 51; deleting an unknown name commits 20.
	_, err = tess.CreatePersonalAccessToken(ctx, "ci", 0)
	mustReject(t, err, wire.ErrPersonalAccessTokenAlreadyExists, "duplicate token name")
	if _, err := root.CreatePersonalAccessToken(ctx, "ci", 0); err != nil {
		t.Fatalf("names are per user: %v", err)
	}
	mustReject(t, tess.DeletePersonalAccessToken(ctx, "nope"), wire.ErrResourceNotFound, "delete an unknown token")
	if err := tess.DeletePersonalAccessToken(ctx, "another"); err != nil {
		t.Fatal(err)
	}
	_, err = dialToken(t, n, other)
	mustEvict(t, err, wire.EvictInvalidToken, "login with a deleted token")

	// Expiry (3.4.2): refused as soon as now >= expiry_at, before the
	// cleaner ran; the cleaner then deletes it and only it.
	clock.advance(59 * time.Minute)
	if _, err := dialToken(t, n, short); err != nil {
		t.Fatalf("token 1 minute before expiry: %v", err)
	}
	clock.advance(2 * time.Minute)
	_, err = dialToken(t, n, short)
	mustEvict(t, err, wire.EvictInvalidToken, "expired token")
	if list, err := tess.GetPersonalAccessTokens(ctx); err != nil || len(list) != 2 {
		t.Fatalf("before the cleaner the expired token is still listed: %v %v", tokenNames(list), err)
	}
	n.Maintain()
	waitFor(t, "the cleaner deletes the expired token", func() bool {
		list, err := tess.GetPersonalAccessTokens(ctx)
		return err == nil && len(list) == 1 && list[0].Name == "ci"
	})
	if _, err := dialToken(t, n, raw); err != nil {
		t.Fatalf("the never-expiring token after the cleaner: %v", err)
	}
	// An expiry whose sum overflows u64 is not in the future (8.3.2).
	_, err = tess.CreatePersonalAccessToken(ctx, "wrap", ^uint64(0)-1)
	mustReject(t, err, wire.ErrInvalidPersonalAccessTokenExpiry, "overflowing expiry")

	// Tokens of an inactive owner: eviction UserInactive (3.8).
	if err := root.UpdateUser(ctx, wire.Named("tess"), nil, statusPtr(wire.UserInactive)); err != nil {
		t.Fatal(err)
	}
	_, err = dialToken(t, n, raw)
	mustEvict(t, err, wire.EvictUserInactive, "token of an inactive user")
	// Deleting the user deletes its tokens (3.10); a new user in the same
	// slot and name inherits none.
	if err := root.DeleteUser(ctx, wire.Named("tess")); err != nil {
		t.Fatal(err)
	}
	_, err = dialToken(t, n, raw)
	mustEvict(t, err, wire.EvictInvalidToken, "token of a deleted user")
	if u, err := root.CreateUser(ctx, "tess", "tess-pw", wire.UserActive, nil); err != nil || u.ID != 1 {
		t.Fatalf("recreate tess: %+v %v", u, err)
	}
	tess2 := connectAs(t, n, "tess", "tess-pw")
	if list, err := tess2.GetPersonalAccessTokens(ctx); err != nil || len(list) != 0 {
		t.Fatalf("the new tess inherited tokens %v (%v)", tokenNames(list), err)
	}
	_, err = dialToken(t, n, raw)
	mustEvict(t, err, wire.EvictInvalidToken, "old token against the recreated user")
}

// 3.5: at most max_tokens_per_user tokens, checked before the commit (header
// status 52) and before the duplicate-name check; expired tokens count
// until the cleaner deletes them; deleting is never blocked.
func TestPersonalAccessTokenLimit(t *testing.T) {

	clock := &fakeClock{}
	n := startTokenNode(t, clock, 3)
	root := connect(t, n)
	ctx := ctxT(t)
	if _, err := root.CreateUser(ctx, "lim", "lim-pw", wire.UserActive, nil); err != nil {
		t.Fatal(err)
	}
	lim := connectAs(t, n, "lim", "lim-pw")
	for _, name := range []string{"a", "b"} {
		if _, err := lim.CreatePersonalAccessToken(ctx, name, 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := lim.CreatePersonalAccessToken(ctx, "soon", uint64(time.Minute/time.Microsecond)); err != nil {
		t.Fatal(err)
	}
	_, err := lim.CreatePersonalAccessToken(ctx, "d", 0)
	mustDeny(t, err, wire.ErrPersonalAccessTokensLimitReached, "fourth token")
	_, err = lim.CreatePersonalAccessToken(ctx, "a", 0)
	mustDeny(t, err, wire.ErrPersonalAccessTokensLimitReached, "duplicate name at the limit")
	// The cap is per user.
	if _, err := root.CreatePersonalAccessToken(ctx, "d", 0); err != nil {
		t.Fatalf("another user's tokens do not count: %v", err)
	}
	clock.advance(2 * time.Minute)
	_, err = lim.CreatePersonalAccessToken(ctx, "d", 0)
	mustDeny(t, err, wire.ErrPersonalAccessTokensLimitReached, "an expired, uncleaned token still counts")
	n.Maintain()
	waitFor(t, "the cleaner frees a slot", func() bool {
		list, err := lim.GetPersonalAccessTokens(ctx)
		return err == nil && len(list) == 2
	})
	if _, err := lim.CreatePersonalAccessToken(ctx, "d", 0); err != nil {
		t.Fatalf("a slot freed by the cleaner: %v", err)
	}
	if err := lim.DeletePersonalAccessToken(ctx, "a"); err != nil {
		t.Fatalf("delete at the limit: %v", err)
	}
	if _, err := lim.CreatePersonalAccessToken(ctx, "e", 0); err != nil {
		t.Fatalf("a slot freed by a delete: %v", err)
	}
	list, err := lim.GetPersonalAccessTokens(ctx)
	if err != nil || len(list) != 3 || list[0].Name != "b" || list[1].Name != "d" || list[2].Name != "e" {
		t.Fatalf("final list %v %v", tokenNames(list), err)
	}
}

// waitFor polls cond every 10 ms for up to 10 s: effects committed by the
// node itself (cleaner deletes, disconnect logouts) have no reply to wait on.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting: %s", what)
}
