// Package loginflood measures what a flood of wrong-password logins costs
// everyone else (issue 17), or with Token one of valid token logins, each
// committed: Connections raw TCP connections from FloodFrom
// send Register requests with a wrong password for Username back to back
// (lockstep per connection, a fresh client id each time, re-dialling when
// the server closes), while from ProbeFrom a login probe connects and logs
// in with the right password, a read probe reads the stream list on a
// logged-in connection and, with Send, a producer sends one-message
// batches. It reports each probe's latency distribution and the flood's
// answers (refused = Eviction(InvalidCredentials), throttled = result 58,
// other).
//
// The flood is raw frames rather than the SDK so it does not back off the
// way the SDK does on 58: it is the harshest lockstep client. Everything is
// bounded: the run lasts Warmup + Duration, and every request has a
// deadline of RequestTimeout.
package loginflood

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"iggynode/bench"
	"iggynode/client"
	"iggynode/wire"
)

// Config is one run.
type Config struct {
	// Address is the node flooded and probed (host:port, TCP).
	Address string
	// ProbeAddress is where the probes go; empty: Address.
	ProbeAddress string
	// FloodFrom and ProbeFrom are the local IPs the flood and the probes
	// dial from (127.0.0.2 and 127.0.0.1 by default).
	FloodFrom, ProbeFrom string
	// Connections is the number of flooding connections (64).
	Connections int
	// Username and Password are valid credentials; the flood sends
	// Username with WrongPassword.
	Username, Password, WrongPassword string
	// Warmup is how long the flood runs before the probes measure;
	// Duration is how long they measure.
	Warmup, Duration time.Duration
	// ProbeInterval is the pause between two probes of a kind.
	ProbeInterval time.Duration
	// Send adds a producer probe on stream "loginflood", topic "t".
	Send bool
	// RequestTimeout bounds every request (10 s by default).
	RequestTimeout time.Duration
	// Token floods with valid logins instead: a personal access token of
	// Username, created for the run and deleted after it, each login on a
	// fresh connection, so every one commits a Register and its close a
	// Logout (a reconnect storm of token clients: cheap to verify, all
	// work for the metadata group).
	Token bool
}

func (c Config) withDefaults() Config {
	if c.ProbeAddress == "" {
		c.ProbeAddress = c.Address
	}
	if c.FloodFrom == "" {
		c.FloodFrom = "127.0.0.2"
	}
	if c.ProbeFrom == "" {
		c.ProbeFrom = "127.0.0.1"
	}
	if c.Connections <= 0 {
		c.Connections = 64
	}
	if c.WrongPassword == "" {
		c.WrongPassword = "not-" + c.Password + "-at-all"
	}
	if c.Duration <= 0 {
		c.Duration = 20 * time.Second
	}
	if c.ProbeInterval <= 0 {
		c.ProbeInterval = 20 * time.Millisecond
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = 10 * time.Second
	}
	return c
}

// Report is a run's outcome. Latencies are in microseconds.
type Report struct {
	Connections int           `json:"connections"`
	Duration    time.Duration `json:"duration_ns"`
	Login       Probe         `json:"login"`
	Read        Probe         `json:"read"`
	Send        *Probe        `json:"send,omitempty"`
	Flood       Flood         `json:"flood"`
}

// Probe is one probe's figures over the measured window.
type Probe struct {
	Latency bench.Latency `json:"latency"`
	Errors  int64         `json:"errors"`
	PerSec  float64       `json:"per_sec"`
	// FirstError is the first error seen, for the report.
	FirstError string `json:"first_error,omitempty"`
}

// Flood counts the flood's answers over the whole run.
type Flood struct {
	Attempts  int64 `json:"attempts"`
	Refused   int64 `json:"refused"`
	Throttled int64 `json:"throttled"`
	Other     int64 `json:"other"`
	Dials     int64 `json:"dials"`
	// Accepted counts the logins that succeeded (Token).
	Accepted int64 `json:"accepted"`
}

// Run floods and probes until Warmup + Duration has passed or ctx ends.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg = cfg.withDefaults()
	if cfg.Address == "" || cfg.Username == "" || cfg.Password == "" {
		return nil, errors.New("loginflood: address, username and password are required")
	}
	probeOpts := func() client.Options {
		return client.Options{Address: cfg.ProbeAddress, Username: cfg.Username, Password: cfg.Password, StayOnNode: true,
			RequestTimeout: cfg.RequestTimeout, NoDelay: true,
			Dialer: &client.TCPTransport{NoDelay: true, LocalAddr: &net.TCPAddr{IP: net.ParseIP(cfg.ProbeFrom)}}}
	}
	// Log the readers in before the flood starts: the read probe measures
	// a session that exists.
	reader, err := client.Connect(ctx, probeOpts())
	if err != nil {
		return nil, fmt.Errorf("loginflood: read probe login: %w", err)
	}
	defer reader.Close()
	var sender *client.Client
	var stream uint32
	if cfg.Send {
		if sender, stream, err = senderSetup(ctx, probeOpts()); err != nil {
			return nil, err
		}
		defer sender.Close()
	}

	var body []byte
	if cfg.Token {
		token, err := reader.CreatePersonalAccessToken(ctx, "loginflood", 0)
		if err != nil {
			return nil, fmt.Errorf("loginflood: token: %w", err)
		}
		defer func() { _ = reader.DeletePersonalAccessToken(context.WithoutCancel(ctx), "loginflood") }()
		body = wire.LoginRegisterWithPAT{ClientInfo: floodClientInfo, Token: token}.AppendTo(nil)
	} else {
		body = wire.LoginRegister{ClientInfo: floodClientInfo, Username: cfg.Username, Password: cfg.WrongPassword}.AppendTo(nil)
	}

	runCtx, cancel := context.WithTimeout(ctx, cfg.Warmup+cfg.Duration)
	defer cancel()
	var flood floodCounters
	var wg sync.WaitGroup
	for range cfg.Connections {
		wg.Add(1)
		go func() {
			defer wg.Done()
			flood.run(runCtx, cfg, body)
		}()
	}
	select {
	case <-time.After(cfg.Warmup):
	case <-runCtx.Done():
	}
	measureStart := time.Now()
	probes := []func(context.Context) error{
		func(ctx context.Context) error { // login
			c, err := client.Connect(ctx, probeOpts())
			if err == nil {
				c.Close()
			}
			return err
		},
		func(ctx context.Context) error { // read
			_, err := reader.GetStreams(ctx)
			return err
		},
	}
	if cfg.Send {
		msg := []wire.Message{client.NewMessage(make([]byte, 100))}
		probes = append(probes, func(ctx context.Context) error {
			_, err := sender.SendMessages(ctx, wire.ID(stream), wire.Named("t"), wire.PartitionID(0), msg)
			return err
		})
	}
	results := make([]probeResult, len(probes))
	for i, p := range probes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = probe(runCtx, cfg, p)
		}()
	}
	wg.Wait()
	window := time.Since(measureStart)
	rep := &Report{Connections: cfg.Connections, Duration: window, Flood: flood.snapshot(),
		Login: results[0].summary(window), Read: results[1].summary(window)}
	if cfg.Send {
		s := results[2].summary(window)
		rep.Send = &s
	}
	return rep, nil
}

// senderSetup logs a producer in and makes sure stream "loginflood" with
// topic "t" (one partition) exists.
func senderSetup(ctx context.Context, o client.Options) (*client.Client, uint32, error) {
	c, err := client.Connect(ctx, o)
	if err != nil {
		return nil, 0, fmt.Errorf("loginflood: send probe login: %w", err)
	}
	s, err := c.GetStream(ctx, wire.Named("loginflood"))
	if err != nil {
		if s, err = c.CreateStream(ctx, "loginflood", nil); err != nil {
			c.Close()
			return nil, 0, fmt.Errorf("loginflood: create stream: %w", err)
		}
	}
	if _, err := c.GetTopic(ctx, wire.ID(s.ID), wire.Named("t")); err != nil {
		if _, err := c.CreateTopic(ctx, wire.ID(s.ID), "t", 1, nil); err != nil {
			c.Close()
			return nil, 0, fmt.Errorf("loginflood: create topic: %w", err)
		}
	}
	return c, s.ID, nil
}

type probeResult struct {
	hist     *bench.Histogram
	errors   int64
	firstErr string
}

func (r probeResult) summary(window time.Duration) Probe {
	p := Probe{Latency: r.hist.Summary(), Errors: r.errors, FirstError: r.firstErr}
	if window > 0 {
		p.PerSec = float64(r.hist.Count()) / window.Seconds()
	}
	return p
}

// probe runs op every ProbeInterval until ctx ends, timing each.
// runOver reports whether ctx's deadline has passed.
func runOver(ctx context.Context) bool {
	end, ok := ctx.Deadline()
	return ok && !time.Now().Before(end)
}

func probe(ctx context.Context, cfg Config, op func(context.Context) error) probeResult {
	r := probeResult{hist: bench.NewHistogram()}
	for ctx.Err() == nil {
		opCtx, cancel := context.WithTimeout(ctx, cfg.RequestTimeout)
		start := time.Now()
		err := op(opCtx)
		d := time.Since(start)
		cancel()
		switch {
		case err == nil:
			r.hist.Record(d)
		case ctx.Err() != nil || runOver(ctx):
			// The run ended during the request: not the server's fault.
			// (A socket deadline set from the run's end can fire an
			// instant before the context's own timer marks it done.)
		default:
			r.errors++
			// A failed request is as slow as it took: count it as a
			// latency too, or a timing-out probe would look fast.
			r.hist.Record(d)
			if r.firstErr == "" {
				r.firstErr = err.Error()
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(cfg.ProbeInterval):
		}
	}
	return r
}

type floodCounters struct {
	attempts, refused, throttled, other, dials, accepted atomic.Int64
}

func (f *floodCounters) snapshot() Flood {
	return Flood{Attempts: f.attempts.Load(), Refused: f.refused.Load(), Throttled: f.throttled.Load(),
		Other: f.other.Load(), Dials: f.dials.Load(), Accepted: f.accepted.Load()}
}

var floodClientInfo = wire.ClientVersionInfo{Version: wire.ProtocolVersion, SDKName: "loginflood", SDKVersion: "1"}

// run is one flooding connection: the Register body, read the answer,
// again, until ctx ends; re-dial after a transport error and after a
// login that succeeded (a bound connection's next Register commits
// nothing).
func (f *floodCounters) run(ctx context.Context, cfg Config, body []byte) {
	frame := make([]byte, wire.HeaderSize+len(body))
	copy(frame[wire.HeaderSize:], body)
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(cfg.FloodFrom)}, Timeout: cfg.RequestTimeout}
	var nc net.Conn
	defer func() {
		if nc != nil {
			nc.Close()
		}
	}()
	end, _ := ctx.Deadline()
	over := func() bool { return ctx.Err() != nil || (!end.IsZero() && !time.Now().Before(end)) }
	var head [wire.HeaderSize]byte
	for !over() {
		if nc == nil {
			c, err := d.DialContext(ctx, "tcp", cfg.Address)
			if err != nil {
				if over() {
					return
				}
				f.other.Add(1)
				pause(ctx, 50*time.Millisecond)
				continue
			}
			f.dials.Add(1)
			nc = c
		}
		h := wire.RequestHeader{Size: uint32(len(frame)), Client: randomClient(), Operation: wire.OpRegister}
		h.Encode(wire.HeaderOf(frame))
		// A held (throttled) answer must not outlive the run.
		deadline := time.Now().Add(cfg.RequestTimeout)
		if !end.IsZero() && end.Before(deadline) {
			deadline = end
		}
		_ = nc.SetDeadline(deadline)
		f.attempts.Add(1)
		reply, err := exchange(nc, frame, head[:])
		if err != nil {
			if !over() {
				f.other.Add(1)
			}
			nc.Close()
			nc = nil
			continue
		}
		if f.classify(reply) {
			nc.Close()
			nc = nil
		}
	}
}

// classify counts one answer; true: the login succeeded.
func (f *floodCounters) classify(frame []byte) bool {
	h := wire.HeaderOf(frame)
	switch h.Command() {
	case wire.CmdEviction:
		if h.Eviction().Reason == wire.EvictInvalidCredentials {
			f.refused.Add(1)
			return false
		}
	case wire.CmdReply:
		var re *wire.ResultError
		_, err := wire.SplitResult(frame[wire.HeaderSize:])
		switch {
		case err == nil:
			f.accepted.Add(1)
			return true
		case errors.As(err, &re) && re.Code == wire.ErrTransientNotAccepted:
			f.throttled.Add(1)
			return false
		}
	}
	f.other.Add(1)
	return false
}

// exchange writes frame and reads one reply frame (header, then body).
func exchange(nc net.Conn, frame, head []byte) ([]byte, error) {
	if _, err := nc.Write(frame); err != nil {
		return nil, err
	}
	if _, err := io.ReadFull(nc, head); err != nil {
		return nil, err
	}
	size := binary.LittleEndian.Uint32(head[48:52])
	if size < wire.HeaderSize || size > 1<<20 {
		return nil, fmt.Errorf("reply size %d", size)
	}
	out := make([]byte, size)
	copy(out, head)
	if _, err := io.ReadFull(nc, out[wire.HeaderSize:]); err != nil {
		return nil, err
	}
	return out, nil
}

func randomClient() wire.U128 {
	var b [16]byte
	_, _ = rand.Read(b[:])
	c := wire.U128{Lo: binary.LittleEndian.Uint64(b[:8]), Hi: binary.LittleEndian.Uint64(b[8:])}
	if c.IsZero() {
		c.Lo = 1
	}
	return c
}

func pause(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// WriteText prints the report for a person.
func (r *Report) WriteText(w io.Writer) error {
	ms := func(us float64) string { return fmt.Sprintf("%.1f ms", us/1000) }
	line := func(name string, p Probe) {
		fmt.Fprintf(w, "%-6s n=%-6d errors=%-4d p50=%-9s p99=%-9s max=%-9s %.1f/s\n", name, p.Latency.Count, p.Errors,
			ms(p.Latency.P50Us), ms(p.Latency.P99Us), ms(p.Latency.MaxUs), p.PerSec)
		if p.FirstError != "" {
			fmt.Fprintf(w, "       first error: %s\n", p.FirstError)
		}
	}
	fmt.Fprintf(w, "login flood: %d connections, measured %.1f s\n", r.Connections, r.Duration.Seconds())
	line("login", r.Login)
	line("read", r.Read)
	if r.Send != nil {
		line("send", *r.Send)
	}
	_, err := fmt.Fprintf(w, "flood  attempts=%d refused=%d throttled=%d accepted=%d other=%d dials=%d\n",
		r.Flood.Attempts, r.Flood.Refused, r.Flood.Throttled, r.Flood.Accepted, r.Flood.Other, r.Flood.Dials)
	return err
}
