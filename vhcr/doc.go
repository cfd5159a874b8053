// Package vhcr is the mlx4 SR-IOV communication channel that both sides
// share, and its VF (slave) half.
//
// Shared: the wire contract (Layout, layout.go and docs/wire-contract.md's table): a
// PF-owned header page at offset 0 of the BAR region and one 4 KiB comm
// page per VF after it, each with the registers of struct mlx4_comm
// (slave_write, slave_read, caps, flags) and the comm commands (RESET,
// VHCR0..VHCR2, VHCR_EN, VHCR_POST) that travel in them; comm.go names them,
// package vhcr/mlx4 defines them (mlx4.CommSlaveWrite, MLX4_COMM_CMD_*).
//
// The VF half (VF) is the mlx4 VF driver's command path as a library:
// sync_toggles, the offline wait, RESET, VHCR0..VHCR_EN, posting commands
// through the vHCR in poll mode with mlx4's timeouts (10 s per comm command,
// 10 s + 60 s per VHCR_POST), the FLAGS reset handshake, and SpinPoll, the
// way a VF waits for an acknowledgement. Attachment opens a served region
// from its header. The per-opcode facts a VF needs (which opcodes have an
// inbox or outbox) come from package vhcr/mlx4's cmd_info[].
//
// The PF (master) half is package vhcr/master; nothing here imports it or
// the software HCA, so a VF tool links neither.
package vhcr
