package actors

import (
	"strings"
	"testing"
	"time"

	"iggynode/internal/testutil"
)

const testSharedSecret = "a-test-cluster-secret-of-32-bytes-or-more"

// [cluster.tls] reaches the replica plane (replica-plane.md 3.7): three
// nodes with certificates of one CA link over mutual TLS, with the shared
// secret's MAC inside, and replicate metadata.
func TestClusterReplicatesOverMutualTLS(t *testing.T) {
	ca := testutil.NewTestCA(t, "cluster CA")
	nodes := startClusterWith(t, 3, func(o *Options) {
		c := &o.Config.Cluster
		c.Auth.Enabled, c.Auth.SharedSecret = true, testSharedSecret
		c.TLS.Enabled = true
		c.TLS.CertFile, c.TLS.KeyFile = ca.Issue(t, "node"+string('0'+rune(c.ReplicaID)), testutil.Loopback)
		c.TLS.CAFile = ca.CAFile
	})
	for i, n := range nodes {
		deadline := time.Now().Add(10 * time.Second)
		for {
			stats, linked := n.cluster.links.Stats(), 0
			for _, s := range stats {
				if s.Connected && s.TLS {
					linked++
				}
			}
			if linked == len(nodes)-1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %d: links %+v, want every peer over TLS", i, stats)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	ctx, c := rootClient(t, nodes[0])
	createStreams(t, ctx, c, 3)
	waitSameMetadata(t, nodes[0], nodes[1])
	waitSameMetadata(t, nodes[0], nodes[2])
}

// A cluster node refuses to start with a replica plane it cannot secure:
// beyond loopback without auth (unless allow_insecure), or with TLS whose
// files do not load.
func TestClusterNodeRefusesAnInsecureReplicaPlane(t *testing.T) {
	cases := []struct {
		name string
		mod  func(o *Options)
		want string
	}{
		{"every interface without auth", func(o *Options) { o.ReplicaListen = "0.0.0.0:0" }, "allow_insecure"},
		{"roster address beyond loopback without auth", func(o *Options) {
			o.ReplicaListen = ""
			o.Config.Cluster.Nodes[0].IP, o.Config.Cluster.Nodes[0].Ports.TCPReplica = "192.0.2.1", 9090
		}, "allow_insecure"},
		{"tls files missing", func(o *Options) {
			c := &o.Config.Cluster
			c.Auth.Enabled, c.Auth.SharedSecret = true, testSharedSecret
			c.TLS.Enabled, c.TLS.CertFile, c.TLS.KeyFile, c.TLS.CAFile = true, "/nonexistent/node.pem", "/nonexistent/node.key", "/nonexistent/ca.pem"
		}, "node.pem"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := clusterNodeOptions(0, 2, t.TempDir())
			tc.mod(&opts)
			n, err := Start(opts)
			if err == nil {
				_ = n.Close()
				t.Fatal("the node started")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q, want it to mention %q", err, tc.want)
			}
		})
	}
}
