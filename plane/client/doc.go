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
