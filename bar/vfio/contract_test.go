package vfio_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/bar/vfio"
	"github.com/vhcrd/vhcrd/bar/vfio/vfiotest"
)

// The bar.Region contract, as bar.File keeps it, for every kind of vfio
// region: mapped whole, reached by pread/pwrite only, and sparse.
func TestRegionContract(t *testing.T) {
	const size = 64 << 10
	for _, c := range []struct {
		name   string
		region vfiotest.Region
		mapped bool
	}{
		{"mmap", vfiotest.Region{Index: 2, Size: size}, true},
		{"pread", vfiotest.Region{Index: 2, Size: size, Flags: vfio.VFIO_REGION_INFO_FLAG_READ | vfio.VFIO_REGION_INFO_FLAG_WRITE}, false},
		{"sparse", vfiotest.Region{Index: 2, Size: size, Sparse: []vfio.Area{{Offset: 0, Size: 0x2000}, {Offset: 0x8000, Size: 0x8000}}}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			k := vfiotest.New(t)
			dev := k.AddDevice(vfiotest.Device{Addr: addr, Group: 1, Regions: []vfiotest.Region{c.region}})
			r, d, err := vfio.OpenRegion(addr, 2, k.Options()...)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			mem := dev.Mem(2)
			if r.Size() != size || r.ReadOnly() || r.Shared() {
				t.Fatalf("size %d ro %v shared %v", r.Size(), r.ReadOnly(), r.Shared())
			}
			for _, off := range []int64{-4, size - 2, size, 1 << 40} {
				if _, err := r.Load32(off); !errors.Is(err, bar.ErrOutOfRange) {
					t.Errorf("Load32(%#x): %v, want ErrOutOfRange", off, err)
				}
				if err := r.Store32(off, 1); !errors.Is(err, bar.ErrOutOfRange) {
					t.Errorf("Store32(%#x): %v, want ErrOutOfRange", off, err)
				}
			}
			for _, off := range []int64{1, 2, 0x3002} {
				if _, err := r.Load32(off); !errors.Is(err, bar.ErrUnaligned) {
					t.Errorf("Load32(%#x): %v, want ErrUnaligned", off, err)
				}
			}
			// Every word of the region, mapped or not, is big-endian in
			// device memory.
			for _, off := range []int64{0, 0x1ffc, 0x2000, 0x7ffc, 0x8000, size - 4} {
				v := uint32(0xa0000000) | uint32(off)
				if err := r.Store32(off, v); err != nil {
					t.Fatal(err)
				}
				if got := binary.BigEndian.Uint32(mem[off:]); got != v {
					t.Errorf("word %#x: device holds %#x, want %#x", off, got, v)
				}
				if got, err := r.Load32(off); err != nil || got != v {
					t.Errorf("Load32(%#x) = %#x, %v", off, got, err)
				}
			}
			p := bytes.Repeat([]byte("vhcrd!"), 0x1800) // 0x1000..0xa000: mapped, hole, mapped
			if n, err := r.WriteAt(p, 0x1000); err != nil || n != len(p) {
				t.Fatalf("WriteAt: %d %v", n, err)
			}
			if !bytes.Equal(mem[0x1000:0x1000+len(p)], p) {
				t.Error("WriteAt did not reach device memory")
			}
			q := make([]byte, len(p))
			if n, err := r.ReadAt(q, 0x1000); err != nil || n != len(q) || !bytes.Equal(p, q) {
				t.Fatalf("ReadAt: %d %v", n, err)
			}
			if _, err := r.ReadAt(make([]byte, 8), size-4); !errors.Is(err, bar.ErrOutOfRange) {
				t.Errorf("ReadAt past the end: %v", err)
			}
			if _, err := r.WriteAt(make([]byte, 8), -1); !errors.Is(err, bar.ErrOutOfRange) {
				t.Errorf("WriteAt before the start: %v", err)
			}
			b, err := r.Bytes()
			if c.mapped != (err == nil) || (!c.mapped && !errors.Is(err, bar.ErrNotMapped)) {
				t.Errorf("Bytes: %d bytes, %v (mapped %v)", len(b), err, c.mapped)
			}
			v, err := bar.Sub(r, size-0x1000, 0x1000)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := v.Load32(0xffc); err != nil || got != 0xa0000000|(size-4) {
				t.Errorf("view Load32 = %#x, %v", got, err)
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			for _, err := range []error{
				func() error { _, err := r.Load32(0); return err }(),
				r.Store32(0, 1),
				func() error { _, err := r.ReadAt(q[:4], 0); return err }(),
				func() error { _, err := r.Bytes(); return err }(),
			} {
				if !errors.Is(err, bar.ErrClosed) {
					t.Errorf("after Close: %v, want ErrClosed", err)
				}
			}
			if err := r.Close(); err != nil {
				t.Errorf("second Close: %v", err)
			}
		})
	}
}

// A region without the write flag is read-only like a read-only bar.File.
func TestReadOnlyRegion(t *testing.T) {
	k := vfiotest.New(t)
	k.AddDevice(vfiotest.Device{Addr: addr, Group: 1, Regions: []vfiotest.Region{
		{Index: 2, Size: 4096, Flags: vfio.VFIO_REGION_INFO_FLAG_READ | vfio.VFIO_REGION_INFO_FLAG_MMAP},
	}})
	r, d, err := vfio.OpenRegion(addr, 2, k.Options()...)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if !r.ReadOnly() {
		t.Fatal("not read-only")
	}
	if err := r.Store32(0, 1); !errors.Is(err, bar.ErrReadOnly) {
		t.Errorf("Store32: %v", err)
	}
	if _, err := r.WriteAt([]byte{1}, 0); !errors.Is(err, bar.ErrReadOnly) {
		t.Errorf("WriteAt: %v", err)
	}
	if _, err := r.Load32(0); err != nil {
		t.Error(err)
	}
}
