package main

// `vfctl load --mix realistic [--events]`: each VF runs QP/CQ/MR/EQ
// lifecycles through the VF driver model. Once per VF: EQ 0 with command
// completions and async events mapped (MAP_EQ), EQ 1 for the CQs'
// completions. Then, until the deadline: two CQs, an MR, a QP through
// RST→INIT→RTR→RTS and back to RST, everything destroyed (every object
// allocation goes with ALLOC_RES of its MTT and WRITE_MTT). With --events
// every command but the EQ ones is posted with the 'e' bit and completes by
// EQE, and commands that need no earlier command's output are pipelined
// (the driver's Create*, Destroy* and ModifyPath); without, in poll mode.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
	"github.com/vhcrd/vhcrd/vhcr/vfclient/vfdrv"
)

const (
	realisticCmdEQ  = 0
	realisticCompEQ = 1
	realisticLogEQE = 10 // 1024 EQEs (8 pages): the doorbell keeps it from filling
)

// realisticWorker drives one VF until the deadline. Command statuses and
// counts go to r through the driver's trace.
func realisticWorker(ctx context.Context, a *vfclient.Attachment, v *vfclient.VF, r *vfRun, deadline time.Time, events bool, inflight int) {
	last := time.Now()
	var d *vfdrv.Driver
	trace := func(op mlx4.Opcode, s mlx4.Status, event bool) {
		now := time.Now()
		r.statuses[s]++
		if len(r.samples) < maxSamples {
			r.samples = append(r.samples, now.Sub(last).Nanoseconds())
		}
		last = now
		if in, _ := mlx4.CmdInfo(op); in.HasInbox {
			r.inbox.Add(1)
		}
		if event {
			r.events.Add(1)
		}
		r.n.Add(1)
	}
	d, err := vfdrv.New(v, vfdrv.Options{BAR: a.VFBARs[v.Index], MaxInFlight: inflight, Trace: trace})
	if err != nil {
		r.fail(err, false)
		return
	}
	setup := func() error {
		q, err := d.CreateEQ(ctx, realisticCmdEQ, realisticLogEQE)
		if err != nil {
			return err
		}
		if err := d.MapEQ(ctx, q, 1<<mlx4.EventCmd|vfdrv.AsyncEventMask); err != nil {
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
	mr, err := d.CreateMR(ctx, 2, mlx4.PERM_LOCAL_READ|mlx4.PERM_LOCAL_WRITE|mlx4.PERM_REMOTE_WRITE, 1)
	if err != nil {
		return err
	}
	qp, err := d.CreateQP(ctx, vfdrv.QPConfig{ST: mlx4.QP_ST_RC, SendCQ: scq.CQN, RecvCQ: rcq.CQN, PD: 1, RemoteQPN: 0x48, DestLID: 6})
	if err != nil {
		return err
	}
	if err := d.ModifyPath(ctx, qp, mlx4.QP_STATE_INIT, mlx4.QP_STATE_RTR, mlx4.QP_STATE_RTS, mlx4.QP_STATE_RST); err != nil {
		return err
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

// CompareResult is what `vfctl load --mix realistic --compare --json`
// prints: poll and event mode measured in one run, in alternating phases so
// that both see the same machine.
type CompareResult struct {
	Poll   LoadResult `json:"poll"`
	Events LoadResult `json:"events"`
	// InboxEventsVsPoll is events' inbox commands/s over poll's.
	InboxEventsVsPoll float64 `json:"inbox_events_vs_poll"`
	Rounds            int     `json:"rounds"`
}

// runCompare alternates poll and event phases (rounds of each, dur split
// evenly) with every VF running realistic lifecycles.
func runCompare(ctx context.Context, a *vfclient.Attachment, vfs []*vfclient.VF, vfIdx []int, dur time.Duration, rounds, inflight int) CompareResult {
	runs := [2][]*vfRun{make([]*vfRun, len(vfs)), make([]*vfRun, len(vfs))}
	var el [2]time.Duration
	for m := range runs {
		for i := range vfs {
			runs[m][i] = &vfRun{samples: make([]int64, 0, 4096)}
		}
	}
	phase := dur / time.Duration(2*rounds)
	for round := range 2 * rounds {
		m := round % 2 // 0 poll, 1 events
		start := time.Now()
		deadline := start.Add(phase)
		done := make(chan struct{}, len(vfs))
		for i, v := range vfs {
			go func() {
				realisticWorker(ctx, a, v, runs[m][i], deadline, m == 1, inflight)
				done <- struct{}{}
			}()
		}
		for range vfs {
			<-done
		}
		el[m] += time.Since(start)
		fmt.Fprintf(os.Stderr, "round %d/%d (%s): %v\n", round+1, 2*rounds, [2]string{"poll", "events"}[m], time.Since(start).Round(time.Millisecond))
	}
	res := CompareResult{Poll: summarize(vfIdx, "realistic", el[0], runs[0]), Events: summarize(vfIdx, "realistic", el[1], runs[1]), Rounds: rounds}
	res.Events.Events = true
	if res.Poll.InboxPerS > 0 {
		res.InboxEventsVsPoll = res.Events.InboxPerS / res.Poll.InboxPerS
	}
	return res
}
