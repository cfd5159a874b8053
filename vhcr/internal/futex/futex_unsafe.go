package futex

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Futex operations (linux/futex.h); x/sys/unix does not define them.
const (
	futexWaitOp = 0 // FUTEX_WAIT
	futexWakeOp = 1 // FUTEX_WAKE
)

// Wait blocks while *addr == val, at most timeoutNS nanoseconds. The word
// is shared between processes (no FUTEX_PRIVATE_FLAG). Spurious returns are
// fine: callers re-check their condition.
func Wait(addr *uint32, val uint32, timeoutNS int64) {
	ts := unix.NsecToTimespec(timeoutNS)
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWaitOp, uintptr(val),
		uintptr(unsafe.Pointer(&ts)), 0, 0)
}

// Wake wakes up to n waiters on addr.
func Wake(addr *uint32, n int) {
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWakeOp, uintptr(n), 0, 0, 0)
}
