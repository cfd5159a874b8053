package master_test

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/vhcr/hca/restrack"
	"github.com/vhcrd/vhcrd/vhcr/master"
	"github.com/vhcrd/vhcrd/vhcr/master/mastertest"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
	"github.com/vhcrd/vhcrd/vhcr/vfclient/vfdrv"
	"github.com/vhcrd/vhcrd/vhcr/wire"
)

// TestDMARegionShrinks: the DMA file is truncated under a serving PF so
// that it no longer backs the windows of VFs 2 and 3. The PF takes the
// fault instead of dying: VF 3, which posts, and VF 2, which is idle, are
// reset with bit 17 and their own toggles; VFs 0 and 1 keep serving. VF 3's
// VHCR_EN is refused (bit 17, no second fault) while its window is not
// backed, and accepted once the file has grown back.
func TestDMARegionShrinks(t *testing.T) {
	r := mastertest.NewWith(t, 4, mastertest.Options{Files: true})
	r.Start(t)
	var vfs [2]*vfclient.VF
	for i := range vfs {
		vfs[i] = r.InitVF(t, i)
	}
	// VFs 2 and 3 are driven through the rig's registers: a VF process
	// would take the fault itself when it touched its lost window.
	for i := 2; i < 4; i++ {
		for _, c := range []mlx4.CommCmd{mlx4.MLX4_COMM_CMD_RESET, mlx4.MLX4_COMM_CMD_VHCR0, mlx4.MLX4_COMM_CMD_VHCR1, mlx4.MLX4_COMM_CMD_VHCR2, mlx4.MLX4_COMM_CMD_VHCR_EN} {
			r.Write(i, c, 0)
			waitAck(t, r, i)
		}
		r.SetVHCR(t, i, mlx4.VHCR{Op: mlx4.NOP, Token: mlx4.PollToken})
		r.Write(i, mlx4.MLX4_COMM_CMD_VHCR_POST, 0)
		waitAck(t, r, i)
	}
	if err := os.Truncate(r.Layout.DMAPath, r.Layout.DMABase+2*r.Layout.Window); err != nil {
		t.Fatal(err)
	}
	r.Write(3, mlx4.MLX4_COMM_CMD_VHCR_POST, 0) // the PF's read of the vHCR faults
	waitAck(t, r, 3)
	for i := 2; i < 4; i++ {
		want := r.SlaveWrite(i).Load()&mlx4.CommToggle | mlx4.COMM_CHAN_EVENT_INTERNAL_ERR
		if got := r.SlaveRead(i).Load(); got != want {
			t.Errorf("VF %d's slave_read %#08x, want %#08x (its toggle and bit 17)", i, got, want)
		}
		if n := r.PF.Stats().Reset(i, master.ResetRegionLost); n != 1 {
			t.Errorf("VF %d: %d region-lost resets, want 1", i, n)
		}
	}
	for round := 0; round < 3; round++ {
		for i, v := range vfs {
			if got := post(t, v, vfclient.Request{Op: mlx4.NOP}); got.Status != mlx4.OK {
				t.Fatalf("VF %d below the lost range: %v", i, got.Status)
			}
		}
	}
	// VF 3 starts again while its window is still lost: refused at VHCR_EN.
	r.SetToggle(3, r.SlaveRead(3).Load()>>mlx4.CommToggleShift)
	for _, c := range []mlx4.CommCmd{mlx4.MLX4_COMM_CMD_RESET, mlx4.MLX4_COMM_CMD_VHCR0, mlx4.MLX4_COMM_CMD_VHCR1, mlx4.MLX4_COMM_CMD_VHCR2, mlx4.MLX4_COMM_CMD_VHCR_EN} {
		r.Write(3, c, 0)
		waitAck(t, r, 3)
	}
	if r.SlaveRead(3).Load()&mlx4.COMM_CHAN_EVENT_INTERNAL_ERR == 0 {
		t.Fatal("VHCR_EN of an unbacked window accepted")
	}
	if n := r.PF.Stats().Reset(3, master.ResetRegionLost); n != 2 {
		t.Errorf("VF 3: %d region-lost resets, want 2", n)
	}
	// The file grows back: VF 3 comes up and serves again.
	if err := os.Truncate(r.Layout.DMAPath, r.Layout.DMASize); err != nil {
		t.Fatal(err)
	}
	v := r.InitVF(t, 3)
	if got := post(t, v, vfclient.Request{Op: mlx4.QUERY_FW}); got.Status != mlx4.OK {
		t.Fatalf("VF 3 after the file grew back: %v", got.Status)
	}
	if got := post(t, vfs[0], vfclient.Request{Op: mlx4.NOP}); got.Status != mlx4.OK {
		t.Fatalf("VF 0: %v", got.Status)
	}
}

// waitReset waits, through requests about VF ask (each runs between two
// scans), until the PF has reset VF i for reason; what names the cause for
// the failure.
func waitReset(t *testing.T, r *mastertest.Rig, i int, reason master.ResetReason, ask int, what string) {
	t.Helper()
	for k := 0; r.PF.Stats().Reset(i, reason) == 0; k++ {
		if _, err := r.PF.Info(ask); err != nil {
			t.Fatal(err)
		}
		if k > 1000 {
			t.Fatalf("the PF never noticed %s", what)
		}
	}
}

// waitAck waits, through the poller's request queue (each request runs
// between two scans), for the PF to answer VF i's last Write.
func waitAck(t *testing.T, r *mastertest.Rig, i int) {
	t.Helper()
	for k := 0; !r.Acked(i); k++ {
		if _, err := r.PF.Info(i); err != nil {
			t.Fatal(err)
		}
		if k > 10000 {
			t.Fatalf("VF %d: no answer (slave_read %#08x)", i, r.SlaveRead(i).Load())
		}
	}
}

// TestBARRegionShrinks: the control file is truncated under a serving PF;
// Run returns an error naming the file and its size instead of the process
// dying of SIGBUS.
func TestBARRegionShrinks(t *testing.T) {
	r := mastertest.NewWith(t, 2, mastertest.Options{Files: true})
	done := make(chan error, 1)
	go func() { done <- r.PF.Run(t.Context()) }()
	v := r.InitVF(t, 0)
	post(t, v, vfclient.Request{Op: mlx4.NOP})
	// The header goes; the idle poller's next sleep touches it.
	if err := os.Truncate(r.BARPath, 0); err != nil {
		t.Fatal(err)
	}
	err := <-done
	if !errors.Is(err, master.ErrRegionLost) {
		t.Fatalf("Run returned %v, want ErrRegionLost", err)
	}
	for _, s := range []string{r.BARPath, "0 bytes"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("the error %q does not say %q", err, s)
		}
	}
	// A request after the poller stopped runs guarded too: an FLR whose
	// header write faults is an error for its caller, not a SIGBUS.
	if err := r.PF.FLR(1); !errors.Is(err, bar.ErrFault) {
		t.Fatalf("FLR over a lost header: %v, want a fault error", err)
	}
}

// held is how many objects of type ty VF vf holds, read on the poller (the
// tracker's one owner) through PF.Do.
func held(t *testing.T, r *mastertest.Rig, vf int, ty restrack.Type) int {
	t.Helper()
	var n int
	if err := r.PF.Do(func() { n = r.HCA.Res.Counts(vf)[ty] }); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestVFBARRegionShrinks: VF 1's BAR file is truncated under a serving PF:
// VF 1 is no longer served (its objects released, the reset counted), the
// PF goes on, and VF 0 does not notice.
func TestVFBARRegionShrinks(t *testing.T) {
	r := mastertest.NewWith(t, 2, mastertest.Options{Files: true})
	r.Start(t)
	v0, v1 := r.InitVF(t, 0), r.InitVF(t, 1)
	post(t, v1, vfclient.Request{Op: mlx4.NOP})
	d, err := vfdrv.New(v1, vfdrv.Options{BAR: r.VFBARs[1]})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.AllocMTT(t.Context(), 0); err != nil {
		t.Fatal(err)
	}
	if n := held(t, r, 1, restrack.MTT); n != 1 {
		t.Fatalf("VF 1 holds %d MTT ranges", n)
	}
	if err := os.Truncate(wire.VFBARPath(r.BARPath, 1), 0); err != nil {
		t.Fatal(err)
	}
	waitReset(t, r, 1, master.ResetRegionLost, 0, "the lost VF BAR region")
	if n := held(t, r, 1, restrack.MTT); n != 0 {
		t.Errorf("VF 1 still holds %d MTT ranges", n)
	}
	for range 3 {
		if got := post(t, v0, vfclient.Request{Op: mlx4.NOP}); got.Status != mlx4.OK {
			t.Fatalf("VF 0: %v", got.Status)
		}
	}
	if n := r.PF.Stats().Reset(0, master.ResetRegionLost); n != 0 {
		t.Errorf("VF 0 reset %d times", n)
	}
}

// TestFLRBringsBackLostVFBAR: VF 1's BAR file shrinks under the PF, which
// stops serving VF 1. An FLR while the file is still short is refused with
// ErrBARLost, naming the file, its size and what the VF needs; once the
// file is whole again an FLR maps it back and VF 1 starts again from RESET
// and serves, while VF 0 never notices.
func TestFLRBringsBackLostVFBAR(t *testing.T) {
	r := mastertest.NewWith(t, 2, mastertest.Options{Files: true})
	r.Start(t)
	v0, v1 := r.InitVF(t, 0), r.InitVF(t, 1)
	post(t, v1, vfclient.Request{Op: mlx4.NOP})
	path := wire.VFBARPath(r.BARPath, 1)
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	waitReset(t, r, 1, master.ResetRegionLost, 0, "the lost VF BAR region")
	err := r.PF.FLR(1)
	if !errors.Is(err, master.ErrBARLost) {
		t.Fatalf("FLR of VF 1 with its BAR file at 0 bytes: %v, want ErrBARLost", err)
	}
	for _, s := range []string{path, "0 bytes", fmt.Sprint(r.Layout.VFBARSize)} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("the refusal %q does not say %q", err, s)
		}
	}
	if n := r.PF.Stats().Reset(1, master.ResetFLR); n != 0 {
		t.Errorf("a refused FLR counted %d FLR resets", n)
	}
	if err := os.Truncate(path, r.Layout.VFBARSize); err != nil {
		t.Fatal(err)
	}
	if err := r.PF.FLR(1); err != nil {
		t.Fatalf("FLR of VF 1 with its BAR file whole again: %v", err)
	}
	if n := r.PF.Stats().Reset(1, master.ResetFLR); n != 1 {
		t.Errorf("FLR resets of VF 1: %d, want 1", n)
	}
	if got, err := r.VFBARs[1].Load32(mlx4.MLX4_COMM_CHAN_CAPS); err != nil || got&mlx4.CommCapsVFReset == 0 {
		t.Errorf("CAPS %#08x (%v) after the FLR: VF reset support not offered", got, err)
	}
	if err := v1.Init(t.Context()); err != nil {
		t.Fatalf("VF 1 after the FLR: %v", err)
	}
	for range 3 {
		if got := post(t, v1, vfclient.Request{Op: mlx4.QUERY_FW}); got.Status != mlx4.OK {
			t.Fatalf("VF 1 after the FLR: %v", got.Status)
		}
		if got := post(t, v0, vfclient.Request{Op: mlx4.NOP}); got.Status != mlx4.OK {
			t.Fatalf("VF 0: %v", got.Status)
		}
	}
	if n := r.PF.Stats().Reset(0, master.ResetRegionLost) + r.PF.Stats().Reset(0, master.ResetFLR); n != 0 {
		t.Errorf("VF 0 reset %d times", n)
	}
}
