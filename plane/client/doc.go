// Package clientplane is the client edge of the node: listeners that turn
// every binary transport (TCP, TCP+TLS, QUIC, WebSocket, WSS) into the same
// stream of request frames, and replies back into bytes (transports.md;
// client-plane.md 3).
//
// The edge knows framing, never sessions: for each accepted connection it
// asks the Handler for a Session, feeds it every complete frame that passes
// the transport-level checks, and gives it a Conn to send reply frames on.
// The connection actor behind the Session does not know which transport it
// serves; only Conn.Transport tells (for GetClients).
//
// # Frame acceptance (transports.md 1.2, client-plane.md 3)
//
// The size field is checked as soon as the 256 header bytes are in, before
// any body byte is read or buffered:
//   - size < 256, size > Config.MaxFrameSize (64 MiB default), or a command
//     byte > 29 is a framing error: TCP, TLS, WS and WSS close the
//     connection, QUIC abandons only that stream;
//   - a valid command other than Request (5) is ignored with a warning and
//     the connection kept;
//   - everything else is handed to the Session, which applies the
//     RequestHeader rules.
//
// The batch of a SendMessages request is checked (client-plane.md 13.1
// steps 3-6, wire.SendCheck) by the reader as its bytes arrive: the
// messages whole in what has been read are hashed between reads, while
// the rest is on its way and in the cache, and the Session gets the
// verdict with the frame. It is the verdict of one pass over the whole
// batch; the Session still answers in the spec's order (a bad batch is
// refused only after the routing checks).
//
// # TCP and TCP+TLS (transports.md 5)
//
// Frames back to back on the byte stream, read header, then size-256 body
// bytes. One reader and one writer goroutine per connection; the writer
// batches queued frames and flushes when the queue is empty. TLS (1.2+, no
// client auth, no ALPN) replaces plaintext on the port when Config.TLS is
// set; its handshake runs after accept within HandshakeGrace, and a failure
// closes the socket before any Session is opened.
//
// # WebSocket and WSS (transports.md 6)
//
// The listener owns its sockets and reads the HTTP/1.1 upgrade itself, so
// that the TLS handshake and the upgrade share one HandshakeGrace budget.
// Any path; no subprotocol, no compression, no Origin check. One frame per
// binary message in both directions: a message shorter than 256 bytes or
// whose length differs from size, and any text message, close the
// connection. Pings are answered by gorilla. Teardown (framing error, read
// error, peer Close, Close) sends a Close frame without status code (the
// peer sees 1005), then for WSS close_notify, within CloseGrace.
//
// # QUIC (transports.md 4)
//
// TLS 1.3 without ALPN (quic-go asks for NextProtos but does not enforce
// it; any ALPN on one side only would fail the handshake, 4.2). One serial
// loop per connection accepts one bidirectional stream at a time
// (max_concurrent_bidi_streams 1 by default): it reads exactly one frame,
// drops the receive side (CancelRead, so a client that never sends FIN
// cannot hold the stream), hands the frame to the Session and waits for
// the outbound frame that answers it: a Reply whose request number (offset
// 200) equals the request's (offset 168); a Reply with another number is
// stale and discarded; an Eviction answers whatever stream waits, or the
// next one. The frame is written and the send side finished (FIN). A
// framing error, a stream that ends early, or a stream that has not
// delivered its frame within StreamReadTimeout is abandoned: receive side
// dropped, send side finished empty, the connection kept. No reply within
// ReplyBackstop (60 s) closes the connection with 0x1003, so a late reply
// can never answer a later stream; so does Close ("shutdown").
//
// # Queues and shutdown (transports.md 1.4, 7.4)
//
// Conn.Send never blocks: a frame that does not fit the outbound queue
// (QueueCapacity, 256) is dropped and logged. TCP/WS inbound is bounded by
// MaxPending delivered-but-unanswered requests (the reader stops reading);
// QUIC's serial loop is its own bound. StopAccepting closes the listening
// socket (QUIC: refuses new handshakes; open connections share the UDP
// socket and continue). Close also closes every connection and waits for
// all of the listener's goroutines.
//
// # Limits (DESIGN.md "Scale and budgets"; issue 17)
//
// Upstream has no connection cap, idle timeout or read deadline
// (transports.md 1.5); a hostile client could then hold the node's memory
// and sockets without logging in. Every transport applies the same Limits
// through one Guard per node (limits.go) and one connGuard per connection
// (connguard.go); the config keys are `[limits]` (config package doc).
//
//   - Pre-login frame size. Until the Session calls Conn.SetLoggedIn(true)
//     a frame may be at most PreLoginMaxFrameSize, 2312 bytes: the largest
//     Register (client-plane.md 5.2) with every field at its codec
//     maximum, 256 header + 516 ClientVersionInfo (u32 and two Names of
//     255) + 512 credentials (a Name username and a Str8 password; the
//     token shape is smaller) + 4 + 1024 context (a Str32 the spec does not
//     bound and the SDKs send empty). A larger frame is refused from its
//     header alone as a framing error (1.2: TCP, TLS, WS and WSS close the
//     connection, QUIC abandons the stream); an SDK that sends a large
//     request before logging in therefore sees a disconnect where upstream
//     would answer NoSession. On TCP/WS a frame behind requests still in
//     flight is judged once they are answered, so a client that pipelines
//     its first request behind its Register is not refused.
//   - Buffers grow as bytes arrive. The body buffer starts at 64 KiB (or
//     the frame's size) and grows fourfold until the frame's size, never
//     from the size field alone; a client makes the node hold at most four
//     times what it sent. The growth steps are pooled.
//   - Frame budget. Every growth step is reserved from a node-wide budget
//     (FrameBudget, default 256 MiB) and released when the frame is handed
//     to the Session or dropped. A reader that finds no budget waits for a
//     release until its frame deadline, then the frame is refused
//     (ReasonBudget, a framing error as above); with no frame deadline it
//     does not wait. Waits never deadlock the node: every wait ends at its
//     deadline, and a frame is granted whatever it needs when nobody else
//     holds budget, so even a frame larger than the budget completes alone.
//   - Connection caps. MaxConnections per node (all transports together)
//     and MaxConnectionsPerAddress per remote IP are taken at accept: TCP,
//     TLS, WS and WSS close a socket over a cap before any handshake; QUIC
//     (whose handshake quic-go completes first) closes with 0x1003 and the
//     reason. No eviction fits: the client has sent nothing yet.
//   - Deadlines, kept by one timer per connection that sleeps until the
//     nearest one (and at most FrameTimeout, so a frame that starts later
//     is checked on time without the reader touching the timer):
//     LoginTimeout from the connection being up, or from its last logout,
//     to a successful Register (pings do not count); IdleTimeout for a
//     logged-in connection with no frame read and no request waiting for
//     its reply; FrameTimeout for a frame once its header is in
//     (slowloris). At the login deadline and the idle timeout TCP, TLS, WS
//     and WSS end the reader as if the peer had, so queued replies are
//     still written within CloseGrace, and an idle connection is first
//     sent Eviction(StaleClient) (client-plane.md 4.5, the reason for a
//     client idle past its heartbeat) for the client id of its last
//     request; QUIC closes with 0x1003 and the reason. A frame past its
//     deadline closes TCP, TLS, WS and WSS and abandons the QUIC stream
//     (4.5), like one that ends early. QUIC keeps StreamReadTimeout for a
//     stream whose header never comes.
//   - Every refusal is counted by Reason (Guard.Count, read by the node's
//     telemetry), logged at Debug, and at Warn at most once a minute per
//     reason with the count since; PartialFrameBytes is the budget in use.
//
// Not bounded here: frames delivered to a Session and not yet answered
// (MaxPending per connection) and QUIC's receive windows (bytes a peer
// actually sent, per connection).
//
// # Choices where the spec is silent or upstream differs
//
//   - The generated certificate (ECDSA P-256, one year) names localhost and
//     also 127.0.0.1 and ::1, so a verifying client may dial the loopback
//     address. It is not a CA (webpki refuses a CA as end entity).
//     ListenQUIC with a nil Config.TLS generates one (the shipped
//     quic.certificate.self_signed = true).
//   - QUIC: upstream has no per-stream read timeout; StreamReadTimeout
//     (default ReplyBackstop) keeps one stalled stream from holding its
//     connection forever. A reply write is bounded by ReplyBackstop too;
//     on failure the stream is reset. A non-Request frame, or a request the
//     Session leaves unanswered, waits for the backstop as upstream does.
//   - QUIC: quic-go aborts a handshake after twice HandshakeIdleTimeout, so
//     it is set to HandshakeGrace/2. quic-go cannot advertise "no idle
//     timeout"; MaxIdleTimeout 0 becomes one year. `send_window` has no
//     quic-go setting and is not applied. The listener is not an early one
//     and refuses 0-RTT, so the 0x1004 "0-RTT not permitted" case cannot
//     arise.
//   - WS: gorilla has no per-fragment limit (`max_frame_size`), no write
//     buffer ceiling (`max_write_buffer_size`) and always requires masked
//     client frames (`accept_unmasked_frames` false); those keys are not
//     applied. The read limit is min(max_message_size, MaxFrameSize); a
//     message over it makes gorilla close with 1009. Outbound messages
//     larger than WriteBufferSize (capped at 16 MiB) are fragmented, which
//     keeps every frame under the Rust SDK's 16 MiB frame limit (upstream
//     sends one frame). A refused upgrade gets a bare status line, then the
//     socket is closed.
//   - When the peer ends a TCP/TLS/WS connection (EOF, framing error) the
//     replies already queued are still written within CloseGrace; on
//     Close (shutdown) they are dropped.
package clientplane
