package master_test

import (
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/faultinj"
	"github.com/vhcrd/vhcrd/vhcr/master/mastertest"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
)

// TestInjectedInternalErrorStays: after internal_err (now, or in a
// command's acknowledgement) bit 17 stays in slave_read across the VF's
// later commands, as a PF in its error state leaves it, so that a driver
// that keeps posting still finds it at its next catas poll (every 5 s);
// the VF's RESET clears it. The other VF never sees it.
func TestInjectedInternalErrorStays(t *testing.T) {
	for _, c := range []struct {
		name string
		spec faultinj.Spec
	}{
		{"now", faultinj.Spec{Kind: "internal_err"}},
		{"at a command", faultinj.Spec{Kind: "internal_err", Op: "NOP"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := mastertest.New(t, 2)
			r.Start(t)
			v, other := r.InitVF(t, 1), r.InitVF(t, 0)
			vf := 1
			c.spec.VF = &vf
			if _, err := r.PF.AddFault(c.spec); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 3; i++ {
				// The NOP is served (acknowledged: rawPost waits for its
				// toggle) and its reply keeps bit 17.
				if sr := rawPost(t, v, vfclient.Request2VHCR(mlx4.NOP, 0, 0)); sr&mlx4.COMM_CHAN_EVENT_INTERNAL_ERR == 0 {
					t.Fatalf("slave_read %#08x after NOP %d: bit 17 gone", sr, i+1)
				}
				post(t, other, vfclient.Request{Op: mlx4.NOP})
				if sr := other.SlaveRead(); sr&mlx4.COMM_CHAN_EVENT_INTERNAL_ERR != 0 {
					t.Fatalf("VF 0's slave_read %#08x has bit 17", sr)
				}
			}
			if err := v.Reset(ctx); err != nil {
				t.Fatal(err)
			}
			if sr := v.SlaveRead(); sr&mlx4.COMM_CHAN_EVENT_INTERNAL_ERR != 0 {
				t.Fatalf("slave_read %#08x after RESET: bit 17 still set", sr)
			}
			v2 := r.InitVF(t, 1)
			post(t, v2, vfclient.Request{Op: mlx4.NOP})
			if sr := v2.SlaveRead(); sr&mlx4.COMM_CHAN_EVENT_INTERNAL_ERR != 0 {
				t.Fatalf("slave_read %#08x after a new bring-up: bit 17 set", sr)
			}
		})
	}
}
