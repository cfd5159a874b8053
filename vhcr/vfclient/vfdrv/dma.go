//go:build amd64

package vfdrv

import "github.com/vhcrd/vhcrd/vhcr/mlx4"

// The PF writes EQEs and outboxes into the VF's memory as a device does,
// with plain stores; the owner byte of an EQE is what orders them. These
// reads model the VF's DMA-coherent loads: the race detector is told to
// ignore them (it cannot know the owner-bit protocol), and on amd64 loads
// are not reordered with older loads, so reading the owner byte first and
// the body after is mlx4's dma_rmb() pairing. The copies are in
// dmacopy_race.go and dmacopy_norace.go.

//go:norace
//go:noinline
func loadOwner(slot []byte) byte { return slot[mlx4.EQEOwner] }
