package bar

import (
	"errors"
	"fmt"
	"runtime/debug"

	"golang.org/x/sys/unix"
)

// ErrFault means an access to mapped memory faulted: the file behind a
// mapping shrank under it (another process truncated it), or the device
// behind a BAR went away. Without Guard such an access kills the process with
// SIGBUS.
var ErrFault = errors.New("bar: access to mapped memory faulted")

// FaultError reports the address of a faulting access. It unwraps to
// ErrFault.
type FaultError struct {
	Addr uintptr // the faulting address, as the kernel reported it
}

func (e *FaultError) Error() string { return fmt.Sprintf("bar: access at %#x faulted", e.Addr) }
func (e *FaultError) Unwrap() error { return ErrFault }

// Guard runs f with memory faults turned into an error instead of a crash
// (runtime/debug.SetPanicOnFault for the calling goroutine): a fault in f
// unwinds f and Guard returns a *FaultError. Any other panic goes on
// unwinding. Guard costs a deferred call; a loop that runs for a long time
// calls it once around the loop, not once per access, and re-enters it after
// handling a fault.
//
// Which region faulted is a question for Contains: the error's address lies
// in the mapping of exactly one region.
func Guard(f func()) (err error) {
	old := debug.SetPanicOnFault(true)
	defer debug.SetPanicOnFault(old)
	defer func() {
		if r := recover(); r != nil {
			if a, ok := r.(interface{ Addr() uintptr }); ok {
				err = &FaultError{Addr: a.Addr()}
				return
			}
			panic(r)
		}
	}()
	f()
	return nil
}

// Contains reports whether addr lies in r's mapping and, if so, at which
// offset. Regions that are not mapped contain no address.
func Contains(r Region, addr uintptr) (off int64, ok bool) {
	b, err := r.Bytes()
	if err != nil || len(b) == 0 {
		return 0, false
	}
	base := sliceAddr(b)
	if addr < base || addr-base >= uintptr(len(b)) {
		return 0, false
	}
	return int64(addr - base), true
}

// Backed reports how many bytes from the start of r the file behind it
// still holds (fstat of the file the region maps, clamped to the region);
// ok is false for regions that are not backed by a file (heap memory,
// device BARs), which cannot shrink under their mapping. It costs a
// syscall: for fault handling, not the hot path.
func Backed(r Region) (n int64, ok bool) {
	b, is := r.(interface{ backed() (int64, bool) })
	if !is {
		return 0, false
	}
	return b.backed()
}

func (r *File) backed() (int64, bool) {
	if r.fd < 0 {
		return 0, false
	}
	var st unix.Stat_t
	if err := unix.Fstat(r.fd, &st); err != nil {
		return 0, false
	}
	return min(max(st.Size, 0), r.Size()), true
}

func (v *view) backed() (int64, bool) {
	n, ok := Backed(v.parent)
	if !ok {
		return 0, false
	}
	return min(max(n-v.off, 0), v.size), true
}
