package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"iggynode/client"
	clientplane "iggynode/plane/client"
)

// transportCase is one client transport the end-to-end suite runs over.
type transportCase struct {
	name string
	kind string // client.TransportTCP, TransportQUIC, TransportWS or TransportHTTP
	tls  bool
}

// transports is the one table of carriages (transports.md): every test in
// suite runs over each of them.
var transports = []transportCase{
	{"tcp", client.TransportTCP, false},
	{"tls", client.TransportTCP, true},
	{"quic", client.TransportQUIC, true},
	{"ws", client.TransportWS, false},
	{"wss", client.TransportWS, true},
	{"http", client.TransportHTTP, false},
}

// notOverHTTP are the suite tests whose operations the REST API does not
// have (http.md 2.1.3: GetMe; GET /clients lists binary connections only,
// 5.1.6), with the reason.
var notOverHTTP = map[string]string{
	"LoginPingAndIdentity": "GetMe has no HTTP route",
	"ClientsListing":       "HTTP callers are not listed by GET /clients",
}

// suite is the single-node suite that must behave the same over every
// transport.
var suite = []struct {
	name string
	fn   func(*testing.T)
}{
	{"LoginPingAndIdentity", TestLoginPingAndIdentity},
	{"WrongPasswordIsEvicted", TestWrongPasswordIsEvicted},
	{"StreamTopicSendPoll", TestStreamTopicSendPoll},
	{"StreamsTopicsPartitions", TestStreamsTopicsPartitions},
	{"PollStrategiesOffsetsAndPurge", TestPollStrategiesOffsetsAndPurge},
	{"SegmentsRollAndDelete", TestSegmentsRollAndDelete},
	{"ManyConcurrentClients", TestManyConcurrentClients},
	{"RestartKeepsEverything", TestRestartKeepsEverything},
	{"ClientsListing", TestClientsListing},
	{"SnapshotArchive", TestSnapshotArchive},
	{"ColdPollsServeTheStoredBatches", TestColdPollsServeTheStoredBatches},
	{"PooledRequestBuffersNeverServeReusedBytes", TestPooledRequestBuffersNeverServeReusedBytes},
}

var (
	transportOfTest sync.Map // test name prefix -> transportCase
	certOnce        sync.Once
	testCert        *clientplane.SelfSigned
	testCAFile      string
)

// TestOverEveryTransport runs the suite over every transport of the table.
// (Run alone, each test uses plain TCP.)
func TestOverEveryTransport(t *testing.T) {
	for _, tc := range transports {
		if tc.name == "tcp" {
			continue // the suite already runs over TCP as top-level tests
		}
		for _, s := range suite {
			t.Run(tc.name+"/"+s.name, func(t *testing.T) {
				if why := notOverHTTP[s.name]; tc.kind == client.TransportHTTP && why != "" {
					t.Skip(why)
				}
				transportOfTest.Store(t.Name(), tc)
				defer transportOfTest.Delete(t.Name())
				s.fn(t)
			})
		}
	}
}

// transportFor finds the transport of t, or of the test it runs under.
func transportFor(t testing.TB) transportCase {
	name := t.Name()
	for {
		if tc, ok := transportOfTest.Load(name); ok {
			return tc.(transportCase)
		}
		i := strings.LastIndexByte(name, '/')
		if i < 0 {
			return transports[0]
		}
		name = name[:i]
	}
}

// certificate is one self-signed certificate for the whole package, with
// its PEM written where clients can trust it.
func certificate(t testing.TB) (*clientplane.SelfSigned, string) {
	certOnce.Do(func() {
		c, err := clientplane.GenerateSelfSigned()
		if err != nil {
			panic(err)
		}
		dir, err := os.MkdirTemp("", "iggynode-e2e-ca")
		if err != nil {
			panic(err)
		}
		testCAFile = filepath.Join(dir, "ca.pem")
		if err := os.WriteFile(testCAFile, c.CertPEM, 0o600); err != nil {
			panic(err)
		}
		testCert = c
	})
	return testCert, testCAFile
}

// clientOptions dials n over t's transport.
func clientOptions(t testing.TB, n *testNode) client.Options {
	tc := transportFor(t)
	o := client.Options{Transport: tc.kind}
	switch tc.kind {
	case client.TransportQUIC:
		o.Address = n.QUICAddr()
		_, ca := certificate(t)
		o.QUIC.ValidateCertificate, o.QUIC.CAFile = true, ca
	case client.TransportWS:
		o.Address = n.WebSocketAddr()
	case client.TransportHTTP:
		o.Address = n.HTTPAddr()
	default:
		o.Address = n.TCPAddr()
	}
	if tc.tls && tc.kind != client.TransportQUIC {
		_, ca := certificate(t)
		o.TLS = client.TLSOptions{Enabled: true, Domain: "localhost", CAFile: ca}
	}
	return o
}
