package master_test

import (
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/faultinj"
	"github.com/vhcrd/vhcrd/vhcr/master"
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

// TestClearedFlagsNoAckAnswersTheRequest: a reset request that
// flags_no_ack left unanswered is answered (the function reset, bit 8
// copied from bit 16) once the rule is cleared, so that the VF's next
// handshake does not find FLAGS out of sync (catas.c mlx4_reset_slave:
// "Communication channel isn't sync, fail to send reset", then BUG_ON).
func TestClearedFlagsNoAckAnswersTheRequest(t *testing.T) {
	r := mastertest.New(t, 2)
	r.Start(t)
	r.InitVF(t, 1)
	vf := 1
	if _, err := r.PF.AddFault(faultinj.Spec{Kind: "flags_no_ack", VF: &vf}); err != nil {
		t.Fatal(err)
	}
	page := r.VFBARs[1]
	f, err := page.Load32(mlx4.MLX4_COMM_CHAN_FLAGS)
	if err != nil {
		t.Fatal(err)
	}
	if err := page.Store32(mlx4.MLX4_COMM_CHAN_FLAGS, f^mlx4.CommFlagsResetReq); err != nil {
		t.Fatal(err)
	}
	var inj [faultinj.NumKinds]uint64
	for inj[faultinj.FlagsNoAck] == 0 {
		if err := r.PF.FaultsInjected(&inj); err != nil {
			t.Fatal(err)
		}
	}
	synced := func() bool {
		if _, err := r.PF.Info(1); err != nil { // a round trip through the poller
			t.Fatal(err)
		}
		f, _ := page.Load32(mlx4.MLX4_COMM_CHAN_FLAGS)
		return (f&mlx4.CommFlagsResetReq != 0) == (f&mlx4.CommFlagsResetAck != 0)
	}
	for i := 0; i < 100; i++ {
		if synced() {
			t.Fatal("the reset request was acknowledged under flags_no_ack")
		}
	}
	if _, err := r.PF.ClearFaults(0); err != nil {
		t.Fatal(err)
	}
	for i := 0; !synced(); i++ {
		if i == 10000 {
			f, _ := page.Load32(mlx4.MLX4_COMM_CHAN_FLAGS)
			t.Fatalf("FLAGS %#08x: the held reset request still unanswered after the rule was cleared", f)
		}
	}
	if n := r.PF.Stats().Reset(1, master.ResetRequest); n != 1 {
		t.Errorf("reset-request resets of VF 1: %d, want the 1 of the answered request", n)
	}
}
