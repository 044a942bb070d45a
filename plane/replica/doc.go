// Package replicaplane is the replica edge of the node: the tcp_replica
// listener, the directional dialer, the handshake, and one link per
// connected peer that turns frames into bytes and bytes into frames
// (replica-plane.md 1.1, 3; docs/cluster.md "Transport", "Handshake").
// It knows framing and peers, never consensus: every frame that passes the
// connection-level checks goes to the Handler, which hands it to the actor
// that owns its group (4.2, with wire.GroupOf); the typed decode, the seal
// and the validators of 1.5 are that receiver's.
//
// # Topology (3.1)
//
// One TCP connection per unordered pair. Replica a dials b only if b > a,
// and accepts only from ids below its own that are in its current roster
// (the spec's "below replica_count", for a roster whose ids need not be
// contiguous). The dialer runs at Start, on SetRoster, after a lost
// link, and on a ramp up to every ReconnectPeriod (100 ms doubling, no jitter,
// github.com/cenkalti/backoff/v5, as the accept loop's retry after a failed
// Accept), for each higher peer with a known address that has
// neither an installed connection nor a dial or handshake in flight. An
// installed connection is used in both directions; a second one handshaken
// for the same peer is closed (the older wins). TCP_NODELAY on both ends.
// TLS plus the handshake share one HandshakeGrace deadline; at most
// MaxInboundHandshakes (256) inbound handshakes are in flight, and a
// socket accepted beyond that is closed unread. There is no keepalive and
// no idle limit: a peer is lost on a TCP error or EOF (3.1 rule 7).
//
// # Handshake (3.4-3.8)
//
// The three frames are wire.HelloHeader, ChallengeHeader and FinishHeader;
// the MAC is wire.HandshakeMAC under wire.MACKey of the shared secret.
//   - Auth disabled: the dialer sends a Hello with a zero nonce and installs
//     at once, reading nothing. The acceptor checks, in order, command
//     Hello (a 256-byte generic header), cluster id, and replica < self and
//     in the roster; any failure closes without a frame.
//   - Auth enabled: a failed check is answered with a Challenge carrying
//     the reason (UnknownCommand, ClusterMismatch, DirectionalRule) only
//     when the Hello's nonce is non-zero, then the socket closes; a zero
//     nonce (a non-auth dialer) is closed without a frame (AuthRequired, a
//     log label only). Otherwise Challenge (nonce_a, mac_a direction 2),
//     Finish (mac_d direction 1); the dialer installs right after sending
//     Finish, the acceptor after verifying it. Signing uses K only;
//     verification accepts K or K_prev; MACs compare in constant time. The
//     dialer does not check the Challenge's cluster or replica fields.
//   - TLS (requires auth): TLS 1.3 only, ALPN iggy-replica required on both
//     ends, the dialer is the client and names the peer's roster host; the
//     32-byte exporter "iggy replica psk binding" (no context) is MAC field
//     8 with mode 1, so a relaying MITM fails both MACs.
//   - TLS configurations (the spec names the keys, not the trust model):
//     MutualTLS (cert_file, key_file, ca_file) is mutual TLS under a
//     cluster CA: every node presents its certificate on both ends, the
//     dialer verifies the acceptor's against the CA and its roster host,
//     the acceptor requires the dialer's and verifies it against the CA.
//     A node certificate needs the serverAuth and clientAuth usages and
//     its roster host as a SAN: an IP SAN for an IP, a DNS SAN (a
//     wildcard over a headless Service works) for a name. The acceptor does not match the client
//     certificate to the replica id the Hello claims: like the MAC (3.6
//     notes), the certificate proves membership, not identity.
//     AnyPeerTLS is self_signed mode: an ephemeral certificate, no
//     verification either way; only the MAC keeps strangers out.
//
// # A roster that changes (docs/reconfiguration.md, "Links")
//
// A roster is any set of distinct ids below 32 (vsr.MaxReplicas), at
// least one: removing replica 1 of 0..4 leaves {0,2,3,4}. It need not name
// Self: a node joining a running cluster starts with the cluster's
// bootstrap roster and its own Config.Listen, accepts the lower ids of that
// roster, and is dialed by them once their rosters carry its address. An
// entry for Self is allowed and ignored (beyond giving the default listen
// address). SetRoster replaces the whole peer set, and the dialer sweeps
// at once:
//   - an id that appears gets a peer, dialed if it is higher and has an
//     address, accepted if it is lower;
//   - an id that disappears has its link closed (PeerDown is called; its
//     queued frames count as dropped), a dial or handshake in flight to it
//     abandoned at once, and its Hellos refused from then on (counted as
//     DirectionalRule, like a Hello from a higher id); Send to it returns
//     false and Stats no longer lists it;
//   - an id whose address changed is redialed there: a connection this
//     node dialed is closed, even if the old host still answers, and a dial
//     in flight to the old address is abandoned; a connection accepted from
//     it stays until it fails, since the acceptor cannot tell which host
//     dialed it;
//   - every other link is kept.
//
// A link whose handshake ends after a roster change made it stale (its
// peer left, or moved while it was dialed) is closed instead of
// installed. Send reads the peers from an immutable table behind an atomic
// pointer, which SetRoster replaces under the node's lock, so the hot path
// takes no lock. Each id's counters live as long as the node: an id removed
// and added again goes on counting, and its old link, still installed
// until its PeerDown returns, keeps the Handler's PeerUp/PeerDown order.
//
// # Peers by name
//
// A roster host may be a name instead of an IP (a StatefulSet's pods,
// iggynode-1.iggynode-headless.ns.svc.cluster.local): the dialer looks it
// up through Config.Resolver at every dial and caches nothing, so the dial
// after a lost link finds a pod rescheduled at a new IP under its old
// name; the addresses are tried in the order the resolver gives, and a
// name that does not resolve yet fails that dial like a refused
// connection (the next sweep tries again). The IP a name led to is
// logged when it changes, and PeerStats.Remote shows it. TLS verifies the
// name, not the IP. Resolution lives in resolve.go, apart from the sweep
// and its ramp, which decide only when to dial. The own entry's name is
// bound as net.Listen resolves it (a pod's /etc/hosts names it).
//
// # Exposure
//
// A node without auth refuses to listen beyond loopback (an IP that is
// not loopback, every interface, or any host name other than localhost)
// unless Config.AllowInsecure (cluster.allow_insecure) says so, and then
// warns at Start: without auth any process that reaches the port can join.
//
// The mixed configurations behave as 3.8 says: an auth dialer facing a
// non-auth acceptor fails on the first frame that is not a Challenge (or at
// HandshakeGrace if none comes); a non-auth dialer facing an auth acceptor,
// or a different cluster name without auth, installs its side and loses it
// as soon as the acceptor closes, again at every reconnect sweep.
//
// # Frames (1.1, 3.2)
//
// The reader reads the 256-byte header, then enforces 256 <= size <=
// MaxFrameSize and command <= 29 before allocating or reading the body;
// either failure closes the connection. Commands 0-4 and 14-16 (after the
// handshake) and 8 and 13 (client-bound) are skipped without allocating,
// the link kept (counted as Ignored). Everything else, command 5
// included (1.1 rule 6), is handed to Handler.Frame as one freshly
// allocated slice the callee owns.
//
// Send never blocks: it puts the header and body, unjoined and uncopied,
// on the link's bounded queue (PeerQueueCapacity); a full queue or a peer
// without a connection drops the frame and counts it (3.2 rules 1 and 4).
// One writer goroutine per link takes up to MaxBatch frames per write:
// one writev (net.Buffers) on plain TCP, one bufio flush through TLS.
// Frames still queued when a link ends, and a batch whose write failed,
// count as dropped.
//
// # Choices where the spec is silent
//
//   - The outbound queue holds up to PeerQueueCapacity frames (default
//     16384, not the spec's 256) and PeerQueueBytes bytes (256 MiB), its
//     ring growing as frames queue: one link carries every group the two
//     nodes share, and the burst of thousands of groups electing at once
//     overflowed 256 frames into a storm of resends that never settled.
//   - Frames of the iggynode extensions (the node heartbeat, command 64)
//     travel on an urgent lane of their own, taken before the queue: a
//     link full of an election's frames must not starve the heartbeat
//     that tells the peer this node is alive. They are accepted on this
//     plane only; a reference server closes the link on them (1.1 rule 3).
//   - The outbound queue lives with the link, not the peer: a send to an
//     unconnected peer is dropped anyway (3.2 rule 4), so a new link starts
//     with an empty queue and never replays frames of the old one.
//   - The inbound bounded queue of 3.2 rule 2 is the Handler itself: Frame
//     is called from the reader goroutine, so a slow handler stops the
//     reader and TCP pushes back. Handlers must only hand the frame over.
//   - Handler calls for one peer are ordered PeerUp, frames, PeerDown; the
//     connection is uninstalled only after PeerDown returns, so a new
//     link's PeerUp never overtakes the old link's PeerDown. A connection
//     that arrives in that short window is dropped as a duplicate and the
//     next sweep retries. Close calls PeerDown for every installed link.
//   - Links close without a TLS close_notify: nothing on this plane waits
//     for one, and it could block on a peer that stopped reading.
//   - Send to this node's own id, or to an id outside the roster, returns
//     false without counting. A malformed frame (header not 256 bytes,
//     size field not 256+len(body), size above MaxFrameSize) is refused and
//     counted as dropped: it would desynchronize the peer's reader.
//   - Config.Listen lets a node bind an address other than its roster entry
//     (tests bind 127.0.0.1:0, read Addr, then SetRoster everyone), and a
//     joiner, which no roster names yet, say where it listens.
//   - A dialer whose handshake fails does not back off beyond the reconnect
//     period; the acceptor sheds excess inbound sockets instead.
//   - 3.1 rule 3 sweeps at startup and then every reconnect period. Here,
//     while a higher peer is unlinked, the gap between sweeps doubles from
//     100 ms up to the period (reset once every link is up); a lost link
//     brings the next sweep one ramp step closer, and SetRoster sweeps at
//     once. Nodes started together would otherwise leave the lower one's
//     first dial refused and the pair unlinked for a whole period (5 s),
//     and a backup linked late has missed every op committed meanwhile. A
//     peer that keeps refusing or dropping us is dialed at most once per
//     doubling gap, so the ramp costs a handful of extra dials per outage;
//     wire behaviour is unchanged.
//   - message_bus.max_batch <= 512 (10.3) is a configuration rule checked
//     by the config loader, not here.
package replicaplane
