// Package faults runs fault experiments against the docker compose cluster
// of deploy/docker-compose.yml: it starts the cluster fresh, runs the
// faultcheck workload through the Go SDK, injects one fault with the
// docker CLI (kill, pause, network disconnect, restart, wiped volume),
// heals it, and checks that every acknowledged message is present exactly
// once, in order, on every replica, that the metadata is identical, and
// that the cluster serves again; the figures go into a Report.
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
}

// Addr is the node's client TCP address.
func (n Node) Addr() string { return n.IP + ":8090" }

// Cluster is one compose project of the 3-node cluster.
type Cluster struct {
	Project     string // compose project name (-p)
	ComposeFile string
	Network     string // the compose network's full name
	Nodes       []Node
	Username    string
	Password    string
	// Logf receives every docker command and every step, for the report.
	Logf func(format string, args ...any)

	// ids caches container ids: docker-compose ps takes seconds, which
	// would sit between an experiment's fault mark and the fault.
	ids map[int]string
}

// NewCluster describes the cluster of deploy/docker-compose.yml under
// project; repoRoot locates the compose file.
func NewCluster(repoRoot, project string, logf func(string, ...any)) *Cluster {
	return &Cluster{
		Project:     project,
		ComposeFile: filepath.Join(repoRoot, "deploy", "docker-compose.yml"),
		Network:     project + "_cluster",
		Nodes: []Node{
			{Service: "node0", IP: "172.28.0.10"},
			{Service: "node1", IP: "172.28.0.11"},
			{Service: "node2", IP: "172.28.0.12"},
		},
		Username: "iggy",
		Password: "iggy",
		Logf:     logf,
	}
}

func (c *Cluster) run(ctx context.Context, name string, args ...string) (string, error) {
	c.Logf("$ %s %s", name, strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, name, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}

func (c *Cluster) compose(ctx context.Context, args ...string) (string, error) {
	return c.run(ctx, "docker-compose", append([]string{"-p", c.Project, "-f", c.ComposeFile}, args...)...)
}

func (c *Cluster) docker(ctx context.Context, args ...string) (string, error) {
	return c.run(ctx, "docker", args...)
}

// Container returns the container id of node i.
func (c *Cluster) Container(ctx context.Context, i int) (string, error) {
	if id, ok := c.ids[i]; ok {
		return id, nil
	}
	out, err := c.compose(ctx, "ps", "-q", c.Nodes[i].Service)
	if err != nil {
		return "", err
	}
	id := strings.TrimSpace(out)
	if id == "" {
		return "", fmt.Errorf("no container for %s", c.Nodes[i].Service)
	}
	if c.ids == nil {
		c.ids = map[int]string{}
	}
	c.ids[i] = id
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
	if _, err := c.compose(ctx, "up", "-d"); err != nil {
		return -1, err
	}
	for i := range c.Nodes {
		if _, err := c.Container(ctx, i); err != nil {
			return -1, err
		}
	}
	return c.WaitLeader(ctx, 60*time.Second, nil)
}

// Down removes the containers, the network and the volumes.
func (c *Cluster) Down(ctx context.Context) error {
	c.ids = nil
	_, err := c.compose(ctx, "down", "-v", "-t", "5")
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
	delete(c.ids, i)
	if _, err := c.compose(ctx, "rm", "-f", "-s", "-v", svc); err != nil {
		return err
	}
	// rm -v removes anonymous volumes only; the named one goes by name.
	if _, err := c.docker(ctx, "volume", "rm", c.Project+"_"+svc+"-data"); err != nil {
		return err
	}
	_, err := c.compose(ctx, "up", "-d", "--no-deps", svc)
	return err
}
