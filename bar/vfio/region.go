package vfio

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"log/slog"

	"golang.org/x/sys/unix"

	"github.com/vhcrd/vhcrd/bar"
)

// Area is a byte range of a region, relative to the region's start.
type Area struct {
	Offset, Size uint64
}

// RegionInfo is what VFIO_DEVICE_GET_REGION_INFO reports, with the
// capability chain decoded.
type RegionInfo struct {
	Index  int
	Flags  uint32
	Size   uint64
	Offset uint64 // offset of the region in the device fd
	// Sparse lists the mmappable areas when the region has a
	// SPARSE_MMAP capability (nil otherwise: then the whole region is
	// mmappable if Flags has VFIO_REGION_INFO_FLAG_MMAP).
	Sparse []Area
	// Caps lists the ids of every capability in the chain.
	Caps []uint16
}

// Mappable returns the areas that can be mmapped.
func (ri RegionInfo) Mappable() []Area {
	if ri.Flags&VFIO_REGION_INFO_FLAG_MMAP == 0 || ri.Size == 0 {
		return nil
	}
	if ri.Sparse != nil {
		return ri.Sparse
	}
	return []Area{{0, ri.Size}}
}

// maxCapChain bounds the walk of a capability chain.
const maxCapChain = 64

// RegionInfo queries region index, re-querying with the argsz the kernel
// asks for when the region has capabilities.
func (d *Device) RegionInfo(index int) (RegionInfo, error) {
	if index < 0 || index >= d.info.NumRegions {
		return RegionInfo{}, fmt.Errorf("%s: region %d: the device has %d regions: %w", d.addr, index, d.info.NumRegions, bar.ErrOutOfRange)
	}
	ri := VFIORegionInfo{Index: uint32(index)}
	base := uint32(len(Marshal(ri)))
	buf := make([]byte, base)
	for range 2 {
		ri.Argsz = uint32(len(buf))
		copy(buf, Marshal(ri))
		if _, err := d.sys.IoctlBuf(d.fd, VFIO_DEVICE_GET_REGION_INFO, buf); err != nil {
			return RegionInfo{}, fmt.Errorf("%s: VFIO_DEVICE_GET_REGION_INFO(%d): %w", d.addr, index, err)
		}
		if err := Unmarshal(buf, &ri); err != nil {
			return RegionInfo{}, err
		}
		if ri.Argsz <= uint32(len(buf)) || ri.Argsz > 1<<16 {
			break
		}
		buf = make([]byte, ri.Argsz) // the caps did not fit: ask again
		ri = VFIORegionInfo{Index: uint32(index)}
	}
	out := RegionInfo{Index: index, Flags: ri.Flags, Size: ri.Size, Offset: ri.Offset}
	if ri.Flags&VFIO_REGION_INFO_FLAG_CAPS == 0 || ri.CapOffset == 0 {
		return out, nil
	}
	if err := out.parseCaps(buf, ri.CapOffset, base); err != nil {
		return RegionInfo{}, fmt.Errorf("%s: region %d: %w", d.addr, index, err)
	}
	return out, nil
}

// parseCaps walks the capability chain starting at off in buf. Offsets are
// from the start of the info struct; a chain that loops, points back into
// the fixed part or runs past buf is an error.
func (ri *RegionInfo) parseCaps(buf []byte, off, base uint32) error {
	var hdr VFIOInfoCapHeader
	hsz := uint32(len(Marshal(hdr)))
	for n := 0; off != 0; n++ {
		if n == maxCapChain || off < base || uint64(off)+uint64(hsz) > uint64(len(buf)) {
			return fmt.Errorf("bad capability chain at offset %d (%d bytes)", off, len(buf))
		}
		if err := Unmarshal(buf[off:], &hdr); err != nil {
			return err
		}
		ri.Caps = append(ri.Caps, hdr.ID)
		if hdr.ID == VFIO_REGION_INFO_CAP_SPARSE_MMAP {
			var sp VFIORegionInfoCapSparseMmap
			ssz := uint32(len(Marshal(sp)))
			if uint64(off)+uint64(ssz) > uint64(len(buf)) {
				return fmt.Errorf("sparse mmap capability truncated")
			}
			if err := Unmarshal(buf[off:], &sp); err != nil {
				return err
			}
			var a VFIORegionSparseMmapArea
			asz := uint64(len(Marshal(a)))
			start := uint64(off) + uint64(ssz)
			if uint64(sp.NrAreas) > (uint64(len(buf))-start)/asz {
				return fmt.Errorf("sparse mmap capability: %d areas do not fit", sp.NrAreas)
			}
			ri.Sparse = []Area{}
			for i := range uint64(sp.NrAreas) {
				if err := Unmarshal(buf[start+i*asz:], &a); err != nil {
					return err
				}
				if a.Size == 0 {
					continue
				}
				if a.Offset > ri.Size || a.Size > ri.Size-a.Offset {
					return fmt.Errorf("sparse area %#x+%#x outside the region (%#x)", a.Offset, a.Size, ri.Size)
				}
				ri.Sparse = append(ri.Sparse, Area(a))
			}
			slices.SortFunc(ri.Sparse, func(x, y Area) int { return cmp.Compare(x.Offset, y.Offset) })
		}
		off = hdr.Next
	}
	return nil
}

// Region is a bar.Region over one region of a vfio device. Mappable areas
// are mmapped; the rest of the region is reached with pread/pwrite on the
// device fd, where a 4-byte aligned access is one 32-bit device access.
type Region struct {
	dev   *Device
	name  string
	info  RegionInfo
	areas []mapped // sorted by offset
	whole bool     // one mapping covers the region
}

type mapped struct {
	off uint64
	buf []byte
	win *window // for bar.NewReg, made once so accesses do not allocate
}

var _ bar.Region = (*Region)(nil)

// Region opens region index of the device: it maps every mappable area.
// The Device closes the region when it is closed.
func (d *Device) Region(index int) (*Region, error) {
	if d.fd < 0 {
		return nil, fmt.Errorf("%s: %w", d.addr, bar.ErrClosed)
	}
	ri, err := d.RegionInfo(index)
	if err != nil {
		return nil, err
	}
	name := "vfio:" + d.addr + "#region" + strconv.Itoa(index)
	if ri.Size == 0 {
		return nil, fmt.Errorf("%s: the region is not implemented (size 0; see 'vhcrd devices'): %w", name, bar.ErrNotSupported)
	}
	if ri.Flags&VFIO_REGION_INFO_FLAG_READ == 0 {
		return nil, fmt.Errorf("%s: the region is not readable: %w", name, bar.ErrNotSupported)
	}
	if int64(ri.Size) < 0 {
		return nil, fmt.Errorf("%s: size %#x: %w", name, ri.Size, bar.ErrOutOfRange)
	}
	r := &Region{dev: d, name: name, info: ri}
	prot := unix.PROT_READ
	if ri.Flags&VFIO_REGION_INFO_FLAG_WRITE != 0 {
		prot |= unix.PROT_WRITE
	}
	for _, a := range ri.Mappable() {
		buf, err := d.sys.Mmap(d.fd, int64(ri.Offset+a.Offset), int(a.Size), prot, unix.MAP_SHARED)
		if err != nil {
			r.Close()
			return nil, fmt.Errorf("%s: mmap %#x bytes at %#x: %w", name, a.Size, a.Offset, err)
		}
		r.areas = append(r.areas, mapped{off: a.Offset, buf: buf, win: &window{name, buf}})
	}
	r.whole = len(r.areas) == 1 && r.areas[0].off == 0 && uint64(len(r.areas[0].buf)) == ri.Size
	d.regions = append(d.regions, r)
	slog.Info("vfio: region open", "region", name, "size", ri.Size, "flags", ri.Flags, "mapped", len(r.areas), "whole", r.whole)
	return r, nil
}

// Info returns the region info the region was opened with.
func (r *Region) Info() RegionInfo { return r.info }

func (r *Region) Name() string   { return r.name }
func (r *Region) Size() int64    { return int64(r.info.Size) }
func (r *Region) ReadOnly() bool { return r.info.Flags&VFIO_REGION_INFO_FLAG_WRITE == 0 }
func (r *Region) Shared() bool   { return false }

func (r *Region) isClosed() bool { return r.dev == nil }

func (r *Region) closedErr() error { return fmt.Errorf("%s: %w", r.name, bar.ErrClosed) }

// area returns the mapping holding [off, off+n), or nil.
func (r *Region) area(off int64, n int) *mapped {
	for i := range r.areas {
		a := &r.areas[i]
		if uint64(off) >= a.off && uint64(off)+uint64(n) <= a.off+uint64(len(a.buf)) {
			return a
		}
	}
	return nil
}

// window is a bar.Region view of one mapped area, used only to make
// bar.Regs for exact 32-bit accesses.
type window struct {
	name string
	buf  []byte
}

func (w *window) Name() string                      { return w.name }
func (w *window) Size() int64                       { return int64(len(w.buf)) }
func (w *window) ReadOnly() bool                    { return false }
func (w *window) Shared() bool                      { return false }
func (w *window) Load32(int64) (uint32, error)      { return 0, bar.ErrNotSupported }
func (w *window) Store32(int64, uint32) error       { return bar.ErrNotSupported }
func (w *window) ReadAt([]byte, int64) (int, error) { return 0, bar.ErrNotSupported }
func (w *window) WriteAt([]byte, int64) (int, error) {
	return 0, bar.ErrNotSupported
}
func (w *window) Bytes() ([]byte, error) { return w.buf, nil }
func (w *window) Close() error           { return nil }

func (r *Region) reg(off int64) error {
	if off < 0 || off > r.Size()-4 {
		return fmt.Errorf("%s: register at %#x (size %#x): %w", r.name, off, r.Size(), bar.ErrOutOfRange)
	}
	if off&3 != 0 {
		return fmt.Errorf("%s: register at %#x: %w", r.name, off, bar.ErrUnaligned)
	}
	return nil
}

// Load32 reads the register at off: one 32-bit load from the mapping, or
// one 4-byte pread where the area is not mmappable.
func (r *Region) Load32(off int64) (uint32, error) {
	if r.isClosed() {
		return 0, r.closedErr()
	}
	if err := r.reg(off); err != nil {
		return 0, err
	}
	if a := r.area(off, 4); a != nil {
		g, err := bar.NewReg(a.win, off-int64(a.off))
		if err != nil {
			return 0, err
		}
		return g.Load(), nil
	}
	var b [4]byte
	if err := r.pio(b[:], off, false); err != nil {
		return 0, err
	}
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]), nil
}

// Store32 writes the register at off: one 32-bit store to the mapping, or
// one 4-byte pwrite.
func (r *Region) Store32(off int64, v uint32) error {
	if r.isClosed() {
		return r.closedErr()
	}
	if r.ReadOnly() {
		return fmt.Errorf("%s: store at %#x: %w", r.name, off, bar.ErrReadOnly)
	}
	if err := r.reg(off); err != nil {
		return err
	}
	if a := r.area(off, 4); a != nil {
		g, err := bar.NewReg(a.win, off-int64(a.off))
		if err != nil {
			return err
		}
		g.Store(v)
		return nil
	}
	b := [4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}
	return r.pio(b[:], off, true)
}

// pio does one pread or pwrite of p at region offset off.
func (r *Region) pio(p []byte, off int64, write bool) error {
	pos := int64(r.info.Offset) + off
	var (
		n   int
		err error
	)
	if write {
		n, err = r.dev.sys.Pwrite(r.dev.fd, p, pos)
	} else {
		n, err = r.dev.sys.Pread(r.dev.fd, p, pos)
	}
	if err == nil && n != len(p) {
		err = fmt.Errorf("short transfer: %d of %d bytes", n, len(p))
	}
	if err != nil {
		op := "pread"
		if write {
			op = "pwrite"
		}
		return fmt.Errorf("%s: %s %d bytes at %#x: %w", r.name, op, len(p), off, err)
	}
	return nil
}

func (r *Region) span(off int64, n int) error {
	if off < 0 || n < 0 || off > r.Size() || int64(n) > r.Size()-off {
		return fmt.Errorf("%s: %d bytes at %#x (size %#x): %w", r.name, n, off, r.Size(), bar.ErrOutOfRange)
	}
	return nil
}

// rw copies between p and the region, area by area: mapped parts with
// copy, the rest with pread/pwrite in pieces that never cross an area
// boundary.
func (r *Region) rw(p []byte, off int64, write bool) (int, error) {
	if r.isClosed() {
		return 0, r.closedErr()
	}
	if write && r.ReadOnly() {
		return 0, fmt.Errorf("%s: write at %#x: %w", r.name, off, bar.ErrReadOnly)
	}
	if err := r.span(off, len(p)); err != nil {
		return 0, err
	}
	done := 0
	for done < len(p) {
		pos := uint64(off) + uint64(done)
		rest := uint64(len(p) - done)
		var hit *mapped
		next := r.info.Size // start of the next mapped area after pos
		for i := range r.areas {
			a := &r.areas[i]
			if pos >= a.off && pos < a.off+uint64(len(a.buf)) {
				hit = a
				break
			}
			if a.off > pos && a.off < next {
				next = a.off
			}
		}
		if hit != nil {
			n := min(rest, hit.off+uint64(len(hit.buf))-pos)
			if write {
				copy(hit.buf[pos-hit.off:], p[done:done+int(n)])
			} else {
				copy(p[done:done+int(n)], hit.buf[pos-hit.off:])
			}
			done += int(n)
			continue
		}
		n := min(rest, next-pos)
		if err := r.pio(p[done:done+int(n)], int64(pos), write); err != nil {
			return done, err
		}
		done += int(n)
	}
	return done, nil
}

func (r *Region) ReadAt(p []byte, off int64) (int, error)  { return r.rw(p, off, false) }
func (r *Region) WriteAt(p []byte, off int64) (int, error) { return r.rw(p, off, true) }

// Bytes returns the mapping when one mapping covers the whole region, and
// bar.ErrNotMapped otherwise (a region without the mmap flag, or sparse
// areas around a hole such as an MSI-X table): the hot loop needs a
// mapping and says so.
func (r *Region) Bytes() ([]byte, error) {
	if r.isClosed() {
		return nil, r.closedErr()
	}
	if !r.whole {
		why := "the region is not mmappable; its registers are reached with pread/pwrite"
		if len(r.areas) > 0 {
			why = fmt.Sprintf("only %d sparse areas of the region are mmappable", len(r.areas))
		}
		return nil, fmt.Errorf("%s: %s: %w", r.name, why, bar.ErrNotMapped)
	}
	return r.areas[0].buf, nil
}

// Close unmaps the region. The device stays open. Safe to call more than
// once.
func (r *Region) Close() error {
	if r.isClosed() {
		return nil
	}
	var errs []error
	for _, a := range r.areas {
		if err := r.dev.sys.Munmap(a.buf); err != nil {
			errs = append(errs, fmt.Errorf("%s: munmap: %w", r.name, err))
		}
	}
	r.areas = nil
	d := r.dev
	r.dev = nil
	d.regions = slices.DeleteFunc(d.regions, func(x *Region) bool { return x == r })
	return errors.Join(errs...)
}
