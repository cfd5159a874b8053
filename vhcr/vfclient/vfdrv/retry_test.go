package vfdrv

import (
	"context"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
)

// An RC verbs QP in RTS has what ibv_rc_pingpong sets (libibverbs/examples/
// rc_pingpong.c): min_rnr_timer 12 from INIT2RTR, timeout 14, retry_cnt 7
// and rnr_retry 7 from RTR2RTS, as the PF's QUERY_QP returns the context.
func TestVerbsRCRetryFieldsArePingpongs(t *testing.T) {
	v := newVerbsRig(t, 1)
	ctx := context.Background()
	qp := v.qp(t, mlx4.QP_ST_RC, QPCaps{MaxSendWR: 16, MaxRecvWR: 16, MaxSendSGE: 1, MaxRecvSGE: 1})
	ok(t, "to RTS", v.d.ModifyPath(ctx, qp.QP, mlx4.QP_STATE_INIT, mlx4.QP_STATE_RTR, mlx4.QP_STATE_RTS))
	res, err := v.d.must(ctx, &vfclient.Request{Op: mlx4.QUERY_QP, InMod: qp.QPN})
	ok(t, "QUERY_QP", err)
	c := res.Out[mlx4.QPMailboxContext:]
	got := [4]uint8{mlx4.QPCMinRNRTimer(c), mlx4.PathAckTimeout(c[mlx4.QPCPriPath:]), mlx4.QPCRetryCount(c), mlx4.QPCRNRRetry(c)}
	if got != [4]uint8{12, 14, 7, 7} {
		t.Fatalf("min_rnr_timer, timeout, retry_cnt, rnr_retry = %v; want [12 14 7 7]", got)
	}
}
