//go:build docker

package helmchart

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"iggynode/client"
	"iggynode/internal/faultcheck"
	"iggynode/wire"
)

// The compose network stands for the pod network: containers take their
// addresses from podRange (ci/compose-values.yaml advertises the pods'
// names to it), and the host's connections through the published ports
// arrive from the gateway, outside it, as clients from outside do.
const (
	composeProject = "iggyhelm"
	podSubnet      = "172.29.0.0/16"
	podRange       = "172.29.8.0/24"
	podGateway     = "172.29.0.1"
	composeValues  = "iggynode/ci/compose-values.yaml"
	e2eStream      = "helm-e2e"
	e2eTopic       = "workload"
)

// TestChartOnCompose runs what the chart renders for ci/compose-values.yaml
// on the compose engine: one container per StatefulSet pod, named and
// resolvable as the pod (network aliases of the headless Service's
// names), with the pod's arguments, environment (the Secret's values),
// configuration file, read-only root and volume, and the per-pod NodePort
// Services as published ports on 127.0.0.1. It checks that the cluster
// forms by DNS names alone, that clients inside the network are told the
// pods' names and clients on the host the published ports, that the SDK
// on the host follows the leader through them, and that a rolling
// restart (as kubectl rollout restart: one pod at a time in reverse
// ordinal order, each recreated on its volume at a new IP and waited for
// until GET /ready) loses no acknowledged write.
func TestChartOnCompose(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	m, err := Render(Release{Name: "iggynode", Namespace: "default"}, composeValues)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvironment(t, m)
	image := m.Container().Image
	if out, err := exec.CommandContext(ctx, "../build.sh", image).CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", image, err, out)
	}
	e.writeCompose(t)
	_ = e.compose(ctx, "down", "-v", "-t", "2")
	t.Cleanup(func() {
		if t.Failed() {
			logs, _ := e.output(context.Background(), "docker-compose", e.composeArgs("logs", "--no-color", "--tail", "200")...)
			t.Logf("node logs:\n%s", logs)
		}
		_ = e.run(context.Background(), "docker", "rm", "-f", "-v", composeProject+"-placeholder")
		_ = e.compose(context.Background(), "down", "-v", "-t", "2")
	})
	if err := e.compose(ctx, "up", "-d"); err != nil {
		t.Fatal(err)
	}
	for i := range m.Replicas() {
		e.waitReady(ctx, t, i, 2*time.Minute)
	}
	leader := e.leader(ctx, t)
	t.Logf("cluster formed by DNS names; leader %s", m.PodName(leader))

	e.checkRosterOutside(ctx, t, leader)
	e.checkInsideFollowsByName(ctx, t, leader)
	e.rollingRestart(ctx, t)
}

// environment is one compose rendition of the chart.
type environment struct {
	m    *Manifests
	dir  string
	logf func(string, ...any)
	// external[i] is pod i's NodePort Service.
	external []*corev1.Service
	username string
	password string
}

func newEnvironment(t *testing.T, m *Manifests) *environment {
	t.Helper()
	e := &environment{m: m, dir: t.TempDir(), logf: t.Logf}
	for i := range m.Replicas() {
		s := m.Service(m.PodName(i) + "-external")
		if s == nil || s.Spec.Type != corev1.ServiceTypeNodePort {
			t.Fatalf("pod %d has no NodePort Service", i)
		}
		e.external = append(e.external, s)
	}
	cfg, _, err := m.NodeConfig(0, dockerfile, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var insideRange bool
	for _, n := range cfg.Cluster.Nodes {
		if _, err := netip.ParseAddr(n.IP); err == nil {
			t.Fatalf("roster node %s names an IP (%s): the cluster must form by names", n.Name, n.IP)
		}
		for _, s := range n.AdvertisedAddresses {
			insideRange = insideRange || s.ClientCIDR == podRange && s.Address == n.IP
		}
	}
	if !insideRange {
		t.Fatalf("the values advertise the pods' names to no client network %s", podRange)
	}
	env, err := m.PodEnv(0)
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "IGGY_ROOT_USERNAME":
			e.username = v
		case "IGGY_ROOT_PASSWORD":
			e.password = v
		}
	}
	return e
}

// nodePort is pod i's published port for the container port named name.
func (e *environment) nodePort(i int, name string) int {
	for _, p := range e.external[i].Spec.Ports {
		if p.Name == name {
			return int(p.NodePort)
		}
	}
	return 0
}

// hostAddr is pod i's TCP address for a client on the host.
func (e *environment) hostAddr(i int) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(e.nodePort(i, "tcp")))
}

func (e *environment) service(i int) string { return e.m.PodName(i) }

// containerPort is the container's port called name.
func (e *environment) containerPort(name string) int {
	for _, p := range e.m.Container().Ports {
		if p.Name == name {
			return int(p.ContainerPort)
		}
	}
	return 0
}

// writeCompose writes the compose file and the configuration it mounts.
func (e *environment) writeCompose(t *testing.T) {
	t.Helper()
	path, content, err := e.m.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	// Readable by the image's user: a pod's ConfigMap files are 0644.
	if err := os.WriteFile(filepath.Join(e.dir, "config.toml"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	c := e.m.Container()
	grace := e.m.StatefulSet.Spec.Template.Spec.TerminationGracePeriodSeconds
	services := map[string]any{}
	volumes := map[string]any{}
	for i := range e.m.Replicas() {
		args, err := e.m.PodArgs(i)
		if err != nil {
			t.Fatal(err)
		}
		env, err := e.m.PodEnv(i)
		if err != nil {
			t.Fatal(err)
		}
		var ports []string
		for _, p := range e.external[i].Spec.Ports {
			var target int32
			for _, cp := range c.Ports {
				if cp.Name == p.TargetPort.String() {
					target = cp.ContainerPort
				}
			}
			ports = append(ports, fmt.Sprintf("127.0.0.1:%d:%d/%s", p.NodePort, target, strings.ToLower(string(p.Protocol))))
		}
		data := "data-" + strconv.Itoa(i)
		volumes[data] = map[string]any{}
		svc := map[string]any{
			"image":       c.Image,
			"hostname":    e.m.PodName(i),
			"command":     args,
			"environment": env,
			"read_only":   true,
			"tmpfs":       []string{"/logs:mode=1777", "/tmp:mode=1777"},
			"volumes":     []string{data + ":/data", "./config.toml:" + path + ":ro"},
			"ports":       ports,
			"networks":    map[string]any{"pods": map[string]any{"aliases": []string{e.m.PodHost(i, "cluster.local")}}},
		}
		if grace != nil {
			svc["stop_grace_period"] = fmt.Sprintf("%ds", *grace)
		}
		services[e.service(i)] = svc
	}
	file := map[string]any{
		"version":  "2.4",
		"services": services,
		"volumes":  volumes,
		"networks": map[string]any{"pods": map[string]any{"ipam": map[string]any{"config": []any{
			map[string]any{"subnet": podSubnet, "ip_range": podRange, "gateway": podGateway}}}}},
	}
	out, err := yaml.Marshal(file)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(e.dir, "docker-compose.yml"), string(out))
}

func (e *environment) composeArgs(args ...string) []string {
	return append([]string{"-p", composeProject, "-f", filepath.Join(e.dir, "docker-compose.yml")}, args...)
}

func (e *environment) compose(ctx context.Context, args ...string) error {
	return e.run(ctx, "docker-compose", e.composeArgs(args...)...)
}

func (e *environment) run(ctx context.Context, name string, args ...string) error {
	_, err := e.output(ctx, name, args...)
	return err
}

func (e *environment) output(ctx context.Context, name string, args ...string) (string, error) {
	e.logf("$ %s %s", name, strings.Join(args, " "))
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}

// containerIP is pod i's current address on the compose network.
func (e *environment) containerIP(ctx context.Context, t *testing.T, i int) string {
	t.Helper()
	id, err := e.output(ctx, "docker-compose", e.composeArgs("ps", "-q", e.service(i))...)
	if err != nil || strings.TrimSpace(id) == "" {
		t.Fatalf("no container for %s: %v", e.service(i), err)
	}
	ip, err := e.output(ctx, "docker", "inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", strings.TrimSpace(id))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(ip)
}

// ready asks pod i's GET /ready through its published HTTP port.
func (e *environment) ready(ctx context.Context, i int) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/ready", e.nodePort(i, "http")), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// waitReady waits for pod i's readiness probe to pass, as the
// StatefulSet controller does before it moves on, and returns the
// statuses it saw before (503 while catching up, 0 while not listening).
func (e *environment) waitReady(ctx context.Context, t *testing.T, i int, within time.Duration) []int {
	t.Helper()
	var seen []int
	for deadline := time.Now().Add(within); ; {
		code, _ := e.ready(ctx, i)
		if code == http.StatusOK {
			return seen
		}
		if len(seen) == 0 || seen[len(seen)-1] != code {
			seen = append(seen, code)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("pod %d not ready after %v (statuses %v)", i, within, seen)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// options are the SDK's options for a client on the host that dials pod i.
func (e *environment) options(i int) client.Options {
	o := client.DefaultOptions(client.TransportTCP)
	o.Address = e.hostAddr(i)
	o.Username, o.Password = e.username, e.password
	o.RequestTimeout = 5 * time.Second
	o.Reconnect = client.ReconnectOptions{Retries: -1, Interval: 200 * time.Millisecond}
	return o
}

// roster is what a client on the host, pinned to pod i, is told.
func (e *environment) roster(ctx context.Context, i int) (*wire.ClusterMetadata, error) {
	o := e.options(i)
	o.StayOnNode, o.Reconnect.Retries = true, 0
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := client.Connect(ctx, o)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.GetClusterMetadata(ctx)
}

// leader is the pod every pod names as the leader.
func (e *environment) leader(ctx context.Context, t *testing.T) int {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(250 * time.Millisecond) {
		agreed := -1
		for i := range e.m.Replicas() {
			r, err := e.roster(ctx, i)
			l := -1
			if err == nil {
				for j, n := range r.Nodes {
					if n.Role == wire.RoleLeader {
						l = j
					}
				}
			}
			if l < 0 || agreed >= 0 && l != agreed {
				agreed = -2
				break
			}
			agreed = l
		}
		if agreed >= 0 {
			return agreed
		}
		if time.Now().After(deadline) {
			t.Fatal("the pods name no common leader")
		}
	}
}

// A client on the host is told every pod's published address, and the
// SDK pointed at a follower moves to the leader's.
func (e *environment) checkRosterOutside(ctx context.Context, t *testing.T, leader int) {
	t.Helper()
	r, err := e.roster(ctx, (leader+1)%e.m.Replicas())
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range r.Nodes {
		if n.Name != e.m.PodName(i) || n.IP != "127.0.0.1" || int(n.TCPPort) != e.nodePort(i, "tcp") ||
			int(n.HTTPPort) != e.nodePort(i, "http") || int(n.QUICPort) != e.nodePort(i, "quic") {
			t.Errorf("outside, node %d is advertised as %s %s tcp %d http %d quic %d; want 127.0.0.1 with its NodePorts",
				i, n.Name, n.IP, n.TCPPort, n.HTTPPort, n.QUICPort)
		}
	}
	c, err := client.Connect(ctx, e.options((leader+1)%e.m.Replicas()))
	if err != nil {
		t.Fatalf("login through a follower from the host: %v", err)
	}
	defer c.Close()
	if c.Address() != e.hostAddr(leader) {
		t.Fatalf("the SDK on the host is on %s; the leader's published address is %s", c.Address(), e.hostAddr(leader))
	}
	if _, err := c.CreateStream(ctx, e2eStream, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, wire.Named(e2eStream), e2eTopic, 1, nil); err != nil {
		t.Fatal(err)
	}
}

// A client inside the network (the CLI of the image, in a container of
// its own on the compose network) is told the pods' names, and follows
// the leader by name to write.
func (e *environment) checkInsideFollowsByName(ctx context.Context, t *testing.T, leader int) {
	t.Helper()
	follower := (leader + 1) % e.m.Replicas()
	cli := func(args ...string) string {
		t.Helper()
		base := []string{"run", "--rm", "--network", composeProject + "_pods", "--entrypoint", "/iggy", e.m.Container().Image,
			"--address", net.JoinHostPort(e.m.PodHost(follower, "cluster.local"), strconv.Itoa(e.containerPort("tcp"))),
			"--username", e.username, "--password", e.password, "--reconnect-retries", "0"}
		out, err := e.output(ctx, "docker", append(base, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	out := cli("--output", "json", "cluster", "metadata")
	for i := range e.m.Replicas() {
		if !strings.Contains(out, `"`+e.m.PodHost(i, "cluster.local")+`"`) {
			t.Errorf("inside, the roster does not name pod %d by %s:\n%s", i, e.m.PodHost(i, "cluster.local"), out)
		}
	}
	if strings.Contains(out, "127.0.0.1") {
		t.Errorf("inside, the roster names the host's published addresses:\n%s", out)
	}
	cli("stream", "create", "from-the-pod-network")
}

// rollingRestart replaces the pods one at a time, as a StatefulSet's
// rolling update does, under a write load from the host, and checks the
// load's verdict on every replica.
func (e *environment) rollingRestart(ctx context.Context, t *testing.T) {
	t.Helper()
	w := faultcheck.StartWriter(ctx, e.options(0), wire.Named(e2eStream), wire.Named(e2eTopic), 2*time.Millisecond)
	defer w.Stop()
	if err := w.WaitAcked(ctx, 100, time.Minute); err != nil {
		t.Fatal(err)
	}
	grace := "30"
	if g := e.m.StatefulSet.Spec.Template.Spec.TerminationGracePeriodSeconds; g != nil {
		grace = strconv.Itoa(int(*g))
	}
	image := e.m.Container().Image
	var logs strings.Builder
	for i := e.m.Replicas() - 1; i >= 0; i-- {
		old := e.containerIP(ctx, t, i)
		if err := e.compose(ctx, "stop", "-t", grace, e.service(i)); err != nil {
			t.Fatal(err)
		}
		gone, _ := e.output(ctx, "docker-compose", e.composeArgs("logs", "--no-color", e.service(i))...)
		logs.WriteString(gone) // a recreated container's log goes with it
		if err := e.compose(ctx, "rm", "-f", e.service(i)); err != nil {
			t.Fatal(err)
		}
		// A rescheduled pod comes back at another IP: hold the old one.
		if err := e.run(ctx, "docker", "run", "-d", "--name", composeProject+"-placeholder", "--network", composeProject+"_pods",
			"--ip", old, image); err != nil {
			t.Fatal(err)
		}
		if err := e.compose(ctx, "up", "-d", "--no-deps", e.service(i)); err != nil {
			t.Fatal(err)
		}
		if err := e.run(ctx, "docker", "rm", "-f", "-v", composeProject+"-placeholder"); err != nil {
			t.Fatal(err)
		}
		now := e.containerIP(ctx, t, i)
		if now == old {
			t.Fatalf("pod %d came back at its old IP %s", i, old)
		}
		before := e.waitReady(ctx, t, i, 2*time.Minute)
		acked := w.Acked()
		if err := w.WaitAcked(ctx, acked+20, time.Minute); err != nil {
			t.Fatalf("after pod %d came back: %v", i, err)
		}
		t.Logf("pod %d recreated at %s (was %s), ready after statuses %v; %d sends acknowledged", i, now, old, before, w.Acked())
	}
	if err := w.WaitAcked(ctx, w.Acked()+50, time.Minute); err != nil {
		t.Fatal(err)
	}
	w.Stop()
	h := w.History()

	var names []string
	var copies [][][]byte
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(500 * time.Millisecond) {
		names, copies = nil, nil
		complete := true
		for i := range e.m.Replicas() {
			got, err := faultcheck.ReadPartition(ctx, e.options(i), wire.Named(e2eStream), wire.Named(e2eTopic))
			complete = complete && err == nil && len(got) >= len(h.Order)*faultcheck.MessagesPerSend
			names, copies = append(names, e.m.PodName(i)), append(copies, got)
		}
		for _, c := range copies {
			complete = complete && len(c) == len(copies[0])
		}
		if complete || time.Now().After(deadline) {
			break
		}
	}
	v := faultcheck.Check(h, names, copies)
	if !v.OK() || v.Lost > 0 || v.AckedSends == 0 {
		t.Fatalf("after the rolling restart: %+v", v)
	}
	t.Logf("rolling restart: %d sends acknowledged (%d failed and retried), none lost, none doubled, on all %d replicas",
		v.AckedSends, v.FailedSends, len(copies))

	last, err := e.output(ctx, "docker-compose", e.composeArgs("logs", "--no-color")...)
	if err != nil {
		t.Fatal(err)
	}
	logs.WriteString(last)
	if n := strings.Count(logs.String(), "replica peer moved"); n == 0 {
		t.Error("no node logged a peer found at a new address: the names were not resolved again")
	} else {
		t.Logf("%d reconnects found a peer at its new address", n)
	}
}
