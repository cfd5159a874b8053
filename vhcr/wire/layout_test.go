package wire_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/wire"
)

// TestWireContractGolden pins the v2 header and VF BAR offsets that the
// docs/wire-contract.md's table documents and that VF tools of other builds rely on.
func TestWireContractGolden(t *testing.T) {
	golden := map[string][2]int64{
		"MAGIC": {wire.HdrMagic, 0x000}, "VERSION": {wire.HdrVersion, 0x004}, "NUM_VFS": {wire.HdrNumVFs, 0x008},
		"FLAGS": {wire.HdrFlags, 0x00c}, "HEADER_SIZE": {wire.HdrHeaderSize, 0x010}, "RESERVED": {wire.HdrReserved14, 0x014},
		"VF_BAR_SIZE_HI": {wire.HdrVFBARSizeHi, 0x018}, "VF_BAR_SIZE_LO": {wire.HdrVFBARSizeLo, 0x01c},
		"DMA_BASE_HI": {wire.HdrDMABaseHi, 0x020}, "DMA_BASE_LO": {wire.HdrDMABaseLo, 0x024},
		"WINDOW_HI": {wire.HdrWindowHi, 0x028}, "WINDOW_LO": {wire.HdrWindowLo, 0x02c},
		"DMA_SIZE_HI": {wire.HdrDMASizeHi, 0x030}, "DMA_SIZE_LO": {wire.HdrDMASizeLo, 0x034},
		"PF_STATE": {wire.HdrPFState, 0x038}, "PF_GEN": {wire.HdrPFGen, 0x03c},
		"DOORBELL": {wire.HdrDoorbell, 0x040}, "PF_SLEEPING": {wire.HdrPFSleeping, 0x044},
		"STATE_VERSION": {wire.HdrStateVer, 0x048}, "PF_STOPPED": {wire.HdrPFStopped, 0x04c},
		"DMA_PATH": {wire.HdrDMAPath, 0x080}, "VF_STATE": {wire.HdrVFState, 0x400}, "VF 2 state": {wire.HdrVFRecord(2), 0x420},
		// The comm page at offset 0 of a VF BAR region (its registers and
		// bits: mlx4's TestCommChannelLayout).
		"comm page": {mlx4.CommSlaveWrite, 0x0}, "EQ_DOORBELL": {mlx4.MLX4_EQ_DOORBELL, 0x800},
		// mlx4_get_eq_uar: UAR page eqn/4, 0x800 + 8·(eqn%4)
		"EQ 0": {mlx4.EQDoorbellOffset(0), 0x800}, "EQ 1": {mlx4.EQDoorbellOffset(1), 0x808}, "EQ 3": {mlx4.EQDoorbellOffset(3), 0x818},
		"EQ 4": {mlx4.EQDoorbellOffset(4), 0x1800}, "EQ 33": {mlx4.EQDoorbellOffset(33), 0x8808}, "EQ 511": {mlx4.EQDoorbellOffset(511), 0x7f818},
	}
	for name, g := range golden {
		if g[0] != g[1] {
			t.Errorf("%s at %#x, the wire contract says %#x", name, g[0], g[1])
		}
	}
	if wire.Magic != 0x56484352 || wire.LayoutVersion != 2 || wire.HeaderSize != 0x1000 {
		t.Error("magic, version or header size changed")
	}
	if wire.HdrFlagDMAInBAR != 1 || wire.HdrFlagDoorbell != 2 || wire.HdrFlagOwnerClaim != 4 {
		t.Error("header flags changed")
	}
	l, err := wire.NewLayout(8, 1<<20, false, 0, 0, "/dev/shm/x")
	if err != nil {
		t.Fatal(err)
	}
	if l.ControlSize() != 0x1000 || l.VFBARSize != 8<<20 || l.DMASize != 8<<20 {
		t.Errorf("layout: control %#x, VF BAR %#x, DMA %#x", l.ControlSize(), l.VFBARSize, l.DMASize)
	}
	// The VF BAR holds the uar_size QUERY_DEV_CAP reports, and every EQ
	// doorbell the VF may own.
	if wire.VFBARSize != mlx4.UARSize || wire.VFBARSize&(wire.VFBARSize-1) != 0 || mlx4.EQDoorbellOffset(wire.MaxEQDoorbells-1)+4 > wire.VFBARSize {
		t.Errorf("VF BAR size %#x, uar_size %#x, last doorbell at %#x", wire.VFBARSize, mlx4.UARSize, mlx4.EQDoorbellOffset(wire.MaxEQDoorbells-1))
	}
	in, err := wire.NewLayout(2, 64<<10, true, 0, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	if in.DMABase != 0x1000 || in.ControlSize() != 0x1000+2*(64<<10) {
		t.Errorf("DMA in BAR: base %#x, control size %#x", in.DMABase, in.ControlSize())
	}
}

func writtenRegion(t *testing.T, l wire.Layout, size int64) *bar.Mem {
	t.Helper()
	m, err := bar.NewMem("hdr", size)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Write(m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestReadLayoutRejectsBadHeaders(t *testing.T) {
	l, _ := wire.NewLayout(4, 64<<10, false, 0, 0, "/dev/shm/dma")
	good := writtenRegion(t, l, l.ControlSize())
	want := l
	want.OwnerClaim = true // Write through memory of this host (bar.Mem) claims it
	if got, err := wire.ReadLayout(good); err != nil || got != want {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	for _, tc := range []struct {
		name string
		mod  func(m *bar.Mem)
		want string
	}{
		{"garbled magic", func(m *bar.Mem) { _ = m.Store32(wire.HdrMagic, 0xdeadbeef) }, "magic"},
		{"zeroed", func(m *bar.Mem) { _, _ = m.WriteAt(make([]byte, 0x1000), 0) }, "magic"},
		{"future version", func(m *bar.Mem) { _ = m.Store32(wire.HdrVersion, 3) }, "version"},
		{"zero VFs", func(m *bar.Mem) { _ = m.Store32(wire.HdrNumVFs, 0) }, "VF count"},
		{"too many VFs", func(m *bar.Mem) { _ = m.Store32(wire.HdrNumVFs, 127) }, "VF count"},
		{"window not a page multiple", func(m *bar.Mem) { _ = m.Store32(wire.HdrWindowLo, 0x12345) }, "window"},
		{"DMA region too small", func(m *bar.Mem) { _ = m.Store32(wire.HdrDMASizeLo, 0x1000) }, "cannot hold"},
		{"unknown flags", func(m *bar.Mem) { _ = m.Store32(wire.HdrFlags, 0x80) }, "flags"},
		{"no DMA path", func(m *bar.Mem) { _, _ = m.WriteAt(make([]byte, 256), wire.HdrDMAPath) }, "DMA path"},
		{"v1 header", func(m *bar.Mem) { _ = m.Store32(wire.HdrVersion, 1) }, "version"},
		{"VF BAR below uar_size", func(m *bar.Mem) { _ = m.Store32(wire.HdrVFBARSizeLo, 4<<20) }, "VF BAR size"},
		{"VF BAR not a power of two", func(m *bar.Mem) { _ = m.Store32(wire.HdrVFBARSizeLo, 12<<20) }, "VF BAR size"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := writtenRegion(t, l, l.ControlSize())
			tc.mod(m)
			_, err := wire.ReadLayout(m)
			if !errors.Is(err, wire.ErrHeader) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want ErrHeader mentioning %q", err, tc.want)
			}
		})
	}
	// A region truncated below the header.
	small, _ := bar.NewMem("small", 512)
	if _, err := wire.ReadLayout(small); !errors.Is(err, wire.ErrHeader) {
		t.Fatalf("512-byte region: %v", err)
	}
}

func TestNewLayoutRejectsMisfits(t *testing.T) {
	for _, tc := range []struct {
		n      int
		window int64
	}{{0, 64 << 10}, {127, 64 << 10}, {4, 4096}, {4, 64<<10 + 1}} {
		if _, err := wire.NewLayout(tc.n, tc.window, false, 0, 0, "x"); err == nil {
			t.Errorf("NewLayout(%d, %#x) accepted", tc.n, tc.window)
		}
	}
	if _, err := wire.NewLayout(4, 64<<10, true, 0x800, 0, ""); err == nil {
		t.Error("DMA offset overlapping the header accepted")
	}
	if _, err := wire.NewLayout(4, 64<<10, false, 0, 64<<10, "x"); err == nil {
		t.Error("DMA region smaller than the windows accepted")
	}
}

// deviceMemory is a region as a PF in a guest maps it (vfio, sysfs): not
// memory of this host.
type deviceMemory struct{ *bar.Mem }

func (deviceMemory) Shared() bool { return false }

// What a PF writes through its control region reads back as Through says,
// through a file as through device memory: a restarted PF compares the
// header with l.Through(region), so a device BAR's restart is not taken for
// another layout (the futex doorbell and the owner claim are off there).
func TestLayoutReadsBackThrough(t *testing.T) {
	l, err := wire.NewLayout(2, 64<<10, true, 0x40000, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	file, err := bar.NewMem("file-like", l.ControlSize())
	if err != nil {
		t.Fatal(err)
	}
	dev, err := bar.NewMem("device", l.ControlSize())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []bar.Region{file, deviceMemory{dev}} {
		if err := l.Write(r); err != nil {
			t.Fatal(err)
		}
		got, err := wire.ReadLayout(r)
		if err != nil {
			t.Fatal(err)
		}
		if want := l.Through(r); got != want {
			t.Errorf("%s: read back %+v, want %+v", r.Name(), got, want)
		}
		if shared := r.Shared(); got.Doorbell != shared || got.OwnerClaim != shared {
			t.Errorf("%s (shared %v): doorbell %v, owner claim %v", r.Name(), shared, got.Doorbell, got.OwnerClaim)
		}
	}
}
