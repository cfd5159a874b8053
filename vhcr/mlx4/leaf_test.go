package mlx4_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestABIIsALeaf: the ABI package imports nothing of vhcrd, so that both
// sides of the comm channel (the PF, the VF client, tools) can share it
// without linking each other.
func TestABIIsALeaf(t *testing.T) {
	const self = "github.com/vhcrd/vhcrd/vhcr/mlx4"
	out, err := exec.Command("go", "list", "-deps", self).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, p := range strings.Fields(string(out)) {
		if p != self && strings.HasPrefix(p, "github.com/vhcrd/vhcrd/") {
			t.Errorf("vhcr/mlx4 depends on %s", p)
		}
	}
}
