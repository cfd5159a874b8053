package vhcr

import (
	"github.com/vhcrd/vhcrd/vhcr/hca"
	"github.com/vhcrd/vhcrd/vhcr/hcr"
)

// Executor runs one command on the software HCA.
type Executor func(h *hca.HCA, c *hcr.Cmd) hcr.Status

// Entry is one row of the command table (mlx4 cmd.c cmd_info[]): the single
// place that says, per opcode, whether it has an inbox, an outbox or an
// immediate output, whether a VF may use it at all, which op_modifiers are
// legal, which verifier checks it and which executor runs it.
type Entry struct {
	Op          hcr.Opcode
	Inbox       bool   // 4 KiB inbox at in_param (low 8 bits masked)
	Outbox      bool   // 4 KiB outbox at out_param
	OutImm      bool   // out_param is an immediate output, copied back even on failure
	EncodeSlave bool   // firmware learns the owner from in_param's low byte
	EPERM       bool   // mlx4_CMD_EPERM_wrapper: always BAD_OP for a VF
	OpMods      uint16 // legal op_modifier values, bit n = n allowed; 0 = any
	Verify      Executor
	Exec        Executor

	index int  // dense index for counters; 0 is "not in the table"
	plain bool // no mailbox, no verifier, not EPERM, executed: postPlain may run it
}

// tableEntries is cmd_info[] of mlx4 cmd.c (66 entries), in its order, plus
// QUERY_ADAPTER's and QUERY_HCA's native rows. Opcodes absent from it answer
// BAD_PARAM (0x03), as mlx4 answers them.
var tableEntries = []Entry{
	{Op: hcr.QUERY_FW, Outbox: true, OpMods: 1, Exec: (*hca.HCA).QUERY_FW},
	{Op: hcr.QUERY_HCA, Outbox: true, OpMods: 1, Exec: (*hca.HCA).QUERY_HCA},
	{Op: hcr.QUERY_DEV_CAP, Outbox: true, OpMods: 1, Exec: (*hca.HCA).QUERY_DEV_CAP},
	{Op: hcr.QUERY_FUNC_CAP, Outbox: true, OpMods: 0b11, Exec: (*hca.HCA).QUERY_FUNC_CAP},
	{Op: hcr.QUERY_ADAPTER, Outbox: true, OpMods: 1, Exec: (*hca.HCA).QUERY_ADAPTER},
	{Op: hcr.INIT_PORT, Exec: (*hca.HCA).INIT_PORT},
	{Op: hcr.CLOSE_PORT, Exec: (*hca.HCA).CLOSE_PORT},
	{Op: hcr.QUERY_PORT, Outbox: true, OpMods: 1, Exec: (*hca.HCA).QUERY_PORT},
	{Op: hcr.SET_PORT, Inbox: true, Exec: (*hca.HCA).SET_PORT},
	{Op: hcr.MAP_EQ, Exec: (*hca.HCA).MAP_EQ},
	{Op: hcr.SW2HW_EQ, Inbox: true, EncodeSlave: true, Exec: (*hca.HCA).SW2HW_EQ},
	{Op: hcr.HW_HEALTH_CHECK, Exec: (*hca.HCA).HW_HEALTH_CHECK},
	{Op: hcr.NOP, Exec: (*hca.HCA).NOP},
	{Op: hcr.CONFIG_DEV, Outbox: true, Exec: (*hca.HCA).CONFIG_DEV},
	{Op: hcr.ALLOC_RES, OutImm: true, OpMods: 0b111, Exec: (*hca.HCA).ALLOC_RES},
	{Op: hcr.FREE_RES, OpMods: 0b111, Exec: (*hca.HCA).FREE_RES},
	{Op: hcr.SW2HW_MPT, Inbox: true, EncodeSlave: true, Exec: (*hca.HCA).SW2HW_MPT},
	{Op: hcr.QUERY_MPT, Outbox: true, Exec: (*hca.HCA).QUERY_MPT},
	{Op: hcr.HW2SW_MPT, Exec: (*hca.HCA).HW2SW_MPT},
	{Op: hcr.READ_MTT, Outbox: true, Exec: (*hca.HCA).READ_MTT},
	{Op: hcr.WRITE_MTT, Inbox: true, Exec: (*hca.HCA).WRITE_MTT},
	{Op: hcr.SYNC_TPT, Inbox: true, Exec: (*hca.HCA).SYNC_TPT},
	{Op: hcr.HW2SW_EQ, EncodeSlave: true, Exec: (*hca.HCA).HW2SW_EQ},
	{Op: hcr.QUERY_EQ, Outbox: true, EncodeSlave: true, Exec: (*hca.HCA).QUERY_EQ},
	{Op: hcr.SW2HW_CQ, Inbox: true, EncodeSlave: true, Exec: (*hca.HCA).SW2HW_CQ},
	{Op: hcr.HW2SW_CQ, Exec: (*hca.HCA).HW2SW_CQ},
	{Op: hcr.QUERY_CQ, Outbox: true, Exec: (*hca.HCA).QUERY_CQ},
	{Op: hcr.MODIFY_CQ, Inbox: true, OutImm: true, Exec: (*hca.HCA).MODIFY_CQ},
	{Op: hcr.SW2HW_SRQ, Inbox: true, EncodeSlave: true, Exec: (*hca.HCA).SW2HW_SRQ},
	{Op: hcr.HW2SW_SRQ, Exec: (*hca.HCA).HW2SW_SRQ},
	{Op: hcr.QUERY_SRQ, Outbox: true, Exec: (*hca.HCA).QUERY_SRQ},
	{Op: hcr.ARM_SRQ, Exec: (*hca.HCA).ARM_SRQ},
	{Op: hcr.RST2INIT_QP, Inbox: true, EncodeSlave: true, Exec: (*hca.HCA).RST2INIT_QP},
	{Op: hcr.INIT2INIT_QP, Inbox: true, Exec: (*hca.HCA).INIT2INIT_QP},
	{Op: hcr.INIT2RTR_QP, Inbox: true, Exec: (*hca.HCA).INIT2RTR_QP},
	{Op: hcr.RTR2RTS_QP, Inbox: true, Exec: (*hca.HCA).RTR2RTS_QP},
	{Op: hcr.RTS2RTS_QP, Inbox: true, Exec: (*hca.HCA).RTS2RTS_QP},
	{Op: hcr.SQERR2RTS_QP, Inbox: true, Exec: (*hca.HCA).SQERR2RTS_QP},
	{Op: hcr.TWO_ERR_QP, Exec: (*hca.HCA).TWO_ERR_QP},
	{Op: hcr.RTS2SQD_QP, Exec: (*hca.HCA).RTS2SQD_QP},
	{Op: hcr.SQD2SQD_QP, Inbox: true, Exec: (*hca.HCA).SQD2SQD_QP},
	{Op: hcr.SQD2RTS_QP, Inbox: true, Exec: (*hca.HCA).SQD2RTS_QP},
	{Op: hcr.TWO_RST_QP, Exec: (*hca.HCA).TWO_RST_QP},
	{Op: hcr.QUERY_QP, Outbox: true, Exec: (*hca.HCA).QUERY_QP},
	{Op: hcr.SUSPEND_QP, Exec: (*hca.HCA).SUSPEND_QP},
	{Op: hcr.UNSUSPEND_QP, Exec: (*hca.HCA).UNSUSPEND_QP},
	{Op: hcr.UPDATE_QP, Inbox: true, Exec: (*hca.HCA).UPDATE_QP},
	{Op: hcr.GET_OP_REQ, EPERM: true},
	{Op: hcr.ALLOCATE_VPP, Outbox: true, EPERM: true},
	{Op: hcr.SET_VPORT_QOS, Outbox: true, EPERM: true},
	{Op: hcr.CONF_SPECIAL_QP, Exec: (*hca.HCA).CONF_SPECIAL_QP},
	{Op: hcr.MAD_IFC, Inbox: true, Outbox: true, Exec: (*hca.HCA).MAD_IFC},
	{Op: hcr.MAD_DEMUX, EPERM: true},
	{Op: hcr.QUERY_IF_STAT, Outbox: true, Exec: (*hca.HCA).QUERY_IF_STAT},
	{Op: hcr.ACCESS_REG, Inbox: true, Outbox: true, Exec: (*hca.HCA).ACCESS_REG},
	{Op: hcr.CONGESTION_CTRL, EPERM: true},
	{Op: hcr.QP_ATTACH, Inbox: true, Exec: (*hca.HCA).QP_ATTACH},
	{Op: hcr.PROMISC, Exec: (*hca.HCA).PROMISC},
	{Op: hcr.SET_VLAN_FLTR, Inbox: true, Exec: (*hca.HCA).SET_VLAN_FLTR},
	{Op: hcr.SET_MCAST_FLTR, Exec: (*hca.HCA).SET_MCAST_FLTR},
	{Op: hcr.DUMP_ETH_STATS, Outbox: true, Exec: (*hca.HCA).DUMP_ETH_STATS},
	{Op: hcr.INFORM_FLR_DONE, Exec: (*hca.HCA).INFORM_FLR_DONE},
	{Op: hcr.QP_FLOW_STEERING_ATTACH, Inbox: true, OutImm: true, Exec: (*hca.HCA).QP_FLOW_STEERING_ATTACH},
	{Op: hcr.QP_FLOW_STEERING_DETACH, Exec: (*hca.HCA).QP_FLOW_STEERING_DETACH},
	{Op: hcr.FLOW_STEERING_IB_UC_QP_RANGE, EPERM: true},
	{Op: hcr.VIRT_PORT_MAP, EPERM: true},
}

// Table is the command table indexed by opcode.
type Table struct {
	byOp    [4096]*Entry
	entries []Entry
}

// NumOps is the number of dense opcode indexes (0 = not in the table).
func (t *Table) NumOps() int { return len(t.entries) + 1 }

// OpAt returns the opcode of dense index i (i >= 1).
func (t *Table) OpAt(i int) hcr.Opcode { return t.entries[i-1].Op }

// Lookup returns the entry for op, or nil.
func (t *Table) Lookup(op hcr.Opcode) *Entry { return t.byOp[op&0xfff] }

// Entries returns the rows in table order.
func (t *Table) Entries() []Entry { return t.entries }

// NewTable builds the table from rows; overrides replace the executor of
// their opcode (the MAD engine installs MAD_IFC this way).
func NewTable(overrides map[hcr.Opcode]Executor) *Table {
	t := &Table{entries: append([]Entry(nil), tableEntries...)}
	for i := range t.entries {
		e := &t.entries[i]
		e.index = i + 1
		if x, ok := overrides[e.Op]; ok {
			e.Exec = x
		}
		e.plain = !e.EPERM && !e.Inbox && !e.Outbox && e.Verify == nil && e.Exec != nil
		if t.byOp[e.Op] != nil {
			panic("vhcr: duplicate table entry for " + e.Op.String())
		}
		t.byOp[e.Op] = e
	}
	return t
}

// Index is the entry's dense counter index (1..NumOps-1).
func (e *Entry) Index() int { return e.index }
