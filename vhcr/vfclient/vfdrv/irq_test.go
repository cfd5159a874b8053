package vfdrv

import (
	"context"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/irq"
	"github.com/vhcrd/vhcrd/vhcr/master/mastertest"
)

// TestIRQDrivers: both drivers, handed their vector's eventfd, complete
// their commands as without it (the early-completion driver still pipelines); the
// mlx4-mode driver, which consumes each completion and re-arms before it
// posts again, gets exactly one interrupt per completion EQE.
func TestIRQDrivers(t *testing.T) {
	r, set := mastertest.NewWithInterrupts(t, 2, 2, mastertest.Options{})
	r.Start(t)
	seed := newDriver(t, r, 0, Options{MaxInFlight: 4, IRQ: mastertest.VectorFile(t, set, 0, 0)})
	lx := newDriver(t, r, 1, Options{Completions: CompletionsMlx4, IRQ: mastertest.VectorFile(t, set, 1, 0)})
	ctx := context.Background()
	for _, d := range []*Driver{seed, lx} {
		if _, err := d.EnableEvents(ctx, 4, 7); err != nil {
			t.Fatal(err)
		}
	}
	pipelines(t, seed)
	linuxWay(t, lx)
	var st0, st1 [3]uint64
	if err := r.PF.Do(func() {
		for i, st := range []*[3]uint64{&st0, &st1} {
			s := r.HCA.Stats(i)
			*st = [3]uint64{s.Interrupts.Load(), s.EQEs.Load(), s.IRQErrors.Load()}
		}
	}); err != nil {
		t.Fatal(err)
	}
	if st1[0] == 0 || st1[0] != st1[1] || st1[2] != 0 {
		t.Errorf("mlx4 VF: %d interrupts for %d EQEs (%d errors), want one each", st1[0], st1[1], st1[2])
	}
	if st0[0] == 0 || st0[0] > st0[1] || st0[2] != 0 {
		t.Errorf("seed VF: %d interrupts for %d EQEs (%d errors)", st0[0], st0[1], st0[2])
	}
}

// TestIRQIdleWakes: past its spin, a waiting driver sleeps on the eventfd
// and a raise ends the sleep (counted); the count is consumed.
func TestIRQIdleWakes(t *testing.T) {
	set, err := irq.NewSet(1, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { set.Close() })
	r := mastertest.New(t, 1)
	r.Start(t)
	f := mastertest.VectorFile(t, set, 0, 0)
	d := newDriver(t, r, 0, Options{IRQ: f})
	if err := set.Raise(0, 0); err != nil {
		t.Fatal(err)
	}
	w := waiter{n: spinWaits}
	if err := d.idle(context.Background(), &w); err != nil {
		t.Fatal(err)
	}
	if d.Stats.Interrupts != 1 {
		t.Fatalf("Interrupts = %d after a raise, want 1", d.Stats.Interrupts)
	}
	if n, _ := irq.Drain(d.irq); n != 0 {
		t.Fatalf("%d raises left in the eventfd", n)
	}
	// a cancelled context ends the wait
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := d.idle(ctx, &w); err == nil {
		t.Fatal("idle with a cancelled context returned nil")
	}
}
