package hca

import "github.com/vhcrd/vhcrd/vhcr/mlx4"

// executors maps each opcode the model executes to its executor. Every row
// of mlx4's cmd_info[] that is not EPERM has one (TestExecutorsCoverCmdInfo).
var executors = [4096]func(*HCA, *mlx4.Cmd) mlx4.Status{
	mlx4.ACCESS_REG:              (*HCA).ACCESS_REG,
	mlx4.ALLOC_RES:               (*HCA).ALLOC_RES,
	mlx4.ARM_SRQ:                 (*HCA).ARM_SRQ,
	mlx4.CLOSE_PORT:              (*HCA).CLOSE_PORT,
	mlx4.CONFIG_DEV:              (*HCA).CONFIG_DEV,
	mlx4.CONF_SPECIAL_QP:         (*HCA).CONF_SPECIAL_QP,
	mlx4.DUMP_ETH_STATS:          (*HCA).DUMP_ETH_STATS,
	mlx4.FREE_RES:                (*HCA).FREE_RES,
	mlx4.HW2SW_CQ:                (*HCA).HW2SW_CQ,
	mlx4.HW2SW_EQ:                (*HCA).HW2SW_EQ,
	mlx4.HW2SW_MPT:               (*HCA).HW2SW_MPT,
	mlx4.HW2SW_SRQ:               (*HCA).HW2SW_SRQ,
	mlx4.HW_HEALTH_CHECK:         (*HCA).HW_HEALTH_CHECK,
	mlx4.INFORM_FLR_DONE:         (*HCA).INFORM_FLR_DONE,
	mlx4.INIT2INIT_QP:            (*HCA).INIT2INIT_QP,
	mlx4.INIT2RTR_QP:             (*HCA).INIT2RTR_QP,
	mlx4.INIT_PORT:               (*HCA).INIT_PORT,
	mlx4.MAD_IFC:                 (*HCA).MAD_IFC,
	mlx4.MAP_EQ:                  (*HCA).MAP_EQ,
	mlx4.MODIFY_CQ:               (*HCA).MODIFY_CQ,
	mlx4.NOP:                     (*HCA).NOP,
	mlx4.PROMISC:                 (*HCA).PROMISC,
	mlx4.QP_ATTACH:               (*HCA).QP_ATTACH,
	mlx4.QP_FLOW_STEERING_ATTACH: (*HCA).QP_FLOW_STEERING_ATTACH,
	mlx4.QP_FLOW_STEERING_DETACH: (*HCA).QP_FLOW_STEERING_DETACH,
	mlx4.QUERY_ADAPTER:           (*HCA).QUERY_ADAPTER,
	mlx4.QUERY_CQ:                (*HCA).QUERY_CQ,
	mlx4.QUERY_DEV_CAP:           (*HCA).QUERY_DEV_CAP,
	mlx4.QUERY_EQ:                (*HCA).QUERY_EQ,
	mlx4.QUERY_FUNC_CAP:          (*HCA).QUERY_FUNC_CAP,
	mlx4.QUERY_FW:                (*HCA).QUERY_FW,
	mlx4.QUERY_HCA:               (*HCA).QUERY_HCA,
	mlx4.QUERY_IF_STAT:           (*HCA).QUERY_IF_STAT,
	mlx4.QUERY_MPT:               (*HCA).QUERY_MPT,
	mlx4.QUERY_PORT:              (*HCA).QUERY_PORT,
	mlx4.QUERY_QP:                (*HCA).QUERY_QP,
	mlx4.QUERY_SRQ:               (*HCA).QUERY_SRQ,
	mlx4.READ_MTT:                (*HCA).READ_MTT,
	mlx4.RST2INIT_QP:             (*HCA).RST2INIT_QP,
	mlx4.RTR2RTS_QP:              (*HCA).RTR2RTS_QP,
	mlx4.RTS2RTS_QP:              (*HCA).RTS2RTS_QP,
	mlx4.RTS2SQD_QP:              (*HCA).RTS2SQD_QP,
	mlx4.SET_MCAST_FLTR:          (*HCA).SET_MCAST_FLTR,
	mlx4.SET_PORT:                (*HCA).SET_PORT,
	mlx4.SET_VLAN_FLTR:           (*HCA).SET_VLAN_FLTR,
	mlx4.SQD2RTS_QP:              (*HCA).SQD2RTS_QP,
	mlx4.SQD2SQD_QP:              (*HCA).SQD2SQD_QP,
	mlx4.SQERR2RTS_QP:            (*HCA).SQERR2RTS_QP,
	mlx4.SUSPEND_QP:              (*HCA).SUSPEND_QP,
	mlx4.SW2HW_CQ:                (*HCA).SW2HW_CQ,
	mlx4.SW2HW_EQ:                (*HCA).SW2HW_EQ,
	mlx4.SW2HW_MPT:               (*HCA).SW2HW_MPT,
	mlx4.SW2HW_SRQ:               (*HCA).SW2HW_SRQ,
	mlx4.SYNC_TPT:                (*HCA).SYNC_TPT,
	mlx4.TWO_ERR_QP:              (*HCA).TWO_ERR_QP,
	mlx4.TWO_RST_QP:              (*HCA).TWO_RST_QP,
	mlx4.UNSUSPEND_QP:            (*HCA).UNSUSPEND_QP,
	mlx4.UPDATE_QP:               (*HCA).UPDATE_QP,
	mlx4.WRITE_MTT:               (*HCA).WRITE_MTT,
}

// execRow is what Exec needs of an opcode, in one load: its executor and
// its row's mailbox facts.
type execRow struct {
	fn            func(*HCA, *mlx4.Cmd) mlx4.Status
	inbox, outbox bool
}

var execRows = func() (t [4096]execRow) {
	for op, fn := range executors {
		in, _ := mlx4.CmdInfo(mlx4.Opcode(op))
		t[op] = execRow{fn: fn, inbox: in.HasInbox, outbox: in.HasOutbox}
	}
	return t
}()

// Executes reports whether the model executes op (a row of cmd_info[] that
// is not EPERM).
func Executes(op mlx4.Opcode) bool { return executors[op&0xfff] != nil }

// Exec runs c on the HCA: the one entry to the executors, for the PF and
// for tests alike. It guarantees once what op's row of cmd_info[] promises
// the executors, so that none of them restates it: the opcode has a row and
// is not EPERM (else BAD_PARAM or BAD_OP, as the master answers), the VF
// index is in range (INTERNAL_ERR), the inbox is present for a has_inbox
// row (INTERNAL_ERR, as an unreadable inbox), and the outbox for a
// has_outbox row (INTERNAL_ERR), which Exec zeroes before the executor
// runs.
func (h *HCA) Exec(c *mlx4.Cmd) mlx4.Status {
	x := &execRows[c.Op&0xfff]
	switch {
	case x.fn == nil:
		return refuseUnexecuted(c)
	case uint(c.VF) >= uint(len(h.Funcs)): // New sizes Funcs and the firmware's per-VF tables alike
		return c.Refuse(mlx4.INTERNAL_ERR, mlx4.ReasonNotFound)
	case x.inbox && c.Inbox == nil:
		return c.Refuse(mlx4.INTERNAL_ERR, mlx4.ReasonInboxDMA)
	case x.outbox:
		if c.Outbox == nil {
			return c.Refuse(mlx4.INTERNAL_ERR, mlx4.ReasonContext)
		}
		clear(c.Outbox[:])
	}
	return x.fn(h, c)
}

// refuseUnexecuted answers an opcode without an executor: no row
// BAD_PARAM, an EPERM row BAD_OP.
func refuseUnexecuted(c *mlx4.Cmd) mlx4.Status {
	in, ok := mlx4.CmdInfo(c.Op)
	switch {
	case !ok:
		return c.Refuse(mlx4.BAD_PARAM, mlx4.ReasonUnknownOpcode)
	case in.EPERM:
		return c.Refuse(mlx4.BAD_OP, mlx4.ReasonPrivileged)
	}
	return c.Refuse(mlx4.INTERNAL_ERR, mlx4.ReasonNotModelled)
}
