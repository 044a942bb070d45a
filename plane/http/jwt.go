package httpplane

import (
	"container/heap"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
	"github.com/zeebo/blake3"

	"iggynode/config"
)

// claims are the issued token's claims in the order of http.md 3.4.2.
type claims struct {
	JTI string           `json:"jti"`
	Iss string           `json:"iss"`
	Aud audience         `json:"aud"`
	Sub string           `json:"sub"`
	Iat *jwt.NumericDate `json:"iat"`
	Exp *jwt.NumericDate `json:"exp"`
	Nbf *jwt.NumericDate `json:"nbf,omitempty"`
}

// audience reads a string or an array and writes a single string when it
// holds one value (3.4.2: aud is a string).
type audience []string

func (a audience) MarshalJSON() ([]byte, error) {
	if len(a) == 1 {
		return json.Marshal(a[0])
	}
	return json.Marshal([]string(a))
}

func (a *audience) UnmarshalJSON(b []byte) error {
	var s jwt.ClaimStrings
	if err := s.UnmarshalJSON(b); err != nil {
		return err
	}
	*a = audience(s)
	return nil
}

func (c *claims) GetExpirationTime() (*jwt.NumericDate, error) { return c.Exp, nil }
func (c *claims) GetIssuedAt() (*jwt.NumericDate, error)       { return c.Iat, nil }
func (c *claims) GetNotBefore() (*jwt.NumericDate, error)      { return c.Nbf, nil }
func (c *claims) GetIssuer() (string, error)                   { return c.Iss, nil }
func (c *claims) GetSubject() (string, error)                  { return c.Sub, nil }
func (c *claims) GetAudience() (jwt.ClaimStrings, error)       { return jwt.ClaimStrings(c.Aud), nil }

// issuer signs and verifies the node's JWTs (http.md 3.4, 3.5) and keeps
// the revocation list of logged-out tokens.
type issuer struct {
	cfg      config.HTTPJWT
	method   jwt.SigningMethod
	sign     []byte
	verify   []byte
	lifetime time.Duration
	now      func() time.Time
	revoked  *revocations
}

// keyFile is where a generated signing key lives, under system.path.
const keyFile = "http_jwt_secret"

// newIssuer resolves the key material of 1.3: a configured secret; else,
// in a cluster with cluster.auth, the key derived from the shared secret
// (1.3.2, so every node accepts every node's tokens); else a generated
// key persisted in dataDir with mode 0600, so tokens survive a restart.
// clusterKey reports whether the key is cluster-wide.
func newIssuer(cfg config.HTTPJWT, dataDir, clusterSecret string, now func() time.Time) (i *issuer, clusterKey bool, err error) {
	sign, verify, err := cfg.Secrets()
	if err != nil {
		return nil, false, err
	}
	switch {
	case sign != nil:
		clusterKey = true // configured: the operator gives every node the same one
	case clusterSecret != "":
		var out [32]byte
		blake3.DeriveKey("apache-iggy server http-jwt v1 psk->hs256-key", []byte(clusterSecret), out[:])
		sign = []byte(hex.EncodeToString(out[:]))
		verify, clusterKey = sign, true
	default:
		if sign, err = loadOrCreateKey(filepath.Join(dataDir, keyFile)); err != nil {
			return nil, false, err
		}
		verify = sign
	}
	secs, err := cfg.AccessTokenLifetimeSeconds()
	if err != nil {
		return nil, false, err
	}
	if now == nil {
		now = time.Now
	}
	return &issuer{cfg: cfg, method: jwt.GetSigningMethod(cfg.Algorithm), sign: sign, verify: verify,
		lifetime: time.Duration(secs) * time.Second, now: now,
		revoked: newRevocations(int(cfg.MaxRevokedTokens))}, clusterKey, nil
}

// loadOrCreateKey reads the persisted key, or writes a fresh one
// (48 random bytes, hex) with mode 0600.
func loadOrCreateKey(path string) ([]byte, error) {
	if b, err := os.ReadFile(path); err == nil && len(b) >= 32 {
		return b, nil
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("http jwt key %s: %w", path, err)
	}
	var raw [48]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return nil, err
	}
	key := []byte(hex.EncodeToString(raw[:]))
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, key, 0o600); err != nil {
		return nil, fmt.Errorf("http jwt key: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, fmt.Errorf("http jwt key: %w", err)
	}
	return key, nil
}

// token is a verified credential.
type token struct {
	userID uint32
	jti    string
	exp    time.Time
}

// issue mints a token for userID (3.4).
func (i *issuer) issue(userID uint32) (string, uint64, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return "", 0, err
	}
	iat := i.now().Truncate(time.Second)
	c := &claims{JTI: id.String(), Iss: i.cfg.Issuer, Aud: audience{i.cfg.Audience}, Sub: strconv.FormatUint(uint64(userID), 10),
		Iat: jwt.NewNumericDate(iat), Exp: jwt.NewNumericDate(iat.Add(i.lifetime)),
		Nbf: jwt.NewNumericDate(iat.Add(i.cfg.NotBefore.D()))}
	t := jwt.NewWithClaims(i.method, c)
	s, err := t.SignedString(i.sign)
	return s, uint64(c.Exp.Unix()), err
}

var errBadToken = errors.New("invalid token")

// check verifies a self-issued token (3.5), and refuses a revoked one.
func (i *issuer) check(raw string) (token, error) {
	var c claims
	p := jwt.NewParser(jwt.WithValidMethods([]string{i.cfg.Algorithm}), jwt.WithLeeway(i.cfg.ClockSkew.D()),
		jwt.WithExpirationRequired(), jwt.WithTimeFunc(i.now))
	if _, err := p.ParseWithClaims(raw, &c, func(*jwt.Token) (any, error) { return i.verify, nil }); err != nil {
		return token{}, fmt.Errorf("%w: %w", errBadToken, err)
	}
	if !slices.Contains(config.TrimList(i.cfg.ValidIssuers), c.Iss) {
		return token{}, fmt.Errorf("%w: issuer %q", errBadToken, c.Iss)
	}
	valid := config.TrimList(i.cfg.ValidAudiences)
	if !slices.ContainsFunc(c.Aud, func(a string) bool { return slices.Contains(valid, a) }) {
		return token{}, fmt.Errorf("%w: audience", errBadToken)
	}
	uid, err := strconv.ParseUint(c.Sub, 10, 32)
	if err != nil {
		return token{}, fmt.Errorf("%w: subject %q", errBadToken, c.Sub)
	}
	t := token{userID: uint32(uid), jti: c.JTI, exp: c.Exp.Time}
	if c.JTI != "" && i.revoked.has(c.JTI) {
		return token{}, fmt.Errorf("%w: logged out", errBadToken)
	}
	return t, nil
}

// revoke adds a logged-out token to the revocation list until its expiry
// plus the clock skew (after which check refuses it anyway).
func (i *issuer) revoke(t token) {
	if t.jti != "" {
		i.revoked.add(t.jti, t.exp.Add(i.cfg.ClockSkew.D()), i.now())
	}
}

// revocations is the bounded list of logged-out token ids (ours: upstream
// never revokes, 3.7.3). Entries leave at their token's expiry; when the
// list is full the entry closest to its expiry makes room.
type revocations struct {
	mu    sync.Mutex
	max   int
	byJTI map[string]*revoked
	order revokedHeap
}

type revoked struct {
	jti   string
	until time.Time
	index int
}

func newRevocations(max int) *revocations {
	return &revocations{max: max, byJTI: map[string]*revoked{}}
}

func (r *revocations) add(jti string, until, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.prune(now)
	if _, ok := r.byJTI[jti]; ok {
		return
	}
	for len(r.byJTI) >= r.max && len(r.order) > 0 {
		old := heap.Pop(&r.order).(*revoked)
		delete(r.byJTI, old.jti)
	}
	e := &revoked{jti: jti, until: until}
	heap.Push(&r.order, e)
	r.byJTI[jti] = e
}

func (r *revocations) has(jti string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.byJTI[jti]
	return ok
}

func (r *revocations) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.byJTI)
}

// prune drops entries whose token expired. Lock held.
func (r *revocations) prune(now time.Time) {
	for len(r.order) > 0 && r.order[0].until.Before(now) {
		old := heap.Pop(&r.order).(*revoked)
		delete(r.byJTI, old.jti)
	}
}

type revokedHeap []*revoked

func (h revokedHeap) Len() int           { return len(h) }
func (h revokedHeap) Less(a, b int) bool { return h[a].until.Before(h[b].until) }
func (h revokedHeap) Swap(a, b int)      { h[a], h[b] = h[b], h[a]; h[a].index = a; h[b].index = b }
func (h *revokedHeap) Push(x any)        { e := x.(*revoked); e.index = len(*h); *h = append(*h, e) }
func (h *revokedHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
