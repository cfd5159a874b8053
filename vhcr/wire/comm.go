package wire

import "github.com/vhcrd/vhcrd/vhcr/mlx4"

// EQ doorbells in a VF BAR region, where mlx4 puts them: the region is the
// VF's UAR space (mlx4.EQDoorbellOffset); the PF reads a doorbell with one
// 32-bit load. The comm page's registers, commands and bits are mlx4's
// (mlx4/comm.go): the comm page sits at offset 0 of a VF BAR region
// (mlx4.MLX4_SLAVE_COMM_BASE).

// MaxEQDoorbells is the number of EQ doorbells a VF BAR region holds: four
// per UAR page.
const MaxEQDoorbells = 4 * VFBARSize / mlx4.UARPageSize
