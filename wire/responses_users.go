package wire

import (
	"encoding/binary"
	"fmt"
)

// UserStatus is a user's status byte (client-plane.md 7.11).
type UserStatus uint8

const (
	UserActive   UserStatus = 1
	UserInactive UserStatus = 2
)

// Valid reports whether s is 1 or 2, the only values a UserResponse may
// carry (the Go SDK rejects any other).
func (s UserStatus) Valid() bool { return s == UserActive || s == UserInactive }

func (s UserStatus) String() string {
	switch s {
	case UserActive:
		return "active"
	case UserInactive:
		return "inactive"
	}
	return fmt.Sprintf("status(%d)", uint8(s))
}

// UserResponse is one user (7.11): an element of GetUsers and the head of
// UserDetails. Its decoder rejects a status other than 1 or 2.
type UserResponse struct {
	ID        uint32 // root is 0
	CreatedAt uint64 // µs since epoch
	Status    UserStatus
	Username  string
	Options   Options // empty today
}

func (u UserResponse) AppendTo(b []byte) []byte {
	b = AppendU32(b, u.ID)
	b = AppendU64(b, u.CreatedAt)
	b = AppendU8(b, uint8(u.Status))
	b = AppendName(b, u.Username)
	return AppendOptions32(b, u.Options)
}

func (u *UserResponse) Decode(body []byte) error {
	return respDecode(u, body, "user", true, (*UserResponse).read)
}

func (u *UserResponse) read(r *Reader) {
	u.ID = r.U32("user id")
	u.CreatedAt = r.U64("user created_at")
	u.Status = UserStatus(r.U8("user status"))
	if r.err == nil && !u.Status.Valid() {
		r.Fail("user status", fmt.Sprintf("%d is neither 1 nor 2", uint8(u.Status)))
		return
	}
	u.Username = r.Name("user username")
	u.Options = r.Options32("user options")
}

// UserDetails is GetUser's reply and the CreateUser payload (7.11): the user
// and its permission set. Permissions nil means "no permission set" (four
// zero bytes); a set whose flags are all false is still a set.
type UserDetails struct {
	UserResponse
	Permissions *Permissions
}

// AppendTo encodes the permission set canonically (ascending ids), as
// GetUser sends it (9.3).
func (u UserDetails) AppendTo(b []byte) []byte {
	return u.appendWith(b, (*Permissions).AppendCanonical)
}

// AppendEcho encodes the permission set in the order it was decoded in, as
// the CreateUser reply echoes the block the client sent (9.3).
func (u UserDetails) AppendEcho(b []byte) []byte {
	return u.appendWith(b, (*Permissions).AppendEcho)
}

func (u UserDetails) appendWith(b []byte, appendPerms func(*Permissions, []byte) []byte) []byte {
	b = u.UserResponse.AppendTo(b)
	if u.Permissions == nil {
		return AppendU32(b, 0)
	}
	b = append(b, 1)
	lenAt := len(b)
	b = AppendU32(b, 0)
	b = appendPerms(u.Permissions, b)
	binary.LittleEndian.PutUint32(b[lenAt:], uint32(len(b)-lenAt-4))
	return b
}

func (u *UserDetails) Decode(body []byte) error {
	return respDecode(u, body, "user details", true, (*UserDetails).read)
}

// read applies 7.11: one byte; 0 means three more zero bytes follow,
// nonzero means [perm_len u32][block] and the block fills perm_len exactly.
func (u *UserDetails) read(r *Reader) {
	u.UserResponse.read(r)
	has := r.U8("has_permissions")
	if r.err != nil {
		return
	}
	if has == 0 {
		if pad := r.Bytes("has_permissions", 3); pad != nil && pad[0]|pad[1]|pad[2] != 0 {
			r.Fail("has_permissions", "nonzero bytes after a 0 flag")
		}
		return
	}
	n := r.U32("permissions_len")
	if r.err == nil && uint64(n) > uint64(r.Len()) {
		r.Fail("permissions", errShort)
		return
	}
	block := r.Bytes("permissions", int(n))
	if r.err != nil {
		return
	}
	p, err := DecodePermissions(block)
	r.respFailWith(err)
	u.Permissions = p
}

// Users is GetUsers' reply (8.2.2): user responses to the end of the body,
// no count, no permissions; an empty body is no users.
type Users []UserResponse

func (u Users) AppendTo(b []byte) []byte {
	for _, v := range u {
		b = v.AppendTo(b)
	}
	return b
}

func (u *Users) Decode(body []byte) error {
	return respDecode(u, body, "users", true, func(u *Users, r *Reader) {
		*u = respReadToEnd(r, (*UserResponse).read)
	})
}

// LoginRegisterResponse is the Register (login) payload after the result
// count (7.12).
type LoginRegisterResponse struct {
	UserID uint32
	// Session is the epoch the client echoes in RequestHeader.session; nonzero.
	Session               uint64
	ServerProtocolVersion Version
	ServerVersion         string // build version, free text, 1..=255 bytes
}

func (l LoginRegisterResponse) AppendTo(b []byte) []byte {
	b = AppendU32(b, l.UserID)
	b = AppendU64(b, l.Session)
	b = AppendU32(b, uint32(l.ServerProtocolVersion))
	return AppendName(b, l.ServerVersion)
}

func (l *LoginRegisterResponse) Decode(body []byte) error {
	return respDecode(l, body, "login reply", true, func(l *LoginRegisterResponse, r *Reader) {
		l.UserID = r.U32("login user_id")
		l.Session = r.U64("login session")
		l.ServerProtocolVersion = Version(r.U32("login server_protocol_version"))
		l.ServerVersion = r.Name("login server_version")
	})
}

// PersonalAccessTokenInfo is one token of GetPersonalAccessTokens (7.13).
type PersonalAccessTokenInfo struct {
	Name     string
	ExpiryAt uint64 // absolute expiry, µs since epoch; 0 never expires
}

// PatEntry is the spec's name for PersonalAccessTokenInfo (7.13).
type PatEntry = PersonalAccessTokenInfo

func (p PersonalAccessTokenInfo) AppendTo(b []byte) []byte {
	return AppendU64(AppendName(b, p.Name), p.ExpiryAt)
}

func (p *PersonalAccessTokenInfo) Decode(body []byte) error {
	return respDecode(p, body, "token", true, (*PersonalAccessTokenInfo).read)
}

func (p *PersonalAccessTokenInfo) read(r *Reader) {
	p.Name = r.Name("token name")
	p.ExpiryAt = r.U64("token expiry_at")
}

// PersonalAccessTokens is GetPersonalAccessTokens' reply (8.3.1): entries to
// the end of the body, order unspecified; an empty body is no tokens.
type PersonalAccessTokens []PatEntry

func (p PersonalAccessTokens) AppendTo(b []byte) []byte {
	for _, v := range p {
		b = v.AppendTo(b)
	}
	return b
}

func (p *PersonalAccessTokens) Decode(body []byte) error {
	return respDecode(p, body, "tokens", true, func(p *PersonalAccessTokens, r *Reader) {
		*p = respReadToEnd(r, (*PersonalAccessTokenInfo).read)
	})
}

// RawToken is the CreatePersonalAccessToken payload (7.13): the raw token,
// shown once (the reference sends 68 base64 characters).
type RawToken struct {
	Token string
}

func (t RawToken) AppendTo(b []byte) []byte { return AppendName(b, t.Token) }

func (t *RawToken) Decode(body []byte) error {
	return respDecode(t, body, "raw token", true, func(t *RawToken, r *Reader) {
		t.Token = r.Name("token")
	})
}
