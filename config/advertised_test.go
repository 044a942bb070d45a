package config

import (
	"net/netip"
	"strings"
	"testing"
)

// A node of a Kubernetes cluster as the chart renders it: its pod name
// for the pod network, a NodePort for everyone else, and a longer prefix
// carved out of the pod network for a bastion subnet.
var podNode = Node{
	Name: "iggynode-1", IP: "iggynode-1.iggynode-headless.default.svc.cluster.local", ReplicaID: 1,
	Ports: Ports{TCP: 8090, QUIC: 8080, HTTP: 3000, WebSocket: 8092, TCPReplica: 9090},
	AdvertisedAddresses: []AdvertisedAddress{
		{ClientCIDR: "0.0.0.0/0", Address: "203.0.113.7", Ports: ClientPorts{TCP: 30091, QUIC: 30081}},
		{ClientCIDR: "::/0", Address: "2001:db8::7", Ports: ClientPorts{TCP: 30091}},
		{ClientCIDR: "10.0.0.0/8", Address: "iggynode-1.iggynode-headless.default.svc.cluster.local"},
		{ClientCIDR: "10.9.0.0/16", Address: "bastion.example"},
		{ClientCIDR: "fd00::/8", Address: "iggynode-1.v6.internal"},
		{ClientCIDR: "10.9.0.0/16", Address: "second-of-equals"},
	},
}

// replica-plane.md 10.4 rule 2: the longest matching prefix of the
// client's family wins, its ports replace the node's where it names them.
func TestAdvertisedToPicksTheLongestMatchingPrefix(t *testing.T) {
	nodePorts := ClientPorts{TCP: 8090, QUIC: 8080, HTTP: 3000, WebSocket: 8092}
	for _, tc := range []struct {
		client string
		host   string
		ports  ClientPorts
	}{
		{"10.1.2.3", "iggynode-1.iggynode-headless.default.svc.cluster.local", nodePorts},
		{"10.9.4.4", "bastion.example", nodePorts}, // /16 beats /8; the first of two equal /16s
		{"198.51.100.20", "203.0.113.7", ClientPorts{TCP: 30091, QUIC: 30081, HTTP: 3000, WebSocket: 8092}},
		{"::ffff:10.1.2.3", "iggynode-1.iggynode-headless.default.svc.cluster.local", nodePorts}, // v4-mapped matches as IPv4
		{"fd00::1", "iggynode-1.v6.internal", nodePorts},
		{"fd00::1%eth0", "iggynode-1.v6.internal", nodePorts}, // the zone is not part of the network
		{"2001:db8:1::1", "2001:db8::7", ClientPorts{TCP: 30091, QUIC: 8080, HTTP: 3000, WebSocket: 8092}},
	} {
		got := podNode.AdvertisedTo(netip.MustParseAddr(tc.client))
		if got.Host != tc.host || got.Ports != tc.ports {
			t.Errorf("client %s: got %+v, want %s %+v", tc.client, got, tc.host, tc.ports)
		}
	}
}

// Without a matching selector: advertised_address, else the roster ip,
// with the node's ports; an unknown client address matches nothing.
func TestAdvertisedToFallsBackToAdvertisedAddressThenIP(t *testing.T) {
	n := Node{IP: "172.28.0.10", Ports: Ports{TCP: 8090, TCPReplica: 9090},
		AdvertisedAddresses: []AdvertisedAddress{{ClientCIDR: "192.168.0.0/16", Address: "lan.example", Ports: ClientPorts{TCP: 1}}}}
	want := ClientPorts{TCP: 8090}
	if got := n.AdvertisedTo(netip.MustParseAddr("10.0.0.1")); got.Host != "172.28.0.10" || got.Ports != want {
		t.Errorf("no selector, no advertised_address: %+v", got)
	}
	n.AdvertisedAddress = "public.example"
	for _, client := range []netip.Addr{netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("::1"), {}} {
		if got := n.AdvertisedTo(client); got.Host != "public.example" || got.Ports != want {
			t.Errorf("client %v: %+v, want advertised_address with the node's ports", client, got)
		}
	}
	if got := n.AdvertisedTo(netip.MustParseAddr("192.168.3.4")); got.Host != "lan.example" || got.Ports.TCP != 1 {
		t.Errorf("matching selector: %+v", got)
	}
	// An IPv4 prefix never matches an IPv6 client that is not v4-mapped.
	v4only := Node{IP: "n", AdvertisedAddresses: []AdvertisedAddress{{ClientCIDR: "0.0.0.0/0", Address: "v4"}}}
	if got := v4only.AdvertisedTo(netip.MustParseAddr("2001:db8::1")); got.Host != "n" {
		t.Errorf("IPv6 client matched an IPv4 selector: %+v", got)
	}
}

func TestClientIPReadsRemoteAddresses(t *testing.T) {
	for remote, want := range map[string]string{
		"10.1.2.3:5000":      "10.1.2.3",
		"[fd00::1]:5000":     "fd00::1",
		"[fe80::1%eth0]:80":  "fe80::1%eth0",
		"10.1.2.3":           "10.1.2.3",
		"::1":                "::1",
		"pipe":               "invalid IP",
		"":                   "invalid IP",
		"host.example:5000":  "invalid IP",
		"[::ffff:1.2.3.4]:1": "::ffff:1.2.3.4",
	} {
		if got := ClientIP(remote).String(); got != want {
			t.Errorf("ClientIP(%q) = %s, want %s", remote, got, want)
		}
	}
}

// The selectors load from the file and from IGGY_* variables, and bad
// ones refuse boot with the key named.
func TestAdvertisedAddressesLoadAndValidate(t *testing.T) {
	p := writeFile(t, `
[cluster]
enabled = true
[[cluster.nodes]]
name = "a"
ip = "iggynode-0.iggynode-headless.default.svc.cluster.local"
replica_id = 0
ports = { tcp = 8090, tcp_replica = 9090 }
[[cluster.nodes.advertised_addresses]]
client_cidr = "10.0.0.0/8"
address = "iggynode-0.iggynode-headless.default.svc.cluster.local"
[[cluster.nodes.advertised_addresses]]
client_cidr = "0.0.0.0/0"
address = "203.0.113.7"
ports = { tcp = 30090 }
`)
	c, warns, err := Load(p, []string{
		"IGGY_CLUSTER_NODES_0_ADVERTISED_ADDRESSES_1_PORTS_QUIC=30080",
		"IGGY_CLUSTER_NODES_0_ADVERTISED_ADDRESSES_2_CLIENT_CIDR=fd00::/8",
		"IGGY_CLUSTER_NODES_0_ADVERTISED_ADDRESSES_2_ADDRESS=fd00::10",
	})
	if err != nil || len(warns) != 0 {
		t.Fatalf("load: %v %v", err, warns)
	}
	sel := c.Cluster.Nodes[0].AdvertisedAddresses
	want := []AdvertisedAddress{
		{ClientCIDR: "10.0.0.0/8", Address: "iggynode-0.iggynode-headless.default.svc.cluster.local"},
		{ClientCIDR: "0.0.0.0/0", Address: "203.0.113.7", Ports: ClientPorts{TCP: 30090, QUIC: 30080}},
		{ClientCIDR: "fd00::/8", Address: "fd00::10"},
	}
	if len(sel) != len(want) {
		t.Fatalf("selectors %+v", sel)
	}
	for i := range want {
		if sel[i] != want[i] {
			t.Errorf("selector %d: %+v, want %+v", i, sel[i], want[i])
		}
	}

	bad := Default()
	bad.Cluster.Enabled = true
	node := Node{Name: "a", IP: "10.0.0.1:9090", AdvertisedAddress: "[::1]",
		AdvertisedAddresses: []AdvertisedAddress{{ClientCIDR: "10.0.0.0", Address: "ok.example"}, {ClientCIDR: "::/0", Address: "a.example:80"}}}
	for range MaxAdvertisedAddresses {
		node.AdvertisedAddresses = append(node.AdvertisedAddresses, AdvertisedAddress{ClientCIDR: "10.0.0.0/8", Address: "x"})
	}
	bad.Cluster.Nodes = []Node{node}
	err = Validate(bad)
	if err == nil {
		t.Fatal("bad selectors accepted")
	}
	for _, key := range []string{
		`cluster.nodes[0].ip "10.0.0.1:9090"`,
		`cluster.nodes[0].advertised_address "[::1]"`,
		"cluster.nodes[0].advertised_addresses has 18 selectors, at most 16",
		`cluster.nodes[0].advertised_addresses[0].client_cidr "10.0.0.0"`,
		`cluster.nodes[0].advertised_addresses[1].address "a.example:80"`,
	} {
		if !strings.Contains(err.Error(), key) {
			t.Errorf("no refusal naming %s in:\n%v", key, err)
		}
	}
}

func TestValidHost(t *testing.T) {
	for h, ok := range map[string]bool{
		"10.0.0.1": true, "fd00::1": true, "iggynode-0.iggynode-headless.ns.svc.cluster.local": true,
		"localhost": true, "a-b.example.": true, "": false, "[::1]": false, "a.example:80": false,
		"-a.example": false, "a_b.example": false, "a..b": false, strings.Repeat("a", 64): false,
	} {
		if validHost(h) != ok {
			t.Errorf("validHost(%q) = %v, want %v", h, !ok, ok)
		}
	}
}
