package master_test

import (
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/master"
	"github.com/vhcrd/vhcrd/vhcr/master/mastertest"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// checkSaved fails unless the channel state persisted for VF i equals the
// PF's channel state.
func (r stepRig) checkSaved(t *testing.T, i int, what string) {
	t.Helper()
	got, ok := r.PF.Saved(i)
	st := r.PF.State(i)
	want := struct {
		c mlx4.CommCmd
		a bool
		v uint64
	}{st.LastCmd, st.Active, st.VHCR}
	if !ok || got.LastCmd != want.c || got.Active != want.a || got.VHCR != want.v {
		t.Fatalf("%s: header holds %v active=%v vhcr=%#x (valid %v); the channel is %v active=%v vhcr=%#x",
			what, got.LastCmd, got.Active, got.VHCR, ok, want.c, want.a, want.v)
	}
}

// TestStateIsPersistedAtEveryAcknowledgement drives every path of the comm
// state machine one scan at a time and checks, whenever slave_read changed,
// that the header already holds the channel state the VF was answered in.
func TestStateIsPersistedAtEveryAcknowledgement(t *testing.T) {
	r := newStepRig(t, 2)
	step := func(what string, f func()) {
		t.Helper()
		before := r.SlaveRead(1).Load()
		f()
		r.scan()
		if r.SlaveRead(1).Load() == before {
			t.Fatalf("%s: not answered", what)
		}
		r.checkSaved(t, 1, what)
	}
	bringUp := func() {
		t.Helper()
		for _, c := range []mlx4.CommCmd{mlx4.MLX4_COMM_CMD_RESET, mlx4.MLX4_COMM_CMD_VHCR0, mlx4.MLX4_COMM_CMD_VHCR1, mlx4.MLX4_COMM_CMD_VHCR2, mlx4.MLX4_COMM_CMD_VHCR_EN} {
			step(c.String(), func() { r.write(1, c, 0) })
		}
	}
	bringUp()
	r.vhcr(1, mlx4.NOP, 0)
	step("poll-mode post", func() { r.write(1, mlx4.MLX4_COMM_CMD_VHCR_POST, 0) })
	step("fast-path post", func() { r.write(1, mlx4.MLX4_COMM_CMD_VHCR_POST, 0) })
	r.vhcr(1, mlx4.QUERY_FW, 2*4096)
	step("post with an outbox", func() { r.write(1, mlx4.MLX4_COMM_CMD_VHCR_POST, 0) })
	step("RESET of an active VF", func() { r.write(1, mlx4.MLX4_COMM_CMD_RESET, 0) })
	step("violation: VHCR1 after RESET", func() { r.write(1, mlx4.MLX4_COMM_CMD_VHCR1, 0) })
	if r.SlaveRead(1).Load()&mlx4.COMM_CHAN_EVENT_INTERNAL_ERR == 0 {
		t.Fatal("violation without bit 17")
	}
	bringUp()
	step("violation: unknown command", func() { r.write(1, 7, 0) })
	bringUp()
	r.vhcr(1, mlx4.Opcode(0x7ff), 0)
	step("unknown opcode", func() { r.write(1, mlx4.MLX4_COMM_CMD_VHCR_POST, 0) })
	step("violation: VHCR_EN after VHCR_POST", func() { r.write(1, mlx4.MLX4_COMM_CMD_VHCR_EN, 0) })

	// FLR: the state is persisted when it starts and ends; the RESET during
	// the FLR is acknowledged (without the version) with its state saved.
	bringUp()
	if err := r.PF.BeginFLR(1); err != nil {
		t.Fatal(err)
	}
	r.checkSaved(t, 1, "BeginFLR")
	step("RESET during the FLR", func() { r.write(1, mlx4.MLX4_COMM_CMD_RESET, 0) })
	if err := r.PF.EndFLR(1); err != nil {
		t.Fatal(err)
	}
	r.checkSaved(t, 1, "EndFLR")

	// The FLAGS reset handshake.
	bringUp()
	page := r.VFBARs[1]
	f, _ := page.Load32(mlx4.MLX4_COMM_CHAN_FLAGS)
	if err := page.Store32(mlx4.MLX4_COMM_CHAN_FLAGS, f^mlx4.CommFlagsResetReq); err != nil {
		t.Fatal(err)
	}
	r.PF.CheckFlags()
	if g, _ := page.Load32(mlx4.MLX4_COMM_CHAN_FLAGS); g&mlx4.CommFlagsResetAck == f&mlx4.CommFlagsResetAck {
		t.Fatal("reset request not acknowledged")
	}
	r.checkSaved(t, 1, "FLAGS reset request")
}

// TestRestartContinuesEveryStep restarts the PF (Rebuild: a new PF over the
// same regions, as after kill -9) at the points of the channel sequence
// where a lost state change shows, and checks that the VF continues without
// a reset.
func TestRestartContinuesEveryStep(t *testing.T) {
	seq := func(t *testing.T, r stepRig, cmds []mlx4.CommCmd, params []uint16) {
		t.Helper()
		for k, c := range cmds {
			r.write(1, c, params[k])
			r.scan()
			if !r.acked(1) || r.SlaveRead(1).Load()&mlx4.COMM_CHAN_EVENT_INTERNAL_ERR != 0 {
				t.Fatalf("%v: acked=%v slave_read %#x", c, r.acked(1), r.SlaveRead(1).Load())
			}
		}
	}
	nop := func(t *testing.T, r stepRig, addr int64) {
		t.Helper()
		var img [mlx4.VHCRSize]byte
		h := mlx4.VHCR{Op: mlx4.NOP, Token: mlx4.PollToken}
		h.Encode(&img)
		if _, err := r.DMA.WriteAt(img[:], r.VHCRAddr(1)+addr); err != nil {
			t.Fatal(err)
		}
		r.write(1, mlx4.MLX4_COMM_CMD_VHCR_POST, 0)
		r.scan()
		var st [mlx4.VHCRSize]byte
		if _, err := r.DMA.ReadAt(st[:], r.VHCRAddr(1)+addr); err != nil {
			t.Fatal(err)
		}
		if !r.acked(1) || r.SlaveRead(1).Load()&mlx4.COMM_CHAN_EVENT_INTERNAL_ERR != 0 || mlx4.Status(st[mlx4.OffStatus]) != mlx4.OK {
			t.Fatalf("NOP: acked=%v slave_read %#x status %v", r.acked(1), r.SlaveRead(1).Load(), mlx4.Status(st[mlx4.OffStatus]))
		}
	}
	all := []mlx4.CommCmd{mlx4.MLX4_COMM_CMD_RESET, mlx4.MLX4_COMM_CMD_VHCR0, mlx4.MLX4_COMM_CMD_VHCR1, mlx4.MLX4_COMM_CMD_VHCR2, mlx4.MLX4_COMM_CMD_VHCR_EN}
	zero := []uint16{0, 0, 0, 0, 0}

	t.Run("between RESET and VHCR0", func(t *testing.T) {
		r := newStepRig(t, 2)
		r.up(t, 1)
		nop(t, r, 0)
		seq(t, r, all[:1], zero)
		r.Rebuild(t)
		r.checkSaved(t, 1, "after the restart")
		seq(t, r, all[1:], zero[1:])
		nop(t, r, 0)
		for why := master.ResetSequence; why <= master.ResetAdminState; why++ {
			if n := r.PF.Counters().Reset(1, why); n != 0 {
				t.Errorf("the restarted PF reset VF 1 %d times for %v", n, why)
			}
		}
	})
	t.Run("between VHCR2 and VHCR_EN", func(t *testing.T) {
		// The vHCR at 0x11000 of a 128 KiB window: VHCR2 carries bit 16 and
		// VHCR_EN 0x1000, so a restart that lost the high words shows.
		r := newStepRigWith(t, 2, mastertest.Options{Window: 128 * 1024})
		seq(t, r, all[:4], []uint16{0, 0, 0, 1})
		r.Rebuild(t)
		seq(t, r, all[4:], []uint16{0x1000})
		if st := r.PF.State(1); st.VHCR != 0x11000 || !st.Active {
			t.Fatalf("vHCR %#x active=%v after the restart, want 0x11000", st.VHCR, st.Active)
		}
		nop(t, r, 0x11000)
	})
	t.Run("a post pending while down", func(t *testing.T) {
		r := newStepRig(t, 2)
		r.up(t, 1)
		r.vhcr(1, mlx4.QUERY_FW, 2*4096)
		r.write(1, mlx4.MLX4_COMM_CMD_VHCR_POST, 0)
		r.Rebuild(t)
		r.scan()
		if !r.acked(1) || r.SlaveRead(1).Load()&mlx4.COMM_CHAN_EVENT_INTERNAL_ERR != 0 {
			t.Fatalf("the post pending over the restart: acked=%v slave_read %#x", r.acked(1), r.SlaveRead(1).Load())
		}
		if st := mlx4.Status(r.VHCR(t, 1)[mlx4.OffStatus]); st != mlx4.OK {
			t.Fatalf("QUERY_FW across the restart: %v", st)
		}
		r.scan()
		if n := r.PF.Counters().Op(r.PF.Table().Lookup(mlx4.QUERY_FW).Index(), 0); n != 1 {
			t.Errorf("QUERY_FW ran %d times, want 1", n)
		}
		nop(t, r, 0)
	})
	t.Run("FLR in progress", func(t *testing.T) {
		r := newStepRig(t, 2)
		r.up(t, 1)
		if err := r.PF.BeginFLR(1); err != nil {
			t.Fatal(err)
		}
		r.Rebuild(t)
		r.checkSaved(t, 1, "after the restart")
		if st := r.PF.State(1); st.LastCmd != mlx4.MLX4_COMM_CMD_RESET {
			t.Fatalf("an FLR in progress restarts as %v, want RESET", st.LastCmd)
		}
		seq(t, r, all, zero)
		nop(t, r, 0)
	})
}
