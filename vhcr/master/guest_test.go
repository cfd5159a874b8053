package master_test

import (
	"bytes"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/vhcrtest"
)

// TestGuestRAMWindow: VF 1's DMA memory is a guest's RAM (IOVA = GPA =
// file offset), VF 0 keeps its window. VF 1's vHCR and outbox are read and
// written in the guest's RAM, its window in the shared DMA region stays
// untouched, and VF 0 does not notice.
func TestGuestRAMWindow(t *testing.T) {
	r := vhcrtest.NewWith(t, 2, vhcrtest.Options{GuestRAM: map[int]int64{1: 1 << 20}})
	r.Start(t)
	v0, v1 := r.InitVF(t, 0), r.InitVF(t, 1)
	got := post(t, v1, vhcr.Request{Op: mlx4.QUERY_FW})
	if got.Status != mlx4.OK {
		t.Fatalf("VF 1 QUERY_FW: %v", got.Status)
	}
	ram, _ := r.GuestRAM[1].Bytes()
	out := ram[vhcr.VFPageOutbox*4096 : vhcr.VFPageOutbox*4096+mlx4.QUERY_FW_OUT_SIZE]
	if bytes.Equal(out, make([]byte, len(out))) || !bytes.Equal(out, got.Out[:len(out)]) {
		t.Fatal("the outbox was not written into the guest's RAM")
	}
	dmaBytes, _ := r.DMA.Bytes()
	w1 := dmaBytes[r.Layout.DMABase+r.Layout.Window : r.Layout.DMABase+2*r.Layout.Window]
	if !bytes.Equal(w1, make([]byte, len(w1))) {
		t.Fatal("VF 1's window in the shared DMA region was touched")
	}
	if got := post(t, v0, vhcr.Request{Op: mlx4.QUERY_FW}); got.Status != mlx4.OK {
		t.Fatalf("VF 0 QUERY_FW: %v", got.Status)
	}
}
