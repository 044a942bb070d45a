package metadata

import "iggynode/wire"

// UserActive reports whether user id exists with status active: the HTTP
// plane's JWTs name a user the actors check on every request (http.md 10
// #16: a token of a deleted or deactivated user is refused).
func (s *State) UserActive(id uint32) bool {
	u, ok := s.users[id]
	return ok && u.Status == wire.UserActive
}
