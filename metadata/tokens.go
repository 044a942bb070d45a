package metadata

import (
	"encoding/base64"
	"encoding/hex"
	"math"
	"sort"

	"github.com/zeebo/blake3"

	"iggynode/wire"
)

// Personal access tokens (server-behaviour.md 3; client-plane.md 8.3).
// They belong to the session's user; no permission flag is needed.

// rawTokenLen is the number of random bytes of a raw token (3.2).
const rawTokenLen = 50

// TokenHash is the stored digest of a raw token: BLAKE3 of its bytes as
// 64 lowercase hex characters (server-behaviour.md 3.3).
func TokenHash(raw string) string {
	sum := blake3.Sum256([]byte(raw))
	return hex.EncodeToString(sum[:])
}

// admitCreateToken (146): S 52 at the per-user cap (before the duplicate
// name, 3.5), then mint 50 random bytes; the prepare carries only the
// digest, the raw token leaves through Prepare.RawToken.
func (s *State) admitCreateToken(req Request, env AdmitEnv) (Prepare, *Denial) {
	var x wire.CreatePersonalAccessToken
	if x.Decode(req.Body) != nil {
		return Prepare{}, deny(wire.ErrInvalidCommand)
	}
	if u, ok := s.users[req.UserID]; ok && len(u.Tokens) >= s.cfg.MaxTokensPerUser {
		return Prepare{}, deny(wire.ErrPersonalAccessTokensLimitReached)
	}
	b := make([]byte, rawTokenLen)
	env.random(b)
	raw := base64.StdEncoding.EncodeToString(b)
	body := tokenCreateBody{UserID: req.UserID, Name: x.Name, Expiry: x.Expiry, Hash: TokenHash(raw)}
	return Prepare{Operation: wire.OpCreatePersonalAccessToken, Body: body.AppendTo(nil), RawToken: raw}, nil
}

// admitDeleteToken (147): [user_id][name][only_if_expired 0].
func admitDeleteToken(req Request) (Prepare, *Denial) {
	var x wire.DeletePersonalAccessToken
	if x.Decode(req.Body) != nil {
		return Prepare{}, deny(wire.ErrInvalidCommand)
	}
	body := tokenDeleteBody{UserID: req.UserID, Name: x.Name}
	return Prepare{Operation: wire.OpDeletePersonalAccessToken, Body: body.AppendTo(nil)}, nil
}

// tokenExpiry computes expiry_at from the commit timestamp (3.4): 0 and
// u64::MAX never expire; an overflowing or non-future expiry is not ok.
func tokenExpiry(nowUs, expiry uint64) (uint64, bool) {
	if expiry == 0 || expiry == math.MaxUint64 {
		return 0, true
	}
	at := nowUs + expiry // a wrap lands at or below nowUs (8.3.2)
	if at <= nowUs {
		return 0, false
	}
	return at, true
}

// applyCreateToken: a session whose user is gone is denied (R 41); 51 for
// a duplicate name (or, short of corruption impossible, a duplicate
// digest); 56 for an expiry that is not in the future. The committed
// reply is the empty success: the raw token is not in the log, so only
// the admitting node can answer with it (Result.WireReply).
func (s *State) applyCreateToken(c *applyCtx) (wire.ErrorCode, []byte) {
	var req tokenCreateBody
	if req.Decode(c.body) != nil {
		return wire.ErrInvalidCommand, nil
	}
	u, ok := s.users[req.UserID]
	if !ok {
		return wire.ErrUnauthorized, nil
	}
	if _, dup := u.Tokens[req.Name]; dup {
		return wire.ErrPersonalAccessTokenAlreadyExists, nil
	}
	if _, dup := s.tokenByHash[req.Hash]; dup {
		return wire.ErrPersonalAccessTokenAlreadyExists, nil
	}
	at, ok := tokenExpiry(c.ph.Timestamp, req.Expiry)
	if !ok {
		return wire.ErrInvalidPersonalAccessTokenExpiry, nil
	}
	s.addToken(u, &Token{Name: req.Name, Hash: req.Hash, ExpiryAt: at, OwnerID: u.ID})
	return 0, nil
}

// applyDeleteToken: 20 for an unknown name; the cleaner's delete
// (only_if_expired) also answers 20, and changes nothing, when the token
// is no longer expired at the prepare timestamp (3.9). A client delete by
// a session whose user is gone is R 41.
func (s *State) applyDeleteToken(c *applyCtx) (wire.ErrorCode, []byte) {
	var req tokenDeleteBody
	if req.Decode(c.body) != nil {
		return wire.ErrInvalidCommand, nil
	}
	u, ok := s.users[req.UserID]
	if !ok {
		if req.OnlyIfExpired {
			return wire.ErrResourceNotFound, nil
		}
		return wire.ErrUnauthorized, nil
	}
	t, ok := u.Tokens[req.Name]
	if !ok || req.OnlyIfExpired && !t.expired(c.ph.Timestamp) {
		return wire.ErrResourceNotFound, nil
	}
	s.removeToken(u, t)
	return 0, nil
}

// WireReply is the reply frame to send to the client that submitted the
// op. It is Reply, except for a successful CreatePersonalAccessToken
// admitted on this node: the committed (cached, identical on every
// replica) reply carries an empty success payload, and the node that
// minted the token answers with the RawToken payload instead, passing
// the Prepare.RawToken it kept (client-plane.md 8.3.2). A replay never
// sees the cached success: Preflight answers it R 51 (5.3).
func (r Result) WireReply(rawToken string) []byte {
	if r.Operation != wire.OpCreatePersonalAccessToken || r.Code != 0 || rawToken == "" || len(r.Reply) < wire.HeaderSize {
		return r.Reply
	}
	frame := append([]byte(nil), r.Reply[:wire.HeaderSize]...)
	frame = wire.RawToken{Token: rawToken}.AppendTo(wire.AppendResultOK(frame))
	wire.HeaderOf(frame).SetSize(uint32(len(frame)))
	return frame
}

// GetPersonalAccessTokens (41): the caller's tokens as PatEntry, sorted by
// name (3.4.3 Recommended); an empty body when there are none.
func (s *State) GetPersonalAccessTokens(userID uint32) (wire.ErrorCode, []byte) {
	u, ok := s.users[userID]
	if !ok {
		return 0, nil
	}
	var b []byte
	for _, t := range sortedTokens(u) {
		b = wire.PatEntry{Name: t.Name, ExpiryAt: t.ExpiryAt}.AppendTo(b)
	}
	return 0, b
}

// ExpiredTokens lists the tokens expired at nowUs, ascending by (user id,
// name), for the token cleaner (3.9): the shell submits CleanupToken for
// each, at most 256 per batch.
func (s *State) ExpiredTokens(nowUs uint64) []TokenRef {
	var out []TokenRef
	for _, u := range s.sortedUsers() {
		for _, t := range sortedTokens(u) {
			if t.expired(nowUs) {
				out = append(out, TokenRef{UserID: u.ID, Name: t.Name})
			}
		}
	}
	return out
}

// LoginWithToken verifies a token login (client-plane.md 5.2 step 4;
// server-behaviour.md 3.8): the BLAKE3 digest of token is looked up; an
// unknown or expired (expiry_at <= nowUs) token, or a missing owner, is
// EvictInvalidToken; an inactive owner is EvictUserInactive. It returns
// the owner's id and 0 on success.
func (s *State) LoginWithToken(token string, nowUs uint64) (uint32, wire.EvictionReason) {
	return s.LoginWithTokenHash(TokenHash(token), nowUs)
}

// LoginWithTokenHash is LoginWithToken for a token whose digest
// (TokenHash) was computed elsewhere: the lookup reads committed state as
// it is now.
func (s *State) LoginWithTokenHash(hash string, nowUs uint64) (uint32, wire.EvictionReason) {
	t, ok := s.tokenByHash[hash]
	if !ok || t.expired(nowUs) {
		return 0, wire.EvictInvalidToken
	}
	u, ok := s.users[t.OwnerID]
	if !ok || u.Tokens[t.Name] != t {
		return 0, wire.EvictInvalidToken
	}
	if u.Status != wire.UserActive {
		return 0, wire.EvictUserInactive
	}
	return u.ID, 0
}

func sortedTokens(u *User) []*Token {
	out := make([]*Token, 0, len(u.Tokens))
	for _, t := range u.Tokens {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
