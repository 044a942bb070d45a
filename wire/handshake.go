package wire

import (
	"crypto/subtle"
	"fmt"

	"github.com/zeebo/blake3"
)

// Replica-plane handshake: the cluster id, the PSK-derived MAC key, the MAC
// (replica-plane.md 3.3, 3.6) and the three handshake frames (3.4). The
// frames are plain generic headers: not sealed, size 256, view and release
// 0; their integrity comes from the MAC, which covers both nonces, both ids
// and the TLS channel binding.

const (
	// HandshakeMACLabel is MAC input field 1 (3.6, Appendix B).
	HandshakeMACLabel = "apache-iggy replica-auth v1"
	// MACKeyContext is the BLAKE3 derive_key context of the MAC key.
	MACKeyContext = "apache-iggy replica-auth v1 psk->mac-key"
	// TLSExporterLabel is the label of the 32-byte TLS exporter folded into
	// the MAC as channel binding (3.7 rule 3; no context).
	TLSExporterLabel = "iggy replica psk binding"
	// ReplicaALPN is the ALPN protocol of replica TLS (3.7 rule 1).
	ReplicaALPN = "iggy-replica"
)

// MAC directions (3.6 input field 9).
const (
	MACByDialer   uint8 = 1
	MACByAcceptor uint8 = 2
)

// ClusterID is the cluster id of a cluster name (3.3): the first 16 bytes
// of BLAKE3(name), read as a little-endian u128, so its wire bytes (header
// 32..48) are the digest bytes in order.
func ClusterID(name string) U128 {
	d := blake3.Sum256([]byte(name))
	return getU128(d[:16])
}

// MACKey derives the handshake key K from the raw bytes of
// cluster.auth.shared_secret (3.6): BLAKE3 derive_key with MACKeyContext.
// The 32-byte minimum is a configuration rule, checked by the caller.
func MACKey(sharedSecret []byte) [32]byte {
	var k [32]byte
	blake3.DeriveKey(MACKeyContext, sharedSecret, k[:])
	return k
}

// HandshakeMAC is BLAKE3_keyed(key, input) over the nine fields of 3.6, in
// order: label, cluster (u128 LE), dialer id, acceptor id, nonce_d,
// nonce_a, mode (1 with tls, else 0), exporter (zeros for plaintext),
// direction (MACByDialer or MACByAcceptor).
func HandshakeMAC(key [32]byte, cluster U128, dialer, acceptor uint8, nonceD, nonceA [32]byte, tls bool, exporter [32]byte, direction uint8) [32]byte {
	in := make([]byte, 0, len(HandshakeMACLabel)+16+1+1+32+32+1+32+1)
	in = append(in, HandshakeMACLabel...)
	in = AppendU128(in, cluster)
	in = append(in, dialer, acceptor)
	in = append(in, nonceD[:]...)
	in = append(in, nonceA[:]...)
	in = AppendBool8(in, tls)
	in = append(in, exporter[:]...)
	in = append(in, direction)
	h, err := blake3.NewKeyed(key[:])
	if err != nil {
		// NewKeyed fails only for a key that is not 32 bytes.
		panic("wire: blake3 keyed: " + err.Error())
	}
	_, _ = h.Write(in)
	var mac [32]byte
	h.Sum(mac[:0])
	return mac
}

// MACEqual compares two MACs in constant time (3.6 notes).
func MACEqual(a, b [32]byte) bool { return subtle.ConstantTimeCompare(a[:], b[:]) == 1 }

// HandshakeStatus is the Challenge status byte (offset 192, 3.4). A dialer
// treats every value other than HandshakeOk as a rejection, unknown values
// included, so an unknown status is not a decode failure.
type HandshakeStatus uint8

const (
	HandshakeOk              HandshakeStatus = 0
	HandshakeUnknownCommand  HandshakeStatus = 1
	HandshakeClusterMismatch HandshakeStatus = 2
	HandshakeDirectionalRule HandshakeStatus = 3
	// HandshakeAuthRequired and HandshakeMACMismatch are log labels only;
	// they are never written to the wire.
	HandshakeAuthRequired HandshakeStatus = 4
	HandshakeMACMismatch  HandshakeStatus = 5
)

var handshakeStatusNames = [...]string{"Ok", "UnknownCommand", "ClusterMismatch", "DirectionalRule",
	"AuthRequired", "MacMismatch"}

func (s HandshakeStatus) String() string {
	if int(s) < len(handshakeStatusNames) {
		return handshakeStatusNames[s]
	}
	return fmt.Sprintf("HandshakeStatus(%d)", uint8(s))
}

// handshakeCommon writes the fixed handshake fields of 3.4: checksums 0,
// size 256, view 0, release 0.
func handshakeCommon(h *Header, cluster U128, replica uint8, cmd Command) {
	*h = Header{}
	h.writeCommon(common{Cluster: cluster, Size: HeaderSize, Replica: replica}, cmd)
}

// decodeHandshake checks what a handshake frame's decode judges: the
// command and the 256-byte size (1.3). Everything else (cluster, replica,
// nonces, MACs) is judged by the handshake itself (3.5, 3.6).
func decodeHandshake(h *Header, cmd Command) error {
	if err := wantCommand(h, cmd.String(), cmd); err != nil {
		return err
	}
	if h.Size() != HeaderSize {
		return decodeErr("size", "a handshake frame has no body")
	}
	return nil
}

// HelloHeader is ReplicaHello (14), dialer to acceptor. Nonce is nonce_d
// with auth, all zero without (3.5: a zero nonce marks a non-auth dialer).
type HelloHeader struct {
	Cluster U128
	Replica uint8
	Nonce   [32]byte
}

// Hello reads the fields of h without validating them.
func (h *Header) Hello() HelloHeader {
	m := HelloHeader{Cluster: h.Cluster(), Replica: h.Replica()}
	copy(m.Nonce[:], h[128:160])
	return m
}

// Encode writes m into h (3.4; not sealed).
func (m *HelloHeader) Encode(h *Header) {
	handshakeCommon(h, m.Cluster, m.Replica, CmdReplicaHello)
	copy(h[128:160], m.Nonce[:])
}

// DecodeHelloHeader types h as a ReplicaHello: command 14, size 256.
func DecodeHelloHeader(h *Header) (HelloHeader, error) {
	if err := decodeHandshake(h, CmdReplicaHello); err != nil {
		return HelloHeader{}, err
	}
	return h.Hello(), nil
}

// ChallengeHeader is ReplicaChallenge (15), acceptor to dialer: Nonce
// (nonce_a) and MAC (mac_a, direction 2) when Status is HandshakeOk, both
// zero on a rejection.
type ChallengeHeader struct {
	Cluster U128
	Replica uint8
	Nonce   [32]byte
	MAC     [32]byte
	Status  HandshakeStatus
}

// Challenge reads the fields of h without validating them.
func (h *Header) Challenge() ChallengeHeader {
	m := ChallengeHeader{Cluster: h.Cluster(), Replica: h.Replica(), Status: HandshakeStatus(h[192])}
	copy(m.Nonce[:], h[128:160])
	copy(m.MAC[:], h[160:192])
	return m
}

// Encode writes m into h (3.4; not sealed).
func (m *ChallengeHeader) Encode(h *Header) {
	handshakeCommon(h, m.Cluster, m.Replica, CmdReplicaChallenge)
	copy(h[128:160], m.Nonce[:])
	copy(h[160:192], m.MAC[:])
	h[192] = byte(m.Status)
}

// DecodeChallengeHeader types h as a ReplicaChallenge: command 15, size
// 256. Any status byte decodes; the dialer rejects all but HandshakeOk.
func DecodeChallengeHeader(h *Header) (ChallengeHeader, error) {
	if err := decodeHandshake(h, CmdReplicaChallenge); err != nil {
		return ChallengeHeader{}, err
	}
	return h.Challenge(), nil
}

// FinishHeader is ReplicaFinish (16), dialer to acceptor: MAC is mac_d
// (direction 1).
type FinishHeader struct {
	Cluster U128
	Replica uint8
	MAC     [32]byte
}

// Finish reads the fields of h without validating them.
func (h *Header) Finish() FinishHeader {
	m := FinishHeader{Cluster: h.Cluster(), Replica: h.Replica()}
	copy(m.MAC[:], h[160:192])
	return m
}

// Encode writes m into h (3.4; not sealed).
func (m *FinishHeader) Encode(h *Header) {
	handshakeCommon(h, m.Cluster, m.Replica, CmdReplicaFinish)
	copy(h[160:192], m.MAC[:])
}

// DecodeFinishHeader types h as a ReplicaFinish: command 16, size 256.
func DecodeFinishHeader(h *Header) (FinishHeader, error) {
	if err := decodeHandshake(h, CmdReplicaFinish); err != nil {
		return FinishHeader{}, err
	}
	return h.Finish(), nil
}
