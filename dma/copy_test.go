package dma_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/dma"
)

// TestCopy: a DMA copy between two VFs' windows, mapped (one copy) or not
// (through the caller's buffer, in pieces), checked against both windows
// and their permissions; an overlapping copy inside one window moves as
// memmove.
func TestCopy(t *testing.T) {
	for _, name := range []string{"mapped", "unmapped"} {
		t.Run(name, func(t *testing.T) {
			m, _ := bar.NewMem("dma", 2*0x4000)
			var r bar.Region = m
			if name == "unmapped" {
				r = unmapped{m}
			}
			s, err := dma.NewSpace(r, 0, 0x4000, 2)
			if err != nil {
				t.Fatal(err)
			}
			a, _ := s.Window(0)
			b, _ := s.Window(1)
			src := bytes.Repeat([]byte("0123456789"), 100)
			if err := a.CopyOut(0x100, src); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 64)
			if err := dma.Copy(b, 0x2000, a, 0x100, len(src), buf); err != nil {
				t.Fatal(err)
			}
			got := make([]byte, len(src))
			_ = b.CopyIn(got, 0x2000)
			if !bytes.Equal(got, src) {
				t.Fatal("copy differs")
			}
			if err := dma.Copy(b, 0x3f00, a, 0x100, 0x200, buf); !errors.Is(err, dma.ErrOutOfWindow) {
				t.Fatalf("past the destination window: %v", err)
			}
			if err := dma.Copy(b, 0, a, 0x3f00, 0x200, buf); !errors.Is(err, dma.ErrOutOfWindow) {
				t.Fatalf("past the source window: %v", err)
			}
			a.SetPerm(dma.Write)
			if err := dma.Copy(b, 0, a, 0x100, 16, buf); !errors.Is(err, dma.ErrPermission) {
				t.Fatalf("source without read: %v", err)
			}
			a.SetPerm(dma.ReadWrite)
			b.SetPerm(dma.Read)
			if err := dma.Copy(b, 0, a, 0x100, 16, buf); !errors.Is(err, dma.ErrPermission) {
				t.Fatalf("destination without write: %v", err)
			}
			if name == "mapped" {
				if err := dma.Copy(a, 0x105, a, 0x100, 20, buf); err != nil {
					t.Fatal(err)
				}
				got := make([]byte, 20)
				_ = a.CopyIn(got, 0x105)
				if !bytes.Equal(got, src[:20]) {
					t.Fatalf("overlapping copy %q", got)
				}
			}
		})
	}
}
