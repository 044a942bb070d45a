package metadata

import (
	"crypto/rand"
	"math"

	"iggynode/wire"
)

// Users (server-behaviour.md 2; client-plane.md 8.2). Passwords are hashed
// and verified on the admitting node only; the log carries PHC strings.

// random fills b from env.Random, or from crypto/rand when the shell gave
// none (admission only: nothing replicated depends on it).
func (env AdmitEnv) random(b []byte) {
	if env.Random != nil {
		env.Random(b)
		return
	}
	_, _ = rand.Read(b)
}

func (env AdmitEnv) hash(password string) string {
	salt := make([]byte, SaltLen)
	env.random(salt)
	return HashPassword(password, salt)
}

// admitCreateUser (141): the client body with the password replaced by its
// PHC string (replica-plane.md 13.1). Options: S 4041 (8.2.3).
func (s *State) admitCreateUser(body []byte, env AdmitEnv) (Prepare, *Denial) {
	var x wire.CreateUser
	if x.Decode(body) != nil {
		return Prepare{}, deny(wire.ErrInvalidCommand)
	}
	if code := noOptions(x.Options); code != 0 {
		return Prepare{}, deny(code)
	}
	x.Password = env.hash(x.Password)
	return Prepare{Operation: wire.OpCreateUser, Body: x.AppendTo(nil)}, nil
}

// admitChangePassword (144) verifies the current password against the
// committed hash and rewrites the body to [user][current: empty][new: PHC,
// or empty when the current one is wrong or the user unknown] (13.1).
func (s *State) admitChangePassword(body []byte, env AdmitEnv) (Prepare, *Denial) {
	var x wire.ChangePassword
	if x.Decode(body) != nil {
		return Prepare{}, deny(wire.ErrInvalidCommand)
	}
	out := wire.ChangePassword{User: x.User}
	if u, ok := s.user(x.User); ok && VerifyPassword(u.PasswordHash, x.CurrentPassword) {
		out.NewPassword = env.hash(x.NewPassword)
	}
	return Prepare{Operation: wire.OpChangePassword, Body: out.AppendTo(nil)}, nil
}

// validUsername: 3..=50 bytes, re-checked at apply (server-behaviour.md 1.3).
func validUsername(name string) bool {
	return len(name) >= minUsernameLen && len(name) <= maxUsernameLen
}

// storedStatus maps a CreateUser status byte: 2 is inactive, anything else
// active (server-behaviour.md 2.2.1).
func storedStatus(b uint8) wire.UserStatus {
	if wire.UserStatus(b) == wire.UserInactive {
		return wire.UserInactive
	}
	return wire.UserActive
}

// applyCreateUser: 41 (not object-scoped), 4042, 43, 46; the reply echoes
// the permission block in the order sent and reports the stored status.
func (s *State) applyCreateUser(c *applyCtx) (wire.ErrorCode, []byte) {
	var req wire.CreateUser
	if req.Decode(c.body) != nil {
		return wire.ErrInvalidCommand, nil
	}
	if !s.Allowed(c.ph.UserID, RuleUsersManage, 0, 0) {
		return wire.ErrUnauthorized, nil
	}
	if len(req.Options) > 0 {
		return wire.ErrInvalidOptionValue, nil
	}
	if !validUsername(req.Username) {
		return wire.ErrInvalidUsername, nil
	}
	if _, taken := s.userByName[req.Username]; taken {
		return wire.ErrUserAlreadyExists, nil
	}
	id, ok := lowestFree(math.MaxUint32, func(id uint32) bool { _, used := s.users[id]; return used })
	if !ok {
		return wire.ErrUsersLimitReached, nil
	}
	u := &User{ID: id, CreatedAt: c.ph.Timestamp, Status: storedStatus(req.Status), Username: req.Username,
		PasswordHash: req.Password, Permissions: req.Permissions, Options: req.Options}
	s.addUser(u)
	return 0, wire.UserDetails{UserResponse: userResponse(u), Permissions: req.Permissions}.AppendEcho(nil)
}

// manageableUser resolves the target of a user-manage operation:
// unauthorized (41) before not found (20), since user commands are not
// object-scoped (2.6.1).
func (s *State) manageableUser(c *applyCtx, id wire.Identifier) (*User, wire.ErrorCode) {
	if !s.Allowed(c.ph.UserID, RuleUsersManage, 0, 0) {
		return nil, wire.ErrUnauthorized
	}
	u, ok := s.user(id)
	if !ok {
		return nil, wire.ErrResourceNotFound
	}
	return u, 0
}

// applyUpdateUser: 41 before 20 (user commands are not object-scoped,
// 2.6.1), then 43 and 46 for a new name; a status other than 1 or 2 is
// ignored.
func (s *State) applyUpdateUser(c *applyCtx) (wire.ErrorCode, []byte) {
	var req wire.UpdateUser
	if req.Decode(c.body) != nil {
		return wire.ErrInvalidCommand, nil
	}
	u, code := s.manageableUser(c, req.User)
	if code != 0 {
		return code, nil
	}
	if len(req.Options) > 0 {
		return wire.ErrInvalidOptionValue, nil
	}
	if req.Username != nil {
		name := *req.Username
		if !validUsername(name) {
			return wire.ErrInvalidUsername, nil
		}
		if other, taken := s.userByName[name]; taken && other != u.ID {
			return wire.ErrUserAlreadyExists, nil
		}
		delete(s.userByName, u.Username)
		u.Username = name
		s.userByName[name] = u.ID
	}
	if req.Status != nil && wire.UserStatus(*req.Status).Valid() {
		u.Status = wire.UserStatus(*req.Status)
	}
	return 0, nil
}

// applyDeleteUser: 41, 20, root 48; the user's tokens go with it.
func (s *State) applyDeleteUser(c *applyCtx) (wire.ErrorCode, []byte) {
	var req wire.DeleteUser
	if req.Decode(c.body) != nil {
		return wire.ErrInvalidCommand, nil
	}
	u, code := s.manageableUser(c, req.User)
	if code != 0 {
		return code, nil
	}
	if u.ID == RootUserID {
		return wire.ErrCannotDeleteUser, nil
	}
	s.removeUser(u)
	return 0, nil
}

// applyUpdatePermissions: 41, 20, root 49; replaces the whole set (nil
// clears it, 2.3.2).
func (s *State) applyUpdatePermissions(c *applyCtx) (wire.ErrorCode, []byte) {
	var req wire.UpdatePermissions
	if req.Decode(c.body) != nil {
		return wire.ErrInvalidCommand, nil
	}
	u, code := s.manageableUser(c, req.User)
	if code != 0 {
		return code, nil
	}
	if u.ID == RootUserID {
		return wire.ErrCannotChangePermissions, nil
	}
	u.Permissions = req.Permissions
	return 0, nil
}

// applyChangePassword: 20 first (even for callers without manage_users,
// 2.6.1), then 41 unless the target is the caller, then 42 when admission
// found the current password wrong (an empty new hash).
func (s *State) applyChangePassword(c *applyCtx) (wire.ErrorCode, []byte) {
	var req wire.ChangePassword
	if req.Decode(c.body) != nil {
		return wire.ErrInvalidCommand, nil
	}
	u, ok := s.user(req.User)
	if !ok {
		return wire.ErrResourceNotFound, nil
	}
	if u.ID != c.ph.UserID && !s.Allowed(c.ph.UserID, RuleUsersManage, 0, 0) {
		return wire.ErrUnauthorized, nil
	}
	if req.NewPassword == "" {
		return wire.ErrInvalidCredentials, nil
	}
	u.PasswordHash = req.NewPassword
	return 0, nil
}
