package bar

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// File is a Region over a file mapped MAP_SHARED: a tmpfs file in CI, which
// other processes (VF tools, a QEMU ivshmem backend) map too.
type File struct {
	name     string
	path     string
	buf      []byte
	readOnly bool
	fd       int // a duplicate of the mapped file's descriptor, for Backed; -1 once closed
}

// PageSize is the granule of file regions and of the wire layout.
const PageSize = 4096

// CreateFile opens path for reading and writing, creating it if needed, and
// makes it exactly size bytes (a positive multiple of PageSize) before mapping
// it. An existing file of that size keeps its contents, so a restarted PF finds
// the state it left; a file of another size is truncated or zero-extended.
// The second result reports whether the file was created or resized.
func CreateFile(path string, size int64) (*File, bool, error) {
	return createFile(path, size, true)
}

// CreateFileLazy is CreateFile without faulting the pages in at the map: a
// large sparse file (a VF BAR region of which the PF touches the first
// pages, a guest's RAM) stays sparse.
func CreateFileLazy(path string, size int64) (*File, bool, error) {
	return createFile(path, size, false)
}

func createFile(path string, size int64, populate bool) (*File, bool, error) {
	if size <= 0 || size%PageSize != 0 {
		return nil, false, fmt.Errorf("file:%s: size %d is not a positive multiple of %d: %w", path, size, PageSize, ErrBadSpec)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o660)
	if err != nil {
		return nil, false, fmt.Errorf("file:%s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, false, fmt.Errorf("file:%s: %w", path, err)
	}
	changed := st.Size() != size
	if changed {
		if err := f.Truncate(size); err != nil {
			return nil, false, fmt.Errorf("file:%s: truncate to %d: %w", path, size, err)
		}
	}
	r, err := mapFile(f, path, size, false, populate)
	return r, changed, err
}

// OpenFile maps an existing file whole. Its size must be a positive multiple
// of PageSize.
func OpenFile(path string, readOnly bool) (*File, error) {
	return openFile(path, readOnly, true)
}

// OpenFileLazy is OpenFile without faulting the pages in at the map.
func OpenFileLazy(path string, readOnly bool) (*File, error) {
	return openFile(path, readOnly, false)
}

func openFile(path string, readOnly, populate bool) (*File, error) {
	flag := os.O_RDWR
	if readOnly {
		flag = os.O_RDONLY
	}
	f, err := os.OpenFile(path, flag, 0)
	if err != nil {
		return nil, fmt.Errorf("file:%s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("file:%s: %w", path, err)
	}
	if st.Size() == 0 || st.Size()%PageSize != 0 {
		return nil, fmt.Errorf("file:%s: size %d is not a positive multiple of %d: %w", path, st.Size(), PageSize, ErrTooSmall)
	}
	return mapFile(f, path, st.Size(), readOnly, populate)
}

func mapFile(f *os.File, path string, size int64, readOnly, populate bool) (*File, error) {
	prot := unix.PROT_READ
	if !readOnly {
		prot |= unix.PROT_WRITE
	}
	if int64(int(size)) != size {
		return nil, fmt.Errorf("file:%s: size %d: %w", path, size, ErrOutOfRange)
	}
	// MAP_POPULATE: fault the pages in now, not in the poll loop.
	flags := unix.MAP_SHARED
	if populate {
		flags |= unix.MAP_POPULATE
	}
	buf, err := unix.Mmap(int(f.Fd()), 0, int(size), prot, flags)
	if err != nil {
		return nil, fmt.Errorf("file:%s: mmap %d bytes: %w", path, size, err)
	}
	// Keep the file (not its path, which may be replaced) to tell how much
	// of the mapping it still backs.
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		_ = unix.Munmap(buf)
		return nil, fmt.Errorf("file:%s: dup: %w", path, err)
	}
	return &File{name: "file:" + path, path: path, buf: buf, readOnly: readOnly, fd: fd}, nil
}

func (r *File) Name() string   { return r.name }
func (r *File) Path() string   { return r.path }
func (r *File) Size() int64    { return int64(len(r.buf)) }
func (r *File) ReadOnly() bool { return r.readOnly }
func (r *File) Shared() bool   { return true }

func (r *File) Load32(off int64) (uint32, error) {
	if r.buf == nil {
		return 0, fmt.Errorf("%s: %w", r.name, ErrClosed)
	}
	if err := checkReg(r.name, r.Size(), off); err != nil {
		return 0, err
	}
	return fromBE(mapLoad32(wordAt(r.buf, off))), nil
}

func (r *File) Store32(off int64, v uint32) error {
	if r.buf == nil {
		return fmt.Errorf("%s: %w", r.name, ErrClosed)
	}
	if r.readOnly {
		return fmt.Errorf("%s: store at %#x: %w", r.name, off, ErrReadOnly)
	}
	if err := checkReg(r.name, r.Size(), off); err != nil {
		return err
	}
	mapStore32(wordAt(r.buf, off), toBE(v))
	return nil
}

func (r *File) ReadAt(p []byte, off int64) (int, error) {
	if r.buf == nil {
		return 0, fmt.Errorf("%s: %w", r.name, ErrClosed)
	}
	if err := checkSpan(r.name, r.Size(), off, len(p)); err != nil {
		return 0, err
	}
	return copy(p, r.buf[off:]), nil
}

func (r *File) WriteAt(p []byte, off int64) (int, error) {
	if r.buf == nil {
		return 0, fmt.Errorf("%s: %w", r.name, ErrClosed)
	}
	if r.readOnly {
		return 0, fmt.Errorf("%s: write at %#x: %w", r.name, off, ErrReadOnly)
	}
	if err := checkSpan(r.name, r.Size(), off, len(p)); err != nil {
		return 0, err
	}
	return copy(r.buf[off:], p), nil
}

func (r *File) Bytes() ([]byte, error) {
	if r.buf == nil {
		return nil, fmt.Errorf("%s: %w", r.name, ErrClosed)
	}
	return r.buf, nil
}

// Close unmaps the file. It is safe to call more than once.
func (r *File) Close() error {
	if r.buf == nil {
		return nil
	}
	err := unix.Munmap(r.buf)
	r.buf = nil
	_ = unix.Close(r.fd)
	r.fd = -1
	if err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("%s: munmap: %w", r.name, err)
	}
	return nil
}
