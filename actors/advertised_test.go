package actors

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"iggynode/client"
	"iggynode/config"
)

// replica-plane.md 10.4 rule 2: GetClusterMetadata answers each client
// with the addresses for the network it connects from. Here the pod
// network is 127.0.0.1 and "outside" is 127.0.0.2: inside, the roster
// names the nodes by their (unresolvable) pod names; from outside, by the
// advertised host and the advertised ports (the roster's own ports are
// wrong on purpose), and the SDK follows the leader through them.
func TestClusterMetadataAnswersEachClientNetwork(t *testing.T) {
	nodes := startCluster(t, 3)
	var roster []config.Node
	for i, n := range nodes {
		_, port, _ := net.SplitHostPort(n.TCPAddr())
		p, _ := strconv.Atoi(port)
		roster = append(roster, config.Node{Name: fmt.Sprintf("node-%d", i), IP: fmt.Sprintf("node-%d.pods.invalid", i),
			ReplicaID: i, Ports: config.Ports{TCP: 1},
			AdvertisedAddresses: []config.AdvertisedAddress{
				{ClientCIDR: "127.0.0.0/8", Address: fmt.Sprintf("node-%d.pods.invalid", i)},
				{ClientCIDR: "127.0.0.2/32", Address: "127.0.0.1", Ports: config.ClientPorts{TCP: uint16(p)}},
			}})
	}
	for _, n := range nodes {
		n.SetClientRoster(roster)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	from := func(ip string, stay bool) client.Options {
		return client.Options{Address: nodes[2].TCPAddr(), Username: "iggy", Password: "iggy", StayOnNode: stay,
			Dialer: &client.TCPTransport{NoDelay: true, LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}}
	}

	inside, err := client.Connect(ctx, from("127.0.0.1", true))
	if err != nil {
		t.Fatal(err)
	}
	defer inside.Close()
	m, err := inside.GetClusterMetadata(ctx)
	if err != nil || len(m.Nodes) != 3 {
		t.Fatalf("roster inside: %+v %v", m, err)
	}
	for i, n := range m.Nodes {
		if n.IP != fmt.Sprintf("node-%d.pods.invalid", i) || n.TCPPort != 1 {
			t.Errorf("inside, node %d is advertised as %s:%d, want its pod name with the roster port", i, n.IP, n.TCPPort)
		}
	}

	outside, err := client.Connect(ctx, from("127.0.0.2", false))
	if err != nil {
		t.Fatalf("login from outside through a backup: %v", err)
	}
	defer outside.Close()
	if outside.Address() != nodes[0].TCPAddr() {
		t.Fatalf("the SDK is on %s; the leader is %s", outside.Address(), nodes[0].TCPAddr())
	}
	if _, err := outside.CreateStream(ctx, "from-outside", nil); err != nil {
		t.Fatalf("a write after following the leader: %v", err)
	}
}
