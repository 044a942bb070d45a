package config

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
)

// HTTP is the http section: the REST listener (docs/spec/http.md 1.2,
// package plane/http). Enabled by default, on loopback, as upstream.
type HTTP struct {
	Enabled bool   `toml:"enabled"`
	Address string `toml:"address"`
	// MaxRequestSize caps every request body (1.5); "2 MB" by default.
	MaxRequestSize Size `toml:"max_request_size"`
	// WebUI asks for the embedded dashboard, which this build does not
	// carry: a warning at start, nothing served (1.2).
	WebUI   bool        `toml:"web_ui"`
	CORS    HTTPCORS    `toml:"cors"`
	JWT     HTTPJWT     `toml:"jwt"`
	Metrics HTTPMetrics `toml:"metrics"`
	// TLS is http.tls: HTTPS with HTTP/2 by ALPN (1.1.2). cert_file and
	// key_file must name a readable, matching PEM pair; self_signed (ours)
	// serves an ephemeral certificate instead.
	TLS TLS `toml:"tls"`
	// MaxSessions (ours) bounds the write sessions and read connections the
	// listener keeps for credentials (3.8.2); 0 means
	// metadata.clients_table_max / 2.
	MaxSessions uint32 `toml:"max_sessions"`
	// SessionIdleTimeout (ours) releases a credential's session unused for
	// this long; the next request opens a new one (0: only at expiry).
	SessionIdleTimeout Duration `toml:"session_idle_timeout"`
}

// HTTPCORS is http.cors (http.md 8).
type HTTPCORS struct {
	Enabled             bool     `toml:"enabled"`
	AllowedMethods      []string `toml:"allowed_methods"`
	AllowedOrigins      []string `toml:"allowed_origins"`
	AllowedHeaders      []string `toml:"allowed_headers"`
	ExposedHeaders      []string `toml:"exposed_headers"`
	AllowCredentials    bool     `toml:"allow_credentials"`
	AllowPrivateNetwork bool     `toml:"allow_private_network"`
}

// HTTPJWT is http.jwt (http.md 1.2, 1.3, 3).
type HTTPJWT struct {
	Algorithm      string   `toml:"algorithm"`
	Issuer         string   `toml:"issuer"`
	Audience       string   `toml:"audience"`
	ValidIssuers   []string `toml:"valid_issuers"`
	ValidAudiences []string `toml:"valid_audiences"`
	// AccessTokenExpiry is a humantime duration, or none / unlimited /
	// never_expire, or default / server_default (treated as 1 h, the
	// recommendation of 3.4.3).
	AccessTokenExpiry string   `toml:"access_token_expiry"`
	ClockSkew         Duration `toml:"clock_skew"`
	NotBefore         Duration `toml:"not_before"`
	// EncodingSecret and DecodingSecret are secrets (masked in the runtime
	// copy). Both empty: the cluster-derived key, else a generated key
	// persisted in the data directory (plane/http).
	EncodingSecret  string `toml:"encoding_secret"`
	DecodingSecret  string `toml:"decoding_secret"`
	UseBase64Secret bool   `toml:"use_base64_secret"`
	// MaxRevokedTokens (ours) bounds the logout revocation list; entries
	// leave it at their token's expiry.
	MaxRevokedTokens uint32 `toml:"max_revoked_tokens"`
	// TrustedIssuers are external (A2A) issuers (3.10): parsed and
	// validated; not implemented, so configuring one is a warning.
	TrustedIssuers []HTTPTrustedIssuer `toml:"trusted_issuers"`
}

// HTTPTrustedIssuer is one [[http.jwt.trusted_issuers]] entry.
type HTTPTrustedIssuer struct {
	Issuer   string `toml:"issuer"`
	Audience string `toml:"audience"`
	JWKSURL  string `toml:"jwks_url"`
	UserID   uint32 `toml:"user_id"`
}

// HTTPMetrics is http.metrics: the Prometheus route.
type HTTPMetrics struct {
	Enabled  bool   `toml:"enabled"`
	Endpoint string `toml:"endpoint"`
	// Token (ours) is a static bearer token the route also accepts, for
	// scrapers that cannot log in; secret.
	Token string `toml:"token"`
}

func defaultHTTP() HTTP {
	return HTTP{
		Enabled: true, Address: "127.0.0.1:3000", MaxRequestSize: 2_000_000,
		CORS: HTTPCORS{Enabled: true, AllowedMethods: []string{"GET", "POST", "PUT", "DELETE"}, AllowedOrigins: []string{"*"},
			AllowedHeaders: []string{"content-type", "authorization"}, ExposedHeaders: []string{"iggy-view"}},
		JWT: HTTPJWT{Algorithm: "HS256", Issuer: "iggy.apache.org", Audience: "iggy.apache.org",
			ValidIssuers: []string{"iggy.apache.org"}, ValidAudiences: []string{"iggy.apache.org"},
			AccessTokenExpiry: "1 h", ClockSkew: Duration(5e9), MaxRevokedTokens: 65536},
		Metrics:            HTTPMetrics{Enabled: true, Endpoint: "/metrics"},
		TLS:                TLS{CertFile: "core/certs/iggy_cert.pem", KeyFile: "core/certs/iggy_key.pem"},
		SessionIdleTimeout: Duration(300e9),
	}
}

// JWTNeverExpires is the lifetime of a never-expiring token (3.4.3).
const JWTNeverExpires = 1_000_000_000

// AccessTokenLifetimeSeconds parses access_token_expiry (3.4.3): whole
// seconds of a duration; none, unlimited and never_expire give
// JWTNeverExpires; default and server_default give one hour.
func (j HTTPJWT) AccessTokenLifetimeSeconds() (uint64, error) {
	switch strings.ToLower(strings.TrimSpace(j.AccessTokenExpiry)) {
	case "none", "unlimited", "never_expire":
		return JWTNeverExpires, nil
	case "default", "server_default", "":
		return 3600, nil
	}
	d, err := ParseDuration(j.AccessTokenExpiry)
	if err != nil {
		return 0, fmt.Errorf("http.jwt.access_token_expiry: %w", err)
	}
	return uint64(d.Seconds()), nil
}

// Secrets returns the HMAC key material of 1.3.1 and 1.3.3: the signing
// and verification keys (the one configured when only one is), or nil,
// nil when neither is configured.
func (j HTTPJWT) Secrets() (sign, verify []byte, err error) {
	decode := func(key, s string) ([]byte, error) {
		if s == "" || !j.UseBase64Secret {
			return []byte(s), nil
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("%s is not valid base64 (InvalidJwtSecret, 74)", key)
		}
		return b, nil
	}
	if sign, err = decode("http.jwt.encoding_secret", j.EncodingSecret); err != nil {
		return nil, nil, err
	}
	if verify, err = decode("http.jwt.decoding_secret", j.DecodingSecret); err != nil {
		return nil, nil, err
	}
	switch {
	case len(sign) == 0 && len(verify) == 0:
		return nil, nil, nil
	case len(sign) == 0:
		sign = verify
	case len(verify) == 0:
		verify = sign
	}
	return sign, verify, nil
}

var corsMethods = map[string]bool{http.MethodGet: true, http.MethodPost: true, http.MethodPut: true, http.MethodDelete: true,
	http.MethodHead: true, http.MethodOptions: true, http.MethodPatch: true, http.MethodConnect: true, http.MethodTrace: true}

// TrimList drops blank entries and trims the rest (8.5).
func TrimList(list []string) []string {
	var out []string
	for _, s := range list {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// validateHTTP applies the boot refusals of http.md 1.2, 1.3 and 8.5.
func validateHTTP(c Config, check checkFunc) {
	h := c.HTTP
	check(strings.HasPrefix(h.Metrics.Endpoint, "/"), "http.metrics.endpoint %q must start with /", h.Metrics.Endpoint)
	switch h.JWT.Algorithm {
	case "HS256", "HS384", "HS512":
	default:
		check(false, "http.jwt.algorithm %q must be HS256, HS384 or HS512 (InvalidJwtAlgorithm, 73)", h.JWT.Algorithm)
	}
	if _, err := h.JWT.AccessTokenLifetimeSeconds(); err != nil {
		check(false, "%w", err)
	}
	if sign, verify, err := h.JWT.Secrets(); err != nil {
		check(false, "%w", err)
	} else {
		// 10 #18: different secrets would fail every token; refuse.
		check(string(sign) == string(verify), "http.jwt.encoding_secret and http.jwt.decoding_secret differ: every issued token would fail verification")
	}
	check(len(TrimList(h.JWT.ValidIssuers)) > 0, "http.jwt.valid_issuers must not be empty")
	check(len(TrimList(h.JWT.ValidAudiences)) > 0, "http.jwt.valid_audiences must not be empty")
	check(h.JWT.MaxRevokedTokens > 0, "http.jwt.max_revoked_tokens must be non-zero")
	for i, t := range h.JWT.TrustedIssuers {
		check(t.Issuer != "" && t.Audience != "" && t.JWKSURL != "", "http.jwt.trusted_issuers[%d]: issuer, audience and jwks_url are required", i)
		check(t.UserID != 0, "http.jwt.trusted_issuers[%d].user_id must be non-zero", i)
	}
	check(h.MaxRequestSize > 0, "http.max_request_size must be non-zero")
	if h.TLS.Enabled && !h.TLS.SelfSigned {
		check(h.TLS.CertFile != "" && h.TLS.KeyFile != "", "http.tls.enabled needs http.tls.cert_file and http.tls.key_file")
	}
	validateCORS(h.CORS, check)
}

func validateCORS(c HTTPCORS, check checkFunc) {
	if !c.Enabled {
		return
	}
	for _, m := range TrimList(c.AllowedMethods) {
		check(corsMethods[strings.ToUpper(m)], "http.cors.allowed_methods: %q is not an HTTP method (InvalidConfiguration, 2)", m)
	}
	origins := TrimList(c.AllowedOrigins)
	for i, o := range origins {
		check(o != "*" || i == 0, "http.cors.allowed_origins: * must be the first entry")
		check(o == "*" || (strings.Contains(o, "://") && !strings.ContainsAny(o, " \t,")), "http.cors.allowed_origins: %q is not an origin", o)
	}
	for _, list := range [][]string{c.AllowedHeaders, c.ExposedHeaders} {
		for _, h := range TrimList(list) {
			check(h == "*" || validToken(h), "http.cors: %q is not a header name", h)
		}
	}
	if c.AllowCredentials {
		check(len(origins) == 0 || origins[0] != "*", "http.cors.allow_credentials cannot be combined with a wildcard origin")
		lone := func(l []string) bool { t := TrimList(l); return len(t) == 1 && t[0] == "*" }
		check(!lone(c.AllowedHeaders) && !lone(c.ExposedHeaders), "http.cors.allow_credentials cannot be combined with a lone * header list")
	}
}

// validToken reports whether s is an HTTP token (RFC 9110 5.6.2).
func validToken(s string) bool {
	for _, r := range s {
		if r > 127 || !(r == '!' || r == '#' || r == '$' || r == '%' || r == '&' || r == '\'' || r == '*' || r == '+' ||
			r == '-' || r == '.' || r == '^' || r == '_' || r == '`' || r == '|' || r == '~' ||
			('0' <= r && r <= '9') || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z')) {
			return false
		}
	}
	return s != ""
}
