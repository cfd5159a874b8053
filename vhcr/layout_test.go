package vhcr_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/vhcr"
)

// TestWireContractGolden pins the v1 header and comm page offsets that the
// README's table documents and that VF tools of other builds rely on.
func TestWireContractGolden(t *testing.T) {
	golden := map[string][2]int64{
		"MAGIC": {vhcr.HdrMagic, 0x000}, "VERSION": {vhcr.HdrVersion, 0x004}, "NUM_VFS": {vhcr.HdrNumVFs, 0x008},
		"FLAGS": {vhcr.HdrFlags, 0x00c}, "HEADER_SIZE": {vhcr.HdrHeaderSize, 0x010}, "COMM_STRIDE": {vhcr.HdrCommStride, 0x014},
		"COMM_BASE_HI": {vhcr.HdrCommBaseHi, 0x018}, "COMM_BASE_LO": {vhcr.HdrCommBaseLo, 0x01c},
		"DMA_BASE_HI": {vhcr.HdrDMABaseHi, 0x020}, "DMA_BASE_LO": {vhcr.HdrDMABaseLo, 0x024},
		"WINDOW_HI": {vhcr.HdrWindowHi, 0x028}, "WINDOW_LO": {vhcr.HdrWindowLo, 0x02c},
		"DMA_SIZE_HI": {vhcr.HdrDMASizeHi, 0x030}, "DMA_SIZE_LO": {vhcr.HdrDMASizeLo, 0x034},
		"PF_STATE": {vhcr.HdrPFState, 0x038}, "PF_GEN": {vhcr.HdrPFGen, 0x03c},
		"DOORBELL": {vhcr.HdrDoorbell, 0x040}, "PF_SLEEPING": {vhcr.HdrPFSleeping, 0x044},
		"STATE_VERSION": {vhcr.HdrStateVer, 0x048}, "PF_STOPPED": {vhcr.HdrPFStopped, 0x04c},
		"DMA_PATH": {vhcr.HdrDMAPath, 0x080}, "VF_STATE": {vhcr.HdrVFState, 0x400},
		"slave_write": {vhcr.RegSlaveWrite, 0x0}, "slave_read": {vhcr.RegSlaveRead, 0x4},
		"CAPS": {vhcr.RegCaps, 0x8}, "FLAGS(comm)": {vhcr.RegFlags, 0xc}, "EQ_DOORBELL": {vhcr.RegEQDoorbell, 0x800},
	}
	for name, g := range golden {
		if g[0] != g[1] {
			t.Errorf("%s at %#x, the wire contract says %#x", name, g[0], g[1])
		}
	}
	if vhcr.Magic != 0x56484352 || vhcr.LayoutVersion != 1 || vhcr.HeaderSize != 0x1000 || vhcr.CommPageSize != 0x1000 {
		t.Error("magic, version, header size or comm page size changed")
	}
	if vhcr.ToggleBit != 1<<31 || vhcr.InternalErrBit != 1<<17 || vhcr.CapsVFReset != 1<<30 ||
		vhcr.FlagsOffline != 1<<9 || vhcr.FlagsResetReq != 1<<16 || vhcr.FlagsResetAck != 1<<8 || vhcr.CommVersion != 0x0101 {
		t.Error("comm register bits changed")
	}
	l, err := vhcr.NewLayout(8, 1<<20, false, 0, 0, "/dev/shm/x")
	if err != nil {
		t.Fatal(err)
	}
	if l.CommPage(3) != 0x4000 || l.BARSize() != 0x9000 || l.DMASize != 8<<20 {
		t.Errorf("layout: comm page 3 at %#x, BAR %#x, DMA %#x", l.CommPage(3), l.BARSize(), l.DMASize)
	}
	in, err := vhcr.NewLayout(2, 64<<10, true, 0, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	if in.DMABase != 0x3000 || in.BARSize() != 0x3000+2*(64<<10) {
		t.Errorf("DMA in BAR: base %#x, BAR size %#x", in.DMABase, in.BARSize())
	}
}

func writtenRegion(t *testing.T, l vhcr.Layout, size int64) *bar.Mem {
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
	l, _ := vhcr.NewLayout(4, 64<<10, false, 0, 0, "/dev/shm/dma")
	good := writtenRegion(t, l, l.BARSize())
	if got, err := vhcr.ReadLayout(good); err != nil || got != l {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	for _, tc := range []struct {
		name string
		mod  func(m *bar.Mem)
		want string
	}{
		{"garbled magic", func(m *bar.Mem) { _ = m.Store32(vhcr.HdrMagic, 0xdeadbeef) }, "magic"},
		{"zeroed", func(m *bar.Mem) { _, _ = m.WriteAt(make([]byte, 0x1000), 0) }, "magic"},
		{"future version", func(m *bar.Mem) { _ = m.Store32(vhcr.HdrVersion, 2) }, "version"},
		{"zero VFs", func(m *bar.Mem) { _ = m.Store32(vhcr.HdrNumVFs, 0) }, "VF count"},
		{"too many VFs", func(m *bar.Mem) { _ = m.Store32(vhcr.HdrNumVFs, 127) }, "VF count"},
		{"VFs beyond the file", func(m *bar.Mem) { _ = m.Store32(vhcr.HdrNumVFs, 100) }, "truncated"},
		{"window not a page multiple", func(m *bar.Mem) { _ = m.Store32(vhcr.HdrWindowLo, 0x12345) }, "window"},
		{"DMA region too small", func(m *bar.Mem) { _ = m.Store32(vhcr.HdrDMASizeLo, 0x1000) }, "cannot hold"},
		{"unknown flags", func(m *bar.Mem) { _ = m.Store32(vhcr.HdrFlags, 0x80) }, "flags"},
		{"no DMA path", func(m *bar.Mem) { _, _ = m.WriteAt(make([]byte, 256), vhcr.HdrDMAPath) }, "DMA path"},
		{"comm stride", func(m *bar.Mem) { _ = m.Store32(vhcr.HdrCommStride, 0x800) }, "comm pages"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := writtenRegion(t, l, l.BARSize())
			tc.mod(m)
			_, err := vhcr.ReadLayout(m)
			if !errors.Is(err, vhcr.ErrHeader) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want ErrHeader mentioning %q", err, tc.want)
			}
		})
	}
	// A region truncated below the header.
	small, _ := bar.NewMem("small", 512)
	if _, err := vhcr.ReadLayout(small); !errors.Is(err, vhcr.ErrHeader) {
		t.Fatalf("512-byte region: %v", err)
	}
	// A region truncated below its comm pages.
	trunc := writtenRegion(t, l, 0x3000)
	if _, err := vhcr.ReadLayout(trunc); !errors.Is(err, vhcr.ErrHeader) || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("truncated region: %v", err)
	}
}

func TestNewLayoutRejectsMisfits(t *testing.T) {
	for _, tc := range []struct {
		n      int
		window int64
	}{{0, 64 << 10}, {127, 64 << 10}, {4, 4096}, {4, 64<<10 + 1}} {
		if _, err := vhcr.NewLayout(tc.n, tc.window, false, 0, 0, "x"); err == nil {
			t.Errorf("NewLayout(%d, %#x) accepted", tc.n, tc.window)
		}
	}
	if _, err := vhcr.NewLayout(4, 64<<10, true, 0x2000, 0, ""); err == nil {
		t.Error("DMA offset overlapping the comm pages accepted")
	}
	if _, err := vhcr.NewLayout(4, 64<<10, false, 0, 64<<10, "x"); err == nil {
		t.Error("DMA region smaller than the windows accepted")
	}
}
