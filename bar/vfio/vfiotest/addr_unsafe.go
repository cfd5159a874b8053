package vfiotest

import "unsafe"

// Addr returns the real address of b[0], so the fake checks the page
// alignment the kernel requires of DMA buffers.
func (k *Kernel) Addr(b []byte) uint64 {
	if len(b) == 0 {
		return 0
	}
	return uint64(uintptr(unsafe.Pointer(&b[0])))
}
