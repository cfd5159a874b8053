package dma_test

import (
	"bytes"
	"errors"
	"math"
	"testing"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/dma"
)

// unmapped hides the mapping of a region, as a VFIO BAR without mmap does.
type unmapped struct{ bar.Region }

func (unmapped) Bytes() ([]byte, error) { return nil, bar.ErrNotMapped }

func TestMailbox(t *testing.T) {
	for _, mapped := range []bool{true, false} {
		m, _ := bar.NewMem("dma", 0x1000+2*0x4000)
		var r bar.Region = m
		if !mapped {
			r = unmapped{m}
		}
		s, err := dma.NewSpace(r, 0x1000, 0x4000, 2)
		if err != nil {
			t.Fatal(err)
		}
		w, _ := s.Window(1)
		for _, tc := range []struct {
			name string
			iova uint64
			p    dma.Perm
			want error
		}{
			{"aligned, first page", 0, dma.ReadWrite, nil},
			{"aligned, last page", 0x3000, dma.Read, nil},
			{"unaligned", 0x1010, dma.Read, dma.ErrUnaligned},
			{"unaligned by one byte", 0x1001, dma.Write, dma.ErrUnaligned},
			{"out of the window", 0x4000, dma.Read, dma.ErrOutOfWindow},
			{"far out", 1 << 62, dma.Read, dma.ErrOutOfWindow},
			{"overflow", math.MaxUint64 &^ 0xfff, dma.Read, dma.ErrOverflow},
		} {
			mb, err := w.Mailbox(tc.iova, tc.p)
			if !errors.Is(err, tc.want) {
				t.Errorf("mapped=%v %s: %v, want %v", mapped, tc.name, err, tc.want)
			}
			if err == nil && (mb.IOVA() != tc.iova || (mb.Mapped() != nil) != mapped) {
				t.Errorf("mapped=%v %s: iova %#x mapped %v", mapped, tc.name, mb.IOVA(), mb.Mapped() != nil)
			}
		}

		// Copies land in the VF's page at the window's offset, never outside it.
		mb, err := w.Mailbox(0x2000, dma.ReadWrite)
		if err != nil {
			t.Fatal(err)
		}
		if err := mb.CopyOut(0x10, []byte("vf1")); err != nil {
			t.Fatal(err)
		}
		raw, _ := m.Bytes()
		if !bytes.Equal(raw[0x1000+0x4000+0x2000+0x10:][:3], []byte("vf1")) {
			t.Errorf("mapped=%v: CopyOut did not land at base + window + iova + off", mapped)
		}
		got := make([]byte, 3)
		if err := mb.CopyIn(got, 0x10); err != nil || string(got) != "vf1" {
			t.Errorf("mapped=%v: CopyIn %q, %v", mapped, got, err)
		}
		for _, x := range []struct{ off, n int }{{0xfff, 2}, {-1, 1}, {0x1000, 1}, {0, 0x1001}} {
			if err := mb.CopyIn(make([]byte, x.n), x.off); !errors.Is(err, dma.ErrOutOfWindow) {
				t.Errorf("mapped=%v: CopyIn off %#x len %#x: %v", mapped, x.off, x.n, err)
			}
		}

		// Wrong permission: the mailbox's, and the window's at copy time.
		ro, err := w.Mailbox(0, dma.Read)
		if err != nil {
			t.Fatal(err)
		}
		if err := ro.CopyOut(0, []byte{1}); !errors.Is(err, dma.ErrPermission) {
			t.Errorf("mapped=%v: CopyOut through a read mailbox: %v", mapped, err)
		}
		w.SetPerm(dma.Read)
		if _, err := w.Mailbox(0, dma.Write); !errors.Is(err, dma.ErrPermission) {
			t.Errorf("mapped=%v: write mailbox in a read-only window: %v", mapped, err)
		}
		if err := mb.CopyOut(0, []byte{1}); !errors.Is(err, dma.ErrPermission) {
			t.Errorf("mapped=%v: CopyOut after the window became read-only: %v", mapped, err)
		}
		if err := (dma.Mailbox{}).CopyIn(got, 0); !errors.Is(err, dma.ErrPermission) {
			t.Errorf("zero Mailbox: %v", err)
		}
		w.SetPerm(dma.ReadWrite)
	}
}

func TestMailboxAllocatesNothing(t *testing.T) {
	m, _ := bar.NewMem("dma", 0x4000)
	s, _ := dma.NewSpace(m, 0, 0x4000, 1)
	w, _ := s.Window(0)
	var buf [dma.MailboxSize]byte
	n := testing.AllocsPerRun(100, func() {
		mb, err := w.Mailbox(0x1000, dma.ReadWrite)
		if err != nil {
			t.Fatal(err)
		}
		_ = mb.CopyIn(buf[:], 0)
		_ = mb.CopyOut(0, buf[:8])
	})
	if n != 0 {
		t.Errorf("%v allocations per checked mailbox access", n)
	}
}

// FuzzMailbox: a mailbox is granted exactly for a 4 KiB aligned page that
// Translate accepts whole, and its copies stay inside that page.
func FuzzMailbox(f *testing.F) {
	f.Add(uint64(0), 1, 0, 4)
	f.Add(uint64(0x3000), 2, 0xffc, 4)
	f.Add(uint64(0x1010), 0, 0, 1)
	f.Add(uint64(math.MaxUint64&^0xfff), 1, 0, 8)
	m, _ := bar.NewMem("dma", 4*0x4000)
	s, _ := dma.NewSpace(m, 0x4000, 0x4000, 3)
	f.Fuzz(func(t *testing.T, iova uint64, vf, off, n int) {
		if vf < 0 || vf >= 3 || n < 0 || n > 1<<13 {
			return
		}
		w, _ := s.Window(vf)
		mb, err := w.Mailbox(iova, dma.ReadWrite)
		_, terr := w.Translate(iova, dma.MailboxSize, dma.ReadWrite)
		if want := iova%dma.MailboxSize == 0 && terr == nil; (err == nil) != want {
			t.Fatalf("VF %d mailbox %#x: %v (translate: %v)", vf, iova, err, terr)
		}
		if err != nil {
			return
		}
		raw, _ := m.Bytes()
		before := append([]byte(nil), raw...)
		src := bytes.Repeat([]byte{0xa5}, n)
		if err := mb.CopyOut(off, src); err != nil {
			return
		}
		lo := 0x4000 + vf*0x4000 + int(iova) + off
		for i := range raw {
			if raw[i] != before[i] && (i < lo || i >= lo+n || i >= 0x4000+vf*0x4000+int(iova)+dma.MailboxSize) {
				t.Fatalf("VF %d mailbox %#x CopyOut(%#x, %d bytes) wrote byte %#x", vf, iova, off, n, i)
			}
		}
	})
}
