// Package master is the PF side of the mlx4 SR-IOV command path (mlx4 calls
// the PF "master"): PF polls every VF's comm page with single 32-bit loads of
// slave_write, runs the per-VF state machine of mlx4_master_do_cmd (RESET,
// VHCR0..VHCR2, VHCR_EN, VHCR_POST; violations reset the VF with bit 17),
// and processes VHCR_POST (post.go) in one path of shared helpers: read the
// vHCR once into a four-word shadow; decode it with mlx4's decoder; admit it
// against its row of the command table (Table, built from hca.Commands,
// mlx4's cmd_info[] joined with the executors and their effects; the rule
// is hca.Admit: no row BAD_PARAM, EPERM BAD_OP, an op_modifier the row does
// not allow BAD_PARAM); check the outbox and copy the 4 KiB inbox into a shadow, both
// through dma.Window.Mailbox; execute on the software HCA (hca.HCA.Exec,
// package vhcr/hca); copy the outbox out; write the status and the immediate
// output back; acknowledge by toggling slave_read; account. The common
// command (no mailbox, not EPERM) takes a fast path in front of the same
// helpers. With the vHCR 'e' bit a command completes by a completion EQE
// (hca.HCA.PostEQE) in one of two ways (complete.go): the early way, acknowledged
// first, the EQE carrying the VF's token, status and immediate output; or
// Linux's PF's, for token 0xffff or a VF configured so, the vHCR written
// back, then an EQE with the per-VF token counter, then the toggle. Every
// EQE into an armed EQ raises the VF's MSI-X vector its EQ context names
// (Options.Interrupts, an irq.Set; the model is vhcr/hca's irq.go); the
// poller looks for re-arms with EQEs pending when idle and every 1024
// busy scans.
//
// It also owns: persistence of each VF's channel state, written before
// every acknowledgement that changes it, in records with a CRC32C check
// word over the PF generation (a restarted PF resumes the VFs' channels,
// and tells with bit 17 every VF whose saved state it cannot trust;
// persist.go); the PF state file (Options.State: the model's checkpoint, a
// redo journal of commands, each VF's last result, EQ positions), so that a
// PF killed at any instruction restarts with every object under its number
// and completes each command exactly once (journal.go, pfstate.go, recover.go); regions that shrink under the PF (the poll loop runs
// under bar.Guard: a lost DMA range resets the VFs it backed, a lost BAR
// ends Run with ErrRegionLost; fault.go), the FLAGS reset handshake, FLR,
// the poller's idle policy (spin, yield, futex doorbell), the counters the
// poller keeps without atomics (Stats), and the writing of the command trace
// (Options.Trace, package vhcr/master/trace; trace.go). Every VF-supplied value is read
// once into PF-private memory and only that copy is checked and used.
//
// The wire contract is package vhcr/wire (its channel record and the state
// file's layout vhcr/pfstate), the VF half vhcr/vfclient; the per-opcode
// ABI facts (cmd_info[]) are package vhcr/mlx4.
package master
