package httpplane

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"iggynode/config"
	clientplane "iggynode/plane/client"
	"iggynode/telemetry"
)

// Node is what the listener needs from the node it serves.
type Node interface {
	// Handler opens a connection actor per virtual connection.
	clientplane.Handler
	// MetadataView is the metadata group's current view (iggy-view).
	MetadataView() uint32
}

// Config is the listener's configuration.
type Config struct {
	HTTP config.HTTP
	// ClientsTableMax bounds the sessions with HTTP.MaxSessions (3.8.2).
	ClientsTableMax uint32
	// DataDir holds the generated JWT key.
	DataDir string
	// ClusterSecret is cluster.auth.shared_secret when cluster auth is on.
	ClusterSecret string
	// Clustered: the node is one replica of several (forwarding, 2.7).
	Clustered bool
	// SelfName is this node's roster name (to tell itself from the
	// primary in the cluster metadata).
	SelfName string
	// HandshakeGrace bounds the TLS handshake (1.1.2).
	HandshakeGrace time.Duration
	// TLS overrides the configured certificate (tests).
	TLS *tls.Config
	// Surface is what package telemetry serves here; nil: /ping only.
	Surface *telemetry.HTTPSurface
	// Ready answers GET /ready (ours, for readiness probes): 503 until
	// it reports true. nil: always ready.
	Ready  func() bool
	Meter  metric.MeterProvider
	Logger *slog.Logger
	// Now is the clock of JWTs (tests); nil: time.Now.
	Now func() time.Time
}

// Server is a running HTTP listener.
type Server struct {
	cfg      Config
	node     Node
	log      *slog.Logger
	jwt      *issuer
	sessions *sessions
	relay    *relay
	srv      *http.Server
	ln       net.Listener
	scheme   string
	done     chan error
	stop     chan struct{}
	once     sync.Once
	err      error
	writes   chan struct{} // the global in-flight write budget (6.5.4)
}

// Start listens on cfg.HTTP.Address and serves the API.
func Start(cfg Config, node Node) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Meter == nil {
		cfg.Meter = noop.NewMeterProvider()
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	jwtIssuer, clusterKey, err := newIssuer(cfg.HTTP.JWT, cfg.DataDir, cfg.ClusterSecret, now)
	if err != nil {
		return nil, err
	}
	max := int(cfg.HTTP.MaxSessions)
	if max == 0 {
		max = int(max1(cfg.ClientsTableMax/2, 1))
	}
	s := &Server{cfg: cfg, node: node, log: cfg.Logger.With("plane", "http"), jwt: jwtIssuer, scheme: "http",
		sessions: &sessions{byKey: map[string]*session{}, max: max, idle: cfg.HTTP.SessionIdleTimeout.D(), node: node, now: now},
		done:     make(chan error, 1), stop: make(chan struct{}), writes: make(chan struct{}, globalWriteCap)}
	if cfg.Clustered && clusterKey {
		s.relay = newRelay(s)
	} else if cfg.Clustered {
		s.log.Warn("http: no cluster-wide JWT key (http.jwt secrets or cluster.auth): writes on a backup are not forwarded to the primary")
	}
	if cfg.HTTP.WebUI {
		s.log.Warn("http.web_ui is set, but this build embeds no web UI; /ui is not served")
	}
	if err := s.registerMetrics(); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.HTTP.Address)
	if err != nil {
		return nil, fmt.Errorf("http listener on %s: %w", cfg.HTTP.Address, err)
	}
	s.ln = ln
	s.srv = &http.Server{Handler: s.handler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute,
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelDebug)}
	if cfg.HTTP.TLS.Enabled {
		tc, err := s.tlsConfig()
		if err != nil {
			ln.Close()
			return nil, err
		}
		s.scheme = "https"
		s.srv.TLSConfig = tc
		go func() { s.done <- s.srv.ServeTLS(ln, "", "") }()
	} else {
		go func() { s.done <- s.srv.Serve(ln) }()
	}
	go s.sweepLoop()
	return s, nil
}

func max1(a, b uint32) uint32 {
	if a > b {
		return a
	}
	return b
}

// tlsConfig is the certificate of http.tls with ALPN h2 then http/1.1
// (1.1.2); net/http serves HTTP/2 on it.
func (s *Server) tlsConfig() (*tls.Config, error) {
	t := s.cfg.HTTP.TLS
	var tc *tls.Config
	if s.cfg.TLS != nil {
		tc = s.cfg.TLS.Clone()
	} else {
		var err error
		tc, err = clientplane.ServerTLS(clientplane.CertSource{SelfSigned: t.SelfSigned, CertFile: t.CertFile, KeyFile: t.KeyFile}, s.log)
		if err != nil {
			return nil, fmt.Errorf("http.tls: %w", err)
		}
	}
	tc.NextProtos = []string{"h2", "http/1.1"}
	return tc, nil
}

// Addr is the bound address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// URL is the listener's base URL.
func (s *Server) URL() string { return s.scheme + "://" + s.ln.Addr().String() }

// Close stops accepting, lets requests in flight finish until ctx ends,
// then drops the sessions (their binary sessions are logged out).
func (s *Server) Close(ctx context.Context) error {
	s.once.Do(func() {
		close(s.stop)
		err := s.srv.Shutdown(ctx)
		if err != nil {
			err = errors.Join(err, s.srv.Close())
		}
		if serr := <-s.done; !errors.Is(serr, http.ErrServerClosed) {
			err = errors.Join(err, serr)
		}
		s.sessions.closeAll()
		s.err = err
	})
	return s.err
}

// sweepLoop drops expired and idle sessions every half idle timeout (at
// most once a minute).
func (s *Server) sweepLoop() {
	every := time.Minute
	if idle := s.cfg.HTTP.SessionIdleTimeout.D(); idle > 0 && idle/2 < every {
		every = max(idle/2, 10*time.Millisecond)
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.sessions.sweep()
		}
	}
}

func (s *Server) registerMetrics() error {
	m := s.cfg.Meter.Meter("iggynode/plane/http")
	_, err := m.Int64ObservableGauge("iggy.http.sessions", metric.WithDescription("credential sessions the HTTP listener holds (bound: http.max_sessions)"),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(int64(s.sessions.len()))
			return nil
		}))
	if err != nil {
		return err
	}
	_, err = m.Int64ObservableGauge("iggy.http.revoked_tokens", metric.WithDescription("logged-out JWTs refused until their expiry (bound: http.jwt.max_revoked_tokens)"),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(int64(s.jwt.revoked.len()))
			return nil
		}))
	return err
}

// handler is the listener's layers, outermost first (http.md 2.4, 8.1):
// the request counter, CORS, then the routes.
func (s *Server) handler() http.Handler {
	var h http.Handler = s.routes()
	if c := s.cfg.HTTP.CORS; c.Enabled {
		h = newCORS(c).wrap(h)
	}
	if s.cfg.Surface != nil && s.cfg.Surface.Count != nil {
		h = s.cfg.Surface.Count(h)
	}
	return h
}

// isJSON applies 2.4.1: application/json or application/*+json.
func isJSON(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	mt = strings.ToLower(strings.TrimSpace(mt))
	return mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
}

// detached is a context for work that outlives its request (ack=none
// sends), ended when the listener closes.
func (s *Server) detached() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), replyTimeout)
	go func() {
		select {
		case <-s.stop:
		case <-ctx.Done():
		}
		cancel()
	}()
	return ctx
}
