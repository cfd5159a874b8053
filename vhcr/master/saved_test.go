package master_test

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/master"
	"github.com/vhcrd/vhcrd/vhcr/master/mastertest"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/pfstate"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
	"github.com/vhcrd/vhcrd/vhcr/wire"
)

// TestUntrustedSavedState: for each way the saved channel state can be
// untrustworthy, the restarted PF logs the cause once, answers the post a
// VF made while it was down with bit 17 and the VF's own toggle (never
// running it), resets every VF the cause covers and leaves the others
// serving; the VF recovers by RESET.
func TestUntrustedSavedState(t *testing.T) {
	rec := func(vf int, word int64) int64 { return wire.HdrVFRecord(vf) + word }
	for _, tc := range []struct {
		name  string
		cause string // in the log line
		all   bool   // every VF that used its channel is reset, not only VF 1
		spoil func(t *testing.T, r *mastertest.Rig)
	}{
		{"bad checksum", "checksum mismatch", false, func(t *testing.T, r *mastertest.Rig) {
			w, _ := r.BAR.Load32(rec(1, pfstate.WordVHCRLo))
			_ = r.BAR.Store32(rec(1, pfstate.WordVHCRLo), w^0x1000) // vHCR 0x1000 further: plausible, and wrong
		}},
		{"torn record", "checksum mismatch", false, func(t *testing.T, r *mastertest.Rig) {
			// A PF killed after the first store of a record (RESET of an
			// active VF): the check word is the old one.
			_ = r.BAR.Store32(rec(1, pfstate.WordLastCmd), pfstate.RecValid|uint32(mlx4.MLX4_COMM_CMD_RESET))
		}},
		{"another generation", "checksum mismatch", true, func(t *testing.T, r *mastertest.Rig) {
			g, _ := r.BAR.Load32(wire.HdrPFGen)
			_ = r.BAR.Store32(wire.HdrPFGen, g+5)
		}},
		{"another version", "saved state version 7", true, func(t *testing.T, r *mastertest.Rig) {
			_ = r.BAR.Store32(wire.HdrStateVer, 7)
		}},
		{"garbled magic", "magic 0x5648c352", true, func(t *testing.T, r *mastertest.Rig) {
			_ = r.BAR.Store32(wire.HdrMagic, wire.Magic^0x8000)
		}},
		{"garbled VF count", "VF count 131", true, func(t *testing.T, r *mastertest.Rig) {
			_ = r.BAR.Store32(wire.HdrNumVFs, 131)
		}},
		// An operator's change of --num-vfs: one line that says so, not
		// one of distrust.
		{"another VF count", "VF count changed from 2 to 3", true, func(t *testing.T, r *mastertest.Rig) {
			_ = r.BAR.Store32(wire.HdrNumVFs, 2)
		}},
		{"implausible vHCR address", "saved vHCR address 0x10000", false, func(t *testing.T, r *mastertest.Rig) {
			// An intact record, written as a PF writes it, naming a vHCR
			// outside the window.
			r.PF.SaveState(1, master.VFState{LastCmd: mlx4.MLX4_COMM_CMD_VHCR_POST, Active: true, VHCR: mastertest.Window})
		}},
		{"out of sequence", "not a state of the channel sequence", false, func(t *testing.T, r *mastertest.Rig) {
			r.PF.SaveState(1, master.VFState{LastCmd: mlx4.MLX4_COMM_CMD_VHCR1, VHCR: 0x1234})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := mastertest.New(t, 3)
			r.Start(t)
			v := r.InitVF(t, 1)
			other := r.InitVF(t, 2)
			post(t, v, vfclient.Request{Op: mlx4.NOP})
			r.Stop(t)
			// While the PF is down VF 1 posts QUERY_FW.
			var img [mlx4.VHCRSize]byte
			h := vfclient.Request2VHCR(mlx4.QUERY_FW, 0, 2*4096)
			h.Encode(&img)
			copy(v.Memory(), img[:])
			if err := v.Comm(ctx, mlx4.MLX4_COMM_CMD_VHCR_POST, 0, 0); err != nil {
				t.Fatal(err)
			}
			sw := r.SlaveWrite(1).Load()
			tc.spoil(t, r)
			var log bytes.Buffer
			r.SetLogger(slog.New(slog.NewTextHandler(&log, nil)))
			r.Rebuild(t)

			if got, want := v.SlaveRead(), sw&mlx4.CommToggle|mlx4.COMM_CHAN_EVENT_INTERNAL_ERR; got != want {
				t.Fatalf("VF 1's slave_read %#08x after the restart, want %#08x (its own toggle and bit 17)", got, want)
			}
			if got := r.SlaveWrite(0).Load() | r.SlaveRead(0).Load(); got != 0 {
				t.Errorf("VF 0 never used its channel, its registers became %#x", got)
			}
			marker := "not trusted"
			if strings.HasPrefix(tc.cause, "VF count changed") {
				marker = tc.cause
				if strings.Contains(log.String(), "not trusted") {
					t.Fatalf("a changed VF count logged as distrust:\n%s", log.String())
				}
			}
			lines := strings.Count(log.String(), marker)
			if lines != 1 || !strings.Contains(log.String(), tc.cause) {
				t.Fatalf("%d log lines, want 1 naming %q:\n%s", lines, tc.cause, log.String())
			}
			wantVFs := "vfs=[1]"
			if tc.all {
				wantVFs = `vfs="[1 2]"`
			}
			if !strings.Contains(log.String(), wantVFs) {
				t.Errorf("log does not name %s:\n%s", wantVFs, log.String())
			}
			r.Start(t)
			if err := v.WaitAck(ctx); !errors.Is(err, vfclient.ErrInternal) {
				t.Fatalf("the post pending over the restart: %v, want ErrInternal", err)
			}
			// (The answer was there before the poller ran; a post of
			// another VF needs the poller.)
			_, err := other.Post(ctx, &vfclient.Request{Op: mlx4.NOP})
			if tc.all && !errors.Is(err, vfclient.ErrInternal) {
				t.Errorf("VF 2 after the restart: %v, want ErrInternal", err)
			}
			if !tc.all && err != nil {
				t.Errorf("VF 2, whose state was intact: %v", err)
			}
			// Recovery by RESET, and the stale QUERY_FW never ran.
			if err := v.Init(ctx); err != nil {
				t.Fatalf("re-init: %v", err)
			}
			if got := post(t, v, vfclient.Request{Op: mlx4.NOP}); got.Status != mlx4.OK {
				t.Fatalf("NOP after recovery: %v", got.Status)
			}
			if n := r.PF.Stats().Reset(1, master.ResetSavedState); n != 1 {
				t.Errorf("saved-state resets of VF 1: %d", n)
			}
			if n := r.PF.Stats().Op(r.PF.Table().Lookup(mlx4.QUERY_FW).Index(), 0); n != 0 {
				t.Errorf("the post made before the untrusted restart ran %d times", n)
			}
		})
	}
}

// TestTrustedAcrossAHalfFinishedStart: a PF killed while it rewrote the
// records under its new generation, before it advanced PF_GEN, leaves
// state the next PF trusts.
func TestTrustedAcrossAHalfFinishedStart(t *testing.T) {
	r := mastertest.New(t, 2)
	r.Start(t)
	v := r.InitVF(t, 1)
	post(t, v, vfclient.Request{Op: mlx4.NOP})
	r.Stop(t)
	r.Rebuild(t)
	g, _ := r.BAR.Load32(wire.HdrPFGen)
	_ = r.BAR.Store32(wire.HdrPFGen, g-1) // the records are under g, PF_GEN says g-1
	var log bytes.Buffer
	r.SetLogger(slog.New(slog.NewTextHandler(&log, nil)))
	r.Rebuild(t)
	if strings.Contains(log.String(), "not trusted") {
		t.Fatalf("records of the half-finished start not trusted:\n%s", log.String())
	}
	r.Start(t)
	if got := post(t, v, vfclient.Request{Op: mlx4.NOP}); got.Status != mlx4.OK {
		t.Fatalf("NOP: %v", got.Status)
	}
}
