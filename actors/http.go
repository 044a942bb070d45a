package actors

import (
	"github.com/asynkron/protoactor-go/actor"

	clientplane "iggynode/plane/client"
	httpplane "iggynode/plane/http"
	"iggynode/wire"
)

// The HTTP plane (plane/http) reaches the actors through virtual
// connections: Node.Open spawns a connection actor for each as for an
// accepted socket, and every route sends the binary request of its
// command. What differs is only who vouches for the user:
//   - the plane verified a JWT (or the actors verified a personal access
//     token a moment before): the connection asserts that user. A
//     Register binds it without a password (still admitted, replicated,
//     forwarded to the primary on a backup like any login), and reads
//     before any Register run as that user with no session;
//   - the login routes ask for a check only: the Register's credentials
//     are verified as for a binary login (throttle, verification pool),
//     and the reply carries the user id without committing a session.
// Every request of an asserting connection first checks that the user
// still exists and is active (http.md 10 #16).

// httpConn is the optional interface of plane/http's connections.
type httpConn interface {
	AssertedUser() (uint32, bool)
	VerifyOnly() bool
}

// httpAssertion is what a request of such a connection carries.
type httpAssertion struct {
	user       uint32
	asserted   bool
	verifyOnly bool
}

// httpRequest marks req when it comes from an HTTP virtual connection and
// gives an asserting connection's reads their user.
func httpRequest(conn clientplane.Conn, req *clientRequest) {
	hc, ok := conn.(httpConn)
	if !ok {
		return
	}
	a := &httpAssertion{verifyOnly: hc.VerifyOnly()}
	a.user, a.asserted = hc.AssertedUser()
	req.http = a
	if a.asserted && req.bound == nil && req.hdr.Operation == wire.OpNonReplicated {
		req.bound = &binding{userID: a.user}
	}
}

// refuseHTTP answers the request of an asserting connection whose user is
// gone or inactive, and binds an asserted Register without credentials.
// It reports whether it answered (or took over) the request.
func (m *metadataActor) refuseHTTP(ctx actor.Context, req *clientRequest) bool {
	a := req.http
	if !a.asserted {
		return false
	}
	hdr := &req.hdr
	if !m.state.UserActive(a.user) {
		switch {
		case hdr.Operation == wire.OpRegister:
			m.reply(ctx, req, &replyOut{frame: eviction(hdr.Client, wire.EvictInvalidCredentials)})
		case hdr.Operation == wire.OpNonReplicated:
			m.reply(ctx, req, &replyOut{frame: readReply(hdr, m.commit(), wire.ErrUnauthenticated, nil)})
		default:
			m.reply(ctx, req, &replyOut{frame: denyReply(hdr, req.connID, m.commit(), wire.ErrUnauthenticated)})
		}
		return true
	}
	if hdr.Operation == wire.OpRegister {
		if _, err := wire.DecodeRegister(req.frame[wire.HeaderSize:]); err != nil {
			m.reply(ctx, req, &replyOut{frame: eviction(hdr.Client, wire.EvictMalformedLogin)})
			return true
		}
		m.registerVerified(ctx, req, a.user)
		return true
	}
	return false
}

// httpNode adapts the Node for plane/http.
type httpNode struct{ n *Node }

func (h httpNode) Open(c clientplane.Conn) clientplane.Session { return h.n.Open(c) }

// MetadataView is the metadata group's view, from its published gauges.
func (h httpNode) MetadataView() uint32 {
	t := h.n.refs.tel
	t.mu.Lock()
	defer t.mu.Unlock()
	if g := t.groups[wire.MetadataGroup]; g != nil {
		return uint32(g.view.Load())
	}
	return 0
}

// startHTTP opens the REST listener when http.enabled (plane/http).
func (n *Node) startHTTP() error {
	cfg := n.opts.Config
	if !cfg.HTTP.Enabled {
		return nil
	}
	hc := httpplane.Config{HTTP: cfg.HTTP, ClientsTableMax: cfg.Metadata.ClientsTableMax, DataDir: cfg.System.Path,
		Clustered: n.cluster.clustered(), HandshakeGrace: cfg.MessageBus.HandshakeGrace.D(), Surface: n.opts.HTTPSurface,
		Ready: n.CaughtUp, Meter: n.opts.MeterProvider, Logger: n.log, TLS: n.opts.TLS}
	if n.opts.HTTPListen != "" {
		hc.HTTP.Address = n.opts.HTTPListen
	}
	if a := cfg.Cluster.Auth; n.cluster.clustered() && a.Enabled {
		hc.ClusterSecret = a.SharedSecret
	}
	for _, node := range cfg.Cluster.Nodes {
		if node.ReplicaID == int(n.cluster.self) {
			hc.SelfName = node.Name
		}
	}
	s, err := httpplane.Start(hc, httpNode{n})
	if err != nil {
		return err
	}
	n.http = s
	n.log.Info("http listener up", "address", s.Addr().String(), "tls", cfg.HTTP.TLS.Enabled)
	return nil
}

// HTTPAddr is the bound HTTP address ("" when HTTP is disabled).
func (n *Node) HTTPAddr() string {
	if n.http == nil {
		return ""
	}
	return n.http.Addr().String()
}

// HTTPURL is the HTTP listener's base URL ("" when disabled).
func (n *Node) HTTPURL() string {
	if n.http == nil {
		return ""
	}
	return n.http.URL()
}
