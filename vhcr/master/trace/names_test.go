package trace_test

import (
	"github.com/vhcrd/vhcrd/vhcr/master"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"strings"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/master/trace"
)

// The trace names comm commands with mlx4.CommCmd and holds them as uint8
// constants; it names reset reasons from its own table, since package master
// (which defines them) imports the trace. Both must stay the channel's.

func TestCommNamesMatchVHCR(t *testing.T) {
	for c := range 256 {
		if got, want := trace.CommName(uint8(c)), mlx4.CommCmd(c).String(); got != want {
			t.Errorf("comm %d: %q, vhcr says %q", c, got, want)
		}
	}
	for _, c := range []struct {
		trace uint8
		vhcr  mlx4.CommCmd
	}{{trace.CommReset, mlx4.MLX4_COMM_CMD_RESET}, {trace.CommVHCR0, mlx4.MLX4_COMM_CMD_VHCR0}, {trace.CommVHCR1, mlx4.MLX4_COMM_CMD_VHCR1},
		{trace.CommVHCR2, mlx4.MLX4_COMM_CMD_VHCR2}, {trace.CommVHCREn, mlx4.MLX4_COMM_CMD_VHCR_EN},
		{trace.CommVHCRPost, mlx4.MLX4_COMM_CMD_VHCR_POST}, {trace.CommFLR, mlx4.MLX4_COMM_CMD_FLR}} {
		if c.trace != uint8(c.vhcr) {
			t.Errorf("%v: trace %d, vhcr %d", c.vhcr, c.trace, c.vhcr)
		}
	}
}

func TestResetReasonNamesMatchVHCR(t *testing.T) {
	reasons := master.ResetReasons()
	for _, r := range reasons {
		if got, want := trace.ResetReasonName(uint8(r)), r.String(); got != want {
			t.Errorf("reset reason %d: %q, vhcr says %q", r, got, want)
		}
	}
	if got := trace.ResetReasonName(uint8(len(reasons))); !strings.HasPrefix(got, "reset_reason_") {
		t.Errorf("the trace names reason %d, which vhcr does not have: %q", len(reasons), got)
	}
}
