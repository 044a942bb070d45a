package clientplane

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/gorilla/websocket"

	"iggynode/wire"
)

// WebSocketConfig holds the `[websocket]` frame-layer keys that gorilla
// can apply (transports.md 6.2). Zero fields take the defaults.
type WebSocketConfig struct {
	ReadBufferSize int // default 128 KiB
	// WriteBufferSize is also the largest outbound WebSocket frame: a
	// bigger message is fragmented, which keeps every frame under the
	// Rust SDK's 16 MiB frame limit (6.3 Go note); default 128 KiB, at
	// most 16 MiB.
	WriteBufferSize int
	// MaxMessageSize is the largest inbound message; the effective limit
	// is the smaller of it and Config.MaxFrameSize; default 64 MiB.
	MaxMessageSize uint32
}

func (w *WebSocketConfig) defaults() {
	if w.ReadBufferSize <= 0 {
		w.ReadBufferSize = 128 << 10
	}
	if w.WriteBufferSize <= 0 {
		w.WriteBufferSize = 128 << 10
	}
	w.WriteBufferSize = min(w.WriteBufferSize, 16<<20)
	if w.MaxMessageSize == 0 {
		w.MaxMessageSize = 64 << 20
	}
}

// WSListener serves WebSocket (or WSS) clients (transports.md 6).
type WSListener struct {
	ln       net.Listener
	cfg      Config
	wcfg     WebSocketConfig
	upgrader websocket.Upgrader
	handler  Handler
	listening
}

// ListenWebSocket binds addr and starts accepting WebSocket upgrades on any
// path. With cfg.TLS set the port speaks only WSS (6.5).
func ListenWebSocket(addr string, cfg Config, wcfg WebSocketConfig, h Handler) (*WSListener, error) {
	cfg.defaults()
	wcfg.defaults()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	l := &WSListener{ln: ln, cfg: cfg, wcfg: wcfg, handler: h}
	l.stop = ln.Close
	// 6.1: no subprotocol, no compression, no Origin check; a failed
	// upgrade just closes the socket after a bare status line.
	l.upgrader = websocket.Upgrader{
		ReadBufferSize:    wcfg.ReadBufferSize,
		WriteBufferSize:   wcfg.WriteBufferSize,
		CheckOrigin:       func(*http.Request) bool { return true },
		EnableCompression: false,
		Error: func(w http.ResponseWriter, _ *http.Request, status int, _ error) {
			w.WriteHeader(status)
		},
	}
	l.wg.Add(1)
	go l.accept()
	return l, nil
}

// Addr is the bound address.
func (l *WSListener) Addr() net.Addr { return l.ln.Addr() }

func (l *WSListener) accept() {
	defer l.wg.Done()
	acceptStream(l.ln, &l.listening, l.cfg, TransportWebSocket, l.serve)
}

// serve runs the TLS handshake (WSS) and the upgrade inside one
// HandshakeGrace budget (6.1), then the connection.
func (l *WSListener) serve(nc net.Conn) {
	_ = nc.SetDeadline(time.Now().Add(l.cfg.HandshakeGrace))
	conn := nc
	if l.cfg.TLS != nil {
		tc := tls.Server(nc, l.cfg.TLS)
		if err := tc.Handshake(); err != nil {
			l.cfg.Logger.Debug("wss tls handshake failed", "remote", nc.RemoteAddr().String(), "err", err)
			_ = nc.Close()
			return
		}
		conn = tc
	}
	ws, err := l.upgrade(conn)
	if err != nil {
		l.cfg.Logger.Debug("websocket upgrade failed", "remote", nc.RemoteAddr().String(), "err", err)
		_ = nc.Close()
		return
	}
	_ = nc.SetDeadline(time.Time{})
	limit := min(l.cfg.MaxFrameSize, l.wcfg.MaxMessageSize)
	ws.SetReadLimit(int64(limit))
	c := newFrameConn(&wsCarrier{ws: ws, raw: nc, maxMessage: limit}, TransportWebSocket, l.cfg)
	if !l.conns.add(c, c.Close) {
		c.carrier.teardown(l.cfg.CloseGrace)
		return
	}
	defer l.conns.remove(c)
	l.conns.remove(nc)
	c.serve(l.handler)
}

// upgrade reads one HTTP/1.1 request from conn and upgrades it. The
// listener owns its sockets instead of running an http.Server so that the
// TLS handshake and the upgrade share one deadline.
func (l *WSListener) upgrade(conn net.Conn) (*websocket.Conn, error) {
	br := bufio.NewReaderSize(conn, 4<<10)
	req, err := http.ReadRequest(br)
	if err != nil {
		return nil, err
	}
	return l.upgrader.Upgrade(&hijackWriter{conn: conn, br: br, header: http.Header{}}, req, nil)
}

// Close stops accepting, closes every connection with a Close frame
// without status code (WSS: then close_notify), within CloseGrace, and
// waits for their goroutines.
func (l *WSListener) Close() { l.drain() }

// hijackWriter is the minimal http.ResponseWriter gorilla's Upgrader needs
// on a socket read by hand: it hijacks to the socket and, for a refused
// upgrade, writes only a status line.
type hijackWriter struct {
	conn        net.Conn
	br          *bufio.Reader
	header      http.Header
	wroteHeader bool
}

func (w *hijackWriter) Header() http.Header { return w.header }

func (w *hijackWriter) WriteHeader(status int) {
	if w.wroteHeader {
		return
	}
	w.wroteHeader = true
	_, _ = fmt.Fprintf(w.conn, "HTTP/1.1 %d %s\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", status, http.StatusText(status))
}

func (w *hijackWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return len(b), nil // a refused upgrade carries no body
}

func (w *hijackWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return w.conn, bufio.NewReadWriter(w.br, bufio.NewWriter(w.conn)), nil
}

// wsCarrier carries one frame per binary WebSocket message in both
// directions (transports.md 6.3).
type wsCarrier struct {
	ws         *websocket.Conn
	raw        net.Conn // the TCP socket under ws (and under TLS for WSS)
	maxMessage uint32
	sources    readSources // writeSpliced's
}

func (t *wsCarrier) remoteAddr() string { return t.raw.RemoteAddr().String() }

// readFrame takes the next message, which must be binary and hold exactly
// one frame: at least 256 bytes and exactly `size` bytes (6.3). Pings are
// answered inside NextReader by gorilla's default handler.
func (t *wsCarrier) readFrame(g *connGuard, limit uint32) ([]byte, error) {
	kind, r, err := t.ws.NextReader()
	if err != nil {
		return nil, err
	}
	if kind != websocket.BinaryMessage {
		return nil, fmt.Errorf("%w: text message", errFraming)
	}
	var hdr wire.Header
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, shortMessage(err, "binary message shorter than the 256-byte header")
	}
	buf, err := g.readFrame(&hdr, r, min(limit, t.maxMessage))
	if err != nil {
		return nil, shortMessage(err, fmt.Sprintf("message shorter than its size %d", hdr.Size()))
	}
	var probe [1]byte
	switch _, err := io.ReadFull(r, probe[:]); {
	case err == nil:
		g.delivered()
		return nil, fmt.Errorf("%w: message longer than its size %d", errFraming, hdr.Size())
	case !errors.Is(err, io.EOF):
		g.delivered()
		return nil, err
	}
	return buf, nil
}

// shortMessage turns the end of a message inside a frame into a framing
// error; other read errors pass through.
func shortMessage(err error, what string) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: %s", errFraming, what)
	}
	return err
}

// writeFrame sends frame as one binary message; gorilla fragments it only
// when it exceeds the write buffer.
func (t *wsCarrier) writeFrame(frame []byte) error {
	w, err := t.ws.NextWriter(websocket.BinaryMessage)
	if err != nil {
		return err
	}
	if _, err := w.Write(frame); err != nil {
		return err
	}
	return w.Close()
}

// writeSpliced writes the pieces into one binary message, a stored
// batch read into a pooled buffer first (readSources).
func (t *wsCarrier) writeSpliced(built []byte, splices []wire.Splice) error {
	pieces, err := t.sources.pieces(built, splices, false)
	defer t.sources.release()
	if err != nil {
		return err
	}
	w, err := t.ws.NextWriter(websocket.BinaryMessage)
	if err != nil {
		return err
	}
	for _, piece := range pieces {
		if _, err := w.Write(piece); err != nil {
			return err
		}
	}
	return w.Close()
}

// flush has nothing to do: gorilla writes each message out as it closes.
func (t *wsCarrier) flush() error { return nil }

func (t *wsCarrier) interrupt() { _ = t.ws.SetReadDeadline(time.Unix(1, 0)) }

// teardown sends a Close frame without status code (the peer sees 1005),
// then closes the socket, for WSS after close_notify, all within grace
// (6.4).
func (t *wsCarrier) teardown(grace time.Duration) {
	stop := time.AfterFunc(grace, func() { _ = t.raw.Close() })
	defer stop.Stop()
	_ = t.ws.WriteControl(websocket.CloseMessage, nil, time.Now().Add(grace))
	_ = t.ws.Close()
	_ = t.raw.Close()
}
