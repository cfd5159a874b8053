package vfio

import (
	"encoding/binary"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Sys is the one seam between this package and the kernel: every open,
// close, ioctl, mmap, munmap, pread and pwrite of the package goes through
// it. The real implementation is Kernel; package vfiotest has a fake that
// enforces the kernel's rules.
type Sys interface {
	Open(path string, flags int) (int, error)
	Close(fd int) error
	// Ioctl passes arg by value (or no argument) and returns the result.
	Ioctl(fd int, req uint, arg uintptr) (int, error)
	// IoctlBuf passes a pointer to arg[0]; the kernel reads and writes arg
	// in place. arg holds a native-endian struct (see Marshal).
	IoctlBuf(fd int, req uint, arg []byte) (int, error)
	Mmap(fd int, offset int64, length int, prot, flags int) ([]byte, error)
	Munmap(b []byte) error
	Pread(fd int, p []byte, off int64) (int, error)
	Pwrite(fd int, p []byte, off int64) (int, error)
	// Addr returns the user virtual address of b[0], for DMA mapping.
	Addr(b []byte) uint64
}

// Kernel is the real Sys.
type Kernel struct{}

var _ Sys = Kernel{}

func (Kernel) Open(path string, flags int) (int, error) {
	fd, err := unix.Open(path, flags|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return fd, nil
}

func (Kernel) Close(fd int) error { return unix.Close(fd) }

func (Kernel) Ioctl(fd int, req uint, arg uintptr) (int, error) {
	r, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), arg)
	if e != 0 {
		return -1, e
	}
	return int(r), nil
}

func (Kernel) Mmap(fd int, offset int64, length int, prot, flags int) ([]byte, error) {
	return unix.Mmap(fd, offset, length, prot, flags)
}

func (Kernel) Munmap(b []byte) error { return unix.Munmap(b) }

func (Kernel) Pread(fd int, p []byte, off int64) (int, error) { return unix.Pread(fd, p, off) }

func (Kernel) Pwrite(fd int, p []byte, off int64) (int, error) { return unix.Pwrite(fd, p, off) }

// Marshal encodes an ABI struct in the host's byte order, as the kernel
// reads it.
func Marshal(v any) []byte {
	b, err := binary.Append(nil, binary.NativeEndian, v)
	if err != nil {
		panic(fmt.Sprintf("vfio: marshal %T: %v", v, err))
	}
	return b
}

// Unmarshal decodes an ABI struct from the start of b.
func Unmarshal(b []byte, v any) error {
	if _, err := binary.Decode(b, binary.NativeEndian, v); err != nil {
		return fmt.Errorf("vfio: unmarshal %T from %d bytes: %w", v, len(b), err)
	}
	return nil
}

// ioctlStruct marshals v, runs the ioctl and unmarshals the result back
// into v.
func ioctlStruct(s Sys, fd int, req uint, v any) (int, error) {
	b := Marshal(v)
	r, err := s.IoctlBuf(fd, req, b)
	if err != nil {
		return r, err
	}
	return r, Unmarshal(b, v)
}
