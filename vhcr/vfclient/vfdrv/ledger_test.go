package vfdrv

import (
	"context"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/master/mastertest"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// countingLedger counts Posted and Completed per opcode and keeps the
// immediate outputs of ALLOC_RES.
type countingLedger struct {
	posted, completed map[mlx4.Opcode]int
	events            int
	allocs            map[uint64]bool
}

func newCountingLedger() *countingLedger {
	return &countingLedger{posted: map[mlx4.Opcode]int{}, completed: map[mlx4.Opcode]int{}, allocs: map[uint64]bool{}}
}

func (l *countingLedger) Posted(op mlx4.Opcode, event bool) {
	l.posted[op]++
	if event {
		l.events++
	}
}

func (l *countingLedger) Completed(op mlx4.Opcode, r Result) {
	l.completed[op]++
	if op == mlx4.ALLOC_RES && r.Status == mlx4.OK {
		l.allocs[r.OutParam] = true
	}
}

// TestLedgerSeesEveryCommand: in poll mode, the early way's event mode
// (pipelined) and mlx4's, the ledger sees one Posted and one Completed per
// command the driver counts, and ALLOC_RES's immediate output (the CQN
// the driver hands out).
func TestLedgerSeesEveryCommand(t *testing.T) {
	r := mastertest.New(t, 3)
	r.Start(t)
	ctx := context.Background()
	for vf, mode := range []string{"poll", "early", "mlx4"} {
		l := newCountingLedger()
		opt := Options{Ledger: l, MaxInFlight: 4}
		if mode == "mlx4" {
			opt.Completions = CompletionsMlx4
		}
		d := newDriver(t, r, vf, opt)
		var err error
		if mode == "poll" {
			_, err = d.CreateEQ(ctx, 4, 7)
		} else {
			_, err = d.EnableEvents(ctx, 4, 7)
		}
		ok(t, mode+": EQ 4", err)
		cq, err := d.CreateCQ(ctx, 7, 4)
		ok(t, mode+": CreateCQ", err)
		_, err = d.QueryCQ(ctx, cq)
		ok(t, mode+": QueryCQ", err)
		ok(t, mode+": DestroyCQ", d.DestroyCQ(ctx, cq))
		var posted, completed int
		for op, n := range l.posted {
			posted += n
			if l.completed[op] != n {
				t.Errorf("%s: %v posted %d times, completed %d", mode, op, n, l.completed[op])
			}
		}
		for _, n := range l.completed {
			completed += n
		}
		if uint64(posted) != d.Stats.Commands || uint64(completed) != d.Stats.Commands {
			t.Errorf("%s: ledger %d posted, %d completed; the driver counts %d", mode, posted, completed, d.Stats.Commands)
		}
		if uint64(l.events) != d.Stats.Events {
			t.Errorf("%s: ledger %d posted with the 'e' bit, the driver %d", mode, l.events, d.Stats.Events)
		}
		if !l.allocs[uint64(cq.CQN)] {
			t.Errorf("%s: ALLOC_RES outputs %v lack the CQN %#x", mode, l.allocs, cq.CQN)
		}
		if l.posted[mlx4.SW2HW_CQ] != 1 || l.posted[mlx4.QUERY_CQ] != 1 || l.posted[mlx4.HW2SW_CQ] != 1 {
			t.Errorf("%s: posted %v", mode, l.posted)
		}
	}
}
