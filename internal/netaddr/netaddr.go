// Package netaddr holds the one rule the node's listeners share about
// addresses: which bind addresses count as loopback only.
package netaddr

import (
	"net"
	"strings"
)

// IsLoopback reports whether a host:port (or a bare host) binds loopback
// only: a loopback IP or "localhost". An empty host (every interface) and
// any other name count as exposed.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
