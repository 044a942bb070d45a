// Package helmchart checks the Helm chart in iggynode/ without a
// Kubernetes cluster (none runs on this machine):
//
//   - chart_test.go renders the chart with the Helm library (the chart
//     loader and the template engine, strict about missing values) for
//     every values file in iggynode/ci, decodes every manifest strictly
//     into the k8s.io/api types (an unknown or misplaced field fails), and
//     checks what a working cluster needs: the configuration every pod
//     would load (through package config, with the image's and the pod's
//     environment) agrees with the StatefulSet, secrets stay out of
//     ConfigMaps, the PodDisruptionBudget keeps a quorum, the probes
//     point at routes the node serves, and the advertised addresses
//     match the Services that carry them.
//   - e2e_docker_test.go (build tag docker) runs the configuration the
//     chart renders for ci/compose-values.yaml on the compose engine,
//     containers named and resolvable as the StatefulSet's pods.
//
// It is a module of its own so that the main module does not depend on
// Helm and Kubernetes; it imports the main module's packages through a
// replace directive.
package helmchart

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"iggynode/config"
)

// ChartDir is the chart, relative to this package.
const ChartDir = "iggynode"

// Release names an install.
type Release struct{ Name, Namespace string }

// ServiceMonitor is the part of the Prometheus Operator's resource the
// chart renders (its CRD is not in k8s.io/api); decoding into it strictly
// catches a misspelt or misplaced field of that part.
type ServiceMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Selector  metav1.LabelSelector `json:"selector"`
		Endpoints []struct {
			Port          string `json:"port"`
			Path          string `json:"path"`
			Interval      string `json:"interval"`
			Authorization struct {
				Type        string                   `json:"type"`
				Credentials corev1.SecretKeySelector `json:"credentials"`
			} `json:"authorization"`
		} `json:"endpoints"`
	} `json:"spec"`
}

// Manifests are the objects one render produced, decoded.
type Manifests struct {
	Release         Release
	StatefulSet     *appsv1.StatefulSet
	ConfigMaps      []corev1.ConfigMap
	Secrets         []corev1.Secret
	Services        []corev1.Service
	ServiceAccounts []corev1.ServiceAccount
	PDB             *policyv1.PodDisruptionBudget
	ServiceMonitor  *ServiceMonitor
	// Sources maps each manifest ("Kind/name") to the template it came from.
	Sources map[string]string
	Notes   string
}

// Render renders the chart for the values file (none: the defaults) as
// an install of rel, and decodes every manifest strictly.
func Render(rel Release, valuesFile string) (*Manifests, error) {
	ch, err := loader.Load(ChartDir)
	if err != nil {
		return nil, err
	}
	vals := chartutil.Values{}
	if valuesFile != "" {
		if vals, err = chartutil.ReadValuesFile(valuesFile); err != nil {
			return nil, err
		}
	}
	rv, err := chartutil.ToRenderValues(ch, vals, chartutil.ReleaseOptions{Name: rel.Name, Namespace: rel.Namespace,
		Revision: 1, IsInstall: true}, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, err
	}
	out, err := engine.Engine{Strict: true}.Render(ch, rv)
	if err != nil {
		return nil, err
	}
	m := &Manifests{Release: rel, Sources: map[string]string{}}
	names := make([]string, 0, len(out))
	for name := range out {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		switch {
		case strings.HasSuffix(name, "NOTES.txt"):
			m.Notes = out[name]
		case strings.HasPrefix(filepath.Base(name), "_"):
		default:
			for _, doc := range documentSeparator.Split(out[name], -1) {
				if err := m.decode(name, doc); err != nil {
					return nil, fmt.Errorf("%s: %w", name, err)
				}
			}
		}
	}
	if m.StatefulSet == nil {
		return nil, fmt.Errorf("no StatefulSet rendered")
	}
	return m, nil
}

var documentSeparator = regexp.MustCompile(`(?m)^---\s*$`)

// decode adds one YAML document, decoded strictly by its kind.
func (m *Manifests) decode(source, doc string) error {
	var head metav1.TypeMeta
	if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
		return err
	}
	if head.Kind == "" && strings.TrimSpace(stripComments(doc)) == "" {
		return nil // an empty document (a template that rendered nothing)
	}
	strict := func(into any) error { return yaml.UnmarshalStrict([]byte(doc), into) }
	var name string
	var err error
	switch head.APIVersion + " " + head.Kind {
	case "apps/v1 StatefulSet":
		if m.StatefulSet != nil {
			return fmt.Errorf("a second StatefulSet")
		}
		m.StatefulSet = &appsv1.StatefulSet{}
		err, name = strict(m.StatefulSet), m.StatefulSet.Name
	case "v1 ConfigMap":
		var o corev1.ConfigMap
		err, name = strict(&o), o.Name
		m.ConfigMaps = append(m.ConfigMaps, o)
	case "v1 Secret":
		var o corev1.Secret
		err, name = strict(&o), o.Name
		m.Secrets = append(m.Secrets, o)
	case "v1 Service":
		var o corev1.Service
		err, name = strict(&o), o.Name
		m.Services = append(m.Services, o)
	case "v1 ServiceAccount":
		var o corev1.ServiceAccount
		err, name = strict(&o), o.Name
		m.ServiceAccounts = append(m.ServiceAccounts, o)
	case "policy/v1 PodDisruptionBudget":
		m.PDB = &policyv1.PodDisruptionBudget{}
		err, name = strict(m.PDB), m.PDB.Name
	case "monitoring.coreos.com/v1 ServiceMonitor":
		m.ServiceMonitor = &ServiceMonitor{}
		err, name = strict(m.ServiceMonitor), m.ServiceMonitor.Name
	default:
		return fmt.Errorf("unexpected manifest %s %s", head.APIVersion, head.Kind)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", head.Kind, err)
	}
	key := head.Kind + "/" + name
	if name == "" {
		return fmt.Errorf("%s without a name", head.Kind)
	}
	if prev, dup := m.Sources[key]; dup {
		return fmt.Errorf("%s rendered twice (also by %s)", key, prev)
	}
	m.Sources[key] = source
	return nil
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// Replicas is the StatefulSet's replica count.
func (m *Manifests) Replicas() int {
	if r := m.StatefulSet.Spec.Replicas; r != nil {
		return int(*r)
	}
	return 1
}

// PodName is the name of the StatefulSet's pod i.
func (m *Manifests) PodName(i int) string { return fmt.Sprintf("%s-%d", m.StatefulSet.Name, i) }

// PodHost is pod i's DNS name on the StatefulSet's headless Service.
func (m *Manifests) PodHost(i int, clusterDomain string) string {
	return fmt.Sprintf("%s.%s.%s.svc.%s", m.PodName(i), m.StatefulSet.Spec.ServiceName, m.Release.Namespace, clusterDomain)
}

// Container is the node's container.
func (m *Manifests) Container() corev1.Container {
	return m.StatefulSet.Spec.Template.Spec.Containers[0]
}

// Service returns the Service called name, or nil.
func (m *Manifests) Service(name string) *corev1.Service {
	for i := range m.Services {
		if m.Services[i].Name == name {
			return &m.Services[i]
		}
	}
	return nil
}

// secretValue is key of the rendered Secret called name.
func (m *Manifests) secretValue(name, key string) (string, error) {
	for _, s := range m.Secrets {
		if s.Name == name {
			if v, ok := s.Data[key]; ok {
				return string(v), nil
			}
			return "", fmt.Errorf("secret %s has no key %s", name, key)
		}
	}
	return "", fmt.Errorf("no rendered secret %s", name)
}

// PodEnv is the environment of pod i's container as the kubelet would
// set it ("NAME=value"): literal values, the pod's name from the
// downward API, and keys of the rendered Secrets.
func (m *Manifests) PodEnv(i int) ([]string, error) {
	var env []string
	for _, e := range m.Container().Env {
		v := e.Value
		switch from := e.ValueFrom; {
		case from == nil:
		case from.FieldRef != nil && from.FieldRef.FieldPath == "metadata.name":
			v = m.PodName(i)
		case from.SecretKeyRef != nil:
			var err error
			if v, err = m.secretValue(from.SecretKeyRef.Name, from.SecretKeyRef.Key); err != nil {
				return nil, fmt.Errorf("env %s: %w", e.Name, err)
			}
		default:
			return nil, fmt.Errorf("env %s: a source this check cannot resolve: %+v", e.Name, from)
		}
		env = append(env, e.Name+"="+v)
	}
	return env, nil
}

// PodArgs are pod i's container arguments with $(VAR) expanded from its
// environment, as the kubelet does.
func (m *Manifests) PodArgs(i int) ([]string, error) {
	env, err := m.PodEnv(i)
	if err != nil {
		return nil, err
	}
	vars := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	var args []string
	for _, a := range m.Container().Args {
		args = append(args, varRef.ReplaceAllStringFunc(a, func(ref string) string {
			if v, ok := vars[ref[2:len(ref)-1]]; ok {
				return v
			}
			return ref
		}))
	}
	return args, nil
}

var varRef = regexp.MustCompile(`\$\([A-Za-z_][A-Za-z0-9_]*\)`)

// ConfigFile is the configuration file the container reads (--config),
// found through the volume mounted at that path, and its content.
func (m *Manifests) ConfigFile() (path, content string, err error) {
	args := m.Container().Args
	for j := 0; j+1 < len(args); j++ {
		if args[j] == "--config" {
			path = args[j+1]
		}
	}
	if path == "" {
		return "", "", fmt.Errorf("no --config among the container's args %v", args)
	}
	for _, vm := range m.Container().VolumeMounts {
		if vm.MountPath != path && filepath.Join(vm.MountPath, filepath.Base(path)) != path {
			continue
		}
		for _, vol := range m.StatefulSet.Spec.Template.Spec.Volumes {
			if vol.Name != vm.Name || vol.ConfigMap == nil {
				continue
			}
			key := vm.SubPath
			if key == "" {
				key = filepath.Base(path)
			}
			for _, cm := range m.ConfigMaps {
				if cm.Name == vol.ConfigMap.Name {
					if c, ok := cm.Data[key]; ok {
						return path, c, nil
					}
				}
			}
		}
	}
	return path, "", fmt.Errorf("%s is not a ConfigMap key mounted in the container", path)
}

// ImageEnv is the ENV of deploy/Dockerfile ("NAME=value"): what the
// image sets before the pod's own variables.
func ImageEnv(dockerfile string) ([]string, error) {
	b, err := os.ReadFile(dockerfile)
	if err != nil {
		return nil, err
	}
	var env []string
	var stmt strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if stmt.Len() == 0 && !strings.HasPrefix(line, "ENV ") {
			continue
		}
		stmt.WriteString(strings.TrimSuffix(line, "\\") + " ")
		if strings.HasSuffix(line, "\\") {
			continue
		}
		for _, kv := range strings.Fields(strings.TrimPrefix(stmt.String(), "ENV ")) {
			if !strings.Contains(kv, "=") {
				return nil, fmt.Errorf("%s: ENV %q is not NAME=value", dockerfile, kv)
			}
			env = append(env, kv)
		}
		stmt.Reset()
	}
	return env, sc.Err()
}

// NodeConfig loads the configuration pod i would run with: the rendered
// file, the image's environment and then the pod's (later wins), the
// replica id its arguments name. It returns the loader's warnings.
func (m *Manifests) NodeConfig(i int, dockerfile, dir string) (config.Config, []string, error) {
	_, content, err := m.ConfigFile()
	if err != nil {
		return config.Config{}, nil, err
	}
	file := filepath.Join(dir, fmt.Sprintf("config-%d.toml", i))
	if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
		return config.Config{}, nil, err
	}
	image, err := ImageEnv(dockerfile)
	if err != nil {
		return config.Config{}, nil, err
	}
	pod, err := m.PodEnv(i)
	if err != nil {
		return config.Config{}, nil, err
	}
	cfg, warns, err := config.Load(file, append(image, pod...))
	if err != nil {
		return cfg, warns, err
	}
	args, err := m.PodArgs(i)
	if err != nil {
		return cfg, warns, err
	}
	for j := 0; j+1 < len(args); j++ {
		if args[j] == "--replica-id-from-name" {
			if args[j+1] != m.PodName(i) {
				return cfg, warns, fmt.Errorf("--replica-id-from-name %q, want the pod name %s", args[j+1], m.PodName(i))
			}
			cfg.Cluster.ReplicaID = i // the pod's ordinal, as cmd/node reads it
			return cfg, warns, nil
		}
	}
	return cfg, warns, fmt.Errorf("the container's args %v do not name the replica id", args)
}
