// Package mlx4 mirrors the mlx4 command ABI that the vHCR carries: opcodes,
// command statuses, the 32-byte vHCR layout and the decoded command an
// executor receives, and the layouts the commands' mailboxes carry: the QP,
// CQ, SRQ and EQ contexts, the MPT entry, the WRITE_MTT inbox and the EQE,
// each with a codec that the PF (package vhcr/hca, decoding) and the VF
// driver (package vhcr/vfdrv, encoding) share, so that every offset is
// written once. Offset constants are named after the kernel structure's
// fields (QPCCQNSend is struct mlx4_qp_context's cqn_send); flag and enum
// constants keep the kernel's names without the MLX4_ prefix. Names follow the Linux mlx4 driver (MLX4_CMD_QUERY_FW is
// QUERY_FW, CMD_STAT_BAD_OP is BAD_OP) so that they grep against
// include/linux/mlx4/cmd.h and drivers/net/ethernet/mellanox/mlx4/cmd.c.
//
// mlx4 is a leaf: it imports nothing of vhcrd but dma, and both the comm
// channel (package vhcr) and the software HCA (package vhcr/hca) build on it.
package mlx4
