// Package vfclient is the VF (slave) half of the mlx4 SR-IOV command
// channel, as a library: the mlx4 VF driver's command path over vhcrd's
// wire contract (package vhcr/wire).
//
// Attachment opens a served set of regions from its control header and
// tells a live PF from a dead or stopped one (AttachServing, CheckPF). VF is
// one function's channel: sync_toggles, the offline wait, RESET,
// VHCR0..VHCR_EN, posting commands through the vHCR in poll mode with
// mlx4's timeouts (10 s per comm command, 10 s + 60 s per VHCR_POST), the
// FLAGS reset handshake, and SpinPoll, the way a VF waits for an
// acknowledgement. The per-opcode facts a VF needs (which opcodes have an
// inbox or outbox) come from package vhcr/mlx4's cmd_info[].
//
// The driver model built on it (EQs, CQs, MRs, QPs, events, pipelining) is
// package vhcr/vfclient/vfdrv. Nothing here or there imports the PF
// (vhcr/master), the software HCA (vhcr/hca) or the tracker, so a VF tool
// links none of them (cmd/vfctl's dependency test checks it).
package vfclient
