package sysfs_test

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/bar/pci"
	"github.com/vhcrd/vhcrd/bar/pci/pcitest"
	"github.com/vhcrd/vhcrd/bar/sysfs"
)

const addr = "0000:00:01.0"

func tree(t *testing.T) *pcitest.Tree {
	tr := pcitest.New(t)
	tr.Add(pcitest.Dev{Addr: addr, Vendor: 0x1af4, Device: 0x1110, Group: 1, BARs: []pcitest.BAR{
		{Index: 0, Size: 256, File: true},
		{Index: 1, Size: 32, Flags: pci.IORESOURCE_IO},
		{Index: 2, Size: 64 << 10, Flags: pci.IORESOURCE_MEM | pci.IORESOURCE_MEM_64 | pci.IORESOURCE_PREFETCH, File: true},
		{Index: 3, Size: 8 << 10, Flags: pci.IORESOURCE_MEM | pci.IORESOURCE_READONLY, File: true},
		{Index: 4, Size: 1 << 20, File: true},
	}})
	return tr
}

func TestOpenMapsTheResourceFile(t *testing.T) {
	tr := tree(t)
	r, err := sysfs.Open(tr.Root, "00:01.0", 2)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Name() != "sysfs:0000:00:01.0#resource2" || r.Size() != 64<<10 || r.Shared() || r.ReadOnly() {
		t.Fatalf("%s size %d shared %v ro %v", r.Name(), r.Size(), r.Shared(), r.ReadOnly())
	}
	if err := r.Store32(0x100, 0xc0ffee01); err != nil {
		t.Fatal(err)
	}
	// The store reached the file, big-endian.
	data, err := os.ReadFile(filepath.Join(tr.Dir(addr), "resource2"))
	if err != nil {
		t.Fatal(err)
	}
	if got := binary.BigEndian.Uint32(data[0x100:]); got != 0xc0ffee01 {
		t.Fatalf("file word %#x", got)
	}
	if v, err := r.Load32(0x100); err != nil || v != 0xc0ffee01 {
		t.Fatalf("Load32 %#x %v", v, err)
	}
	if _, err := r.WriteAt([]byte("hello"), 0x200); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := r.ReadAt(buf, 0x200); err != nil || string(buf) != "hello" {
		t.Fatalf("ReadAt %q %v", buf, err)
	}
	g, err := bar.NewReg(r, 0x100)
	if err != nil || g.Load() != 0xc0ffee01 {
		t.Fatalf("NewReg: %v", err)
	}
	for _, c := range []struct {
		off  int64
		want error
	}{{-4, bar.ErrOutOfRange}, {64<<10 - 2, bar.ErrOutOfRange}, {64 << 10, bar.ErrOutOfRange}, {2, bar.ErrUnaligned}} {
		if _, err := r.Load32(c.off); !errors.Is(err, c.want) {
			t.Errorf("Load32(%#x): %v, want %v", c.off, err, c.want)
		}
		if err := r.Store32(c.off, 1); !errors.Is(err, c.want) {
			t.Errorf("Store32(%#x): %v, want %v", c.off, err, c.want)
		}
	}
	if _, err := r.ReadAt(make([]byte, 8), 64<<10-4); !errors.Is(err, bar.ErrOutOfRange) {
		t.Errorf("ReadAt past the end: %v", err)
	}
	v, err := bar.Sub(r, 0x100, 0x100)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := v.Load32(0); err != nil || got != 0xc0ffee01 {
		t.Errorf("view Load32 = %#x, %v", got, err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Load32(0); !errors.Is(err, bar.ErrClosed) {
		t.Fatalf("after close: %v", err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestSmallBAR(t *testing.T) {
	r, err := sysfs.Open(tree(t).Root, addr, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Size() != 256 {
		t.Fatalf("size %d", r.Size())
	}
	if err := r.Store32(252, 1); err != nil {
		t.Fatal(err)
	}
}

func TestReadOnlyBAR(t *testing.T) {
	r, err := sysfs.Open(tree(t).Root, addr, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if !r.ReadOnly() {
		t.Fatal("not read-only")
	}
	if err := r.Store32(0, 1); !errors.Is(err, bar.ErrReadOnly) {
		t.Fatalf("Store32: %v", err)
	}
}

func TestBadInput(t *testing.T) {
	tr := tree(t)
	// resource4 is shorter than the BAR the resource file announces.
	if err := os.Truncate(filepath.Join(tr.Dir(addr), "resource4"), 4096); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		bdf   string
		index int
		want  error
		say   string
	}{
		{"no such device", "0000:00:09.0", 2, pci.ErrNoDevice, "vhcrd devices"},
		{"bad address", "nonsense", 2, pci.ErrBadAddress, "0000:00:01.0"},
		{"no such BAR", addr, 5, pci.ErrNoResource, "BAR 5"},
		{"io BAR", addr, 1, bar.ErrNotSupported, "vfio:0000:00:01.0#region1"},
		{"file smaller than BAR", addr, 4, bar.ErrTooSmall, "resource4"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := sysfs.Open(tr.Root, c.bdf, c.index)
			if err == nil {
				r.Close()
				t.Fatal("no error")
			}
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.say) {
				t.Fatalf("err = %v, want %v mentioning %q", err, c.want, c.say)
			}
		})
	}
}
