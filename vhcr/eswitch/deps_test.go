package eswitch_test

import (
	"testing"

	"github.com/vhcrd/vhcrd/hack/testenv"
)

// TestPolicyIsPure: the eSwitch's policy imports nothing of vhcrd but the
// ABI, so that the engine, vfctl and tests can apply it without linking
// the PF or the HCA.
func TestPolicyIsPure(t *testing.T) {
	testenv.DepsWithin(t, testenv.Module+"/vhcr/eswitch", testenv.Module+"/vhcr/mlx4")
}
