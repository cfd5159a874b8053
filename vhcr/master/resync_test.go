package master_test

import (
	"testing"
	"time"

	"github.com/vhcrd/vhcrd/vhcr/faultinj"
	"github.com/vhcrd/vhcrd/vhcr/master"
	"github.com/vhcrd/vhcrd/vhcr/master/mastertest"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/pfstate"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
)

// The driver's recovery from a command the PF left unanswered (Linux 6.1):
// its RESET times out (cmd.c mlx4_comm_cmd_poll: MLX4_DELAY_RESET_SLAVE,
// main.c "Deferring probe"), and the retried probe's sync_toggles (cmd.c)
// finds slave_write's toggle apart from slave_read's, writes 0 to
// slave_read, then 0 to slave_write, restarts its toggle at 0, and
// mlx4_init_slave sends RESET with toggle 1: 0x80000000, the word the
// unanswered RESET had when its toggle was 1.

// When the PF looks during sync_toggles.
const (
	sampleNone    = "after-reset"  // only once the RESET is written again
	sampleZeros   = "zeros"        // both registers 0
	sampleBetween = "slave_read-0" // slave_read 0, slave_write not yet
)

// syncToggles is the driver's sync_toggles after a timeout on VF i, with a
// scan where sample says, then its RESET with toggle 1 (scanned).
func (r stepRig) syncToggles(t *testing.T, i int, sample string) {
	t.Helper()
	r.SlaveRead(i).Store(0)
	if sample == sampleBetween {
		r.scan()
	}
	r.SlaveWrite(i).Store(0)
	if sample == sampleZeros {
		r.scan()
	}
	if sample == sampleBetween {
		// The PF served the old word it saw beside slave_read's 0, and
		// the zero after it as a RESET with toggle 0 (Linux's rule: the
		// toggles differ): comm_pending finds the channel idle for the
		// driver's toggle 0.
		r.scan()
		if sr := r.SlaveRead(i).Load(); sr>>mlx4.CommToggleShift != 0 {
			t.Fatalf("slave_read %#08x before the RESET: the driver finds the channel not idle", sr)
		}
	}
	r.SetToggle(i, 0)
	r.write(i, mlx4.MLX4_COMM_CMD_RESET, 0)
	if w := r.SlaveWrite(i).Load(); w != 0x80000000 {
		t.Fatalf("the driver's RESET is %#08x", w)
	}
	r.scan()
}

// resetUnanswered arms kind at VF 1's first RESET and sends it with
// toggle 1; the PF takes it in and leaves it unanswered.
func resetUnanswered(t *testing.T, r stepRig, kind string) {
	t.Helper()
	addFault(t, r.PF, faultinj.Spec{Kind: kind, VF: vfp(1), Comm: "RESET", Nth: 1})
	r.up(t, 0)
	r.write(1, mlx4.MLX4_COMM_CMD_RESET, 0)
	if w := r.SlaveWrite(1).Load(); w != 0x80000000 {
		t.Fatalf("first RESET %#08x, want toggle 1", w)
	}
	for range 3 {
		r.scan()
	}
	if sr := r.SlaveRead(1).Load(); r.acked(1) || sr&pfstate.SlaveReadUnanswered == 0 {
		t.Fatalf("slave_read %#08x: want the RESET unanswered and marked", sr)
	}
}

// upAfterReset finishes VF 1's bring-up after its RESET was answered, and
// checks VF 0 is served.
func upAfterReset(t *testing.T, r stepRig) {
	t.Helper()
	sr := r.SlaveRead(1).Load()
	if !r.acked(1) || sr&0xffff != mlx4.CommVersion || sr&pfstate.SlaveReadUnanswered != 0 {
		t.Fatalf("the driver's RESET: slave_read %#08x, want toggle 1 and the version", sr)
	}
	for _, c := range []mlx4.CommCmd{mlx4.MLX4_COMM_CMD_VHCR0, mlx4.MLX4_COMM_CMD_VHCR1, mlx4.MLX4_COMM_CMD_VHCR2, mlx4.MLX4_COMM_CMD_VHCR_EN} {
		r.write(1, c, 0)
		r.scan()
		if !r.acked(1) {
			t.Fatalf("%v not acknowledged", c)
		}
	}
	if st := r.PF.State(1); !st.Active || st.LastCmd != mlx4.MLX4_COMM_CMD_VHCR_EN {
		t.Fatalf("VF 1 in %v active=%v", st.LastCmd, st.Active)
	}
	if p := r.post(t, 1, mlx4.VHCR{Op: mlx4.NOP}); !p.normal() {
		t.Fatalf("VF 1's NOP: %+v", p)
	}
	if p := r.post(t, 0, mlx4.VHCR{Op: mlx4.NOP}); !p.normal() {
		t.Fatalf("VF 0: %+v", p)
	}
	for why, n := range map[master.ResetReason]uint64{master.ResetToggle: 0, master.ResetSequence: 0} {
		if got := r.PF.Counters().Reset(1, why); got != n {
			t.Fatalf("%d %v resets", got, why)
		}
	}
}

// TestUnansweredResetServedAfterResync: toggle_never (and never,
// toggle_twice) at a RESET with toggle 1, the driver's timeout and
// sync_toggles, and its RESET of the same word: the PF serves it, once,
// wherever its scans fall during sync_toggles.
func TestUnansweredResetServedAfterResync(t *testing.T) {
	for _, kind := range []string{"toggle_never", "never", "toggle_twice"} {
		for _, sample := range []string{sampleNone, sampleZeros, sampleBetween} {
			t.Run(kind+"/"+sample, func(t *testing.T) {
				r := newStepRig(t, 2)
				resetUnanswered(t, r, kind)
				done := uint64(1) // the RESET the fault took in was executed
				if kind == "never" {
					done = 0
				}
				if n := r.PF.Counters().Reset(1, master.ResetByVF); n != done {
					t.Fatalf("the unanswered RESET executed %d times", n)
				}
				r.syncToggles(t, 1, sample)
				want := done + 1
				if sample == sampleBetween {
					want += 2 // the old word and the zero, both RESETs (syncToggles)
				}
				for range 3 {
					r.scan()
				}
				if n := r.PF.Counters().Reset(1, master.ResetByVF); n != want {
					t.Fatalf("RESET executed %d times, want %d", n, want)
				}
				if n := r.PF.Counters().Resyncs[1]; n != 1 {
					t.Fatalf("%d resyncs counted, want 1", n)
				}
				upAfterReset(t, r)
			})
		}
	}
}

// TestUnansweredResetAcrossRestart: the same sequence with the PF killed
// (rebuilt over its regions and state file, no shutdown) at each step: a
// restarted PF does not serve again the RESET the previous one left
// unanswered, and serves the driver's RESET once.
func TestUnansweredResetAcrossRestart(t *testing.T) {
	for _, at := range []string{"unanswered", "slave_read-0", "zeros", "reset-written"} {
		t.Run(at, func(t *testing.T) {
			r := newStepRigWith(t, 2, mastertest.Options{State: true})
			resetUnanswered(t, r, "toggle_never")
			kill := func(here string) {
				if here != at {
					return
				}
				r.Rebuild(t)
				for range 3 {
					r.scan()
				}
			}
			kill("unanswered")
			if at == "unanswered" {
				if n := r.PF.Counters().Reset(1, master.ResetByVF); n != 0 || r.acked(1) {
					t.Fatalf("the restarted PF served the unanswered RESET again (%d resets, acked %v)", n, r.acked(1))
				}
			}
			r.SlaveRead(1).Store(0)
			kill("slave_read-0")
			r.SlaveWrite(1).Store(0)
			kill("zeros")
			if at == "slave_read-0" {
				r.scan()
				// The restarted PF took the old word beside slave_read's 0
				// for a command (Linux's rule) and the zero for a RESET
				// with toggle 0: the driver finds the channel idle.
				if sr := r.SlaveRead(1).Load(); sr>>mlx4.CommToggleShift != 0 {
					t.Fatalf("slave_read %#08x before the RESET", sr)
				}
			}
			r.SetToggle(1, 0)
			r.write(1, mlx4.MLX4_COMM_CMD_RESET, 0)
			kill("reset-written")
			r.scan()
			base := r.PF.Counters().Reset(1, master.ResetByVF)
			for range 3 {
				r.scan()
			}
			if n := r.PF.Counters().Reset(1, master.ResetByVF); n != base {
				t.Fatalf("RESET executed again by later scans: %d, then %d", base, n)
			}
			upAfterReset(t, r)
		})
	}
}

// TestUnansweredPostNotServedTwice: toggle_never at a VHCR_POST with
// toggle 1 executes it once; a PF that samples the driver's sync_toggles
// between its two writes sees the old word beside slave_read's 0 and does
// not execute it again (only sync_toggles' RESET is served unchanged); the
// zero and the RESET are served.
func TestUnansweredPostNotServedTwice(t *testing.T) {
	for _, restart := range []bool{false, true} {
		name := "live"
		if restart {
			name = "restarted"
		}
		t.Run(name, func(t *testing.T) {
			r := newStepRigWith(t, 2, mastertest.Options{State: true})
			r.up(t, 0)
			r.up(t, 1) // VHCR_EN with toggle 1: the next post has toggle 0
			if p := r.post(t, 1, mlx4.VHCR{Op: mlx4.QUERY_FUNC_CAP}); !p.normal() {
				t.Fatalf("%+v", p)
			}
			addFault(t, r.PF, faultinj.Spec{Kind: "toggle_never", VF: vfp(1), Op: "QUERY_FUNC_CAP", Nth: 1})
			qfc := r.PF.Table().Lookup(mlx4.QUERY_FUNC_CAP).Index()
			before := r.PF.Counters().Op(qfc, 0)
			if p := r.post(t, 1, mlx4.VHCR{Op: mlx4.QUERY_FUNC_CAP}); p.acked || p.status != byte(mlx4.OK) || p.sr&pfstate.SlaveReadUnanswered == 0 {
				t.Fatalf("want executed, written back, unanswered and marked: %+v", p)
			}
			if w := r.SlaveWrite(1).Load(); w != mlx4.CommWord(1, mlx4.MLX4_COMM_CMD_VHCR_POST, 0) {
				t.Fatalf("slave_write %#08x", w)
			}
			executed := r.PF.Counters().Op(qfc, 0) - before
			if restart {
				r.Rebuild(t)
				before, executed = 0, 0 // the restarted PF's counts
			}
			r.SlaveRead(1).Store(0)
			r.scan()
			r.scan()
			if n := r.PF.Counters().Op(qfc, 0) - before; n != executed || r.acked(1) {
				t.Fatalf("QUERY_FUNC_CAP executed %d more times, acked %v", n-executed, r.acked(1))
			}
			r.SlaveWrite(1).Store(0)
			r.scan()
			if r.SlaveRead(1).Load()>>mlx4.CommToggleShift != 0 {
				t.Fatalf("slave_read %#08x: not idle for toggle 0", r.SlaveRead(1).Load())
			}
			r.SetToggle(1, 0)
			r.write(1, mlx4.MLX4_COMM_CMD_RESET, 0)
			r.scan()
			if n := r.PF.Counters().Op(qfc, 0) - before; n != executed {
				t.Fatalf("QUERY_FUNC_CAP executed %d times in all", n)
			}
			upAfterReset(t, r)
		})
	}
}

// TestNewVMResyncsAStuckChannel: the case sync_toggles exists for, with no
// fault: a VM whose predecessor's command was dropped (during an FLR)
// finds the toggles apart, zeroes both registers and sends RESET; the PF,
// watching through its poller, serves it and the bring-up.
func TestNewVMResyncsAStuckChannel(t *testing.T) {
	r := mastertest.New(t, 2)
	r.Start(t)
	old := r.InitVF(t, 1)
	if err := r.PF.BeginFLR(1); err != nil {
		t.Fatal(err)
	}
	var img [mlx4.VHCRSize]byte
	h := vfclient.Request2VHCR(mlx4.NOP, 0, 0)
	h.Encode(&img)
	copy(old.Memory(), img[:])
	if err := old.Comm(ctx, mlx4.MLX4_COMM_CMD_VHCR_POST, 0, 0); err != nil {
		t.Fatal(err)
	}
	for r.PF.Stats().Dropped[1] == 0 {
		if _, err := r.PF.Info(1); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.PF.EndFLR(1); err != nil {
		t.Fatal(err)
	}
	v := r.VF(t, 1)
	v.Timeouts.Sync = time.Millisecond // the toggles are apart: 5 s in the driver
	if err := v.Init(ctx); err != nil {
		t.Fatalf("the new VM's bring-up: %v", err)
	}
	if got := post(t, v, vfclient.Request{Op: mlx4.NOP}); got.Status != mlx4.OK {
		t.Fatalf("NOP: %v", got.Status)
	}
}
