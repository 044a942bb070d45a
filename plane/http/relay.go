package httpplane

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"iggynode/wire"
)

// relay forwards Fwd routes from a backup to the metadata primary over
// HTTP (http.md 2.7): the bearer is verified here first, then only
// Authorization, Content-Type and iggy-forwarded: 1 travel, and only
// Content-Type, Retry-After and iggy-view come back with the primary's
// status and body. It is active only with cluster-wide key material, so
// the primary accepts the bearer this node verified.
type relay struct {
	s      *Server
	client *http.Client
	slots  chan struct{}
	mu     sync.Mutex
	leader string // base URL of the primary's listener; "" self or unknown
	seen   time.Time
}

const (
	forwardCap       = 128
	forwardRetryFor  = 30 * time.Second
	forwardRetryStep = 50 * time.Millisecond
	forwardAttempt   = 35 * time.Second
	leaderCacheFor   = 500 * time.Millisecond
)

func newRelay(s *Server) *relay {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	t := s.cfg.HTTP.TLS
	switch {
	case t.SelfSigned || s.cfg.TLS != nil:
		tc.InsecureSkipVerify = true // every node has its own ephemeral certificate
	case t.CertFile != "":
		if pem, err := os.ReadFile(t.CertFile); err == nil {
			pool, _ := x509.SystemCertPool()
			if pool == nil {
				pool = x509.NewCertPool()
			}
			pool.AppendCertsFromPEM(pem)
			tc.RootCAs = pool
		}
	}
	return &relay{s: s, slots: make(chan struct{}, forwardCap),
		client: &http.Client{Transport: &http.Transport{TLSClientConfig: tc, ForceAttemptHTTP2: true, MaxIdleConnsPerHost: 32},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// wanted: non-GET requests, and GETs asking for a linearizable read, that
// were not relayed already.
func (f *relay) wanted(r *http.Request) bool {
	if r.Header.Get("Iggy-Forwarded") != "" {
		return false
	}
	return r.Method != http.MethodGet && r.Method != http.MethodHead || r.URL.Query().Get("consistency") == "linearizable"
}

// primary is the base URL of the metadata primary's HTTP listener, or ""
// when this node is the primary or none is known (then the request runs
// here: the binary plane answers 58 on a backup, retried, then 503).
func (f *relay) primary(c *reqCtx) string {
	f.mu.Lock()
	if time.Since(f.seen) < leaderCacheFor {
		defer f.mu.Unlock()
		return f.leader
	}
	f.mu.Unlock()
	o, e := c.do(wire.GetClusterMetadata{}, false)
	leader := ""
	var md wire.ClusterMetadata
	if e == nil && md.Decode(o.body) == nil {
		for _, n := range md.Nodes {
			if n.Role == wire.RoleLeader && n.Name != f.s.cfg.SelfName && n.HTTPPort != 0 {
				leader = f.s.scheme + "://" + net.JoinHostPort(n.IP, strconv.Itoa(int(n.HTTPPort)))
			}
		}
	}
	f.mu.Lock()
	f.leader, f.seen = leader, time.Now()
	f.mu.Unlock()
	return leader
}

func (f *relay) forget() {
	f.mu.Lock()
	f.seen = time.Time{}
	f.mu.Unlock()
}

// forward relays the request if the primary is elsewhere; false means
// serve it here.
func (f *relay) forward(c *reqCtx) bool {
	base := f.primary(c)
	if base == "" {
		return false
	}
	select {
	case f.slots <- struct{}{}:
		defer func() { <-f.slots }()
	default:
		writeError(c.w, handBuilt(http.StatusServiceUnavailable, "forward_busy", "too many requests are being forwarded to the primary; retry"))
		return true
	}
	body, err := io.ReadAll(http.MaxBytesReader(c.w, c.r.Body, int64(f.s.cfg.HTTP.MaxRequestSize)))
	if err != nil {
		writeError(c.w, handBuilt(http.StatusRequestEntityTooLarge, "payload_too_large", "request body exceeds http.max_request_size"))
		return true
	}
	deadline := time.Now().Add(forwardRetryFor)
	for {
		resp, sent, err := f.attempt(c, base, body)
		if err == nil {
			f.copyBack(c.w, resp)
			return true
		}
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			writeError(c.w, handBuilt(http.StatusGatewayTimeout, "forward_timeout", "the primary did not answer the forwarded request in time"))
			return true
		case sent:
			writeError(c.w, handBuilt(http.StatusBadGateway, "forward_failed", "the forwarded request failed after it was sent"))
			return true
		case time.Now().Add(forwardRetryStep).After(deadline) || c.ctx.Err() != nil:
			writeError(c.w, handBuilt(http.StatusServiceUnavailable, "no_reachable_primary", "no primary accepted the request; retry"))
			return true
		}
		time.Sleep(forwardRetryStep)
		f.forget()
		if base = f.primary(c); base == "" {
			return false // this node became the primary
		}
	}
}

// attempt sends once; sent reports whether the request left this node.
func (f *relay) attempt(c *reqCtx, base string, body []byte) (*http.Response, bool, error) {
	ctx, cancel := context.WithTimeout(c.ctx, forwardAttempt)
	req, err := http.NewRequestWithContext(ctx, c.r.Method, base+c.r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		cancel()
		return nil, false, err
	}
	for _, h := range []string{"Authorization", "Content-Type"} {
		if v := c.r.Header.Get(h); v != "" {
			req.Header.Set(h, v)
		}
	}
	req.Header.Set("Iggy-Forwarded", "1")
	resp, err := f.client.Do(req)
	if err != nil {
		cancel()
		var op *net.OpError
		sent := !(errors.As(err, &op) && op.Op == "dial")
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, true, context.DeadlineExceeded
		}
		return nil, sent, err
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, true, nil
}

type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error { err := c.ReadCloser.Close(); c.cancel(); return err }

func (f *relay) copyBack(w http.ResponseWriter, resp *http.Response) {
	defer resp.Body.Close()
	for _, h := range []string{"Content-Type", "Retry-After", viewHeader, "Iggy-Durability", "Location", "Content-Disposition"} {
		if v := resp.Header.Get(h); v != "" {
			w.Header().Set(h, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}
