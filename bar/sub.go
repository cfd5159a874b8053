package bar

import "fmt"

// Sub returns a view of size bytes of r starting at off (both multiples of 8,
// so registers stay naturally aligned). The view does not own r: closing it
// does nothing, and it is valid while r is open. It lets one BAR hold both the
// comm pages and the DMA windows (one ivshmem device).
func Sub(r Region, off, size int64) (Region, error) {
	if off%8 != 0 || size%8 != 0 || size <= 0 {
		return nil, fmt.Errorf("%s: view %#x+%#x: %w", r.Name(), off, size, ErrUnaligned)
	}
	if err := checkSpan(r.Name(), r.Size(), off, int(size)); err != nil {
		return nil, err
	}
	return &view{parent: r, off: off, size: size, name: fmt.Sprintf("%s@%#x+%#x", r.Name(), off, size)}, nil
}

type view struct {
	parent    Region
	off, size int64
	name      string
}

func (v *view) Name() string   { return v.name }
func (v *view) Size() int64    { return v.size }
func (v *view) ReadOnly() bool { return v.parent.ReadOnly() }
func (v *view) Shared() bool   { return v.parent.Shared() }

func (v *view) Load32(off int64) (uint32, error) {
	if err := checkReg(v.name, v.size, off); err != nil {
		return 0, err
	}
	return v.parent.Load32(v.off + off)
}

func (v *view) Store32(off int64, x uint32) error {
	if err := checkReg(v.name, v.size, off); err != nil {
		return err
	}
	return v.parent.Store32(v.off+off, x)
}

func (v *view) ReadAt(p []byte, off int64) (int, error) {
	if err := checkSpan(v.name, v.size, off, len(p)); err != nil {
		return 0, err
	}
	return v.parent.ReadAt(p, v.off+off)
}

func (v *view) WriteAt(p []byte, off int64) (int, error) {
	if err := checkSpan(v.name, v.size, off, len(p)); err != nil {
		return 0, err
	}
	return v.parent.WriteAt(p, v.off+off)
}

func (v *view) Bytes() ([]byte, error) {
	b, err := v.parent.Bytes()
	if err != nil {
		return nil, err
	}
	return b[v.off : v.off+v.size : v.off+v.size], nil
}

func (v *view) Close() error { return nil }
