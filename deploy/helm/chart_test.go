package helmchart

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"iggynode/config"
	"iggynode/telemetry"
	"iggynode/vsr"
	"iggynode/wire"
)

const dockerfile = "../Dockerfile"

// valuesFiles are the chart's test values (iggynode/ci), each a way an
// operator installs it.
func valuesFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(ChartDir, "ci", "*-values.yaml"))
	if err != nil || len(files) < 7 {
		t.Fatalf("values files %v (%v), want the seven of iggynode/ci", files, err)
	}
	return files
}

// operatorSecret stands in for an existingSecret the operator created
// before installing (the chart renders none then).
func operatorSecret(name string) corev1.Secret {
	return corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string][]byte{
		"cluster-shared-secret": []byte("an-operator-made-secret-of-at-least-32-bytes"),
		"root-username":         []byte("operator"), "root-password": []byte("operator-password"),
		"metrics-token": []byte("operator-metrics-token"),
	}}
}

// render renders one values file as release "iggynode" in "default",
// adding the operator's Secret when the values name an existing one.
func render(t *testing.T, values string) *Manifests {
	t.Helper()
	m, err := Render(Release{Name: "iggynode", Namespace: "default"}, values)
	if err != nil {
		t.Fatalf("render %s: %v", values, err)
	}
	for _, e := range m.Container().Env {
		if ref := e.ValueFrom; ref != nil && ref.SecretKeyRef != nil {
			if _, err := m.secretValue(ref.SecretKeyRef.Name, ref.SecretKeyRef.Key); err != nil && len(m.Secrets) == 0 {
				m.Secrets = append(m.Secrets, operatorSecret(ref.SecretKeyRef.Name))
			}
		}
	}
	return m
}

// Every values file renders, every manifest decodes strictly into its
// k8s.io/api type (Render fails otherwise), and the invariants below hold.
func TestChartRendersAWorkingCluster(t *testing.T) {
	for _, values := range valuesFiles(t) {
		t.Run(strings.TrimSuffix(filepath.Base(values), "-values.yaml"), func(t *testing.T) {
			m := render(t, values)
			cfgs := nodeConfigs(t, m)
			checkRoster(t, m, cfgs)
			checkSecretsStayOutOfConfigMaps(t, m)
			checkDisruptionBudget(t, m)
			checkProbes(t, m, cfgs[0])
			checkPodSecurity(t, m)
			checkServices(t, m)
			checkAdvertisedAddresses(t, m, cfgs[0])
			checkTLSFiles(t, m, cfgs[0])
			checkMetricsScraping(t, m, cfgs[0])
		})
	}
}

// nodeConfigs loads, through package config, the configuration of every
// pod as it would start: the rendered file, the image's and the pod's
// environment. It must load without a warning (the chart turns
// system.strict_config on) and pass the node's validation.
func nodeConfigs(t *testing.T, m *Manifests) []config.Config {
	t.Helper()
	dir := t.TempDir()
	var cfgs []config.Config
	for i := range m.Replicas() {
		cfg, warns, err := m.NodeConfig(i, dockerfile, dir)
		if err != nil || len(warns) > 0 {
			t.Fatalf("pod %d's configuration: %v, warnings %v", i, err, warns)
		}
		cfgs = append(cfgs, cfg)
	}
	return cfgs
}

// The roster and the StatefulSet agree: one node per pod, each named as
// its pod with its replica id its ordinal, at its pod's name on the
// headless Service (which publishes not-ready pods: peers must find a
// pod before it is ready), with the container's ports; the node listens
// where the container says.
func checkRoster(t *testing.T, m *Manifests, cfgs []config.Config) {
	t.Helper()
	ports := map[string]int32{}
	for _, p := range m.Container().Ports {
		ports[p.Name] = p.ContainerPort
	}
	headless := m.Service(m.StatefulSet.Spec.ServiceName)
	if headless == nil || headless.Spec.ClusterIP != corev1.ClusterIPNone || !headless.Spec.PublishNotReadyAddresses {
		t.Fatalf("the StatefulSet's serviceName %q is not a headless Service publishing not-ready pods",
			m.StatefulSet.Spec.ServiceName)
	}
	if m.StatefulSet.Spec.PodManagementPolicy != "Parallel" {
		t.Errorf("podManagementPolicy %q: OrderedReady would wait for pod 0 to be ready, which needs a quorum of pods",
			m.StatefulSet.Spec.PodManagementPolicy)
	}
	for i, cfg := range cfgs {
		c := cfg.Cluster
		if !c.Enabled || len(c.Nodes) != m.Replicas() || c.ReplicaID != i {
			t.Fatalf("pod %d: cluster enabled %v, %d roster nodes for %d replicas, replica id %d", i, c.Enabled, len(c.Nodes), m.Replicas(), c.ReplicaID)
		}
		if !c.Auth.Enabled || len(c.Auth.SharedSecret) < config.MinSharedSecretLen {
			t.Errorf("pod %d: replica plane auth %v with a %d-byte secret", i, c.Auth.Enabled, len(c.Auth.SharedSecret))
		}
		for j, n := range c.Nodes {
			if n.ReplicaID != j || n.Name != m.PodName(j) || n.IP != m.PodHost(j, "cluster.local") {
				t.Errorf("roster node %d: %s/%d at %s, want %s at %s", j, n.Name, n.ReplicaID, n.IP, m.PodName(j), m.PodHost(j, "cluster.local"))
			}
			if int32(n.Ports.TCP) != ports["tcp"] || int32(n.Ports.TCPReplica) != ports["replica"] || int32(n.Ports.HTTP) != ports["http"] ||
				int32(n.Ports.QUIC) != ports["quic"] || int32(n.Ports.WebSocket) != ports["websocket"] {
				t.Errorf("roster node %d ports %+v, container ports %v", j, n.Ports, ports)
			}
		}
		for _, l := range []struct {
			name, addr string
			on         bool
		}{
			{"tcp", cfg.TCP.Address, cfg.TCP.Enabled}, {"quic", cfg.QUIC.Address, cfg.QUIC.Enabled},
			{"websocket", cfg.WebSocket.Address, cfg.WebSocket.Enabled}, {"http", cfg.HTTP.Address, cfg.HTTP.Enabled},
		} {
			if _, port, _ := net.SplitHostPort(l.addr); l.on && port != strconv.Itoa(int(ports[l.name])) {
				t.Errorf("%s listens on %s, the container port is %d", l.name, l.addr, ports[l.name])
			}
		}
		var dataMounted bool
		for _, vm := range m.Container().VolumeMounts {
			dataMounted = dataMounted || vm.MountPath == cfg.System.Path && vm.Name == m.StatefulSet.Spec.VolumeClaimTemplates[0].Name
		}
		if !dataMounted {
			t.Errorf("system.path %s is not the volume claim's mount", cfg.System.Path)
		}
	}
}

// Secrets reach the pods from Secrets only: no ConfigMap holds a secret
// value, the file alone carries no secret, and no container variable
// that names one has a literal value.
func checkSecretsStayOutOfConfigMaps(t *testing.T, m *Manifests) {
	t.Helper()
	var secrets []string
	for _, s := range m.Secrets {
		for key, v := range s.Data {
			if key == "root-username" {
				continue // kept with the password, not a secret itself
			}
			if len(v) < 8 {
				t.Errorf("secret %s key %s is %d bytes", s.Name, key, len(v))
			}
			secrets = append(secrets, string(v))
		}
	}
	for _, cm := range m.ConfigMaps {
		for key, data := range cm.Data {
			for _, s := range secrets {
				if strings.Contains(data, s) {
					t.Errorf("ConfigMap %s key %s holds a secret value", cm.Name, key)
				}
			}
		}
	}
	path, content, err := m.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), filepath.Base(path))
	writeFile(t, file, content)
	var cfg config.Config
	if _, err := toml.DecodeFile(file, &cfg); err != nil {
		t.Fatal(err)
	}
	if s := cfg.WithoutSecrets(); !reflect.DeepEqual(s, cfg) {
		t.Error("the configuration file carries a secret (WithoutSecrets changes it)")
	}
	for _, e := range m.Container().Env {
		upper := strings.ToUpper(e.Name)
		if (strings.Contains(upper, "SECRET") || strings.Contains(upper, "PASSWORD") || strings.Contains(upper, "TOKEN") ||
			strings.Contains(upper, "USERNAME")) && (e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil) {
			t.Errorf("env %s is not taken from a Secret", e.Name)
		}
	}
}

// The budget keeps the view-change quorum of replica-plane.md 4.5 up (so
// the survivors elect and commit), selects exactly the pods, and still
// lets a node drain when there is a replica to spare; one replica has
// none.
func checkDisruptionBudget(t *testing.T, m *Manifests) {
	t.Helper()
	n := m.Replicas()
	if n == 1 {
		if m.PDB != nil {
			t.Error("a budget for one replica blocks every drain")
		}
		return
	}
	if m.PDB == nil || m.PDB.Spec.MinAvailable == nil || m.PDB.Spec.MaxUnavailable != nil {
		t.Fatalf("budget %+v, want minAvailable", m.PDB)
	}
	if got, want := m.PDB.Spec.MinAvailable.IntValue(), vsr.QuorumViewChange(n); got != want || got < vsr.QuorumReplication(n) {
		t.Errorf("minAvailable %d for %d replicas, want the view-change quorum %d", got, n, want)
	}
	if n >= 3 && m.PDB.Spec.MinAvailable.IntValue() >= n {
		t.Errorf("minAvailable %d of %d: no pod could ever be drained", m.PDB.Spec.MinAvailable.IntValue(), n)
	}
	sel, err := metav1.LabelSelectorAsSelector(m.PDB.Spec.Selector)
	if err != nil || !sel.Matches(labels.Set(m.StatefulSet.Spec.Template.Labels)) {
		t.Errorf("the budget's selector %v does not select the pods (%v)", m.PDB.Spec.Selector, err)
	}
}

// Liveness and startup probe /ping, readiness /ready, on the container's
// http port, where the node's HTTP listener is enabled. /ping is checked
// against the node's real handler built from the pod's configuration
// (which also refuses an open /metrics beyond loopback); /ready is
// cmd/node's route in front of it, exercised by the end-to-end test.
func checkProbes(t *testing.T, m *Manifests, cfg config.Config) {
	t.Helper()
	c := m.Container()
	want := map[string]*corev1.Probe{"/ping": c.LivenessProbe, "/ready": c.ReadinessProbe}
	if c.StartupProbe == nil || c.StartupProbe.HTTPGet == nil || c.StartupProbe.HTTPGet.Path != "/ping" {
		t.Errorf("startup probe %+v, want /ping", c.StartupProbe)
	}
	_, httpPort, _ := net.SplitHostPort(cfg.HTTP.Address)
	for path, p := range want {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != path {
			t.Fatalf("a probe is not GET %s", path)
		}
		port := p.HTTPGet.Port.String()
		for _, cp := range c.Ports {
			if cp.Name == port {
				port = strconv.Itoa(int(cp.ContainerPort))
			}
		}
		if !cfg.HTTP.Enabled || port != httpPort {
			t.Errorf("probe %s on port %s; the HTTP listener is enabled %v at %s", path, port, cfg.HTTP.Enabled, cfg.HTTP.Address)
		}
	}
	if c.ReadinessProbe.FailureThreshold*c.ReadinessProbe.PeriodSeconds > 30 {
		t.Errorf("readiness takes %d s to notice: a rolling update would pause that long per pod",
			c.ReadinessProbe.FailureThreshold*c.ReadinessProbe.PeriodSeconds)
	}
	if cfg.Telemetry.Enabled || cfg.Telemetry.Metrics.Exporter != config.ExporterPrometheus {
		return // exporters that dial out: their handler is not built here
	}
	tel, err := telemetry.Setup(context.Background(), cfg, cfg.Cluster.ReplicaID, wire.ServerVersion)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tel.Shutdown(context.Background()) }()
	h, err := tel.HTTPHandler(cfg.HTTP)
	if err != nil {
		t.Fatalf("the node would refuse its HTTP listener: %v", err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/ping", nil))
	if rec.Code != http.StatusOK {
		t.Errorf("GET /ping: %d", rec.Code)
	}
}

// The pod runs as the image's unprivileged user, read-only, spread
// across nodes, with resource requests.
func checkPodSecurity(t *testing.T, m *Manifests) {
	t.Helper()
	pod := m.StatefulSet.Spec.Template.Spec
	sc := pod.SecurityContext
	if sc == nil || sc.RunAsUser == nil || *sc.RunAsUser != 10001 || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot ||
		sc.FSGroup == nil || *sc.FSGroup != 10001 {
		t.Errorf("pod security context %+v, want uid and fsGroup 10001, non-root", sc)
	}
	c := m.Container()
	if csc := c.SecurityContext; csc == nil || csc.ReadOnlyRootFilesystem == nil || !*csc.ReadOnlyRootFilesystem ||
		csc.AllowPrivilegeEscalation == nil || *csc.AllowPrivilegeEscalation {
		t.Errorf("container security context %+v", c.SecurityContext)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
		t.Errorf("resource requests %v", c.Resources.Requests)
	}
	if m.Replicas() > 1 {
		a := pod.Affinity
		if a == nil || a.PodAntiAffinity == nil ||
			len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution)+len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) == 0 {
			t.Errorf("no anti-affinity across nodes: %+v", a)
		}
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("the pod mounts a service account token it never uses")
	}
}

// Services select the pods by the template's labels; the client Service
// takes ready pods only; each external Service selects one pod.
func checkServices(t *testing.T, m *Manifests) {
	t.Helper()
	podLabels := labels.Set(m.StatefulSet.Spec.Template.Labels)
	client := m.Service(m.StatefulSet.Name)
	if client == nil || client.Spec.PublishNotReadyAddresses {
		t.Fatalf("client Service %+v: it must exist and take ready pods only", client)
	}
	ports := map[string]corev1.ContainerPort{}
	for _, p := range m.Container().Ports {
		ports[p.Name] = p
	}
	nodePorts := map[string]string{} // protocol/port: the Service using it
	for _, s := range m.Services {
		for _, p := range s.Spec.Ports {
			if p.NodePort == 0 {
				continue
			}
			key := fmt.Sprintf("%s/%d", p.Protocol, p.NodePort)
			if prev, taken := nodePorts[key]; taken {
				t.Errorf("node port %s of Service %s is also %s's", key, s.Name, prev)
			}
			nodePorts[key] = s.Name
		}
	}
	for _, s := range m.Services {
		sel := labels.SelectorFromSet(s.Spec.Selector)
		if !sel.Matches(podLabels) && s.Spec.Selector["statefulset.kubernetes.io/pod-name"] == "" {
			t.Errorf("Service %s selects %v, not the pods", s.Name, s.Spec.Selector)
		}
		for _, p := range s.Spec.Ports {
			cp, ok := ports[p.TargetPort.String()]
			if !ok || cp.Protocol != p.Protocol {
				t.Errorf("Service %s port %s targets %s/%s, which the container does not expose", s.Name, p.Name, p.TargetPort.String(), p.Protocol)
			}
		}
	}
}

// With external addresses, a client in the pod network is told the pods'
// names and ports, and a client outside is told each pod's external
// Service: its host and, for NodePort, its node ports.
func checkAdvertisedAddresses(t *testing.T, m *Manifests, cfg config.Config) {
	t.Helper()
	var external []*corev1.Service
	for i := range m.Replicas() {
		if s := m.Service(m.PodName(i) + "-external"); s != nil {
			external = append(external, s)
		}
	}
	outside := netip.MustParseAddr("198.51.100.77")
	if len(external) == 0 {
		for i, n := range cfg.Cluster.Nodes {
			if a := n.AdvertisedTo(outside); a.Host != m.PodHost(i, "cluster.local") {
				t.Errorf("without external Services node %d is advertised as %s", i, a.Host)
			}
		}
		return
	}
	if len(external) != m.Replicas() {
		t.Fatalf("%d external Services for %d pods", len(external), m.Replicas())
	}
	inside := internalClient(t, cfg.Cluster.Nodes[0])
	for i, n := range cfg.Cluster.Nodes {
		s := external[i]
		if s.Spec.Selector["statefulset.kubernetes.io/pod-name"] != m.PodName(i) {
			t.Errorf("external Service %s selects %v", s.Name, s.Spec.Selector)
		}
		in := n.AdvertisedTo(inside)
		if in.Host != m.PodHost(i, "cluster.local") || in.Ports.TCP != n.Ports.TCP {
			t.Errorf("node %d to a client at %v inside: %+v", i, inside, in)
		}
		out := n.AdvertisedTo(outside)
		for _, p := range s.Spec.Ports {
			want := p.Port
			if s.Spec.Type == corev1.ServiceTypeNodePort {
				want = p.NodePort
			}
			got := map[string]uint16{"tcp": out.Ports.TCP, "quic": out.Ports.QUIC, "websocket": out.Ports.WebSocket, "http": out.Ports.HTTP}[p.Name]
			if int32(got) != want || want == 0 {
				t.Errorf("node %d advertises %s port %d outside; its Service %s serves it on %d", i, p.Name, got, s.Name, want)
			}
		}
		if out.Host == "" || out.Host == n.IP {
			t.Errorf("node %d is advertised outside as %q", i, out.Host)
		}
		if s.Spec.Type == corev1.ServiceTypeLoadBalancer && s.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal {
			t.Errorf("Service %s: policy %s loses the client address that picks its advertised addresses", s.Name, s.Spec.ExternalTrafficPolicy)
		}
	}
}

// internalClient is an address inside the first internal network node n
// advertises its pod name to.
func internalClient(t *testing.T, n config.Node) netip.Addr {
	t.Helper()
	for _, s := range n.AdvertisedAddresses {
		if s.Address == n.IP {
			p := netip.MustParsePrefix(s.ClientCIDR)
			return p.Addr().Next()
		}
	}
	t.Fatalf("node %s advertises its pod name to no network", n.Name)
	return netip.Addr{}
}

// Every certificate file the configuration names is a standard key
// (tls.crt, tls.key, ca.crt) of a Secret volume mounted at its folder.
func checkTLSFiles(t *testing.T, m *Manifests, cfg config.Config) {
	t.Helper()
	var files []string
	if cfg.TCP.TLS.Enabled {
		files = append(files, cfg.TCP.TLS.CertFile, cfg.TCP.TLS.KeyFile)
	}
	if cfg.WebSocket.TLS.Enabled {
		files = append(files, cfg.WebSocket.TLS.CertFile, cfg.WebSocket.TLS.KeyFile)
	}
	if cfg.QUIC.Enabled && !cfg.QUIC.Certificate.SelfSigned {
		files = append(files, cfg.QUIC.Certificate.CertFile, cfg.QUIC.Certificate.KeyFile)
	}
	if t := cfg.Cluster.TLS; t.Enabled && !t.SelfSigned {
		files = append(files, t.CertFile, t.KeyFile, t.CAFile)
	}
	secretAt := map[string]string{}
	for _, vm := range m.Container().VolumeMounts {
		for _, v := range m.StatefulSet.Spec.Template.Spec.Volumes {
			if v.Name == vm.Name && v.Secret != nil {
				secretAt[vm.MountPath] = v.Secret.SecretName
			}
		}
	}
	for _, f := range files {
		if base := filepath.Base(f); base != "tls.crt" && base != "tls.key" && base != "ca.crt" {
			t.Errorf("%s is not a key of a kubernetes.io/tls Secret", f)
		}
		if secretAt[filepath.Dir(f)] == "" {
			t.Errorf("%s: no Secret is mounted at %s (mounted: %v)", f, filepath.Dir(f), secretAt)
		}
	}
}

// Scraping: the Prometheus annotations or the ServiceMonitor point at the
// HTTP port's /metrics, which the node serves (prometheus exporter), and
// the ServiceMonitor sends the Secret's metrics token.
func checkMetricsScraping(t *testing.T, m *Manifests, cfg config.Config) {
	t.Helper()
	_, httpPort, _ := net.SplitHostPort(cfg.HTTP.Address)
	ann := m.StatefulSet.Spec.Template.Annotations
	if ann["prometheus.io/scrape"] == "true" {
		if ann["prometheus.io/port"] != httpPort || ann["prometheus.io/path"] != cfg.HTTP.Metrics.Endpoint || !cfg.HTTP.Metrics.Enabled ||
			cfg.Telemetry.Metrics.Exporter != config.ExporterPrometheus {
			t.Errorf("scrape annotations %v; metrics route %s enabled %v, exporter %s", ann, cfg.HTTP.Metrics.Endpoint,
				cfg.HTTP.Metrics.Enabled, cfg.Telemetry.Metrics.Exporter)
		}
	}
	sm := m.ServiceMonitor
	if sm == nil {
		return
	}
	sel, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
	if err != nil {
		t.Fatal(err)
	}
	var selected []corev1.Service
	for _, s := range m.Services {
		if sel.Matches(labels.Set(s.Labels)) {
			selected = append(selected, s)
		}
	}
	if len(selected) != 1 || selected[0].Name != m.StatefulSet.Spec.ServiceName {
		t.Fatalf("the ServiceMonitor selects %d Services, want the headless one", len(selected))
	}
	for _, e := range sm.Spec.Endpoints {
		var port bool
		for _, p := range selected[0].Spec.Ports {
			port = port || p.Name == e.Port && strconv.Itoa(int(p.Port)) == httpPort
		}
		cred := e.Authorization.Credentials
		if _, err := m.secretValue(cred.Name, cred.Key); !port || e.Path != cfg.HTTP.Metrics.Endpoint || e.Authorization.Type != "Bearer" ||
			err != nil || cred.Key != "metrics-token" {
			t.Errorf("ServiceMonitor endpoint %+v (secret: %v)", e, err)
		}
	}
}

// Values that cannot make a working cluster fail at render, saying why.
func TestChartRefusesBrokenValues(t *testing.T) {
	for _, tc := range []struct{ values, refusal string }{
		{"replicas: 0", "1 to 32 replicas"},
		{"replicas: 33", "1 to 32 replicas"},
		{"auth: {sharedSecret: short}", "at least 32 bytes"},
		{"external: {enabled: true}", "no host for pod 0"},
		{"external: {enabled: true, hosts: [a.example]}", "no host for pod 1"},
		{"external: {enabled: true, host: a.example, type: ClusterIP}", "LoadBalancer or NodePort"},
		{"tls: {client: {enabled: true}}", "tls.client.secretName"},
		{"external: {enabled: true, host: a.example, type: NodePort, nodePorts: {tcp: 30090, websocket: 30092}}", "overlaps"},
		{"tls: {replica: {enabled: true}}", "tls.replica.secretName"},
		{"metrics: {exporter: otlp, serviceMonitor: {enabled: true}}", "only metrics.exporter=prometheus serves"},
		{"external: {enabled: true, host: a.example, clientCIDRs: [0.0.0.0/0, '::/0', 1.0.0.0/8, 2.0.0.0/8, 3.0.0.0/8, 4.0.0.0/8, 5.0.0.0/8, 6.0.0.0/8, 7.0.0.0/8, 8.0.0.0/8, 9.0.0.0/8, 11.0.0.0/8]}",
			"more than 16 networks"},
	} {
		file := filepath.Join(t.TempDir(), "values.yaml")
		writeFile(t, file, tc.values)
		_, err := Render(Release{Name: "iggynode", Namespace: "default"}, file)
		if err == nil || !strings.Contains(err.Error(), tc.refusal) {
			t.Errorf("values %s: %v, want a refusal saying %q", tc.values, err, tc.refusal)
		}
	}
}

// A release named otherwise prefixes every name, and the roster follows.
func TestChartNamesFollowTheRelease(t *testing.T) {
	m, err := Render(Release{Name: "prod", Namespace: "streaming"}, "")
	if err != nil {
		t.Fatal(err)
	}
	cfgs := nodeConfigs(t, m)
	if m.StatefulSet.Name != "prod-iggynode" || cfgs[2].Cluster.Nodes[2].IP != "prod-iggynode-2.prod-iggynode-headless.streaming.svc.cluster.local" {
		t.Fatalf("StatefulSet %s, node 2 at %s", m.StatefulSet.Name, cfgs[2].Cluster.Nodes[2].IP)
	}
	checkRoster(t, m, cfgs)
}
