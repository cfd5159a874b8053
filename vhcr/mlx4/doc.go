// Package mlx4 mirrors the mlx4 command ABI that the vHCR carries: opcodes,
// command statuses, the 32-byte vHCR layout with its one decoder
// (VHCRWords, Cmd.DecodeVHCR), the decoded command an executor receives,
// cmd_info[] (CmdInfo: which opcode has an inbox, an outbox or an immediate
// output, which is EPERM, which op_modifiers are legal), EQEs, and the
// registers a VF reads through ACCESS_REG (PTYS). Names follow the Linux
// mlx4 driver (MLX4_CMD_QUERY_FW is QUERY_FW, CMD_STAT_BAD_OP is BAD_OP,
// has_inbox is HasInbox) so that they grep against include/linux/mlx4/cmd.h
// and drivers/net/ethernet/mellanox/mlx4/cmd.c.
//
// mlx4 is a leaf: it imports nothing of vhcrd but dma, and both sides of
// the comm channel (packages vhcr and vhcr/master) and the software HCA
// (package vhcr/hca) build on it.
package mlx4
