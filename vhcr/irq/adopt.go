package irq

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Adopt makes Vectors of eventfds another process made and handed over
// (a restarted PF's file-descriptor store): vector i is fds[i]. Each must
// be an eventfd; it is made non-blocking and close-on-exec, and is v's
// from then on (Close closes it). On an error no descriptor is closed:
// they stay the caller's.
func Adopt(fds []int) (*Vectors, error) {
	if len(fds) < 1 || len(fds) > MaxVectors {
		return nil, fmt.Errorf("%w: %d vectors (1..%d)", ErrVector, len(fds), MaxVectors)
	}
	for i, fd := range fds {
		if !isEventfd(fd) {
			return nil, fmt.Errorf("%w: vector %d: descriptor %d is not an eventfd", ErrVector, i, fd)
		}
	}
	for i, fd := range fds {
		if err := unix.SetNonblock(fd, true); err != nil {
			return nil, fmt.Errorf("irq: vector %d: %w", i, err)
		}
		unix.CloseOnExec(fd)
	}
	return &Vectors{fds: append([]int(nil), fds...)}, nil
}

// isEventfd reports whether fd is an eventfd (its /proc link names the
// anonymous inode's kind).
func isEventfd(fd int) bool {
	l, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	return err == nil && l == "anon_inode:[eventfd]"
}

// NewSetWith is NewSet where the VFs in have keep the Vectors given
// (adopted ones, which must have perVF vectors each) and the others get
// new ones. The set owns every Vectors in have from then on, even on an
// error (Close closes them).
func NewSetWith(numVFs, perVF int, have map[int]*Vectors) (*Set, error) {
	if numVFs < 0 {
		closeAll(have)
		return nil, fmt.Errorf("%w: %d VFs", ErrVF, numVFs)
	}
	s := &Set{vfs: make([]*Vectors, numVFs)}
	for vf, v := range have {
		if vf < 0 || vf >= numVFs || v.Len() != perVF {
			closeAll(have)
			return nil, fmt.Errorf("%w: VF %d of %d with %d vectors (want %d)", ErrVF, vf, numVFs, v.Len(), perVF)
		}
		s.vfs[vf] = v
	}
	for i := range s.vfs {
		if s.vfs[i] != nil {
			continue
		}
		v, err := New(perVF)
		if err != nil {
			_ = s.Close()
			return nil, fmt.Errorf("VF %d: %w", i, err)
		}
		s.vfs[i] = v
	}
	return s, nil
}

func closeAll(have map[int]*Vectors) {
	for _, v := range have {
		_ = v.Close()
	}
}
