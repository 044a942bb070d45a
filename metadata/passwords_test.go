package metadata

import (
	"strings"
	"testing"

	"iggynode/wire"
)

// server-behaviour.md 2.2.3: Argon2id PHC strings with m=19456, t=2, p=1,
// a 16-byte salt and a 32-byte output.
func TestHashPassword(t *testing.T) {
	salt := []byte("0123456789abcdef")
	h := HashPassword("secret", salt)
	prefix := "$argon2id$v=19$m=19456,t=2,p=1$MDEyMzQ1Njc4OWFiY2RlZg$"
	if !strings.HasPrefix(h, prefix) || len(h) != len(prefix)+43 {
		t.Fatalf("PHC string %q", h)
	}
	if h != HashPassword("secret", salt) {
		t.Fatal("not deterministic for a given salt")
	}
	if !VerifyPassword(h, "secret") || VerifyPassword(h, "Secret") || VerifyPassword(h, "") {
		t.Fatal("verification")
	}
	for _, bad := range []string{
		"", "secret", "$argon2d$v=19$m=19456,t=2,p=1$MDEyMzQ1Njc4OWFiY2RlZg$AAAA",
		strings.Replace(h, "v=19", "v=16", 1),
		strings.Replace(h, "m=19456", "m=999999999", 1),
		strings.Replace(h, "t=2", "t=0", 1),
		strings.Replace(h, ",p=1", ",p=01", 1),
		h + "$",
		h[:len(h)-1] + "!",
	} {
		if VerifyPassword(bad, "secret") {
			t.Errorf("%q verified", bad)
		}
	}
	if _, ok := parsePHC(dummyHash); !ok {
		t.Fatal("the dummy hash must be verifiable, or unknown users answer faster")
	}
}

// client-plane.md 5.2 step 3, 11.4; server-behaviour.md 2.2.2: every
// failure is InvalidCredentials, inactive users included.
func TestLogin(t *testing.T) {
	s := New(Config{})
	if err := s.Bootstrap("iggy", HashPassword("iggy", []byte("saltsaltsaltsalt"))); err != nil {
		t.Fatal(err)
	}
	if s.Bootstrap("again", testHash) != ErrNotFresh {
		t.Fatal("second bootstrap")
	}
	s.addUser(&User{ID: 1, Username: "sleepy", Status: wire.UserInactive, PasswordHash: HashPassword("pass", []byte("saltsaltsaltsalt"))})
	cases := []struct {
		user, pass string
		id         uint32
		reason     wire.EvictionReason
	}{
		{"iggy", "iggy", 0, 0},
		{"iggy", "wrong", 0, wire.EvictInvalidCredentials},
		{"Iggy", "iggy", 0, wire.EvictInvalidCredentials},
		{"nobody", "iggy", 0, wire.EvictInvalidCredentials},
		{"sleepy", "pass", 0, wire.EvictInvalidCredentials},
		{"ig", "iggy", 0, wire.EvictInvalidCredentials},
		{strings.Repeat("u", 51), "iggy", 0, wire.EvictInvalidCredentials},
		{"iggy", "ig", 0, wire.EvictInvalidCredentials},
		{"iggy", strings.Repeat("p", 101), 0, wire.EvictInvalidCredentials},
	}
	for _, c := range cases {
		id, reason := s.Login(c.user, c.pass)
		if id != c.id || reason != c.reason {
			t.Errorf("Login(%q, %q) = %d, %v; want %d, %v", c.user, c.pass, id, reason, c.id, c.reason)
		}
	}
}

// The node verifies a password off the metadata actor: Prepare reads the
// hash, Verify runs anywhere, Confirm re-reads committed state, so a user
// changed meanwhile never binds on a stale check (issue 17).
func TestPasswordLoginConfirmsAgainstCurrentState(t *testing.T) {
	matchAll := func(string, string) bool { return true }
	fresh := func() *State {
		s := New(Config{})
		s.addUser(&User{ID: 1, Username: "alice", Status: wire.UserActive, PasswordHash: "hash-1"})
		return s
	}
	var verified []string
	spy := func(hash, _ string) bool { verified = append(verified, hash); return false }

	s := fresh()
	c := s.PreparePasswordLogin("alice", "secret")
	if id, reason, stale := s.ConfirmPasswordLogin(c, c.Verify(matchAll)); id != 1 || reason != 0 || stale {
		t.Fatalf("unchanged user: %d, %v, stale %v", id, reason, stale)
	}
	s.users[1].PasswordHash = "hash-2" // ChangePassword committed meanwhile
	if _, reason, stale := s.ConfirmPasswordLogin(c, true); reason != wire.EvictInvalidCredentials || !stale {
		t.Fatalf("new hash: %v, stale %v; want a fresh check", reason, stale)
	}
	s.users[1].Status = wire.UserInactive
	c = s.PreparePasswordLogin("alice", "secret")
	if _, reason, stale := s.ConfirmPasswordLogin(c, true); reason != wire.EvictInvalidCredentials || stale {
		t.Fatalf("inactive: %v, stale %v", reason, stale)
	}

	s = fresh()
	c = s.PreparePasswordLogin("alice", "secret")
	s.removeUser(s.users[1])
	if _, reason, stale := s.ConfirmPasswordLogin(c, true); reason != wire.EvictInvalidCredentials || stale {
		t.Fatalf("deleted: %v, stale %v", reason, stale)
	}
	s.addUser(&User{ID: 2, Username: "alice", Status: wire.UserActive, PasswordHash: "hash-1"})
	if _, reason, stale := s.ConfirmPasswordLogin(c, true); reason != wire.EvictInvalidCredentials || !stale {
		t.Fatalf("name now another user's: %v, stale %v; want a fresh check", reason, stale)
	}

	// Unknown users are verified against the dummy hash (timing), and
	// lengths out of bounds are not verified at all.
	c = s.PreparePasswordLogin("nobody", "secret")
	if !c.NeedsHash() || c.Verify(spy) || len(verified) != 1 || verified[0] != dummyHash {
		t.Fatalf("unknown user verified against %q", verified)
	}
	if _, reason, _ := s.ConfirmPasswordLogin(c, true); reason != wire.EvictInvalidCredentials {
		t.Fatalf("unknown user confirmed: %v", reason)
	}
	c = s.PreparePasswordLogin("alice", "pw")
	if c.NeedsHash() || c.Verify(spy) || len(verified) != 1 {
		t.Fatal("a password out of bounds was verified")
	}
}
