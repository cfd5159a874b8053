package bench

import (
	"context"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
	"github.com/vhcrd/vhcrd/vhcr/vfclient/vfdrv"
)

// TestPersistCycles: the workloads of (f) against the test rig's PF post
// what the figures say (1, 7 and 11 commands, the same on every cycle) and
// complete OK, 300 times in a row, in poll mode.
func TestPersistCycles(t *testing.T) {
	r, vfs := rigVFs(t, 1)
	d, err := vfdrv.New(vfs[0], vfdrv.Options{BAR: r.VFBARs[0]})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	p := &persistPeer{d: d, req: vfclient.Request{Op: mlx4.NOP}}
	if p.eq, err = d.CreateEQ(ctx, 0, 7); err != nil {
		t.Fatal(err)
	}
	if p.cq, err = d.CreateCQ(ctx, 7, p.eq.EQN); err != nil {
		t.Fatal(err)
	}
	if err := p.qpCycle(ctx); err != nil { // allocates the driver's counter once
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		run  func(context.Context) error
		want int
	}{{"NOP", p.nop, 1}, {"CQ cycle", p.cqCycle, 7}, {"QP cycle", p.qpCycle, 11}} {
		for i := 0; i < 300; i++ {
			n, err := p.commands(func() error { return c.run(ctx) })
			if err != nil {
				t.Fatalf("%s %d: %v", c.name, i, err)
			}
			if n != c.want {
				t.Fatalf("%s %d: %d commands, want %d", c.name, i, n, c.want)
			}
		}
	}
	if d.Stats.NonOK != 0 || d.Events() {
		t.Fatalf("%d non-OK completions, events %v: want none, poll mode", d.Stats.NonOK, d.Events())
	}
}
