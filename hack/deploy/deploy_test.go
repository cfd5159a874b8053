package deploy

import (
	"bytes"
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// documents splits a multi-document YAML file.
func documents(t *testing.T, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, d := range bytes.Split(b, []byte("\n---\n")) {
		if len(bytes.TrimSpace(d)) != 0 {
			out = append(out, d)
		}
	}
	return out
}

// decodeStrict decodes one manifest into the type its kind names, refusing
// unknown and duplicate fields and wrong types (what the API server's
// strict field validation refuses).
func decodeStrict(t *testing.T, doc []byte) any {
	t.Helper()
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(doc, &head); err != nil {
		t.Fatal(err)
	}
	var obj any
	switch head.APIVersion + " " + head.Kind {
	case "v1 Namespace":
		obj = &corev1.Namespace{}
	case "v1 Service":
		obj = &corev1.Service{}
	case "apps/v1 DaemonSet":
		obj = &appsv1.DaemonSet{}
	case "monitoring.coreos.com/v1 ServiceMonitor":
		obj = &monitoringv1.ServiceMonitor{}
	default:
		t.Fatalf("no schema for %s %s", head.APIVersion, head.Kind)
	}
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		t.Fatalf("%s: %v", head.Kind, err)
	}
	return obj
}

// The manifests decode strictly into the Kubernetes and Prometheus
// Operator types, and fit together: the Service selects the DaemonSet's
// pods and names its metrics port, the ServiceMonitor selects the Service
// and that port, the admin socket is on a hostPath.
func TestKubernetesManifests(t *testing.T) {
	var ds *appsv1.DaemonSet
	var svc *corev1.Service
	var sm *monitoringv1.ServiceMonitor
	for _, f := range []string{"kubernetes/daemonset.yaml", "kubernetes/servicemonitor.yaml"} {
		for _, doc := range documents(t, f) {
			switch o := decodeStrict(t, doc).(type) {
			case *appsv1.DaemonSet:
				ds = o
			case *corev1.Service:
				svc = o
			case *monitoringv1.ServiceMonitor:
				sm = o
			}
		}
	}
	if ds == nil || svc == nil || sm == nil {
		t.Fatal("want a DaemonSet, a Service and a ServiceMonitor")
	}
	pod := ds.Spec.Template
	for k, v := range ds.Spec.Selector.MatchLabels {
		if pod.Labels[k] != v {
			t.Errorf("the DaemonSet's selector %s=%s does not match its pods", k, v)
		}
	}
	for k, v := range svc.Spec.Selector {
		if pod.Labels[k] != v {
			t.Errorf("the Service's selector %s=%s does not match the pods", k, v)
		}
	}
	for k, v := range sm.Spec.Selector.MatchLabels {
		if svc.Labels[k] != v {
			t.Errorf("the ServiceMonitor's selector %s=%s does not match the Service", k, v)
		}
	}
	if !slices.Contains(sm.Spec.NamespaceSelector.MatchNames, svc.Namespace) {
		t.Errorf("the ServiceMonitor watches %v, the Service is in %s", sm.Spec.NamespaceSelector.MatchNames, svc.Namespace)
	}
	c := pod.Spec.Containers[0]
	if len(c.Ports) != 1 || c.Ports[0].Name != "metrics" || svc.Spec.Ports[0].TargetPort.StrVal != "metrics" ||
		len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != svc.Spec.Ports[0].Name {
		t.Error("the metrics port is not named alike in the pod, the Service and the ServiceMonitor")
	}
	var sock string
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "--admin-socket="); ok {
			sock = v
		}
	}
	if sock == "" || c.Args[0] != "serve" {
		t.Fatalf("the container runs %v: want serve with --admin-socket", c.Args)
	}
	onHost := false
	for _, m := range c.VolumeMounts {
		if strings.HasPrefix(sock, m.MountPath+"/") {
			for _, v := range pod.Spec.Volumes {
				onHost = onHost || v.Name == m.Name && v.HostPath != nil
			}
		}
	}
	if !onHost {
		t.Errorf("the admin socket %s is not on a hostPath volume", sock)
	}
}

// The Containerfile parses with BuildKit's Dockerfile parser and its
// instructions parse (flags, stage references); the build is static and
// the last stage starts vhcrd.
func TestContainerfile(t *testing.T) {
	f, err := os.Open("Containerfile")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := parser.Parse(io.Reader(f))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range res.Warnings {
		t.Errorf("Containerfile:%d: %s", w.Location.Start.Line, w.Short)
	}
	stages, _, err := instructions.Parse(res.AST, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(stages) != 2 {
		t.Fatalf("%d stages, want build and the image", len(stages))
	}
	static := false
	for _, cmd := range stages[0].Commands {
		if r, ok := cmd.(*instructions.RunCommand); ok && strings.Contains(strings.Join(r.CmdLine, " "), "CGO_ENABLED=0 go build") {
			static = true
		}
	}
	if !static {
		t.Error("the build stage does not build with CGO_ENABLED=0")
	}
	if stages[1].BaseName != "scratch" {
		t.Errorf("the image is based on %s: a static binary needs nothing (scratch)", stages[1].BaseName)
	}
	var entry *instructions.EntrypointCommand
	for _, cmd := range stages[1].Commands {
		if e, ok := cmd.(*instructions.EntrypointCommand); ok {
			entry = e
		}
	}
	if entry == nil || !slices.Equal(entry.CmdLine, []string{"/usr/local/bin/vhcrd"}) {
		t.Errorf("entrypoint %v, want /usr/local/bin/vhcrd", entry)
	}
}
