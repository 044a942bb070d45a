// Package client is the Go SDK of iggynode: a client for the Apache Iggy
// binary protocol 0.11.0 built on package wire (every byte is encoded and
// decoded there; this package holds no codec of its own). Applications,
// cmd/iggy, cmd/bench and the end-to-end tests use it.
//
// # What it does
//
//   - Transport seam (transports.md 1): a Transport dials a Conn that writes
//     one frame and reads one frame; Options.Transport (or the connection
//     string's scheme) picks one, Options.Dialer replaces it. The commands,
//     sessions, request numbering, replays, reconnects and leader redirects
//     are the same on every carriage; a redirect dials the roster port of
//     the transport in use (tcp_port, quic_port or websocket_port).
//   - TCP and TCP+TLS (5): frames back to back; certificate verification on
//     by default, a CA PEM file, a server name, TCP_NODELAY.
//   - QUIC (4, quic-go): a UDP socket bound to 127.0.0.1:0 (configurable)
//     and one connection per dial; each request, replays included, opens a
//     fresh bidirectional stream, writes the frame and finishes the send side
//     (FIN), then reads exactly one frame (an Eviction on any stream) and the
//     server's FIN. A stream finished without a frame is a lost connection
//     (the SDK's EmptyResponse). No ALPN; certificates verified only with
//     ValidateCertificate (against QUIC.CAFile or the system roots) for
//     server name "localhost" unless set. keep_alive_interval,
//     max_idle_timeout, initial_mtu, receive_window and
//     max_concurrent_bidi_streams become quic-go's Config;
//     response_buffer_size bounds a reply (NewQUICTransport).
//   - WebSocket and WSS (6, gorilla/websocket): ws://host:port/ or wss://,
//     no subprotocol, no compression, no proxy. Each request is one binary
//     message; each reply must be one binary message exactly its size field
//     long, else a *ProtocolError that drops the connection. Pings are
//     answered by the library. WSS verifies only when asked
//     (tls_validate_certificate), against tls_ca_file, for tls_domain or the
//     address's host. Buffer sizes and max_message_size come from the
//     options (NewWSTransport).
//   - Frame acceptance as the Go SDK does it (client-plane.md 4.4): the size
//     must lie in 256..=64 MiB before the body is read, the command must be
//     Reply (8) or Eviction (13), a reply must echo the request number; any
//     violation drops the connection. A nonzero status is *wire.StatusError,
//     a status-0 reply must carry a defined operation (else InvalidCommand),
//     and that operation byte decides whether a result section is stripped
//     (*wire.ResultError on a rejection). An eviction is *wire.EvictionError
//     mapped per section 16; the connection and the session are dropped.
//   - Sessions (5.2-5.5): Login and LoginWithToken run the register
//     handshake (operation 1, request 0, session 0, a fresh random 128-bit
//     client id, ClientVersionInfo{ProtocolVersion, "iggynode-go", version} +
//     credentials); a bound session is logged out first. Request numbers
//     follow 5.3: the counter starts at 1 after each login, Logout and
//     metadata operations send it and advance it, partition and
//     non-replicated requests send it unchanged. Request checksums (12.3)
//     are off by default (Go SDK) and on with StampRequestChecksums (Rust
//     SDK: Register, Logout, 128..=149).
//   - Transient results: 57 is replayed on the same connection with the
//     same header every 50 ms until the request deadline; 58 is replayed
//     with backoff (50 ms doubling to 400 ms, github.com/cenkalti/backoff/v5)
//     for about 2 s, then reported. Reconnects keep the reference's fixed
//     Reconnect.Interval (transports.md 8.5), which is no backoff.
//   - Deadlines: every request, its replays and any reconnect it triggers
//     are bounded by the context and by RequestTimeout (30 s by default); a
//     login (Register) by LoginTimeout instead, when set (Argon2id and, in
//     a cluster, a metadata commit make it the slowest request of a loaded
//     node). A request that times out drops the connection (a late reply
//     would desynchronise the stream) and reports Disconnected.
//   - Reconnect: after a dropped connection (I/O error, peer close,
//     deadline) the client redials with the configured retries and interval,
//     waits out ReestablishAfter since the last connect, logs in again with
//     the stored credentials under a fresh client id, and resends the request
//     once when that is safe: reads and pings always, metadata and partition
//     operations and the cluster changes 9001..9003 only if the frame was
//     not fully written.
//   - Leader redirection (7.15, transports.md 8.6): after every successful
//     login the client reads the roster (code 12). With two or more nodes it
//     moves to the first healthy leader when that leader's address for the
//     transport differs from the dialled one (hosts lower-cased, localhost
//     read as 127.0.0.1, IP literals by value, no DNS), at most 3 times; a
//     leaderless roster is re-read every 250 ms for up to 5 s. One node, a
//     deny or an undecodable roster leave the client where it is. Healthy
//     nodes become reconnect candidates. A reconnect starts at the
//     candidate after the node it lost and moves one on per failed attempt,
//     across requests: a node that hangs (paused, cut off) costs a whole
//     request deadline per attempt, and must not be dialled again first.
//   - Cluster admin (docs/reconfiguration.md, "Admin surface"): ClusterAdd,
//     ClusterRemove, ClusterReplace and ClusterStatus send iggynode's codes
//     9001..9004 as non-replicated requests on the same connection as the
//     metadata writes (the leader's after login; any node forwards them to
//     the metadata primary) and decode the wire.ClusterStatusReply every
//     one of them answers. The HTTP transport has no route for them
//     (FeatureUnavailable).
//   - Typed methods for every command code, returning wire's types; Balanced
//     and MessagesKey sends are routed client-side (14.2) from a per-topic
//     partition count cache; SendRaw sends any code as section 6 "Raw
//     requests" describes; connection strings follow transports.md 8.
//
// Concurrency: a Client is safe for concurrent use; requests are serialised
// by a mutex, one in flight per connection (lockstep, transports.md 1.3).
// Buffers are reused: a send encodes its batch into the client's frame
// buffer and writes it in one call, allocating nothing per message (one
// allocation per send: the returned confirmations); a reply is read into
// the connection's reused buffer and decoded into owned values.
// PollMessages copies the records once into fresh memory, so the result
// outlives later requests; PollMessagesInto and PollConsumerGroupInto
// reuse a caller's Polled instead and, on the binary carriages, swap read
// buffers with it, so a steady consumer neither allocates nor copies per
// poll (its previous records become invalid). Error-path values
// (errors.As targets) are kept out of the success path, where they would
// escape and allocate per request.
//
// # Choices where the spec is silent
//
//   - Reads whose "not found" answer is an empty body return an error code
//     instead of an empty value: GetStream wire.ErrStreamIdNotFound, GetTopic
//     wire.ErrTopicIdNotFound, GetUser wire.ErrResourceNotFound, GetClient
//     wire.ErrClientNotFound, GetConsumerGroup
//     wire.ErrConsumerGroupIdNotFound, SyncConsumerGroup
//     wire.ErrConsumerGroupMemberNotFound. GetConsumerOffset returns nil, nil
//     when nothing is stored. Empty lists (including personal access tokens,
//     which the Go SDK reports as EmptyMessagePayload) are empty slices.
//   - Replicated requests (metadata and partition operations) without a
//     bound session are refused locally with wire.ErrUnauthenticated rather
//     than sent to earn Eviction(NoSession) and lose the connection.
//   - An eviction is not retried; the next request redials and, with stored
//     credentials, logs in again. An unsolicited eviction (StaleClient) is
//     read as the answer to the next request. Protocol violations (bad size,
//     command or request echo) drop the connection and are not retried.
//   - Reconnect.Retries == 0 disables the in-request reconnect and resend;
//     the next request still dials once. Negative means unlimited.
//   - A request answered 58 for the whole budget is reported; the client
//     does not re-read the roster then (the Go SDK does).
//   - The partition-count cache is dropped on S 3007 (as the Go SDK does),
//     also on S 20 (what a compatible server answers for a stale partition,
//     8.4.2), and whenever this client creates or deletes topics, streams or
//     partitions.
//   - Headers carry timestamp 0, release 0, and after login the session and
//     user id of the login reply on every request, reads included.
//   - Logout forgets the stored credentials; Close does not send a Logout
//     (the server logs out a closed connection, transports.md 7.3).
//   - The heartbeat pings only after HeartbeatInterval of idleness, gives the
//     ping half the interval, skips a beat while a request is in flight and
//     never dials.
//   - Messages are sent as given (OriginTimestamp included); NewMessage
//     fills a random id and the current time. CreateUser and ChangePassword
//     check username (3..=50) and password (3..=100) lengths locally.
//   - Connection strings: only a bad retry count is InvalidNumberValue
//     (8.2, 8.3); every other bad number or duration is
//     InvalidConnectionString. Durations accept the humantime units the Rust
//     SDK accepts (ns, us, ms, s, m, h, d, w and their long forms, summed:
//     "1h 30m"). iggy+http:// (and Options.Transport "http") drive the REST
//     API through HTTPTransport (http.go), which translates each request
//     frame into its route and the JSON reply back into a frame.
//   - QUIC: send_window and datagram_send_buffer_size have no quic-go
//     counterpart and are only kept; receive_window fixes the connection
//     receive window (quic-go does not auto-tune past it);
//     max_idle_timeout=0 advertises a year, so the server's timeout rules.
//     Bytes after the reply frame on a stream are a protocol violation. The
//     client binds 127.0.0.1:0 as the SDK does, so a remote server needs
//     QUIC.ClientAddress (e.g. "0.0.0.0:0").
//   - WebSocket: max_write_buffer_size, max_frame_size and
//     accept_unmasked_frames have no gorilla counterpart on a client and are
//     only kept; the write buffer (also gorilla's fragment size) is capped at
//     16 MiB, the server's frame limit. A text reply is refused, although
//     the Rust SDK reads it leniently. Closing sends a Close frame (100 ms
//     at most) before the socket closes; cancelling a request closes the
//     socket.
package client
