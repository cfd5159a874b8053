// Package mlx4 mirrors the mlx4 command ABI that the vHCR carries: opcodes,
// command statuses, the 32-byte vHCR layout and the decoded command an
// executor receives. Names follow the Linux mlx4 driver (MLX4_CMD_QUERY_FW is
// QUERY_FW, CMD_STAT_BAD_OP is BAD_OP) so that they grep against
// include/linux/mlx4/cmd.h and drivers/net/ethernet/mellanox/mlx4/cmd.c.
//
// mlx4 is a leaf: it imports nothing of vhcrd but dma, and both the comm
// channel (package vhcr) and the software HCA (package vhcr/hca) build on it.
package mlx4
