package trace_test

import (
	"github.com/vhcrd/vhcrd/vhcr/master"
	"strings"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr"
	"github.com/vhcrd/vhcrd/vhcr/trace"
)

// The trace names comm commands with vhcr.CommCmd and holds them as uint8
// constants; it names reset reasons from its own table, since package master
// (which defines them) imports the trace. Both must stay the channel's.

func TestCommNamesMatchVHCR(t *testing.T) {
	for c := range 256 {
		if got, want := trace.CommName(uint8(c)), vhcr.CommCmd(c).String(); got != want {
			t.Errorf("comm %d: %q, vhcr says %q", c, got, want)
		}
	}
	for _, c := range []struct {
		trace uint8
		vhcr  vhcr.CommCmd
	}{{trace.CommReset, vhcr.CommReset}, {trace.CommVHCR0, vhcr.CommVHCR0}, {trace.CommVHCR1, vhcr.CommVHCR1},
		{trace.CommVHCR2, vhcr.CommVHCR2}, {trace.CommVHCREn, vhcr.CommVHCREn},
		{trace.CommVHCRPost, vhcr.CommVHCRPost}, {trace.CommFLR, vhcr.CommFLR}} {
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
