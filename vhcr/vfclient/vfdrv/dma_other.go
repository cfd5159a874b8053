//go:build !amd64

package vfdrv

import (
	"encoding/binary"
	"sync/atomic"
	"unsafe"

	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// On weakly ordered machines the owner byte is read with an acquire load of
// its (4-byte aligned) word, so that the body loads cannot pass it.

func loadOwner(slot []byte) byte {
	w := atomic.LoadUint32((*uint32)(unsafe.Pointer(&slot[mlx4.EQEOwner-3])))
	b := (*[4]byte)(unsafe.Pointer(&w))
	return b[3]
}

func loadEQE(dst *[mlx4.EQESize]byte, slot []byte) { copy(dst[:], slot) }

func dmaCopy(dst, src []byte) { copy(dst, src) }

func dmaPut32(b []byte, v uint32) {
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&b[0])), toBE32(v))
}

func dmaGet32(b []byte) uint32 {
	return fromBE32(atomic.LoadUint32((*uint32)(unsafe.Pointer(&b[0]))))
}

func dmaByte(b []byte, i int) byte {
	w := atomic.LoadUint32((*uint32)(unsafe.Pointer(&b[i&^3])))
	return (*[4]byte)(unsafe.Pointer(&w))[i&3]
}

func dmaZero(b []byte) { clear(b) }

// toBE32 and fromBE32 swap to and from the big-endian byte order of the
// word in memory.
func toBE32(v uint32) uint32 {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], v)
	return *(*uint32)(unsafe.Pointer(&b[0]))
}

func fromBE32(w uint32) uint32 {
	return binary.BigEndian.Uint32((*[4]byte)(unsafe.Pointer(&w))[:])
}
