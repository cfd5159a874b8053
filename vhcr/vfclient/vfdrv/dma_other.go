//go:build !amd64

package vfdrv

import (
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
