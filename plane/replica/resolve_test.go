package replicaplane

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"iggynode/internal/testutil"
)

// fakeResolver is a DNS whose records a test moves, counting lookups.
type fakeResolver struct {
	mu      sync.Mutex
	records map[string][]string
	lookups map[string]int
}

func newFakeResolver() *fakeResolver {
	return &fakeResolver{records: map[string][]string{}, lookups: map[string]int{}}
}

func (r *fakeResolver) LookupHost(_ context.Context, host string) ([]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lookups[host]++
	if ips, ok := r.records[host]; ok {
		return ips, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func (r *fakeResolver) set(host string, ips ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records[host] = ips
}

func (r *fakeResolver) count(host string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lookups[host]
}

// podName is how a StatefulSet's pod is known on its headless Service.
const podName = "iggynode-1.iggynode-headless.test.svc.cluster.local"

// namedPair starts replica 0, which knows replica 1 only by podName on
// port, resolved through dns; replica 1 is started by the test.
func namedPair(t *testing.T, dns *fakeResolver, port int, mod func(*Config)) testNode {
	t.Helper()
	cfg := baseConfig(0, 2)
	cfg.Roster[1].Addr = net.JoinHostPort(podName, strconv.Itoa(port))
	cfg.Resolver = dns
	if mod != nil {
		mod(&cfg)
	}
	return startNode(t, cfg)
}

// replicaAt starts replica 1 listening on ip:port, or skips the test when
// the machine has no such loopback address.
func replicaAt(t *testing.T, ip string, port int, mod func(*Config)) testNode {
	t.Helper()
	cfg := baseConfig(1, 2)
	cfg.Listen = net.JoinHostPort(ip, strconv.Itoa(port))
	if mod != nil {
		mod(&cfg)
	}
	rec := newRecorder()
	n, err := Start(cfg, rec)
	if err != nil {
		t.Skipf("cannot listen on %s (%v): this test moves a peer across loopback addresses", cfg.Listen, err)
	}
	t.Cleanup(func() { _ = n.Close() })
	return testNode{n, rec}
}

// A peer named by host name is looked up at every dial: when it comes
// back at another IP under the same name (a rescheduled pod), the
// reconnect finds it there without a roster change.
func TestPeerNamedByHostIsResolvedAgainOnReconnect(t *testing.T) {
	dns := newFakeResolver()
	first := replicaAt(t, "127.0.0.1", 0, nil)
	port := first.Addr().(*net.TCPAddr).Port
	dns.set(podName, "127.0.0.1")
	dialer := namedPair(t, dns, port, nil)
	eventually(t, "linked to the first incarnation", func() bool { return connected(dialer, 1) })
	if got, want := dialer.Stats()[1].Remote, fmt.Sprintf("127.0.0.1:%d", port); got != want {
		t.Fatalf("linked to %s, want %s", got, want)
	}
	looked := dns.count(podName)

	// The pod moves: its name now leads to 127.0.0.2, and nothing listens
	// at the old IP any more.
	dns.set(podName, "127.0.0.2")
	_ = first.Close()
	second := replicaAt(t, "127.0.0.2", port, nil)
	eventually(t, "linked to the second incarnation", func() bool {
		return connected(dialer, 1) && dialer.Stats()[1].Remote == fmt.Sprintf("127.0.0.2:%d", port)
	})
	eventually(t, "accepted by the second incarnation", func() bool { return connected(second, 0) })
	if dns.count(podName) <= looked {
		t.Fatalf("%d lookups before the move, %d after: the reconnect did not resolve the name again", looked, dns.count(podName))
	}
}

// A name that does not resolve yet (a pod not scheduled, its record not
// published) is looked up again at every sweep, and dialed once it does.
func TestPeerNameThatDoesNotResolveYetIsDialedOnceItDoes(t *testing.T) {
	dns := newFakeResolver()
	peer := replicaAt(t, "127.0.0.1", 0, nil)
	dialer := namedPair(t, dns, peer.Addr().(*net.TCPAddr).Port, nil)
	eventually(t, "several failed lookups", func() bool { return dns.count(podName) >= 3 })
	if connected(dialer, 1) {
		t.Fatal("linked through a name that does not resolve")
	}
	dns.set(podName, "127.0.0.1")
	eventually(t, "linked once the name resolves", func() bool { return connected(dialer, 1) && connected(peer, 0) })
}

// replica-plane.md 3.7 rule 2 with a roster of host names: the dialer
// connects to the IP the name resolves to but verifies the certificate
// against the name, so a node certificate carries DNS SANs (a wildcard
// over the headless Service works) and no IP SAN; a certificate for
// another name is refused.
func TestMutualTLSVerifiesAPeerNamedByHostByItsName(t *testing.T) {
	ca := testutil.NewTestCA(t, "cluster CA")
	withNamedCert := func(host string) func(*Config) {
		return func(c *Config) {
			withAuth(secretOld, nil)(c)
			cert, key := ca.IssueForHosts(t, fmt.Sprintf("replica%d-%s", c.Self, host), host)
			conf, err := MutualTLS(cert, key, ca.CAFile)
			if err != nil {
				t.Fatal(err)
			}
			c.TLS = conf
		}
	}
	for _, tc := range []struct {
		name, san string
		linked    bool
	}{
		{"wildcard over the headless service", "*.iggynode-headless.test.svc.cluster.local", true},
		{"the pod's own name", podName, true},
		{"another service's name", "*.elsewhere.test.svc.cluster.local", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dns := newFakeResolver()
			dns.set(podName, "127.0.0.1")
			peer := replicaAt(t, "127.0.0.1", 0, withNamedCert(tc.san))
			dialer := namedPair(t, dns, peer.Addr().(*net.TCPAddr).Port, withNamedCert(tc.san))
			if tc.linked {
				eventually(t, "linked over TLS", func() bool { return connected(dialer, 1) && dialer.Stats()[1].TLS })
				return
			}
			eventually(t, "a failed handshake", func() bool { return dialer.Handshakes().Failed > 0 })
			never(t, "linked to a certificate for another name", 200*time.Millisecond, func() bool { return connected(dialer, 1) })
		})
	}
}
