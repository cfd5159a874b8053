package master_test

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/vhcrd/vhcrd/vhcr"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/restrack"
	"github.com/vhcrd/vhcrd/vhcr/vhcrtest"
)

// BenchmarkPersistCost measures, in one run, what the state file costs a
// command: the same sequence on a PF without a state file (a) and with one
// (b), alternated over 7 rounds; it reports the median ns of each and the
// ratio b/a (issue 11: NOP ≤ 1.2, resource commands ≤ 1.3). The PF is
// driven scan by scan on one goroutine, so the figures are the PF's work
// per command, not a round trip between processes.
func BenchmarkPersistCost(b *testing.B) {
	for _, c := range []struct {
		name string
		cmds []mlx4.VHCR
	}{
		{"NOP", []mlx4.VHCR{{Op: mlx4.NOP, Token: mlx4.PollToken}}},
		{"ALLOC_RES+FREE_RES_CQ", []mlx4.VHCR{
			{Op: mlx4.ALLOC_RES, InMod: uint32(restrack.CQ), OpMod: 1, Token: mlx4.PollToken},
			{Op: mlx4.FREE_RES, InMod: uint32(restrack.CQ), OpMod: 1, Token: mlx4.PollToken},
		}},
		{"ALLOC_RES+FREE_RES_QP", []mlx4.VHCR{
			{Op: mlx4.ALLOC_RES, InMod: uint32(restrack.QP), OpMod: 0, InParam: 1 | 1<<32, Token: mlx4.PollToken},
			{Op: mlx4.FREE_RES, InMod: uint32(restrack.QP), OpMod: 0, InParam: 1, Token: mlx4.PollToken},
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			rigs := [2]stepRig{newStepRigWith(b, 2, vhcrtest.Options{}), newStepRigWith(b, 2, vhcrtest.Options{State: true})}
			for _, r := range rigs {
				r.up(b, 1)
			}
			run := func(r stepRig, n int) time.Duration {
				t0 := time.Now()
				for k := 0; k < n; k++ {
					var out uint64
					for j, h := range c.cmds {
						if j > 0 && h.Op == mlx4.FREE_RES {
							h.InParam = out
							if h.InMod == uint32(restrack.QP) {
								h.InParam = out | 1<<32
							}
						}
						r.SetVHCR(b, 1, h)
						r.Write(1, vhcr.CommVHCRPost, 0)
						r.PF.Scan()
						img := r.VHCR(b, 1)
						if s := mlx4.Status(img[mlx4.OffStatus]); s != mlx4.OK || !r.Acked(1) {
							b.Fatalf("%v: %v", h.Op, s)
						}
						out = uint64(img[mlx4.OffOutParam+4])<<24 | uint64(img[mlx4.OffOutParam+5])<<16 | uint64(img[mlx4.OffOutParam+6])<<8 | uint64(img[mlx4.OffOutParam+7])
					}
				}
				return time.Since(t0)
			}
			const rounds = 7
			var per [2][]float64
			b.ResetTimer()
			for round := 0; round < rounds; round++ {
				for v := range rigs {
					per[v] = append(per[v], float64(run(rigs[v], b.N).Nanoseconds())/float64(b.N*len(c.cmds)))
				}
			}
			b.StopTimer()
			a, p := median(per[0]), median(per[1])
			b.ReportMetric(a, "ns/cmd-off")
			b.ReportMetric(p, "ns/cmd-on")
			b.ReportMetric(p/a, "on/off")
			if b.N > 1 {
				fmt.Printf("persist cost %s: off %.0f ns/cmd, on %.0f ns/cmd, b/a %.2f (median of %d rounds of %d)\n", c.name, a, p, p/a, rounds, b.N)
			}
		})
	}
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}
