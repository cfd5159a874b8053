package dma

import (
	"errors"
	"fmt"

	"github.com/vhcrd/vhcrd/bar"
)

// Sentinel errors, wrapped with the VF, IOVA and length.
var (
	ErrOutOfWindow = errors.New("dma: address outside the VF's window")
	ErrOverflow    = errors.New("dma: address range overflows")
	ErrPermission  = errors.New("dma: access not permitted")
	ErrNoWindow    = errors.New("dma: no such VF window")
	ErrLayout      = errors.New("dma: windows do not fit the region")
)

// Perm is an access permission of a window, as in an IOMMU mapping.
type Perm uint8

const (
	Read      Perm = 1 << iota // the device may read (DMA from guest memory)
	Write                      // the device may write (DMA to guest memory)
	ReadWrite = Read | Write
)

// Space is the DMA memory of all VFs: n windows of size bytes each, laid out
// back to back from base in the backing region.
type Space struct {
	r       bar.Region
	mem     []byte // the mapping, or nil: then ReadAt/WriteAt are used
	base    int64
	size    int64
	windows []Window
}

// NewSpace lays out n windows of windowSize bytes (a positive multiple of
// 4096) from base in r.
func NewSpace(r bar.Region, base, windowSize int64, n int) (*Space, error) {
	if windowSize <= 0 || windowSize%bar.PageSize != 0 || base < 0 || base%bar.PageSize != 0 || n <= 0 {
		return nil, fmt.Errorf("%s: %d windows of %#x from %#x: %w", r.Name(), n, windowSize, base, ErrLayout)
	}
	if need := base + windowSize*int64(n); windowSize > (1<<62)/int64(n) || need > r.Size() {
		return nil, fmt.Errorf("%s: %d windows of %#x from %#x need %#x bytes, region has %#x: %w",
			r.Name(), n, windowSize, base, base+windowSize*int64(n), r.Size(), ErrLayout)
	}
	s := &Space{r: r, base: base, size: windowSize, windows: make([]Window, n)}
	if b, err := r.Bytes(); err == nil {
		s.mem = b
	}
	for i := range s.windows {
		w := &s.windows[i]
		w.vf, w.perm, w.r = i, ReadWrite, r
		w.off = base + int64(i)*windowSize
		w.low, w.size = windowSize, windowSize
		if s.mem != nil {
			w.mem = s.mem[w.off : w.off+windowSize : w.off+windowSize]
		}
	}
	return s, nil
}

// Q35 RAM split (QEMU hw/i386/pc_q35.c, pc_q35_init, default
// max-ram-below-4g): a guest with at least Q35SplitAbove bytes of RAM has
// its first Q35LowMem bytes at GPA 0 and the rest at GPA 4 GiB; a smaller
// guest has all its RAM below 4 GiB. The RAM file holds both ranges back to
// back: the high range starts at file offset Q35LowMem.
const (
	Q35SplitAbove = 0xb0000000
	Q35LowMem     = 0x80000000
	GPA4G         = 1 << 32
)

// Q35Low returns the bytes of a q35 guest's RAM of ramSize bytes that are
// mapped at GPA 0 (the rest is at GPA 4 GiB).
func Q35Low(ramSize int64) int64 {
	if ramSize >= Q35SplitAbove {
		return Q35LowMem
	}
	return ramSize
}

// UseGuestRAM makes VF vf's window a guest's RAM: the whole region ram (a
// memory-backend-file with share=on), IOVA = guest-physical address (no
// vIOMMU), split as q35 splits it (Q35Low): [0, low) at file offset 0,
// [4 GiB, 4 GiB + size - low) at file offset low. Every other address, the
// hole below 4 GiB included, is outside the window.
func (s *Space) UseGuestRAM(vf int, ram bar.Region) error {
	if vf < 0 || vf >= len(s.windows) {
		return fmt.Errorf("vf %d of %d: %w", vf, len(s.windows), ErrNoWindow)
	}
	size := ram.Size()
	if size <= 0 || size%bar.PageSize != 0 {
		return fmt.Errorf("%s: guest RAM of %#x bytes: %w", ram.Name(), size, ErrLayout)
	}
	w := &s.windows[vf]
	*w = Window{vf: vf, perm: ReadWrite, r: ram, size: size, low: Q35Low(size)}
	if b, err := ram.Bytes(); err == nil {
		w.mem = b[:size:size]
	}
	return nil
}

// Len is the number of windows.
func (s *Space) Len() int { return len(s.windows) }

// WindowSize is the size of each window in bytes.
func (s *Space) WindowSize() int64 { return s.size }

// Window returns VF vf's window.
func (s *Space) Window(vf int) (*Window, error) {
	if vf < 0 || vf >= len(s.windows) {
		return nil, fmt.Errorf("vf %d of %d: %w", vf, len(s.windows), ErrNoWindow)
	}
	return &s.windows[vf], nil
}

// Translate is Window(vf).Translate.
func (s *Space) Translate(vf int, iova uint64, n int, p Perm) (int64, error) {
	w, err := s.Window(vf)
	if err != nil {
		return 0, err
	}
	return w.Translate(iova, n, p)
}

// Window is one VF's IOVA space: [0, low) at offset off of its region, and
// for a guest's RAM (UseGuestRAM) also [4 GiB, 4 GiB + size - low) at
// offset off + low.
type Window struct {
	r    bar.Region
	mem  []byte // the backing bytes [off, off+size) where mapped, else nil
	off  int64
	size int64 // bytes of backing
	low  int64 // of which mapped at IOVA 0; the rest at IOVA 4 GiB
	vf   int
	perm Perm
}

// VF is the window's VF index.
func (w *Window) VF() int { return w.vf }

// Size is the end of the IOVA space: the window's size, or for a guest's RAM
// split by q35, 4 GiB + the RAM above it.
func (w *Window) Size() int64 {
	if w.low < w.size {
		return GPA4G + w.size - w.low
	}
	return w.size
}

// Region is the region that backs the window.
func (w *Window) Region() bar.Region { return w.r }

// Backing is the window's offset in its region and its bytes there.
func (w *Window) Backing() (off, size int64) { return w.off, w.size }

// SetPerm changes what the device may do in this window (an IOMMU remap).
func (w *Window) SetPerm(p Perm) { w.perm = p }

// Perm is the window's current permission.
func (w *Window) Perm() Perm { return w.perm }

// Translate checks [iova, iova+n) against the window and the permission p and
// returns the offset in the backing region.
func (w *Window) Translate(iova uint64, n int, p Perm) (int64, error) {
	if n < 0 {
		return 0, fmt.Errorf("vf %d: iova %#x len %d: %w", w.vf, iova, n, ErrOutOfWindow)
	}
	end := iova + uint64(n)
	if end < iova {
		return 0, fmt.Errorf("vf %d: iova %#x len %#x: %w", w.vf, iova, n, ErrOverflow)
	}
	var rel uint64
	switch {
	case end <= uint64(w.low):
		rel = iova
	case w.low < w.size && iova >= GPA4G && end-GPA4G <= uint64(w.size-w.low):
		rel = uint64(w.low) + iova - GPA4G
	default:
		return 0, fmt.Errorf("vf %d: iova %#x len %#x (window %#x): %w", w.vf, iova, n, w.Size(), ErrOutOfWindow)
	}
	if w.perm&p != p {
		return 0, fmt.Errorf("vf %d: iova %#x len %#x: %w", w.vf, iova, n, ErrPermission)
	}
	return w.off + int64(rel), nil
}

// CopyIn copies len(dst) bytes of the VF's memory at iova into dst (a DMA
// read by the device).
func (w *Window) CopyIn(dst []byte, iova uint64) error {
	off, err := w.Translate(iova, len(dst), Read)
	if err != nil {
		return err
	}
	if w.mem != nil {
		rel := off - w.off
		copy(dst, w.mem[rel:rel+int64(len(dst))])
		return nil
	}
	_, err = w.r.ReadAt(dst, off)
	return err
}

// CopyOut copies src into the VF's memory at iova (a DMA write by the device).
func (w *Window) CopyOut(iova uint64, src []byte) error {
	off, err := w.Translate(iova, len(src), Write)
	if err != nil {
		return err
	}
	if w.mem != nil {
		rel := off - w.off
		copy(w.mem[rel:rel+int64(len(src))], src)
		return nil
	}
	_, err = w.r.WriteAt(src, off)
	return err
}

// CopyOutLast is CopyOut of src with the bytes from index last on stored
// after the others (a descriptor whose ownership byte must be the last of
// it the VF can see: a CQE's owner_sr_opcode), translated once.
func (w *Window) CopyOutLast(iova uint64, src []byte, last int) error {
	if last < 0 || last > len(src) {
		return fmt.Errorf("vf %d: iova %#x len %d last %d: %w", w.vf, iova, len(src), last, ErrOutOfWindow)
	}
	off, err := w.Translate(iova, len(src), Write)
	if err != nil {
		return err
	}
	if w.mem != nil {
		rel := off - w.off
		copy(w.mem[rel:rel+int64(last)], src[:last])
		copy(w.mem[rel+int64(last):rel+int64(len(src))], src[last:])
		return nil
	}
	if _, err = w.r.WriteAt(src[:last], off); err != nil {
		return err
	}
	_, err = w.r.WriteAt(src[last:], off+int64(last))
	return err
}

// Bytes returns the window's memory when the region is mapped (the VF's own
// view of its DMA memory; the PF never uses it on untrusted data).
func (w *Window) Bytes() ([]byte, error) {
	if w.mem == nil {
		return nil, bar.ErrNotMapped
	}
	return w.mem, nil
}
