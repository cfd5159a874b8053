package vfdrv

import (
	"context"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/master/mastertest"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
)

// A second driver of the same VF (another vfctl process) learns the
// objects from the PF and carries on, in event mode on the adopted EQ.
func TestAdoptAcrossDrivers(t *testing.T) {
	r := mastertest.New(t, 1)
	r.Start(t)
	ctx := context.Background()
	a := newDriver(t, r, 0, Options{})
	eq, err := a.CreateEQAt(ctx, 5, 7, mastertest.Window-mlx4.PageSize)
	ok(t, "CreateEQAt", err)
	ok(t, "MapEQ", a.MapEQ(ctx, eq, 1<<mlx4.EventCmd|AsyncEventMask))
	ok(t, "UseEvents", a.UseEventsOn(eq))
	cq, err := a.CreateCQ(ctx, 7, eq.EQN)
	ok(t, "CreateCQ", err)
	mr, err := a.CreateMR(ctx, 1, mlx4.PERM_LOCAL_READ, 1)
	ok(t, "CreateMR", err)
	qp, err := a.CreateQP(ctx, QPConfig{ST: mlx4.QP_ST_RC, SendCQ: cq.CQN, RecvCQ: cq.CQN})
	ok(t, "CreateQP", err)
	ok(t, "Modify", a.Modify(ctx, qp, mlx4.QP_STATE_INIT))

	v := r.VF(t, 0)
	ok(t, "SyncToggles", v.SyncToggles(ctx))
	b, err := New(v, Options{BAR: r.VFBARs[0]})
	ok(t, "New", err)
	beq, err := b.AdoptEQ(ctx, eq.EQN, true)
	ok(t, "AdoptEQ", err)
	if beq.IOVA != eq.IOVA || beq.Consumer() != eq.Consumer() || beq.MTT != eq.MTT {
		t.Fatalf("adopted EQ %+v, created %+v", beq, eq)
	}
	res, err := b.PostEvent(ctx, &vfclient.Request{Op: mlx4.NOP})
	ok(t, "PostEvent", err)
	if res.Status != mlx4.OK || !res.Event {
		t.Fatalf("NOP on the adopted EQ: %+v", res)
	}
	bcq, err := b.AdoptCQ(ctx, cq.CQN)
	ok(t, "AdoptCQ", err)
	bmr, err := b.AdoptMR(ctx, mr.Index)
	ok(t, "AdoptMR", err)
	bqp, err := b.AdoptQP(ctx, qp.QPN, QPConfig{}, MTT{})
	ok(t, "AdoptQP", err)
	if bqp.State != mlx4.QP_STATE_INIT || bqp.MTT != qp.MTT || bqp.Cfg.SendCQ != cq.CQN || bcq.MTT != cq.MTT || bmr.MTT != mr.MTT {
		t.Fatalf("adopted QP %+v (created %+v), CQ %+v, MR %+v", bqp, qp, bcq, bmr)
	}
	ok(t, "Modify RTR", b.Modify(ctx, bqp, mlx4.QP_STATE_RTR))
	ok(t, "Modify RTS", b.Modify(ctx, bqp, mlx4.QP_STATE_RTS))
	ok(t, "DestroyQP", b.DestroyQP(ctx, bqp))
	ok(t, "DestroyMR", b.DestroyMR(ctx, bmr))
	ok(t, "DestroyCQ", b.DestroyCQ(ctx, bcq))
	remaining(t, r, 0, 1)
	if b.Stats.Events == 0 || b.Stats.Completions != b.Stats.Events {
		t.Fatalf("stats %+v", b.Stats)
	}
	if _, err := b.AdoptCQ(ctx, cq.CQN); err == nil {
		t.Fatal("adopted a destroyed CQ")
	}
}
