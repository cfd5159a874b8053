package mlx4

import "testing"

// TestVportPathBits: the QP path's vport bits against include/linux/mlx4/qp.h
// (the fl, vlan_control, feup and fvl_rx enums; MLX4_STRIP_VLAN in param3),
// written out, and the path offsets of struct mlx4_qp_path they live at;
// the Ethernet receive CQE's status bits (cq.h) and fields.
func TestVportPathBits(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want int
	}{
		{"MLX4_FL_CV", FL_CV, 0x40},
		{"MLX4_FL_SV", FL_SV, 0x20},
		{"MLX4_FL_ETH_HIDE_CQE_VLAN", FL_ETH_HIDE_CQE_VLAN, 0x04},
		{"MLX4_CTRL_ETH_SRC_CHECK_IF_COUNTER", CTRL_ETH_SRC_CHECK_IF_COUNTER, 0x80},
		{"MLX4_VLAN_CTRL_ETH_TX_BLOCK_TAGGED", VLAN_CTRL_ETH_TX_BLOCK_TAGGED, 0x40},
		{"MLX4_VLAN_CTRL_ETH_TX_BLOCK_PRIO_TAGGED", VLAN_CTRL_ETH_TX_BLOCK_PRIO, 0x20},
		{"MLX4_VLAN_CTRL_ETH_TX_BLOCK_UNTAGGED", VLAN_CTRL_ETH_TX_BLOCK_UNTAG, 0x10},
		{"MLX4_VLAN_CTRL_ETH_RX_BLOCK_TAGGED", VLAN_CTRL_ETH_RX_BLOCK_TAGGED, 0x04},
		{"MLX4_VLAN_CTRL_ETH_RX_BLOCK_PRIO_TAGGED", VLAN_CTRL_ETH_RX_BLOCK_PRIO, 0x02},
		{"MLX4_VLAN_CTRL_ETH_RX_BLOCK_UNTAGGED", VLAN_CTRL_ETH_RX_BLOCK_UNTAG, 0x01},
		{"MLX4_FEUP_FORCE_ETH_UP", FEUP_FORCE_ETH_UP, 0x40},
		{"MLX4_FSM_FORCE_ETH_SRC_MAC", FSM_FORCE_ETH_SRC_MAC, 0x20},
		{"MLX4_FVL_FORCE_ETH_VLAN", FVL_FORCE_ETH_VLAN, 0x08},
		{"MLX4_FVL_RX_FORCE_ETH_VLAN", FVL_RX_FORCE_ETH_VLAN, 0x01},
		{"MLX4_STRIP_VLAN", STRIP_VLAN, 0x40000000},
		{"mlx4_qp_path.fl", PathFL, 0},
		{"mlx4_qp_path.vlan_control", PathVLANControl, 1},
		{"mlx4_qp_path.grh_mylmc", PathGRHMyLMC, 5},
		{"mlx4_qp_path.sched_queue", PathSchedQueue, 32},
		{"mlx4_qp_path.vlan_index", PathVLANIndex, 33},
		{"mlx4_qp_path.feup", PathFEUP, 34},
		{"mlx4_qp_path.fvl_rx", PathFVLRx, 35},
		{"MLX4_CQE_STATUS_IPV4", CQE_STATUS_IPV4, 0x40},
		{"MLX4_CQE_STATUS_IPV4F", CQE_STATUS_IPV4F, 0x80},
		{"MLX4_CQE_STATUS_IPV6", CQE_STATUS_IPV6, 0x100},
		{"MLX4_CQE_STATUS_IPV4OPT", CQE_STATUS_IPV4OPT, 0x200},
		{"MLX4_CQE_STATUS_TCP", CQE_STATUS_TCP, 0x400},
		{"MLX4_CQE_STATUS_UDP", CQE_STATUS_UDP, 0x800},
		{"MLX4_CQE_STATUS_IPOK", CQE_STATUS_IPOK, 0x1000},
		{"mlx4_cqe.status", CQEStatus, 0x10},
		{"mlx4_cqe.checksum", CQEChecksum, 0x1a},
	} {
		if c.got != c.want {
			t.Errorf("%s = %#x, want %#x", c.name, c.got, c.want)
		}
	}
}
