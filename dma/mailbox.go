package dma

import (
	"errors"
	"fmt"

	"github.com/vhcrd/vhcrd/bar"
)

// MailboxSize is the size and the alignment of a mailbox: one 4 KiB page
// (MLX4_MAILBOX_SIZE; ACCESS_MEM needs 4 KiB alignment, and so does the
// vHCR's page).
const MailboxSize = bar.PageSize

// ErrUnaligned is wrapped when a mailbox address is not 4 KiB aligned.
var ErrUnaligned = errors.New("dma: mailbox address not 4 KiB aligned")

// Mailbox is one checked page of a window: 4 KiB aligned, inside the
// window, and permitted for the access it was made for when it was made.
// Each copy checks the window's current permission again (an IOMMU remap in
// between is honoured). The zero Mailbox is not usable.
type Mailbox struct {
	w    *Window
	iova uint64
	perm Perm
	off  int64              // the page's offset in the window's region
	mem  *[MailboxSize]byte // the page in the mapping; nil where the region is not mapped
}

// Mailbox checks [iova, iova+4 KiB) of the window: 4 KiB aligned
// (ErrUnaligned), inside the window (ErrOutOfWindow, ErrOverflow) and
// permitted for p (ErrPermission). It replaces every hand check of "aligned
// and inside the window".
func (w *Window) Mailbox(iova uint64, p Perm) (Mailbox, error) {
	if iova%MailboxSize != 0 {
		return Mailbox{}, fmt.Errorf("vf %d: iova %#x: %w", w.vf, iova, ErrUnaligned)
	}
	off, err := w.Translate(iova, MailboxSize, p)
	if err != nil {
		return Mailbox{}, err
	}
	m := Mailbox{w: w, iova: iova, perm: p, off: off}
	if w.mem != nil {
		rel := off - w.off
		m.mem = (*[MailboxSize]byte)(w.mem[rel : rel+MailboxSize])
	}
	return m, nil
}

// IOVA is the mailbox's address in the VF's IOVA space.
func (m Mailbox) IOVA() uint64 { return m.iova }

// Perm is the access the mailbox was checked for.
func (m Mailbox) Perm() Perm { return m.perm }

// Mapped returns the page itself where the region is mapped, for the
// accesses the mailbox was checked for (plain loads and stores on the hot
// path), and nil otherwise (then CopyIn and CopyOut).
func (m Mailbox) Mapped() *[MailboxSize]byte { return m.mem }

// CopyIn copies len(dst) bytes at offset off of the mailbox into dst (a DMA
// read by the device).
func (m Mailbox) CopyIn(dst []byte, off int) error {
	if err := m.check(off, len(dst), Read); err != nil {
		return err
	}
	if m.mem != nil {
		copy(dst, m.mem[off:off+len(dst)])
		return nil
	}
	_, err := m.w.r.ReadAt(dst, m.off+int64(off))
	return err
}

// CopyOut copies src to offset off of the mailbox (a DMA write by the
// device).
func (m Mailbox) CopyOut(off int, src []byte) error {
	if err := m.check(off, len(src), Write); err != nil {
		return err
	}
	if m.mem != nil {
		copy(m.mem[off:off+len(src)], src)
		return nil
	}
	_, err := m.w.r.WriteAt(src, m.off+int64(off))
	return err
}

// check: [off, off+n) inside the page, p among the accesses the mailbox was
// made for and still permitted by the window.
func (m Mailbox) check(off, n int, p Perm) error {
	switch {
	case m.w == nil:
		return fmt.Errorf("unchecked mailbox: %w", ErrPermission)
	case off < 0 || n < 0 || off > MailboxSize || n > MailboxSize-off:
		return fmt.Errorf("vf %d: mailbox %#x offset %#x len %#x: %w", m.w.vf, m.iova, off, n, ErrOutOfWindow)
	case m.perm&p != p || m.w.perm&p != p:
		return fmt.Errorf("vf %d: mailbox %#x: %w", m.w.vf, m.iova, ErrPermission)
	}
	return nil
}
