package config

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// MaxAdvertisedAddresses is the most selectors one roster node may carry
// (replica-plane.md 10.2).
const MaxAdvertisedAddresses = 16

// AdvertisedAddress is one selector of cluster.nodes.advertised_addresses
// (replica-plane.md 10.2, 10.4): a client whose address lies in
// ClientCIDR is told to dial Address. Ports is ours: the reference
// advertises a host only, but a client outside a Kubernetes pod network
// reaches a pod through a NodePort or a load balancer whose ports are not
// the pod's; a zero port keeps the node's own.
type AdvertisedAddress struct {
	ClientCIDR string      `toml:"client_cidr"`
	Address    string      `toml:"address"`
	Ports      ClientPorts `toml:"ports"`
}

// ClientPorts are the client listener ports a selector advertises.
type ClientPorts struct {
	TCP       uint16 `toml:"tcp"`
	QUIC      uint16 `toml:"quic"`
	HTTP      uint16 `toml:"http"`
	WebSocket uint16 `toml:"websocket"`
}

// Advertised is what GetClusterMetadata tells one client about one node:
// the host to dial and a port per transport (0: not served).
type Advertised struct {
	Host  string
	Ports ClientPorts
}

// AdvertisedTo picks what node n advertises to a client at address client
// (replica-plane.md 10.4 rule 2): the selector whose network contains the
// client with the longest prefix (the first listed among equals; a
// v4-mapped IPv6 client matches as IPv4, an IPv6 zone is ignored), else
// advertised_address, else the roster ip. The ports are the node's, each
// replaced by the chosen selector's where it names one. An invalid client
// address matches no selector. Selectors whose CIDR does not parse are
// skipped (Validate refuses them at load).
func (n Node) AdvertisedTo(client netip.Addr) Advertised {
	out := Advertised{Host: n.IP, Ports: ClientPorts{TCP: n.Ports.TCP, QUIC: n.Ports.QUIC, HTTP: n.Ports.HTTP,
		WebSocket: n.Ports.WebSocket}}
	if n.AdvertisedAddress != "" {
		out.Host = n.AdvertisedAddress
	}
	client = client.Unmap().WithZone("")
	best := -1
	var chosen *AdvertisedAddress
	for i := range n.AdvertisedAddresses {
		s := &n.AdvertisedAddresses[i]
		p, err := netip.ParsePrefix(s.ClientCIDR)
		if err != nil || !p.Masked().Contains(client) || p.Bits() <= best {
			continue
		}
		best, chosen = p.Bits(), s
	}
	if chosen == nil {
		return out
	}
	out.Host = chosen.Address
	out.Ports.TCP = orPort(chosen.Ports.TCP, out.Ports.TCP)
	out.Ports.QUIC = orPort(chosen.Ports.QUIC, out.Ports.QUIC)
	out.Ports.HTTP = orPort(chosen.Ports.HTTP, out.Ports.HTTP)
	out.Ports.WebSocket = orPort(chosen.Ports.WebSocket, out.Ports.WebSocket)
	return out
}

// orPort is port, or fallback when port is 0 (not named).
func orPort(port, fallback uint16) uint16 {
	if port != 0 {
		return port
	}
	return fallback
}

// ClientIP is the IP of a connection's remote address ("ip:port", as
// the client plane reports it, or a bare IP); the zero Addr, which no
// selector matches, when it holds none.
func ClientIP(remote string) netip.Addr {
	if ap, err := netip.ParseAddrPort(remote); err == nil {
		return ap.Addr()
	}
	host := remote
	if h, _, err := net.SplitHostPort(remote); err == nil {
		host = h
	}
	ip, _ := netip.ParseAddr(host)
	return ip
}

// validHost reports whether h may be told to a client as a host: an IP
// literal (IPv6 without brackets) or an RFC 1123 host name, no port.
func validHost(h string) bool {
	if _, err := netip.ParseAddr(h); err == nil {
		return true
	}
	if len(h) == 0 || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(strings.TrimSuffix(h, "."), ".") {
		if len(label) == 0 || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
				return false
			}
		}
	}
	return true
}

// validateRosterAddresses checks every roster node's addresses: the ip (a
// host: the peers dial it, by name or IP, and it is the TLS server name;
// empty: not known yet, as tests that bind port 0 start), advertised_address,
// and the selectors.
func validateRosterAddresses(c Config, check checkFunc) {
	for i, n := range c.Cluster.Nodes {
		key := fmt.Sprintf("cluster.nodes[%d]", i)
		check(n.IP == "" || validHost(n.IP), "%s.ip %q must be an IP address or a host name, without a port", key, n.IP)
		check(n.AdvertisedAddress == "" || validHost(n.AdvertisedAddress),
			"%s.advertised_address %q must be an IP address or a host name, without a port", key, n.AdvertisedAddress)
		check(len(n.AdvertisedAddresses) <= MaxAdvertisedAddresses, "%s.advertised_addresses has %d selectors, at most %d",
			key, len(n.AdvertisedAddresses), MaxAdvertisedAddresses)
		for j, s := range n.AdvertisedAddresses {
			sel := fmt.Sprintf("%s.advertised_addresses[%d]", key, j)
			_, err := netip.ParsePrefix(s.ClientCIDR)
			check(err == nil, "%s.client_cidr %q is not a CIDR (10.0.0.0/8, fd00::/8)", sel, s.ClientCIDR)
			check(validHost(s.Address), "%s.address %q must be an IP address or a host name, without a port", sel, s.Address)
		}
	}
}
