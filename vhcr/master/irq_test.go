package master_test

import (
	"context"
	"testing"
	"time"

	"github.com/vhcrd/vhcrd/vhcr/irq"
	"github.com/vhcrd/vhcrd/vhcr/master/mastertest"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
	"github.com/vhcrd/vhcrd/vhcr/vfclient/vfdrv"
)

// hang bounds a wait for an interrupt already raised: a hang guard, not a
// timing.
const hang = 10 * time.Second

func vector(t *testing.T, s *irq.Set, vf, v int) int {
	t.Helper()
	fd, err := s.VF(vf).FD(v)
	if err != nil {
		t.Fatal(err)
	}
	return fd
}

// irqVF starts a rig of one VF with two MSI-X vectors and a driver of
// VF 0 that completes as mode says.
func irqVF(t *testing.T, mode vfdrv.Completions) (*mastertest.Rig, *irq.Set, *vfdrv.Driver) {
	t.Helper()
	r, set := mastertest.NewWithInterrupts(t, 1, 2, mastertest.Options{})
	r.Start(t)
	d, err := vfdrv.New(r.InitVF(t, 0), vfdrv.Options{BAR: r.VFBARs[0], Completions: mode})
	if err != nil {
		t.Fatal(err)
	}
	return r, set, d
}

// TestNOPInterrupt is Linux's interrupt test (mlx4_test_async: NOP with
// e=1 after mlx4_cmd_use_events): the async EQ, created armed with intr 0
// and mapped for command completions, gets the NOP's completion EQE, and
// vector 0 is raised once, by the time the command has completed; the
// other vector is not. Both completion modes.
func TestNOPInterrupt(t *testing.T) {
	for _, mode := range []vfdrv.Completions{vfdrv.CompletionsMlx4, vfdrv.CompletionsEarly} {
		t.Run(mode.String(), func(t *testing.T) {
			_, set, d := irqVF(t, mode)
			ctx := context.Background()
			if _, err := d.EnableEvents(ctx, 2, 9); err != nil { // 512 entries, as the async EQ
				t.Fatal(err)
			}
			if n, _ := irq.Drain(vector(t, set, 0, 0)); n != 0 {
				t.Fatalf("vector 0 raised %d times before any EQE", n)
			}
			res, err := d.PostEvent(ctx, &vfclient.Request{Op: mlx4.NOP, InMod: 0x1f})
			if err != nil || res.Status != mlx4.OK || !res.Event {
				t.Fatalf("NOP: %+v, %v", res, err)
			}
			if n, err := irq.Wait(vector(t, set, 0, 0), hang); err != nil || n != 1 {
				t.Fatalf("vector 0: %d raises, %v; want 1 (NOP command failed to generate MSI-X interrupt)", n, err)
			}
			if n, _ := irq.Drain(vector(t, set, 0, 1)); n != 0 {
				t.Fatalf("vector 1 raised %d times", n)
			}
		})
	}
}

// TestPortEventInterrupt: a port change is an EQE like any other: it
// raises the vector of the EQ it lands in when that EQ is armed.
func TestPortEventInterrupt(t *testing.T) {
	r, set, d := irqVF(t, vfdrv.CompletionsEarly)
	ctx := context.Background()
	if _, err := d.EnableEvents(ctx, 2, 4); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Poll(ctx, &vfclient.Request{Op: mlx4.MAP_EQ, InParam: 1 << mlx4.EventPortChange, InMod: 2}); err != nil {
		t.Fatal(err)
	}
	var n int
	var perr error
	if err := r.PF.Do(func() { n, perr = r.HCA.PortChange(r.HCA.Funcs[0].Ports[0], mlx4.PORT_CHANGE_SUBTYPE_DOWN) }); err != nil || perr != nil || n != 1 {
		t.Fatalf("PortChange: %d VFs, %v %v", n, err, perr)
	}
	if n, err := irq.Wait(vector(t, set, 0, 0), hang); err != nil || n != 1 {
		t.Fatalf("vector 0: %d raises, %v; want 1", n, err)
	}
}
