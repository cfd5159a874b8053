package dma_test

import (
	"bytes"
	"errors"
	"math"
	"testing"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/dma"
)

func TestWindowsAreSeparateIOVASpaces(t *testing.T) {
	m, _ := bar.NewMem("dma", 0x1000+3*0x4000)
	s, err := dma.NewSpace(m, 0x1000, 0x4000, 3)
	if err != nil {
		t.Fatal(err)
	}
	w1, _ := s.Window(1)
	w2, _ := s.Window(2)
	if err := w1.CopyOut(0x10, []byte("vf1")); err != nil {
		t.Fatal(err)
	}
	if err := w2.CopyOut(0x10, []byte("vf2")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 3)
	_ = w1.CopyIn(got, 0x10)
	if string(got) != "vf1" {
		t.Errorf("VF 1 reads %q at its IOVA 0x10", got)
	}
	raw, _ := m.Bytes()
	if !bytes.Equal(raw[0x1000+0x4000+0x10:][:3], []byte("vf1")) {
		t.Error("VF 1's IOVA 0x10 is not at base + window + 0x10")
	}
	if off, _ := s.Translate(2, 0x10, 3, dma.Read); off != 0x1000+2*0x4000+0x10 {
		t.Errorf("translate: %#x", off)
	}
}

func TestTranslateRejects(t *testing.T) {
	m, _ := bar.NewMem("dma", 2*0x4000)
	s, _ := dma.NewSpace(m, 0, 0x4000, 2)
	w, _ := s.Window(0)
	for _, tc := range []struct {
		iova uint64
		n    int
		want error
	}{
		{0x4000, 1, dma.ErrOutOfWindow},      // just past the end: would be VF 1's memory
		{0x3fff, 2, dma.ErrOutOfWindow},      // straddles the end
		{math.MaxUint64, 2, dma.ErrOverflow}, // wraps
		{math.MaxUint64 - 0x10, 0x20, dma.ErrOverflow},
		{0, -1, dma.ErrOutOfWindow},
		{1 << 63, 4, dma.ErrOutOfWindow},
	} {
		if _, err := w.Translate(tc.iova, tc.n, dma.Read); !errors.Is(err, tc.want) {
			t.Errorf("Translate(%#x, %d): %v, want %v", tc.iova, tc.n, err, tc.want)
		}
	}
	w.SetPerm(dma.Read)
	if err := w.CopyOut(0, []byte{1}); !errors.Is(err, dma.ErrPermission) {
		t.Errorf("write to a read-only window: %v", err)
	}
	if err := w.CopyIn(make([]byte, 1), 0); err != nil {
		t.Errorf("read from a read-only window: %v", err)
	}
	if _, err := s.Window(2); !errors.Is(err, dma.ErrNoWindow) {
		t.Errorf("window 2 of 2: %v", err)
	}
	if _, err := dma.NewSpace(m, 0, 0x4000, 3); !errors.Is(err, dma.ErrLayout) {
		t.Errorf("3 windows in a 2-window region: %v", err)
	}
}

func FuzzTranslate(f *testing.F) {
	f.Add(uint64(0), 4096, 1)
	f.Add(uint64(0x3fff), 2, 0)
	f.Add(uint64(math.MaxUint64), 8, 1)
	m, _ := bar.NewMem("dma", 4*0x4000)
	s, _ := dma.NewSpace(m, 0x4000, 0x4000, 3)
	f.Fuzz(func(t *testing.T, iova uint64, n int, vf int) {
		if vf < 0 || vf >= 3 || n < 0 || n > 1<<20 {
			return
		}
		w, _ := s.Window(vf)
		off, err := w.Translate(iova, n, dma.Read)
		if err != nil {
			return
		}
		lo := int64(0x4000 + vf*0x4000)
		if off < lo || off+int64(n) > lo+0x4000 {
			t.Fatalf("VF %d iova %#x len %d translated to %#x, outside [%#x, %#x)", vf, iova, n, off, lo, lo+0x4000)
		}
	})
}

// writeLog is an unmapped region (no Bytes) that records its writes.
type writeLog struct {
	bar.Region
	writes [][2]int64 // offset, length
}

func (l *writeLog) Bytes() ([]byte, error) { return nil, bar.ErrNotMapped }

func (l *writeLog) WriteAt(p []byte, off int64) (int, error) {
	l.writes = append(l.writes, [2]int64{off, int64(len(p))})
	return l.Region.WriteAt(p, off)
}

// TestCopyOutLast: the bytes land where CopyOut would put them, the ones
// from last on in a store after the others (on an unmapped region: a
// second write, at its offset), and a range or split that does not fit
// writes nothing.
func TestCopyOutLast(t *testing.T) {
	m, _ := bar.NewMem("dma", 0x4000)
	rec := &writeLog{Region: m}
	for name, r := range map[string]bar.Region{"mapped": m, "unmapped": rec} {
		s, err := dma.NewSpace(r, 0, 0x4000, 1)
		if err != nil {
			t.Fatal(err)
		}
		w, _ := s.Window(0)
		src := []byte("0123456789abcdefghijklmnopqrstuV")
		if err := w.CopyOutLast(0x100, src, 31); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := make([]byte, 32)
		_ = w.CopyIn(got, 0x100)
		if !bytes.Equal(got, src) {
			t.Errorf("%s: %q", name, got)
		}
		for _, c := range []struct {
			iova uint64
			last int
		}{{0x3ff0, 31}, {0x200, 33}, {0x200, -1}} {
			if err := w.CopyOutLast(c.iova, src, c.last); err == nil {
				t.Errorf("%s: CopyOutLast(%#x, 32 bytes, %d) accepted", name, c.iova, c.last)
			}
		}
	}
	if want := [][2]int64{{0x100, 31}, {0x11f, 1}}; len(rec.writes) != 2 || rec.writes[0] != want[0] || rec.writes[1] != want[1] {
		t.Errorf("unmapped region's writes %v, want %v", rec.writes, want)
	}
}
