package bar_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/vhcrd/vhcrd/bar"
)

func TestRegisterAccessIsChecked(t *testing.T) {
	m, err := bar.NewMem("t", 64)
	if err != nil {
		t.Fatal(err)
	}
	for _, off := range []int64{-4, 61, 62, 63, 64, 1 << 40} {
		if _, err := m.Load32(off); err == nil {
			t.Errorf("Load32(%d) accepted", off)
		}
		if err := m.Store32(off, 1); err == nil {
			t.Errorf("Store32(%d) accepted", off)
		}
	}
	if _, err := m.Load32(2); !errors.Is(err, bar.ErrUnaligned) {
		t.Errorf("Load32(2): %v, want ErrUnaligned", err)
	}
	if _, err := m.Load32(64); !errors.Is(err, bar.ErrOutOfRange) {
		t.Errorf("Load32(64): %v, want ErrOutOfRange", err)
	}
	if err := m.Store32(60, 0x11223344); err != nil {
		t.Fatal(err)
	}
	b, _ := m.Bytes()
	if got := b[60:64]; got[0] != 0x11 || got[3] != 0x44 {
		t.Errorf("memory holds % x, want big-endian 11 22 33 44", got)
	}
	if v, _ := m.Load32(60); v != 0x11223344 {
		t.Errorf("Load32 = %#x", v)
	}
	if _, err := m.ReadAt(make([]byte, 8), 60); !errors.Is(err, bar.ErrOutOfRange) {
		t.Errorf("ReadAt past the end: %v", err)
	}
	m.SetReadOnly(true)
	if err := m.Store32(0, 1); !errors.Is(err, bar.ErrReadOnly) {
		t.Errorf("store to a read-only region: %v", err)
	}
	if _, err := bar.NewReg(m, 2); !errors.Is(err, bar.ErrUnaligned) {
		t.Errorf("NewReg(2): %v", err)
	}
}

func TestFileSharesMemoryAcrossMappings(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bar")
	a, created, err := bar.CreateFile(path, 8192)
	if err != nil || !created {
		t.Fatalf("create: %v created=%v", err, created)
	}
	defer a.Close()
	b, err := bar.OpenFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ra, _ := bar.NewReg(a, 4096)
	rb, _ := bar.NewReg(b, 4096)
	ra.Store(0xcafef00d)
	if got := rb.Load(); got != 0xcafef00d {
		t.Fatalf("second mapping reads %#x", got)
	}
	raw, _ := os.ReadFile(path)
	if raw[4096] != 0xca || raw[4099] != 0x0d {
		t.Fatalf("file holds % x, want big-endian", raw[4096:4100])
	}
	// Re-creating with the same size keeps the contents (a PF restart).
	c, created, err := bar.CreateFile(path, 8192)
	if err != nil || created {
		t.Fatalf("re-create: %v created=%v", err, created)
	}
	if v, _ := c.Load32(4096); v != 0xcafef00d {
		t.Errorf("contents lost across re-create: %#x", v)
	}
	c.Close()
	if _, _, err := bar.CreateFile(path, 1000); !errors.Is(err, bar.ErrBadSpec) {
		t.Errorf("size 1000: %v", err)
	}
	if err := os.WriteFile(path+"2", make([]byte, 100), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := bar.OpenFile(path+"2", false); !errors.Is(err, bar.ErrTooSmall) {
		t.Errorf("100-byte file: %v", err)
	}
	ro, err := bar.OpenFile(path, true)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if err := ro.Store32(0, 1); !errors.Is(err, bar.ErrReadOnly) {
		t.Errorf("store to a read-only mapping: %v", err)
	}
}

func TestSubViews(t *testing.T) {
	m, _ := bar.NewMem("t", 0x2000)
	v, err := bar.Sub(m, 0x1000, 0x1000)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Store32(0x10, 7); err != nil {
		t.Fatal(err)
	}
	if x, _ := m.Load32(0x1010); x != 7 {
		t.Errorf("parent reads %d", x)
	}
	if _, err := v.Load32(0x1000); !errors.Is(err, bar.ErrOutOfRange) {
		t.Errorf("view bound: %v", err)
	}
	if _, err := bar.Sub(m, 0x1000, 0x2000); !errors.Is(err, bar.ErrOutOfRange) {
		t.Errorf("view past the parent: %v", err)
	}
	v.Close()
	if _, err := m.Load32(0); err != nil {
		t.Errorf("closing a view closed the parent: %v", err)
	}
}

func TestParseSpec(t *testing.T) {
	for in, want := range map[string]bar.Spec{
		"file:/dev/shm/x":              {Scheme: "file", Path: "/dev/shm/x", Index: -1},
		"file:/x@0x1000":               {Scheme: "file", Path: "/x", Index: -1, Offset: 0x1000},
		"sysfs:0000:00:01.0#resource2": {Scheme: "sysfs", Path: "0000:00:01.0", Index: 2},
		"vfio:0000:00:01.0":            {Scheme: "vfio", Path: "0000:00:01.0", Index: -1},
		"vfio:0000:00:01.0#region2@1M": {Scheme: "vfio", Path: "0000:00:01.0", Index: 2, Offset: 1 << 20},
		"bar@64K":                      {Scheme: "bar", Index: -1, Offset: 64 << 10},
	} {
		got, err := bar.ParseSpec(in)
		if err != nil || got != want {
			t.Errorf("ParseSpec(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "file:", "nfs:/x", "sysfs:0000:00:01.0", "vfio:xyz", "file:/x@3", "vfio:0000:00:01.0#bar2", "bar@-1"} {
		if _, err := bar.ParseSpec(in); !errors.Is(err, bar.ErrBadSpec) {
			t.Errorf("ParseSpec(%q): %v, want ErrBadSpec", in, err)
		}
	}
}
