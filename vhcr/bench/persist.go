package bench

import (
	"context"
	"fmt"
	"os"
	"runtime"

	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
	"github.com/vhcrd/vhcrd/vhcr/vfclient/vfdrv"
)

// (f) the cost of the PF state file as a VF sees it. Two `vhcrd serve`
// processes on their own region files, one with its default state file
// (<bar>.pfstate: redo journal, result slots, checkpoints), one with
// --pfstate off. In this process, a vfdrv.Driver in poll mode over each
// daemon's VF 0 runs, in rounds that alternate which daemon goes first,
// NOP round trips, CQ cycles (CreateCQ + DestroyCQ: ALLOC_RES CQ and MTT,
// WRITE_MTT, SW2HW_CQ, HW2SW_CQ, FREE_RES CQ and MTT) and QP cycles
// (CreateQP, RST2INIT, INIT2RTR, RTR2RTS, 2RST, DestroyQP). A cycle is
// timed whole, from its first post to its last completion, with the
// driver's pipelining as vfdrv does it; the per-command figure is the
// cycle's median over its commands.

// Persist sizes (f).
type Persist struct {
	NOPIters int // NOP round trips per round and daemon
	Cycles   int // CQ and QP cycles per round and daemon
}

// PersistPair is one workload against both daemons.
type PersistPair struct {
	With    Figure `json:"with_state_file"`
	Without Figure `json:"without_state_file"`
	// Commands is the commands of one cycle (1 for the NOP).
	Commands int `json:"commands_per_cycle"`
	// Ratio is the median over rounds of each round's with/without median.
	Ratio       float64   `json:"ratio_with_over_without"`
	RoundRatios []float64 `json:"round_ratios_with_over_without"`
}

// PerCommand returns the with and without medians per command (ns).
func (p *PersistPair) PerCommand() (with, without float64) {
	n := float64(max(p.Commands, 1))
	return p.With.MedianNS / n, p.Without.MedianNS / n
}

// PersistResult is the figures of (f).
type PersistResult struct {
	NOP PersistPair `json:"nop"`
	CQ  PersistPair `json:"cq_cycle"`
	QP  PersistPair `json:"qp_cycle"`
	// Load is the 1-minute load average at each round.
	Load Load `json:"loadavg_1m"`
}

// persistPeer is one daemon of (f) with its driver, the EQ its CQs report
// to and the CQ its QPs use.
type persistPeer struct {
	*nopPeer
	d   *vfdrv.Driver
	eq  *vfdrv.EQ
	cq  *vfdrv.CQ
	req vfclient.Request // the NOP
}

func startPersistPeer(ctx context.Context, o Options, extra ...string) (*persistPeer, error) {
	np, err := startVHCRD(ctx, o, 1, extra...)
	if err != nil {
		return nil, err
	}
	p := &persistPeer{nopPeer: np, req: vfclient.Request{Op: mlx4.NOP}}
	vfbar, err := np.att.VFBAR(0)
	if err == nil {
		p.d, err = vfdrv.New(np.vf, vfdrv.Options{BAR: vfbar})
	}
	if err == nil {
		// The EQ the CQs report to, not mapped for command completions:
		// the driver stays in poll mode.
		p.eq, err = p.d.CreateEQ(ctx, 0, 7)
	}
	if err == nil {
		p.cq, err = p.d.CreateCQ(ctx, 7, p.eq.EQN)
	}
	if err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

func (p *persistPeer) nop(ctx context.Context) error {
	res, err := p.d.Poll(ctx, &p.req)
	if err == nil && res.Status != mlx4.OK {
		err = res.Status
	}
	return err
}

func (p *persistPeer) cqCycle(ctx context.Context) error {
	cq, err := p.d.CreateCQ(ctx, 7, p.eq.EQN)
	if err != nil {
		return fmt.Errorf("CreateCQ: %w", err)
	}
	if err := p.d.DestroyCQ(ctx, cq); err != nil {
		return fmt.Errorf("DestroyCQ: %w", err)
	}
	return nil
}

func (p *persistPeer) qpCycle(ctx context.Context) error {
	qp, err := p.d.CreateQP(ctx, vfdrv.QPConfig{ST: mlx4.QP_ST_RC, SendCQ: p.cq.CQN, RecvCQ: p.cq.CQN, PD: 1, RemoteQPN: 0x99, DestLID: 6})
	if err != nil {
		return fmt.Errorf("CreateQP: %w", err)
	}
	if err := p.d.ModifyPath(ctx, qp, mlx4.QP_STATE_INIT, mlx4.QP_STATE_RTR, mlx4.QP_STATE_RTS, mlx4.QP_STATE_RST); err != nil {
		return fmt.Errorf("RST→INIT→RTR→RTS→RST: %w", err)
	}
	if err := p.d.DestroyQP(ctx, qp); err != nil {
		return fmt.Errorf("DestroyQP: %w", err)
	}
	return nil
}

// commands counts the commands one call of f posts.
func (p *persistPeer) commands(f func() error) (int, error) {
	before := p.d.Stats.Commands
	err := f()
	return int(p.d.Stats.Commands - before), err
}

// persistWork is one kind of work RunPersist times on both daemons.
type persistWork struct {
	pair  *PersistPair
	iters int
	run   func(*persistPeer) error
}

// countCommands sets each work's commands of one cycle, the same on both
// daemons (the QP's first cycle also allocates the driver's counter: counted
// after it).
func countCommands(works []persistWork, with, without *persistPeer) error {
	for _, w := range works {
		for _, p := range []*persistPeer{with, without} {
			if err := w.run(p); err != nil {
				return fmt.Errorf("%s: %w", w.pair.With.Name, err)
			}
			n, err := p.commands(func() error { return w.run(p) })
			if err != nil {
				return fmt.Errorf("%s: %w", w.pair.With.Name, err)
			}
			if w.pair.Commands != 0 && n != w.pair.Commands {
				return fmt.Errorf("%s: %d commands with the state file, %d without", w.pair.With.Name, w.pair.Commands, n)
			}
			w.pair.Commands = n
		}
	}
	return nil
}

// RunPersist measures (f) over o.Rounds rounds.
func RunPersist(ctx context.Context, o Options, ps Persist) (*PersistResult, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	if ps.NOPIters <= 0 {
		ps.NOPIters = 20_000
	}
	if ps.Cycles <= 0 {
		ps.Cycles = 2_000
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	with, err := startPersistPeer(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("vhcrd with its state file: %w", err)
	}
	defer with.close()
	without, err := startPersistPeer(ctx, o, "--pfstate", "off")
	if err != nil {
		return nil, fmt.Errorf("vhcrd --pfstate off: %w", err)
	}
	defer without.close()
	if _, err := os.Stat(with.bar + ".pfstate"); err != nil {
		return nil, fmt.Errorf("vhcrd kept no state file: %w", err)
	}

	res := &PersistResult{
		NOP: PersistPair{With: Figure{Name: "NOP, state file"}, Without: Figure{Name: "NOP, --pfstate off"}},
		CQ:  PersistPair{With: Figure{Name: "CQ cycle, state file"}, Without: Figure{Name: "CQ cycle, --pfstate off"}},
		QP:  PersistPair{With: Figure{Name: "QP cycle, state file"}, Without: Figure{Name: "QP cycle, --pfstate off"}},
	}
	works := []persistWork{
		{&res.NOP, ps.NOPIters, func(p *persistPeer) error { return p.nop(ctx) }},
		{&res.CQ, ps.Cycles, func(p *persistPeer) error { return p.cqCycle(ctx) }},
		{&res.QP, ps.Cycles, func(p *persistPeer) error { return p.qpCycle(ctx) }},
	}
	if err := countCommands(works, with, without); err != nil {
		return nil, err
	}
	for r := 0; r < o.Rounds; r++ {
		res.Load = append(res.Load, LoadAvg1())
		// alternate which daemon goes first, so that drift hits both alike
		order := []*persistPeer{with, without}
		if r%2 == 1 {
			order[0], order[1] = without, with
		}
		for _, w := range works {
			for _, p := range order {
				f := &w.pair.Without
				if p == with {
					f = &w.pair.With
				}
				s, err := timeLoop(w.iters, func() error { return w.run(p) })
				if err != nil {
					return nil, fmt.Errorf("%s: %w", f.Name, err)
				}
				add(f, s)
			}
			w.pair.RoundRatios = append(w.pair.RoundRatios, w.pair.With.RoundMedian[r]/w.pair.Without.RoundMedian[r])
		}
		if o.Log != nil {
			fmt.Fprintf(o.Log, "persist round %d: with/without state file p50: NOP %.0f/%.0f ns, CQ cycle %.0f/%.0f ns, QP cycle %.0f/%.0f ns\n", r+1,
				res.NOP.With.RoundMedian[r], res.NOP.Without.RoundMedian[r], res.CQ.With.RoundMedian[r], res.CQ.Without.RoundMedian[r],
				res.QP.With.RoundMedian[r], res.QP.Without.RoundMedian[r])
		}
	}
	for _, w := range works {
		for _, f := range []*Figure{&w.pair.With, &w.pair.Without} {
			f.MedianNS, f.P99NS = median(f.RoundMedian), median(f.RoundP99)
		}
		w.pair.Ratio = median(w.pair.RoundRatios)
	}
	return res, nil
}
