package bar

import (
	"errors"
	"fmt"
	"io"
)

// Sentinel errors. Functions wrap them with %w and context (region name,
// offset), so callers test with errors.Is.
var (
	ErrOutOfRange   = errors.New("bar: access out of range")
	ErrUnaligned    = errors.New("bar: unaligned register access")
	ErrReadOnly     = errors.New("bar: region is read-only")
	ErrNotMapped    = errors.New("bar: region cannot be memory-mapped")
	ErrClosed       = errors.New("bar: region is closed")
	ErrTooSmall     = errors.New("bar: region too small")
	ErrBadSpec      = errors.New("bar: bad region spec")
	ErrNotSupported = errors.New("bar: not supported")
)

// Region is a window of device (or device-like) memory.
//
// Implementations: *File (a file mapped MAP_SHARED, tmpfs in CI), *Mem (heap
// memory, for unit tests under the race detector), views made by Sub, and the
// sysfs and vfio backends in subpackages.
type Region interface {
	// Name describes the region for errors and logs, e.g. "file:/dev/shm/x".
	Name() string
	// Size is the length of the region in bytes.
	Size() int64
	// ReadOnly reports whether stores are refused with ErrReadOnly.
	ReadOnly() bool
	// Shared reports whether the region is ordinary memory shared between
	// processes of this host (a file mapping or the heap), on which futex
	// waits and atomic read-modify-write work. Device memory reports false.
	Shared() bool

	// Load32 returns the big-endian 32-bit register at off, read with one
	// 32-bit load.
	Load32(off int64) (uint32, error)
	// Store32 writes v big-endian to the 32-bit register at off with one
	// 32-bit store (no locked instruction).
	Store32(off int64, v uint32) error

	io.ReaderAt
	io.WriterAt

	// Bytes returns the mapped memory of the whole region, or ErrNotMapped.
	Bytes() ([]byte, error)
	// Close unmaps and releases the region. Views of it become invalid.
	Close() error
}

// checkReg validates a 32-bit register offset against a region size.
func checkReg(name string, size, off int64) error {
	if off < 0 || off > size-4 {
		return fmt.Errorf("%s: register at %#x (size %#x): %w", name, off, size, ErrOutOfRange)
	}
	if off&3 != 0 {
		return fmt.Errorf("%s: register at %#x: %w", name, off, ErrUnaligned)
	}
	return nil
}

// checkSpan validates a byte range [off, off+n) against a region size,
// without overflow.
func checkSpan(name string, size, off int64, n int) error {
	if off < 0 || n < 0 || off > size || int64(n) > size-off {
		return fmt.Errorf("%s: %d bytes at %#x (size %#x): %w", name, n, off, size, ErrOutOfRange)
	}
	return nil
}
