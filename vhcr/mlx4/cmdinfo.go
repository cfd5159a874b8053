package mlx4

// Info is one row of cmd_info[] in mlx4 cmd.c, the facts of an opcode's ABI
// that both sides of the comm channel rely on: a VF driver to know where its
// mailboxes go, the master to know what to copy in and out. Field names are
// the kernel's.
type Info struct {
	Op            Opcode
	HasInbox      bool // has_inbox: a 4 KiB inbox at in_param (low 8 bits masked, INBOX_MASK)
	HasOutbox     bool // has_outbox: a 4 KiB outbox at out_param
	OutIsImm      bool // out_is_imm: out_param is an immediate output, written back even on failure
	EncodeSlaveID bool // encode_slave_id: firmware learns the owner from in_param's low byte
	// EPERM: the wrapper is mlx4_CMD_EPERM_wrapper; a VF always gets
	// BAD_OP (-EPERM).
	EPERM bool
	// OpMods are the legal op_modifier values (bit n set: n is legal; 0:
	// any), as the opcode's wrapper checks them (cmd_info[] has no column
	// for them; each wrapper refuses the others with -EINVAL, BAD_PARAM).
	OpMods uint16
}

// OpModOK reports whether m is a legal op_modifier for the opcode. OpMods
// names values below 16 only: for a row that lists them, 16 and above are
// illegal (not folded onto m&0xf, which made 0x11 pass as 1).
func (i *Info) OpModOK(m uint8) bool { return i.OpMods == 0 || (m < 16 && i.OpMods&(1<<m) != 0) }

// cmdInfo is cmd_info[] of mlx4 cmd.c (66 rows), in its order. Opcodes
// absent from it are answered with BAD_PARAM (0x03) by the master.
var cmdInfo = [...]Info{
	{Op: QUERY_FW, HasOutbox: true, OpMods: 1},
	{Op: QUERY_HCA, HasOutbox: true, OpMods: 1},
	{Op: QUERY_DEV_CAP, HasOutbox: true, OpMods: 1},
	{Op: QUERY_FUNC_CAP, HasOutbox: true, OpMods: 0b11},
	{Op: QUERY_ADAPTER, HasOutbox: true, OpMods: 1},
	{Op: INIT_PORT},
	{Op: CLOSE_PORT},
	{Op: QUERY_PORT, HasOutbox: true, OpMods: 1},
	{Op: SET_PORT, HasInbox: true},
	{Op: MAP_EQ},
	{Op: SW2HW_EQ, HasInbox: true, EncodeSlaveID: true},
	{Op: HW_HEALTH_CHECK},
	{Op: NOP},
	{Op: CONFIG_DEV, HasOutbox: true},
	{Op: ALLOC_RES, OutIsImm: true, OpMods: 0b111},
	{Op: FREE_RES, OpMods: 0b111},
	{Op: SW2HW_MPT, HasInbox: true, EncodeSlaveID: true},
	{Op: QUERY_MPT, HasOutbox: true},
	{Op: HW2SW_MPT},
	{Op: READ_MTT, HasOutbox: true},
	{Op: WRITE_MTT, HasInbox: true},
	{Op: SYNC_TPT, HasInbox: true},
	{Op: HW2SW_EQ, EncodeSlaveID: true},
	{Op: QUERY_EQ, HasOutbox: true, EncodeSlaveID: true},
	{Op: SW2HW_CQ, HasInbox: true, EncodeSlaveID: true},
	{Op: HW2SW_CQ},
	{Op: QUERY_CQ, HasOutbox: true},
	{Op: MODIFY_CQ, HasInbox: true, OutIsImm: true},
	{Op: SW2HW_SRQ, HasInbox: true, EncodeSlaveID: true},
	{Op: HW2SW_SRQ},
	{Op: QUERY_SRQ, HasOutbox: true},
	{Op: ARM_SRQ},
	{Op: RST2INIT_QP, HasInbox: true, EncodeSlaveID: true},
	{Op: INIT2INIT_QP, HasInbox: true},
	{Op: INIT2RTR_QP, HasInbox: true},
	{Op: RTR2RTS_QP, HasInbox: true},
	{Op: RTS2RTS_QP, HasInbox: true},
	{Op: SQERR2RTS_QP, HasInbox: true},
	{Op: TWO_ERR_QP},
	{Op: RTS2SQD_QP},
	{Op: SQD2SQD_QP, HasInbox: true},
	{Op: SQD2RTS_QP, HasInbox: true},
	{Op: TWO_RST_QP},
	{Op: QUERY_QP, HasOutbox: true},
	{Op: SUSPEND_QP},
	{Op: UNSUSPEND_QP},
	{Op: UPDATE_QP, HasInbox: true},
	{Op: GET_OP_REQ, EPERM: true},
	{Op: ALLOCATE_VPP, HasOutbox: true, EPERM: true},
	{Op: SET_VPORT_QOS, HasOutbox: true, EPERM: true},
	{Op: CONF_SPECIAL_QP},
	{Op: MAD_IFC, HasInbox: true, HasOutbox: true},
	{Op: MAD_DEMUX, EPERM: true},
	{Op: QUERY_IF_STAT, HasOutbox: true},
	{Op: ACCESS_REG, HasInbox: true, HasOutbox: true},
	{Op: CONGESTION_CTRL, EPERM: true},
	{Op: QP_ATTACH, HasInbox: true},
	{Op: PROMISC},
	{Op: SET_VLAN_FLTR, HasInbox: true},
	{Op: SET_MCAST_FLTR},
	{Op: DUMP_ETH_STATS, HasOutbox: true},
	{Op: INFORM_FLR_DONE},
	{Op: QP_FLOW_STEERING_ATTACH, HasInbox: true, OutIsImm: true},
	{Op: QP_FLOW_STEERING_DETACH},
	{Op: FLOW_STEERING_IB_UC_QP_RANGE, EPERM: true},
	{Op: VIRT_PORT_MAP, EPERM: true},
}

// cmdIndex maps an opcode to 1 + its row in cmdInfo (0: no row).
var cmdIndex = func() (x [4096]uint8) {
	for i, in := range cmdInfo {
		if x[in.Op] != 0 {
			panic("mlx4: duplicate cmd_info row for " + in.Op.String())
		}
		x[in.Op] = uint8(i + 1)
	}
	return
}()

// CmdInfo returns op's row of cmd_info[], and false for an opcode a VF may
// not post at all (the master answers BAD_PARAM).
func CmdInfo(op Opcode) (Info, bool) {
	if i := cmdIndex[op&OpcodeMask]; i != 0 {
		return cmdInfo[i-1], true
	}
	return Info{}, false
}

// CmdIndex is 1 + op's row number in cmd_info[] (the kernel's order), or 0
// for an opcode without a row: the one dense per-opcode index, to which the
// PF's command table and counters are aligned.
func CmdIndex(op Opcode) int { return int(cmdIndex[op&OpcodeMask]) }

// NumCmdInfo is the number of rows of cmd_info[].
const NumCmdInfo = len(cmdInfo)

// CmdInfos returns cmd_info[] in the kernel's order (a copy).
func CmdInfos() []Info { return append([]Info(nil), cmdInfo[:]...) }
