package sysfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/bar/pci"
)

// Region is a bar.Region over a mapped sysfs resourceN file. It is device
// memory: Shared reports false.
type Region struct {
	name     string
	path     string
	res      pci.BAR
	buf      []byte
	readOnly bool
}

var _ bar.Region = (*Region)(nil)

// Open maps BAR index of the device at bdf, under the sysfs root (normally
// pci.DefaultRoot). The whole BAR is mapped read-write.
func Open(root, bdf string, index int) (*Region, error) {
	addr, err := pci.Exists(root, bdf)
	if err != nil {
		return nil, err
	}
	name := "sysfs:" + addr + "#resource" + strconv.Itoa(index)
	res, err := pci.Resource(root, addr, index)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if res.IsIO() {
		return nil, fmt.Errorf("%s: BAR %d is an I/O-port BAR, which cannot be mapped (use vfio:%s#region%d, whose pread/pwrite reach it): %w", name, index, addr, index, bar.ErrNotSupported)
	}
	if !res.Mappable() {
		return nil, fmt.Errorf("%s: BAR %d (flags %#x) is not an assigned memory BAR: %w", name, index, res.Flags, bar.ErrNotMapped)
	}
	size := int64(res.Size())
	if int64(int(size)) != size {
		return nil, fmt.Errorf("%s: BAR size %#x: %w", name, size, bar.ErrOutOfRange)
	}
	p := filepath.Join(pci.Dir(root, addr), "resource"+strconv.Itoa(index))
	readOnly := res.Flags&pci.IORESOURCE_READONLY != 0
	flag, prot := os.O_RDWR, unix.PROT_READ|unix.PROT_WRITE
	if readOnly {
		flag, prot = os.O_RDONLY, unix.PROT_READ
	}
	f, err := os.OpenFile(p, flag|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, os.ErrPermission) {
			return nil, fmt.Errorf("%s: %w (mapping a BAR through sysfs needs root and a kernel that is not locked down)", name, err)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	// sysfs sizes resourceN as the BAR; a shorter file (a stale fake, a
	// truncated tmpfs file) would fault on access instead of failing here.
	if st.Size() < size {
		return nil, fmt.Errorf("%s: %s has %d bytes but the resource file says the BAR has %d: %w", name, p, st.Size(), size, bar.ErrTooSmall)
	}
	buf, err := unix.Mmap(int(f.Fd()), 0, int(size), prot, unix.MAP_SHARED)
	if err != nil {
		hint := ""
		if errors.Is(err, unix.EINVAL) {
			hint = " (is the BAR claimed by a driver, e.g. vfio-pci with an open device? is memory decoding enabled: echo 1 > " + filepath.Join(pci.Dir(root, addr), "enable") + "?)"
		}
		return nil, fmt.Errorf("%s: mmap %d bytes: %w%s", name, size, err, hint)
	}
	return &Region{name: name, path: p, res: res, buf: buf, readOnly: readOnly}, nil
}

// Resource returns the BAR as the resource file describes it.
func (r *Region) Resource() pci.BAR { return r.res }

func (r *Region) Name() string   { return r.name }
func (r *Region) Size() int64    { return int64(r.res.Size()) }
func (r *Region) ReadOnly() bool { return r.readOnly }
func (r *Region) Shared() bool   { return false }

func (r *Region) closed() error { return fmt.Errorf("%s: %w", r.name, bar.ErrClosed) }

// Load32 reads the register at off with one 32-bit load.
func (r *Region) Load32(off int64) (uint32, error) {
	if r.buf == nil {
		return 0, r.closed()
	}
	g, err := bar.NewReg(r, off)
	if err != nil {
		return 0, err
	}
	return g.Load(), nil
}

// Store32 writes the register at off with one 32-bit store.
func (r *Region) Store32(off int64, v uint32) error {
	if r.buf == nil {
		return r.closed()
	}
	if r.readOnly {
		return fmt.Errorf("%s: store at %#x: %w", r.name, off, bar.ErrReadOnly)
	}
	g, err := bar.NewReg(r, off)
	if err != nil {
		return err
	}
	g.Store(v)
	return nil
}

func (r *Region) span(off int64, n int) error {
	if off < 0 || n < 0 || off > r.Size() || int64(n) > r.Size()-off {
		return fmt.Errorf("%s: %d bytes at %#x (size %#x): %w", r.name, n, off, r.Size(), bar.ErrOutOfRange)
	}
	return nil
}

func (r *Region) ReadAt(p []byte, off int64) (int, error) {
	if r.buf == nil {
		return 0, r.closed()
	}
	if err := r.span(off, len(p)); err != nil {
		return 0, err
	}
	return copy(p, r.buf[off:]), nil
}

func (r *Region) WriteAt(p []byte, off int64) (int, error) {
	if r.buf == nil {
		return 0, r.closed()
	}
	if r.readOnly {
		return 0, fmt.Errorf("%s: write at %#x: %w", r.name, off, bar.ErrReadOnly)
	}
	if err := r.span(off, len(p)); err != nil {
		return 0, err
	}
	return copy(r.buf[off:], p), nil
}

// Bytes returns the mapping, valid until Close.
func (r *Region) Bytes() ([]byte, error) {
	if r.buf == nil {
		return nil, r.closed()
	}
	return r.buf, nil
}

// Close unmaps the BAR. It is safe to call more than once.
func (r *Region) Close() error {
	if r.buf == nil {
		return nil
	}
	err := unix.Munmap(r.buf)
	r.buf = nil
	if err != nil {
		return fmt.Errorf("%s: munmap: %w", r.name, err)
	}
	return nil
}
