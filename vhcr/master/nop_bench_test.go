package master_test

import (
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/master"
	"github.com/vhcrd/vhcrd/vhcr/master/mastertest"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// BenchmarkNOPParts splits the PF's side of vfctl bench's NOP round trip
// into what can be timed on one goroutine, on the layout vfctl bench gives
// vhcrd (one VF; the control region, the DMA file and the VF's BAR region
// in files, each VF BAR mapped on its own as wire contract v2 has it):
//
//	scan-idle        one scan that finds nothing posted: the load of the
//	                 VF's slave_write through its BAR mapping and the
//	                 scan's bookkeeping, paid between commands;
//	post             VHCR_POST of a NOP, detected by that scan and
//	                 acknowledged (the fast-path test, the shadow copy of
//	                 the vHCR, the table row, the write-back, the toggle);
//	post-traced      the same with the command trace vhcrd serves with
//	                 (recording into its ring, read or not);
//	post-state-file  the same with a PF state file (the journal's guard
//	                 for a NOP, which it does not journal).
//
// post minus scan-idle is vhcrd's own work per NOP beyond the detection
// every responder pays; vfctl bench's protocol-minimum responder does the
// vHCR read and status-word write of it and nothing else.
func BenchmarkNOPParts(b *testing.B) {
	for _, tc := range []struct {
		name         string
		post         bool
		traced, file bool
	}{{"scan-idle", false, false, false}, {"post", true, false, false}, {"post-traced", true, true, false}, {"post-state-file", true, false, true}} {
		b.Run(tc.name, func(b *testing.B) {
			o := mastertest.Options{Files: true, State: tc.file}
			if tc.traced {
				ring, err := master.NewTrace(0)
				if err != nil {
					b.Fatal(err)
				}
				o.Trace = ring
			}
			r := newStepRigWith(b, 1, o)
			r.up(b, 0)
			r.vhcr(0, mlx4.NOP, 0)
			b.ReportAllocs()
			for b.Loop() {
				if tc.post {
					r.write(0, mlx4.MLX4_COMM_CMD_VHCR_POST, 0)
				}
				r.scan()
			}
			if tc.post && !r.acked(0) {
				b.Fatal("NOP not acknowledged")
			}
		})
	}
}
