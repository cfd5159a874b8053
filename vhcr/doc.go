// Package vhcr owns the mlx4 SR-IOV communication channel, both sides.
//
// The PF side (PF, Poller) polls every VF's comm page with single 32-bit loads
// of slave_write, runs the per-VF state machine of mlx4_master_do_cmd (RESET,
// VHCR0..VHCR2, VHCR_EN, VHCR_POST; violations reset the VF with bit 17),
// and processes VHCR_POST in the order of the seed commit: copy the vHCR into
// a private shadow; look the opcode up in the command table (unknown: 0x03,
// privileged: 0x02); check the modifiers; copy the 4 KiB inbox into a shadow;
// validate; execute on the software HCA (package vhcr/hca); copy the outbox
// out; write status and immediate output back; acknowledge by toggling
// slave_read. With the vHCR 'e' bit the PF acknowledges first and reports
// completion, status and immediate output in a completion EQE carrying the
// VF's token.
//
// The VF side (VF) is the driver half as a library: sync_toggles, the offline
// wait, RESET, VHCR0..VHCR_EN, and posting commands in poll mode with the
// timeouts of mlx4 (10 s per comm command, 10 s + 60 s per VHCR_POST).
//
// The wire contract (Layout) puts a PF-owned header page at offset 0 of the
// BAR region and one 4 KiB comm page per VF after it; see layout.go and the
// README's table. Every VF-supplied value is read once into PF-private memory
// and only that copy is checked and used.
package vhcr
