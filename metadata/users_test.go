package metadata

import (
	"bytes"
	"testing"

	"iggynode/wire"
)

// Permission block of client-plane.md 9.1, written out of canonical order
// (stream 5 before stream 3) and with a non-01 true byte (07), 44 bytes.
var unorderedPerms = hx(`
	00 07 00 00 00 00 00 00 00 00
	01
	05000000  00 01 00 00 00 00  00  01
	03000000  00 00 00 00 01 00  01
	          02000000  00 01 00 00  00
	00`)

// The same set as the CreateUser reply echoes it (order kept, flags 00/01)
// and as GetUser returns it (ascending ids).
var (
	echoedPerms = hx(`
	00 01 00 00 00 00 00 00 00 00
	01
	05000000  00 01 00 00 00 00  00  01
	03000000  00 00 00 00 01 00  01  02000000  00 01 00 00  00
	00`)
	canonicalPerms = hx(`
	00 01 00 00 00 00 00 00 00 00
	01
	03000000  00 00 00 00 01 00  01  02000000  00 01 00 00  00  01
	05000000  00 01 00 00 00 00  00
	00`)
)

// createUserBody is CreateUser (33) by hand: [Name][Str8][status][has]
// ([len][block]), no options.
func createUserBody(name, password string, status byte, perms []byte) []byte {
	b := append([]byte{byte(len(name))}, name...)
	b = append(append(b, byte(len(password))), password...)
	b = append(b, status)
	if perms == nil {
		return append(b, 0)
	}
	b = append(append(b, 1), u32le(uint32(len(perms)))...)
	return append(b, perms...)
}

// harnessSalt is what the harness's Random writes into a 16-byte salt.
var harnessSalt = []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}

// client-plane.md 8.2.3, 7.11, 9.3; replica-plane.md 13.1: the prepare
// carries the PHC string in place of the password; the reply echoes the
// permission block in the order sent, reports the stored status, and the
// user can log in with the password.
func TestCreateUser(t *testing.T) {
	h := newHarness(t)
	body := createUserBody("alice", "secret", 7, unorderedPerms)
	p, d := h.s.Admit(Request{Client: h.client, Operation: wire.OpCreateUser, Body: body}, h.env)
	if d != nil {
		t.Fatal(d)
	}
	phc := HashPassword("secret", harnessSalt)
	if want := createUserBody("alice", phc, 7, echoedPerms); p.Operation != wire.OpCreateUser || !bytes.Equal(p.Body, want) {
		t.Fatalf("prepare body\n got % x\nwant % x", p.Body, want)
	}
	h.request++
	res := h.commit(h.frame(p.Operation, p.Body, RootUserID, h.request))
	if res.Code != 0 {
		t.Fatalf("committed %d", res.Code)
	}
	want := hx("00000000  01000000")
	want = append(want, u64le(h.ts)...)
	want = append(want, hx("01  05 616c696365  00000000  01 2c000000")...)
	want = append(want, echoedPerms...)
	if got := res.Reply[wire.HeaderSize:]; !bytes.Equal(got, want) {
		t.Fatalf("reply\n got % x\nwant % x", got, want)
	}
	status, got, _ := h.s.Read(0, wire.CodeGetUser, wire.GetUser{User: wire.Named("alice")}.AppendTo(nil))
	wantRead := append(append(append([]byte(nil), want[4:4+23]...), hx("01 2c000000")...), canonicalPerms...)
	if status != 0 || !bytes.Equal(got, wantRead) {
		t.Fatalf("GetUser\n got % x\nwant % x", got, wantRead)
	}
	if id, reason := h.s.Login("alice", "secret"); id != 1 || reason != 0 {
		t.Fatalf("login %d %v", id, reason)
	}
	// Status 2 is stored inactive; no permission set is four zero bytes.
	res = h.ok(wire.OpCreateUser, createUserBody("bob", "pw", 2, nil))
	if got := payload(t, res); !bytes.Equal(got[12:], hx("02 03 626f62 00000000 00000000")) {
		t.Fatalf("inactive user % x", got)
	}
}

// client-plane.md 8.2.3: every failure of CreateUser with its channel.
func TestCreateUserFailures(t *testing.T) {
	h := newHarness(t)
	reader := addUser(h, 1, "reader", &wire.Permissions{Global: wire.GlobalPermissions{ReadUsers: true}})
	h.denied(0, wire.OpCreateUser, hx("05 616c696365 02"), wire.ErrInvalidCommand)
	h.denied(0, wire.OpCreateUser, append(createUserBody("alice", "pw", 1, nil), tlv("k", wire.KindString, []byte("v"))...),
		wire.ErrUnsupportedOptionKey)
	// A length that does not match the block does not decode.
	bad := createUserBody("alice", "pw", 1, unorderedPerms)
	bad[11] = 45 // permissions_len 45 for a 44-byte block
	h.denied(0, wire.OpCreateUser, bad, wire.ErrInvalidCommand)
	h.rejected(0, wire.OpCreateUser, createUserBody("al", "pw", 1, nil), wire.ErrInvalidUsername)
	h.rejected(0, wire.OpCreateUser, createUserBody(string(bytes.Repeat([]byte("a"), 51)), "pw", 1, nil), wire.ErrInvalidUsername)
	h.rejected(0, wire.OpCreateUser, createUserBody("iggy", "pw", 1, nil), wire.ErrUserAlreadyExists)
	// Not object-scoped: 41 comes before the username rules.
	h.rejected(reader, wire.OpCreateUser, createUserBody("al", "pw", 1, nil), wire.ErrUnauthorized)
	h.rejected(reader, wire.OpCreateUser, createUserBody("carol", "pw", 1, nil), wire.ErrUnauthorized)
	// A raw 141 with options (admission refuses them) commits 4042.
	raw := append(createUserBody("carol", testHash, 1, nil), tlv("k", wire.KindString, []byte("v"))...)
	h.request++
	if res := h.commit(h.frame(wire.OpCreateUser, raw, 0, h.request)); res.Code != wire.ErrInvalidOptionValue {
		t.Fatalf("raw options committed %d", res.Code)
	}
	// Lowest free id (server-behaviour.md 1.2).
	h.ok(wire.OpCreateUser, createUserBody("carol", "pw", 1, nil)) // id 2
	h.ok(wire.OpDeleteUser, wire.DeleteUser{User: wire.ID(1)}.AppendTo(nil))
	res := h.ok(wire.OpCreateUser, createUserBody("dave", "pw", 1, nil))
	if got := payload(t, res); !bytes.Equal(got[:4], u32le(1)) {
		t.Fatalf("new user id % x, want 1", got[:4])
	}
}

// idb is a numeric Identifier by hand: [01][04][id u32].
func idb(id uint32) []byte { return append([]byte{1, 4}, u32le(id)...) }

// addUser puts a user straight into the state (no hashing), returning its id.
func addUser(h *harness, id uint32, name string, p *wire.Permissions) uint32 {
	h.s.addUser(&User{ID: id, Username: name, Status: wire.UserActive, PasswordHash: testHash, Permissions: p})
	return id
}

// client-plane.md 8.2.5: rename, status, and the failure codes.
func TestUpdateUser(t *testing.T) {
	h := newHarness(t)
	addUser(h, 1, "alice", nil)
	self := addUser(h, 2, "bob", &wire.Permissions{Global: wire.GlobalPermissions{ReadUsers: true}})
	name := func(s string) *string { return &s }
	status := func(b uint8) *uint8 { return &b }
	h.ok(wire.OpUpdateUser, wire.UpdateUser{User: wire.Named("alice"), Username: name("alicia"), Status: status(2)}.AppendTo(nil))
	u := h.s.users[1]
	if u.Username != "alicia" || u.Status != wire.UserInactive {
		t.Fatalf("after update %+v", u)
	}
	if _, ok := h.s.userByName["alice"]; ok {
		t.Fatal("old name still resolves")
	}
	// Status other than 1/2 is ignored; renaming to the own name is allowed.
	h.ok(wire.OpUpdateUser, wire.UpdateUser{User: wire.ID(1), Username: name("alicia"), Status: status(9)}.AppendTo(nil))
	if u.Status != wire.UserInactive {
		t.Fatal("status 9 changed the status")
	}
	// Flags other than exactly 1 mean absent: [id][02][03][no options].
	h.ok(wire.OpUpdateUser, append(idb(1), 2, 3))
	h.rejected(0, wire.OpUpdateUser, wire.UpdateUser{User: wire.ID(7)}.AppendTo(nil), wire.ErrResourceNotFound)
	h.rejected(0, wire.OpUpdateUser, wire.UpdateUser{User: wire.ID(1), Username: name("ab")}.AppendTo(nil), wire.ErrInvalidUsername)
	h.rejected(0, wire.OpUpdateUser, wire.UpdateUser{User: wire.ID(1), Username: name("iggy")}.AppendTo(nil), wire.ErrUserAlreadyExists)
	// manage_users is needed even for one's own account, and 41 wins over 20.
	h.rejected(self, wire.OpUpdateUser, wire.UpdateUser{User: wire.ID(2), Username: name("bobby")}.AppendTo(nil), wire.ErrUnauthorized)
	h.rejected(self, wire.OpUpdateUser, wire.UpdateUser{User: wire.ID(9)}.AppendTo(nil), wire.ErrUnauthorized)
	h.denied(0, wire.OpUpdateUser, hx("01 04 01000000 01"), wire.ErrInvalidCommand)
	h.denied(0, wire.OpUpdateUser, append(wire.UpdateUser{User: wire.ID(1)}.AppendTo(nil), tlv("k", wire.KindString, []byte("v"))...),
		wire.ErrUnsupportedOptionKey)
	// Root is not protected against updates (2.1.7).
	h.ok(wire.OpUpdateUser, wire.UpdateUser{User: wire.ID(0), Username: name("admin")}.AppendTo(nil))
}

// client-plane.md 8.2.4; server-behaviour.md 2.1.6, 3.10.
func TestDeleteUser(t *testing.T) {
	h := newHarness(t)
	alice := addUser(h, 1, "alice", &wire.Permissions{})
	raw := h.createToken(alice, "t", 0)
	h.rejected(alice, wire.OpDeleteUser, wire.DeleteUser{User: wire.ID(1)}.AppendTo(nil), wire.ErrUnauthorized)
	h.rejected(alice, wire.OpDeleteUser, wire.DeleteUser{User: wire.ID(9)}.AppendTo(nil), wire.ErrUnauthorized)
	h.rejected(0, wire.OpDeleteUser, wire.DeleteUser{User: wire.ID(9)}.AppendTo(nil), wire.ErrResourceNotFound)
	h.rejected(0, wire.OpDeleteUser, wire.DeleteUser{User: wire.Named("iggy")}.AppendTo(nil), wire.ErrCannotDeleteUser)
	h.denied(0, wire.OpDeleteUser, hx("01 03 000000"), wire.ErrInvalidCommand)
	h.ok(wire.OpDeleteUser, wire.DeleteUser{User: wire.Named("alice")}.AppendTo(nil))
	if h.s.UserExists(1) || len(h.s.tokenByHash) != 0 {
		t.Fatal("user or its tokens survived")
	}
	if _, reason := h.s.LoginWithToken(raw, h.ts); reason != wire.EvictInvalidToken {
		t.Fatalf("token of a deleted user: %v", reason)
	}
	if !h.s.UserExists(0) {
		t.Fatal("root gone")
	}
}

// client-plane.md 8.2.6, 7.11: replace, clear (has_permissions other than
// 1), an all-false set stays a set; root 49.
func TestUpdatePermissions(t *testing.T) {
	h := newHarness(t)
	addUser(h, 1, "alice", nil)
	self := addUser(h, 2, "bob", &wire.Permissions{Global: wire.GlobalPermissions{ReadUsers: true}})
	set := append(append(idb(1), 1), u32le(uint32(len(unorderedPerms)))...)
	h.ok(wire.OpUpdatePermissions, append(set, unorderedPerms...))
	_, p, _ := h.s.Read(0, wire.CodeGetUser, wire.GetUser{User: wire.ID(1)}.AppendTo(nil))
	if !bytes.HasSuffix(p, append(hx("01 2c000000"), canonicalPerms...)) {
		t.Fatalf("GetUser % x", p)
	}
	if !h.s.Allowed(1, RulePoll, 3, 9) || h.s.Allowed(1, RuleSend, 3, 2) {
		t.Fatal("new grants not in force")
	}
	allFalse := append(append(idb(1), 1, 11, 0, 0, 0), make([]byte, 11)...)
	h.ok(wire.OpUpdatePermissions, allFalse)
	_, p, _ = h.s.Read(0, wire.CodeGetUser, wire.GetUser{User: wire.ID(1)}.AppendTo(nil))
	if !bytes.HasSuffix(p, hx("01 0b000000 0000000000000000000000")) {
		t.Fatalf("all-false set % x", p)
	}
	h.ok(wire.OpUpdatePermissions, append(idb(1), 7)) // 7: no block, cleared
	_, p, _ = h.s.Read(0, wire.CodeGetUser, wire.GetUser{User: wire.ID(1)}.AppendTo(nil))
	if !bytes.HasSuffix(p, hx("65 00000000 00000000")) || h.s.users[1].Permissions != nil {
		t.Fatalf("cleared set % x", p)
	}
	h.rejected(0, wire.OpUpdatePermissions, append(idb(9), 0), wire.ErrResourceNotFound)
	h.rejected(0, wire.OpUpdatePermissions, append(idb(0), 0), wire.ErrCannotChangePermissions)
	h.rejected(self, wire.OpUpdatePermissions, append(idb(1), 0), wire.ErrUnauthorized)
	h.denied(0, wire.OpUpdatePermissions, append(idb(1), 1, 3, 0, 0, 0), wire.ErrInvalidCommand)
}

// client-plane.md 8.2.7; server-behaviour.md 2.2.5; replica-plane.md 13.1:
// admission verifies the current password and rewrites the body.
func TestChangePassword(t *testing.T) {
	h := newHarness(t)
	salt := []byte("saltsaltsaltsalt")
	h.s.addUser(&User{ID: 1, Username: "alice", Status: wire.UserActive, PasswordHash: HashPassword("old", salt), Permissions: &wire.Permissions{}})
	h.s.addUser(&User{ID: 2, Username: "bob", Status: wire.UserActive, PasswordHash: HashPassword("bobpw", salt), Permissions: &wire.Permissions{}})

	// A wrong current password: [user][00][00] and R 42, still committed.
	body := wire.ChangePassword{User: wire.ID(1), CurrentPassword: "nope", NewPassword: "new1"}.AppendTo(nil)
	p, d := h.s.Admit(Request{Client: h.client, UserID: 1, Operation: wire.OpChangePassword, Body: body}, h.env)
	if d != nil || !bytes.Equal(p.Body, hx("01 04 01000000 00 00")) {
		t.Fatalf("wrong password prepare % x %+v", p.Body, d)
	}
	h.rejected(1, wire.OpChangePassword, body, wire.ErrInvalidCredentials)
	if e, _ := h.s.Clients().Lookup(h.client); e.Watermark != h.request {
		t.Fatal("the rejection did not consume its request number")
	}

	// The caller's own password, no flag needed: [user][00][PHC].
	body = wire.ChangePassword{User: wire.Named("alice"), CurrentPassword: "old", NewPassword: "new1"}.AppendTo(nil)
	p, _ = h.s.Admit(Request{Client: h.client, UserID: 1, Operation: wire.OpChangePassword, Body: body}, h.env)
	phc := HashPassword("new1", harnessSalt)
	want := append(append(hx("02 05 616c696365 00"), byte(len(phc))), phc...)
	if !bytes.Equal(p.Body, want) {
		t.Fatalf("prepare\n got % x\nwant % x", p.Body, want)
	}
	h.submitAs(1, wire.OpChangePassword, body, 0)
	if id, reason := h.s.Login("alice", "new1"); id != 1 || reason != 0 {
		t.Fatal("new password does not log in")
	}
	if _, reason := h.s.Login("alice", "old"); reason != wire.EvictInvalidCredentials {
		t.Fatal("old password still logs in")
	}
	// Another user's password needs manage_users, even with the right one.
	h.rejected(1, wire.OpChangePassword, wire.ChangePassword{User: wire.ID(2), CurrentPassword: "bobpw", NewPassword: "x"}.AppendTo(nil),
		wire.ErrUnauthorized)
	// An unknown target is 20 even without manage_users (2.6.1).
	h.rejected(1, wire.OpChangePassword, wire.ChangePassword{User: wire.ID(9), CurrentPassword: "a", NewPassword: "b"}.AppendTo(nil),
		wire.ErrResourceNotFound)
	// Root changes bob's password knowing the current one (2.2.5).
	h.ok(wire.OpChangePassword, wire.ChangePassword{User: wire.ID(2), CurrentPassword: "bobpw", NewPassword: "rootset"}.AppendTo(nil))
	if id, _ := h.s.Login("bob", "rootset"); id != 2 {
		t.Fatal("admin change")
	}
	h.rejected(0, wire.OpChangePassword, wire.ChangePassword{User: wire.ID(2), CurrentPassword: "bobpw", NewPassword: "x"}.AppendTo(nil),
		wire.ErrInvalidCredentials)
	h.denied(0, wire.OpChangePassword, hx("01 04 01000000 03 6f6c64"), wire.ErrInvalidCommand)
}
