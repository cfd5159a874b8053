package irq

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

const (
	// MaxVectors is the largest MSI-X table (PCI: Table Size is 11 bits,
	// N-1 encoded).
	MaxVectors = 2048
	// DefaultVectors is the vector count of a VF unless configured: Linux's
	// mlx4 VF asks for ports·CPUs+1 and needs at least 2
	// (mlx4_enable_msi_x), so 8 covers two ports on up to three CPUs.
	DefaultVectors = 8
)

// Sentinel errors.
var (
	ErrVector  = errors.New("irq: no such MSI-X vector")
	ErrVF      = errors.New("irq: no such VF")
	ErrClosed  = errors.New("irq: vectors closed")
	ErrTimeout = errors.New("irq: no interrupt before the timeout")
)

// one is the eventfd increment, in host byte order as eventfd(2) wants it.
// Only ever read (by the kernel): shared by every Raise.
var one = func() (b [8]byte) {
	binary.NativeEndian.PutUint64(b[:], 1)
	return b
}()

// Vectors is one VF's MSI-X vectors, one eventfd each. Raise may be called
// from any goroutine.
type Vectors struct {
	mu        sync.RWMutex // Raise holds it shared, Close exclusively
	fds       []int        // nil once closed
	saturated atomic.Uint64
}

// New makes n vectors (1 ≤ n ≤ MaxVectors).
func New(n int) (*Vectors, error) {
	if n < 1 || n > MaxVectors {
		return nil, fmt.Errorf("%w: %d vectors (1..%d)", ErrVector, n, MaxVectors)
	}
	v := &Vectors{fds: make([]int, 0, n)}
	for range n {
		fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
		if err != nil {
			_ = v.Close()
			return nil, fmt.Errorf("irq: eventfd: %w", err)
		}
		v.fds = append(v.fds, fd)
	}
	return v, nil
}

// Len is the number of vectors (0 once closed).
func (v *Vectors) Len() int {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return len(v.fds)
}

// FD is vector i's eventfd, to hand over (SCM_RIGHTS, the ivshmem server
// protocol). It stays owned by v: Close closes it.
func (v *Vectors) FD(i int) (int, error) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	if v.fds == nil {
		return -1, ErrClosed
	}
	if i < 0 || i >= len(v.fds) {
		return -1, fmt.Errorf("%w: %d of %d", ErrVector, i, len(v.fds))
	}
	return v.fds[i], nil
}

// FDs returns a copy of every vector's eventfd, in vector order.
func (v *Vectors) FDs() []int {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return append([]int(nil), v.fds...)
}

// Raise signals vector i: one write of 1 to its eventfd. A vector out of
// range is ErrVector (bare: this path allocates nothing), after Close
// ErrClosed. A saturated counter (EAGAIN) leaves the interrupt pending: it
// is counted and not an error.
func (v *Vectors) Raise(i int) error {
	v.mu.RLock()
	if v.fds == nil {
		v.mu.RUnlock()
		return ErrClosed
	}
	if uint(i) >= uint(len(v.fds)) {
		v.mu.RUnlock()
		return ErrVector
	}
	_, err := unix.Write(v.fds[i], one[:])
	v.mu.RUnlock()
	switch err {
	case nil:
		return nil
	case unix.EAGAIN:
		v.saturated.Add(1)
		return nil
	}
	return fmt.Errorf("irq: raise vector %d: %w", i, err) // allocates, on failure only
}

// Saturated is how many raises found their counter at its maximum.
func (v *Vectors) Saturated() uint64 { return v.saturated.Load() }

// Close closes every eventfd. Descriptors handed over by SCM_RIGHTS are
// the receiver's copies and stay open.
func (v *Vectors) Close() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	var first error
	for _, fd := range v.fds {
		if err := unix.Close(fd); err != nil && first == nil {
			first = fmt.Errorf("irq: close: %w", err)
		}
	}
	v.fds = nil
	return first
}

// Set is the MSI-X vectors of every VF of a PF: the software HCA's
// interrupt hook.
type Set struct {
	vfs []*Vectors
}

// NewSet makes perVF vectors for each of numVFs VFs.
func NewSet(numVFs, perVF int) (*Set, error) { return NewSetWith(numVFs, perVF, nil) }

// VF returns VF vf's vectors, or nil.
func (s *Set) VF(vf int) *Vectors {
	if vf < 0 || vf >= len(s.vfs) {
		return nil
	}
	return s.vfs[vf]
}

// NumVFs is the number of VFs in the set.
func (s *Set) NumVFs() int { return len(s.vfs) }

// Raise signals VF vf's vector (Vectors.Raise): an unknown VF is ErrVF, a
// vector at or above the VF's count ErrVector. Allocation-free.
func (s *Set) Raise(vf, vector int) error {
	if uint(vf) >= uint(len(s.vfs)) || s.vfs[vf] == nil {
		return ErrVF
	}
	return s.vfs[vf].Raise(vector)
}

// Close closes every VF's vectors.
func (s *Set) Close() error {
	var first error
	for _, v := range s.vfs {
		if v == nil {
			continue
		}
		if err := v.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Drain reads eventfd fd without blocking: the number of raises since the
// last read (the counter is reset), 0 if none.
func Drain(fd int) (uint64, error) {
	var b [8]byte
	_, err := unix.Read(fd, b[:])
	if err == unix.EAGAIN {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("irq: read: %w", err)
	}
	return binary.NativeEndian.Uint64(b[:]), nil
}

// Wait waits up to timeout for eventfd fd to be signalled and returns the
// count it read (≥ 1), or ErrTimeout. A timeout < 0 waits for ever. The
// descriptor may be blocking or not: Wait polls before it reads.
func Wait(fd int, timeout time.Duration) (uint64, error) {
	ms := -1
	var deadline time.Time
	if timeout >= 0 {
		deadline = time.Now().Add(timeout)
	}
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		if timeout >= 0 {
			left := time.Until(deadline)
			if left < 0 {
				left = 0
			}
			ms = int((left + time.Millisecond - 1) / time.Millisecond)
		}
		n, err := unix.Poll(pfd, ms)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("irq: poll: %w", err)
		}
		if n == 0 {
			if timeout >= 0 && !time.Now().Before(deadline) {
				return 0, ErrTimeout
			}
			continue
		}
		if pfd[0].Revents&(unix.POLLERR|unix.POLLNVAL) != 0 {
			return 0, fmt.Errorf("irq: poll: %w: revents %#x", unix.EBADF, pfd[0].Revents)
		}
		c, err := Drain(fd)
		if err != nil || c != 0 {
			return c, err
		}
		// another reader took it: wait again
	}
}
