package dma_test

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/dma"
)

// sized is a region that claims size bytes without backing them: enough
// for translation, which never touches memory.
type sized struct {
	bar.Region
	size int64
}

func (s sized) Size() int64            { return s.size }
func (s sized) Bytes() ([]byte, error) { return nil, bar.ErrNotMapped }

func guestWindow(t testing.TB, ram bar.Region) *dma.Window {
	t.Helper()
	m, _ := bar.NewMem("dma", 3*0x4000)
	s, err := dma.NewSpace(m, 0, 0x4000, 3)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.UseGuestRAM(1, ram); err != nil {
		t.Fatal(err)
	}
	w, _ := s.Window(1)
	return w
}

// q35's rule (pc_q35_init): below 0xb0000000 bytes all RAM is below 4 GiB;
// from there, 2 GiB below and the rest at 4 GiB.
func TestQ35Low(t *testing.T) {
	for _, tc := range []struct{ ram, low int64 }{
		{512 << 20, 512 << 20}, {0xb0000000 - 4096, 0xb0000000 - 4096}, {0xb0000000, 2 << 30}, {8 << 30, 2 << 30},
	} {
		if got := dma.Q35Low(tc.ram); got != tc.low {
			t.Errorf("Q35Low(%#x) = %#x, want %#x", tc.ram, got, tc.low)
		}
	}
}

// A guest below the split: IOVA = GPA = file offset, up to the RAM's end.
func TestGuestRAMBelowSplit(t *testing.T) {
	mem, _ := bar.NewMem("ram", 1<<20)
	w := guestWindow(t, mem)
	if off, err := w.Translate(0xff000, 0x1000, dma.Write); err != nil || off != 0xff000 {
		t.Fatalf("last page: %#x, %v", off, err)
	}
	for _, iova := range []uint64{0x100000, dma.GPA4G, math.MaxUint64 - 8} {
		if _, err := w.Translate(iova, 8, dma.Read); !errors.Is(err, dma.ErrOutOfWindow) && !errors.Is(err, dma.ErrOverflow) {
			t.Errorf("iova %#x: %v, want a DMA fault", iova, err)
		}
	}
	if err := w.CopyOut(0x2000, []byte("vhcr")); err != nil {
		t.Fatal(err)
	}
	raw, _ := mem.Bytes()
	if !bytes.Equal(raw[0x2000:0x2004], []byte("vhcr")) {
		t.Fatal("CopyOut did not land at the GPA's file offset")
	}
}

// A guest above the split: [0, 2 GiB) at file offset 0, [4 GiB, 4 GiB +
// RAM - 2 GiB) at file offset 2 GiB; the hole and the end are DMA faults.
// The RAM is a sparse 3 GiB file, mapped: the pages touched are the only
// ones allocated.
func TestGuestRAMAboveSplit(t *testing.T) {
	dir := t.TempDir()
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		dir = "/dev/shm"
	}
	path := filepath.Join(dir, "vhcrd-guest-ram-test-"+filepath.Base(t.TempDir()))
	ram, _, err := bar.CreateFileLazy(path, 3<<30)
	if err != nil {
		t.Skipf("no room for a sparse 3 GiB mapping: %v", err)
	}
	t.Cleanup(func() { ram.Close(); os.Remove(path) })
	w := guestWindow(t, ram)
	if w.Size() != dma.GPA4G+1<<30 {
		t.Fatalf("IOVA space ends at %#x", w.Size())
	}
	for _, tc := range []struct {
		iova uint64
		n    int
		off  int64 // -1: a fault
	}{
		{0, 4096, 0},
		{2<<30 - 4096, 4096, 2<<30 - 4096},
		{2<<30 - 8, 16, -1}, // into the hole
		{2 << 30, 8, -1},
		{3 << 30, 8, -1},
		{dma.GPA4G - 8, 16, -1}, // from the hole into high RAM
		{dma.GPA4G, 4096, 2 << 30},
		{dma.GPA4G + 1<<30 - 4096, 4096, 3<<30 - 4096},
		{dma.GPA4G + 1<<30 - 8, 16, -1}, // past the end
		{dma.GPA4G + 1<<30, 8, -1},
	} {
		off, err := w.Translate(tc.iova, tc.n, dma.Read)
		if tc.off < 0 {
			if !errors.Is(err, dma.ErrOutOfWindow) {
				t.Errorf("iova %#x len %d: %#x, %v, want ErrOutOfWindow", tc.iova, tc.n, off, err)
			}
			continue
		}
		if err != nil || off != tc.off {
			t.Errorf("iova %#x len %d: %#x, %v, want %#x", tc.iova, tc.n, off, err, tc.off)
		}
	}
	// A mailbox in high RAM is the page at file offset 2 GiB + (GPA - 4 GiB),
	// mapped or copied.
	mb, err := w.Mailbox(dma.GPA4G+0x3000, dma.ReadWrite)
	if err != nil {
		t.Fatal(err)
	}
	if err := mb.CopyOut(8, []byte("high")); err != nil {
		t.Fatal(err)
	}
	var got [4]byte
	if _, err := ram.ReadAt(got[:], 2<<30+0x3008); err != nil || string(got[:]) != "high" {
		t.Fatalf("file offset 2G+0x3008: %q, %v", got, err)
	}
	if p := mb.Mapped(); p == nil || string(p[8:12]) != "high" {
		t.Fatal("the mapped page is not the file's")
	}
}

// FuzzTranslateGuest: for a q35 guest of either kind, a translation that
// succeeds lands inside the RAM file and is the GPA's own offset (low RAM:
// the GPA; high RAM: 2 GiB + GPA - 4 GiB); the hole and the end never
// translate.
func FuzzTranslateGuest(f *testing.F) {
	f.Add(uint64(0), 4096, false)
	f.Add(uint64(2<<30-8), 16, true)
	f.Add(uint64(dma.GPA4G), 8, true)
	f.Add(uint64(math.MaxUint64-4), 8, true)
	mem, _ := bar.NewMem("ram", 4096)
	small := guestWindow(f, sized{mem, 512 << 20})
	big := guestWindow(f, sized{mem, 3 << 30})
	f.Fuzz(func(t *testing.T, iova uint64, n int, split bool) {
		if n < 0 || n > 1<<20 {
			return
		}
		w, size := small, int64(512<<20)
		if split {
			w, size = big, 3<<30
		}
		off, err := w.Translate(iova, n, dma.Read)
		if err != nil {
			return
		}
		low := dma.Q35Low(size)
		end := iova + uint64(n)
		switch {
		case end <= uint64(low):
			if off != int64(iova) {
				t.Fatalf("low GPA %#x at %#x", iova, off)
			}
		case iova >= dma.GPA4G && low < size && end-dma.GPA4G <= uint64(size-low):
			if off != low+int64(iova-dma.GPA4G) {
				t.Fatalf("high GPA %#x at %#x", iova, off)
			}
		default:
			t.Fatalf("GPA %#x len %d (RAM %#x) translated to %#x", iova, n, size, off)
		}
		if off < 0 || off+int64(n) > size {
			t.Fatalf("GPA %#x len %d outside the file: %#x", iova, n, off)
		}
	})
}
