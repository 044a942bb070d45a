// Package clientplane is the client edge of the node: listeners that turn
// every binary transport into the same stream of request frames, and
// replies back into bytes (transports.md; client-plane.md 3).
//
// The edge knows framing, never sessions: for each accepted connection it
// asks the Handler for a Session, feeds it every complete frame that passes
// the transport-level checks, and gives it a Conn to send reply frames on.
// The connection actor behind the Session does not know which transport it
// serves.
//
// Frame acceptance (client-plane.md 3, transports.md 1.2):
//   - size < 256 or size > the configured maximum (64 MiB default): the
//     connection is closed;
//   - command byte > 29: the connection is closed;
//   - a valid command other than Request (5): the frame is ignored with a
//     warning, the connection kept;
//   - everything else is handed to the Session, which applies the
//     RequestHeader rules.
//
// Reads run in one goroutine per connection and writes in another, so an
// actor never blocks on a socket. A connection's pending requests are
// bounded (MaxPending): past it the reader stops reading until the session
// catches up, which is the only backpressure a lockstep protocol needs.
package clientplane
