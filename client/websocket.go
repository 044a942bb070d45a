package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/gorilla/websocket"

	"iggynode/wire"
)

// wsMaxBuffer caps both buffers. The write buffer is also the size of the
// fragments gorilla cuts a message into, and the server refuses inbound
// WebSocket frames above 16 MiB (transports.md 6.2, 6.3).
const wsMaxBuffer = 16 << 20

// wsCloseGrace bounds the Close frame the client sends when it hangs up.
const wsCloseGrace = 100 * time.Millisecond

// WSTransport dials WebSocket or, with TLS set, WSS (transports.md 6):
// ws://host:port/ (wss://), no subprotocol, no compression, no proxy. Each
// request frame is one binary message; each reply is one binary message
// whose length equals its header's size (6.3). Pings are answered by the
// library while a reply is awaited.
type WSTransport struct {
	// TLS is nil for plain WebSocket.
	TLS *tls.Config
	// ReadBufferSize and WriteBufferSize size gorilla's buffers; 0 means
	// its defaults (4 KiB).
	ReadBufferSize  int
	WriteBufferSize int
	// MaxFrameSize bounds a reply message (and so its frame); 0 means
	// wire.DefaultMaxFrameSize.
	MaxFrameSize uint32
}

// NewWSTransport builds the WebSocket transport the options describe
// (transports.md 6, 8.4). With TLS enabled the server name is TLS.Domain,
// else the host part of the address; verification follows
// TLS.InsecureSkipVerify (DefaultOptions("ws") and connection strings turn
// it off unless tls_validate_certificate=true); TLS.CAFile adds trusted
// CAs. read_buffer_size and write_buffer_size size the buffers (the write
// buffer at most 16 MiB); max_message_size bounds a reply below
// MaxFrameSize. max_write_buffer_size, max_frame_size and
// accept_unmasked_frames have no gorilla counterpart on a client and are
// kept only as parsed values.
func NewWSTransport(o Options) (*WSTransport, error) {
	w := o.WebSocket
	t := &WSTransport{
		ReadBufferSize:  int(min(w.ReadBufferSize, wsMaxBuffer)),
		WriteBufferSize: int(min(w.WriteBufferSize, wsMaxBuffer)),
		MaxFrameSize:    o.MaxFrameSize,
	}
	if t.MaxFrameSize == 0 {
		t.MaxFrameSize = wire.DefaultMaxFrameSize
	}
	if w.MaxMessageSize > 0 && w.MaxMessageSize < uint64(t.MaxFrameSize) {
		t.MaxFrameSize = uint32(w.MaxMessageSize)
	}
	if o.TLS.Enabled {
		cfg, err := tlsConfig(o.TLS.Domain, o.TLS.CAFile, o.TLS.InsecureSkipVerify)
		if err != nil {
			return nil, err
		}
		t.TLS = cfg
	}
	return t, nil
}

func (t *WSTransport) Name() string { return TransportWS }

// Dial connects and runs the HTTP/1.1 upgrade on path "/" (6.1).
func (t *WSTransport) Dial(ctx context.Context, addr string) (Conn, error) {
	scheme := "ws://"
	if t.TLS != nil {
		scheme = "wss://"
	}
	var nd net.Dialer
	d := websocket.Dialer{
		NetDialContext:  nd.DialContext,
		TLSClientConfig: t.TLS, // gorilla fills an empty server name from the URL host
		ReadBufferSize:  t.ReadBufferSize,
		WriteBufferSize: t.WriteBufferSize,
	}
	ws, _, err := d.DialContext(ctx, scheme+addr+"/", nil)
	if err != nil {
		return nil, fmt.Errorf("client: websocket dial %s: %w: %w", addr, wire.ErrCannotEstablishConnection, err)
	}
	limit := t.MaxFrameSize
	if limit == 0 {
		limit = wire.DefaultMaxFrameSize
	}
	ws.SetReadLimit(int64(limit))
	return &wsConn{ws: ws, frames: newFrameReader(limit)}, nil
}

// wsConn carries one frame per binary message (transports.md 6.3).
type wsConn struct {
	ws     *websocket.Conn
	frames frameReader
	probe  [1]byte
}

func (c *wsConn) WriteFrame(ctx context.Context, deadline time.Time, frame []byte) error {
	defer c.watch(ctx, &deadline)()
	_ = c.ws.SetWriteDeadline(deadline)
	// gorilla masks a copy in its write buffer; frame stays intact for a
	// replay.
	return wsErr(ctx, c.ws.WriteMessage(websocket.BinaryMessage, frame))
}

func (c *wsConn) SwapReadBuffer(buf []byte) []byte { return c.frames.swap(buf) }

func (c *wsConn) ReadFrame(ctx context.Context, deadline time.Time) ([]byte, error) {
	defer c.watch(ctx, &deadline)()
	_ = c.ws.SetReadDeadline(deadline)
	kind, msg, err := c.ws.NextReader()
	if err != nil {
		return nil, c.readErr(ctx, err)
	}
	if kind != websocket.BinaryMessage {
		return nil, &ProtocolError{Reason: "reply is not a binary websocket message", Dropped: true}
	}
	frame, err := c.frames.read(msg)
	if err != nil {
		return nil, c.frameErr(ctx, err)
	}
	// The message must end with the frame (6.3: length == size).
	switch n, err := io.ReadFull(msg, c.probe[:]); {
	case n > 0:
		return nil, &ProtocolError{Reason: "reply message longer than its frame size", Dropped: true}
	case err != io.EOF:
		return nil, c.readErr(ctx, err)
	}
	return frame, nil
}

// frameErr maps a failed frame read. Kept out of ReadFrame: the
// errors.As target escapes, and would cost an allocation per read.
func (c *wsConn) frameErr(ctx context.Context, err error) error {
	var fe *FrameError
	switch {
	case errors.As(err, &fe):
		return err
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		// The message reader ends at the message boundary; a lost
		// connection surfaces as a *websocket.CloseError instead.
		return &ProtocolError{Reason: "reply message shorter than its frame size", Dropped: true}
	}
	return c.readErr(ctx, err)
}

// readErr maps gorilla's read failures: a message over the read limit is a
// protocol violation, anything else a lost connection.
func (c *wsConn) readErr(ctx context.Context, err error) error {
	if errors.Is(err, websocket.ErrReadLimit) {
		return &ProtocolError{Reason: fmt.Sprintf("reply message longer than %d bytes", c.frames.limit), Dropped: true}
	}
	return wsErr(ctx, err)
}

// Close sends a Close frame (best effort, briefly) and closes the socket.
func (c *wsConn) Close() error {
	_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(wsCloseGrace))
	return c.ws.Close()
}

// watch narrows *deadline to ctx's and, for a cancellable ctx, closes the
// socket when ctx ends (gorilla resets the socket's write deadline before
// every frame, so an expired deadline would not stick); the exchange drops
// the connection after any error anyway. The returned func undoes the hook.
func (c *wsConn) watch(ctx context.Context, deadline *time.Time) func() {
	if d, ok := ctx.Deadline(); ok && d.Before(*deadline) {
		*deadline = d
	}
	if ctx.Done() == nil {
		return noop
	}
	stop := context.AfterFunc(ctx, func() { _ = c.ws.NetConn().Close() })
	return func() { stop() }
}

// wsErr is ioErr for gorilla, which hides a socket timeout behind its own
// net.Error.
func wsErr(ctx context.Context, err error) error {
	var ne net.Error
	if err != nil && ctx.Err() == nil && errors.As(err, &ne) && ne.Timeout() {
		return context.DeadlineExceeded
	}
	return ioErr(ctx, err)
}
