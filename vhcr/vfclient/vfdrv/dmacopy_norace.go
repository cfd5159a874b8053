//go:build amd64 && !race

package vfdrv

import "github.com/vhcrd/vhcrd/vhcr/mlx4"

// Without the race detector the copies are the builtins' (memmove,
// memclr): their wider loads and stores keep the order against the owner's
// access that matters, as amd64 reorders no load with an older load and no
// store with an older store. (Under the race detector the runtime's copy
// reports its ranges whatever the caller's go:norace, so
// dmacopy_race.go copies by bytes.)

//go:norace
//go:noinline
func loadEQE(dst *[mlx4.EQESize]byte, slot []byte) { copy(dst[:], slot) }

// dmaCopy copies memory the PF wrote by DMA after a completion EQE, and a
// WQE's body before its owner word is written.
//
//go:norace
//go:noinline
func dmaCopy(dst, src []byte) { copy(dst, src) }

// dmaZero clears b.
//
//go:norace
//go:noinline
func dmaZero(b []byte) { clear(b) }
