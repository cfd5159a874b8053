package hca

import (
	"testing"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/vhcr/config"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// idleQPs builds n RC QPs in RTS over 4 VFs (a VF's QPs share one queue
// buffer, initialised idle as libmlx4 does), attached and cold, with a UAR
// reader that loads from a BAR region as the PF's does.
func idleQPs(b *testing.B, n int) *HCA {
	const nvf = 4
	d := &dpRig{rig: newRig(b, nvf, func(c *config.Config) {
		c.Resources.LogQPs, c.Resources.LogCQs, c.Resources.LogMTTs = 16, 12, 16
	})}
	uar, err := bar.NewMem("uar", mlx4.UARSize)
	if err != nil {
		b.Fatal(err)
	}
	d.h.SetUARReader(func(vf int, off uint64) (uint32, bool) {
		if off > mlx4.UARSize-4 {
			return 0, false
		}
		v, err := uar.Load32(int64(off))
		return v, err == nil
	})
	for i := range nvf {
		t := d.setup(i)
		page := t.page
		for k := range n / nvf {
			t.page = page // one buffer and record for all
			q := t.qp(qpOpts{st: mlx4.QP_ST_RC, access: remoteAll})
			q.ctx.UsrPage = 128 + uint32(k%8)
			q.connect(q.qpn, 5)
		}
	}
	if d.h.Attached() != n {
		b.Fatalf("%d attached", d.h.Attached())
	}
	for range hotScans + 1 {
		d.h.ServiceQueues(64)
	}
	return d.h
}

// BenchmarkDataPathIdle: what 1,000 idle attached QPs cost the poller: a
// scan (ServiceQueues: the UAR words of their pages, sweepPerScan
// ownership checks) and a full sweep (SweepQueues, each idle checkpoint),
// with the cost per QP of the sweep.
func BenchmarkDataPathIdle(b *testing.B) {
	h := idleQPs(b, 1000)
	b.Run("scan", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if h.ServiceQueues(64) != 0 {
				b.Fatal("work on idle QPs")
			}
		}
	})
	b.Run("sweep", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if h.SweepQueues() != 0 {
				b.Fatal("work on idle QPs")
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "ns/QP")
	})
}
