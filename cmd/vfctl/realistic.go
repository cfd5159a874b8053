package main

// `vfctl load --mix realistic [--events]`: each VF runs QP/CQ/MR/EQ
// lifecycles through the VF driver model. Once per VF: EQ 0 with command
// completions and async events mapped (MAP_EQ), EQ 1 for the CQs'
// completions. Then, until the deadline: two CQs, an MR, a QP through
// RST→INIT→RTR→RTS and back to RST, everything destroyed (every object
// allocation goes with ALLOC_RES of its MTT and WRITE_MTT). With --events
// every command but the EQ ones is posted with the 'e' bit and completes by
// EQE; without, in poll mode.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/vhcrd/vhcrd/vhcr"
	"github.com/vhcrd/vhcrd/vhcr/hcr"
	"github.com/vhcrd/vhcrd/vhcr/vfdrv"
)

const (
	realisticCmdEQ  = 0
	realisticCompEQ = 1
	realisticLogEQE = 10 // 1024 EQEs (8 pages): the doorbell keeps it from filling
)

// realisticWorker drives one VF until the deadline. Command statuses and
// counts go to r through the driver's trace.
func realisticWorker(ctx context.Context, a *vhcr.Attachment, v *vhcr.VF, r *vfRun, deadline time.Time, events bool, inflight int) {
	last := time.Now()
	var d *vfdrv.Driver
	trace := func(op hcr.Opcode, s hcr.Status, event bool) {
		now := time.Now()
		r.statuses[s]++
		if len(r.samples) < maxSamples {
			r.samples = append(r.samples, now.Sub(last).Nanoseconds())
		}
		last = now
		if e := v.Table().Lookup(op); e != nil && e.Inbox {
			r.inbox.Add(1)
		}
		if event {
			r.events.Add(1)
		}
		r.n.Add(1)
	}
	d, err := vfdrv.New(v, vfdrv.Options{BAR: a.BAR, Layout: a.Layout, MaxInFlight: inflight, Trace: trace})
	if err != nil {
		r.fail(err, false)
		return
	}
	setup := func() error {
		q, err := d.CreateEQ(ctx, realisticCmdEQ, realisticLogEQE)
		if err != nil {
			return err
		}
		if err := d.MapEQ(ctx, q, 1<<vfdrv.EventCmd|vfdrv.AsyncEventMask); err != nil {
			return err
		}
		if _, err := d.CreateEQ(ctx, realisticCompEQ, 6); err != nil {
			return err
		}
		if events {
			return d.UseEventsOn(q)
		}
		return nil
	}
	if err := setup(); err != nil {
		r.fail(err, !errors.Is(err, vfdrv.ErrCommand))
		return
	}
	for n := 0; ; n++ {
		if time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		if err := realisticOnce(ctx, d); err != nil {
			if ctx.Err() != nil {
				return
			}
			r.fail(err, !errors.Is(err, vfdrv.ErrCommand))
			// Start over from RESET: the PF releases everything.
			if d.Reset(ctx) != nil || setup() != nil {
				return
			}
			last = time.Now()
		}
	}
	r.recycles = d.Stats.Recycles
	r.lost, r.stray = d.Stats.Lost, d.Stats.Stray
	// Leave nothing behind: RESET releases the EQs and any leftovers.
	if err := d.Reset(ctx); err != nil && ctx.Err() == nil {
		r.fail(fmt.Errorf("final RESET: %w", err), true)
	}
}

// realisticOnce runs one QP/CQ/MR lifecycle.
func realisticOnce(ctx context.Context, d *vfdrv.Driver) error {
	scq, err := d.CreateCQ(ctx, 7, realisticCompEQ)
	if err != nil {
		return err
	}
	rcq, err := d.CreateCQ(ctx, 7, realisticCompEQ)
	if err != nil {
		return err
	}
	mr, err := d.CreateMR(ctx, 2, vfdrv.PermLocalRead|vfdrv.PermLocalWrite|vfdrv.PermRemoteWrite, 1)
	if err != nil {
		return err
	}
	qp, err := d.CreateQP(ctx, vfdrv.QPConfig{ST: vfdrv.STRC, SendCQ: scq.CQN, RecvCQ: rcq.CQN, PD: 1, RemoteQPN: 0x48, DestLID: 6})
	if err != nil {
		return err
	}
	for _, to := range []vfdrv.QPState{vfdrv.QPInit, vfdrv.QPRTR, vfdrv.QPRTS, vfdrv.QPReset} {
		if err := d.Modify(ctx, qp, to); err != nil {
			return err
		}
	}
	if err := d.DestroyQP(ctx, qp); err != nil {
		return err
	}
	if err := d.DestroyMR(ctx, mr); err != nil {
		return err
	}
	if err := d.DestroyCQ(ctx, rcq); err != nil {
		return err
	}
	return d.DestroyCQ(ctx, scq)
}

// fail records err: a protocol error (the comm channel, a lost or late
// completion) or a command that failed (its status is counted already).
func (r *vfRun) fail(err error, protocol bool) {
	if protocol {
		r.protoErr++
	}
	if r.firstErr == nil {
		r.firstErr = err
	}
}
