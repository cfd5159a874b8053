package metrics_test

import (
	"context"
	"testing"
	"time"

	"github.com/vhcrd/vhcrd/metrics"
	"github.com/vhcrd/vhcrd/vhcr/master/mastertest"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/vfclient/vfdrv"
)

// TestRetryMetrics: VF 0's RC SEND to VF 1's QP without a receive WQE is
// retried once after the RNR timer (rnr_retry 1) and fails; VF 2's SEND
// to a QPN that does not exist is lost, sent again once after the ACK
// timeout (retry_cnt 1) and fails: vhcrd_rnr_retries_total{vf="0"} 1 and
// vhcrd_transport_retries_total{vf="2"} 1, no other series of either.
func TestRetryMetrics(t *testing.T) {
	r := mastertest.NewWith(t, 4, mastertest.Options{Window: 1 << 20})
	r.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lid := r.HCA.Cfg.Ports[0].LID
	type end struct {
		d  *vfdrv.Driver
		mr *vfdrv.MR
		cq *vfdrv.VCQ
		qp *vfdrv.VQP
	}
	mk := func(vf int) end {
		d, err := vfdrv.New(r.InitVF(t, vf), vfdrv.Options{BAR: r.VFBARs[vf]})
		if err != nil {
			t.Fatal(err)
		}
		e := end{d: d}
		eq, err := d.CreateEQ(ctx, 4, 7)
		if err == nil {
			e.cq, err = d.CreateVerbsCQ(ctx, 16, eq.EQN)
		}
		if err == nil {
			e.mr, err = d.CreateMR(ctx, 1, uint32(mlx4.PERM_LOCAL_READ|mlx4.PERM_LOCAL_WRITE), 1)
		}
		if err == nil {
			cfg := vfdrv.QPConfig{ST: mlx4.QP_ST_RC, SendCQ: e.cq.CQN, RecvCQ: e.cq.CQN, PD: 1, DestLID: lid, Retry: 1, RNRRetry: 1}
			e.qp, err = d.CreateVerbsQP(ctx, cfg, vfdrv.QPCaps{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}, false)
		}
		if err != nil {
			t.Fatalf("VF %d: %v", vf, err)
		}
		return e
	}
	a, b, c := mk(0), mk(1), mk(2)
	a.qp.Cfg.RemoteQPN, b.qp.Cfg.RemoteQPN, c.qp.Cfg.RemoteQPN = b.qp.QPN, a.qp.QPN, 0xfff0
	for _, e := range []end{a, b, c} {
		if err := e.d.ModifyPath(ctx, e.qp.QP, mlx4.QP_STATE_INIT, mlx4.QP_STATE_RTR, mlx4.QP_STATE_RTS); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range []end{a, c} {
		sge := []vfdrv.SGE{{Addr: e.mr.IOVA, Length: 8, LKey: e.mr.Key}}
		if _, err := e.qp.PostSend([]vfdrv.SendWR{{WRID: 1, Opcode: mlx4.OPCODE_SEND, SGE: sge, Signaled: true}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, x := range []struct {
		e    end
		want vfdrv.WCStatus
	}{{a, vfdrv.WCRNRRetryExcErr}, {c, vfdrv.WCRetryExcErr}} {
		var wc [1]vfdrv.WC
		for x.e.cq.Poll(wc[:]) == 0 {
			if err := ctx.Err(); err != nil {
				t.Fatal(err)
			}
		}
		if wc[0].Status != x.want {
			t.Fatalf("completion %v, want %v", wc[0].Status, x.want)
		}
	}
	got := gather(t, metrics.NewDataPathCollector(r.HCA))
	for name, vf := range map[string]string{"vhcrd_rnr_retries_total": "0", "vhcrd_transport_retries_total": "2"} {
		if f := got[name]; f == nil || f.series != 1 || f.labels[0]["vf"] != vf || f.values[0] != 1 {
			t.Errorf("%s: %+v, want {vf=%q} 1", name, f, vf)
		}
	}
}
