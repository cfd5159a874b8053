//go:build amd64 && race

package vfdrv

import "github.com/vhcrd/vhcrd/vhcr/mlx4"

// Under the race detector the copies are byte loops in functions it is
// told to ignore: the runtime's copy and clear report their ranges to it
// whatever the caller's go:norace, and it cannot know the owner-bit
// protocol that orders the PF's DMA and these accesses.

//go:norace
//go:noinline
func loadEQE(dst *[mlx4.EQESize]byte, slot []byte) {
	for i := range dst {
		dst[i] = slot[i]
	}
}

// dmaCopy copies memory the PF wrote by DMA after a completion EQE, and a
// WQE's body before its owner word is written.
//
//go:norace
//go:noinline
func dmaCopy(dst, src []byte) {
	n := min(len(dst), len(src))
	for i := range n {
		dst[i] = src[i]
	}
}

// dmaZero clears b.
//
//go:norace
//go:noinline
func dmaZero(b []byte) {
	for i := range b {
		b[i] = 0
	}
}
