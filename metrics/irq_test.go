package metrics_test

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vhcrd/vhcrd/metrics"
	"github.com/vhcrd/vhcrd/vhcr/master/mastertest"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
	"github.com/vhcrd/vhcrd/vhcr/vfclient/vfdrv"
)

// TestInterruptMetrics: a Linux-style VF that waits on its vector and
// re-arms after each completion gets one interrupt per command, counted
// under its vf label only.
func TestInterruptMetrics(t *testing.T) {
	r, set := mastertest.NewWithInterrupts(t, 2, 2, mastertest.Options{})
	r.Start(t)
	ctx := context.Background()
	f := mastertest.VectorFile(t, set, 1, 0)
	d, err := vfdrv.New(r.InitVF(t, 1), vfdrv.Options{BAR: r.VFBARs[1], Completions: vfdrv.CompletionsMlx4, IRQ: f})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.EnableEvents(ctx, 2, 4); err != nil {
		t.Fatal(err)
	}
	const n = 5
	for range n {
		if _, err := d.PostEvent(ctx, &vfclient.Request{Op: mlx4.NOP}); err != nil {
			t.Fatal(err)
		}
	}
	fam := gather(t, metrics.NewHCACollector(r.PF, r.HCA, nil))["vhcrd_interrupts_total"]
	if fam == nil || fam.series != 1 || fam.labels[0]["vf"] != "1" || len(fam.labels[0]) != 1 {
		t.Fatalf("vhcrd_interrupts_total: %+v, want one series {vf=\"1\"}", fam)
	}
	reg := gatherValues(t, metrics.NewHCACollector(r.PF, r.HCA, nil))
	if v := reg["vhcrd_interrupts_total"]; v != n {
		t.Fatalf("vhcrd_interrupts_total = %v, want %d", v, n)
	}
	if _, ok := reg["vhcrd_interrupts_unarmed_total"]; ok {
		t.Fatal("unarmed EQEs counted for a VF that re-arms before each command")
	}
}

// gatherValues sums each counter family's values over its series.
func gatherValues(t *testing.T, c prometheus.Collector) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.Metric {
			if cn := m.GetCounter(); cn != nil {
				out[mf.GetName()] += cn.GetValue()
			}
		}
	}
	return out
}
