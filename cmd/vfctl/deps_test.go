package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/vhcrd/vhcrd/hack/testenv"
)

const module = "github.com/vhcrd/vhcrd/"

// The VF side links no PF, no HCA and no tracker (ARCHITECTURE.md's rules):
// vfctl is a VF's tool, so neither the PF (vhcr/master and what only it
// uses: the trace ring, the crash points, the metrics collectors over it,
// the fabric simulator), nor the software HCA (vhcr/hca, the model's
// configuration, the benchmark's HCA side) nor the resource tracker may be
// among its dependencies; `vfctl bench` starts vhcrd as a process for
// them. vfdrv, vfclient and wire, the VF driver model, the VF client and the wire contract, keep
// their own rules. `go list -deps` is asked, and a failure names the import
// chain that brings the package in.
func TestVFSideLinksNoPF(t *testing.T) {
	pfSide := []string{"vhcr/master", "vhcr/hca", "vhcr/hca/restrack", "vhcr/config", "vhcr/master/trace",
		"vhcr/internal/crashpoint", "metrics", "mad/ibsim", "vhcr/bench/irqpf",
		"vhcr/master/mastertest"}
	for _, c := range []struct {
		pkg       string
		forbidden []string
	}{
		{"cmd/vfctl", pfSide},
		{"vhcr/bench", pfSide},
		{"vhcr/vfclient/vfdrv", append(pfSide, "mad")},
		{"vhcr/vfclient/perftest", pfSide},
		{"vhcr/vfclient", append(pfSide, "mad")},
		{"vhcr/wire", append(pfSide, "mad", "vhcr/vfclient")},
	} {
		deps := goListDeps(t, module+c.pkg)
		for _, f := range c.forbidden {
			if chain := importChain(deps, module+c.pkg, module+f); chain != nil {
				t.Errorf("%s links %s: %s", c.pkg, f, strings.Join(chain, " → "))
			}
		}
	}
}

// goListDeps is pkg's dependency graph: each package's imports, by import
// path, from `go list -deps` (test files left out, as the linker does).
func goListDeps(t *testing.T, pkg string) map[string][]string {
	t.Helper()
	gotool := testenv.LookPath(t, "go", "golang-go")
	out, err := exec.Command(gotool, "list", "-deps", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, pkg).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, ee.Stderr)
		}
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	deps := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		deps[f[0]] = f[1:]
	}
	if len(deps) < 2 {
		t.Fatalf("go list -deps %s listed %d packages", pkg, len(deps))
	}
	return deps
}

// importChain is a shortest chain of imports from root to pkg; nil if there
// is none.
func importChain(deps map[string][]string, root, pkg string) []string {
	from := map[string]string{root: ""}
	queue := []string{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p == pkg {
			var chain []string
			for ; p != ""; p = from[p] {
				chain = append([]string{strings.TrimPrefix(p, module)}, chain...)
			}
			return chain
		}
		for _, q := range deps[p] {
			if _, seen := from[q]; !seen {
				from[q] = p
				queue = append(queue, q)
			}
		}
	}
	return nil
}
