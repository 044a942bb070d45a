package httpplane

import (
	"context"
	"errors"
	"sync"
	"time"

	clientplane "iggynode/plane/client"
	"iggynode/wire"
)

// sessions is the bounded table of credential sessions (http.md 3.8):
// key jwt:<jti> or pat:<hex BLAKE3 of the token>. A full table sweeps the
// expired and idle entries; live ones are never evicted to make room (the
// caller gets 503 cannot_establish_connection).
type sessions struct {
	mu    sync.Mutex
	byKey map[string]*session
	max   int
	idle  time.Duration
	node  clientplane.Handler
	now   func() time.Time
}

var errSessionsFull = errors.New("http session table full")

func (t *sessions) open(remote string, user uint32, asserted, verifyOnly bool) *vconn {
	c := &vconn{remote: remote, user: user, asserted: asserted, verifyOnly: verifyOnly,
		replies: make(chan []byte, 4), closed: make(chan struct{})}
	c.session = t.node.Open(c)
	return c
}

// get returns the session of key, opening one for user when there is none.
func (t *sessions) get(key, remote string, user uint32, expires time.Time) (*session, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := t.byKey[key]; s != nil && !s.broken {
		return s, nil
	} else if s != nil {
		t.dropLocked(s)
	}
	if len(t.byKey) >= t.max {
		t.sweepLocked()
		if len(t.byKey) >= t.max {
			return nil, errSessionsFull
		}
	}
	s := &session{key: key, userID: user, expires: expires, conn: t.open(remote, user, true, false), clientID: newClientID()}
	s.lastUsed.Store(t.now().UnixNano())
	t.byKey[key] = s
	return s, nil
}

// drop ends a session (logout, broken, expired).
func (t *sessions) drop(s *session) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.dropLocked(s)
}

func (t *sessions) dropLocked(s *session) {
	if t.byKey[s.key] == s {
		delete(t.byKey, s.key)
	}
	s.conn.end()
}

// sweepLocked drops expired sessions and those idle past the timeout with
// nothing in flight.
func (t *sessions) sweepLocked() {
	now := t.now()
	for _, s := range t.byKey {
		expired := !s.expires.IsZero() && now.After(s.expires)
		idle := t.idle > 0 && now.Sub(time.Unix(0, s.lastUsed.Load())) > t.idle && s.inflight.Load() == 0
		if expired || idle || s.broken {
			t.dropLocked(s)
		}
	}
}

func (t *sessions) sweep() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sweepLocked()
}

func (t *sessions) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byKey)
}

func (t *sessions) closeAll() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range t.byKey {
		t.dropLocked(s)
	}
}

// verify runs a Register's credential check on a one-shot connection
// (login routes, PAT bearers): the actors verify it as for a binary login
// (throttle, verification pool) and answer with the user id, binding
// nothing. A transient answer is replayed within the budget.
func (t *sessions) verify(ctx context.Context, remote string, body wire.Body) (uint32, outcome, error) {
	c := t.open(remote, 0, false, true)
	defer c.end()
	s := &session{conn: c, clientID: newClientID()}
	var code wire.CommandCode = wire.CodeLoginRegister
	if _, ok := body.(*wire.LoginRegisterWithPAT); ok {
		code = wire.CodeLoginRegisterWithPAT
	}
	o, err := s.exchange(ctx, code, wire.OpRegister, body.AppendTo(nil))
	if err != nil || !o.ok() {
		return 0, o, err
	}
	var resp wire.LoginRegisterResponse
	if resp.Decode(o.body) != nil {
		return 0, outcome{code: wire.ErrCannotEstablishConnection}, nil
	}
	return resp.UserID, o, nil
}

// existing is key's live session, if any.
func (t *sessions) existing(key string) *session {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byKey[key]
}
