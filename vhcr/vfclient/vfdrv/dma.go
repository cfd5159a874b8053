//go:build amd64

package vfdrv

import "github.com/vhcrd/vhcrd/vhcr/mlx4"

// The PF writes EQEs and outboxes into the VF's memory as a device does,
// with plain stores; the owner byte of an EQE is what orders them. These
// reads model the VF's DMA-coherent loads: the race detector is told to
// ignore them (it cannot know the owner-bit protocol), and on amd64 loads
// are not reordered with older loads, so reading the owner byte first and
// the body after is mlx4's dma_rmb() pairing.

//go:norace
//go:noinline
func loadOwner(slot []byte) byte { return slot[mlx4.EQEOwner] }

//go:norace
//go:noinline
func loadEQE(dst *[mlx4.EQESize]byte, slot []byte) {
	for i := range dst {
		dst[i] = slot[i]
	}
}

// dmaCopy copies memory the PF wrote by DMA after a completion EQE.
//
//go:norace
//go:noinline
func dmaCopy(dst, src []byte) {
	n := min(len(dst), len(src))
	for i := range n {
		dst[i] = src[i]
	}
}
