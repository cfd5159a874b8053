package deploy

import (
	"bytes"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/metrics"
	"github.com/vhcrd/vhcrd/vhcr/master"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
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

// runbookBase is where every alert's runbook_url points: an anchor of
// docs/operating.md, on the project's site.
const runbookBase = "https://github.com/vhcrd/vhcrd/blob/main/docs/operating.md#"

type alertRule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	Annotations map[string]string `json:"annotations"`
}

func alertRules(t *testing.T) []alertRule {
	t.Helper()
	b, err := os.ReadFile("prometheus/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct {
			Rules []alertRule `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	var out []alertRule
	for _, g := range f.Groups {
		out = append(out, g.Rules...)
	}
	return out
}

// anchors returns the GitHub anchors of a Markdown file's headings.
func anchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		h := strings.TrimLeft(line, "#")
		if h == line || !strings.HasPrefix(h, " ") {
			continue
		}
		var slug strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(h)) {
			switch {
			case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
				slug.WriteRune(r)
			case r == ' ':
				slug.WriteRune('-')
			}
		}
		out[slug.String()] = true
	}
	return out
}

// Every alert has a runbook in docs/operating.md (runbook_url names one of
// its headings), and alerts_test.yml has, per alert, a case where it fires
// and one where it stays quiet; every vhcrd metric an alert names is one
// vhcrd exports (metrics.Families).
func TestAlertRunbooksAndTests(t *testing.T) {
	rules := alertRules(t)
	heads := anchors(t, "../../docs/operating.md")
	families := map[string]bool{}
	for _, f := range metrics.Families(1) {
		families[f.Name] = true
	}
	name := regexp.MustCompile(`\bvhcrd_[a-z0-9_]+`)
	for _, r := range rules {
		url := r.Annotations["runbook_url"]
		anchor, ok := strings.CutPrefix(url, runbookBase)
		if !ok || !heads[anchor] {
			t.Errorf("%s: runbook_url %q is not a heading of docs/operating.md (%s...)", r.Alert, url, runbookBase)
		}
		for _, n := range name.FindAllString(r.Expr, -1) {
			if !families[n] {
				t.Errorf("%s: %s is no metric vhcrd exports", r.Alert, n)
			}
		}
	}

	b, err := os.ReadFile("prometheus/alerts_test.yml")
	if err != nil {
		t.Fatal(err)
	}
	var tests struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string `json:"alertname"`
				ExpAlerts []any  `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	if err := yaml.Unmarshal(b, &tests); err != nil {
		t.Fatal(err)
	}
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) == 0 {
				quiet[a.Alertname] = true
			} else {
				fires[a.Alertname] = true
			}
		}
	}
	for _, r := range rules {
		if !fires[r.Alert] || !quiet[r.Alert] {
			t.Errorf("%s: alerts_test.yml has a case where it fires: %v, one where it does not: %v; want both", r.Alert, fires[r.Alert], quiet[r.Alert])
		}
	}
}

// The reset-storm alert counts the resets that mean trouble: every reason
// but those master.ResetReason.Ordinary names (the VF's own RESET at each
// driver load and unload, FLRs), which it excludes, all of them.
func TestResetStormCountsTrouble(t *testing.T) {
	var expr string
	for _, r := range alertRules(t) {
		if r.Alert == "VhcrdVFResetStorm" {
			expr = r.Expr
		}
	}
	m := regexp.MustCompile(`vhcrd_comm_resets_total\{reason!~"([^"]*)"\}`).FindStringSubmatch(expr)
	if m == nil {
		t.Fatalf("VhcrdVFResetStorm: %q does not exclude reasons (reason!~\"...\")", expr)
	}
	excluded := strings.Split(m[1], "|")
	var ordinary []string
	for _, r := range master.ResetReasons() {
		if r.Ordinary() {
			ordinary = append(ordinary, r.String())
		}
	}
	slices.Sort(excluded)
	slices.Sort(ordinary)
	if !slices.Equal(excluded, ordinary) {
		t.Errorf("VhcrdVFResetStorm excludes %v, the ordinary resets are %v", excluded, ordinary)
	}
}

// The image is pinned, to the version the Containerfile stamps.
func TestImagePinned(t *testing.T) {
	ds := daemonSet(t)
	image := ds.Spec.Template.Spec.Containers[0].Image
	repo, tag, ok := strings.Cut(image, ":")
	if !ok || tag == "" || tag == "latest" || strings.Contains(tag, "/") {
		t.Fatalf("the DaemonSet runs %q: pin a tag (not latest)", image)
	}
	b, err := os.ReadFile("Containerfile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^ARG VERSION=(\S+)$`).FindSubmatch(b)
	if m == nil {
		t.Fatal("the Containerfile has no ARG VERSION=... (the version it stamps into vhcrd_build_info)")
	}
	if tag != string(m[1]) {
		t.Errorf("the DaemonSet runs %s:%s, the Containerfile builds version %s", repo, tag, m[1])
	}
	if !strings.Contains(string(b), "-X github.com/vhcrd/vhcrd/metrics/buildinfo.Version=${VERSION}") {
		t.Error("the Containerfile does not stamp VERSION into vhcrd_build_info")
	}
}

func daemonSet(t *testing.T) *appsv1.DaemonSet {
	t.Helper()
	for _, doc := range documents(t, "kubernetes/daemonset.yaml") {
		if ds, ok := decodeStrict(t, doc).(*appsv1.DaemonSet); ok {
			return ds
		}
	}
	t.Fatal("no DaemonSet")
	return nil
}

// serveArgs is what `vhcrd serve` gets of the flags that place its files:
// each flag's value (the last one given) and every --vf-bar.
type serveArgs struct {
	flags  map[string]string
	vfBARs map[string]string
}

func parseServeArgs(t *testing.T, args []string) serveArgs {
	t.Helper()
	a := serveArgs{flags: map[string]string{}, vfBARs: map[string]string{}}
	for i := 0; i < len(args); i++ {
		k, ok := strings.CutPrefix(args[i], "--")
		if !ok {
			continue
		}
		k, v, eq := strings.Cut(k, "=")
		if !eq && i+1 < len(args) {
			i++
			v = args[i]
		}
		if k == "vf-bar" {
			n, spec, _ := strings.Cut(v, "=")
			a.vfBARs[n] = spec
			continue
		}
		a.flags[k] = v
	}
	return a
}

// stateFile is the PF state file vhcrd serve keeps with these flags (as
// cmd/vhcrd's stateFilePath chooses it): --pfstate, beside a file BAR, or
// vfclient.DevicePath in vfclient.RunDir for a device; "" for none. It also checks
// that a device BAR has a --vf-bar for every VF (no default then).
func (a serveArgs) stateFile(t *testing.T, where string) string {
	t.Helper()
	sp, err := bar.ParseSpec(a.flags["bar"])
	if err != nil {
		t.Fatalf("%s: --bar %q: %v", where, a.flags["bar"], err)
	}
	if sp.Scheme != "file" {
		for i := range atoi(t, a.flags["num-vfs"]) {
			if _, ok := a.vfBARs[strconv.Itoa(i)]; !ok {
				t.Errorf("%s: a device BAR and no --vf-bar %d=SPEC: vhcrd refuses to start", where, i)
			}
		}
	}
	switch p := a.flags["pfstate"]; {
	case p == "off":
		return ""
	case p != "":
		return p
	case sp.Scheme == "file":
		return sp.Path + ".pfstate"
	}
	return vfclient.DevicePath(vfclient.RunDir, sp, ".pfstate")
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("--num-vfs %q: %v", s, err)
	}
	return n
}

// The DaemonSet serves with a PF state file on the host (a hostPath
// volume: it outlives the pod), probes /healthz and /readyz over HTTP
// with a timeout above the 1 s they wait for the poller, and the
// ServiceMonitor labels every series with its node.
func TestDaemonSetStateProbesAndNode(t *testing.T) {
	ds := daemonSet(t)
	pod := ds.Spec.Template.Spec
	c := pod.Containers[0]
	env := map[string]string{}
	for _, e := range c.Env {
		env["$("+e.Name+")"] = e.Value
	}
	var args []string
	for _, a := range c.Args {
		for k, v := range env {
			a = strings.ReplaceAll(a, k, v)
		}
		args = append(args, a)
	}
	state := parseServeArgs(t, args).stateFile(t, "the DaemonSet")
	if state == "" {
		t.Fatal("the DaemonSet serves without a PF state file (--pfstate off)")
	}
	onHost := false
	for _, m := range c.VolumeMounts {
		if strings.HasPrefix(state, m.MountPath+"/") {
			for _, v := range pod.Volumes {
				onHost = onHost || v.Name == m.Name && v.HostPath != nil
			}
		}
	}
	if !onHost {
		t.Errorf("the PF state file %s is not on a hostPath volume: a new pod would not find it", state)
	}

	for _, p := range []struct {
		name  string
		probe *corev1.Probe
		path  string
	}{{"livenessProbe", c.LivenessProbe, "/healthz"}, {"readinessProbe", c.ReadinessProbe, "/readyz"}} {
		if p.probe == nil || p.probe.HTTPGet == nil || p.probe.HTTPGet.Path != p.path || p.probe.HTTPGet.Port.StrVal != "metrics" {
			t.Errorf("%s: want httpGet %s on port metrics, have %+v", p.name, p.path, p.probe)
			continue
		}
		if p.probe.TimeoutSeconds <= 1 {
			t.Errorf("%s: timeoutSeconds %d; the probe waits up to 1 s for the poller", p.name, p.probe.TimeoutSeconds)
		}
	}

	var sm *monitoringv1.ServiceMonitor
	for _, doc := range documents(t, "kubernetes/servicemonitor.yaml") {
		if o, ok := decodeStrict(t, doc).(*monitoringv1.ServiceMonitor); ok {
			sm = o
		}
	}
	node := false
	for _, r := range sm.Spec.Endpoints[0].RelabelConfigs {
		node = node || r.TargetLabel == "node" && slices.Equal(r.SourceLabels, []monitoringv1.LabelName{"__meta_kubernetes_pod_node_name"})
	}
	if !node {
		t.Error("the ServiceMonitor does not label series with their node (__meta_kubernetes_pod_node_name -> node)")
	}
}

// The systemd unit serves with a PF state file in its runtime directory,
// which it keeps across restarts (RuntimeDirectoryPreserve=restart: the
// default removes it whenever the service stops, an automatic restart
// included), for the example VHCRD_ARGS of its header.
func TestSystemdUnitStateFile(t *testing.T) {
	b, err := os.ReadFile("systemd/vhcrd.service")
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]string{}
	var example string
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "#   VHCRD_ARGS="); ok {
			example = v
		}
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			keys[k] = v
		}
	}
	if example == "" {
		t.Fatal("the unit's header has no example VHCRD_ARGS=")
	}
	exec := strings.Fields(strings.ReplaceAll(keys["ExecStart"], "$VHCRD_ARGS", example))
	if len(exec) < 2 || exec[1] != "serve" {
		t.Fatalf("ExecStart %q: want vhcrd serve", keys["ExecStart"])
	}
	a := parseServeArgs(t, exec[2:])
	state := a.stateFile(t, "the unit")
	if state == "" {
		t.Fatal("the unit serves without a PF state file (--pfstate off)")
	}
	run := "/run/" + keys["RuntimeDirectory"]
	if !strings.HasPrefix(state, run+"/") {
		t.Errorf("the PF state file %s is not in the unit's runtime directory %s", state, run)
	}
	if p := keys["RuntimeDirectoryPreserve"]; p != "restart" && p != "yes" {
		t.Errorf("RuntimeDirectoryPreserve=%q: systemd removes %s, the state file with it, when the service stops, a restart after a crash included", p, run)
	}
	if sock := a.flags["admin-socket"]; !strings.HasPrefix(sock, run+"/") {
		t.Errorf("the admin socket %s is not in the runtime directory %s", sock, run)
	}
}
