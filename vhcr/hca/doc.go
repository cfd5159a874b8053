// Package hca is the software HCA behind the comm channel: the firmware a
// master would issue commands to. It holds the model device's configuration,
// the resource tracker and the object tables a firmware keeps (QP, CQ, SRQ,
// MPT, MTT and EQ contexts, counters, MAC/VLAN tables), and it implements one
// executor per opcode: func (h *HCA) NAME(c *Cmd) mlx4.Status, reached
// through Exec, the one entry.
//
// Executors read only the command (decoded from the PF's shadow vHCR) and its
// shadow inbox, write only the zeroed shadow outbox and c.OutParam, and touch
// a VF's DMA memory only through c.Mem, which checks every access. Which
// opcode has an inbox, an outbox or immediate output is said once, in
// mlx4's cmd_info[] (mlx4.CmdInfo); what vhcrd does with each opcode (its
// executor, its effects, how much of the inbox it reads) is said once, in
// the command table (exec.go: Command, Lookup, Commands), which joins the
// two and from which the PF derives its own per-opcode facts. Exec checks
// what a row promises before any executor runs (admitted by Admit, the VF
// index in range, the mailboxes present, the outbox zeroed), so the
// executors rely on it and do not restate it.
//
// Events are EQEs written into the VFs' EQ rings (eq.go); an EQE into an
// armed EQ raises the MSI-X vector its context names, once per arm, through
// the Interrupts the PF installs (irq.go, SetInterrupts).
//
// The firmware's persistent state is plain value tables (State, state.go):
// each live object embeds its value (QPState, CQState, ...), each function
// its VFState, the ports are PortState. Image, the PF's checkpoint of the
// HCA, is that State and the tracker's image, copied; Load copies it back
// and joins each object to its tracker object. Every other field is
// transient and says why; state_test.go fails on a field that is neither.
//
// An HCA is used by one goroutine at a time (the poller): it has no locks.
package hca
