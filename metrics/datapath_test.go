package metrics_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/vhcrd/vhcrd/metrics"
	"github.com/vhcrd/vhcrd/vhcr/master/mastertest"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/vfclient/perftest"
	"github.com/vhcrd/vhcrd/vhcr/vfclient/vfdrv"
)

// TestDataPathMetrics: an RC ping-pong between VFs 0 and 1 is counted per
// VF (every send WQE, its CQE and the peer's receive CQE, the doorbells
// the poller saw),
// and a UD send to a QP that does not exist is one undeliverable packet of
// the sending VF; VF 2, idle, exports no data-path series.
func TestDataPathMetrics(t *testing.T) {
	r := mastertest.NewWith(t, 3, mastertest.Options{Window: 4 << 20})
	r.Start(t)
	ctx := context.Background()
	lid := r.HCA.Cfg.Ports[0].LID
	end := func(vf int, cfg perftest.Config) *perftest.Endpoint {
		d, err := vfdrv.New(r.InitVF(t, vf), vfdrv.Options{BAR: r.VFBARs[vf]})
		if err != nil {
			t.Fatal(err)
		}
		cfg.PSN = uint32(0x1000 * (vf + 1))
		e, err := perftest.NewEndpoint(ctx, d, cfg, lid)
		if err != nil {
			t.Fatalf("VF %d: %v", vf, err)
		}
		t.Cleanup(func() {
			if err := e.Close(context.Background()); err != nil {
				t.Errorf("VF %d close: %v", vf, err)
			}
		})
		return e
	}
	a, b := end(0, perftest.Config{Size: 256, RxDepth: 16}), end(1, perftest.Config{Size: 256, RxDepth: 16})
	for _, c := range [][2]*perftest.Endpoint{{a, b}, {b, a}} {
		if err := c[0].Connect(ctx, c[1].Local); err != nil {
			t.Fatal(err)
		}
	}
	const iters = 25
	errs := make(chan error, 1)
	go func() {
		_, err := b.PingPong(ctx, iters, true)
		errs <- err
	}()
	if _, err := a.PingPong(ctx, iters, false); err != nil {
		t.Fatal(err)
	}
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	// A doorbell is counted when the poller reads the word changed, and a
	// page whose QPs are all hot is not read (hca's doorbellHints): whether
	// the ping-pong's first rings were seen depends on when the QPs got
	// hot. The series must be the HCA's counters, read before and after.
	var dbBefore, dbAfter [2]uint64
	for vf := range dbBefore {
		dbBefore[vf] = r.HCA.DPStats(vf).Doorbells.Load()
	}
	got := gather(t, metrics.NewDataPathCollector(r.HCA))
	for vf := range dbAfter {
		dbAfter[vf] = r.HCA.DPStats(vf).Doorbells.Load()
	}
	for vf := range 2 {
		v := 0.0
		if f := got["vhcrd_send_doorbells_total"]; f != nil {
			for i, l := range f.labels {
				if l["vf"] == strconv.Itoa(vf) {
					v = f.values[i]
				}
			}
		}
		if v < float64(dbBefore[vf]) || v > float64(dbAfter[vf]) {
			t.Errorf("vhcrd_send_doorbells_total{vf=%d} = %v, the HCA counted %d then %d", vf, v, dbBefore[vf], dbAfter[vf])
		}
	}
	for _, name := range []string{"vhcrd_wqes_total", "vhcrd_cqes_total"} {
		f := got[name]
		if f == nil || f.series != 2 {
			t.Fatalf("%s: %+v, want a series for VF 0 and one for VF 1", name, f)
		}
		for i, l := range f.labels {
			if l["vf"] != "0" && l["vf"] != "1" {
				t.Errorf("%s: series %v", name, l)
			}
			min := map[string]float64{
				"vhcrd_wqes_total": iters,
				"vhcrd_cqes_total": 2 * iters, // its sends' CQEs and its receives'
			}[name]
			if f.values[i] < min {
				t.Errorf("%s{vf=%s} = %v, want at least %v", name, l["vf"], f.values[i], min)
			}
		}
	}
	if f := got["vhcrd_error_cqes_total"]; f != nil {
		t.Errorf("error CQEs counted for a clean run: %+v", f)
	}

	u := end(2, perftest.Config{UD: true, Size: 64, RxDepth: 4})
	if err := u.Connect(ctx, perftest.Dest{LID: lid, QPN: 0xfff0}); err != nil {
		t.Fatal(err)
	}
	sge := []vfdrv.SGE{{Addr: u.SendAddr(), Length: 64, LKey: u.MR.Key}}
	ah := vfdrv.NewAH(vfdrv.AHAttr{DLID: lid, Port: 1, PD: 1}) // perftest's PD
	if _, err := u.QP.PostSend([]vfdrv.SendWR{{WRID: 7, Opcode: mlx4.OPCODE_SEND, SGE: sge, Signaled: true, AH: ah, RemoteQPN: 0xfff0, RemoteQKey: perftest.UDQKey}}); err != nil {
		t.Fatal(err)
	}
	var wc [1]vfdrv.WC
	for u.CQ.Poll(wc[:]) == 0 {
		if err := ctx.Err(); err != nil {
			t.Fatal(err)
		}
	}
	if wc[0].Status != vfdrv.WCSuccess {
		t.Fatalf("UD send to no QP: %v, want success (a UD packet lost on the fabric is not the sender's error)", wc[0].Status)
	}
	f := gather(t, metrics.NewDataPathCollector(r.HCA))["vhcrd_packets_dropped_total"]
	if f == nil || f.series != 1 || f.labels[0]["vf"] != "2" || f.labels[0]["reason"] != "ud_undeliverable" || f.values[0] != 1 {
		t.Fatalf("vhcrd_packets_dropped_total: %+v, want {vf=\"2\",reason=\"ud_undeliverable\"} 1", f)
	}
}
