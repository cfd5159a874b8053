package bench

import (
	"context"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/master/mastertest"
	"github.com/vhcrd/vhcrd/vhcr/vfclient/vfdrv"
)

// TestDataPathRounds: the workloads of (g) against the test rig's PF
// measure something in every round (each figure positive, every ratio
// from the same round's baseline), and the VF side's allocations over the
// SEND streams are the few of the run's goroutines, not one per message.
func TestDataPathRounds(t *testing.T) {
	r := mastertest.NewWith(t, 2, mastertest.Options{Window: 8 << 20})
	r.Start(t)
	p := &dpPeer{}
	for i := range p.d {
		d, err := vfdrv.New(r.InitVF(t, i), vfdrv.Options{BAR: r.VFBARs[i]})
		if err != nil {
			t.Fatal(err)
		}
		p.d[i] = d
	}
	o := Options{Rounds: 2}
	dp := DataPath{WriteIters: 50, SendIters: 3000, PingIters: 100, NOPIters: 200}
	res, err := p.run(context.Background(), o, dp, r.HCA.Cfg.Ports[0].LID)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.RoundWrite) != 2 || len(res.RoundSend) != 2 || len(res.RoundPing) != 2 || len(res.NOP.RoundMedian) != 2 {
		t.Fatalf("rounds: %+v", res)
	}
	for _, f := range []float64{res.WriteMBps, res.MemcpyMBps, res.WriteOverMemcpy, res.SendRate, res.NOPRate, res.SendOverNOP, res.HalfRTTNS, res.HalfRTTOverNOP, res.NOP.MedianNS} {
		if !(f > 0) {
			t.Fatalf("a figure is %v: %+v", f, res)
		}
	}
	if res.WQEs != 2*2*3000 || res.CQEs == 0 || res.Mallocs > res.WQEs/100 {
		t.Errorf("%d allocations over %d WQEs and %d CQEs", res.Mallocs, res.WQEs, res.CQEs)
	}
}
