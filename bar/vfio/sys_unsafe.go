package vfio

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

func (Kernel) IoctlBuf(fd int, req uint, arg []byte) (int, error) {
	if len(arg) == 0 {
		return -1, unix.EINVAL
	}
	// The conversion stays inside the call expression (unsafe.Pointer rule
	// 4), so arg is kept alive and in place for the syscall.
	r, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(unsafe.Pointer(&arg[0])))
	if e != 0 {
		return -1, e
	}
	return int(r), nil
}

func (Kernel) Addr(b []byte) uint64 {
	if len(b) == 0 {
		return 0
	}
	return uint64(uintptr(unsafe.Pointer(&b[0])))
}
