package bar

import (
	"fmt"
	"unsafe"
)

// Mem is a Region over heap memory. The race detector sees every access to
// it, which is why unit tests of pollers use Mem rather than a file mapping.
// Mem is Shared: futex waits on its words work within the process.
type Mem struct {
	name     string
	buf      []byte
	readOnly bool
	closed   bool
}

// NewMem returns a zeroed heap Region of size bytes (a multiple of 8),
// 8-byte aligned.
func NewMem(name string, size int64) (*Mem, error) {
	if size <= 0 || size%8 != 0 {
		return nil, fmt.Errorf("mem:%s: size %d: %w", name, size, ErrBadSpec)
	}
	words := make([]uint64, size/8)
	buf := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), size)
	return &Mem{name: "mem:" + name, buf: buf}, nil
}

// SetReadOnly makes later stores fail with ErrReadOnly (a read-only BAR).
func (m *Mem) SetReadOnly(ro bool) { m.readOnly = ro }

func (m *Mem) Name() string   { return m.name }
func (m *Mem) Size() int64    { return int64(len(m.buf)) }
func (m *Mem) ReadOnly() bool { return m.readOnly }
func (m *Mem) Shared() bool   { return true }

func (m *Mem) Load32(off int64) (uint32, error) {
	if m.closed {
		return 0, fmt.Errorf("%s: %w", m.name, ErrClosed)
	}
	if err := checkReg(m.name, m.Size(), off); err != nil {
		return 0, err
	}
	return fromBE(load32(wordAt(m.buf, off))), nil
}

func (m *Mem) Store32(off int64, v uint32) error {
	if m.closed {
		return fmt.Errorf("%s: %w", m.name, ErrClosed)
	}
	if m.readOnly {
		return fmt.Errorf("%s: store at %#x: %w", m.name, off, ErrReadOnly)
	}
	if err := checkReg(m.name, m.Size(), off); err != nil {
		return err
	}
	store32(wordAt(m.buf, off), toBE(v))
	return nil
}

func (m *Mem) ReadAt(p []byte, off int64) (int, error) {
	if m.closed {
		return 0, fmt.Errorf("%s: %w", m.name, ErrClosed)
	}
	if err := checkSpan(m.name, m.Size(), off, len(p)); err != nil {
		return 0, err
	}
	return copy(p, m.buf[off:]), nil
}

func (m *Mem) WriteAt(p []byte, off int64) (int, error) {
	if m.closed {
		return 0, fmt.Errorf("%s: %w", m.name, ErrClosed)
	}
	if m.readOnly {
		return 0, fmt.Errorf("%s: write at %#x: %w", m.name, off, ErrReadOnly)
	}
	if err := checkSpan(m.name, m.Size(), off, len(p)); err != nil {
		return 0, err
	}
	return copy(m.buf[off:], p), nil
}

func (m *Mem) Bytes() ([]byte, error) {
	if m.closed {
		return nil, fmt.Errorf("%s: %w", m.name, ErrClosed)
	}
	return m.buf, nil
}

// Close marks the region closed. The heap memory stays valid for Regs that
// still point at it (the garbage collector owns it).
func (m *Mem) Close() error { m.closed = true; return nil }
