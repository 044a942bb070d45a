package e2e

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"iggynode/client"
	"iggynode/wire"
)

// mustReject asserts a committed rejection: a result section carrying code
// (server-behaviour.md conventions, "Result section").
func mustReject(t *testing.T, err error, code wire.ErrorCode, what string) {
	t.Helper()
	var r *wire.ResultError
	if !errors.As(err, &r) || r.Code != code {
		t.Fatalf("%s: got %v, want result-section rejection %v", what, err, code)
	}
}

// mustDeny asserts a deny frame: a nonzero header status carrying code.
func mustDeny(t *testing.T, err error, code wire.ErrorCode, what string) {
	t.Helper()
	var s *wire.StatusError
	if !errors.As(err, &s) || s.Code != code {
		t.Fatalf("%s: got %v, want header status %v", what, err, code)
	}
}

// mustEvict asserts an eviction frame with the given reason.
func mustEvict(t *testing.T, err error, reason wire.EvictionReason, what string) {
	t.Helper()
	var ev *wire.EvictionError
	if !errors.As(err, &ev) || ev.Reason != reason {
		t.Fatalf("%s: got %v, want eviction %v", what, err, reason)
	}
}

// dialAs connects with a username and password and returns the error
// instead of failing, for logins that must be refused.
func dialAs(t *testing.T, n *testNode, user, pass string) (*client.Client, error) {
	t.Helper()
	o := clientOptions(t, n)
	o.Username, o.Password, o.RequestTimeout = user, pass, 10*time.Second
	c, err := client.Connect(ctxT(t), o)
	if err == nil {
		t.Cleanup(func() { _ = c.Close() })
	}
	return c, err
}

// dialToken connects with a personal access token (client.Options).
func dialToken(t *testing.T, n *testNode, token string) (*client.Client, error) {
	t.Helper()
	o := clientOptions(t, n)
	o.PersonalAccessToken, o.RequestTimeout = token, 10*time.Second
	c, err := client.Connect(ctxT(t), o)
	if err == nil {
		t.Cleanup(func() { _ = c.Close() })
	}
	return c, err
}

func permBytes(p *wire.Permissions) []byte {
	if p == nil {
		return nil
	}
	return p.AppendCanonical(nil)
}

// samplePermissions has global, stream-scoped and topic-scoped grants.
func samplePermissions() *wire.Permissions {
	return &wire.Permissions{
		Global: wire.GlobalPermissions{ReadServers: true, PollMessages: true},
		Streams: map[uint32]wire.StreamPermissions{
			3: {ReadStream: true, Topics: map[uint32]wire.TopicPermissions{0: {SendMessages: true}}},
			7: {ManageTopics: true},
		},
	}
}

func strPtr(s string) *string                      { return &s }
func statusPtr(s wire.UserStatus) *wire.UserStatus { return &s }
func userIDs(us wire.Users) (ids []uint32, names []string) {
	for _, u := range us {
		ids = append(ids, u.ID)
		names = append(names, u.Username)
	}
	return ids, names
}

// Users through the SDK (client-plane.md 8.2; server-behaviour.md 2): create
// echoes the permission set and reports the stored status, reads by id and
// name, list, rename, deactivate, password changes, root protections,
// username rules and lowest-free id reuse.
func TestUsersLifecycle(t *testing.T) {
	n := startNode(t)
	root := connect(t, n)
	ctx := ctxT(t)

	perms := samplePermissions()
	alice, err := root.CreateUser(ctx, "alice", "alice-pw", wire.UserActive, perms)
	if err != nil {
		t.Fatalf("create alice: %v", err)
	}
	if alice.ID != 1 || alice.Username != "alice" || alice.Status != wire.UserActive || alice.CreatedAt == 0 ||
		!bytes.Equal(permBytes(alice.Permissions), permBytes(perms)) {
		t.Fatalf("create reply %+v does not echo the request (perms %x)", alice.UserResponse, permBytes(alice.Permissions))
	}
	bob, err := root.CreateUser(ctx, "bob", "bob-pw", wire.UserInactive, nil)
	if err != nil || bob.ID != 2 || bob.Status != wire.UserInactive || bob.Permissions != nil {
		t.Fatalf("create inactive bob without permissions: %+v %v", bob, err)
	}
	// An unknown status byte is stored, and reported, as active (8.2.3).
	// The SDK only sends 1 or 2, so the body goes raw.
	body, err := root.SendRaw(ctx, wire.CodeCreateUser, wire.CreateUser{Username: "carol", Password: "carol-pw", Status: 7}.AppendTo(nil))
	var carol wire.UserDetails
	if err != nil || carol.Decode(body) != nil || carol.ID != 3 || carol.Status != wire.UserActive {
		t.Fatalf("create with status 7: %+v %v", carol, err)
	}

	// Reads by id and by name return the canonical stored set.
	for _, id := range []wire.Identifier{wire.ID(1), wire.Named("alice")} {
		got, err := root.GetUser(ctx, id)
		if err != nil || got.ID != 1 || got.Username != "alice" || got.CreatedAt != alice.CreatedAt ||
			!bytes.Equal(permBytes(got.Permissions), permBytes(perms)) {
			t.Fatalf("GetUser(%v): %+v %v", id, got, err)
		}
	}
	if _, err := root.GetUser(ctx, wire.Named("nobody")); !errors.Is(err, wire.ErrResourceNotFound) {
		t.Fatalf("GetUser of a missing user: %v (want the empty not-found reply)", err)
	}
	users, err := root.GetUsers(ctx)
	ids, names := userIDs(users)
	if err != nil || strings.Join(names, ",") != "iggy,alice,bob,carol" || ids[0] != 0 || ids[3] != 3 {
		t.Fatalf("GetUsers: %v %v %v", ids, names, err)
	}

	// Names: taken (46), bounds 3..=50 at apply (43). The SDK checks the
	// bounds of CreateUser locally, so that body goes raw.
	_, err = root.CreateUser(ctx, "alice", "whatever", wire.UserActive, nil)
	mustReject(t, err, wire.ErrUserAlreadyExists, "create with a taken name")
	mustReject(t, root.UpdateUser(ctx, wire.ID(2), strPtr("alice"), nil), wire.ErrUserAlreadyExists, "rename onto a taken name")
	if err := root.UpdateUser(ctx, wire.ID(1), strPtr("alice"), nil); err != nil {
		t.Fatalf("renaming a user to its own name is allowed (1.3.1): %v", err)
	}
	for _, name := range []string{"ab", strings.Repeat("x", 51)} {
		_, err := root.SendRaw(ctx, wire.CodeCreateUser, wire.CreateUser{Username: name, Password: "secret", Status: 1}.AppendTo(nil))
		mustReject(t, err, wire.ErrInvalidUsername, "create with a "+name[:2]+"… name")
		mustReject(t, root.UpdateUser(ctx, wire.ID(1), &name, nil), wire.ErrInvalidUsername, "rename out of bounds")
	}
	if _, err := root.CreateUser(ctx, strings.Repeat("y", 50), "secret", wire.UserActive, nil); err != nil {
		t.Fatalf("a 50-byte username is allowed: %v", err)
	}
	if err := root.DeleteUser(ctx, wire.Named(strings.Repeat("y", 50))); err != nil {
		t.Fatal(err)
	}

	// Inactive users cannot log in with a password (2.2.2); activation
	// through UpdateUser lets bob in.
	_, err = dialAs(t, n, "bob", "bob-pw")
	mustEvict(t, err, wire.EvictInvalidCredentials, "login of inactive bob")
	if err := root.UpdateUser(ctx, wire.Named("bob"), nil, statusPtr(wire.UserActive)); err != nil {
		t.Fatal(err)
	}
	bobC := connectAs(t, n, "bob", "bob-pw")
	// Rename and deactivate alice in one update; her old name is free.
	if err := root.UpdateUser(ctx, wire.ID(1), strPtr("alicia"), statusPtr(wire.UserInactive)); err != nil {
		t.Fatal(err)
	}
	if got, err := root.GetUser(ctx, wire.ID(1)); err != nil || got.Username != "alicia" || got.Status != wire.UserInactive {
		t.Fatalf("after rename+deactivate: %+v %v", got, err)
	}
	if _, err := root.GetUser(ctx, wire.Named("alice")); !errors.Is(err, wire.ErrResourceNotFound) {
		t.Fatalf("the old name still resolves: %v", err)
	}
	_, err = dialAs(t, n, "alicia", "alice-pw")
	mustEvict(t, err, wire.EvictInvalidCredentials, "login of inactive alicia")
	// A status byte other than 1 or 2 on update leaves the status alone.
	if _, err := root.SendRaw(ctx, wire.CodeUpdateUser, wire.UpdateUser{User: wire.ID(1), Status: func() *uint8 { s := uint8(9); return &s }()}.AppendTo(nil)); err != nil {
		t.Fatal(err)
	}
	if got, _ := root.GetUser(ctx, wire.ID(1)); got.Status != wire.UserInactive {
		t.Fatalf("status 9 changed the status to %v", got.Status)
	}

	// Passwords (2.2.5, 8.2.7): one's own with the right current password;
	// a wrong current password commits 42 in the result section; another
	// user's password needs manage_users (41), and root still needs the
	// current one.
	if err := bobC.ChangePassword(ctx, wire.ID(2), "bob-pw", "bob-pw2"); err != nil {
		t.Fatalf("own password change: %v", err)
	}
	mustReject(t, bobC.ChangePassword(ctx, wire.ID(2), "bob-pw", "bob-pw3"), wire.ErrInvalidCredentials, "wrong current password")
	mustReject(t, bobC.ChangePassword(ctx, wire.ID(3), "carol-pw", "hijacked"), wire.ErrUnauthorized, "another user's password without manage_users")
	mustReject(t, bobC.ChangePassword(ctx, wire.ID(99), "x-pw", "y-pw"), wire.ErrResourceNotFound, "unknown target (20 even without manage_users)")
	mustReject(t, root.ChangePassword(ctx, wire.ID(3), "not-carols", "carol-pw2"), wire.ErrInvalidCredentials, "root with a wrong current password")
	if err := root.ChangePassword(ctx, wire.Named("carol"), "carol-pw", "carol-pw2"); err != nil {
		t.Fatalf("root changes carol's password: %v", err)
	}
	_, err = dialAs(t, n, "bob", "bob-pw")
	mustEvict(t, err, wire.EvictInvalidCredentials, "login with the old password")
	connectAs(t, n, "bob", "bob-pw2")
	connectAs(t, n, "carol", "carol-pw2")

	// User management needs manage_users, checked at apply (41 in the
	// result section); a user may always read itself (9.5).
	_, err = bobC.CreateUser(ctx, "mallory", "mallory", wire.UserActive, nil)
	mustReject(t, err, wire.ErrUnauthorized, "bob creates a user")
	mustReject(t, bobC.UpdateUser(ctx, wire.ID(2), strPtr("robert"), nil), wire.ErrUnauthorized, "bob renames himself")
	mustReject(t, bobC.UpdatePermissions(ctx, wire.ID(2), perms), wire.ErrUnauthorized, "bob grants himself")
	mustReject(t, bobC.DeleteUser(ctx, wire.ID(3)), wire.ErrUnauthorized, "bob deletes carol")
	if me, err := bobC.GetUser(ctx, wire.ID(2)); err != nil || me.Username != "bob" {
		t.Fatalf("bob reads himself: %+v %v", me, err)
	}
	_, err = bobC.GetUser(ctx, wire.ID(0))
	mustDeny(t, err, wire.ErrUnauthorized, "bob reads root")
	_, err = bobC.GetUsers(ctx)
	mustDeny(t, err, wire.ErrUnauthorized, "bob lists users")

	// Permissions: replaced whole, cleared by nil; root's cannot change.
	narrow := &wire.Permissions{Global: wire.GlobalPermissions{ReadUsers: true}}
	if err := root.UpdatePermissions(ctx, wire.ID(2), narrow); err != nil {
		t.Fatal(err)
	}
	if got, err := root.GetUser(ctx, wire.ID(2)); err != nil || !bytes.Equal(permBytes(got.Permissions), permBytes(narrow)) {
		t.Fatalf("after UpdatePermissions: %+v %v", got, err)
	}
	if _, err := bobC.GetUsers(ctx); err != nil {
		t.Fatalf("read_users granted but GetUsers fails: %v", err)
	}
	if err := root.UpdatePermissions(ctx, wire.ID(1), nil); err != nil {
		t.Fatal(err)
	}
	if got, err := root.GetUser(ctx, wire.ID(1)); err != nil || got.Permissions != nil {
		t.Fatalf("cleared permissions still there: %+v %v", got, err)
	}
	mustReject(t, root.UpdatePermissions(ctx, wire.ID(0), narrow), wire.ErrCannotChangePermissions, "root's permissions")
	mustReject(t, root.UpdatePermissions(ctx, wire.ID(42), narrow), wire.ErrResourceNotFound, "permissions of a missing user")

	// Deletes: root is protected (48), a missing user is 20, and the lowest
	// freed id is reused.
	mustReject(t, root.DeleteUser(ctx, wire.ID(0)), wire.ErrCannotDeleteUser, "delete root")
	mustReject(t, root.DeleteUser(ctx, wire.Named("nobody")), wire.ErrResourceNotFound, "delete a missing user")
	if err := root.DeleteUser(ctx, wire.Named("bob")); err != nil {
		t.Fatal(err)
	}
	if err := root.DeleteUser(ctx, wire.ID(1)); err != nil {
		t.Fatal(err)
	}
	if _, err := root.GetUser(ctx, wire.ID(2)); !errors.Is(err, wire.ErrResourceNotFound) {
		t.Fatalf("deleted bob still readable: %v", err)
	}
	_, err = dialAs(t, n, "bob", "bob-pw2")
	mustEvict(t, err, wire.EvictInvalidCredentials, "login of deleted bob")
	for _, want := range []uint32{1, 2, 4} {
		u, err := root.CreateUser(ctx, "user"+string(rune('0'+want)), "secret", wire.UserActive, nil)
		if err != nil || u.ID != want {
			t.Fatalf("next user id: %+v %v, want %d (lowest free)", u, err, want)
		}
	}
	if root, err := root.GetUser(ctx, wire.ID(0)); err != nil || root.Username != "iggy" || root.CreatedAt != 1 ||
		root.Permissions == nil || !root.Permissions.Global.ManageServers || !root.Permissions.Global.SendMessages {
		t.Fatalf("root (2.1.4): %+v %v", root, err)
	}
}

// Users, password hashes, permission sets and tokens survive a graceful
// restart: the changed password logs in, the old one does not, and the
// token still works.
func TestUsersAndTokensSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	n := startNodeIn(t, dir)
	root := connect(t, n)
	ctx := ctxT(t)
	perms := samplePermissions()
	if _, err := root.CreateUser(ctx, "dave", "dave-pw", wire.UserActive, perms); err != nil {
		t.Fatal(err)
	}
	if _, err := root.CreateUser(ctx, "erin", "erin-pw", wire.UserInactive, nil); err != nil {
		t.Fatal(err)
	}
	dave := connectAs(t, n, "dave", "dave-pw")
	if err := dave.ChangePassword(ctx, wire.Named("dave"), "dave-pw", "dave-new"); err != nil {
		t.Fatal(err)
	}
	token, err := dave.CreatePersonalAccessToken(ctx, "laptop", client.NeverExpire)
	if err != nil {
		t.Fatal(err)
	}
	before, err := root.GetUsers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_ = dave.Close()
	_ = root.Close()
	if err := n.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}

	n2 := startNodeIn(t, dir)
	t.Cleanup(func() { _ = n2.Close() })
	root2 := connect(t, n2)
	after, err := root2.GetUsers(ctx)
	if err != nil || len(after) != len(before) {
		t.Fatalf("users after restart: %+v %v", after, err)
	}
	for i := range before {
		a, b := after[i], before[i]
		if a.ID != b.ID || a.Username != b.Username || a.Status != b.Status || a.CreatedAt != b.CreatedAt {
			t.Fatalf("user %d after restart: %+v, before %+v", i, after[i], before[i])
		}
	}
	got, err := root2.GetUser(ctx, wire.Named("dave"))
	if err != nil || !bytes.Equal(permBytes(got.Permissions), permBytes(perms)) {
		t.Fatalf("dave's permissions after restart: %+v %v", got, err)
	}
	_, err = dialAs(t, n2, "dave", "dave-pw")
	mustEvict(t, err, wire.EvictInvalidCredentials, "the old password after restart")
	_, err = dialAs(t, n2, "erin", "erin-pw")
	mustEvict(t, err, wire.EvictInvalidCredentials, "inactive erin after restart")
	dave2 := connectAs(t, n2, "dave", "dave-new")
	if _, uid := dave2.Session(); uid != 1 {
		t.Fatalf("dave logs in as user %d, want 1", uid)
	}
	tokens, err := dave2.GetPersonalAccessTokens(ctx)
	if err != nil || len(tokens) != 1 || tokens[0].Name != "laptop" || tokens[0].ExpiryAt != 0 {
		t.Fatalf("tokens after restart: %+v %v", tokens, err)
	}
	viaToken, err := dialToken(t, n2, token)
	if err != nil {
		t.Fatalf("token login after restart: %v", err)
	}
	if _, uid := viaToken.Session(); uid != 1 {
		t.Fatalf("token logs in as user %d, want 1", uid)
	}
	// The id allocator is rebuilt from the recovered set.
	if u, err := root2.CreateUser(ctx, "frank", "frank-pw", wire.UserActive, nil); err != nil || u.ID != 3 {
		t.Fatalf("next user after restart: %+v %v", u, err)
	}
}
