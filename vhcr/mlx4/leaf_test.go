package mlx4_test

import (
	"testing"

	"github.com/vhcrd/vhcrd/hack/testenv"
)

// TestABIIsALeaf: the ABI package imports nothing of vhcrd, so that both
// sides of the comm channel (the PF, the VF client, tools) can share it
// without linking each other.
func TestABIIsALeaf(t *testing.T) {
	testenv.DepsWithin(t, testenv.Module+"/vhcr/mlx4")
}
