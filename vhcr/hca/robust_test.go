package hca

import (
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// resourceExecutors are the executors of this package's resource files.
var resourceExecutors = map[string]exec{
	"ALLOC_RES": (*HCA).ALLOC_RES, "FREE_RES": (*HCA).FREE_RES,
	"SW2HW_MPT": (*HCA).SW2HW_MPT, "HW2SW_MPT": (*HCA).HW2SW_MPT, "QUERY_MPT": (*HCA).QUERY_MPT,
	"WRITE_MTT": (*HCA).WRITE_MTT, "READ_MTT": (*HCA).READ_MTT, "SYNC_TPT": (*HCA).SYNC_TPT,
	"SW2HW_CQ": (*HCA).SW2HW_CQ, "HW2SW_CQ": (*HCA).HW2SW_CQ, "QUERY_CQ": (*HCA).QUERY_CQ, "MODIFY_CQ": (*HCA).MODIFY_CQ,
	"SW2HW_SRQ": (*HCA).SW2HW_SRQ, "HW2SW_SRQ": (*HCA).HW2SW_SRQ, "QUERY_SRQ": (*HCA).QUERY_SRQ, "ARM_SRQ": (*HCA).ARM_SRQ,
	"SW2HW_EQ": (*HCA).SW2HW_EQ, "HW2SW_EQ": (*HCA).HW2SW_EQ, "QUERY_EQ": (*HCA).QUERY_EQ, "MAP_EQ": (*HCA).MAP_EQ,
	"RST2INIT_QP": (*HCA).RST2INIT_QP, "INIT2INIT_QP": (*HCA).INIT2INIT_QP, "INIT2RTR_QP": (*HCA).INIT2RTR_QP,
	"RTR2RTS_QP": (*HCA).RTR2RTS_QP, "RTS2RTS_QP": (*HCA).RTS2RTS_QP, "SQERR2RTS_QP": (*HCA).SQERR2RTS_QP,
	"2ERR_QP": (*HCA).TWO_ERR_QP, "RTS2SQD_QP": (*HCA).RTS2SQD_QP, "SQD2SQD_QP": (*HCA).SQD2SQD_QP,
	"SQD2RTS_QP": (*HCA).SQD2RTS_QP, "2RST_QP": (*HCA).TWO_RST_QP, "QUERY_QP": (*HCA).QUERY_QP,
	"SUSPEND_QP": (*HCA).SUSPEND_QP, "UNSUSPEND_QP": (*HCA).UNSUSPEND_QP, "UPDATE_QP": (*HCA).UPDATE_QP,
	"QP_ATTACH": (*HCA).QP_ATTACH, "INIT_PORT": (*HCA).INIT_PORT, "CLOSE_PORT": (*HCA).CLOSE_PORT,
	"SET_PORT": (*HCA).SET_PORT, "HW_HEALTH_CHECK": (*HCA).HW_HEALTH_CHECK, "CONF_SPECIAL_QP": (*HCA).CONF_SPECIAL_QP,
	"INFORM_FLR_DONE": (*HCA).INFORM_FLR_DONE, "CONFIG_DEV": (*HCA).CONFIG_DEV, "PROMISC": (*HCA).PROMISC,
	"SET_VLAN_FLTR": (*HCA).SET_VLAN_FLTR, "SET_MCAST_FLTR": (*HCA).SET_MCAST_FLTR,
	"QUERY_IF_STAT": (*HCA).QUERY_IF_STAT, "DUMP_ETH_STATS": (*HCA).DUMP_ETH_STATS,
	"QP_FLOW_STEERING_ATTACH": (*HCA).QP_FLOW_STEERING_ATTACH, "QP_FLOW_STEERING_DETACH": (*HCA).QP_FLOW_STEERING_DETACH,
}

// A command table that disagreed with an executor about mailboxes, or a
// caller passing a VF index the HCA does not have, gets a status, not a
// panic.
func TestExecutorsSurviveMissingMailboxesAndBadVFs(t *testing.T) {
	r := newRig(t, 2, nil)
	r.h.SetDeviceManagedSteering(true)
	for name, f := range resourceExecutors {
		for _, vfn := range []int{0, -1, 2, 1 << 20} {
			for opmod := uint8(0); opmod < 3; opmod++ {
				c := &mlx4.Cmd{VF: vfn, OpMod: opmod, InMod: 1 << 8, Token: 1}
				func() {
					defer func() {
						if p := recover(); p != nil {
							t.Errorf("%s VF %d op_mod %d: panic %v", name, vfn, opmod, p)
						}
					}()
					s := f(r.h, c)
					if vfn != 0 && s == mlx4.OK && name != "HW_HEALTH_CHECK" && name != "SYNC_TPT" &&
						name != "CONF_SPECIAL_QP" && name != "INFORM_FLR_DONE" {
						t.Errorf("%s from VF %d: OK", name, vfn)
					}
				}()
			}
		}
	}
}
