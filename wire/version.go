package wire

import "fmt"

// Version is a semver packed into a u32, 10 bits per component
// (connection-lifecycle.md): major<<20 | minor<<10 | patch.
type Version uint32

// Pack builds a packed version; each component must be below 1024.
func Pack(major, minor, patch uint32) Version {
	return Version((major&0x3FF)<<20 | (minor&0x3FF)<<10 | patch&0x3FF)
}

func (v Version) Major() uint32 { return uint32(v) >> 20 & 0x3FF }
func (v Version) Minor() uint32 { return uint32(v) >> 10 & 0x3FF }
func (v Version) Patch() uint32 { return uint32(v) & 0x3FF }

func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v.Major(), v.Minor(), v.Patch()) }

const (
	// ProtocolVersion is binary protocol 0.11.0 (client-plane.md 1).
	ProtocolVersion Version = 0x00002C00
	// MinProtocolVersion is the lowest client version the server accepts.
	MinProtocolVersion Version = 0x00002C00
	// NodeVersion is iggynode's own release, unrelated to the protocol
	// version above.
	NodeVersion = "0.9.0"
	// ServerVersion is the free-text build version the node reports at
	// login and in stats: both numbers, labelled, so nobody reads the
	// node's 0.9.0 as an Iggy release older than the protocol it speaks.
	ServerVersion = "iggynode " + NodeVersion + " (Apache Iggy binary protocol 0.11.0)"
	// ServerSemver is NodeVersion as stats encode it: major*1e6+minor*1e3+patch.
	ServerSemver uint32 = 9000
)

// Accepts is the login version gate (client-plane.md 5.2 step 2): the client
// version must be at least the minimum and its major.minor at most the
// server's. Under 0.x this is exactly 0.11.x.
func (v Version) Accepts(client Version) bool {
	return client >= MinProtocolVersion && uint32(client)>>10 <= uint32(v)>>10
}
