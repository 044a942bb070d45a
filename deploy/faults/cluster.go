// Package faults runs fault experiments against the docker compose cluster
// of deploy/docker-compose.yml: it starts the cluster fresh, runs the
// faultcheck workload through the Go SDK, injects one fault with the
// docker CLI (kill, pause, network disconnect, restart, wiped volume),
// heals it, and checks that every acknowledged message is present exactly
// once, in order, on every replica, that the metadata and the roster are
// identical, and that the cluster serves again; the figures go into a
// Report. The reconfiguration experiments (reconfig.go) change the
// roster instead, with the joiners of the compose profile "reconfig".
//
// It drives the docker and docker-compose commands rather than the Docker
// API, so what it does can be repeated by hand from the report's log.
// The host reaches the containers at their compose-network addresses
// (a Linux Docker host routes to its bridge networks); the roster the
// nodes hand to clients names the same addresses.
package faults

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"iggynode/client"
	"iggynode/wire"
)

// Node is one service of the compose file.
type Node struct {
	Service string // compose service name, also the roster name
	IP      string // address on the compose network
	ID      uint8  // replica id
}

// Addr is the node's client TCP address.
func (n Node) Addr() string { return n.IP + ":8090" }

// Spec is the node as a cluster change names it: every container
// listens on the same ports inside its own address.
func (n Node) Spec() wire.NodeSpec {
	return wire.NodeSpec{ID: n.ID, ReplicaAddress: n.IP + ":9090", Name: n.Service, IP: n.IP,
		TCPPort: 8090, QUICPort: 8080, WebSocketPort: 8092}
}

// Joiners are the services of the compose profile "reconfig": nodes that
// boot with --join outside the roster and wait for a cluster change to
// name them. node1b is replica 1 on a new host.
var Joiners = map[string]Node{
	"node3":  {Service: "node3", IP: "172.28.0.13", ID: 3},
	"node4":  {Service: "node4", IP: "172.28.0.14", ID: 4},
	"node1b": {Service: "node1b", IP: "172.28.0.21", ID: 1},
}

// DrainInterval is cluster.removed_drain_interval in the experiments: a
// removed node exits this long after its removal (up to four times
// that while its partition replicas are still members), instead of the
// 60 s default, so its exit is seen within an experiment's budget.
const DrainInterval = 5 * time.Second

// Cluster is one compose project of the 3-node cluster.
type Cluster struct {
	Project     string // compose project name (-p)
	ComposeFile string
	Network     string // the compose network's full name
	// Nodes are the members of the cluster's roster, as the experiment
	// knows it: the three of the first start, then whatever a cluster
	// change made of them (the checks at the end read these).
	Nodes []Node
	// Env is added to docker-compose's environment: the compose file's
	// variables (IGGY_CLUSTER_REMOVED_DRAIN_INTERVAL).
	Env      []string
	Username string
	Password string
	// Logf receives every docker command and every step, for the report.
	Logf func(format string, args ...any)

	// ids caches container ids by service: docker-compose ps takes
	// seconds, which would sit between an experiment's fault mark and the
	// fault.
	ids map[string]string
}

// NewCluster describes the cluster of deploy/docker-compose.yml under
// project; repoRoot locates the compose file.
func NewCluster(repoRoot, project string, logf func(string, ...any)) *Cluster {
	return &Cluster{
		Project:     project,
		ComposeFile: filepath.Join(repoRoot, "deploy", "docker-compose.yml"),
		Network:     project + "_cluster",
		Nodes: []Node{
			{Service: "node0", IP: "172.28.0.10", ID: 0},
			{Service: "node1", IP: "172.28.0.11", ID: 1},
			{Service: "node2", IP: "172.28.0.12", ID: 2},
		},
		Env:      []string{"IGGY_CLUSTER_REMOVED_DRAIN_INTERVAL=" + fmt.Sprintf("%d s", DrainInterval/time.Second)},
		Username: "iggy",
		Password: "iggy",
		Logf:     logf,
	}
}

func (c *Cluster) run(ctx context.Context, name string, args ...string) (string, error) {
	c.Logf("$ %s %s", name, strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), c.Env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}

// compose runs docker-compose on the project with the "reconfig" profile
// on, so that logs, ps and down cover the joiners too; Up names the
// services of the first start.
func (c *Cluster) compose(ctx context.Context, args ...string) (string, error) {
	return c.run(ctx, "docker-compose", append([]string{"-p", c.Project, "-f", c.ComposeFile, "--profile", "reconfig"}, args...)...)
}

func (c *Cluster) docker(ctx context.Context, args ...string) (string, error) {
	return c.run(ctx, "docker", args...)
}

// Container returns the container id of node i.
func (c *Cluster) Container(ctx context.Context, i int) (string, error) {
	return c.ContainerOf(ctx, c.Nodes[i].Service)
}

// ContainerOf returns the container id of service svc.
func (c *Cluster) ContainerOf(ctx context.Context, svc string) (string, error) {
	if id, ok := c.ids[svc]; ok {
		return id, nil
	}
	out, err := c.compose(ctx, "ps", "-q", svc)
	if err != nil {
		return "", err
	}
	id := strings.TrimSpace(out)
	if id == "" {
		return "", fmt.Errorf("no container for %s", svc)
	}
	if c.ids == nil {
		c.ids = map[string]string{}
	}
	c.ids[svc] = id
	return id, nil
}

// Options are the SDK options for a client that dials node i; it follows
// the leader unless pinned.
func (c *Cluster) Options(i int) client.Options {
	o := client.DefaultOptions(client.TransportTCP)
	o.Address = c.Nodes[i].Addr()
	o.Username, o.Password = c.Username, c.Password
	o.RequestTimeout = 3 * time.Second
	o.Reconnect = client.ReconnectOptions{Retries: -1, Interval: 200 * time.Millisecond}
	return o
}

// Up starts the cluster from empty volumes and returns the leader once
// every node names it.
func (c *Cluster) Up(ctx context.Context) (int, error) {
	_ = c.Down(ctx)
	up := []string{"up", "-d"}
	for _, n := range c.Nodes {
		up = append(up, n.Service)
	}
	if _, err := c.compose(ctx, up...); err != nil {
		return -1, err
	}
	for i := range c.Nodes {
		if _, err := c.Container(ctx, i); err != nil {
			return -1, err
		}
	}
	return c.WaitLeader(ctx, 60*time.Second, nil)
}

// Down removes the containers (the joiners' too), the network and the
// volumes.
func (c *Cluster) Down(ctx context.Context) error {
	c.ids = nil
	_, err := c.compose(ctx, "down", "-v", "--remove-orphans", "-t", "5")
	return err
}

// Logs returns every node's log, oldest line first per node.
func (c *Cluster) Logs(ctx context.Context) string {
	out, _ := c.compose(ctx, "logs", "--no-color")
	return out
}

// Leader asks node i (pinned) for the roster and returns the leader's
// index, or -1 when that node names none.
func (c *Cluster) Leader(ctx context.Context, i int) (int, error) {
	o := c.Options(i)
	o.StayOnNode = true
	o.Reconnect.Retries = 0
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	cl, err := client.Connect(ctx, o)
	if err != nil {
		return -1, err
	}
	defer cl.Close()
	m, err := cl.GetClusterMetadata(ctx)
	if err != nil {
		return -1, err
	}
	for _, n := range m.Nodes {
		if n.Role == wire.RoleLeader {
			for j, node := range c.Nodes {
				if node.Service == n.Name {
					return j, nil
				}
			}
		}
	}
	return -1, nil
}

// WaitLeader waits until every node not in skip answers and names the same
// leader, and returns it.
func (c *Cluster) WaitLeader(ctx context.Context, within time.Duration, skip map[int]bool) (int, error) {
	deadline := time.Now().Add(within)
	var last string
	for {
		leader, agreed := -1, true
		for i := range c.Nodes {
			if skip[i] {
				continue
			}
			l, err := c.Leader(ctx, i)
			if err != nil || l < 0 || (leader >= 0 && l != leader) {
				agreed = false
				last = fmt.Sprintf("%s: leader %d, err %v", c.Nodes[i].Service, l, err)
				break
			}
			leader = l
		}
		if agreed && leader >= 0 {
			return leader, nil
		}
		if time.Now().After(deadline) {
			return -1, fmt.Errorf("no agreed leader after %v (%s)", within, last)
		}
		select {
		case <-ctx.Done():
			return -1, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// onContainer runs docker with args and node i's container id last.
func (c *Cluster) onContainer(ctx context.Context, i int, args ...string) error {
	id, err := c.Container(ctx, i)
	if err == nil {
		_, err = c.docker(ctx, append(args, id)...)
	}
	return err
}

// Kill sends SIGKILL to node i's container.
func (c *Cluster) Kill(ctx context.Context, i int) error { return c.onContainer(ctx, i, "kill") }

// Start starts node i's (stopped) container again, on its volume.
func (c *Cluster) Start(ctx context.Context, i int) error {
	_, err := c.compose(ctx, "start", c.Nodes[i].Service)
	return err
}

// Pause freezes every process of node i (cgroup freezer).
func (c *Cluster) Pause(ctx context.Context, i int) error { return c.onContainer(ctx, i, "pause") }

// Unpause thaws node i.
func (c *Cluster) Unpause(ctx context.Context, i int) error { return c.onContainer(ctx, i, "unpause") }

// Disconnect cuts node i from the compose network: from its peers and from
// clients alike.
func (c *Cluster) Disconnect(ctx context.Context, i int) error {
	return c.onContainer(ctx, i, "network", "disconnect", c.Network)
}

// Connect puts node i back on the network at its own address.
func (c *Cluster) Connect(ctx context.Context, i int) error {
	return c.onContainer(ctx, i, "network", "connect", "--ip", c.Nodes[i].IP, c.Network)
}

// RestartAll stops every node (SIGTERM, then SIGKILL after 5 s) and
// starts them again on their volumes.
func (c *Cluster) RestartAll(ctx context.Context) error {
	_, err := c.compose(ctx, "restart", "-t", "5")
	return err
}

// Wipe stops node i, deletes its container and volume, and starts it
// again empty.
func (c *Cluster) Wipe(ctx context.Context, i int) error {
	svc := c.Nodes[i].Service
	if err := c.Destroy(ctx, svc); err != nil {
		return err
	}
	return c.StartService(ctx, svc)
}

// Destroy kills service svc's container (SIGKILL: a host that dies) and
// deletes it and its volume.
func (c *Cluster) Destroy(ctx context.Context, svc string) error {
	if id, err := c.ContainerOf(ctx, svc); err == nil {
		_, _ = c.docker(ctx, "kill", id) // rm -f kills too; this is the moment of death
	}
	delete(c.ids, svc)
	if _, err := c.compose(ctx, "rm", "-f", "-s", "-v", svc); err != nil {
		return err
	}
	// rm -v removes anonymous volumes only; the named one goes by name.
	_, err := c.docker(ctx, "volume", "rm", c.Project+"_"+svc+"-data")
	return err
}

// StartService creates and starts service svc's container (a joiner of
// the "reconfig" profile, or a node whose container was removed).
func (c *Cluster) StartService(ctx context.Context, svc string) error {
	delete(c.ids, svc)
	_, err := c.compose(ctx, "up", "-d", "--no-deps", svc)
	return err
}

// State is service svc's container state as docker inspect tells it:
// "running", "exited", ... and the exit code.
func (c *Cluster) State(ctx context.Context, svc string) (string, int, error) {
	id, err := c.ContainerOf(ctx, svc)
	if err != nil {
		return "", 0, err
	}
	out, err := c.docker(ctx, "inspect", "-f", "{{.State.Status}} {{.State.ExitCode}}", id)
	if err != nil {
		return "", 0, err
	}
	var status string
	var code int
	if _, err := fmt.Sscan(out, &status, &code); err != nil {
		return "", 0, fmt.Errorf("docker inspect %s: %q: %w", svc, out, err)
	}
	return status, code, nil
}
