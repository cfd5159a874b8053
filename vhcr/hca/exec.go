package hca

import (
	"fmt"
	"strings"

	"github.com/vhcrd/vhcrd/vhcr/hca/refusal"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// The command table: one row per opcode of mlx4's cmd_info[], saying what
// vhcrd does with it (the shape of QEMU hw/nvme's nvme_cse_acs[] and its
// effect flags). The ABI half of each row (mailboxes, immediate output,
// EPERM, op_modifiers, a QP command's source and target states) is mlx4's
// (vhcr/mlx4 cmdinfo.go and qpmodify.go), joined to the row when the
// package starts; the half below is vhcrd's: the executor, the effects,
// how much of the inbox the executor reads (what the PF's journal keeps),
// and a QP transition's context checks. Everything else per opcode — the
// PF's table and fast-path flag, what is journaled and replayed, the latency
// class, the admission rule — derives from the joined row.

// Effects is what executing an opcode does, as a bitset. Every row has
// exactly one of EffReadOnly, EffChanges and EffPrivileged (the explicit
// "no effect": nothing runs); a zero Effects is a row nobody filled in
// (TestCommandTable).
type Effects uint8

const (
	// EffReadOnly: changes nothing in the model. With a state file the
	// command is not journaled unless it carries the 'e' bit (whose
	// completion token counts), and a replay does not execute it.
	EffReadOnly Effects = 1 << iota
	// EffChanges: may change the model (firmware state, ports, vports,
	// counters, tracked objects): journaled with a state file and executed
	// again by a replay.
	EffChanges
	// EffPrivileged: an EPERM row (mlx4_CMD_EPERM_wrapper): refused with
	// BAD_OP before anything runs; the row has no executor.
	EffPrivileged
	// EffTracked: looks up, adds or removes objects the resource tracker
	// owns (a wrapper of mlx4's resource_tracker.c).
	EffTracked
	// EffQP: the QP state machine (mlx4's *_QP_wrapper family); with
	// EffTracked.
	EffQP
	// EffMAD: runs MADs through the MAD engine (MAD_IFC's VF policy and
	// ProcessMAD).
	EffMAD
)

var effectNames = [...]string{"read-only", "changes", "privileged", "tracked", "qp", "mad"}

func (e Effects) String() string {
	var s []string
	for i, n := range effectNames {
		if e&(1<<i) != 0 {
			s = append(s, n)
		}
	}
	if e>>len(effectNames) != 0 {
		s = append(s, fmt.Sprintf("%#x", uint8(e>>len(effectNames)<<len(effectNames))))
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// Journaled reports whether the command is journaled with a state file
// and replayed (EffChanges).
func (e Effects) Journaled() bool { return e&EffChanges != 0 }

// InboxRead is how much of the inbox the executor reads (the context or
// entry its mlx4 decoder takes): Fixed bytes, plus PerInMod bytes for each
// of the first MaxInMod units the in_modifier counts (WRITE_MTT's
// entries), at most a mailbox. The PF's journal keeps no more of it.
type InboxRead struct{ Fixed, PerInMod, MaxInMod uint16 }

// Bytes is the count for in_modifier inMod.
func (r InboxRead) Bytes(inMod uint32) int {
	return min(mlx4.MailboxSize, int(r.Fixed)+int(r.PerInMod)*int(min(inMod, uint32(r.MaxInMod))))
}

// The inbox reads of the rows.
var (
	wholeInbox = InboxRead{Fixed: mlx4.MailboxSize}
	qpInbox    = InboxRead{Fixed: mlx4.QPMailboxSize} // optpar + QP context
	mttInbox   = InboxRead{Fixed: mlx4.MTTMailboxEntries, PerInMod: mlx4.MTTEntrySize, MaxInMod: mlx4.MaxWriteMTTEntries}
)

// qpChecks are the context checks of a modify-QP wrapper beyond the
// firmware's state check.
type qpChecks uint8

const (
	qpVerifyPath qpChecks = 1 << iota // verify_qp_parameters' GID checks, update_gid, the alternate path
	qpSourceMAC                       // RoCE source MAC check (INIT2RTR)
)

// row is vhcrd's half of a command table row.
type row struct {
	op    mlx4.Opcode
	exec  func(*HCA, *Cmd) mlx4.Status
	eff   Effects
	inbox InboxRead // zero for a row without an inbox
	qp    qpChecks
}

const (
	ro      = EffReadOnly
	changes = EffChanges
	tracked = EffChanges | EffTracked
	qpCmd   = EffChanges | EffTracked | EffQP
)

// table is vhcrd's half of every cmd_info[] row, in cmd_info[]'s order.
var table = [...]row{
	{op: mlx4.QUERY_FW, exec: (*HCA).QUERY_FW, eff: ro},
	{op: mlx4.QUERY_HCA, exec: (*HCA).QUERY_HCA, eff: ro},
	{op: mlx4.QUERY_DEV_CAP, exec: (*HCA).QUERY_DEV_CAP, eff: ro},
	{op: mlx4.QUERY_FUNC_CAP, exec: (*HCA).QUERY_FUNC_CAP, eff: ro},
	{op: mlx4.QUERY_ADAPTER, exec: (*HCA).QUERY_ADAPTER, eff: ro},
	{op: mlx4.INIT_PORT, exec: (*HCA).INIT_PORT, eff: changes},
	{op: mlx4.CLOSE_PORT, exec: (*HCA).CLOSE_PORT, eff: changes},
	{op: mlx4.QUERY_PORT, exec: (*HCA).QUERY_PORT, eff: ro},
	{op: mlx4.SET_PORT, exec: (*HCA).SET_PORT, eff: changes, inbox: wholeInbox},
	{op: mlx4.MAP_EQ, exec: (*HCA).MAP_EQ, eff: tracked},
	{op: mlx4.SW2HW_EQ, exec: (*HCA).SW2HW_EQ, eff: tracked, inbox: InboxRead{Fixed: mlx4.EQContextSize}},
	{op: mlx4.HW_HEALTH_CHECK, exec: (*HCA).HW_HEALTH_CHECK, eff: changes},
	{op: mlx4.NOP, exec: (*HCA).NOP, eff: ro},
	{op: mlx4.CONFIG_DEV, exec: (*HCA).CONFIG_DEV, eff: changes},
	{op: mlx4.ALLOC_RES, exec: (*HCA).ALLOC_RES, eff: tracked},
	{op: mlx4.FREE_RES, exec: (*HCA).FREE_RES, eff: tracked},
	{op: mlx4.SW2HW_MPT, exec: (*HCA).SW2HW_MPT, eff: tracked, inbox: InboxRead{Fixed: mlx4.MPTEntrySize}},
	{op: mlx4.QUERY_MPT, exec: (*HCA).QUERY_MPT, eff: ro | EffTracked},
	{op: mlx4.HW2SW_MPT, exec: (*HCA).HW2SW_MPT, eff: tracked},
	{op: mlx4.READ_MTT, exec: (*HCA).READ_MTT, eff: tracked},
	{op: mlx4.WRITE_MTT, exec: (*HCA).WRITE_MTT, eff: tracked, inbox: mttInbox},
	{op: mlx4.SYNC_TPT, exec: (*HCA).SYNC_TPT, eff: tracked, inbox: wholeInbox},
	{op: mlx4.HW2SW_EQ, exec: (*HCA).HW2SW_EQ, eff: tracked},
	{op: mlx4.QUERY_EQ, exec: (*HCA).QUERY_EQ, eff: ro | EffTracked},
	{op: mlx4.SW2HW_CQ, exec: (*HCA).SW2HW_CQ, eff: tracked, inbox: InboxRead{Fixed: mlx4.CQContextSize}},
	{op: mlx4.HW2SW_CQ, exec: (*HCA).HW2SW_CQ, eff: tracked},
	{op: mlx4.QUERY_CQ, exec: (*HCA).QUERY_CQ, eff: ro | EffTracked},
	{op: mlx4.MODIFY_CQ, exec: (*HCA).MODIFY_CQ, eff: tracked, inbox: InboxRead{Fixed: mlx4.CQContextSize}},
	{op: mlx4.SW2HW_SRQ, exec: (*HCA).SW2HW_SRQ, eff: tracked, inbox: InboxRead{Fixed: mlx4.SRQContextSize}},
	{op: mlx4.HW2SW_SRQ, exec: (*HCA).HW2SW_SRQ, eff: tracked},
	{op: mlx4.QUERY_SRQ, exec: (*HCA).QUERY_SRQ, eff: ro | EffTracked},
	{op: mlx4.ARM_SRQ, exec: (*HCA).ARM_SRQ, eff: tracked},
	{op: mlx4.RST2INIT_QP, exec: (*HCA).RST2INIT_QP, eff: qpCmd, inbox: qpInbox},
	{op: mlx4.INIT2INIT_QP, exec: (*HCA).INIT2INIT_QP, eff: qpCmd, inbox: qpInbox},
	{op: mlx4.INIT2RTR_QP, exec: (*HCA).INIT2RTR_QP, eff: qpCmd, inbox: qpInbox, qp: qpVerifyPath | qpSourceMAC},
	{op: mlx4.RTR2RTS_QP, exec: (*HCA).RTR2RTS_QP, eff: qpCmd, inbox: qpInbox, qp: qpVerifyPath},
	{op: mlx4.RTS2RTS_QP, exec: (*HCA).RTS2RTS_QP, eff: qpCmd, inbox: qpInbox, qp: qpVerifyPath},
	{op: mlx4.SQERR2RTS_QP, exec: (*HCA).SQERR2RTS_QP, eff: qpCmd, inbox: qpInbox},
	{op: mlx4.TWO_ERR_QP, exec: (*HCA).TWO_ERR_QP, eff: qpCmd},
	{op: mlx4.RTS2SQD_QP, exec: (*HCA).RTS2SQD_QP, eff: qpCmd},
	{op: mlx4.SQD2SQD_QP, exec: (*HCA).SQD2SQD_QP, eff: qpCmd, inbox: qpInbox, qp: qpVerifyPath},
	{op: mlx4.SQD2RTS_QP, exec: (*HCA).SQD2RTS_QP, eff: qpCmd, inbox: qpInbox, qp: qpVerifyPath},
	{op: mlx4.TWO_RST_QP, exec: (*HCA).TWO_RST_QP, eff: qpCmd},
	{op: mlx4.QUERY_QP, exec: (*HCA).QUERY_QP, eff: ro | EffTracked | EffQP},
	{op: mlx4.SUSPEND_QP, exec: (*HCA).SUSPEND_QP, eff: qpCmd},
	{op: mlx4.UNSUSPEND_QP, exec: (*HCA).UNSUSPEND_QP, eff: qpCmd},
	{op: mlx4.UPDATE_QP, exec: (*HCA).UPDATE_QP, eff: qpCmd, inbox: wholeInbox},
	{op: mlx4.GET_OP_REQ, eff: EffPrivileged},
	{op: mlx4.ALLOCATE_VPP, eff: EffPrivileged},
	{op: mlx4.SET_VPORT_QOS, eff: EffPrivileged},
	{op: mlx4.CONF_SPECIAL_QP, exec: (*HCA).CONF_SPECIAL_QP, eff: changes},
	// MAD_IFC is read-only: the VF policy refuses every Set (HCA.MAD_IFC),
	// and a replay must not record its MADs into a capture twice.
	{op: mlx4.MAD_IFC, exec: (*HCA).MAD_IFC, eff: ro | EffMAD, inbox: wholeInbox},
	{op: mlx4.MAD_DEMUX, eff: EffPrivileged},
	// QUERY_IF_STAT may clear the counters it reads.
	{op: mlx4.QUERY_IF_STAT, exec: (*HCA).QUERY_IF_STAT, eff: changes},
	{op: mlx4.ACCESS_REG, exec: (*HCA).ACCESS_REG, eff: changes, inbox: wholeInbox},
	{op: mlx4.CONGESTION_CTRL, eff: EffPrivileged},
	{op: mlx4.QP_ATTACH, exec: (*HCA).QP_ATTACH, eff: tracked, inbox: wholeInbox},
	{op: mlx4.PROMISC, exec: (*HCA).PROMISC, eff: changes},
	{op: mlx4.SET_VLAN_FLTR, exec: (*HCA).SET_VLAN_FLTR, eff: changes, inbox: wholeInbox},
	{op: mlx4.SET_MCAST_FLTR, exec: (*HCA).SET_MCAST_FLTR, eff: changes},
	{op: mlx4.DUMP_ETH_STATS, exec: (*HCA).DUMP_ETH_STATS, eff: changes},
	{op: mlx4.INFORM_FLR_DONE, exec: (*HCA).INFORM_FLR_DONE, eff: changes},
	{op: mlx4.QP_FLOW_STEERING_ATTACH, exec: (*HCA).QP_FLOW_STEERING_ATTACH, eff: tracked, inbox: wholeInbox},
	{op: mlx4.QP_FLOW_STEERING_DETACH, exec: (*HCA).QP_FLOW_STEERING_DETACH, eff: tracked},
	{op: mlx4.FLOW_STEERING_IB_UC_QP_RANGE, eff: EffPrivileged},
	{op: mlx4.VIRT_PORT_MAP, eff: EffPrivileged},
}

// Command is one joined row of the command table: mlx4's cmd_info[] row
// and QP transition with vhcrd's executor, effects and inbox read.
type Command struct {
	mlx4.Info
	// Exec is the executor (nil for an EPERM row). The PF calls it only
	// through HCA.Exec.
	Exec    func(*HCA, *Cmd) mlx4.Status
	Effects Effects
	// Inbox is how much of the inbox the executor reads (zero without an
	// inbox).
	Inbox InboxRead
	// QP is the command's transition in qp.c's op[][] (From 0: not a
	// modify-QP command).
	QP    mlx4.QPTransition
	qp    qpChecks
	index int
	// admits is the admission rule as a mask of the op_modifiers admitted:
	// bit m for m below 16, bit 16 for every m from 16 (Info.OpModOK): the
	// row's OpMods, all for a row that allows any, none for an EPERM row or
	// an opcode without a row.
	admits uint32
}

// Index is 1 + the row's place in cmd_info[] (mlx4.CmdIndex): the dense
// index of counters; 0 is no row.
func (x *Command) Index() int { return x.index }

// commands are the joined rows at their dense index (mlx4.CmdIndex); row 0
// is the zero Command of an opcode without a row. Filled by init, not by an
// initializer: the executors look their own rows up (modifyQP), which would
// make table's initialization depend on itself.
var commands [1 + mlx4.NumCmdInfo]Command

func init() { commands = joinRows() }

// joinRows joins mlx4's half of each row to vhcrd's (table).
func joinRows() (t [1 + mlx4.NumCmdInfo]Command) {
	for _, in := range mlx4.CmdInfos() {
		i := mlx4.CmdIndex(in.Op)
		t[i].Info, t[i].index = in, i
		t[i].QP, _ = mlx4.QPTransitionOf(in.Op)
		switch {
		case in.EPERM:
		case in.OpMods == 0:
			t[i].admits = 1<<17 - 1
		default:
			t[i].admits = uint32(in.OpMods)
		}
	}
	for _, r := range table {
		i := mlx4.CmdIndex(r.op)
		if i == 0 || t[i].Exec != nil || t[i].Effects != 0 {
			panic("hca: command table row for " + r.op.String() + " not in cmd_info[] or twice")
		}
		t[i].Exec, t[i].Effects, t[i].Inbox, t[i].qp = r.exec, r.eff, r.inbox, r.qp
	}
	return t
}

// Lookup returns op's row of the command table, or nil for an opcode
// without a row of cmd_info[].
func Lookup(op mlx4.Opcode) *Command {
	if i := mlx4.CmdIndex(op); i != 0 {
		return &commands[i]
	}
	return nil
}

// Commands returns the joined rows in cmd_info[]'s order (a copy).
func Commands() []Command { return append([]Command(nil), commands[1:]...) }

// Executes reports whether the model executes op (a row of cmd_info[] that
// is not EPERM).
func Executes(op mlx4.Opcode) bool { return commands[mlx4.CmdIndex(op)].Exec != nil }

// Admit is the admission rule of a VF's command, the one the PF's post
// path (fast and general) and Exec apply: an opcode without a row (x nil)
// is BAD_PARAM, as mlx4 answers unknown opcodes; an EPERM row BAD_OP
// (mlx4_CMD_EPERM_wrapper); an op_modifier the row does not allow
// BAD_PARAM (the wrapper's -EINVAL). An admitted command costs the test in
// front (Admit inlines); a refusal is said by refuse.
func Admit(c *Cmd, x *Command) mlx4.Status {
	if x != nil && x.admits&(1<<min(c.OpMod, 16)) != 0 {
		return mlx4.OK
	}
	return refuse(c, x)
}

// refuse is Admit's refusal, in mlx4's order. Kept out of line so that
// Admit inlines.
//
//go:noinline
func refuse(c *Cmd, x *Command) mlx4.Status {
	switch {
	case x == nil || x.index == 0:
		return c.Refuse(mlx4.BAD_PARAM, refusal.UnknownOpcode)
	case x.EPERM:
		return c.Refuse(mlx4.BAD_OP, refusal.Privileged)
	}
	return c.Refuse(mlx4.BAD_PARAM, refusal.OpModifier)
}

// Exec runs c on the HCA: the one entry to the executors, for the PF and
// for tests alike. It guarantees once what op's row promises the
// executors, so that none of them restates it: the command is admitted
// (Admit), the VF index is in range (INTERNAL_ERR), the inbox is present
// for a has_inbox row (INTERNAL_ERR, as an unreadable inbox), and the
// outbox for a has_outbox row (INTERNAL_ERR), which Exec zeroes before the
// executor runs.
func (h *HCA) Exec(c *Cmd) mlx4.Status {
	x := &commands[mlx4.CmdIndex(c.Op)]
	if s := Admit(c, x); s != mlx4.OK {
		return s
	}
	switch {
	case x.Exec == nil: // a row left without its executor (TestCommandTable)
		return c.Refuse(mlx4.INTERNAL_ERR, refusal.NotModelled)
	case uint(c.VF) >= uint(len(h.Funcs)): // New sizes Funcs and the firmware's per-VF tables alike
		return c.Refuse(mlx4.INTERNAL_ERR, refusal.NotFound)
	case x.HasInbox && c.Inbox == nil:
		return c.Refuse(mlx4.INTERNAL_ERR, refusal.InboxDMA)
	case x.HasOutbox:
		if c.Outbox == nil {
			return c.Refuse(mlx4.INTERNAL_ERR, refusal.Context)
		}
		clear(c.Outbox[:])
	}
	h.tptChanged() // keycache.go: before and after, whatever the command
	s := x.Exec(h, c)
	h.tptChanged()
	h.dpStep() // CQEs a command's flush held back (dplog.go)
	return s
}
