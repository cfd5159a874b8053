package master_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/vhcrd/vhcrd/vhcr/master"
	"github.com/vhcrd/vhcrd/vhcr/master/mastertest"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/vfclient/vfdrv"
)

// TestRetryWakesSleepingPF: a PF that blocks on its futex doorbell for an
// hour (MaxSleep and FutexTimeout an hour, spin and yield of microseconds)
// retries an RC SEND at the responder's RNR timer (min_rnr_timer 12, 0.64
// ms, as vfdrv sets it) with nothing else waking it: no command, no
// doorbell after the SEND's. With rnr_retry 1 the retry meets an RNR NAK
// again and the driver polls IBV_WC_RNR_RETRY_EXC_ERR. Without the retry
// deadline bounding the poller's sleep (hca.HCA.NextRetry) the retry would
// wait for the hour (the test's context ends first).
func TestRetryWakesSleepingPF(t *testing.T) {
	r := mastertest.NewWith(t, 2, mastertest.Options{Window: 1 << 20, Files: true,
		Idle: master.Idle{SpinFor: time.Microsecond, YieldFor: 2 * time.Microsecond, MaxSleep: time.Hour, FutexTimeout: time.Hour}})
	r.Start(t)
	a, b := newFaultEnd(t, r, 0), newFaultEnd(t, r, 1)
	a.qp.Cfg.RNRRetry = 1
	a.qp.Cfg.RemoteQPN, b.qp.Cfg.RemoteQPN = b.qp.QPN, a.qp.QPN
	for _, e := range []*fEnd{a, b} {
		if err := e.d.ModifyPath(context.Background(), e.qp.QP, mlx4.QP_STATE_INIT, mlx4.QP_STATE_RTR, mlx4.QP_STATE_RTS); err != nil {
			t.Fatal(err)
		}
	}
	before := r.PF.Stats()
	// No receive WQE at B: the SEND meets an RNR NAK.
	src := []vfdrv.SGE{{Addr: a.mr.IOVA, Length: 64, LKey: a.mr.Key}}
	if _, err := a.qp.PostSend([]vfdrv.SendWR{{WRID: 7, Opcode: mlx4.OPCODE_SEND, SGE: src, Signaled: true}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wc [4]vfdrv.WC
	n := 0
	for n == 0 {
		if ctx.Err() != nil {
			t.Fatal("no completion: the retry waited for an unrelated wake-up")
		}
		runtime.Gosched()
		n = a.cq.Poll(wc[:])
	}
	if n != 1 || wc[0].WRID != 7 || wc[0].Status != vfdrv.WCRNRRetryExcErr || wc[0].Syndrome != mlx4.CQE_SYNDROME_RNR_RETRY_EXC_ERR {
		t.Fatalf("completions %+v", wc[:n])
	}
	after := r.PF.Stats()
	if after.Done != before.Done {
		t.Fatalf("%d commands ran meanwhile", after.Done-before.Done)
	}
	if after.Sleeps == before.Sleeps {
		t.Log("the PF never slept before the retry: the wake at the deadline was not exercised")
	}
}
