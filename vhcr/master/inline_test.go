package master

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/vhcrd/vhcrd/hack/testenv"
)

// TestIdleDataPathInlined: the poller's scan pays for an idle data path
// and an idle tunnel only the loads of hca.HCA.ServiceQueues' and
// ServiceTunnel's fast paths, inlined into the scan (the compiler's own
// report of the calls in comm.go); a change that makes either too complex
// to inline puts a call into every scan of every command.
func TestIdleDataPathInlined(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the package with -gcflags=-m")
	}
	gobin := testenv.LookPath(t, "go", "golang-go")
	out, err := exec.Command(gobin, "build", "-o", "/dev/null", "-gcflags=-m", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build -gcflags=-m: %v\n%s", err, out)
	}
	for _, call := range []string{"hca.(*HCA).ServiceQueues", "hca.(*HCA).ServiceTunnel"} {
		found := false
		for _, l := range strings.Split(string(out), "\n") {
			if strings.HasSuffix(strings.SplitN(l, ":", 2)[0], "comm.go") && strings.Contains(l, "inlining call to "+call) {
				found = true
			}
		}
		if !found {
			t.Errorf("the scan (comm.go) does not inline %s", call)
		}
	}
}
