// Package httpplane is the node's HTTP REST edge (docs/spec/http.md): one
// listener on http.address serving the 45 routes of section 2.1, /ping,
// the metrics exposition (mounted from package telemetry) and GET /ready
// (ours: 503 until the node caught up with its cluster, for readiness
// probes), over HTTP/1.1, and HTTP/2 by ALPN when http.tls is on.
//
// # How a request reaches the actors
//
// No rule of the binary plane is copied here. Each route builds the
// binary request of its command (CP 6) with package wire's encoders and
// sends it on a virtual connection: a clientplane.Conn without a socket
// that the node opens through the same Handler as an accepted TCP
// connection, so a connection actor owns it and the metadata and
// partition actors answer it. Admission, permissions, validation,
// replication, forwarding of logins and partition writes to their
// primaries, and every error code are the actors'. The reply frame comes
// back on Conn.Send and is rendered with package wire/jsonmodel; its
// status or result code becomes the HTTP status of 7.2.
//
// Sessions (3.8): a credential (a JWT by its jti, a personal access token
// by its BLAKE3 hash) has one virtual connection, created on first use and
// asserting the credential's user (the actors check on every request that
// the user exists and is active, 10 #16). Reads run as that user with no
// session; the first write registers one (the binary Register, bound to
// the asserted user without a password), later writes reuse it. Requests
// of one credential run one at a time, as on any binary connection. The
// table holds at most http.max_sessions entries (default
// metadata.clients_table_max / 2, metric iggy.http.sessions); a full table
// sweeps expired and idle (http.session_idle_timeout) entries, then
// answers writes 503 and serves reads on a one-request connection. The
// login routes send a verify-only Register: the actors check the
// password or token exactly as for a binary login (throttle, verification
// pool) and answer with the user id, committing nothing.
//
// JWTs (3.4-3.7) are signed and verified with github.com/golang-jwt/jwt/v5
// (HS256/384/512, exp and nbf with http.jwt.clock_skew leeway; issuer and
// audience lists checked here). Key material (1.3): the configured
// secret; else in a cluster with cluster.auth the BLAKE3-derived key of
// the shared secret, so every node accepts every node's tokens; else a
// key generated once and kept in <system.path>/http_jwt_secret (0600), so
// tokens survive a restart. A raw personal access token is also a bearer:
// it is verified by the actors on every request, so a deleted token stops
// working at once.
//
// In a cluster (2.7) reads are local. A write to a Fwd route on a backup is
// relayed over HTTP to the metadata primary named by the cluster metadata
// (its advertised IP and http port), with Authorization, Content-Type and
// iggy-forwarded: 1; relaying needs the cluster-wide key. Sends and offset
// writes are never relayed: the binary plane forwards them to the
// partition's primary.
//
// # Choices (the spec's recommendations taken, and where it is silent)
//
//   - Logout revokes the presented JWT until its expiry (3.7.3, stricter
//     than upstream, invisible to the SDKs): a bounded list
//     (http.jwt.max_revoked_tokens, metric iggy.http.revoked_tokens), each
//     entry pruned at its token's expiry plus the skew; when full, the
//     entry closest to expiry makes room. Revocation is node-local (tokens
//     are stateless, 3.4.5); a logout relayed to the primary revokes there.
//     Refresh does not revoke (pinned upstream).
//   - JWTs of a deleted or inactive user are refused (10 #16);
//     access_token_expiry = server_default means 1 h (10 #17); different
//     encoding and decoding secrets refuse boot (10 #18, package config).
//   - GET /clients lists binary connections only; HTTP sessions are not
//     listed (5.1.6, 11 #2).
//   - CORS answers every OPTIONS with 200 (10 #25); Vary: Origin only when
//     a specific origin is echoed (11 #1). OPTIONS responses carry no
//     iggy-view.
//   - Framework rejections (400/404/405/413/415/422) are plain text with
//     the statuses of 7.5; 404 and 405 have empty bodies.
//   - Not implemented: trusted external issuers (3.10; configuring one is
//     a warning), the /ui assets (the build embeds no web UI), linearizable
//     reads (consistency=linearizable is accepted and served locally;
//     forwarding of GETs asking for it goes to the primary on Fwd routes),
//     the read recovery barrier of 2.6.2 (the actors answer 58 while not
//     caught up, which the plane replays like any 57/58 for up to 30 s).
package httpplane
