package vfio_test

import (
	"encoding/binary"
	"errors"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/bar/pci"
	"github.com/vhcrd/vhcrd/bar/vfio"
	"github.com/vhcrd/vhcrd/bar/vfio/vfiotest"
)

const addr = "0000:00:01.0"

// ivshmem adds a device like QEMU's ivshmem-plain: BAR0 256 B of
// registers, BAR2 1 MiB of shared memory.
func ivshmem(k *vfiotest.Kernel, extra ...vfiotest.Region) *vfiotest.Device {
	return k.AddDevice(vfiotest.Device{Addr: addr, Group: 1, Regions: append([]vfiotest.Region{
		{Index: 0, Size: 256, Flags: vfio.VFIO_REGION_INFO_FLAG_READ | vfio.VFIO_REGION_INFO_FLAG_WRITE},
		{Index: 2, Size: 1 << 20},
	}, extra...)})
}

func TestOpenRegionMapsBAR(t *testing.T) {
	k := vfiotest.New(t)
	dev := ivshmem(k)
	r, d, err := vfio.OpenRegion(addr, 2, k.Options()...)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Mode() != vfio.Group || d.IOMMUGroup() != 1 || d.Info().Flags&vfio.VFIO_DEVICE_FLAGS_PCI == 0 || d.Info().NumRegions != 9 {
		t.Fatalf("device: mode %v group %d info %+v", d.Mode(), d.IOMMUGroup(), d.Info())
	}
	if r.Name() != "vfio:0000:00:01.0#region2" || r.Size() != 1<<20 || r.Shared() || r.ReadOnly() {
		t.Fatalf("%s size %d shared %v", r.Name(), r.Size(), r.Shared())
	}
	if err := r.Store32(0x1000, 0xc0ffee01); err != nil {
		t.Fatal(err)
	}
	if got := binary.BigEndian.Uint32(dev.Mem(2)[0x1000:]); got != 0xc0ffee01 {
		t.Fatalf("device sees %#x", got)
	}
	binary.BigEndian.PutUint32(dev.Mem(2)[0x2000:], 0x600df00d)
	if v, err := r.Load32(0x2000); err != nil || v != 0x600df00d {
		t.Fatalf("Load32 = %#x, %v", v, err)
	}
	b, err := r.Bytes()
	if err != nil || len(b) != 1<<20 {
		t.Fatalf("Bytes: %d %v", len(b), err)
	}
	g, err := bar.NewReg(r, 0x2000)
	if err != nil || g.Load() != 0x600df00d {
		t.Fatalf("NewReg: %v", err)
	}
	if c := k.Counts(); c.Mmaps != 1 || c.Preads+c.Pwrites != 0 {
		t.Fatalf("counts %+v: want one mmap and no pread/pwrite", c)
	}
	for _, off := range []int64{-4, 1, 1 << 20} {
		if _, err := r.Load32(off); err == nil {
			t.Errorf("Load32(%#x) succeeded", off)
		}
	}
	if err := d.Reset(); err != nil {
		t.Fatal(err)
	}
	if err := k.Leaks(); err == nil {
		t.Fatal("leak check sees nothing while the device is open")
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := k.Leaks(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Load32(0); !errors.Is(err, bar.ErrClosed) {
		t.Fatalf("after close: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal("second close:", err)
	}
}

func TestType1Only(t *testing.T) {
	k := vfiotest.New(t)
	k.Type1v2 = false
	ivshmem(k)
	_, d, err := vfio.OpenRegion(addr, 2, k.Options()...)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	k.Type1 = false
	_, _, err = vfio.OpenRegion("0000:00:02.0", 2, k.Options()...)
	if err == nil {
		t.Fatal("no error")
	}
}

func TestNoIOMMUBackend(t *testing.T) {
	k := vfiotest.New(t)
	k.Type1, k.Type1v2 = false, false
	ivshmem(k)
	_, _, err := vfio.OpenRegion(addr, 2, k.Options()...)
	if !errors.Is(err, vfio.ErrNoIOMMU) || !strings.Contains(err.Error(), "vfio_iommu_type1") {
		t.Fatalf("err = %v", err)
	}
}

func TestCdev(t *testing.T) {
	k := vfiotest.New(t)
	dev := k.AddDevice(vfiotest.Device{Addr: addr, Group: 1, Cdev: "vfio0", Regions: []vfiotest.Region{{Index: 2, Size: 64 << 10}}})
	r, d, err := vfio.OpenRegion(addr, 2, k.Options()...)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Mode() != vfio.Cdev {
		t.Fatalf("mode %v", d.Mode())
	}
	if err := r.Store32(8, 0x12345678); err != nil {
		t.Fatal(err)
	}
	if got := binary.BigEndian.Uint32(dev.Mem(2)[8:]); got != 0x12345678 {
		t.Fatalf("device sees %#x", got)
	}
	buf := pages(t, 2)
	if err := d.MapDMA(buf, 0x10000000, true); err != nil {
		t.Fatal(err)
	}
	if n, err := d.UnmapDMA(0x10000000, uint64(len(buf))); err != nil || n != uint64(len(buf)) {
		t.Fatalf("unmap %d %v", n, err)
	}
	// A second opener of the same cdev, and of its group, is refused.
	if _, _, err := vfio.OpenRegion(addr, 2, k.Options()...); !errors.Is(err, vfio.ErrBusy) {
		t.Fatalf("second cdev opener: %v", err)
	}
	if _, _, err := vfio.OpenRegion(addr, 2, k.Options(vfio.WithMode(vfio.Group))...); !errors.Is(err, vfio.ErrBusy) {
		t.Fatalf("group opener while the cdev is open: %v", err)
	}
}

func pages(t *testing.T, n int) []byte {
	b, err := unix.Mmap(-1, 0, n*4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(b) })
	return b
}

func TestDMA(t *testing.T) {
	k := vfiotest.New(t)
	ivshmem(k)
	d, err := vfio.Open(addr, k.Options()...)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if ps, err := d.Container().IOMMUPageSizes(); err != nil || ps&4096 == 0 {
		t.Fatalf("IOMMU page sizes %#x: %v", ps, err)
	}
	buf := pages(t, 4)
	if err := d.MapDMA(buf, 0x10000000, true); err != nil {
		t.Fatal(err)
	}
	if err := d.MapDMA(buf[:4096], 0x10001000, false); !errors.Is(err, unix.EEXIST) {
		t.Fatalf("overlapping map: %v", err)
	}
	if err := d.MapDMA(buf[1:4097], 0x20000000, false); !errors.Is(err, unix.EINVAL) {
		t.Fatalf("unaligned map: %v", err)
	}
	if n, err := d.UnmapDMA(0x10000000, uint64(len(buf))); err != nil || n != uint64(len(buf)) {
		t.Fatalf("unmap: %d %v", n, err)
	}
	if c := k.Counts(); c.MapDMA != 1 || c.UnmapDMA != 1 {
		t.Fatalf("counts %+v", c)
	}
}

// The fake refuses DMA mapping on a container without an IOMMU, as the
// kernel does; the error says what is missing.
func TestDMAWithoutIOMMU(t *testing.T) {
	k := vfiotest.New(t)
	c, err := vfio.OpenContainer(k, vfiotest.DevRoot+"/vfio/vfio")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = c.MapDMA(pages(t, 1), 0, true)
	if !errors.Is(err, vfio.ErrNoIOMMU) || !strings.Contains(err.Error(), "VFIO_SET_IOMMU") {
		t.Fatalf("err = %v", err)
	}
	if _, err := c.IOMMUPageSizes(); !errors.Is(err, unix.EINVAL) {
		t.Fatalf("GET_INFO without an IOMMU: %v", err)
	}
	if err := c.SetIOMMU(vfio.VFIO_TYPE1v2_IOMMU); !errors.Is(err, unix.EINVAL) {
		t.Fatalf("SET_IOMMU without a group: %v", err)
	}
}

func TestSparseRegion(t *testing.T) {
	k := vfiotest.New(t)
	dev := k.AddDevice(vfiotest.Device{Addr: addr, Group: 1, Regions: []vfiotest.Region{
		// An MSI-X table at 0x3000 is not mmappable.
		{Index: 0, Size: 64 << 10, Sparse: []vfio.Area{{Offset: 0x4000, Size: 0xc000}, {Offset: 0, Size: 0x3000}}},
	}})
	r, d, err := vfio.OpenRegion(addr, 0, k.Options()...)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ri := r.Info()
	if len(ri.Sparse) != 2 || ri.Sparse[0] != (vfio.Area{Offset: 0, Size: 0x3000}) || len(ri.Caps) != 2 || ri.Caps[0] != vfio.VFIO_REGION_INFO_CAP_TYPE {
		t.Fatalf("info %+v", ri)
	}
	if c := k.Counts(); c.Mmaps != 2 {
		t.Fatalf("counts %+v", c)
	}
	if err := r.Store32(0x100, 1); err != nil {
		t.Fatal(err)
	}
	if err := r.Store32(0x3008, 0xabcdef01); err != nil {
		t.Fatal(err)
	}
	if v, err := r.Load32(0x3008); err != nil || v != 0xabcdef01 {
		t.Fatalf("hole Load32 %#x %v", v, err)
	}
	if got := binary.BigEndian.Uint32(dev.Mem(0)[0x3008:]); got != 0xabcdef01 {
		t.Fatalf("device sees %#x", got)
	}
	if c := k.Counts(); c.Preads != 1 || c.Pwrites != 1 {
		t.Fatalf("counts %+v: want one pread and one pwrite for the hole", c)
	}
	// A read across mapped, hole and mapped parts.
	for i := range dev.Mem(0)[0x2ff0:0x4010] {
		dev.Mem(0)[0x2ff0+i] = byte(i)
	}
	p := make([]byte, 0x1020)
	if n, err := r.ReadAt(p, 0x2ff0); err != nil || n != len(p) {
		t.Fatalf("ReadAt %d %v", n, err)
	}
	for i := range p {
		if p[i] != byte(i) {
			t.Fatalf("byte %#x = %#x", i, p[i])
		}
	}
	if _, err := r.Bytes(); !errors.Is(err, bar.ErrNotMapped) {
		t.Fatalf("Bytes: %v", err)
	}
	if _, err := bar.NewReg(r, 0x100); !errors.Is(err, bar.ErrNotMapped) {
		t.Fatalf("NewReg: %v", err)
	}
	// The fake kernel refuses a mapping of the hole.
	if _, err := k.Mmap(d.FD(), int64(ri.Offset)+0x3000, 0x1000, unix.PROT_READ, unix.MAP_SHARED); !errors.Is(err, unix.EINVAL) {
		t.Fatalf("mmap of the hole: %v", err)
	}
}

func TestNotMappableRegion(t *testing.T) {
	k := vfiotest.New(t)
	dev := ivshmem(k)
	r, d, err := vfio.OpenRegion(addr, 0, k.Options()...)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := r.Store32(0x10, 0xfeedbeef); err != nil {
		t.Fatal(err)
	}
	if got := binary.BigEndian.Uint32(dev.Mem(0)[0x10:]); got != 0xfeedbeef {
		t.Fatalf("device sees %#x", got)
	}
	if v, err := r.Load32(0x10); err != nil || v != 0xfeedbeef {
		t.Fatalf("Load32 %#x %v", v, err)
	}
	if _, err := r.WriteAt([]byte{1, 2, 3}, 0x20); err != nil {
		t.Fatal(err)
	}
	if c := k.Counts(); c.Mmaps != 0 || c.Pwrites != 2 || c.Preads != 1 {
		t.Fatalf("counts %+v", c)
	}
	_, err = r.Bytes()
	if !errors.Is(err, bar.ErrNotMapped) || !strings.Contains(err.Error(), "pread/pwrite") {
		t.Fatalf("Bytes: %v", err)
	}
	if _, err := bar.NewReg(r, 0); !errors.Is(err, bar.ErrNotMapped) {
		t.Fatalf("NewReg: %v", err)
	}
	if _, err := k.Mmap(d.FD(), int64(r.Info().Offset), 4096, unix.PROT_READ, unix.MAP_SHARED); !errors.Is(err, unix.EINVAL) {
		t.Fatalf("fake allowed mmap of a non-mmappable region: %v", err)
	}
}

func TestBadInput(t *testing.T) {
	for _, c := range []struct {
		name  string
		setup func(k *vfiotest.Kernel)
		opts  []vfio.Option
		index int
		want  error
		say   []string
	}{
		{name: "no such device", setup: func(k *vfiotest.Kernel) {}, index: 2, want: pci.ErrNoDevice, say: []string{addr, "vhcrd devices"}},
		{name: "bound to another driver", setup: func(k *vfiotest.Kernel) {
			k.AddDevice(vfiotest.Device{Addr: addr, Group: 1, Driver: "e1000e", Regions: []vfiotest.Region{{Index: 2, Size: 4096}}})
		}, index: 2, want: pci.ErrNotBound, say: []string{"e1000e", "vhcrd bind " + addr}},
		{name: "group not viable", setup: func(k *vfiotest.Kernel) {
			ivshmem(k)
			k.AddDevice(vfiotest.Device{Addr: "0000:00:02.0", Group: 1, Driver: "e1000e"})
		}, index: 2, want: vfio.ErrNotViable, say: []string{"group 1", "0000:00:02.0: e1000e"}},
		{name: "no IOMMU group", setup: func(k *vfiotest.Kernel) {
			k.AddDevice(vfiotest.Device{Addr: addr, Group: -1, Regions: []vfiotest.Region{{Index: 2, Size: 4096}}})
		}, index: 2, want: pci.ErrNoIOMMU, say: []string{"intel_iommu=on"}},
		{name: "vfio module missing", setup: func(k *vfiotest.Kernel) { ivshmem(k); k.Loaded = false }, index: 2, want: vfio.ErrNoVFIO, say: []string{"modprobe vfio-pci", "vhcrd bind"}},
		{name: "region too small", setup: func(k *vfiotest.Kernel) { ivshmem(k) }, opts: []vfio.Option{vfio.WithMinSize(2 << 20)}, index: 2, want: bar.ErrTooSmall, say: []string{"region2", "2097152"}},
		{name: "region not implemented", setup: func(k *vfiotest.Kernel) { ivshmem(k) }, index: 1, want: bar.ErrNotSupported, say: []string{"region1"}},
		{name: "region index out of range", setup: func(k *vfiotest.Kernel) { ivshmem(k) }, index: 12, want: bar.ErrOutOfRange, say: []string{"9 regions"}},
		{name: "cdev forced without one", setup: func(k *vfiotest.Kernel) { ivshmem(k) }, opts: []vfio.Option{vfio.WithMode(vfio.Cdev)}, index: 2, want: vfio.ErrNoVFIO, say: []string{"group path"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			k := vfiotest.New(t)
			c.setup(k)
			r, d, err := vfio.OpenRegion(addr, c.index, k.Options(c.opts...)...)
			if err == nil {
				r.Close()
				d.Close()
				t.Fatal("no error")
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
			for _, s := range c.say {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
			// The leak check at cleanup proves the error path closed
			// every fd it opened.
		})
	}
}

func TestSecondOpener(t *testing.T) {
	k := vfiotest.New(t)
	ivshmem(k)
	_, d, err := vfio.OpenRegion(addr, 2, k.Options()...)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = vfio.OpenRegion(addr, 2, k.Options()...)
	if !errors.Is(err, vfio.ErrBusy) || !strings.Contains(err.Error(), "/vfio/1") {
		t.Fatalf("second opener: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	// Once the first is closed, the group can be opened again.
	_, d, err = vfio.OpenRegion(addr, 2, k.Options()...)
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
}

// Closing a region leaves the device open; closing the device closes the
// regions still open.
func TestRegionLifetime(t *testing.T) {
	k := vfiotest.New(t)
	ivshmem(k)
	d, err := vfio.Open(addr, k.Options()...)
	if err != nil {
		t.Fatal(err)
	}
	r0, err := d.Region(0)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := d.Region(2)
	if err != nil {
		t.Fatal(err)
	}
	if err := r2.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r2.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := r0.Load32(0); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := r0.Load32(0); !errors.Is(err, bar.ErrClosed) {
		t.Fatalf("region after device close: %v", err)
	}
}

// The real kernel, where it is reachable: skipped unless VHCRD_VFIO_BDF names a
// device bound to vfio-pci (the VM tier runs the real path end to end).
func TestRealDevice(t *testing.T) {
	bdf := os.Getenv("VHCRD_VFIO_BDF")
	if bdf == "" {
		t.Skip("VHCRD_VFIO_BDF not set: no real vfio-pci device to test")
	}
	r, d, err := vfio.OpenRegion(bdf, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := r.Load32(0); err != nil {
		t.Fatal(err)
	}
}

// Checked accesses to mapped registers allocate nothing.
func TestAccessAllocs(t *testing.T) {
	k := vfiotest.New(t)
	ivshmem(k)
	r, d, err := vfio.OpenRegion(addr, 2, k.Options()...)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if n := testing.AllocsPerRun(100, func() {
		r.Store32(0x40, 1)
		r.Load32(0x40)
	}); n != 0 {
		t.Fatalf("%v allocations per Load32+Store32", n)
	}
}
