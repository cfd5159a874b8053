package eswitch_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestPolicyIsPure: the eSwitch's policy imports nothing of vhcrd but the
// ABI, so that the engine, vfctl and tests can apply it without linking
// the PF or the HCA.
func TestPolicyIsPure(t *testing.T) {
	const self = "github.com/vhcrd/vhcrd/vhcr/eswitch"
	out, err := exec.Command("go", "list", "-deps", self).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, p := range strings.Fields(string(out)) {
		if p != self && p != "github.com/vhcrd/vhcrd/vhcr/mlx4" && strings.HasPrefix(p, "github.com/vhcrd/vhcrd/") {
			t.Errorf("vhcr/eswitch depends on %s", p)
		}
	}
}
