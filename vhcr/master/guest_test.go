package master_test

import (
	"bytes"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/master"
	"github.com/vhcrd/vhcrd/vhcr/master/mastertest"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
)

// TestGuestRAMWindow: VF 1's DMA memory is a guest's RAM (IOVA = GPA =
// file offset), VF 0 keeps its window. VF 1's vHCR and outbox are read and
// written in the guest's RAM, its window in the shared DMA region stays
// untouched, and VF 0 does not notice.
func TestGuestRAMWindow(t *testing.T) {
	r := mastertest.NewWith(t, 2, mastertest.Options{GuestRAM: map[int]int64{1: 1 << 20}})
	r.Start(t)
	v0, v1 := r.InitVF(t, 0), r.InitVF(t, 1)
	got := post(t, v1, vfclient.Request{Op: mlx4.QUERY_FW})
	if got.Status != mlx4.OK {
		t.Fatalf("VF 1 QUERY_FW: %v", got.Status)
	}
	ram, _ := r.GuestRAM[1].Bytes()
	out := ram[vfclient.VFPageOutbox*4096 : vfclient.VFPageOutbox*4096+mlx4.QUERY_FW_OUT_SIZE]
	if bytes.Equal(out, make([]byte, len(out))) || !bytes.Equal(out, got.Out[:len(out)]) {
		t.Fatal("the outbox was not written into the guest's RAM")
	}
	dmaBytes, _ := r.DMA.Bytes()
	w1 := dmaBytes[r.Layout.DMABase+r.Layout.Window : r.Layout.DMABase+2*r.Layout.Window]
	if !bytes.Equal(w1, make([]byte, len(w1))) {
		t.Fatal("VF 1's window in the shared DMA region was touched")
	}
	if got := post(t, v0, vfclient.Request{Op: mlx4.QUERY_FW}); got.Status != mlx4.OK {
		t.Fatalf("VF 0 QUERY_FW: %v", got.Status)
	}
}

// TestGuestRAMSplitThroughThePF: a guest of 3 GiB, which q35 splits: a vHCR
// address in the hole below 4 GiB is refused at VHCR_EN (bit 17, counted);
// one in the RAM above 4 GiB is the page at file offset 2 GiB + (GPA -
// 4 GiB), where the PF reads the command and writes the status back.
func TestGuestRAMSplitThroughThePF(t *testing.T) {
	r := newStepRigWith(t, 2, mastertest.Options{GuestRAM: map[int]int64{1: 3 << 30}})
	enable := func(addr uint64) {
		for _, c := range []struct {
			cmd   mlx4.CommCmd
			param uint16
		}{{mlx4.MLX4_COMM_CMD_RESET, 0}, {mlx4.MLX4_COMM_CMD_VHCR0, uint16(addr >> 48)}, {mlx4.MLX4_COMM_CMD_VHCR1, uint16(addr >> 32)},
			{mlx4.MLX4_COMM_CMD_VHCR2, uint16(addr >> 16)}, {mlx4.MLX4_COMM_CMD_VHCR_EN, uint16(addr)}} {
			r.Write(1, c.cmd, c.param)
			r.scan()
		}
	}
	enable(0x9000_0000) // the hole: 2 GiB .. 4 GiB
	if st := r.PF.State(1); st.Active || r.PF.Stats().Reset(1, master.ResetVHCRAddress) != 1 || r.SlaveRead(1).Load()&mlx4.COMM_CHAN_EVENT_INTERNAL_ERR == 0 {
		t.Fatalf("vHCR in the hole: active %v, resets %d", st.Active, r.PF.Stats().Reset(1, master.ResetVHCRAddress))
	}
	r.SetToggle(1, r.SlaveRead(1).Load()>>mlx4.CommToggleShift)
	const gpa = 1<<32 + 0x10000
	enable(gpa)
	if st := r.PF.State(1); !st.Active || st.VHCR != gpa {
		t.Fatalf("vHCR at GPA %#x: %+v", uint64(gpa), st)
	}
	ram := r.GuestRAM[1]
	var img [mlx4.VHCRSize]byte
	h := mlx4.VHCR{Op: mlx4.NOP, Token: mlx4.PollToken, Status: 0xff}
	h.Encode(&img)
	const off = 2<<30 + 0x10000
	if _, err := ram.WriteAt(img[:], off); err != nil {
		t.Fatal(err)
	}
	r.Write(1, mlx4.MLX4_COMM_CMD_VHCR_POST, 0)
	r.scan()
	if !r.Acked(1) {
		t.Fatal("NOP with the vHCR in high RAM not acknowledged")
	}
	if _, err := ram.ReadAt(img[:], off); err != nil {
		t.Fatal(err)
	}
	if st := mlx4.Status(img[mlx4.OffStatus]); st != mlx4.OK {
		t.Fatalf("status written back at file offset %#x: %v", off, st)
	}
}
