package telemetry

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"

	"iggynode/config"
	"iggynode/internal/netaddr"
)

// HTTPSurface is what this package serves on the node's HTTP listener,
// for plane/http to mount: GET /ping, the Prometheus exposition (nil when
// http.metrics.enabled is off or the exporter is not prometheus) and the
// request counter that wraps the whole listener (http_requests_total,
// server-behaviour.md 13.3).
type HTTPSurface struct {
	Ping    http.Handler
	Metrics http.Handler
	Count   func(http.Handler) http.Handler
}

// Surface builds the HTTPSurface for h. The metrics handler carries no
// authentication: the mounting listener adds it.
func (t *Telemetry) Surface(h config.HTTP) (*HTTPSurface, error) {
	requests, err := t.MeterProvider().Meter(scopeName).Int64Counter("http_requests",
		metric.WithDescription("HTTP requests received (server-behaviour.md 13.3)"))
	if err != nil {
		return nil, err
	}
	s := &HTTPSurface{
		Ping: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			_, _ = w.Write([]byte("pong"))
		}),
		Count: func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				requests.Add(r.Context(), 1)
				next.ServeHTTP(w, r)
			})
		},
	}
	if prom := t.Handler(); h.Metrics.Enabled && prom != nil {
		s.Metrics = prom
	}
	return s, nil
}

// HTTPHandler serves the surface alone (no REST API; see the package doc):
// GET /ping, the Prometheus route when h.Metrics.Enabled and the metrics
// exporter is prometheus, 404 for everything else, every request counted
// in http_requests_total. It refuses an open metrics route on an address
// beyond loopback: set http.metrics.token there.
func (t *Telemetry) HTTPHandler(h config.HTTP) (http.Handler, error) {
	s, err := t.Surface(h)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /ping", s.Ping)
	if s.Metrics != nil {
		if h.Metrics.Token == "" && !IsLoopback(h.Address) {
			return nil, fmt.Errorf("http.metrics: %s is not a loopback address and http.metrics.token (IGGY_HTTP_METRICS_TOKEN) is empty; "+
				"set a token, bind http.address to loopback, or set http.metrics.enabled = false", h.Address)
		}
		mux.Handle("GET "+h.Metrics.Endpoint, requireBearer(h.Metrics.Token, s.Metrics))
	}
	return s.Count(mux), nil
}

// BearerMatches reports whether r carries "Authorization: Bearer token"
// (constant-time; false for an empty token): the static metrics token rule
// the REST listener keeps beside JWTs and personal access tokens.
func BearerMatches(r *http.Request, token string) bool {
	return token != "" && authorized(r, token)
}

// IsLoopback reports whether a host:port binds loopback only
// (netaddr.IsLoopback, the rule every listener shares).
func IsLoopback(addr string) bool { return netaddr.IsLoopback(addr) }

// requireBearer passes requests that carry "Authorization: Bearer token";
// an empty token lets everything through (HTTPHandler allows that only on
// loopback).
func requireBearer(token string, next http.Handler) http.Handler {
	if token == "" {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !authorized(r, token) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="iggy"`)
			http.Error(w, "unauthenticated", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// authorized compares the request's bearer credential with token in
// constant time.
func authorized(r *http.Request, token string) bool {
	scheme, cred, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(strings.TrimSpace(cred)), []byte(token)) == 1
}

// Server is a running HTTP listener.
type Server struct {
	srv   *http.Server
	ln    net.Listener
	done  chan error
	once  sync.Once
	close error
}

// Serve listens on addr and serves h until Close.
func Serve(addr string, h http.Handler) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("http listener: %w", err)
	}
	s := &Server{
		srv:  &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute},
		ln:   ln,
		done: make(chan error, 1),
	}
	go func() { s.done <- s.srv.Serve(ln) }()
	return s, nil
}

// Addr is the bound address (the port chosen for ":0").
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Close stops accepting, lets requests in flight finish until ctx ends,
// then closes what is left. Later calls return the first call's result.
func (s *Server) Close(ctx context.Context) error {
	s.once.Do(func() {
		err := s.srv.Shutdown(ctx)
		if err != nil {
			err = errors.Join(err, s.srv.Close())
		}
		if serr := <-s.done; !errors.Is(serr, http.ErrServerClosed) {
			err = errors.Join(err, serr)
		}
		s.close = err
	})
	return s.close
}
