package metadata

import (
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"strings"

	"golang.org/x/crypto/argon2"

	"iggynode/wire"
)

// Argon2id parameters of the upstream argon2 crate 0.5 defaults
// (server-behaviour.md 2.2.3).
const (
	argonMemoryKiB = 19456
	argonTime      = 2
	argonThreads   = 1
	argonKeyLen    = 32
	// SaltLen is the salt length the caller should supply to HashPassword.
	SaltLen = 16
)

// Bounds verification accepts from a stored PHC string, so a corrupt hash
// cannot make a login allocate gigabytes or spin for minutes.
const (
	maxArgonMemoryKiB = 1 << 18 // 256 MiB
	maxArgonTime      = 64
	maxArgonKeyLen    = 1024
)

// Login bounds (client-plane.md 11.4; server-behaviour.md 1.3).
const (
	minUsernameLen = 3
	maxUsernameLen = 50
	minPasswordLen = 3
	maxPasswordLen = 100
)

var phcB64 = base64.RawStdEncoding

// HashPassword returns the Argon2id PHC string of password with the given
// salt: $argon2id$v=19$m=19456,t=2,p=1$<salt>$<hash>, base64 without
// padding. The caller supplies the (random, SaltLen-byte) salt so the core
// stays deterministic.
func HashPassword(password string, salt []byte) string {
	key := argon2.IDKey([]byte(password), salt, argonTime, argonMemoryKiB, argonThreads, argonKeyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version,
		argonMemoryKiB, argonTime, argonThreads, phcB64.EncodeToString(salt), phcB64.EncodeToString(key))
}

// VerifyPassword reports whether password matches the PHC string hash
// (argon2id or argon2i, version 19, parameters read from the string). A
// malformed hash never matches.
func VerifyPassword(hash, password string) bool {
	p, ok := parsePHC(hash)
	if !ok {
		return false
	}
	var key []byte
	if p.variant == "argon2id" {
		key = argon2.IDKey([]byte(password), p.salt, p.time, p.memory, p.threads, uint32(len(p.key)))
	} else {
		key = argon2.Key([]byte(password), p.salt, p.time, p.memory, p.threads, uint32(len(p.key)))
	}
	return subtle.ConstantTimeCompare(key, p.key) == 1
}

type phc struct {
	variant      string
	memory, time uint32
	threads      uint8
	salt, key    []byte
}

// parsePHC reads $<variant>$v=19$m=<m>,t=<t>,p=<p>$<salt>$<hash>.
func parsePHC(s string) (phc, bool) {
	parts := strings.Split(s, "$")
	if len(parts) != 6 || parts[0] != "" || (parts[1] != "argon2id" && parts[1] != "argon2i") {
		return phc{}, false
	}
	if parts[2] != fmt.Sprintf("v=%d", argon2.Version) {
		return phc{}, false
	}
	var m, t, p uint32
	if n, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &m, &t, &p); err != nil || n != 3 ||
		fmt.Sprintf("m=%d,t=%d,p=%d", m, t, p) != parts[3] {
		return phc{}, false
	}
	salt, err1 := phcB64.DecodeString(parts[4])
	key, err2 := phcB64.DecodeString(parts[5])
	switch {
	case err1 != nil, err2 != nil, len(salt) < 8, len(key) < 4, len(key) > maxArgonKeyLen,
		t < 1, t > maxArgonTime, p < 1, p > 255, m < 8*p, m > maxArgonMemoryKiB:
		return phc{}, false
	}
	return phc{variant: parts[1], memory: m, time: t, threads: uint8(p), salt: salt, key: key}, true
}

// dummyHash is verified against when a login names an unknown user, so the
// answer takes as long as for a known one (server-behaviour.md 2.2.4). It
// is the hash of a random password nobody knows.
const dummyHash = "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$Hk4AxBB9JGlrN5ynQ1J7yd7NM3I7cn0/KfHUTTu/+BA"

// Login verifies a password login (client-plane.md 5.2 step 3; 11.4;
// server-behaviour.md 2.2.2): username 3..=50 bytes and password 3..=100
// bytes, the user exists, the hash matches and the user is active. It
// returns the user id and 0, or EvictInvalidCredentials for every failure.
// It is PreparePasswordLogin, Verify and ConfirmPasswordLogin in one call;
// the node runs the three apart so Argon2id stays off the metadata actor.
func (s *State) Login(username, password string) (uint32, wire.EvictionReason) {
	c := s.PreparePasswordLogin(username, password)
	id, reason, _ := s.ConfirmPasswordLogin(c, c.Verify(VerifyPassword))
	return id, reason
}

// PasswordCheck is a password login taken apart so the Argon2id work can
// run anywhere: PreparePasswordLogin reads what it needs from committed
// state (cheap), Verify runs the hash (expensive, touches no state), and
// ConfirmPasswordLogin judges the outcome against committed state as it is
// by then.
type PasswordCheck struct {
	Username, Password string
	inBounds           bool // both lengths within their bounds
	known              bool // the user existed at Prepare
	userID             uint32
	hash               string // the user's PHC string at Prepare, or dummyHash
}

// PreparePasswordLogin looks up what verifying username/password needs.
func (s *State) PreparePasswordLogin(username, password string) PasswordCheck {
	c := PasswordCheck{Username: username, Password: password, hash: dummyHash}
	c.inBounds = len(username) >= minUsernameLen && len(username) <= maxUsernameLen &&
		len(password) >= minPasswordLen && len(password) <= maxPasswordLen
	if !c.inBounds {
		return c
	}
	if id, ok := s.userByName[username]; ok {
		c.known, c.userID, c.hash = true, id, s.users[id].PasswordHash
	}
	return c
}

// NeedsHash reports whether the check has a hash to verify. Lengths out
// of bounds are refused without one; an unknown user is still verified,
// against a dummy hash, so the answer takes as long as for a known one
// (server-behaviour.md 2.2.4).
func (c PasswordCheck) NeedsHash() bool { return c.inBounds }

// Verify runs verify (VerifyPassword, or a stand-in in tests) on the
// check's hash; false when there is nothing to verify.
func (c PasswordCheck) Verify(verify func(hash, password string) bool) bool {
	return c.inBounds && verify(c.hash, c.Password)
}

// ConfirmPasswordLogin judges a verified check against committed state. A
// match binds only the user it was verified for, with the hash it was
// verified against: when the name now belongs to another user or the
// user's hash changed meanwhile, it reports stale and the caller verifies
// a fresh check. The user's status is read now, so a user deactivated
// meanwhile is refused; a user deleted meanwhile is refused.
func (s *State) ConfirmPasswordLogin(c PasswordCheck, matched bool) (userID uint32, reason wire.EvictionReason, stale bool) {
	if !matched || !c.known {
		return 0, wire.EvictInvalidCredentials, false
	}
	id, ok := s.userByName[c.Username]
	if !ok {
		return 0, wire.EvictInvalidCredentials, false
	}
	u := s.users[id]
	if id != c.userID || u.PasswordHash != c.hash {
		return 0, wire.EvictInvalidCredentials, true
	}
	if u.Status != wire.UserActive {
		return 0, wire.EvictInvalidCredentials, false
	}
	return u.ID, 0, false
}
