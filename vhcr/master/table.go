package master

import (
	"github.com/vhcrd/vhcrd/vhcr/hca"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// Executor runs one command on the software HCA.
type Executor func(h *hca.HCA, c *mlx4.Cmd) mlx4.Status

// Entry is one row of the command table (mlx4 cmd.c cmd_info[]): the single
// place that says, per opcode, whether it has an inbox, an outbox or an
// immediate output, whether a VF may use it at all, which op_modifiers are
// legal, which verifier checks it and which executor runs it.
type Entry struct {
	Op          mlx4.Opcode
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
	{Op: mlx4.QUERY_FW, Outbox: true, OpMods: 1, Exec: (*hca.HCA).QUERY_FW},
	{Op: mlx4.QUERY_HCA, Outbox: true, OpMods: 1, Exec: (*hca.HCA).QUERY_HCA},
	{Op: mlx4.QUERY_DEV_CAP, Outbox: true, OpMods: 1, Exec: (*hca.HCA).QUERY_DEV_CAP},
	{Op: mlx4.QUERY_FUNC_CAP, Outbox: true, OpMods: 0b11, Exec: (*hca.HCA).QUERY_FUNC_CAP},
	{Op: mlx4.QUERY_ADAPTER, Outbox: true, OpMods: 1, Exec: (*hca.HCA).QUERY_ADAPTER},
	{Op: mlx4.INIT_PORT, Exec: (*hca.HCA).INIT_PORT},
	{Op: mlx4.CLOSE_PORT, Exec: (*hca.HCA).CLOSE_PORT},
	{Op: mlx4.QUERY_PORT, Outbox: true, OpMods: 1, Exec: (*hca.HCA).QUERY_PORT},
	{Op: mlx4.SET_PORT, Inbox: true, Exec: (*hca.HCA).SET_PORT},
	{Op: mlx4.MAP_EQ, Exec: (*hca.HCA).MAP_EQ},
	{Op: mlx4.SW2HW_EQ, Inbox: true, EncodeSlave: true, Exec: (*hca.HCA).SW2HW_EQ},
	{Op: mlx4.HW_HEALTH_CHECK, Exec: (*hca.HCA).HW_HEALTH_CHECK},
	{Op: mlx4.NOP, Exec: (*hca.HCA).NOP},
	{Op: mlx4.CONFIG_DEV, Outbox: true, Exec: (*hca.HCA).CONFIG_DEV},
	{Op: mlx4.ALLOC_RES, OutImm: true, OpMods: 0b111, Exec: (*hca.HCA).ALLOC_RES},
	{Op: mlx4.FREE_RES, OpMods: 0b111, Exec: (*hca.HCA).FREE_RES},
	{Op: mlx4.SW2HW_MPT, Inbox: true, EncodeSlave: true, Exec: (*hca.HCA).SW2HW_MPT},
	{Op: mlx4.QUERY_MPT, Outbox: true, Exec: (*hca.HCA).QUERY_MPT},
	{Op: mlx4.HW2SW_MPT, Exec: (*hca.HCA).HW2SW_MPT},
	{Op: mlx4.READ_MTT, Outbox: true, Exec: (*hca.HCA).READ_MTT},
	{Op: mlx4.WRITE_MTT, Inbox: true, Exec: (*hca.HCA).WRITE_MTT},
	{Op: mlx4.SYNC_TPT, Inbox: true, Exec: (*hca.HCA).SYNC_TPT},
	{Op: mlx4.HW2SW_EQ, EncodeSlave: true, Exec: (*hca.HCA).HW2SW_EQ},
	{Op: mlx4.QUERY_EQ, Outbox: true, EncodeSlave: true, Exec: (*hca.HCA).QUERY_EQ},
	{Op: mlx4.SW2HW_CQ, Inbox: true, EncodeSlave: true, Exec: (*hca.HCA).SW2HW_CQ},
	{Op: mlx4.HW2SW_CQ, Exec: (*hca.HCA).HW2SW_CQ},
	{Op: mlx4.QUERY_CQ, Outbox: true, Exec: (*hca.HCA).QUERY_CQ},
	{Op: mlx4.MODIFY_CQ, Inbox: true, OutImm: true, Exec: (*hca.HCA).MODIFY_CQ},
	{Op: mlx4.SW2HW_SRQ, Inbox: true, EncodeSlave: true, Exec: (*hca.HCA).SW2HW_SRQ},
	{Op: mlx4.HW2SW_SRQ, Exec: (*hca.HCA).HW2SW_SRQ},
	{Op: mlx4.QUERY_SRQ, Outbox: true, Exec: (*hca.HCA).QUERY_SRQ},
	{Op: mlx4.ARM_SRQ, Exec: (*hca.HCA).ARM_SRQ},
	{Op: mlx4.RST2INIT_QP, Inbox: true, EncodeSlave: true, Exec: (*hca.HCA).RST2INIT_QP},
	{Op: mlx4.INIT2INIT_QP, Inbox: true, Exec: (*hca.HCA).INIT2INIT_QP},
	{Op: mlx4.INIT2RTR_QP, Inbox: true, Exec: (*hca.HCA).INIT2RTR_QP},
	{Op: mlx4.RTR2RTS_QP, Inbox: true, Exec: (*hca.HCA).RTR2RTS_QP},
	{Op: mlx4.RTS2RTS_QP, Inbox: true, Exec: (*hca.HCA).RTS2RTS_QP},
	{Op: mlx4.SQERR2RTS_QP, Inbox: true, Exec: (*hca.HCA).SQERR2RTS_QP},
	{Op: mlx4.TWO_ERR_QP, Exec: (*hca.HCA).TWO_ERR_QP},
	{Op: mlx4.RTS2SQD_QP, Exec: (*hca.HCA).RTS2SQD_QP},
	{Op: mlx4.SQD2SQD_QP, Inbox: true, Exec: (*hca.HCA).SQD2SQD_QP},
	{Op: mlx4.SQD2RTS_QP, Inbox: true, Exec: (*hca.HCA).SQD2RTS_QP},
	{Op: mlx4.TWO_RST_QP, Exec: (*hca.HCA).TWO_RST_QP},
	{Op: mlx4.QUERY_QP, Outbox: true, Exec: (*hca.HCA).QUERY_QP},
	{Op: mlx4.SUSPEND_QP, Exec: (*hca.HCA).SUSPEND_QP},
	{Op: mlx4.UNSUSPEND_QP, Exec: (*hca.HCA).UNSUSPEND_QP},
	{Op: mlx4.UPDATE_QP, Inbox: true, Exec: (*hca.HCA).UPDATE_QP},
	{Op: mlx4.GET_OP_REQ, EPERM: true},
	{Op: mlx4.ALLOCATE_VPP, Outbox: true, EPERM: true},
	{Op: mlx4.SET_VPORT_QOS, Outbox: true, EPERM: true},
	{Op: mlx4.CONF_SPECIAL_QP, Exec: (*hca.HCA).CONF_SPECIAL_QP},
	{Op: mlx4.MAD_IFC, Inbox: true, Outbox: true, Exec: (*hca.HCA).MAD_IFC},
	{Op: mlx4.MAD_DEMUX, EPERM: true},
	{Op: mlx4.QUERY_IF_STAT, Outbox: true, Exec: (*hca.HCA).QUERY_IF_STAT},
	{Op: mlx4.ACCESS_REG, Inbox: true, Outbox: true, Exec: (*hca.HCA).ACCESS_REG},
	{Op: mlx4.CONGESTION_CTRL, EPERM: true},
	{Op: mlx4.QP_ATTACH, Inbox: true, Exec: (*hca.HCA).QP_ATTACH},
	{Op: mlx4.PROMISC, Exec: (*hca.HCA).PROMISC},
	{Op: mlx4.SET_VLAN_FLTR, Inbox: true, Exec: (*hca.HCA).SET_VLAN_FLTR},
	{Op: mlx4.SET_MCAST_FLTR, Exec: (*hca.HCA).SET_MCAST_FLTR},
	{Op: mlx4.DUMP_ETH_STATS, Outbox: true, Exec: (*hca.HCA).DUMP_ETH_STATS},
	{Op: mlx4.INFORM_FLR_DONE, Exec: (*hca.HCA).INFORM_FLR_DONE},
	{Op: mlx4.QP_FLOW_STEERING_ATTACH, Inbox: true, OutImm: true, Exec: (*hca.HCA).QP_FLOW_STEERING_ATTACH},
	{Op: mlx4.QP_FLOW_STEERING_DETACH, Exec: (*hca.HCA).QP_FLOW_STEERING_DETACH},
	{Op: mlx4.FLOW_STEERING_IB_UC_QP_RANGE, EPERM: true},
	{Op: mlx4.VIRT_PORT_MAP, EPERM: true},
}

// Table is the command table indexed by opcode.
type Table struct {
	byOp    [4096]*Entry
	entries []Entry
}

// NumOps is the number of dense opcode indexes (0 = not in the table).
func (t *Table) NumOps() int { return len(t.entries) + 1 }

// OpAt returns the opcode of dense index i (i >= 1).
func (t *Table) OpAt(i int) mlx4.Opcode { return t.entries[i-1].Op }

// Lookup returns the entry for op, or nil.
func (t *Table) Lookup(op mlx4.Opcode) *Entry { return t.byOp[op&0xfff] }

// Entries returns the rows in table order.
func (t *Table) Entries() []Entry { return t.entries }

// NewTable builds the table from rows; overrides replace the executor of
// their opcode (the MAD engine installs MAD_IFC this way).
func NewTable(overrides map[mlx4.Opcode]Executor) *Table {
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
