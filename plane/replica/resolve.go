package replicaplane

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
)

// Resolver looks up a peer's host name when it is dialed (*net.Resolver
// is one; tests pass a fake that moves a name to another IP).
type Resolver interface {
	LookupHost(ctx context.Context, host string) ([]string, error)
}

// dialPeer connects to p's roster address within ctx. A host name is looked up at
// every dial and never cached: a Kubernetes pod keeps its name across a
// reschedule and gets a new IP, and the dial that follows the lost link
// must find the new one. The addresses are tried in the resolver's order
// until one connects. The roster address, not the IP, stays the TLS
// server name (3.7 rule 2), so a certificate names the host by its name.
func (n *Node) dialPeer(ctx context.Context, p *peer, addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: n.cfg.HandshakeGrace}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return d.DialContext(ctx, "tcp", addr)
	}
	lookup, cancel := context.WithTimeout(ctx, n.cfg.HandshakeGrace)
	ips, err := n.cfg.Resolver.LookupHost(lookup, host)
	cancel()
	if err == nil && len(ips) == 0 {
		err = errors.New("no address")
	}
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", host, err)
	}
	var errs []error
	for _, ip := range ips {
		c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(ip, port))
		if err == nil {
			n.noteResolved(p, host, ip)
			return c, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// noteResolved logs when a peer's name led to another IP than last time:
// the peer moved (a rescheduled pod), worth a line in the log.
func (n *Node) noteResolved(p *peer, host, ip string) {
	n.mu.Lock()
	prev := p.resolved
	p.resolved = ip
	n.mu.Unlock()
	if prev != "" && prev != ip {
		n.log.Info("replica peer moved: its name resolves to another address", "peer", p.id, "host", host, "from", prev, "to", ip)
	}
}
