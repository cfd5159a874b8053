// Package mlx4 mirrors the mlx4 command ABI that the vHCR carries: opcodes,
// command statuses, the comm channel's registers, commands and bits (struct
// mlx4_comm, MLX4_COMM_CMD_*), the 32-byte vHCR layout with its one decoder
// (VHCRWords, DecodeVHCR), enum mlx4_resource and the ALLOC_RES modes,
// cmd_info[] (CmdInfo: which opcode has an inbox, an outbox or an immediate
// output, which is EPERM, which op_modifiers are legal), and the layouts the
// commands' mailboxes carry: the QP context and its modify mailbox, the CQ,
// SRQ and EQ contexts, the MPT entry, the WRITE_MTT inbox, the EQE, the
// QUERY_* outboxes and the ACCESS_REG header with the PTYS register; and
// the data path's formats: send and receive WQEs with their segments
// (wqe.go: DecodeSendWQE, EncodeSendWQE, DecodeRecvWQE, EncodeRecvWQE),
// CQEs (cqe.go: DecodeCQE, EncodeCQE, the owner rule CQEOwnerSW), and the
// UAR doorbells and doorbell records (uar.go).
//
// Each layout is written once, here, and checked by golden tests against
// the kernel structure written out in the test; where both sides of the
// channel need a structure, a codec serves both: the PF (package vhcr/hca)
// decodes what the VF driver (package vhcr/vfclient/vfdrv) encodes. Decoders accept
// every bit pattern and clamp sizes derived from VF-controlled exponents.
//
// Names follow the Linux mlx4 driver so that they grep against it: opcodes
// and statuses (MLX4_CMD_QUERY_FW is QUERY_FW, CMD_STAT_BAD_OP is BAD_OP),
// cmd_info[]'s fields (has_inbox is HasInbox), flag and enum constants
// without the MLX4_ prefix (QP_OPTPAR_PKEY_INDEX), the fw.c offset macros
// as they are (QUERY_DEV_CAP_MAX_COUNTERS_OFFSET), and structure offsets
// after the field (QPCCQNSend is struct mlx4_qp_context's cqn_send). Each
// group's comment names its header and structure.
//
// mlx4 is a leaf: it imports nothing of vhcrd (TestABIIsALeaf), and both
// sides of the comm channel (packages vhcr and vhcr/master) and the software
// HCA (package vhcr/hca) build on it. What vhcrd does with a command at run
// time (the command with its VF, shadows and DMA window, hca.Cmd; why it was
// refused, package vhcr/hca/refusal) is not ABI and lives with the PF.
package mlx4
