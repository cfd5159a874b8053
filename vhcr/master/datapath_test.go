package master_test

import (
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/master/mastertest"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/wire"
)

// TestUARWord: the data path's UAR reader loads the big-endian word a VF
// stored in its own BAR region (its send doorbell at UAR index 130), and
// reads nothing outside the region, misaligned or for a VF that does not
// exist; another VF's store at the same offset is that VF's only.
func TestUARWord(t *testing.T) {
	r := mastertest.New(t, 2)
	off := mlx4.UARPageOffset(130, mlx4.UARSize) + mlx4.MLX4_SEND_DOORBELL
	if err := r.VFBARs[1].Store32(int64(off), mlx4.SendDoorbell(0x4a)); err != nil {
		t.Fatal(err)
	}
	if v, ok := r.PF.UARWord(1, off); !ok || mlx4.SendDoorbellQPN(v) != 0x4a {
		t.Fatalf("VF 1's doorbell: %#x %v", v, ok)
	}
	if v, ok := r.PF.UARWord(0, off); !ok || v != 0 {
		t.Fatalf("VF 0 read VF 1's store: %#x %v", v, ok)
	}
	for _, c := range []struct {
		vf  int
		off uint64
	}{{2, off}, {-1, off}, {1, off + 1}, {1, wire.VFBARSize - 2}, {1, wire.VFBARSize}, {1, 1 << 63}} {
		if v, ok := r.PF.UARWord(c.vf, c.off); ok {
			t.Errorf("VF %d offset %#x read %#x", c.vf, c.off, v)
		}
	}
	if _, ok := r.PF.UARWord(1, wire.VFBARSize-4); !ok {
		t.Error("the last word of the region is not readable")
	}
}
